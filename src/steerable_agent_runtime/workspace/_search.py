"""Read-only search: ``glob`` and ``grep``, confined like every file tool (``list_dir``: :mod:`._listing`).

``grep`` and ``glob`` run on ripgrep (:mod:`._rg`) when a usable binary exists, else on the
Python engine below, with one pattern language (:mod:`._regex`, Rust regex syntax) and one glob
matcher (:mod:`._globs`) for both. What a walk skips:

- files named by ``.gitignore`` (inside a git repository), ``.ignore``, ``.git/info/exclude`` and
  git's global excludes file, unless ``includeIgnored`` (ripgrep's rules; the Python engine reads
  no ignore files);
- names starting with ``.`` only when ``includeHidden`` is false (default true);
- always: ``.git``, ``.hg``, ``.svn``, steerable's ``.steerable`` folder and its in-flight
  ``.steerable-*.tmp`` files (FILE-13), symlinks (never followed, in or out of the workspace),
  FIFOs, sockets and devices; binary files (a NUL byte); the deny-read set's entries
  (:mod:`._denied`, SAFE-3), counted in ``deniedSkipped``.

ripgrep opens files by path, so what it reports is checked before the model sees it: each
matched line is read again through ``O_NOFOLLOW`` handles walked down from the root (a file
swapped for a symlink out, or a directory swapped under the walk, is dropped), and each listed
file is ``lstat``-ed the same way. Results are sorted by path and line, and capped.
"""

from __future__ import annotations

import asyncio
import codecs
import errno
import os
import stat
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from ..errors import WorkspaceError
from ._codes import FileErrorCode
from ._denied import DENIED_FIELD
from ._disk import DIR_FLAGS, open_directory, open_regular, read_bytes
from ._globs import GlobPattern, compile_glob
from ._listing import directory as resolve_directory
from ._paths import WorkspaceRoot, listing_text
from ._regex import check_pattern, compile_python
from ._rg import (
    GREP_TIME_BUDGET_S,
    Match,
    Ripgrep,
    SearchEngine,
    base_args,
    file_errors,
    os_error,
    parse_matches,
    pattern_error,
    records_containing,
    rel_path,
    type_filter,
)
from ._text import decode_file
from ._txn import is_internal_name

__all__ = ["GREP_TIME_BUDGET_S", "MAX_ENTRIES", "glob_files", "grep_files"]

MAX_ENTRIES: Final = 1000
"""Most files ``glob`` returns."""

MAX_LISTED_PATHS: Final = 1_000_000
"""Most paths one ``glob`` walk reads before it stops (and says ``truncated``)."""

_MAX_LINE_CHARS: Final = 500
_MAX_COLUMNS: Final = 2000  # ripgrep's per-line output cap; well past what is shown
_MAX_SKIPPED_LISTED: Final = 20
_MAX_PYTHON_FILE_BYTES: Final = 4 * 1024 * 1024
_SKIP_DIRS: Final = frozenset({".git", ".hg", ".svn"})
_UTF8_BOM: Final = b"\xef\xbb\xbf"
_UTF16_BOMS: Final = (b"\xff\xfe", b"\xfe\xff")
_MAX_UTF16_BYTES: Final = 64 * 1024 * 1024  # how far a UTF-16 file is read to check a match


# -- where a search starts ----------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class _Scope:
    """What one search walks: ``cwd`` (paths are reported relative to it) and the ``target`` in it."""

    cwd: Path
    target: str  # "." or a relative folder or file name below cwd, as ripgrep is given it
    single_file: bool

    @property
    def argument(self) -> str:
        """The target as ripgrep is given it: ``./`` or ``./name`` (never read as a flag)."""
        return "./" if self.target == "." else "./" + self.target


def _scope(root: WorkspaceRoot, path: str) -> _Scope:
    real = root.resolve(path)
    if real.is_dir() or not real.exists():
        base, _ = resolve_directory(root, path)
        return _Scope(base, ".", single_file=False)
    return _Scope(real.parent, real.name, single_file=True)


