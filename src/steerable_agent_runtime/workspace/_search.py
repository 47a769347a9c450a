"""Read-only navigation: ``list_dir``, ``glob`` and ``grep``, confined like every file tool.

Walks never follow a symlink out of the workspace and skip version-control metadata
(``.git``, ``.hg``, ``.svn``). steerable's own entries (the ``.steerable`` state folder and the
``.steerable-*.tmp`` files of writes in flight) are never listed (FILE-13). Results are capped and say so.
"""

from __future__ import annotations

import fnmatch
import os
import re
import stat
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Final

from ..errors import WorkspaceError
from ._disk import open_directory, read_bytes
from ._paths import WorkspaceRoot
from ._text import decode_file
from ._txn import is_internal_name

__all__ = ["GREP_TIME_BUDGET_S", "glob_files", "grep_files", "list_dir"]

MAX_ENTRIES: Final = 1000
"""Most entries ``list_dir`` and ``glob`` return."""

_SKIP_DIRS: Final = frozenset({".git", ".hg", ".svn"})
_MAX_GREP_FILE_BYTES: Final = 4 * 1024 * 1024
_MAX_LINE_CHARS: Final = 500

_MAX_SKIPPED_LISTED: Final = 20

GREP_TIME_BUDGET_S: Final = 20.0
"""Total regex matching time one grep call may spend, in seconds."""


def _directory(root: WorkspaceRoot, path: str) -> tuple[Path, str]:
    real = root.resolve(path)
    display = root.display(real)
    if not real.exists():
        raise WorkspaceError(
            "file_not_found",
            f"{display} does not exist; find the right path with list_dir or glob",
            data={"path": display},
        )
    if not real.is_dir():
        raise WorkspaceError("not_a_directory", f"{display} is not a directory", data={"path": display})
    return real, display


def list_dir(root: WorkspaceRoot, path: str = ".") -> dict[str, Any]:
    """List one directory (read through a race-safe directory handle).

    Returns:
        ``{path, entries: [{name, type, size}], truncated}``; ``type`` is file, dir, symlink or other;
        ``size`` in bytes for files; a name that is not UTF-8 is shown with U+FFFD and
        ``notUtf8: true``. Sorted, directories first, at most 1000 entries.
    """
    real, display = _directory(root, path)
    entries: list[dict[str, Any]] = []
    with open_directory(root.path, real, display) as fd, os.scandir(fd) as it:
        for entry in it:
            if is_internal_name(entry.name):
                continue
            info = entry.stat(follow_symlinks=False)
            if stat.S_ISLNK(info.st_mode):
                kind = "symlink"
            elif stat.S_ISDIR(info.st_mode):
                kind = "dir"
            elif stat.S_ISREG(info.st_mode):
                kind = "file"
            else:
                kind = "other"
            name = root.listing_name(Path(entry.name))
            item: dict[str, Any] = {"name": name, "type": kind}
            if name != entry.name:
                item["notUtf8"] = True
            if kind == "file":
                item["size"] = info.st_size
            entries.append(item)
    entries.sort(key=lambda e: (e["type"] != "dir", e["name"]))
    return {"path": display, "entries": entries[:MAX_ENTRIES], "truncated": len(entries) > MAX_ENTRIES}


def _walk(root: WorkspaceRoot, base: Path) -> Iterator[tuple[Path, Path]]:
    """Yield ``(path as listed, real path)`` for every regular file under ``base``, sorted.

    Iterative (any depth) and race-safe: each directory is opened by walking ``O_NOFOLLOW``
    handles down from the root and listed through its handle, so a directory swapped for a symlink
    is never entered. A symlinked file is yielded only when its target is a regular file inside the
    workspace; FIFOs, sockets and devices never are. VCS metadata directories are skipped.
    """
    stack = [base]
    while stack:
        directory = stack.pop()
        try:  # classify while the handle is open: a DT_UNKNOWN entry is stat-ed through it
            with open_directory(root.path, directory, str(directory)) as fd, os.scandir(fd) as it:
                entries = sorted(
                    (
                        e.name,
                        e.is_dir(follow_symlinks=False),
                        e.is_file(follow_symlinks=False),
                        e.is_symlink(),
                    )
                    for e in it
                )
        except (OSError, WorkspaceError):
            continue
        subdirs = []
        for name, is_dir, is_file, is_link in entries:
            if is_internal_name(name):
                continue
            listed = directory / name
            if is_dir:
                if name not in _SKIP_DIRS:
                    subdirs.append(listed)
            elif is_file:
                yield listed, listed
            elif is_link:
                target = Path(os.path.realpath(listed))
                if (root.allow_outside or target.is_relative_to(root.path)) and target.is_file():
                    yield listed, target
        stack.extend(reversed(subdirs))


