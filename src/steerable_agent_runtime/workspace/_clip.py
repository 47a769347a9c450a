"""``read_file``'s display clip: the head and tail of a long text within a budget (FILE-10).

The head gets three quarters of the budget, the tail the rest, and a marker line between them says
how many characters were left out and from which lines. Each part keeps whole lines unless that
would leave more than a tenth of its room unused (a very long line, minified code): then the cut
falls inside the line, and the marker says so.

The budget counts characters of the text (``read_file``'s default, the spec's ``_MAX_OUTPUT``), or,
for an MCP host, what the text takes inside a JSON string (:func:`json_size`): a host measures the
compact JSON of the result it hands its model, where a quote, a backslash, a tab or a newline takes
two characters, another character below U+0020 six, and an emoji two (UTF-16).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Final

__all__ = ["clip_text", "json_size"]

_WASTE: Final = 10
"""A part keeps whole lines unless that leaves more than 1/_WASTE of its room unused."""

Size = Callable[[str], int]


def json_size(text: str) -> int:
    r"""How long ``text`` is inside a compact JSON string, as a JavaScript host measures it.

    Escapes count in full (``"``, ``\``, newline, tab: 2; another character below U+0020: 6) and a
    character outside the Basic Multilingual Plane (an emoji) counts 2, a JavaScript string's
    UTF-16 length. The size is additive: ``json_size(a + b) == json_size(a) + json_size(b)``.
    """
    size = len(json.dumps(text, ensure_ascii=False)) - 2
    if not text.isascii():  # O(1) on a str: only non-ASCII text pays for the UTF-16 count
        size += len(text.encode("utf-16-le")) // 2 - len(text)
    return size


def clip_text(
    text: str,
    budget: int,
    *,
    first_line: int = 1,
    last_line: int | None = None,
    size: Size = len,
    unit: str = "characters",
) -> str | None:
    """``text`` clipped to ``budget``, or ``None`` when it fits.

    Args:
        text: The displayed text (a whole file, or the lines a ranged read asked for).
        budget: What the head and the tail may take together (the marker line is extra).
        first_line: ``text``'s first line number in the file (1-based), for the marker.
        last_line: The number of ``text``'s last line, when the caller knows it: the marker's
            last line is then counted back from it over the tail, not over the whole text.
        size: How a part is measured: ``len``, or :func:`json_size` for a host's JSON.
        unit: What ``budget`` counts, as the marker names it.
    """
    if len(text) <= budget and (size is len or size(text) <= budget):  # size >= len: skip a big text
        return None
    head_room = budget * 3 // 4
    head_cut = _prefix_that_fits(text, head_room, size)
    tail_cut = _suffix_that_fits(text, budget - head_room, size)  # > head_cut: the text does not fit
    head_end = _line_end(text, head_cut)
    tail_start = _line_start(text, tail_cut)
    head_inside = head_end > 0 and text[head_end - 1] != "\n"
    tail_inside = text[tail_start - 1] != "\n"
    # the lines holding the first and the last omitted character
    first = first_line + text.count("\n", 0, head_end)
    if last_line is None:
        last = first_line + text.count("\n", 0, tail_start - 1)
    else:
        last = last_line - text.count("\n", tail_start - 1, len(text) - 1)
    marker = (
        f"[... {tail_start - head_end} characters omitted {_where(first, last, head_inside, tail_inside)} "
        f"(display clipped at {budget} {unit}); read with offset/limit to see them ...]\n"
    )
    return text[:head_end] + ("\n" if head_inside else "") + marker + text[tail_start:]


def _where(first: int, last: int, head_inside: bool, tail_inside: bool) -> str:
    if first == last and head_inside and tail_inside:
        return f"within line {first}"
    where = f"from inside line {first}" if head_inside else f"from line {first}"
    if tail_inside:
        return f"{where} to inside line {last}"
    return where if last == first else f"{where} to line {last}"


def _prefix_that_fits(text: str, room: int, size: Size) -> int:
    """The length of ``text``'s longest start whose size is at most ``room``."""
    cut = min(len(text), room)
    if size is len or size(text[:cut]) <= room:  # no escapes: the common case, one pass
        return cut
    low, high, used = 0, cut, 0  # size(text[:low]) == used <= room < size(text[:high])
    while high - low > 1:  # sizes are additive: measure only the half in question
        middle = (low + high) // 2
        more = used + size(text[low:middle])
        if more <= room:
            low, used = middle, more
        else:
            high = middle
    return low


def _suffix_that_fits(text: str, room: int, size: Size) -> int:
    """Where ``text``'s longest end whose size is at most ``room`` starts."""
    cut = max(0, len(text) - room)
    if size is len:
        return cut
    over = size(text[cut:])
    if over <= room:
        return cut
    low, high = cut, len(text)  # size(text[low:]) == over > room >= size(text[high:])
    while high - low > 1:
        middle = (low + high) // 2
        rest = over - size(text[low:middle])
        if rest <= room:
            high = middle
        else:
            low, over = middle, rest
    return high


def _line_end(text: str, cut: int) -> int:
    """The head's end: the last line end at or before ``cut``, unless that wastes too much room."""
    whole = text.rfind("\n", 0, cut) + 1
    return whole if cut - whole <= cut // _WASTE else cut


def _line_start(text: str, cut: int) -> int:
    """The tail's start: the first line start at or after ``cut``, unless that wastes too much room."""
    if text[cut - 1] == "\n":  # cut > 0: the head takes at least one character
        return cut
    newline = text.find("\n", cut, len(text) - 1)  # a last newline would start an empty tail
    whole = newline + 1 if newline >= 0 else len(text)
    return whole if whole - cut <= (len(text) - cut) // _WASTE else cut