class _Shown:
    """Display paths for names below one folder, without building a ``Path`` per name."""

    def __init__(self, root: WorkspaceRoot, cwd: Path) -> None:
        prefix = root.listing_name(cwd)
        self.prefix = "" if prefix == "." else prefix.rstrip("/") + "/"

    def __call__(self, rel: str) -> str:
        """``rel`` (relative to the folder, surrogate-escaped bytes allowed) as a listing shows it."""
        return listing_text(self.prefix + rel)


# -- ripgrep -----------------------------------------------------------------------------------
async def _rg_grep(
    rg: Ripgrep,
    engine: SearchEngine,
    scope: _Scope,
    pattern: str,
    glob: GlobPattern | None,
    *,
    ignore_case: bool,
    include_hidden: bool,
    include_ignored: bool,
    collect: int,
    deadline: float,
    excluded: list[str],
) -> tuple[list[Match], list[tuple[str, str]], bool, bool]:
    args = base_args(include_hidden=include_hidden, include_ignored=include_ignored) + excluded
    args += [
        "--line-number",
        "--byte-offset",
        "--with-filename",
        "--no-heading",
        f"--max-columns={_MAX_COLUMNS}",
        "--max-columns-preview",
        "--crlf",
    ]
    if ignore_case:
        args.append("--ignore-case")
    if glob is not None and not scope.single_file and (glob.by_name or not glob.negated):
        # a name filter is exact for a name glob; for a path glob it only narrows (kept: a superset)
        args += type_filter(glob.names, negated=glob.negated)
    args += ["--regexp=" + pattern, "--", scope.argument]
    run = await engine.run(rg, args, cwd=scope.cwd, deadline=deadline, stop_after_nuls=collect)
    unreadable, other = file_errors(run.stderr)
    if run.returncode == 2 and not run.output and not run.timed_out:
        refused = pattern_error(pattern, run.stderr)
        if refused is not None:
            raise refused
        if other:
            raise os_error(run, other)
    output = run.output
    if run.stopped or run.timed_out:  # the child was killed: its last record may be cut short
        output = output[: output.rfind(b"\n") + 1]
    matches, binary = parse_matches(output)
    skipped: list[tuple[str, str]] = [(path, FileErrorCode.BINARY_FILE) for path in binary]
    skipped += [(rel_path(path), why) for path, why in unreadable]
    return matches, skipped, run.stopped, run.timed_out


async def _rg_files(
    rg: Ripgrep,
    engine: SearchEngine,
    scope: _Scope,
    glob: GlobPattern,
    *,
    include_hidden: bool,
    include_ignored: bool,
    deadline: float,
    excluded: list[str],
) -> tuple[list[str], bool, bool]:
    args = base_args(include_hidden=include_hidden, include_ignored=include_ignored) + excluded
    args += ["--files", *type_filter(glob.names, negated=False), "--", scope.argument]
    run = await engine.run(rg, args, cwd=scope.cwd, deadline=deadline, stop_after_nuls=MAX_LISTED_PATHS)
    _, other = file_errors(run.stderr)
    if run.returncode == 2 and not run.output and not run.timed_out and other:
        raise os_error(run, other)
    output = run.output[: run.output.rfind(b"\0") + 1]  # whole records only
    if glob.needles:  # most of a big listing cannot match: find the records holding a needle
        listed = records_containing(output, [os.fsencode(needle) for needle in glob.needles])
    else:
        listed = output.split(b"\0")[:-1]
    names = [rel_path(item) for item in listed]
    return names, run.stopped, run.timed_out


# -- checking what ripgrep reported ---------------------------------------------------------------
def _shown(line: bytes) -> str:
    return line.rstrip(b"\r").decode("utf-8", "replace")[:_MAX_LINE_CHARS]