def glob_files(root: WorkspaceRoot, pattern: str, path: str = ".") -> dict[str, Any]:
    """Find files whose path (relative to ``path``) matches a glob; ``**`` spans directories.

    Returns:
        ``{pattern, files: [display paths], truncated}``, sorted, at most 1000.

    Raises:
        WorkspaceError: ``invalid_pattern`` for an absolute pattern or one with ``..``.
    """
    if len(pattern) > MAX_PATTERN_CHARS:
        raise WorkspaceError("invalid_pattern", f"glob pattern longer than {MAX_PATTERN_CHARS} characters")
    if pattern.startswith("/") or ".." in Path(pattern).parts:
        raise WorkspaceError(
            "invalid_pattern", f"glob pattern {pattern!r} must be relative and must not contain '..'"
        )
    base, _ = _directory(root, path)
    segments = tuple(part for part in pattern.split("/") if part not in ("", "."))
    files: list[str] = []
    truncated = False
    for listed, _real in _walk(root, base):
        if _glob_match(segments, listed.relative_to(base).parts):
            if len(files) >= MAX_ENTRIES:
                truncated = True
                break
            files.append(root.listing_name(listed))
    return {"pattern": pattern, "files": sorted(files), "truncated": truncated}


def _glob_match(pattern: tuple[str, ...], parts: tuple[str, ...]) -> bool:
    """Match path segments against glob segments; ``**`` spans zero or more directories.

    Each segment is matched by ``fnmatch.fnmatchcase``, whose translation uses atomic groups, so
    ``*a*a*a*b`` cannot backtrack catastrophically; ``**`` is handled here by dynamic programming
    over (pattern index, path index), so the whole match is O(pattern x path) segment checks.
    """
    memo: dict[tuple[int, int], bool] = {}

    def match(i: int, j: int) -> bool:
        key = (i, j)
        if key in memo:
            return memo[key]
        if i == len(pattern):
            result = j == len(parts)
        elif pattern[i] == "**":
            result = match(i + 1, j) or (j < len(parts) and match(i, j + 1))
        else:
            result = j < len(parts) and fnmatch.fnmatchcase(parts[j], pattern[i]) and match(i + 1, j + 1)
        memo[key] = result
        return result

    return match(0, 0)


