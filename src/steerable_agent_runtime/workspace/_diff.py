"""The unified diff a write reports (``data.diff``): from the whole texts, or from known changes.

``write_file`` and ``edit_file`` give the two texts and ``difflib`` finds the changes between the
first and the last one. ``apply_patch`` knows where each hunk went, so it passes those changes
and only the lines inside them are compared: the time is linear in the file's lines and the
hunks (SAFE-8), where ``difflib`` over a file with changes all over it takes time proportional to
lines x changes (11.6 s for 2,000 one-line hunks in 40,000 lines).

A result carries the diff only while it is small (:class:`DiffSummary`, at most
:data:`MAX_RESULT_DIFF_CHARS`): hosts send every result back to the model on every later round,
so a whole-file rewrite reports the lines it added and removed and leaves the diff out.

A result's diff is also bounded in work (:data:`DIFF_WORK_BUDGET`): ``difflib``'s matcher takes
time proportional to lines x changes (a 20,000-line file with every other line changed: 20 s; one
of 200,000 lines: over 5 minutes, in a thread no cancellation stops, after the write landed).
Past the budget the diff is not computed, and the counts are those of a linear-time comparison
that ignores the order of the lines (:class:`DiffSummary`).
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any, Final

__all__ = [
    "DIFF_WORK_BUDGET",
    "DIFF_WORK_PER_LINE",
    "MAX_RESULT_DIFF_CHARS",
    "Change",
    "DiffSummary",
    "unified_diff",
]

Change = tuple[int, int, int, int]
"""Where two texts differ: ``(old_start, old_end, new_start, new_end)``, 0-based line ranges, end
exclusive (an insertion has ``old_start == old_end``)."""

_Code = tuple[str, int, int, int, int]  # a difflib opcode: (tag, i1, i2, j1, j2)

_MAX_DIFF_CHARS: Final = 20_000
MAX_RESULT_DIFF_CHARS: Final = 4000
"""Longest diff a write's result carries; past it the diff is left out (:class:`DiffSummary`)."""
_CONTEXT: Final = 3  # lines of context around each change, as difflib's default
_DIFF_MARGIN: Final = 100
_HUNK = re.compile(r"@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@")
_CHUNKS: Final = (65536, 4096, 256, 16, 1)
DIFF_WORK_BUDGET: Final = 2_000_000
"""Steps of ``difflib``'s matcher one result's diffs may take (about 0.2 s), plus
:data:`DIFF_WORK_PER_LINE` per line of the texts; past it the diff is not computed
(:class:`DiffSummary`). A step: one line of the first text scanned, one occurrence of it in the
second looked at, or one line of the second text's range."""
DIFF_WORK_PER_LINE: Final = 2
"""Matcher steps each line of a diffed text adds to the budget: the work stays linear in the file."""


class _OverBudget(Exception):
    """The diff needs more matcher steps than its :class:`_Budget` has left."""


class _Budget:
    """The matcher steps left for one result's diffs (:data:`DIFF_WORK_BUDGET`)."""

    def __init__(self, steps: int = DIFF_WORK_BUDGET) -> None:
        self.left = steps

    def spend(self, steps: int) -> None:
        self.left -= steps
        if self.left < 0:
            raise _OverBudget


class _Matcher(difflib.SequenceMatcher[str]):
    """``difflib.SequenceMatcher`` that charges each longest-match search to a :class:`_Budget`.

    A search over ``a[alo:ahi]`` and ``b[blo:bhi]`` looks at each line of that range of ``a`` and
    at most every occurrence of it in ``b``: charged before it runs (prefix sums make that O(1)),
    so the matcher stops (:class:`_OverBudget`) before the work, never after it.
    """

    def __init__(self, a: list[str], b: list[str], budget: _Budget, *, autojunk: bool) -> None:
        budget.spend(len(a) + len(b))  # indexing b, and the prefix sums below
        super().__init__(None, a, b, autojunk=autojunk)
        self._budget = budget
        self._sizes = len(a), len(b)
        occurrences: dict[str, list[int]] = self.__dict__["b2j"]  # b's index (typeshed leaves it out)
        total, prefix = 0, [0]
        for line in a:
            total += 1 + len(occurrences.get(line, ()))
            prefix.append(total)
        self._prefix = prefix

    def find_longest_match(
        self, alo: int = 0, ahi: int | None = None, blo: int = 0, bhi: int | None = None
    ) -> difflib.Match:
        ahi = self._sizes[0] if ahi is None else ahi
        bhi = self._sizes[1] if bhi is None else bhi
        self._budget.spend(self._prefix[ahi] - self._prefix[alo] + (bhi - blo))
        return super().find_longest_match(alo, ahi, blo, bhi)


