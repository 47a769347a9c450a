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

Leniency follows Codex: the text is trimmed, the envelope markers and the file-operation headers may be
padded with whitespace, a heredoc wrapper (``<<'EOF'`` ... ``EOF``) is stripped, blank lines between
hunks are skipped and an empty line inside a hunk is an empty context line. :func:`apply_chunks`
locates hunks with four passes of decreasing strictness (exact, trailing whitespace ignored, both ends
ignored, typographic punctuation folded) and keeps the file's own text for the lines a hunk leaves alone.
Reading, writing and atomicity across files belong to the file layer (FILE-11).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Final

from steerable_agent_runtime.errors import PatchError
from steerable_agent_runtime.workspace._fold import fold_punctuation

__all__ = ["AddFile", "Chunk", "DeleteFile", "PatchOp", "UpdateFile", "apply_chunks", "parse_patch"]

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
        return PatchError("invalid_patch", f"line {self.base + self.i}: {message}")

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
        return PatchError("invalid_patch", f"line {first_lineno}: expected '{_BEGIN}', got {_show(lines[0])}")
    if len(lines) < 2:
        return PatchError(
            "invalid_patch",
            f"line {first_lineno}: expected '{_END}' after '{_BEGIN}', got the end of the patch",
        )
    if lines[-1].strip() != _END:
        last = first_lineno + len(lines) - 1
        return PatchError(
            "invalid_patch", f"line {last}: expected '{_END}' as the last line, got {_show(lines[-1])}"
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
        raise PatchError("invalid_patch", f"line 1: expected '{_BEGIN}', got an empty patch")
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


def _fold_strip(line: str) -> str:
    return fold_punctuation(line).strip()


def _exact(line: str) -> str:
    return line


# The matching passes, strictest first; each maps a line to the form compared at that level.
_LEVELS: Final[tuple[Callable[[str], str], ...]] = (_exact, str.rstrip, str.strip, _fold_strip)


class _Matcher:
    """Finds a run of pattern lines in the file lines, caching the normalised file per level."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.normalised: dict[int, list[str]] = {}

    def seek(self, pattern: Sequence[str], start: int, *, eof: bool) -> int | None:
        """Return the index where ``pattern`` starts (at or after ``start``), or None."""
        size = len(pattern)
        if size == 0:
            return start
        last = len(self.lines) - size
        if last < start:
            return None
        passes = ([last], range(start, last + 1)) if eof else (range(start, last + 1),)
        for positions in passes:
            for level, normalise in enumerate(_LEVELS):
                file_lines = self.normalised.setdefault(level, [normalise(line) for line in self.lines])
                wanted = [normalise(line) for line in pattern]
                for index in positions:
                    if file_lines[index] == wanted[0] and file_lines[index : index + size] == wanted:
                        return index
        return None


def _merge(found: list[str], old: list[str], new: list[str]) -> list[str]:
    """Return ``new``, reusing the file's own text for the lines that ``old`` and ``new`` share."""
    if found == old:
        return new
    merged: list[str] = []
    for tag, old_from, old_to, new_from, new_to in SequenceMatcher(
        None, old, new, autojunk=False
    ).get_opcodes():
        merged.extend(found[old_from:old_to] if tag == "equal" else new[new_from:new_to])
    return merged


def _not_found(
    path: str, number: int, what: str, cursor: int, *, eof: bool, expected: Sequence[str] = ()
) -> PatchError:
    where = f" after line {cursor}" if cursor else ""
    if eof:
        where += " at the end of the file"
    shown = f"; expected:\n{_preview(expected)}\n" if expected else "; "
    return PatchError(
        "context_not_found",
        f"could not find {what} of hunk {number} in '{path}'{where}{shown}{_FIX}",
        data={"path": path},
    )


def _preview(lines: Sequence[str]) -> str:
    shown = [f"    {_show(line)}" for line in lines[:_PREVIEW_LINES]]
    if len(lines) > _PREVIEW_LINES:
        shown.append(f"    ... ({len(lines) - _PREVIEW_LINES} more)")
    return "\n".join(shown)


def apply_chunks(original: str, chunks: Sequence[Chunk], *, path: str) -> str:
    """Apply an Update File's hunks to a file's text and return the new text (FILE-11).

    Each hunk is looked for after the previous one (and after its ``@@`` line when it has one), trying
    exact, trailing-whitespace-insensitive, whitespace-insensitive, then punctuation-folded matching;
    lines the hunk keeps keep the file's own text. A ``*** End of File`` hunk is tried at the end of the
    file first. A hunk with only '+' lines goes after its ``@@`` line, or at the end of the file.

    Args:
        original: The file's text with LF newlines (the caller converts CRLF before and after).
        chunks: The hunks, in patch order.
        path: The file's path, used in error messages.

    Returns:
        The new text; it ends with a newline unless it is empty.

    Raises:
        PatchError: ``context_not_found`` when a hunk's lines are not in the file; ``data`` has ``path``.
    """
    lines = original.split("\n")
    if lines[-1] == "":
        lines.pop()
    matcher = _Matcher(lines)
    edits: list[tuple[int, int, list[str]]] = []
    cursor = 0
    for number, chunk in enumerate(chunks, 1):
        if chunk.context is not None:
            found = matcher.seek([chunk.context], cursor, eof=False)
            if found is None:
                raise _not_found(path, number, f"the line {_show('@@ ' + chunk.context)}", cursor, eof=False)
            cursor = found + 1
        if not chunk.old_lines:
            at_end = chunk.context is None or chunk.is_end_of_file
            edits.append((len(lines) if at_end else cursor, 0, list(chunk.new_lines)))
            continue
        old, new = list(chunk.old_lines), list(chunk.new_lines)
        found = matcher.seek(old, cursor, eof=chunk.is_end_of_file)
        if found is None and chunk.context is not None:
            # Models often repeat the '@@ def f():' line as the hunk's first context line; Codex then
            # fails, having moved past it. Retry from the @@ line itself.
            found = matcher.seek(old, cursor - 1, eof=chunk.is_end_of_file)
        if found is None and old[-1] == "":
            # A blank line closing a hunk is often just the separator before the next one.
            old = old[:-1]
            new = new[:-1] if new and new[-1] == "" else new
            found = matcher.seek(old, cursor, eof=chunk.is_end_of_file)
        if found is None:
            raise _not_found(
                path, number, "the lines", cursor, eof=chunk.is_end_of_file, expected=chunk.old_lines
            )
        edits.append((found, len(old), _merge(lines[found : found + len(old)], old, new)))
        cursor = found + len(old)
    edits.sort(key=lambda edit: edit[0])
    for start, length, replacement in reversed(edits):
        lines[start : start + length] = replacement
    return "\n".join(lines) + "\n" if lines else ""