def grep_files(
    root: WorkspaceRoot,
    pattern: str,
    path: str = ".",
    glob: str | None = None,
    ignore_case: bool = False,
    max_results: int = 200,
    time_budget_s: float = GREP_TIME_BUDGET_S,
) -> dict[str, Any]:
    """Search text files for a regular expression, line by line (lines counted as read_file counts them).

    The pattern is Python ``re`` syntax, run by the ``regex`` engine with a time budget: a
    catastrophically backtracking pattern (``(a|aa)+$``) cannot hang the call. Binary files,
    non-UTF-8 files, non-regular files (FIFOs, devices) and files over 4 MiB are skipped.

    Args:
        root: The workspace.
        pattern: The regular expression.
        path: A file or directory to search.
        glob: Only files whose relative path or name matches this glob.
        ignore_case: Case-insensitive matching.
        max_results: Stop after this many matches.
        time_budget_s: Total matching time allowed, in seconds.

    Returns:
        ``{pattern, matches: [{path, line, text}], truncated, skipped}``; ``line`` is 1-based and
        ``text`` is clipped at 500 characters; ``skipped`` lists (up to 20) files not searched, with
        the reason (``binary_file``, ``not_utf8``, ``file_too_large``...). When the budget runs out,
        ``timedOut: true`` and ``truncated: true`` come with the matches found so far.

    Raises:
        WorkspaceError: ``invalid_regex`` naming the regex error.
    """
    compiled = _compile(pattern, ignore_case)
    if glob is not None and len(glob) > MAX_PATTERN_CHARS:
        raise WorkspaceError("invalid_pattern", f"glob pattern longer than {MAX_PATTERN_CHARS} characters")
    real = root.resolve(path)
    candidates: Iterable[tuple[Path, Path]]
    if real.is_file():
        candidates, base = [(real, real)], real.parent
    else:
        base, _ = _directory(root, path)
        candidates = _walk(root, base)
    deadline = time.monotonic() + time_budget_s
    matches: list[dict[str, Any]] = []
    skipped: list[dict[str, str]] = []
    for listed, target in candidates:
        if time.monotonic() > deadline:  # the budget covers walking and reading too
            return _timed_out(pattern, matches, skipped, time_budget_s)
        rel = listed.relative_to(base).as_posix()
        if glob and not (fnmatch.fnmatch(rel, glob) or fnmatch.fnmatch(listed.name, glob)):
            continue
        display = root.listing_name(listed)
        try:
            # read through O_NOFOLLOW handles from the root: a swap after the walk cannot redirect it
            raw = read_bytes(target, root=root.path, display=display, max_bytes=_MAX_GREP_FILE_BYTES)
            text = decode_file(raw, path=display, version="-").text if raw is not None else None
        except WorkspaceError as exc:  # binary, not UTF-8, too large, unreadable: said, not searched
            if len(skipped) < _MAX_SKIPPED_LISTED:
                skipped.append({"path": display, "reason": exc.code})
            continue
        if text is None:
            continue
        lines = text.split("\n")
        if lines[-1] == "":  # the newline that ends the last line starts no line of its own
            lines.pop()
        for number, line in enumerate(lines, start=1):
            try:
                # concurrent=True releases the GIL while matching, so the event loop keeps serving
                found = compiled.search(
                    line, timeout=max(deadline - time.monotonic(), 0.001), concurrent=True
                )
            except TimeoutError:
                return _timed_out(pattern, matches, skipped, time_budget_s)
            if found:
                if len(matches) >= max_results:
                    return {"pattern": pattern, "matches": matches, "truncated": True, "skipped": skipped}
                matches.append({"path": display, "line": number, "text": line[:_MAX_LINE_CHARS]})
    return {"pattern": pattern, "matches": matches, "truncated": False, "skipped": skipped}


def _timed_out(
    pattern: str, matches: list[dict[str, Any]], skipped: list[dict[str, str]], budget_s: float
) -> dict[str, Any]:
    return {
        "pattern": pattern,
        "matches": matches,
        "truncated": True,
        "skipped": skipped,
        "timedOut": True,
        "message": f"grep stopped after {budget_s:g} s (a pattern that backtracks heavily, or a very "
        "large tree); narrow path/glob or simplify the pattern",
    }


_QUANTIFIER = re.compile(r"\{(\d+)(?:,(\d*))?\}")
_RECURSION = re.compile(r"\(\?(?:R|[+-]?\d+|&|P>)")
MAX_PATTERN_CHARS: Final = 1000
MAX_REPEAT_EXPANSION: Final = 10_000


def _repeat_expansion(pattern: str) -> int:
    """Estimate how many atoms the pattern expands to: ``(?:a{100}){100}`` gives 10,000.

    The ``regex`` engine expands counted repeats when it compiles, so nested repeats multiply and
    side-by-side ones add up; a total in the millions exhausts memory before any time budget
    applies. Each atom counts 1; a group counts the sum of its contents; ``{n,m}`` multiplies the
    atom or group before it by its larger bound.
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


def _compile(pattern: str, ignore_case: bool) -> Any:
    import regex  # only grep needs it (~12 ms to import)

    def refuse(why: str) -> WorkspaceError:
        return WorkspaceError("invalid_regex", f"invalid regular expression {pattern[:100]!r}: {why}")

    if len(pattern) > MAX_PATTERN_CHARS:
        raise refuse(f"longer than {MAX_PATTERN_CHARS} characters")
    if _RECURSION.search(pattern):
        raise refuse("recursive patterns ((?R), (?1), (?&name)) are not allowed")
    if _repeat_expansion(pattern) > MAX_REPEAT_EXPANSION:
        raise refuse(f"counted repeats expand past {MAX_REPEAT_EXPANSION} atoms; use + or * instead")
    try:
        # cache_pattern=False: a model's patterns must not pile up in the engine's module cache
        return regex.compile(pattern, regex.IGNORECASE if ignore_case else 0, cache_pattern=False)
    except (regex.error, ValueError, OverflowError, RecursionError, MemoryError) as exc:
        raise refuse(str(exc)) from None
