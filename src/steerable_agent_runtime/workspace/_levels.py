"""Match levels shared by ``edit_file`` and ``apply_patch``, and whole-line search at each level.

A tolerant match compares whole lines after a level's normalisation, strictest level first:

=======================  ==============================================================
``exact``                the text itself
``trailing-whitespace``  each line with trailing whitespace removed
``whitespace``           each line with leading and trailing whitespace removed
``unicode-punctuation``  as ``whitespace``, with typographic punctuation folded to ASCII
=======================  ==============================================================

At ``whitespace`` and ``unicode-punctuation`` a line's indentation may differ from the file's,
so the replacement is re-indented (:mod:`._indent`) or refused (FILE-14).

:class:`TextLines` finds runs of whole lines without normalising the whole file: a line
normalised at any level is a substring of the raw line (of the folded line at
``unicode-punctuation``), so only the lines containing the pattern's longest normalised line,
found at C speed with ``str.find``, are compared.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Final, Literal

from ._fold import fold_punctuation

__all__ = [
    "LEVEL_DESCRIPTIONS",
    "MATCH_LEVELS",
    "REINDENT_LEVELS",
    "MatchLevel",
    "Run",
    "TextLines",
    "loosest_level",
    "normaliser",
]

_MEMO_MAX_HITS: Final = 100_000
"""Scans with more hits than this are not remembered (their list would be large)."""
_MAX_ANCHORS: Final = 20_000
"""Lines holding a key tried before the key counts as too common and the next one is used."""
_MAX_KEYS: Final = 3
"""How many of a pattern's longest distinct lines are tried as keys before a full scan."""

MatchLevel = Literal["exact", "trailing-whitespace", "whitespace", "unicode-punctuation"]
"""The name of a match level, as reported in results (``data.matchLevel``)."""

MATCH_LEVELS: Final[tuple[MatchLevel, ...]] = (
    "exact",
    "trailing-whitespace",
    "whitespace",
    "unicode-punctuation",
)
"""Every match level, strictest first."""

REINDENT_LEVELS: Final[frozenset[MatchLevel]] = frozenset({"whitespace", "unicode-punctuation"})
"""The levels that ignore leading whitespace, where a replacement is re-indented (FILE-14)."""

LEVEL_DESCRIPTIONS: Final[dict[MatchLevel, str]] = {
    "exact": "exactly",
    "trailing-whitespace": "with trailing whitespace ignored",
    "whitespace": "with leading and trailing whitespace ignored",
    "unicode-punctuation": "with whitespace ignored and typographic punctuation folded",
}
"""How each level is named in a model-facing message ("matches 2 places {description}")."""


def _exact(line: str) -> str:
    return line


def _fold_strip(line: str) -> str:
    return line.strip() if line.isascii() else fold_punctuation(line).strip()


_NORMALISERS: Final[dict[MatchLevel, Callable[[str], str]]] = {
    "exact": _exact,
    "trailing-whitespace": str.rstrip,
    "whitespace": str.strip,
    "unicode-punctuation": _fold_strip,
}


def normaliser(level: MatchLevel) -> Callable[[str], str]:
    """Return the function mapping one line to the form compared at ``level``."""
    return _NORMALISERS[level]


def loosest_level(levels: Iterable[MatchLevel]) -> MatchLevel:
    """Return the loosest of ``levels`` (latest in :data:`MATCH_LEVELS`), ``"exact"`` when empty."""
    return max(levels, key=MATCH_LEVELS.index, default="exact")


@dataclass(frozen=True, slots=True)
class Run:
    """Lines of the file that matched: the 0-based ``index`` of the first, its ``offset``, the ``lines``."""

    index: int
    offset: int
    lines: tuple[str, ...]

    @property
    def end(self) -> int:
        """The offset just past the last line (before its newline)."""
        return self.offset + sum(len(line) + 1 for line in self.lines) - 1