class _Folders:
    """``O_NOFOLLOW`` handles of folders below the search folder, opened one component at a time.

    The search folder is opened by walking down from the workspace root; every folder below it
    from its parent's handle. Only the chain to the folder last asked for stays open (visiting
    folders in sorted order, each handle is opened once), so a deep or wide listing holds at most
    its depth in descriptors. A component that is a symlink or a file is ``path_changed``.
    """

    def __init__(self, root: WorkspaceRoot, cwd: Path) -> None:
        self._root, self._cwd = root, cwd
        self._chain: list[tuple[str, int]] = []  # (component, handle) from the search folder down

    def __enter__(self) -> _Folders:
        return self

    def __exit__(self, *exc: object) -> None:
        self._close_from(0)

    def _close_from(self, depth: int) -> None:
        while len(self._chain) > depth:
            os.close(self._chain.pop()[1])

    def fd(self, folder: str) -> int:
        """The handle of ``folder`` (``""``: the search folder itself)."""
        parts = ["", *folder.split("/")] if folder else [""]
        same = 0
        while same < min(len(parts), len(self._chain)) and self._chain[same][0] == parts[same]:
            same += 1
        self._close_from(same)
        for part in parts[same:]:
            if not self._chain:
                with open_directory(self._root.path, self._cwd, self._root.listing_name(self._cwd)) as top:
                    self._chain.append(("", os.dup(top)))
                continue
            try:
                child = os.open(part, DIR_FLAGS, dir_fd=self._chain[-1][1])
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise WorkspaceError(
                        FileErrorCode.PATH_CHANGED, f"{folder} changed during the search"
                    ) from None
                raise
            self._chain.append((part, child))
        return self._chain[-1][1]


_LINE_BYTES: Final = 4 * _MAX_LINE_CHARS + 8
"""Bytes read at a match's offset to check it: more than the 500 characters a model is shown."""


def _verified_matches(
    root: WorkspaceRoot, cwd: Path, found: list[Match]
) -> tuple[list[dict[str, Any]], list[tuple[str, str]]]:
    """Keep the matches whose line reads the same through a race-safe open of the file.

    Each folder is opened through ``O_NOFOLLOW`` handles walked down from the workspace root, each
    file in it with ``O_NOFOLLOW``, and each match's line read at the byte offset ripgrep gave
    (a line start: the byte before it is a newline); a file that starts with a byte-order mark
    (whose offsets count the decoded text) is read from the start instead. A file that is no
    longer a regular file inside the workspace, or whose line changed since ripgrep read it,
    loses its matches and is listed with the reason.
    """
    by_folder: dict[str, dict[str, list[Match]]] = defaultdict(lambda: defaultdict(list))
    for match in found:
        folder, _, leaf = match[0].rpartition("/")
        by_folder[folder][leaf].append(match)
    kept: list[dict[str, Any]] = []
    dropped: list[tuple[str, str]] = []
    shown = _Shown(root, cwd)
    with _Folders(root, cwd) as folders:
        for folder, files in sorted(by_folder.items()):
            try:
                dir_fd = folders.fd(folder)
                for leaf, matches in files.items():
                    display = shown(matches[0][0])
                    try:
                        good = _check_file(dir_fd, leaf, matches, display)
                    except WorkspaceError as exc:
                        dropped.append((matches[0][0], exc.code))
                        continue
                    except OSError:
                        dropped.append((matches[0][0], FileErrorCode.OS_ERROR))
                        continue
                    if good is None:
                        continue
                    kept += good
                    if len(good) < len(matches):
                        dropped.append((matches[0][0], FileErrorCode.PATH_CHANGED))
            except FileNotFoundError:
                continue  # the folder is gone since the search
            except WorkspaceError as exc:
                dropped += [(matches[0][0], exc.code) for matches in files.values()]
            except OSError:
                dropped += [(matches[0][0], FileErrorCode.OS_ERROR) for matches in files.values()]
    kept.sort(key=lambda match: (match["path"], match["line"]))  # checked folder by folder
    return kept, dropped