def _unordered(old: Sequence[str], new: Sequence[str]) -> tuple[int, int]:
    """Lines added and removed, ignoring order: each line's surplus in ``new`` and in ``old`` (linear).

    Exact when no line moved; otherwise at most what a diff counts (a moved line counts as none).
    """
    surplus = Counter(new)
    surplus.subtract(Counter(old))
    added = sum(n for n in surplus.values() if n > 0)
    return added, added - sum(surplus.values())


def _shift_hunk(header: str, offset: int) -> str:
    """Add ``offset`` to both start lines of a unified-diff hunk header."""
    found = _HUNK.match(header)
    if found is None or offset == 0:
        return header
    old, old_len, new, new_len = found.groups()
    shifted = f"@@ -{int(old) + offset}{old_len or ''} +{int(new) + offset}{new_len or ''} @@"
    return shifted + header[found.end() :]


def _common_prefix(a: str, b: str) -> int:
    """Length of the common prefix, compared in shrinking slices (C speed, not one char at a time)."""
    limit, i = min(len(a), len(b)), 0
    for step in _CHUNKS:
        while i + step <= limit and a[i : i + step] == b[i : i + step]:
            i += step
    return i


def _common_suffix(a: str, b: str, floor: int) -> int:
    """Length of the common suffix of ``a[floor:]`` and ``b[floor:]``."""
    limit, n = min(len(a), len(b)) - floor, 0
    for step in _CHUNKS:
        while n + step <= limit and a[len(a) - n - step : len(a) - n] == b[len(b) - n - step : len(b) - n]:
            n += step
    return n


