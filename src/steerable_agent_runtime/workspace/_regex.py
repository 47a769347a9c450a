r"""The ``grep`` pattern language: Rust regex syntax, checked before any engine runs it.

Both engines (ripgrep, and the Python fallback) accept the same patterns: Rust's ``regex`` crate
syntax, which runs in linear time, so no pattern can backtrack catastrophically (FILE-16). A model
that writes a construct only backtracking engines have (look-around, backreferences, atomic
groups, conditionals, ``\Z``) is told which one, where, and what to write instead
(``invalid_pattern``), before a child process is started. Syntax errors are ``invalid_regex``.
"""

from __future__ import annotations

import re
from typing import Any, Final

from ..errors import WorkspaceError
from ._codes import FileErrorCode

__all__ = [
    "MAX_PATTERN_CHARS",
    "MAX_REPEAT_EXPANSION",
    "check_pattern",
    "compile_python",
    "invalid_regex",
    "unsupported",
]

MAX_PATTERN_CHARS: Final = 1000
"""Longest ``grep`` pattern or glob accepted, in characters."""

MAX_REPEAT_EXPANSION: Final = 10_000
"""Most atoms counted repeats may expand a pattern to (``(?:a{100}){100}`` is 10,000)."""

_QUANTIFIER = re.compile(r"\{(\d+)(?:,(\d*))?\}")
_RECURSION = re.compile(r"\(\?(?:R|[+-]?\d+|&|P>)")

# (construct found at a position, its name, what to write instead); checked outside [...] classes
_GROUP_OPENERS: Final = (
    ("(?<=", "look-behind (?<=...)", "match the preceding text as part of the pattern"),
    ("(?<!", "negative look-behind (?<!...)", "search a wider pattern and read the lines"),
    ("(?=", "look-ahead (?=...)", "match the following text as part of the pattern"),
    ("(?!", "negative look-ahead (?!...)", "search a wider pattern and read the lines"),
    ("(?>", "atomic groups (?>...)", "use a plain group (?:...): matching is linear anyway"),
    ("(?(", "conditionals (?(...)...)", "search for each alternative with |"),
    ("(?#", "inline comments (?#...)", "leave the comment out"),
    ("(?P=", "named backreferences (?P=name)", "repeat the text itself in the pattern"),
)
_ESCAPES: Final = {
    "Z": ("\\Z", "write $ (grep matches line by line: the end of a line)"),
    "k": ("named backreferences \\k<name>", "repeat the text itself in the pattern"),
    "g": ("backreferences \\g<...>", "repeat the text itself in the pattern"),
    "G": ("\\G", "anchor with ^ instead"),
}


def invalid_regex(pattern: str, why: str) -> WorkspaceError:
    """Return the ``invalid_regex`` refusal for ``pattern`` (clipped to 100 characters in the message)."""
    return WorkspaceError(FileErrorCode.INVALID_REGEX, f"invalid regular expression {pattern[:100]!r}: {why}")


def unsupported(pattern: str, at: int, what: str, instead: str) -> WorkspaceError:
    """Return the ``invalid_pattern`` refusal naming ``what`` Rust regex lacks, where, and ``instead``."""
    return WorkspaceError(
        FileErrorCode.INVALID_PATTERN,
        f"grep patterns use Rust regex syntax (linear time), which has no {what} "
        f"(at position {at} of {pattern[:100]!r}); {instead}",
        data={"construct": what, "position": at},
    )


def _unsupported_construct(pattern: str) -> WorkspaceError | None:
    r"""Find the first construct Rust's regex syntax lacks, skipping escapes and ``[...]`` classes."""
    i, in_class = 0, False
    while i < len(pattern):
        char = pattern[i]
        refusal = None
        if char == "\\":
            refusal = None if in_class else _escape_refusal(pattern, i)
            i += 2
        elif in_class:
            i, in_class = _class_step(pattern, i)
        elif char == "[":
            i, in_class = _class_body_start(pattern, i), True
        else:
            refusal = _construct_refusal(pattern, i)
            i += 1
        if refusal is not None:
            return refusal
    return None


def _escape_refusal(pattern: str, i: int) -> WorkspaceError | None:
    r"""Refuse the escape at ``pattern[i]`` (outside a class) when Rust lacks it: ``\1``, ``\Z``..."""
    nxt = pattern[i + 1 : i + 2]
    if nxt.isdigit() and nxt != "0":
        return unsupported(pattern, i, f"backreferences (\\{nxt})", "repeat the text itself in the pattern")
    if nxt in _ESCAPES:
        what, instead = _ESCAPES[nxt]
        return unsupported(pattern, i, what, instead)
    return None