def _check_file(dir_fd: int, leaf: str, matches: list[Match], display: str) -> list[dict[str, Any]] | None:
    """The matches of one file (opened in ``dir_fd``) whose line is as ripgrep printed it.

    ``None`` when the file is gone (deleted since the search: nothing to show, nothing to say).
    """
    opened = open_regular(dir_fd, leaf, display)
    if opened is None:
        return None
    fd, _ = opened
    try:
        head = os.pread(fd, 3, 0)
        lines: dict[int, bytes] | None = None
        shift = 0  # ripgrep's offsets count the text after a UTF-8 byte-order mark
        if head.startswith(_UTF16_BOMS):  # offsets in the transcoded text: count lines instead
            lines = _utf16_lines(fd, {number for _, number, _, _ in matches})
        elif head.startswith(_UTF8_BOM):
            shift = len(_UTF8_BOM)
        good = []
        for _, number, offset, text in matches:
            if lines is not None:
                line = lines.get(number)
            else:
                offset += shift
                start = max(offset - 1, shift)
                chunk = os.pread(fd, _LINE_BYTES + 1, start)
                if offset > shift and chunk[:1] != b"\n":
                    line = None  # not a line start any more
                else:
                    line = chunk[offset - start :].split(b"\n", 1)[0]
            if line is not None and _shown(line) == _shown(text):  # both as the model is shown them
                good.append({"path": display, "line": number, "text": _shown(line)})
        return good
    finally:
        os.close(fd)


def _utf16_lines(fd: int, wanted: set[int]) -> dict[int, bytes]:
    """The ``wanted`` lines of a UTF-16 file (BOM first) as UTF-8, read in steps, at most 64 MiB."""
    decoder = codecs.getincrementaldecoder("utf-16")("replace")
    found: dict[int, bytes] = {}
    number, partial, offset = 1, b"", 0
    last = max(wanted)
    while number <= last and offset < _MAX_UTF16_BYTES:
        chunk = os.pread(fd, 1024 * 1024, offset)
        offset += len(chunk)
        text = partial + decoder.decode(chunk, final=not chunk).encode("utf-8")
        *complete, partial = text.split(b"\n")
        for line in complete:
            if number in wanted:
                found[number] = line
            number += 1
        if not chunk:
            if number in wanted:
                found[number] = partial
            break
    return found


def _verified_files(root: WorkspaceRoot, cwd: Path, names: list[str], *, regular: bool = True) -> list[str]:
    """Keep the names that exist inside the workspace (as regular files, when ``regular``).

    Each folder is opened through race-safe handles from the root and the names ``lstat``-ed in
    it, so a name ripgrep saw through a folder swapped for a symlink out is never passed on.
    """
    by_folder: dict[str, list[str]] = defaultdict(list)
    for name in names:
        folder, _, leaf = name.rpartition("/")
        by_folder[folder].append(leaf)
    kept = set()
    with _Folders(root, cwd) as folders:
        for folder, leaves in sorted(by_folder.items()):
            try:
                fd = folders.fd(folder)
            except (OSError, WorkspaceError):
                continue
            for leaf in leaves:
                try:
                    info = os.stat(leaf, dir_fd=fd, follow_symlinks=False)
                except OSError:
                    continue
                if stat.S_ISREG(info.st_mode) or not regular:
                    kept.add(f"{folder}/{leaf}" if folder else leaf)
    return [name for name in names if name in kept]


# -- the Python engine ----------------------------------------------------------------------------
def _walk(root: WorkspaceRoot, base: Path, *, hidden: bool, stop: threading.Event) -> Iterator[Path]:
    """Yield every regular file under ``base`` (sorted, any depth), through race-safe handles.

    Each directory is opened by walking ``O_NOFOLLOW`` handles down from the root and listed
    through its handle, so a directory swapped for a symlink is never entered; symlinks, FIFOs,
    sockets and devices are never yielded. VCS metadata, steerable's own entries and the deny-read
    set's are skipped, and names starting with ``.`` unless ``hidden``.
    """
    denied = root.denied
    stack = [base]
    while stack and not stop.is_set():
        directory = stack.pop()
        try:  # classify while the handle is open: a DT_UNKNOWN entry is stat-ed through it
            with open_directory(root.path, directory, str(directory)) as fd, os.scandir(fd) as it:
                entries = sorted(
                    (e.name, e.is_dir(follow_symlinks=False), e.is_file(follow_symlinks=False)) for e in it
                )
        except (OSError, WorkspaceError):
            continue
        subdirs = []
        folder = str(directory) if denied else ""
        for name, is_dir, is_file in entries:
            if is_internal_name(name) or (not hidden and name.startswith(".")):
                continue
            if denied and denied.skips(folder, name):
                continue
            if is_dir:
                if name not in _SKIP_DIRS:
                    subdirs.append(directory / name)
            elif is_file:
                yield directory / name
        stack.extend(reversed(subdirs))


