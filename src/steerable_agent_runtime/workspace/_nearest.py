"""The file's lines nearest to a text that was not found, for ``edit_file`` and ``apply_patch``.

When an ``oldText`` or a hunk is not found, the error names the file's real lines most like it,
with their line numbers, so the model can regenerate the edit without re-reading the file
(FILE-14). The cost stays bounded on a 64 MiB file: candidate places come from
``str.find`` over the text (the model's lines, then its longest words, each abandoned after a few
hundred hits), each window scored by comparing its first lines' words and punctuation with
:class:`difflib.SequenceMatcher` (tokens, not characters, so the cost stays linear in practice);
only when nothing is found that way are a capped number of lines compared one by one.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Any, Final

from ._levels import TextLines, normaliser

__all__ = ["NearestLines", "find_nearest"]

_LEVEL: Final = "unicode-punctuation"
_MIN_RATIO: Final = 0.6
_MAX_KEYS: Final = 4
_MAX_HITS: Final = 300
_MAX_CANDIDATES: Final = 10
_MAX_SCORED_LINES: Final = 12
_MAX_SCORED_CHARS: Final = 400
_MAX_TOKENS: Final = 60
_SLACK: Final = 2
_FALLBACK_LINES: Final = 2000
_SHOWN_LINES: Final = 12
_SHOWN_CHARS: Final = 240
_WORD: Final = re.compile(r"\w{4,}")
_TOKEN: Final = re.compile(r"\w+|[^\w\s]")


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
    keys = sorted({line for line in target if len(line) >= 3}, key=_longest_first)[:_MAX_KEYS]
    _vote(source, target, keys, votes, anchors, whole=True)
    if not votes:
        words = sorted({w for line in target for w in _WORD.findall(line)}, key=_longest_first)
        _vote(source, target, words[:_MAX_KEYS], votes, anchors, whole=False)
    if not votes:
        _fallback(source, target, near, votes, anchors)
    wanted_tokens = [_tokens(line) for line in target[:_MAX_SCORED_LINES]]
    best: tuple[float, int, list[str]] | None = None
    for first, _ in votes.most_common(_MAX_CANDIDATES):
        start = max(first, 0)
        window = source.window(anchors[first], start, len(target) + _SLACK, clamp=True)
        if window is None or not window[1]:
            continue
        found = [_tokens(normalise(line)) for line in window[1][: _MAX_SCORED_LINES + _SLACK]]
        score, last = _score(wanted_tokens, found)
        if best is None or score > best[0]:
            shown = min(max(last + 1, len(target)), len(window[1]))
            best = (score, start, window[1][:shown])
    if best is None or best[0] < _MIN_RATIO:
        return None
    _, first, lines = best
    return NearestLines(first + 1, tuple(_clip(line) for line in lines[:_SHOWN_LINES]))


def _tokens(line: str) -> list[str]:
    """Split a normalised line into words and punctuation marks (at most 60)."""
    return _TOKEN.findall(line, 0, _MAX_SCORED_CHARS)[:_MAX_TOKENS]


def _score(wanted: list[list[str]], found: list[list[str]]) -> tuple[float, int]:
    """Return the mean similarity of each wanted line to its best line nearby, and the last line used.

    A wanted line is compared with the found lines up to ``_SLACK`` places either side of its own
    place, so a line the model left out or added does not ruin the alignment. Only the nearby line
    with the best quick (multiset) ratio gets the full ratio.
    """
    total, last = 0.0, 0
    matcher = SequenceMatcher(None, autojunk=False)
    for i, tokens in enumerate(wanted):
        nearby = sorted(range(max(0, i - _SLACK), min(len(found), i + _SLACK + 1)), key=lambda j: abs(j - i))
        exact = next((j for j in nearby if found[j] == tokens), None)
        if exact is not None:
            score, j = 1.0, exact
        elif not tokens or not nearby:
            continue
        else:
            matcher.set_seq2(tokens)
            quick = []
            for j in nearby:
                matcher.set_seq1(found[j])
                quick.append((matcher.quick_ratio(), -abs(j - i), j))
            _, _, j = max(quick)
            matcher.set_seq1(found[j])
            score = matcher.ratio()
        total += score
        if score > 0:
            last = max(last, j)
    return total / len(wanted), last


def _longest_first(key: str) -> tuple[int, str]:
    return -len(key), key


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
    matcher = SequenceMatcher(None, autojunk=False)
    matcher.set_seq2(_tokens(target[key]))
    normalise = normaliser(_LEVEL)
    for j, line in enumerate(lines):
        matcher.set_seq1(_tokens(normalise(line)))
        if matcher.real_quick_ratio() >= _MIN_RATIO and matcher.quick_ratio() >= _MIN_RATIO:
            score = matcher.ratio()
            if score >= _MIN_RATIO:
                first = near + j - key
                votes[first] += round(score * 100)
                anchors.setdefault(first, (near + j, offset))
        offset += len(line) + 1