class TextLines:
    r"""The lines of ``text`` (``text.split("\n")``), searched without splitting the whole text.

    Args:
        text: The file's text with ``\n`` line endings.
        lines: The text's lines when the caller has them already (they may omit the empty line
            after a final newline); lines are then read from the list instead of the text.
    """

    def __init__(self, text: str, lines: Sequence[str] | None = None) -> None:
        self.text = text
        self.lines = lines
        self._folded: str | None = None
        self._memo: dict[tuple[str, bool, int], list[tuple[int, int]]] = {}

    def haystack(self, level: MatchLevel) -> str:
        """Return the text that a line normalised at ``level`` is a substring of."""
        if level != "unicode-punctuation" or self.text.isascii():
            return self.text
        if self._folded is None:
            self._folded = fold_punctuation(self.text)  # length-preserving: offsets stay valid
        return self._folded

    def containing(
        self, key: str, level: MatchLevel, *, limit: int | None = None, begin: tuple[int, int] = (0, 0)
    ) -> list[tuple[int, int]] | None:
        """Return ``(index, start offset)`` of every line containing ``key`` at ``level``, in order.

        Args:
            key: A non-empty string without a newline.
            level: Selects the :meth:`haystack`.
            limit: Return None as soon as more than this many lines contain ``key``.
            begin: ``(index, start offset)`` of the line to start at.
        """
        found: list[tuple[int, int]] = []
        for hit in self._anchors(key, level, begin):
            found.append(hit)
            if limit is not None and len(found) > limit:
                return None
        return found

    def _anchors(self, key: str, level: MatchLevel, begin: tuple[int, int]) -> Iterator[tuple[int, int]]:
        """Yield the lines containing ``key``, remembering a scan that runs to the end.

        The levels (and the nearest-lines search) looking for the same key then scan the text once.
        """
        hay = self.haystack(level)
        memo = (key, hay is not self.text, begin[1])
        known = self._memo.get(memo)
        if known is not None:
            yield from known
            return
        seen: list[tuple[int, int]] = []
        index, counted = begin
        at = hay.find(key, counted)
        while at != -1:
            index += hay.count("\n", counted, at)
            hit = (index, hay.rfind("\n", 0, at) + 1)
            if len(seen) <= _MEMO_MAX_HITS:
                seen.append(hit)
            yield hit
            end = hay.find("\n", at)
            if end == -1:
                break
            index, counted = index + 1, end + 1
            at = hay.find(key, counted)
        if len(seen) <= _MEMO_MAX_HITS:
            self._memo[memo] = seen

    def window(
        self, anchor: tuple[int, int], first: int, size: int, *, clamp: bool = False
    ) -> tuple[int, list[str]] | None:
        """Return ``(start offset, lines)`` of lines ``first .. first+size-1``, or None past either end.

        Args:
            anchor: ``(index, start offset)`` of a known line, as :meth:`containing` yields.
            first: The index of the first line wanted (0 or more).
            size: How many lines.
            clamp: Return the lines there are when the text ends sooner, instead of None.
        """
        index, offset = anchor
        if first < 0:
            return None
        if self.lines is None:
            return self._walk(index, offset, first, size, clamp=clamp)
        if first > len(self.lines) or (first + size > len(self.lines) and not clamp):
            return None
        lines = list(self.lines[first : first + size])
        if first <= index:
            offset -= sum(len(line) + 1 for line in self.lines[first:index])
        else:
            offset += sum(len(line) + 1 for line in self.lines[index:first])
        return offset, lines

    def _walk(
        self, index: int, offset: int, first: int, size: int, *, clamp: bool
    ) -> tuple[int, list[str]] | None:
        text = self.text
        while index > first:
            offset = text.rfind("\n", 0, offset - 1) + 1
            index -= 1
        while index < first:
            end = text.find("\n", offset)
            if end == -1:
                return None
            offset, index = end + 1, index + 1
        lines: list[str] = []
        position = offset
        while len(lines) < size and position <= len(text):
            end = text.find("\n", position)
            stop = len(text) if end == -1 else end
            lines.append(text[position:stop])
            position = stop + 1
        if len(lines) < size and not clamp:
            return None
        return offset, lines

    def nearby(self, start: int, end: int, chars: int = 4000) -> list[str]:
        """Return the whole lines within ``chars`` characters of the span ``start .. end``."""
        low, high = max(0, start - chars), min(len(self.text), end + chars)
        lines = self.text[low:high].split("\n")
        if low > 0:
            lines = lines[1:]
        if high < len(self.text):
            lines = lines[:-1]
        return lines

    def runs(
        self,
        pattern: Sequence[str],
        level: MatchLevel,
        *,
        start: int = 0,
        begin: tuple[int, int] | None = None,
        limit: int | None = None,
    ) -> list[Run]:
        """Return the runs of lines equal to ``pattern`` at ``level``, in file order, at most ``limit``.

        Runs may overlap and begin at line ``start`` or later. ``begin`` is ``(index, start offset)``
        of a line at or before ``start`` where the search may begin. Candidates are the lines holding
        one of the pattern's longest lines (the first that is not too common); a pattern made only of
        blank or very common lines is compared against every line instead.
        """
        normalise = normaliser(level)
        target = [normalise(line) for line in pattern]
        for key in sorted({line for line in target if line}, key=_longest_first)[:_MAX_KEYS]:
            found = self._keyed_runs(target, key, level, start, begin or (0, 0), limit)
            if found is not None:
                return found
        return self._scan(target, normalise, start, limit)

    def _keyed_runs(
        self,
        target: list[str],
        key: str,
        level: MatchLevel,
        start: int,
        begin: tuple[int, int],
        limit: int | None,
    ) -> list[Run] | None:
        """Return the runs found from the lines holding ``key``, or None when ``key`` is too common."""
        normalise = normaliser(level)
        keyed = [i for i, line in enumerate(target) if line == key]
        found: list[Run] = []
        tried: set[int] = set()
        # A run is first tried at the anchor of its first key line, so runs are found in order.
        for count, anchor in enumerate(self._anchors(key, level, begin), 1):
            if count > _MAX_ANCHORS:
                return None
            for i in keyed:
                index = anchor[0] - i
                if index < start or index in tried:
                    continue
                tried.add(index)
                window = self.window(anchor, index, len(target))
                if window is not None and [normalise(line) for line in window[1]] == target:
                    found.append(Run(index, window[0], tuple(window[1])))
                    if limit is not None and len(found) >= limit:
                        return found
        return found

    def _scan(
        self, target: list[str], normalise: Callable[[str], str], start: int, limit: int | None
    ) -> list[Run]:
        """Compare ``target`` against every line (for blank or very common patterns)."""
        if self.lines is None:
            self.lines = self.text.split("\n")
        lines = self.lines
        normalised = [normalise(line) for line in lines]
        size, head = len(target), target[0]
        indexes: list[int] = []
        for i in range(start, len(lines) - size + 1):
            if normalised[i] == head and normalised[i : i + size] == target:
                indexes.append(i)
                if limit is not None and len(indexes) >= limit:
                    break
        found: list[Run] = []
        offset, at = 0, 0
        for i in indexes:
            offset += sum(len(line) + 1 for line in lines[at:i])
            at = i
            found.append(Run(i, offset, tuple(lines[i : i + size])))
        return found


def _longest_first(key: str) -> tuple[int, str]:
    return -len(key), key
