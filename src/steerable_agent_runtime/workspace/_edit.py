"""``edit_file`` matching: find each ``oldText`` and replace it, all edits or none.

Matching tries, in order: the exact text; then line by line with trailing whitespace ignored;
with both ends' whitespace ignored; and with Unicode punctuation folded as well. A tolerant
match replaces whole lines of the file, so everything outside the matched lines keeps the
file's own bytes. Every edit is located against the *original* text; overlapping edits are an
error. Error codes are listed in ``spec/tool_contract.json`` (``editErrorCodes``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

from ..errors import EditError
from ._fold import fold_punctuation

__all__ = ["EDIT_ERROR_CODES", "Edit", "apply_edits"]

EDIT_ERROR_CODES: Final = (
    "no_edits",
    "empty_old_text",
    "old_text_not_found",
    "ambiguous_match",
    "overlapping_edits",
    "no_change",
    "invalid_edit",
)
"""Every ``data.code`` an edit can fail with (besides the file-level codes)."""

_MAX_LISTED: Final = 10


@dataclass(frozen=True, slots=True)
class Edit:
    """One replacement: ``old_text`` -> ``new_text``, every occurrence when ``replace_all``."""

    old_text: str
    new_text: str
    replace_all: bool = False


_LEVELS: Final[tuple[tuple[str, Callable[[str], str]], ...]] = (
    ("trailing-whitespace", str.rstrip),
    ("whitespace", str.strip),
    ("unicode-punctuation", lambda line: fold_punctuation(line).strip()),
)


def _line_starts(text: str) -> list[int]:
    starts = [0]
    index = text.find("\n")
    while index != -1:
        starts.append(index + 1)
        index = text.find("\n", index + 1)
    return starts


def _line_of(starts: Sequence[int], offset: int) -> int:
    lo, hi = 0, len(starts) - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if starts[mid] <= offset:
            lo = mid
        else:
            hi = mid - 1
    return lo + 1


def _exact_spans(text: str, needle: str) -> list[tuple[int, int]]:
    spans = []
    start = text.find(needle)
    while start != -1:
        spans.append((start, start + len(needle)))
        start = text.find(needle, start + len(needle))
    return spans


def _tolerant_spans(
    text: str, lines: list[str], starts: list[int], needle: str, normalise: Callable[[str], str]
) -> list[tuple[int, int]]:
    wanted = needle.split("\n")
    with_newline = len(wanted) > 1 and wanted[-1] == ""
    if with_newline:
        wanted = wanted[:-1]
    target = [normalise(line) for line in wanted]
    if not any(target):
        return []
    normalised = [normalise(line) for line in lines]
    spans = []
    size = len(target)
    first = target[0]
    i = 0
    while i + size <= len(lines):
        if normalised[i] == first and normalised[i : i + size] == target:  # cheap first-line test first
            end_line = i + size - 1
            end = starts[end_line] + len(lines[end_line])
            if with_newline and end < len(text):
                end += 1  # the needle's final newline is part of the match
            spans.append((starts[i], end))
            i += size
        else:
            i += 1
    return spans


def _locate(text: str, edit: Edit, index: int, starts: list[int], lines: list[str]) -> list[tuple[int, int]]:
    spans = _exact_spans(text, edit.old_text)
    level = "exact"
    if not spans:
        for name, normalise in _LEVELS:
            spans = _tolerant_spans(text, lines, starts, edit.old_text, normalise)
            if spans:
                level = name
                break
    if not spans:
        preview = edit.old_text if len(edit.old_text) <= 200 else edit.old_text[:200] + "..."
        raise EditError(
            "old_text_not_found",
            f"edits[{index}].oldText was not found in the file (also tried ignoring whitespace and "
            f"typographic punctuation): {preview!r}. Re-read the file and copy the text exactly.",
            data={"edit": index},
        )
    if len(spans) > 1 and not edit.replace_all:
        found = [_line_of(starts, s) for s, _ in spans]
        listed = ", ".join(str(n) for n in found[:_MAX_LISTED]) + (
            ", ..." if len(found) > _MAX_LISTED else ""
        )
        raise EditError(
            "ambiguous_match",
            f"edits[{index}].oldText matches {len(spans)} places (lines {listed}); add surrounding lines "
            "to make it unique, or set replaceAll: true on that edit (replace_all: true with "
            "old_string/new_string) to change every occurrence.",
            data={"edit": index, "lines": found, "matchLevel": level},
        )
    return spans


def apply_edits(text: str, edits: Sequence[Edit], *, partial_view: bool = False) -> str:
    r"""Apply every edit to ``text`` atomically.

    Args:
        text: The file's text with ``\n`` line endings.
        edits: The replacements, each located against the original ``text``.
        partial_view: The model has seen only part of the file: an edit may then change only one
            place (``replace_all`` over several places could reach lines it never saw).

    Returns:
        The new text.

    Raises:
        EditError: ``no_edits``, ``empty_old_text``, ``old_text_not_found``, ``ambiguous_match``
            (with the line numbers), ``overlapping_edits`` (naming both edits), ``no_change``, or
            ``partial_read`` (``replace_all`` over several places after a partial view).
    """
    if not edits:
        raise EditError("no_edits", "no edits given; pass edits: [{oldText, newText}] (at least one)")
    starts = _line_starts(text)
    lines = text.split("\n")
    placed: list[tuple[int, int, int, str]] = []
    for index, edit in enumerate(edits):
        if edit.old_text == "":
            raise EditError(
                "empty_old_text",
                f"edits[{index}].oldText is empty; quote the exact text to replace "
                "(to create or overwrite a whole file use write_file)",
                data={"edit": index},
            )
        spans = _locate(text, edit, index, starts, lines)
        if partial_view and len(spans) > 1:
            raise EditError(
                "partial_read",
                f"edits[{index}] would replace {len(spans)} places, but you have only seen part of the file; "
                "replace_all could change lines you never saw. Make one edit per place you have seen, "
                "or read the whole file first",
                data={"edit": index, "matches": len(spans)},
            )
        for start, end in spans:
            placed.append((start, end, index, edit.new_text))
    placed.sort()
    for (_, e1, i1, _), (s2, _, i2, _) in zip(placed, placed[1:], strict=False):
        if s2 < e1:
            first, second = sorted((i1, i2))
            raise EditError(
                "overlapping_edits",
                f"edits[{first}] and edits[{second}] overlap (both touch line {_line_of(starts, s2)}); "
                "merge them into one edit",
                data={"edits": [first, second]},
            )
    pieces: list[str] = []
    cursor = 0
    for start, end, _, new_text in placed:
        pieces.append(text[cursor:start])
        pieces.append(new_text)
        cursor = end
    pieces.append(text[cursor:])
    result = "".join(pieces)
    if result == text:
        raise EditError("no_change", "the edits leave the file unchanged (newText equals oldText)")
    return result