def _python_files(
    root: WorkspaceRoot,
    scope: _Scope,
    glob: GlobPattern,
    *,
    hidden: bool,
    deadline: float,
    stop: threading.Event,
) -> tuple[list[str], bool, bool]:
    names: list[str] = []
    start = scope.cwd if scope.target == "." else scope.cwd / scope.target
    for listed in _walk(root, start, hidden=hidden, stop=stop):
        if time.monotonic() > deadline:
            return names, False, True
        rel = listed.relative_to(scope.cwd).as_posix()
        if glob.matches(rel):
            names.append(rel)
            if len(names) > MAX_LISTED_PATHS:
                return names, True, False
    return names, False, False


def _grep_lines(
    compiled: Any,
    text: str,
    display: str,
    matches: list[dict[str, Any]],
    *,
    collect: int,
    deadline: float,
    stop: threading.Event,
) -> tuple[bool, bool] | None:
    """Add ``text``'s matching lines to ``matches``; ``(truncated, timed_out)`` when the search ends."""
    lines = text.removesuffix("\n").split("\n") if text else []  # a final newline starts no line
    for number, line in enumerate(lines, start=1):
        if stop.is_set():
            return False, True
        try:
            # concurrent=True releases the GIL while matching, so the event loop keeps serving
            found = compiled.search(line, timeout=max(deadline - time.monotonic(), 0.001), concurrent=True)
        except TimeoutError:
            return False, True
        if found:
            matches.append({"path": display, "line": number, "text": line[:_MAX_LINE_CHARS]})
            if len(matches) > collect:
                return True, False
    return None


def _python_grep(
    root: WorkspaceRoot,
    scope: _Scope,
    pattern: str,
    glob: GlobPattern | None,
    *,
    ignore_case: bool,
    hidden: bool,
    collect: int,
    deadline: float,
    stop: threading.Event,
) -> tuple[list[dict[str, Any]], list[tuple[str, str]], bool, bool]:
    compiled = compile_python(pattern, ignore_case)
    if scope.single_file:
        candidates: Iterator[Path] = iter([scope.cwd / scope.target])
    else:
        start = scope.cwd if scope.target == "." else scope.cwd / scope.target
        candidates = _walk(root, start, hidden=hidden, stop=stop)
    matches: list[dict[str, Any]] = []
    skipped: list[tuple[str, str]] = []
    for listed in candidates:
        if time.monotonic() > deadline or stop.is_set():
            return matches, skipped, False, True
        rel = listed.relative_to(scope.cwd).as_posix()
        if glob is not None and not glob.matches(rel):
            continue
        display = root.listing_name(listed)
        try:
            # read through O_NOFOLLOW handles from the root: a swap after the walk cannot redirect it
            raw = read_bytes(listed, root=root.path, display=display, max_bytes=_MAX_PYTHON_FILE_BYTES)
            text = decode_file(raw, path=display, version="-").text if raw is not None else None
        except WorkspaceError as exc:  # binary, not UTF-8, too large, unreadable: said, not searched
            skipped.append((rel, exc.code))
            continue
        if text is None:
            continue
        ended = _grep_lines(compiled, text, display, matches, collect=collect, deadline=deadline, stop=stop)
        if ended is not None:
            return matches, skipped, *ended
    return matches, skipped, False, False


