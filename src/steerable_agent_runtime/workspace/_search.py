"""Read-only navigation: ``list_dir``, ``glob`` and ``grep``, confined like every file tool.

Walks never follow a symlink out of the workspace and skip version-control metadata
(``.git``, ``.hg``, ``.svn``). Results are capped and say so.
"""

from __future__ import annotations

import fnmatch
import os
import stat
import time
from pathlib import Path
from typing import Any, Final

from ..errors import WorkspaceError
from ._disk import read_bytes
from ._paths import WorkspaceRoot
from ._text import decode_file

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
        raise WorkspaceError("file_not_found", f"{display} does not exist", data={"path": display})
    if not real.is_dir():
        raise WorkspaceError("not_a_directory", f"{display} is not a directory", data={"path": display})
    return real, display


def list_dir(root: WorkspaceRoot, path: str = ".") -> dict[str, Any]:
    """List one directory.

    Returns:
        ``{path, entries: [{name, type, size}], truncated}``; ``type`` is file, dir, symlink or other;
        ``size`` in bytes for files. Sorted, directories first, at most 1000 entries.
    """
    real, display = _directory(root, path)
    entries: list[dict[str, Any]] = []
    with os.scandir(real) as it:
        for entry in it:
            info = entry.stat(follow_symlinks=False)
            if stat.S_ISLNK(info.st_mode):
                kind = "symlink"
            elif stat.S_ISDIR(info.st_mode):
                kind = "dir"
            elif stat.S_ISREG(info.st_mode):
                kind = "file"
            else:
                kind = "other"
            item: dict[str, Any] = {"name": entry.name, "type": kind}
            if kind == "file":
                item["size"] = info.st_size
            entries.append(item)
    entries.sort(key=lambda e: (e["type"] != "dir", e["name"]))
    return {"path": display, "entries": entries[:MAX_ENTRIES], "truncated": len(entries) > MAX_ENTRIES}


def _walk(root: WorkspaceRoot, base: Path) -> Any:
    for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
        for name in sorted(filenames):
            full = Path(dirpath) / name
            if full.is_symlink():
                target = Path(os.path.realpath(full))
                if not root.allow_outside and not target.is_relative_to(root.path):
                    continue
            try:
                if not stat.S_ISREG(full.stat().st_mode):
                    continue  # FIFOs, sockets, devices: never listed, never opened
            except OSError:
                continue
            yield full


def glob_files(root: WorkspaceRoot, pattern: str, path: str = ".") -> dict[str, Any]:
    """Find files whose path (relative to ``path``) matches a glob; ``**`` spans directories.

    Returns:
        ``{pattern, files: [display paths], truncated}``, sorted, at most 1000.

    Raises:
        WorkspaceError: ``invalid_pattern`` for an absolute pattern or one with ``..``.
    """
    if pattern.startswith("/") or ".." in Path(pattern).parts:
        raise WorkspaceError(
            "invalid_pattern", f"glob pattern {pattern!r} must be relative and must not contain '..'"
        )
    base, _ = _directory(root, path)
    segments = tuple(part for part in pattern.split("/") if part not in ("", "."))
    files: list[str] = []
    truncated = False
    for full in _walk(root, base):
        if _glob_match(segments, full.relative_to(base).parts):
            if len(files) >= MAX_ENTRIES:
                truncated = True
                break
            files.append(root.display(full))
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
    import regex  # only grep needs it (~12 ms to import)

    try:
        compiled = regex.compile(pattern, regex.IGNORECASE if ignore_case else 0)
    except (regex.error, ValueError) as exc:
        raise WorkspaceError("invalid_regex", f"invalid regular expression {pattern!r}: {exc}") from None
    real = root.resolve(path)
    if real.is_file():
        candidates: Any = [real]
        base = real.parent
    else:
        base, _ = _directory(root, path)
        candidates = _walk(root, base)
    deadline = time.monotonic() + time_budget_s
    matches: list[dict[str, Any]] = []
    skipped: list[dict[str, str]] = []
    for full in candidates:
        rel = full.relative_to(base).as_posix()
        if glob and not (fnmatch.fnmatch(rel, glob) or fnmatch.fnmatch(full.name, glob)):
            continue
        display = root.display(full)
        try:
            raw = read_bytes(
                Path(os.path.realpath(full)), root=root.path, display=display, max_bytes=_MAX_GREP_FILE_BYTES
            )
            text = decode_file(raw, path=display, version="-").text if raw is not None else None
        except WorkspaceError as exc:  # binary, not UTF-8, too large, unreadable: said, not searched
            if len(skipped) < _MAX_SKIPPED_LISTED:
                skipped.append({"path": display, "reason": exc.code})
            continue
        if text is None:
            continue
        for number, line in enumerate(text.split("\n"), start=1):
            try:
                # concurrent=True releases the GIL while matching, so the event loop keeps serving
                found = compiled.search(
                    line, timeout=max(deadline - time.monotonic(), 0.001), concurrent=True
                )
            except TimeoutError:
                return {
                    "pattern": pattern,
                    "matches": matches,
                    "truncated": True,
                    "skipped": skipped,
                    "timedOut": True,
                    "message": f"grep stopped after {time_budget_s:g} s (a pattern that backtracks "
                    "heavily, or a very large tree); narrow path/glob or simplify the pattern",
                }
            if found:
                if len(matches) >= max_results:
                    return {"pattern": pattern, "matches": matches, "truncated": True, "skipped": skipped}
                matches.append({"path": display, "line": number, "text": line[:_MAX_LINE_CHARS]})
    return {"pattern": pattern, "matches": matches, "truncated": False, "skipped": skipped}
