"""Pure parser and text applier for the Codex ``apply_patch`` format (no file I/O).

The grammar, as the model writes it::

    *** Begin Patch
    *** Add File: <path>            then lines that each start with '+'
    *** Delete File: <path>
    *** Update File: <path>
    *** Move to: <new path>         optional, right after Update File
    @@ [one line of context]        the first hunk of an Update may omit it
     context / -removed / +added    hunk body
    *** End of File                 optional: the hunk sits at the end of the file
    *** End Patch

Leniency follows Codex (trimming, padded markers, a heredoc wrapper; docs/file-tools.md,
"apply_patch"). :func:`apply_chunks` locates hunks at the match levels of :mod:`._levels`, keeps the
file's own text for lines a hunk leaves alone, re-indents '+' lines after an indentation-blind
match and refuses a hunk matching several places at a tolerant level (FILE-14). Reading, writing
and atomicity across files belong to the file layer (FILE-11).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from typing import Final

from steerable_agent_runtime.errors import PatchError

from ._codes import FileErrorCode
from ._diff import Change
from ._indent import IndentationMismatch, Labels, reindent
from ._levels import (
    LEVEL_DESCRIPTIONS,
    MATCH_LEVELS,
    REINDENT_LEVELS,
    MatchLevel,
    TextLines,
    loosest_level,
    normaliser,
)
from ._nearest import NearestLines, find_nearest

__all__ = [
    "AddFile",
    "Chunk",
    "DeleteFile",
    "HunkMatch",
    "PatchOp",
    "PatchOutcome",
    "UpdateFile",
    "apply_chunks",
    "apply_chunks_detailed",
    "parse_patch",
    "patch_paths",
]

_BEGIN: Final = "*** Begin Patch"
_END: Final = "*** End Patch"
_ADD: Final = "*** Add File: "
_DELETE: Final = "*** Delete File: "
_UPDATE: Final = "*** Update File: "
_MOVE: Final = "*** Move to: "
_EOF: Final = "*** End of File"
_HEREDOC_OPENERS: Final = frozenset({"<<EOF", "<<'EOF'", '<<"EOF"'})
_EXPECTED_OP: Final = "expected '*** Add File:', '*** Delete File:' or '*** Update File:'"
_EXPECTED_BODY: Final = "a hunk line starting with ' ', '-' or '+'"
_FIX: Final = "re-read the file and regenerate the hunk"
_PREVIEW_LINES: Final = 3
_SHOW_CHARS: Final = 120
_MAX_LISTED: Final = 10
_MAX_CANDIDATES: Final = 1000  # places of an ambiguous hunk that are looked for and listed


@dataclass(frozen=True, slots=True)
class AddFile:
    """Create (or overwrite) ``path`` with ``content``: the '+' lines, each ending in a newline."""

    path: str
    content: str


@dataclass(frozen=True, slots=True)
class DeleteFile:
    """Delete the file at ``path``."""

    path: str


@dataclass(frozen=True, slots=True)
class Chunk:
    """One ``@@`` hunk: the lines to find (context and '-') and the lines that replace them.

    ``context`` is the text after ``@@ `` (a line searched for before ``old_lines``), or None.
    ``is_end_of_file`` is set by a ``*** End of File`` line closing the hunk.
    """

    context: str | None
    old_lines: tuple[str, ...]
    new_lines: tuple[str, ...]
    is_end_of_file: bool


@dataclass(frozen=True, slots=True)
class UpdateFile:
    """Apply ``chunks`` to ``path``, writing the result to ``move_to`` when it is set."""

    path: str
    move_to: str | None
    chunks: tuple[Chunk, ...]


PatchOp = AddFile | DeleteFile | UpdateFile


def _show(line: str) -> str:
    """Quote one patch or file line for an error message, clipping very long lines."""
    if len(line) > _SHOW_CHARS:
        line = line[:_SHOW_CHARS] + "..."
    return f"'{line}'"


class _Parser:
    """Walks the lines between the envelope markers; ``lines[end]`` is the ``*** End Patch`` line."""

    def __init__(self, lines: list[str], first_lineno: int) -> None:
        self.lines = lines
        self.base = first_lineno
        self.end = len(lines) - 1
        self.i = 1

    def error(self, message: str) -> PatchError:
        return PatchError(FileErrorCode.INVALID_PATCH, f"line {self.base + self.i}: {message}")

    def got(self) -> str:
        return _show(self.lines[self.i])

    def parse(self) -> list[PatchOp]:
        ops: list[PatchOp] = []
        if self.i == self.end:
            raise self.error(f"{_EXPECTED_OP}, got {self.got()} (the patch has no file operation)")
        while self.i < self.end:
            header = self.lines[self.i].strip()
            for marker in (_ADD, _DELETE, _UPDATE):
                if header == marker.rstrip():
                    raise self.error(f"expected a path after {_show(header)}")
            if header.startswith(_ADD):
                self.i += 1
                added: list[str] = []
                while self.i < self.end and self.lines[self.i].startswith("+"):
                    added.append(self.lines[self.i][1:] + "\n")
                    self.i += 1
                ops.append(AddFile(header[len(_ADD) :], "".join(added)))
            elif header.startswith(_DELETE):
                self.i += 1
                ops.append(DeleteFile(header[len(_DELETE) :]))
            elif header.startswith(_UPDATE):
                self.i += 1
                ops.append(self.update(header[len(_UPDATE) :]))
            else:
                hint = ""
                if ops and isinstance(ops[-1], AddFile) and not header.startswith("***"):
                    hint = " (every line of an added file starts with '+')"
                raise self.error(f"{_EXPECTED_OP}, got {self.got()}{hint}")
        return ops

    def update(self, path: str) -> UpdateFile:
        move_to: str | None = None
        if self.i < self.end and self.lines[self.i].startswith(_MOVE):
            move_to = self.lines[self.i][len(_MOVE) :].strip()
            if not move_to:
                raise self.error(f"expected a path after '{_MOVE.rstrip()}'")
            self.i += 1
        chunks: list[Chunk] = []
        while self.i < self.end:
            line = self.lines[self.i]
            if not line.strip():
                self.i += 1
            elif line.startswith("***"):
                break
            else:
                chunks.append(self.chunk(path, first=not chunks))
        if not chunks:
            raise self.error(f"expected a hunk for '{path}' ('@@' or {_EXPECTED_BODY}), got {self.got()}")
        return UpdateFile(path, move_to, tuple(chunks))

    def chunk(self, path: str, *, first: bool) -> Chunk:
        line = self.lines[self.i]
        context: str | None = None
        headed = line.rstrip() == "@@" or line.startswith("@@ ")
        if headed:
            context = line[3:] if line[3:].strip() else None
            self.i += 1
        elif not first:
            raise self.error(f"expected '@@' to start the next hunk of '{path}', got {self.got()}")
        start = self.i
        old: list[str] = []
        new: list[str] = []
        eof = False
        while self.i < self.end:
            line = self.lines[self.i]
            tag, text = line[:1], line[1:]
            if line.rstrip() == _EOF and self.i > start:
                eof = True
                self.i += 1
                break
            if tag not in ("", " ", "-", "+"):
                break
            if tag != "+":
                old.append(text)
            if tag != "-":
                new.append(text)
            self.i += 1
        if self.i == start:
            expected = _EXPECTED_BODY if headed else f"'@@' or {_EXPECTED_BODY}"
            raise self.error(f"expected {expected}, got {self.got()}")
        return Chunk(context, tuple(old), tuple(new), eof)


def _envelope_error(lines: list[str], first_lineno: int) -> PatchError | None:
    """Return why ``lines`` is not wrapped in Begin/End Patch markers, or None when it is."""
    if lines[0].strip() != _BEGIN:
        return PatchError(
            FileErrorCode.INVALID_PATCH, f"line {first_lineno}: expected '{_BEGIN}', got {_show(lines[0])}"
        )
    if len(lines) < 2:
        return PatchError(
            FileErrorCode.INVALID_PATCH,
            f"line {first_lineno}: expected '{_END}' after '{_BEGIN}', got the end of the patch",
        )
    if lines[-1].strip() != _END:
        last = first_lineno + len(lines) - 1
        return PatchError(
            FileErrorCode.INVALID_PATCH,
            f"line {last}: expected '{_END}' as the last line, got {_show(lines[-1])}",
        )
    return None


def parse_patch(text: str) -> list[PatchOp]:
    """Parse an ``apply_patch`` text into its file operations, in order (FILE-11).

    Args:
        text: The whole patch, from ``*** Begin Patch`` to ``*** End Patch``; surrounding whitespace
            and a heredoc wrapper (``<<'EOF'`` ... ``EOF``) are tolerated, like Codex does.

    Returns:
        The operations in patch order; never empty.

    Raises:
        PatchError: ``invalid_patch``, naming the 1-based line and what was expected there.
    """
    stripped = text.strip()
    if not stripped:
        raise PatchError(FileErrorCode.INVALID_PATCH, f"line 1: expected '{_BEGIN}', got an empty patch")
    first_lineno = text[: len(text) - len(text.lstrip())].count("\n") + 1
    lines = [line.removesuffix("\r") for line in stripped.split("\n")]
    error = _envelope_error(lines, first_lineno)
    if error is not None:
        heredoc = len(lines) >= 4 and lines[0] in _HEREDOC_OPENERS and lines[-1].endswith("EOF")
        if not heredoc:
            raise error
        lines, first_lineno = lines[1:-1], first_lineno + 1
        error = _envelope_error(lines, first_lineno)
        if error is not None:
            raise error
    return _Parser(lines, first_lineno).parse()


def patch_paths(text: str) -> list[str]:
    """The paths an ``apply_patch`` text names, in patch order, each once (a move's both ends).

    For showing what a patch will touch (the ACP adapter's diffs) before it runs.

    Returns:
        The paths as written in the patch; ``[]`` when it does not parse (``apply_patch`` then
        refuses it with the reason).
    """
    try:
        ops = parse_patch(text)
    except PatchError:
        return []
    paths: list[str] = []
    for op in ops:
        for path in (op.path, op.move_to if isinstance(op, UpdateFile) else None):
            if path is not None and path not in paths:
                paths.append(path)
    return paths


class _Ambiguous(Exception):
    """A hunk's lines match several places at a tolerant level (0-based line indexes)."""

    def __init__(self, level: MatchLevel, indexes: list[int]) -> None:
        super().__init__(level)
        self.level = level
        self.indexes = indexes


@dataclass(frozen=True, slots=True)
class _Found:
    """Where a run of pattern lines starts (0-based), at which level it matched, and the offset past it."""

    index: int
    level: MatchLevel
    after: tuple[int, int] | None = None
    """``(index, start offset)`` of the line after the run, where the next search may begin."""


class _Matcher:
    """Finds a run of pattern lines in the file lines, strictest level first (FILE-11, FILE-14)."""

    def __init__(self, source: TextLines, lines: list[str]) -> None:
        self.source = source
        self.lines = lines

    def at(self, pattern: Sequence[str], index: int, level: MatchLevel) -> bool:
        normalise = normaliser(level)
        found = self.lines[index : index + len(pattern)]
        return len(found) == len(pattern) and all(
            normalise(a) == normalise(b) for a, b in zip(found, pattern, strict=True)
        )

    def seek(
        self,
        pattern: Sequence[str],
        start: int,
        *,
        eof: bool,
        unique: bool = True,
        begin: tuple[int, int] | None = None,
    ) -> _Found | None:
        """Return where ``pattern`` starts (at or after ``start``) and the level, or None.

        At ``exact`` the first match wins (hunks are positional, as in Codex). At a tolerant level
        a pattern matching several places raises :class:`_Ambiguous` when ``unique`` is set; an
        ``eof`` pattern is tried at the end of the file first, where it cannot be ambiguous.
        ``begin`` is ``(start, its offset)`` when known, so the search skips the text before it.
        """
        size = len(pattern)
        if size == 0:
            return _Found(start, "exact", begin)
        last = len(self.lines) - size
        if last < start:
            return None
        if eof:
            for level in MATCH_LEVELS:
                if self.at(pattern, last, level):
                    return _Found(last, level)
        for level in MATCH_LEVELS:
            positional = level == "exact" or not unique
            limit = 1 if positional else _MAX_CANDIDATES
            runs = self.source.runs(pattern, level, start=start, begin=begin, limit=limit)
            if not runs:
                continue
            if len(runs) > 1:
                raise _Ambiguous(level, [run.index for run in runs])
            run = runs[0]
            return _Found(run.index, level, (run.index + size, run.end + 1))
        return None


def _merge(found: list[str], old: list[str], new: list[str], placed: list[str]) -> list[str]:
    """Return ``placed`` (``new`` re-indented), keeping the file's lines where ``old`` equals ``new``."""
    if found == old:
        return placed
    merged: list[str] = []
    for tag, old_from, old_to, new_from, new_to in SequenceMatcher(
        None, old, new, autojunk=False
    ).get_opcodes():
        merged.extend(found[old_from:old_to] if tag == "equal" else placed[new_from:new_to])
    return merged


def _not_found(
    path: str,
    number: int,
    what: str,
    cursor: int,
    *,
    eof: bool,
    expected: Sequence[str] = (),
    nearest: NearestLines | None = None,
    earlier: bool = False,
) -> PatchError:
    where = f" after line {cursor}" if cursor else ""
    if eof:
        where += " at the end of the file"
    shown = f"; expected:\n{_preview(expected)}\n" if expected else "; "
    if nearest is None:
        return PatchError(
            FileErrorCode.CONTEXT_NOT_FOUND,
            f"could not find {what} of hunk {number} in '{path}'{where}{shown}{_FIX}",
            data={"path": path, "hunk": number},
        )
    if earlier:
        hint = (
            f"those lines are at {nearest.describe()}, before line {cursor + 1} where the search for this "
            "hunk starts: hunks must follow the file's order, and an '@@' line must come before the lines "
            "it introduces"
        )
    else:
        hint = (
            f"the nearest text in the file is {nearest.describe()}:\n{nearest.render()}\n"
            "regenerate the hunk from those lines"
        )
    return PatchError(
        FileErrorCode.CONTEXT_NOT_FOUND,
        f"could not find {what} of hunk {number} in '{path}'{where}{shown.rstrip()}"
        f"{chr(10) if expected else ' '}{hint}",
        data={"path": path, "hunk": number, "nearest": nearest.as_data()},
    )


def _ambiguous(path: str, number: int, cursor: int, error: _Ambiguous) -> PatchError:
    lines = [index + 1 for index in error.indexes]
    listed = ", ".join(str(n) for n in lines[:_MAX_LISTED]) + (", ..." if len(lines) > _MAX_LISTED else "")
    where = f" after line {cursor}" if cursor else ""
    count = f"{len(lines)} or more" if len(lines) >= _MAX_CANDIDATES else str(len(lines))
    return PatchError(
        FileErrorCode.AMBIGUOUS_MATCH,
        f"the lines of hunk {number} match {count} places in '{path}'{where} (lines {listed}) "
        f"{LEVEL_DESCRIPTIONS[error.level]}; copy the file's lines exactly (with their indentation), add "
        "context lines to make the hunk unique, or put an '@@' line naming the enclosing block before it",
        data={"path": path, "hunk": number, "lines": lines, "matchLevel": error.level},
    )


def _preview(lines: Sequence[str]) -> str:
    shown = [f"    {_show(line)}" for line in lines[:_PREVIEW_LINES]]
    if len(lines) > _PREVIEW_LINES:
        shown.append(f"    ... ({len(lines) - _PREVIEW_LINES} more)")
    return "\n".join(shown)


@dataclass(frozen=True, slots=True)
class HunkMatch:
    """Where one hunk of an Update File went, and how (FILE-14).

    Attributes:
        hunk: The hunk's 1-based number in the Update File.
        line: The 1-based line of the original text where it matched (or where its lines were inserted).
        level: The loosest match level its ``@@`` line and its lines needed (``"exact"`` or a tolerance).
        reindented: Its '+' lines were re-indented to the file's indentation.
    """

    hunk: int
    line: int
    level: MatchLevel
    reindented: bool


@dataclass(frozen=True, slots=True)
class PatchOutcome:
    """What :func:`apply_chunks_detailed` did: the new ``text`` and one match per hunk, in patch order.

    ``changes`` says where ``text`` differs from the original (``(old_start, old_end, new_start,
    new_end)`` line ranges, in order; every other line is unchanged), so the diff compares only
    those lines (``unified_diff(..., changes=)``, SAFE-8). It is left out of ``==``.
    """

    text: str
    hunks: tuple[HunkMatch, ...]
    changes: tuple[Change, ...] = field(default=(), compare=False)

    @property
    def level(self) -> MatchLevel:
        """The loosest level any hunk needed (``"exact"`` when every hunk matched exactly)."""
        return loosest_level(hunk.level for hunk in self.hunks)


def apply_chunks(original: str, chunks: Sequence[Chunk], *, path: str) -> str:
    """Apply an Update File's hunks to a file's text and return the new text (FILE-11).

    The same as ``apply_chunks_detailed(original, chunks, path=path).text``.
    """
    return apply_chunks_detailed(original, chunks, path=path).text


class _Applier:
    """Locates the hunks of one Update File in turn and collects the line edits."""

    def __init__(self, original: str, path: str) -> None:
        lines = original.split("\n")
        if lines[-1] == "":
            lines.pop()
        self.lines = lines
        self.original = original
        self.path = path
        self.source = TextLines(original, lines)
        self.matcher = _Matcher(self.source, lines)
        self.edits: list[tuple[int, int, list[str]]] = []
        self.cursor = 0
        self.begin: tuple[int, int] | None = (0, 0)  # the cursor's line and its offset, when known

    def move(self, found: _Found, size: int) -> None:
        """Put the cursor after the ``size`` lines that ``found`` starts."""
        self.cursor = found.index + size
        self.begin = found.after if found.after is not None and found.after[0] == self.cursor else None

    def seek(self, number: int, pattern: Sequence[str], start: int, *, eof: bool) -> _Found | None:
        begin = self.begin if start == self.cursor else None
        try:
            return self.matcher.seek(pattern, start, eof=eof, begin=begin)
        except _Ambiguous as error:
            raise _ambiguous(self.path, number, self.cursor, error) from None

    def context(self, number: int, chunk: Chunk) -> MatchLevel:
        """Move the cursor past the hunk's ``@@`` line; return the level it matched at."""
        if chunk.context is None:
            return "exact"
        found = self.matcher.seek([chunk.context], self.cursor, eof=False, unique=False, begin=self.begin)
        if found is None:
            nearest = find_nearest(self.source, [chunk.context], near=self.cursor)
            raise _not_found(
                self.path,
                number,
                f"the line {_show('@@ ' + chunk.context)}",
                self.cursor,
                eof=False,
                nearest=nearest,
            )
        self.move(found, 1)
        return found.level

    def hunk(self, number: int, chunk: Chunk) -> HunkMatch:
        context_level = self.context(number, chunk)
        if not chunk.old_lines:
            at = len(self.lines) if chunk.context is None or chunk.is_end_of_file else self.cursor
            self.edits.append((at, 0, list(chunk.new_lines)))
            return HunkMatch(number, at + 1, context_level, reindented=False)
        old, new = list(chunk.old_lines), list(chunk.new_lines)
        found = self.seek(number, old, self.cursor, eof=chunk.is_end_of_file)
        if found is None and chunk.context is not None:
            # Models often repeat the '@@ def f():' line as the hunk's first context line; Codex then
            # fails, having moved past it. Retry from the @@ line itself.
            found = self.seek(number, old, self.cursor - 1, eof=chunk.is_end_of_file)
        if found is None and old[-1] == "":
            # A blank line closing a hunk is often just the separator before the next one.
            old = old[:-1]
            new = new[:-1] if new and new[-1] == "" else new
            found = self.seek(number, old, self.cursor, eof=chunk.is_end_of_file)
        if found is None:
            nearest = find_nearest(self.source, chunk.old_lines, near=self.cursor)
            earlier = (
                nearest is not None
                and nearest.start_line <= self.cursor
                and self.matcher.at(chunk.old_lines, nearest.start_line - 1, "unicode-punctuation")
            )
            raise _not_found(
                self.path,
                number,
                "the lines",
                self.cursor,
                eof=chunk.is_end_of_file,
                expected=chunk.old_lines,
                nearest=nearest,
                earlier=earlier,
            )
        file_lines = self.lines[found.index : found.index + len(old)]
        placed, moved = new, False
        if found.level in REINDENT_LEVELS:
            placed, moved = self.reindent(number, found, old, new)
        self.edits.append((found.index, len(old), _merge(file_lines, old, new, placed)))
        self.move(found, len(old))
        return HunkMatch(number, found.index + 1, loosest_level((context_level, found.level)), moved)

    def reindent(self, number: int, found: _Found, old: list[str], new: list[str]) -> tuple[list[str], bool]:
        file_lines = self.lines[found.index : found.index + len(old)]
        labels = Labels(
            f"line {{n}} of hunk {number}'s context and '-' lines",
            f"line {{n}} of hunk {number}'s context and '+' lines",
        )
        around = self.lines[max(0, found.index - 40) : found.index + len(old) + 40]
        try:
            moved = reindent(old, file_lines, new, first_line=found.index + 1, labels=labels, around=around)
        except IndentationMismatch as exc:
            raise PatchError(
                FileErrorCode.INDENTATION_MISMATCH,
                f"hunk {number} matches '{self.path}' at line {found.index + 1} only "
                f"{LEVEL_DESCRIPTIONS[found.level]}, and its indentation does not map onto the file's: {exc}",
                data={"path": self.path, "hunk": number, "line": exc.file_line, "matchLevel": found.level},
            ) from None
        return list(moved.lines), moved.changed

    def result(self) -> tuple[str, tuple[Change, ...]]:
        """The new text and where it differs from the original, in one pass over the lines."""
        lines = self.lines
        self.edits.sort(key=lambda edit: edit[0])  # stable: insertions at one place keep patch order
        out: list[str] = []
        changes: list[Change] = []
        at = 0
        for start, length, replacement in self.edits:
            out.extend(lines[at:start])
            changes.append((start, start + length, len(out), len(out) + len(replacement)))
            out.extend(replacement)
            at = start + length
        out.extend(lines[at:])
        if lines and not self.original.endswith("\n"):  # the last line gains the newline it lacked
            tail = len(changes)
            while tail and changes[tail - 1][0] == len(lines):  # lines added after it
                tail -= 1
            if not (tail and changes[tail - 1][1] == len(lines)):  # no hunk replaced it
                moved_to = changes[tail][2] - 1 if tail < len(changes) else len(out) - 1
                changes.insert(tail, (len(lines) - 1, len(lines), moved_to, moved_to + 1))
        return ("\n".join(out) + "\n" if out else ""), tuple(changes)


def apply_chunks_detailed(original: str, chunks: Sequence[Chunk], *, path: str) -> PatchOutcome:
    """Apply an Update File's hunks to a file's text; say where and at which level each matched.

    Each hunk is looked for after the previous one (and after its ``@@`` line), at the levels of
    ``MATCH_LEVELS`` in order, with the rules of docs/file-tools.md, "apply_patch" (FILE-14).

    Args:
        original: The file's text with LF newlines (the caller converts CRLF before and after).
        chunks: The hunks, in patch order.
        path: The file's path, used in error messages.

    Returns:
        ``PatchOutcome(text, hunks, changes)``: the new text (ending with a newline unless empty),
        one ``HunkMatch(hunk, line, level, reindented)`` per hunk, and where the text changed.

    Raises:
        PatchError: ``context_not_found`` when a hunk's lines are not in the file (``data``: ``path``,
            ``hunk``, and ``nearest`` when the file has similar lines); ``ambiguous_match`` (``data``:
            ``path``, ``hunk``, ``lines``, ``matchLevel``); ``indentation_mismatch`` (``data``: ``path``,
            ``hunk``, ``line``, ``matchLevel``).
    """
    applier = _Applier(original, path)
    hunks = tuple(applier.hunk(number, chunk) for number, chunk in enumerate(chunks, 1))
    text, changes = applier.result()
    return PatchOutcome(text, hunks, changes)
