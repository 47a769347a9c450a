"""``edit_file`` matching: find each ``oldText`` and replace it, all edits or none.

Matching tries the levels of :mod:`._levels` in order: the exact text; then line by line with
trailing whitespace ignored; with both ends' whitespace ignored; and with Unicode punctuation
folded as well. A tolerant match replaces whole lines of the file, so everything outside the
matched lines keeps the file's own bytes; where leading whitespace was ignored, the replacement is
re-indented the way the match was (:mod:`._indent`) or the edit is refused (FILE-14;
docs/file-tools.md, edit_file matching).
A text found in several places at the level where it matched is refused unless ``replace_all``.
Every edit is located against the *original* text; overlapping edits are an error. Error codes
are listed in ``spec/tool_contract.json`` (``editErrorCodes``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from ..errors import EditError, WriteConflictError
from ._codes import FileErrorCode
from ._indent import IndentationMismatch, Labels, reindent
from ._levels import (
    LEVEL_DESCRIPTIONS,
    MATCH_LEVELS,
    REINDENT_LEVELS,
    MatchLevel,
    Run,
    TextLines,
    loosest_level,
)
from ._nearest import find_nearest

__all__ = ["EDIT_ERROR_CODES", "Edit", "EditMatch", "EditOutcome", "apply_edits", "apply_edits_detailed"]

EDIT_ERROR_CODES: Final = (
    FileErrorCode.NO_EDITS,
    FileErrorCode.EMPTY_OLD_TEXT,
    FileErrorCode.OLD_TEXT_NOT_FOUND,
    FileErrorCode.AMBIGUOUS_MATCH,
    FileErrorCode.OVERLAPPING_EDITS,
    FileErrorCode.NO_CHANGE,
    FileErrorCode.INVALID_EDIT,
    FileErrorCode.INDENTATION_MISMATCH,
)
"""Every ``data.code`` an edit can fail with (besides the file-level codes)."""

_MAX_LISTED: Final = 10
_MAX_CANDIDATES: Final = 1000  # runs looked for at a tolerant level when only one may match


@dataclass(frozen=True, slots=True)
class Edit:
    """One replacement: ``old_text`` -> ``new_text``, every occurrence when ``replace_all``."""

    old_text: str
    new_text: str
    replace_all: bool = False


@dataclass(frozen=True, slots=True)
class EditMatch:
    """Where one edit matched, and how (FILE-14).

    Attributes:
        edit: The edit's 0-based index in ``edits``.
        level: The match level used: ``"exact"`` or a tolerance (see ``MATCH_LEVELS``).
        lines: The 1-based first line of each place replaced, in file order.
        reindented: The replacement was re-indented to the file's indentation.
    """

    edit: int
    level: MatchLevel
    lines: tuple[int, ...]
    reindented: bool


@dataclass(frozen=True, slots=True)
class EditOutcome:
    """What :func:`apply_edits_detailed` did: the new ``text`` and one match per edit, in edit order."""

    text: str
    matches: tuple[EditMatch, ...]

    @property
    def level(self) -> MatchLevel:
        """The loosest level any edit needed (``"exact"`` when every edit matched exactly)."""
        return loosest_level(match.level for match in self.matches)


@dataclass(frozen=True, slots=True)
class _Place:
    """One stretch of the original text to replace."""

    start: int
    end: int
    index: int
    replacement: str


def _line_numbers(text: str, offsets: Sequence[int]) -> list[int]:
    """Return the 1-based line of each offset (``offsets`` ascending), counting newlines once."""
    numbers, line, counted = [], 1, 0
    for offset in offsets:
        line += text.count("\n", counted, offset)
        counted = offset
        numbers.append(line)
    return numbers


def _exact_spans(text: str, needle: str) -> list[tuple[int, int]]:
    spans = []
    start = text.find(needle)
    while start != -1:
        spans.append((start, start + len(needle)))
        start = text.find(needle, start + len(needle))
    return spans


def _old_lines(old_text: str) -> tuple[list[str], bool]:
    """Split ``oldText`` into lines; the flag says a final newline belongs to the match."""
    wanted = old_text.split("\n")
    with_newline = len(wanted) > 1 and wanted[-1] == ""
    return (wanted[:-1] if with_newline else wanted), with_newline


def _tolerant_runs(
    source: TextLines, wanted: list[str], level: MatchLevel, *, every: bool
) -> tuple[list[Run], bool]:
    """Return the non-overlapping runs of ``wanted`` at ``level``, first come first served.

    Unless ``every`` (``replace_all``), at most ``_MAX_CANDIDATES`` are looked for, since more than
    one is refused anyway; the flag says the search stopped there.
    """
    if not any(line.strip() for line in wanted):
        return [], False
    limit = None if every else _MAX_CANDIDATES
    runs = source.runs(wanted, level, limit=limit)
    kept: list[Run] = []
    free = 0
    for run in runs:
        if run.index >= free:
            kept.append(run)
            free = run.index + len(wanted)
    return kept, len(runs) == limit


@dataclass(slots=True)
class _Located:
    """Where one edit goes: its level, the places, and their 1-based first lines."""

    level: MatchLevel
    places: list[_Place]
    lines: list[int]
    reindented: bool = False
    more: bool = False  # the search stopped before the end: there may be more places


def _locate(source: TextLines, edit: Edit, index: int) -> _Located:
    text = source.text
    spans = _exact_spans(text, edit.old_text)
    if spans:
        places = [_Place(start, end, index, edit.new_text) for start, end in spans]
        located = _Located("exact", places, _line_numbers(text, [start for start, _ in spans]))
        _check_unique(located, edit, index)
        return located
    wanted, with_newline = _old_lines(edit.old_text)
    for level in MATCH_LEVELS[1:]:
        runs, more = _tolerant_runs(source, wanted, level, every=edit.replace_all)
        if runs:
            located = _Located(level, [], [run.index + 1 for run in runs], more=more)
            _check_unique(located, edit, index)
            for run in runs:
                end = run.end + 1 if with_newline and run.end < len(text) else run.end
                replacement = edit.new_text
                if level in REINDENT_LEVELS:
                    replacement, moved = _reindent(source, run, end, wanted, edit, index, level)
                    located.reindented |= moved
                located.places.append(_Place(run.offset, end, index, replacement))
            return located
    raise _not_found(source, edit, index, wanted)


def _reindent(
    source: TextLines, run: Run, end: int, wanted: list[str], edit: Edit, index: int, level: MatchLevel
) -> tuple[str, bool]:
    labels = Labels(f"edits[{index}].oldText line {{n}}", f"edits[{index}].newText line {{n}}")
    try:
        moved = reindent(
            wanted,
            run.lines,
            edit.new_text.split("\n"),
            first_line=run.index + 1,
            labels=labels,
            around=source.nearby(run.offset, end),
        )
    except IndentationMismatch as exc:
        last = run.index + len(run.lines)
        where = f"line {last}" if last == run.index + 1 else f"lines {run.index + 1}-{last}"
        raise EditError(
            FileErrorCode.INDENTATION_MISMATCH,
            f"edits[{index}].oldText matches {where} only {LEVEL_DESCRIPTIONS[level]}, and its indentation "
            f"does not map onto the file's: {exc}",
            data={"edit": index, "line": exc.file_line, "matchLevel": level},
        ) from None
    return "\n".join(moved.lines), moved.changed


def _check_unique(located: _Located, edit: Edit, index: int) -> None:
    if len(located.lines) < 2 or edit.replace_all:
        return
    found = located.lines
    listed = ", ".join(str(n) for n in found[:_MAX_LISTED]) + (", ..." if len(found) > _MAX_LISTED else "")
    how = "" if located.level == "exact" else f" {LEVEL_DESCRIPTIONS[located.level]}"
    count = f"{len(found)} or more" if located.more else str(len(found))
    raise EditError(
        FileErrorCode.AMBIGUOUS_MATCH,
        f"edits[{index}].oldText matches {count} places (lines {listed}){how}; add surrounding lines "
        "to make it unique, or set replaceAll: true on that edit (replace_all: true with "
        "old_string/new_string) to change every occurrence.",
        data={"edit": index, "lines": found, "matchLevel": located.level},
    )


def _not_found(source: TextLines, edit: Edit, index: int, wanted: list[str]) -> EditError:
    preview = edit.old_text if len(edit.old_text) <= 200 else edit.old_text[:200] + "..."
    message = (
        f"edits[{index}].oldText was not found in the file (also tried ignoring whitespace and "
        f"typographic punctuation): {preview!r}."
    )
    nearest = find_nearest(source, wanted)
    if nearest is None:
        return EditError(
            FileErrorCode.OLD_TEXT_NOT_FOUND,
            f"{message} Re-read the file and copy the text exactly.",
            data={"edit": index},
        )
    return EditError(
        FileErrorCode.OLD_TEXT_NOT_FOUND,
        f"{message} The nearest text in the file is {nearest.describe()}:\n{nearest.render()}\n"
        "Copy the text exactly from those lines.",
        data={"edit": index, "nearest": nearest.as_data()},
    )


def apply_edits(text: str, edits: Sequence[Edit], *, partial_view: bool = False) -> str:
    r"""Apply every edit to ``text`` atomically and return the new text.

    The same as ``apply_edits_detailed(text, edits, partial_view=partial_view).text``.
    """
    return apply_edits_detailed(text, edits, partial_view=partial_view).text


def apply_edits_detailed(text: str, edits: Sequence[Edit], *, partial_view: bool = False) -> EditOutcome:
    r"""Apply every edit to ``text`` atomically, and say where and at which level each matched.

    Each ``old_text`` is looked for exactly, then at each tolerant level (FILE-14): a match that
    ignored leading whitespace has its replacement re-indented the way the match was, or is refused.

    Args:
        text: The file's text with ``\n`` line endings.
        edits: The replacements, each located against the original ``text``.
        partial_view: The model has seen only part of the file: an edit may then change only one
            place (``replace_all`` over several places could reach lines it never saw).

    Returns:
        ``EditOutcome(text, matches)``: the new text and one ``EditMatch(edit, level, lines,
        reindented)`` per edit, in edit order.

    Raises:
        EditError: ``no_edits``, ``empty_old_text``, ``old_text_not_found`` (with ``data.nearest``
            when the file has similar lines), ``ambiguous_match`` (with the line numbers and
            ``matchLevel``), ``indentation_mismatch`` (naming the lines), ``overlapping_edits``
            (naming both edits) or ``no_change``.
        WriteConflictError: ``partial_read`` (``replace_all`` over several places after a partial
            view), the class every read-before-write refusal has.
    """
    if not edits:
        raise EditError(
            FileErrorCode.NO_EDITS, "no edits given; pass edits: [{oldText, newText}] (at least one)"
        )
    source = TextLines(text)
    placed: list[_Place] = []
    matches: list[EditMatch] = []
    for index, edit in enumerate(edits):
        if edit.old_text == "":
            raise EditError(
                FileErrorCode.EMPTY_OLD_TEXT,
                f"edits[{index}].oldText is empty; quote the exact text to replace "
                "(to create or overwrite a whole file use write_file)",
                data={"edit": index},
            )
        located = _locate(source, edit, index)
        if partial_view and len(located.places) > 1:
            raise WriteConflictError(
                FileErrorCode.PARTIAL_READ,
                f"edits[{index}] would replace {len(located.places)} places, but you have only seen part of "
                "the file; replace_all could change lines you never saw. Make one edit per place you have "
                "seen, or read the whole file first",
                data={"edit": index, "matches": len(located.places)},
            )
        placed.extend(located.places)
        matches.append(EditMatch(index, located.level, tuple(located.lines), located.reindented))
    placed.sort(key=lambda place: (place.start, place.end, place.index))
    for one, two in zip(placed, placed[1:], strict=False):
        if two.start < one.end:
            first, second = sorted((one.index, two.index))
            raise EditError(
                FileErrorCode.OVERLAPPING_EDITS,
                f"edits[{first}] and edits[{second}] overlap (both touch line "
                f"{text.count(chr(10), 0, two.start) + 1}); merge them into one edit",
                data={"edits": [first, second]},
            )
    pieces: list[str] = []
    cursor = 0
    for place in placed:
        pieces.append(text[cursor : place.start])
        pieces.append(place.replacement)
        cursor = place.end
    pieces.append(text[cursor:])
    result = "".join(pieces)
    if result == text:
        raise EditError(
            FileErrorCode.NO_CHANGE, "the edits leave the file unchanged (newText equals oldText)"
        )
    return EditOutcome(result, tuple(matches))
