"""The top-level members of a JSON object too deeply nested to decode, read without decoding it.

A frame nested deeper than ``json.loads`` goes (about 1,000 levels) ends in ``RecursionError``, and
with it the request's ``id``: the answer would carry ``id: null`` and the peer could not pair it with
its request (SAFE-6). :func:`top_level_scalars` reads the members of the outermost object only: a
member whose value is a string, a number, ``true``, ``false`` or ``null`` is decoded; an object or
an array is skipped over, never decoded and never searched, so a member nested at any depth below
(``{"params": {"id": 7}}``) is never taken for a top-level one.

The scan is a loop, not a recursion, and linear in the text: the regular-expression engine steps
over the characters, and the loop runs once per token of the skipped values (a run of brackets, a
string), at most :data:`MAX_SKIP_TOKENS` of them in all; past that, or at anything that is not
JSON at the top level, the answer is ``None`` (no member is trusted).

With ``prefix=True`` the text is the first bytes of a frame too large to hold in memory (SAFE-9):
the members read whole before the text ends (or stops being JSON) are kept, each only once the
``,`` or ``}`` after its value is seen (a number cut short is never taken), and a member whose
value the text ends in is :data:`CUT`.
"""

from __future__ import annotations

import json.decoder  # noqa: F401  scanstring raises its JSONDecodeError: unloaded, a SystemError
import re
from _json import scanstring  # the C scanner json.loads uses for strings
from collections.abc import Collection
from typing import Any, Final

__all__ = ["CUT", "MAX_SKIP_TOKENS", "NESTED", "top_level_scalars"]

MAX_SKIP_TOKENS: Final = 1 << 20
"""Tokens (runs of brackets, strings) one scan steps over inside nested values before it gives up:
about a third of a second. A runaway nesting is one run each way (``[[[...]]]``: two tokens); only
a value alternating brackets with strings or numbers at every level costs one token a level."""


class _Nested:
    """The type of :data:`NESTED`."""

    def __repr__(self) -> str:
        return "NESTED"


NESTED: Final = _Nested()
"""The value :func:`top_level_scalars` gives a member that is an object or an array (not decoded)."""


class _Cut:
    """The type of :data:`CUT`."""

    def __repr__(self) -> str:
        return "CUT"


CUT: Final = _Cut()
"""The value a ``prefix`` scan gives a member whose value the text ends in (or stops being JSON in)."""

_SPACE: Final = re.compile(r"[ \t\n\r]*")
_NUMBER: Final = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_LITERALS: Final[dict[str, Any]] = {"true": True, "false": False, "null": None}
# inside a nested value: a whole string, a run of openers, a run of closers, or a quote that opens
# no whole string (the text is not JSON)
_TOKEN: Final = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[{]+|[\]}]+|"')
_CLOSING: Final = bytes.maketrans(b"[{", b"]}")


def top_level_scalars(text: str, names: Collection[str], *, prefix: bool = False) -> dict[str, Any] | None:
    """The members named in ``names`` of the object ``text`` holds, as far as a shallow scan reads them.

    Args:
        text: One JSON text (a frame), typically one ``json.loads`` refused as too deeply nested.
        names: The member names wanted (``{"id", "method"}``).
        prefix: ``text`` is only the start of the frame: keep what was read whole before it ends
            (see the module docstring); ``None`` only when it does not start an object.

    Returns:
        ``{name: value}`` for each wanted member present at the top level: its value when it is a
        string, a number, ``true``, ``false`` or ``null``, :data:`NESTED` when it is an object or an
        array. A name given twice keeps its last value, as ``json.loads`` does. ``None`` when
        ``text`` is not one object whose top level is JSON (the nested values are only checked
        for balanced brackets and whole strings), or when skipping its nested values would take
        more than :data:`MAX_SKIP_TOKENS` tokens.
    """
    budget = [MAX_SKIP_TOKENS]
    found: dict[str, Any] = {}
    stop = found if prefix else None  # the answer where the text ends or stops being JSON
    pos = _skip_space(text, 0)
    if not text.startswith("{", pos):
        return None
    pos = _skip_space(text, pos + 1)
    if text.startswith("}", pos):
        return found if prefix or _skip_space(text, pos + 1) == len(text) else None
    while True:
        name, pos = _member_name(text, pos)
        if pos < 0:
            return stop
        if prefix and name in names:
            found[name] = CUT  # until its value is read whole and followed by "," or "}"
        value, end = _value(text, _skip_space(text, pos + 1), budget)
        if end < 0:
            return stop
        pos = _skip_space(text, end)
        if text.startswith(",", pos):
            pos = _skip_space(text, pos + 1)
        elif not text.startswith("}", pos):
            return stop
        if name in names:
            found[name] = value
        if text.startswith("}", pos):
            return found if prefix or _skip_space(text, pos + 1) == len(text) else None


def _member_name(text: str, pos: int) -> tuple[str, int]:
    """A member's name at ``pos`` and where its ``:`` is; the position is ``-1`` when it is not JSON."""
    if not text.startswith('"', pos):
        return "", -1
    try:
        name, pos = scanstring(text, pos + 1)
    except ValueError:  # an unterminated string, a bad escape, a control character
        return "", -1
    pos = _skip_space(text, pos)
    return (name, pos) if text.startswith(":", pos) else ("", -1)


def _skip_space(text: str, pos: int) -> int:
    match = _SPACE.match(text, pos)
    return match.end() if match is not None else pos


def _value(text: str, pos: int, budget: list[int]) -> tuple[Any, int]:
    """The member value at ``pos`` and where it ends; the end is ``-1`` when it is not JSON."""
    first = text[pos : pos + 1]
    if first == '"':
        try:
            string, end = scanstring(text, pos + 1)
        except ValueError:
            return None, -1
        return string, end
    if first in ("[", "{"):
        return NESTED, _skip_nested(text, pos, budget)
    number = _NUMBER.match(text, pos)
    if number is not None:
        try:
            if number.group(1) is None and number.group(2) is None:
                return int(number.group()), number.end()
            value = float(number.group())
        except ValueError:  # an integer past the interpreter's digit limit
            return None, -1
        return (value, number.end()) if value not in (float("inf"), float("-inf")) else (None, -1)
    for literal, value in _LITERALS.items():
        if text.startswith(literal, pos):
            return value, pos + len(literal)
    return None, -1


def _skip_nested(text: str, pos: int, budget: list[int]) -> int:
    """Where the object or array opening at ``pos`` ends; ``-1`` when it does not, or past the budget.

    Brackets are matched by kind on a stack of one byte a level; strings are stepped over whole,
    so a bracket inside one does not count.
    """
    stack = bytearray()
    for token in _TOKEN.finditer(text, pos):
        budget[0] -= 1
        if budget[0] < 0:
            return -1
        run = token.group()
        kind = run[0]
        if kind == '"':
            if len(run) == 1:  # a quote that opens no whole string
                return -1
            continue
        if kind in "[{":
            stack += run.encode("ascii")
            continue
        take = min(len(run), len(stack))
        if run[:take].encode("ascii") != stack[len(stack) - take :][::-1].translate(_CLOSING):
            return -1  # a closer of the other kind
        del stack[len(stack) - take :]
        if not stack:
            return token.start() + take
    return -1