def _lines(text: str) -> list[str]:
    r"""Split on ``\n`` only, keeping it (``read_file``'s line numbers count ``\n`` too)."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _clipped(diff: str) -> str:
    if len(diff) > _MAX_DIFF_CHARS:
        diff = diff[:_MAX_DIFF_CHARS] + f"\n[... diff clipped at {_MAX_DIFF_CHARS} characters ...]\n"
    return diff


def unified_diff(
    before: str, after: str, path: str, *, created: bool = False, changes: Sequence[Change] | None = None
) -> str:
    r"""Return a unified diff (3 lines of context) from ``before`` to ``after``, clipped to 20,000 chars.

    Args:
        before: The old text (``\n`` line endings).
        after: The new text.
        path: The file's display path (``a/<path>``, ``b/<path>``).
        created: The file is new: the diff is from ``/dev/null``.
        changes: Where ``after`` differs from ``before``, in order, every line outside them equal
            (``apply_patch`` knows them from its hunks). Only the lines inside are compared, so the
            time is linear in the lines and the changes. Without it, the lines from 100 before the
            first change to 100 after the last one are handed to ``difflib`` (which takes 40 ms
            on one changed line of a 1 MB file), with the hunk headers shifted back to the file's
            line numbers.

    Returns:
        The diff text (``""`` when the texts are equal); past 20,000 characters it is cut and a
        ``[... diff clipped at 20000 characters ...]`` line added.
    """
    return _clipped("".join(_diff_lines(before, after, path, created=created, changes=changes, budget=None)))


class DiffSummary:
    """What a write's result says of its changes: lines added and removed, and the diff while small.

    Each :meth:`add` feeds one file's diff; its text is kept until the whole passes
    :data:`MAX_RESULT_DIFF_CHARS`, then only counted. All the diffs of one summary share one
    :data:`DIFF_WORK_BUDGET` (and :data:`DIFF_WORK_PER_LINE` for each line given): a file whose
    diff would take more is not diffed (nor is any file after it); its lines are counted ignoring
    their order (:func:`_unordered`) and the result says the diff was not computed.
    :meth:`fields` gives the result's fields.

    Args:
        budget: The matcher steps the summary's diffs may take (default :data:`DIFF_WORK_BUDGET`).
    """

    def __init__(self, budget: int = DIFF_WORK_BUDGET) -> None:
        self.added = 0
        self.removed = 0
        self.chars = 0
        self.uncomputed = 0  # lines of the files whose diff was not computed (over the budget)
        self._budget = _Budget(budget)
        self._parts: list[str] = []

    def add(self, before: str, after: str, path: str, *, changes: Sequence[Change] | None = None) -> None:
        r"""Count (and, while small, keep) the diff from ``before`` to ``after``, as :func:`unified_diff`'s.

        Args:
            before: The old text (``\n`` line endings).
            after: The new text.
            path: The file's display path.
            changes: As for :func:`unified_diff`.
        """
        if self.uncomputed:  # the budget is spent: no diff of this summary is shown
            self._count_unordered(before, after, changes)
            return
        self._budget.left += DIFF_WORK_PER_LINE * (before.count("\n") + after.count("\n"))
        try:
            # the matcher runs (and the budget is spent) in this call; the lines come after
            lines = _diff_lines(before, after, path, created=False, changes=changes, budget=self._budget)
        except _OverBudget:
            self._parts.clear()
            self._count_unordered(before, after, changes)
            return
        for number, line in enumerate(lines):
            if number >= 2:  # after the two header lines
                first = line[:1]
                self.added += first == "+"
                self.removed += first == "-"
            self.chars += len(line)
            if self.chars <= MAX_RESULT_DIFF_CHARS:
                self._parts.append(line)
            elif self._parts:
                self._parts.clear()

    def _count_unordered(self, before: str, after: str, changes: Sequence[Change] | None) -> None:
        """Count a file over the budget: only its differing lines, ignoring their order (linear)."""
        if changes is None:
            old, new, _ = _trimmed(before, after, margin=0)
            regions = [(old, new)]
        else:
            old_lines, new_lines = _lines(before), _lines(after)
            regions = [(old_lines[i1:i2], new_lines[j1:j2]) for i1, i2, j1, j2 in _touching(changes)]
        for old, new in regions:
            added, removed = _unordered(old, new)
            self.added += added
            self.removed += removed
            self.uncomputed += max(len(old), len(new))

    def count(self, *, added: int = 0, removed: int = 0) -> None:
        """Count lines a diff does not show (a file created or deleted whole)."""
        self.added += added
        self.removed += removed

    def fields(self) -> dict[str, Any]:
        """The result's fields: ``{linesAdded, linesRemoved, diff}``.

        Past the bound, ``diffOmitted: true`` and, as ``diff``, a line saying how long the diff was
        and that ``read_file`` shows the new text. Past the work budget, ``diffOmitted: true`` and
        ``diffNotComputed: true``, the counts ignore the order of the lines, and ``diff`` says so.
        """
        fields: dict[str, Any] = {"linesAdded": self.added, "linesRemoved": self.removed}
        if self.uncomputed:
            fields["diffOmitted"] = True
            fields["diffNotComputed"] = True
            fields["diff"] = (
                f"[diff not computed: the changes are spread over {self.uncomputed} lines, too many to "
                "compare quickly; linesAdded and linesRemoved count the lines one text has more of "
                "than the other, in any order; read_file shows the new text]"
            )
        elif self.chars <= MAX_RESULT_DIFF_CHARS:
            fields["diff"] = "".join(self._parts)
        else:
            fields["diffOmitted"] = True
            fields["diff"] = (
                f"[diff left out: {self.chars} characters, over the {MAX_RESULT_DIFF_CHARS} a result "
                "shows; read_file shows the new text]"
            )
        return fields


def _diff_lines(
    before: str,
    after: str,
    path: str,
    *,
    created: bool,
    changes: Sequence[Change] | None,
    budget: _Budget | None,
) -> Iterator[str]:
    """The lines of the diff :func:`unified_diff` describes, unclipped (the matcher runs in the call).

    Raises:
        _OverBudget: ``budget`` ran out (in the call: no line is produced).
    """
    source = "/dev/null" if created else f"a/{path}"
    if changes is not None:
        old, new = _lines(before), _lines(after)
        return _format(old, new, _codes(old, new, changes, budget), source, f"b/{path}")
    old, new, start = _trimmed(before, after, margin=_DIFF_MARGIN)
    matcher = (
        difflib.SequenceMatcher(None, old, new)
        if budget is None
        else _Matcher(old, new, budget, autojunk=True)
    )
    codes: list[_Code] = [(tag, i1, i2, j1, j2) for tag, i1, i2, j1, j2 in matcher.get_opcodes()]
    lines = _format(old, new, codes, source, f"b/{path}")  # as difflib.unified_diff writes them
    offset = before.count("\n", 0, start)
    return (_shift_hunk(line, offset) if line.startswith("@@") else line for line in lines)


def _trimmed(before: str, after: str, *, margin: int) -> tuple[list[str], list[str], int]:
    """The lines from ``margin`` lines before the first difference to ``margin`` after the last.

    Returns:
        Those lines of ``before`` and of ``after``, and where they start in ``before`` (a character
        offset): the lines outside are equal.
    """
    start = before.rfind("\n", 0, _common_prefix(before, after)) + 1
    for _ in range(margin):
        if start == 0:
            break
        start = before.rfind("\n", 0, start - 1) + 1
    end = before.find("\n", len(before) - _common_suffix(before, after, start)) + 1 or len(before)
    for _ in range(margin):
        if end >= len(before):
            break
        end = before.find("\n", end) + 1 or len(before)
    end_after = end - len(before) + len(after)
    return _lines(before[start:end]), _lines(after[start:end_after]), start


def _touching(changes: Sequence[Change]) -> list[Change]:
    """``changes`` with the ones that have no line between them merged (compared as one)."""
    touching: list[Change] = []
    for change in changes:
        if touching and change[0] <= touching[-1][1]:
            i1, i2, j1, j2 = touching[-1]
            touching[-1] = (i1, max(i2, change[1]), j1, max(j2, change[3]))
        else:
            touching.append(change)
    return touching


def _codes(old: list[str], new: list[str], changes: Sequence[Change], budget: _Budget | None) -> list[_Code]:
    """The opcodes of the whole texts, as difflib's: equal between the changes, ``SequenceMatcher`` inside."""
    codes: list[_Code] = []

    def add(code: _Code) -> None:
        if codes and code[0] == "equal" and codes[-1][0] == "equal":  # one run, as difflib gives it
            codes[-1] = ("equal", codes[-1][1], code[2], codes[-1][3], code[4])
        elif code[1] < code[2] or code[3] < code[4]:
            codes.append(code)

    i = j = 0
    for i1, i2, j1, j2 in _touching(changes):
        add(("equal", i, i1, j, j1))
        matcher = (
            difflib.SequenceMatcher(None, old[i1:i2], new[j1:j2], autojunk=False)
            if budget is None
            else _Matcher(old[i1:i2], new[j1:j2], budget, autojunk=False)
        )
        for tag, a1, a2, b1, b2 in matcher.get_opcodes():
            add((tag, i1 + a1, i1 + a2, j1 + b1, j1 + b2))
        i, j = i2, j2
    add(("equal", i, len(old), j, len(new)))
    return codes