def _class_step(pattern: str, i: int) -> tuple[int, bool]:
    """Step over one member of a ``[...]`` class: the next index, and whether the class goes on."""
    char = pattern[i]
    if char == "]":
        return i + 1, False
    if char == "[" and pattern[i + 1 : i + 2] == ":":  # [[:alpha:]] inside a class
        end = pattern.find(":]", i + 2)
        return (end + 2 if end != -1 else i + 1), True
    return i + 1, True


def _class_body_start(pattern: str, i: int) -> int:
    """The index after the ``[`` at ``i``, its ``^`` and a leading ``]`` (a literal member)."""
    i += 1
    if pattern[i : i + 1] == "^":
        i += 1
    if pattern[i : i + 1] == "]":
        i += 1
    return i


def _construct_refusal(pattern: str, i: int) -> WorkspaceError | None:
    """Refuse a group opener (look-around, atomic...) or a ``{,n}`` repeat starting at ``i``."""
    if pattern[i] == "(":
        for opener, what, instead in _GROUP_OPENERS:
            if pattern.startswith(opener, i):
                return unsupported(pattern, i, what, instead)
    if pattern[i] == "{" and re.match(r"\{,\d+\}", pattern[i:]):
        return unsupported(pattern, i, "{,n} repeat", "write {0,n}")
    return None


def _repeat_expansion(pattern: str) -> int:
    """Estimate how many atoms the pattern expands to: ``(?:a{100}){100}`` gives 10,000.

    Regex compilers expand counted repeats, so nested repeats multiply and side-by-side ones add
    up; a total in the millions exhausts memory (or Rust's size limit) at compile time. Each atom
    counts 1; a group counts the sum of its contents; ``{n,m}`` multiplies the atom or group
    before it by its larger bound.
    """
    stack = [0]
    last = 0  # the size of the atom or group just closed, for a quantifier that follows it
    i = 0
    while i < len(pattern):
        char = pattern[i]
        quantified = _QUANTIFIER.match(pattern, i)
        if char == "{" and quantified:
            bound = max(int(quantified.group(1)), int(quantified.group(2) or 0), 1)
            stack[-1] += last * (bound - 1)
            last *= bound
            i = quantified.end()
            continue
        if char == "(":
            stack.append(0)
            i += 1
            continue
        if char == ")" and len(stack) > 1:
            last = stack.pop()
            stack[-1] += last
            i += 1
            continue
        if char == "\\":
            i += 2
        elif char == "[":  # a character class is one atom
            i = pattern.find("]", i + 2) + 1 or len(pattern)
        else:
            i += 1
        last = 1
        stack[-1] += 1
    while len(stack) > 1:  # unbalanced: the compiler will say so
        inner = stack.pop()
        stack[-1] += inner
    return stack[0]


def check_pattern(pattern: str) -> None:
    r"""Refuse a pattern no engine should run, before one is started.

    Raises:
        WorkspaceError: ``invalid_regex`` for an over-long pattern (over 1000 characters), a NUL
            character, a lone surrogate, recursion (``(?R)``) or counted repeats expanding past
            10,000 atoms; ``invalid_pattern`` naming a construct Rust regex syntax lacks
            (look-around, backreferences, atomic groups, conditionals, ``\Z``, ``{,n}``), with
            ``data.construct`` and ``data.position``.
    """
    if len(pattern) > MAX_PATTERN_CHARS:
        raise invalid_regex(pattern, f"longer than {MAX_PATTERN_CHARS} characters")
    if "\x00" in pattern:
        raise invalid_regex(pattern, "it contains a NUL character; write \\x00 to match one")
    try:
        pattern.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise invalid_regex(pattern, f"it contains a lone surrogate at index {exc.start}") from None
    if (len(pattern) - len(pattern.rstrip("\\"))) % 2:
        raise invalid_regex(pattern, "it ends with a lone backslash; write \\\\ to match one")
    if _RECURSION.search(pattern):
        raise invalid_regex(pattern, "recursive patterns ((?R), (?1), (?&name)) are not allowed")
    found = _unsupported_construct(pattern)
    if found is not None:
        raise found
    if _repeat_expansion(pattern) > MAX_REPEAT_EXPANSION:
        raise invalid_regex(
            pattern, f"counted repeats expand past {MAX_REPEAT_EXPANSION} atoms; use + or * instead"
        )


def compile_python(pattern: str, ignore_case: bool) -> Any:
    """Compile a checked pattern for the Python fallback (the ``regex`` engine, with time limits).

    Raises:
        WorkspaceError: ``invalid_regex`` naming the compiler's error.
    """
    import regex  # only the fallback needs it (~12 ms to import)

    try:
        # cache_pattern=False: a model's patterns must not pile up in the engine's module cache
        return regex.compile(pattern, regex.IGNORECASE if ignore_case else 0, cache_pattern=False)
    except (regex.error, ValueError, OverflowError, RecursionError, MemoryError) as exc:
        raise invalid_regex(pattern, str(exc)) from None