async def _in_thread(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Run a Python-engine walk in a thread; a cancelled call tells it to stop at its next file or line."""
    stop = threading.Event()
    try:
        return await asyncio.to_thread(fn, *args, stop=stop, **kwargs)
    finally:
        stop.set()


# -- the tools ------------------------------------------------------------------------------------
def _skipped(root: WorkspaceRoot, cwd: Path, items: list[tuple[str, str]]) -> list[dict[str, str]]:
    seen: dict[str, str] = {}
    for rel, why in items:
        seen.setdefault(rel, why)
    listed = sorted(seen.items())[:_MAX_SKIPPED_LISTED]
    shown = _Shown(root, cwd)
    return [{"path": shown(rel), "reason": why} for rel, why in listed]


async def glob_files(
    root: WorkspaceRoot,
    engine: SearchEngine,
    pattern: str,
    path: str = ".",
    *,
    include_hidden: bool = True,
    include_ignored: bool = False,
    time_budget_s: float = GREP_TIME_BUDGET_S,
) -> dict[str, Any]:
    """Find files whose path below ``path`` matches a glob (:mod:`._globs`); ``**`` spans folders.

    Args:
        root: The workspace.
        engine: The workspace's :class:`SearchEngine`.
        pattern: The glob, relative to ``path`` (``src/**/*.py``, ``*.{ts,tsx}``).
        path: The folder to search from.
        include_hidden: Also list names starting with ``.``.
        include_ignored: Also list files ignore files exclude.
        time_budget_s: Wall-clock bound, in seconds.

    Returns:
        ``{pattern, files: [display paths], truncated}``, sorted, at most 1000; ``timedOut: true``
        and a ``message`` when the bound stopped the walk; ``deniedSkipped``: how many entries of
        the deny-read set the walk left out (SAFE-3), when any.

    Raises:
        WorkspaceError: ``invalid_pattern`` (absolute, ``..``, over 1000 characters, NUL, too many
            ``{a,b}`` alternatives); ``file_not_found`` / ``not_a_directory`` for ``path``.
    """
    glob = compile_glob(pattern, by_name_allowed=False, negation_allowed=False)
    base, _ = resolve_directory(root, path)
    scope = _Scope(base, ".", single_file=False)
    deadline = time.monotonic() + time_budget_s
    excluded, denied = root.denied.walk_filter(str(base))
    rg = await engine.ripgrep()
    if rg is not None:
        listed, stopped, timed_out = await _rg_files(
            rg,
            engine,
            scope,
            glob,
            include_hidden=include_hidden,
            include_ignored=include_ignored,
            deadline=deadline,
            excluded=excluded,
        )
        names = sorted(name for name in listed if glob.matches(name) and not (denied and denied(name)))
    else:
        names, stopped, timed_out = await _in_thread(
            _python_files, root, scope, glob, hidden=include_hidden, deadline=deadline
        )
        names.sort()
    shown = names[:MAX_ENTRIES]
    if rg is not None:
        shown = await asyncio.to_thread(_verified_files, root, base, shown)
    result: dict[str, Any] = {
        "pattern": pattern,
        "files": list(map(_Shown(root, base), shown)),
        "truncated": stopped or timed_out or len(names) > MAX_ENTRIES,
    }
    if denied is not None:
        _count_denied(root, base, include_hidden, result)
    if timed_out:
        result["timedOut"] = True
        result["message"] = f"glob stopped after {time_budget_s:g} s; narrow path or the pattern"
    return result


def _count_denied(root: WorkspaceRoot, folder: Path, hidden: bool, result: dict[str, Any]) -> None:
    """Say how many entries of the deny-read set below ``folder`` a walk left out (SAFE-3)."""
    count = root.denied.skipped_below(str(folder), hidden=hidden)
    if count:
        result[DENIED_FIELD] = count


async def grep_files(
    root: WorkspaceRoot,
    engine: SearchEngine,
    pattern: str,
    path: str = ".",
    glob: str | None = None,
    ignore_case: bool = False,
    max_results: int = 200,
    *,
    include_hidden: bool = True,
    include_ignored: bool = False,
    time_budget_s: float = GREP_TIME_BUDGET_S,
) -> dict[str, Any]:
    """Search text files for a regular expression, line by line (lines counted as read_file counts them).

    Args:
        root: The workspace.
        engine: The workspace's :class:`SearchEngine`.
        pattern: Rust regex syntax (:mod:`._regex`).
        path: A file or folder to search (a file is searched even when ignored or hidden).
        glob: Only files whose name (a glob without ``/``: ``*.py``) or path below ``path``
            (``src/**/*.py``) matches; a leading ``!`` excludes instead (``!*.min.js``).
        ignore_case: Case-insensitive matching.
        max_results: Most matches returned.
        include_hidden: Also search names starting with ``.``.
        include_ignored: Also search files ignore files exclude.
        time_budget_s: Wall-clock bound, in seconds: the search is killed then.

    Returns:
        ``{pattern, matches: [{path, line, text}], truncated, skipped}``, sorted by path and line
        (``line`` 1-based, ``text`` clipped at 500 characters, a CR line ending dropped);
        ``skipped`` lists (up to 20) files not searched or not shown, with the reason
        (``binary_file``, ``permission_denied``, ``path_changed``...); ``timedOut: true`` and a
        ``message`` when the bound stopped it; ``deniedSkipped``: how many entries of the deny-read
        set the walk left out (SAFE-3), when any. Bounds: docs/file-tools.md, "Results, bounds and
        safety".

    Raises:
        WorkspaceError: ``invalid_regex`` (syntax; over 1000 characters; huge counted repeats);
            ``invalid_pattern`` naming a construct Rust regex lacks, or a bad ``glob``.
    """
    check_pattern(pattern)
    filter_glob = compile_glob(glob, by_name_allowed=True, negation_allowed=True) if glob else None
    scope = _scope(root, path)
    target = scope.cwd / scope.target
    if scope.single_file and not stat.S_ISREG(os.stat(target).st_mode):
        display = root.listing_name(target)
        return {
            "pattern": pattern,
            "matches": [],
            "truncated": False,
            "skipped": [{"path": display, "reason": FileErrorCode.NOT_A_FILE}],
        }
    collect = min(max(5 * max_results, 1000), 10_000)
    deadline = time.monotonic() + time_budget_s
    excluded, denied = ([], None) if scope.single_file else root.denied.walk_filter(str(scope.cwd))
    rg = await engine.ripgrep()
    if rg is not None:
        found, skipped, stopped, timed_out = await _rg_grep(
            rg,
            engine,
            scope,
            pattern,
            filter_glob,
            ignore_case=ignore_case,
            include_hidden=include_hidden,
            include_ignored=include_ignored,
            collect=collect,
            deadline=deadline,
            excluded=excluded,
        )
        if denied is not None:  # excluded above; what ripgrep printed is checked again all the same
            found = [item for item in found if not denied(item[0])]
            skipped = [item for item in skipped if not denied(item[0])]
        if filter_glob is not None:
            found = [item for item in found if filter_glob.matches(item[0])]
        found.sort(key=lambda item: (item[0], item[1]))
        total = len(found)
        matches, dropped = await asyncio.to_thread(_verified_matches, root, scope.cwd, found[:max_results])
        skipped += dropped
        if skipped:  # names ripgrep printed: only those inside the workspace are passed on
            names = [rel for rel, _ in skipped]
            inside = set(await asyncio.to_thread(_verified_files, root, scope.cwd, names, regular=False))
            skipped = [(rel, why) for rel, why in skipped if rel in inside]
    else:
        matches, skipped, stopped, timed_out = await _in_thread(
            _python_grep,
            root,
            scope,
            pattern,
            filter_glob,
            ignore_case=ignore_case,
            hidden=include_hidden,
            collect=collect,
            deadline=deadline,
        )
        matches.sort(key=lambda match: (match["path"], match["line"]))
        total = len(matches)
        matches = matches[:max_results]
    result: dict[str, Any] = {
        "pattern": pattern,
        "matches": matches,
        "truncated": stopped or timed_out or total > max_results,
        "skipped": _skipped(root, scope.cwd, skipped),
    }
    if denied is not None:
        _count_denied(root, scope.cwd, include_hidden, result)
    if timed_out:
        result["timedOut"] = True
        result["message"] = (
            f"grep stopped after {time_budget_s:g} s (a very large tree or file); narrow path or glob"
        )
    return result
