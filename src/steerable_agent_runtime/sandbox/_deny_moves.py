"""Deny-read entries inside the workspace stay under their own names (SAFE-3).

The deny-read set is paths. Where an entry lies inside the workspace (``steerable -w ~``) a command can
rename a folder on the way to it (``mv .config cfg``): the mount hiding ``.config/gh`` moves with the
folder, so the run itself still reads nothing, but afterwards the token is at ``cfg/gh``, a name no
later run, no file tool and no later process hides. So around every guarded run
(``_guard.guard_protected_paths``, which ``bash`` and ``run_code`` go through) :class:`DenyWatch`
holds a handle on each existing entry inside the workspace and on each folder or link on the way to
it; after the run (a cancelled or failed one too) what the command moved is found through its handle
(the kernel keeps a handle's path current: ``/proc/self/fd`` on Linux, ``F_GETPATH`` on macOS; else
the entries of its old folder) and renamed back through ``O_NOFOLLOW`` folder handles, whatever the
command left in its place moved aside. A link on the way that the command deleted is made again.

While a run is in flight the file tools refuse an entry where the command has put it
(:func:`displaced_entries`). What cannot be put back is kept (:func:`stuck`): every later sandboxed
run and every file-tool call in this process is refused (``deny_read_displaced``) until the user has
moved it back. docs/sandbox.md, "Deny-read".
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import shlex
import stat
import sys
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Final

from ._codes import SandboxErrorCode

if TYPE_CHECKING:  # built at call time: the file tools import this module, registering them loads no pydantic
    from ..types import ToolResult

__all__ = [
    "ASIDE",
    "DenyMoves",
    "DenyReadDisplaced",
    "DenyWatch",
    "Displaced",
    "Moved",
    "displaced_entries",
    "displaced_text",
    "moves_result",
    "stuck",
]

logger = logging.getLogger(__name__)

MAX_HELD: Final = 512
"""Handles one run holds at most (entries and the folders on the way; the default set needs ~40)."""
ASIDE: Final = ".steerable-aside-"
"""What a command left where a moved folder belongs is renamed to ``<name>.steerable-aside-<hex>``."""

_HANDLE: Final = getattr(os, "O_PATH", os.O_RDONLY | os.O_NONBLOCK) | os.O_NOFOLLOW | os.O_CLOEXEC
_DIR_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass(eq=False, slots=True)
class _Held:
    """One path inside the workspace as it was before the run, and a handle that follows it."""

    rel: str  # relative to the workspace root, POSIX
    dev: int
    ino: int
    fd: int  # O_PATH | O_NOFOLLOW (-1: none could be opened)
    link: str | None  # its target, when it is a symbolic link
    is_dir: bool
    entries: set[str] = field(default_factory=set)  # the deny entries (relative) it is or leads to
    entry: bool = False  # a deny entry itself
    kept: bool = False  # handed to the stuck list: its handle stays open


@dataclass(frozen=True, slots=True)
class Moved:
    """A path the command moved (or removed, for a link), as the result reports it.

    Attributes:
        path: Where it belongs, relative to the workspace.
        where: Where the command had put it (relative, or absolute outside the workspace); ``None``
            for a link the command deleted (made again).
        entries: The deny-read entries it is or holds, relative to the workspace.
        aside: Where what the command left at ``path`` was moved, if anything.
    """

    path: str
    where: str | None
    entries: tuple[str, ...]
    aside: str | None = None


@dataclass(slots=True)
class DenyMoves:
    """What :meth:`DenyWatch.restore` put back in the workspace ``root``, and what it could not."""

    root: str
    restored: list[Moved] = field(default_factory=list)
    failed: list[Moved] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Displaced:
    """A path that could not be put back: ``original`` and ``where`` absolute (``None``: not found)."""

    original: str
    where: str | None
    entries: tuple[str, ...]


@dataclass(eq=False, slots=True)
class _Stuck:
    root: str
    held: _Held


_LOCK = threading.Lock()
_ACTIVE: list[DenyWatch] = []  # watches of runs in flight (their handles are open)
_STUCK: list[_Stuck] = []  # what could not be put back, in this process


class DenyReadDisplaced(Exception):
    """A deny-read entry an earlier command moved is still away: nothing runs (:meth:`result`)."""

    def __init__(self, displaced: list[Displaced]) -> None:
        super().__init__(displaced_text(displaced))
        self.displaced = displaced

    def result(self, what: str) -> ToolResult:
        """The refusal as the model sees it (``what``: ``"command"``, ``"program"``)."""
        from ..types import ToolResult

        return ToolResult.retry(
            f"The {what} was not run: {displaced_text(self.displaced)}",
            data={
                "code": SandboxErrorCode.DENY_READ_DISPLACED,
                "denyReadNotRestored": [item.original for item in self.displaced],
            },
        )


class DenyWatch:
    """Handles on the deny-read entries inside one workspace and the paths leading to them, for one run.

    Make it with :meth:`begin` before the run; after it call :meth:`restore` (which also closes it),
    or :meth:`close` when nothing ran.
    """

    def __init__(self, root: str) -> None:
        self.root = root
        self._held: dict[str, _Held] = {}
        self._restoring = False  # close() waits for restore() to end (a cancelled await of it)

    @classmethod
    def begin(cls, root: str, deny_read: Iterable[Path]) -> DenyWatch | None:
        """Refuse if something is still displaced; else hold the entries inside ``root`` (blocking).

        Args:
            root: The workspace (a real path).
            deny_read: The configured set (``SandboxConfig.deny_read``).

        Returns:
            The watch, or ``None`` when no existing entry lies inside ``root`` (the usual case).

        Raises:
            DenyReadDisplaced: An entry an earlier run moved could not be put back (:func:`stuck`).
        """
        displaced = stuck()
        if displaced:
            raise DenyReadDisplaced(displaced)
        watch = cls(root)
        try:
            root_fd = os.open(root, _DIR_FLAGS)
        except OSError:
            return None
        resolved: dict[str, str | None] = {}  # folders on the way, resolved once per run
        try:
            for path in deny_read:
                watch._hold_entry(root_fd, os.path.normpath(path), resolved)
        finally:
            os.close(root_fd)
        if not watch._held:
            return None
        with _LOCK:
            _ACTIVE.append(watch)
        return watch

    def _hold_entry(self, root_fd: int, lexical: str, resolved: dict[str, str | None]) -> None:
        """Hold the chain to ``lexical`` as named, and to what it resolves to, where inside the root."""
        folder, name = os.path.split(lexical)
        real_folder = _resolved(folder, resolved)
        if real_folder is None:
            return  # its folder is missing: so is it
        real: str | None = os.path.join(real_folder, name)
        try:
            link = stat.S_ISLNK(os.lstat(os.path.join(real_folder, name)).st_mode)
        except OSError:
            return  # missing: nothing to hide
        if link:
            real = _real(lexical)
        named = self._inside(lexical, resolved)
        if named is not None:
            self._hold(root_fd, named)
        if real is not None and real != self.root and _within(real, self.root):
            if (rel := os.path.relpath(real, self.root)) != named:
                self._hold(root_fd, rel)

    def _inside(self, lexical: str, resolved: dict[str, str | None]) -> str | None:
        """``lexical`` relative to the root, from its nearest folder that is (or resolves to) one inside.

        ``HOME=/home/u`` with ``/home -> /var/home`` and the root ``/var/home/u``: ``.config/gh``.
        """
        root = self.root
        if _within(lexical, root):
            return None if lexical == root else os.path.relpath(lexical, root)
        head, tail = lexical, []
        while True:
            head, name = os.path.split(head)
            if not name:
                return None
            tail.append(name)
            real = _resolved(head, resolved)
            if real is None:
                return None  # a folder on the way is missing: so is the entry
            if _within(real, root):
                inside = os.path.relpath(os.path.join(real, *reversed(tail)), root)
                return None if inside == "." else inside
            if real == head:  # no link on the way to it, so none above it either: not inside
                return None

    def _hold(self, root_fd: int, rel: str) -> None:
        parts = rel.split("/")
        dir_fd = root_fd
        for depth, name in enumerate(parts, start=1):
            key = "/".join(parts[:depth])
            held = self._held.get(key)
            if held is None:
                if len(self._held) >= MAX_HELD:
                    logger.warning("steerable: over %d deny-read paths to watch; %s is not", MAX_HELD, rel)
                    return
                held = _open_held(dir_fd, name, key)
                if held is None:
                    return
                self._held[key] = held
            held.entries.add(rel)
            if depth == len(parts):
                held.entry = True
            elif not held.is_dir or held.fd < 0:
                return  # a link on the way: what it names is held from its real path
            dir_fd = held.fd

    def restore(self) -> DenyMoves:
        """Put back what the run moved, parents first (blocking), and close the watch.

        Returns:
            What was put back, and what could not be (kept: later runs and file-tool calls are
            refused until the user moves it back).
        """
        moves = DenyMoves(self.root)
        self._restoring = True
        try:
            for held in sorted(self._held.values(), key=lambda h: (h.rel.count("/"), h.rel)):
                if not any(held.rel.startswith(f"{item.path}/") for item in moves.failed):
                    self._restore_one(held, moves)  # what is inside a folder left away stays with it
        finally:
            self._restoring = False
            self.close()
        return moves

    def _restore_one(self, held: _Held, moves: DenyMoves) -> None:
        if _in_place(self.root, held):
            return
        where, gone = _locate(self.root, held)
        if where is None and held.link is None:
            if not gone:  # somewhere no handle tells: it cannot be put back
                self._failed(held, None, moves, "not found")
            return  # a deleted file or folder: nothing is left to read
        shown = self._shown(where) if where is not None else None
        try:  # a link found nowhere is made again: what it names is what counts
            aside = _put_back(self.root, held, where) if where is not None else _relink(self.root, held)
        except OSError as exc:
            self._failed(held, shown, moves, exc.strerror or str(exc))
            return
        folder = os.path.dirname(held.rel)
        aside_shown = f"{folder}/{aside}" if aside is not None and folder else aside
        moves.restored.append(Moved(held.rel, shown, tuple(sorted(held.entries)), aside_shown))
        logger.warning(
            "steerable: a command moved %s (%s): put back (SAFE-3)",
            held.rel,
            f"to {shown}" if shown is not None else "a link it deleted",
        )

    def _failed(self, held: _Held, shown: str | None, moves: DenyMoves, why: str) -> None:
        logger.error("steerable: could not put back %s (moved to %s): %s", held.rel, shown, why)
        moves.failed.append(Moved(held.rel, shown, tuple(sorted(held.entries))))
        with _LOCK:
            held.kept = True
            _STUCK.append(_Stuck(self.root, held))

    def _shown(self, path: str) -> str:
        return os.path.relpath(path, self.root) if _within(path, self.root) else path

    def close(self) -> None:
        """Stop watching: release every handle but those of paths left displaced (idempotent).

        A no-op while :meth:`restore` runs in another thread: it closes the watch when it ends.
        """
        if self._restoring:
            return
        with _LOCK:
            if self in _ACTIVE:
                _ACTIVE.remove(self)
            for held in self._held.values():
                if held.fd >= 0 and not held.kept:
                    os.close(held.fd)
            self._held.clear()


def stuck() -> list[Displaced]:
    """What an earlier run moved and could not put back, and is still away (blocking when any is).

    An entry back at its path (the user moved it), or deleted, is dropped from the list.
    """
    if not _STUCK:
        return []
    with _LOCK:
        kept: list[_Stuck] = []
        displaced: list[Displaced] = []
        for item in _STUCK:
            held = item.held
            back = _in_place(item.root, held)
            where, gone = (None, False) if back else _locate(item.root, held)
            if back or (gone and held.link is None):  # the user moved it back, or it was deleted
                if held.fd >= 0:
                    os.close(held.fd)
                continue
            kept.append(item)
            entries = tuple(os.path.join(item.root, rel) for rel in sorted(held.entries))
            displaced.append(Displaced(os.path.join(item.root, held.rel), where, entries))
        _STUCK[:] = kept
        return displaced


def displaced_entries() -> list[tuple[str, str]]:
    """``(where it is now, the entry's own path)`` of each deny-read entry away from its path.

    Entries a run in flight has moved (the file tools refuse them where they are) and what could
    not be put back; absolute paths. Empty, at the cost of two tests, while no run with an entry in
    its workspace is in flight (the usual case).
    """
    if not _ACTIVE and not _STUCK:
        return []
    found: list[tuple[str, str]] = []
    with _LOCK:
        watched = [(w.root, h) for w in _ACTIVE for h in w._held.values() if h.entry and h.fd >= 0]
        for root, held in watched + [(s.root, s.held) for s in _STUCK]:
            if _in_place(root, held):
                continue
            where, _ = _locate(root, held)
            if where is not None:
                found.append((where, os.path.join(root, held.rel)))
    return found


def displaced_text(displaced: list[Displaced]) -> str:
    """Why nothing runs, and what the user does about it (``mv where original``)."""
    moved = "; ".join(
        f"{item.original} (holding {', '.join(item.entries)}) is at "
        + (item.where if item.where is not None else "a place steerable cannot find")
        for item in displaced
    )
    fixes = "; ".join(_mv(item.where, item.original) for item in displaced if item.where is not None)
    return (
        f"an earlier command moved paths of the deny-read set, and steerable could not put them back: "
        f"{moved}. Sandboxed commands and the file tools may not read them under any name (SAFE-3), so in "
        f"this steerable process no command or program runs and the file tools refuse every path until "
        f"they are back. Ask the user to move them back themselves" + (f" ({fixes})." if fixes else ".")
    )


def moves_result(result: ToolResult, moves: DenyMoves | None, what: str) -> ToolResult:
    """``result`` once the deny-read entries the run moved were put back (SAFE-3).

    Unchanged when nothing moved. Otherwise ``data.denyReadRestored`` (and ``denyReadNotRestored``)
    are added and the call fails with ``needsFollowup``: a success gets ``data.code``
    ``deny_read_restored`` (``deny_read_displaced`` when something could not be put back); a failure
    keeps its code, unless something could not be put back, and gets the sentence after its error.
    """
    if moves is None or not (moves.restored or moves.failed):
        return result
    from ..types import ToolResult

    data = dict(result.data or {})
    said: list[str] = []
    if moves.restored:
        data["denyReadRestored"] = [item.path for item in moves.restored]
        said.append(
            f"The {what} moved {_listed(moves.restored)}; the deny-read set has entries there "
            f"({_entries(moves.restored)}), which commands and the file tools may not read under any "
            f"name (SAFE-3), so everything was put back where it was."
        )
        said += [
            f"What the {what} left at {item.path} is now at {item.aside}."
            for item in moves.restored
            if item.aside is not None
        ]
    code = SandboxErrorCode.DENY_READ_RESTORED
    if moves.failed:
        data["denyReadNotRestored"] = [item.path for item in moves.failed]
        code = data["code"] = SandboxErrorCode.DENY_READ_DISPLACED
        fixes = "; ".join(
            _mv(os.path.join(moves.root, item.where), os.path.join(moves.root, item.path))
            for item in moves.failed
            if item.where is not None
        )
        said.append(
            f"The {what} moved {_listed(moves.failed)}; the deny-read set has entries there "
            f"({_entries(moves.failed)}), and steerable could not put them back: until the user moves "
            f"them back{f' ({fixes})' if fixes else ''}, no command or program runs and the file tools "
            f"refuse every path in this steerable process. Ask the user to do it."
        )
    sentence = " ".join(said)
    if result.success:
        data["code"] = code
        return ToolResult.retry(sentence, data=data)
    return ToolResult.retry(f"{result.error} {sentence}", data=data)


def _listed(items: list[Moved]) -> str:
    return ", ".join(
        f"{item.path} to {item.where}" if item.where is not None else f"{item.path} (a link: deleted)"
        for item in items
    )


def _entries(items: list[Moved]) -> str:
    return ", ".join(sorted({entry for item in items for entry in item.entries}))


def _mv(where: str, original: str) -> str:
    return f"mv {shlex.quote(where)} {shlex.quote(original)}"


# -- the file system -------------------------------------------------------------------------------


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _real(path: str) -> str | None:
    """What ``path`` resolves to, if it exists (the kernel's answer where it can give one: cheaper)."""
    if sys.platform.startswith("linux"):
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except (OSError, ValueError):
            return None
        try:
            return _fd_path(fd)
        finally:
            os.close(fd)
    try:
        return os.path.realpath(path, strict=True)
    except (OSError, ValueError):
        return None


def _resolved(path: str, resolved: dict[str, str | None]) -> str | None:
    """:func:`_real` of a folder, asked once per run."""
    if path not in resolved:
        resolved[path] = _real(path)
    return resolved[path]


def _open_held(dir_fd: int, name: str, rel: str) -> _Held | None:
    try:
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        link = os.readlink(name, dir_fd=dir_fd) if stat.S_ISLNK(info.st_mode) else None
    except OSError:
        return None
    try:
        fd = os.open(name, _HANDLE, dir_fd=dir_fd)
    except OSError:
        fd = -1  # no handle (a link where O_PATH is missing): found by its old folder's entries
    if fd >= 0:
        now = os.fstat(fd)
        if (now.st_dev, now.st_ino) != (info.st_dev, info.st_ino):  # swapped in between
            os.close(fd)
            return None
    return _Held(rel, info.st_dev, info.st_ino, fd, link, stat.S_ISDIR(info.st_mode))


def _same(path: str, held: _Held) -> bool:
    try:
        info = os.stat(path, follow_symlinks=False)
    except (OSError, ValueError):
        return False
    return (info.st_dev, info.st_ino) == (held.dev, held.ino)


def _in_place(root: str, held: _Held) -> bool:
    """Is ``held`` at its path (a link: one with its target)? Its parents are checked, and put back, first."""
    path = os.path.join(root, held.rel)
    if held.link is None:
        return _same(path, held)
    try:
        return os.readlink(path) == held.link
    except (OSError, ValueError):
        return False


def _fd_path(fd: int) -> str | None:
    """The path the kernel has for handle ``fd`` now (follows renames), where it says."""
    if sys.platform.startswith("linux"):
        try:
            return os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            return None
    if sys.platform == "darwin":
        import fcntl

        try:
            raw = fcntl.fcntl(fd, fcntl.F_GETPATH, bytes(1024))
        except OSError:
            return None
        return os.fsdecode(raw.split(b"\0", 1)[0])
    return None  # pragma: no cover - no other platform runs a sandbox


def _locate(root: str, held: _Held) -> tuple[str | None, bool]:
    """Where ``held`` is now (absolute), and whether it is gone (deleted)."""
    if held.fd >= 0:
        path = _fd_path(held.fd)
        if path is not None and _same(path, held):
            return path, False
        try:
            gone = os.fstat(held.fd).st_nlink == 0
        except OSError:
            gone = False
        if gone or (path is not None and path.endswith(" (deleted)")):
            return None, True
    folder = os.path.join(root, os.path.dirname(held.rel))
    with contextlib.suppress(OSError), os.scandir(folder) as listing:
        for entry in listing:
            if entry.inode() == held.ino and _same(entry.path, held):
                return entry.path, False
    return None, False


@contextlib.contextmanager
def _folder(base: str, parts: list[str], *, create: bool = False) -> Iterator[int]:
    """An ``O_NOFOLLOW`` handle on ``base/parts...``, one component at a time (missing ones made)."""
    fd = os.open(base, _DIR_FLAGS)
    try:
        for part in parts:
            try:
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                os.mkdir(part, 0o700, dir_fd=fd)
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = child
        yield fd
    finally:
        os.close(fd)


def _rename(src: str, dst: str, src_fd: int, dst_fd: int) -> None:
    os.rename(src, dst, src_dir_fd=src_fd, dst_dir_fd=dst_fd)


def _aside(dir_fd: int, name: str) -> str | None:
    """Move what is at ``name`` out of the way (``name.steerable-aside-<hex>``); its new name."""
    try:
        os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    aside = f"{name}{ASIDE}{secrets.token_hex(3)}"
    _rename(name, aside, dir_fd, dir_fd)
    return aside


def _put_back(root: str, held: _Held, where: str) -> str | None:
    """Rename ``where`` (checked to still be ``held``) back to its path; what was there goes aside."""
    parts = held.rel.split("/")
    source, name = os.path.split(where)
    base = root if _within(source, root) else "/"
    with (
        _folder(base, [p for p in source[len(base) :].split("/") if p]) as src_fd,
        _folder(root, parts[:-1], create=True) as dst_fd,
    ):
        info = os.stat(name, dir_fd=src_fd, follow_symlinks=False)
        if (info.st_dev, info.st_ino) != (held.dev, held.ino):
            raise OSError(0, f"{where} changed again")
        aside = _aside(dst_fd, parts[-1])
        _rename(name, parts[-1], src_fd, dst_fd)
    return aside


def _relink(root: str, held: _Held) -> str | None:
    """Make the deleted link ``held`` again, with its old target; what is there now goes aside."""
    assert held.link is not None
    parts = held.rel.split("/")
    with _folder(root, parts[:-1], create=True) as dir_fd:
        aside = _aside(dir_fd, parts[-1])
        os.symlink(held.link, parts[-1], dir_fd=dir_fd)
    return aside