def _groups(codes: list[_Code]) -> Iterator[list[_Code]]:
    """The changes with up to 3 lines of context each, as ``SequenceMatcher.get_grouped_opcodes``."""
    if not any(tag != "equal" for tag, *_ in codes):
        return
    n = _CONTEXT
    if codes[0][0] == "equal":
        tag, i1, i2, j1, j2 = codes[0]
        codes[0] = tag, max(i1, i2 - n), i2, max(j1, j2 - n), j2
    if codes[-1][0] == "equal":
        tag, i1, i2, j1, j2 = codes[-1]
        codes[-1] = tag, i1, min(i2, i1 + n), j1, min(j2, j1 + n)
    group: list[_Code] = []
    for tag, i1, i2, j1, j2 in codes:
        if tag == "equal" and i2 - i1 > 2 * n:  # a long unchanged stretch ends the group
            group.append((tag, i1, min(i2, i1 + n), j1, min(j2, j1 + n)))
            yield group
            group = []
            i1, j1 = max(i1, i2 - n), max(j1, j2 - n)
        group.append((tag, i1, i2, j1, j2))
    if group and not (len(group) == 1 and group[0][0] == "equal"):
        yield group


def _range(start: int, stop: int) -> str:
    """A unified-diff range: ``start`` 1-based, the length left out when it is 1."""
    length = stop - start
    if length == 1:
        return str(start + 1)
    return f"{start + 1 if length else start},{length}"


def _format(old: list[str], new: list[str], codes: list[_Code], source: str, target: str) -> Iterator[str]:
    """The diff's lines, as ``difflib.unified_diff`` writes them."""
    started = False
    for group in _groups(codes):
        if not started:
            started = True
            yield f"--- {source}\n"
            yield f"+++ {target}\n"
        first, last = group[0], group[-1]
        yield f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@\n"
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                yield from (" " + line for line in old[i1:i2])
                continue
            if tag in ("replace", "delete"):
                yield from ("-" + line for line in old[i1:i2])
            if tag in ("replace", "insert"):
                yield from ("+" + line for line in new[j1:j2])
