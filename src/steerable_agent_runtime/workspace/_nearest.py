"""The file's lines nearest to a text that was not found, for ``edit_file`` and ``apply_patch``.

When an ``oldText`` or a hunk is not found, the error names the file's real lines most like it,
with their line numbers, so the model can regenerate the edit without re-reading the file
(FILE-14, issue 11). The cost stays bounded on a 64 MiB file: candidate places come from
``str.find`` over the text (the model's lines, then its longest words, each abandoned after a few
hundred hits), scored with :class:`difflib.SequenceMatcher` over at most a few dozen windows;
only when nothing is found that way are a capped number of lines compared one by one.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Any, Final

from ._levels import TextLines, normaliser

__all__ = ["NearestLines", "find_nearest"]

_LEVEL: Final = "unicode-punctuation"
_MIN_RATIO: Final = 0.6
_MAX_KEYS: Final = 4
_MAX_HITS: Final = 300
_MAX_CANDIDATES: Final = 20
_MAX_SCORED_LINES: Final = 40
_MAX_SCORED_CHARS: Final = 200
_FALLBACK_LINES: Final = 2000
_SHOWN_LINES: Final = 12
_SHOWN_CHARS: Final = 240
_WORD: Final = re.compile(r"\w{4,}")


@dataclass(frozen=True, slots=True)
class NearestLines:
    """The file's lines most like a text that was not found; ``lines`` begin at ``start_line`` (1-based)."""

    start_line: int
    lines: tuple[str, ...]

    @property
    def end_line(self) -> int:
        """The 1-based line number of the last line shown."""
        return self.start_line + len(self.lines) - 1

    def as_data(self) -> dict[str, Any]:
        """Return ``{"startLine", "endLine", "lines"}`` for a result's ``data.nearest``."""
        return {"startLine": self.start_line, "endLine": self.end_line, "lines": list(self.lines)}

    def render(self) -> str:
        """Return the lines numbered for a message, one per line: ``  12 | def a():``."""
        width = len(str(self.end_line))
        return "\n".join(f"  {n:>{width}} | {line}" for n, line in enumerate(self.lines, self.start_line))

    def describe(self) -> str:
        """Return ``"line 12"`` or ``"lines 12-14"``."""
        if len(self.lines) == 1:
            return f"line {self.start_line}"
        return f"lines {self.start_line}-{self.end_line}"


def _clip(line: str) -> str:
    return line if len(line) <= _SHOWN_CHARS else line[:_SHOWN_CHARS] + "..."


def find_nearest(source: TextLines, wanted: Sequence[str], *, near: int = 0) -> NearestLines | None:
    """Return the file's lines most like ``wanted``, or None when nothing is reasonably near.

    Args:
        source: The file's text.
        wanted: The model's lines that were not found.
        near: A 0-based line to start the line-by-line fallback from (a patch's cursor).

    Returns:
        As many lines as ``wanted`` has (at most 12), from the best-scoring place.
    """
    normalise = normaliser(_LEVEL)
    target = [normalise(line) for line in wanted]
    if not any(target):
        return None
    votes: Counter[int] = Counter()
    anchors: dict[int, tuple[int, int]] = {}
    keys = sorted({line for line in target if len(line) >= 3}, key=len, reverse=True)[:_MAX_KEYS]
    _vote(source, target, keys, votes, anchors, whole=True)
    if not votes:
        words = sorted({w for line in target for w in _WORD.findall(line)}, key=len, reverse=True)
        _vote(source, target, words[:_MAX_KEYS], votes, anchors, whole=False)
    if not votes:
        _fallback(source, target, near, votes, anchors)
    best: tuple[float, int, list[str]] | None = None
    wanted_text = _joined(target)
    for first, _ in votes.most_common(_MAX_CANDIDATES):
        window = source.window(anchors[first], max(first, 0), len(target), clamp=True)
        if window is None or not window[1]:
            continue
        score = SequenceMatcher(None, wanted_text, _joined(map(normalise, window[1])), autojunk=False).ratio()
        if best is None or score > best[0]:
            best = (score, max(first, 0), window[1])
    if best is None or best[0] < _MIN_RATIO:
        return None
    _, first, lines = best
    return NearestLines(first + 1, tuple(_clip(line) for line in lines[:_SHOWN_LINES]))


def _joined(lines: Iterable[str]) -> str:
    return "\n".join(
        line[:_MAX_SCORED_CHARS] for _, line in zip(range(_MAX_SCORED_LINES), lines, strict=False)
    )


def _vote(
    source: TextLines,
    target: list[str],
    keys: Sequence[str],
    votes: Counter[int],
    anchors: dict[int, tuple[int, int]],
    *,
    whole: bool,
) -> None:
    """Count, for each place a window could start, how many of ``keys`` line up there."""
    for key in keys:
        positions = [i for i, line in enumerate(target) if (line == key if whole else key in line)]
        hits = source.containing(key, _LEVEL, limit=_MAX_HITS)
        if hits is None:
            continue  # too common to point anywhere
        for anchor in hits:
            for i in positions:
                votes[anchor[0] - i] += 1
                anchors.setdefault(anchor[0] - i, anchor)


def _fallback(
    source: TextLines, target: list[str], near: int, votes: Counter[int], anchors: dict[int, tuple[int, int]]
) -> None:
    """Compare the longest wanted line with each of a capped number of lines from ``near``."""
    start = source.window((0, 0), near, _FALLBACK_LINES, clamp=True)
    if start is None:
        return
    offset, lines = start
    key = max(range(len(target)), key=lambda i: len(target[i]))
    normalise = normaliser(_LEVEL)
    matcher = SequenceMatcher(None, autojunk=False)
    matcher.set_seq2(target[key][:_MAX_SCORED_CHARS])
    for j, line in enumerate(lines):
        matcher.set_seq1(normalise(line)[:_MAX_SCORED_CHARS])
        if matcher.real_quick_ratio() >= _MIN_RATIO and matcher.quick_ratio() >= _MIN_RATIO:
            score = matcher.ratio()
            if score >= _MIN_RATIO:
                first = near + j - key
                votes[first] += round(score * 100)
                anchors.setdefault(first, (near + j, offset))
        offset += len(line) + 1
