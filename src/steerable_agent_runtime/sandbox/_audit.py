"""The audit of protected paths (FILE-15): snapshot them before a command, put back what it changed.

:class:`ProtectedAudit` snapshots every protected entry :func:`~._protect.find_protected` finds but
the ones bubblewrap binds read-only (:func:`~._protect.carve_outs`) before a command and, after it,
reverts every change (``O_NOFOLLOW`` walks from the root, so a link a command left cannot send a
write outside it). ``docs/sandbox.md`` (Protected paths) says what each backend covers.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import shutil
import stat
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from typing import Final

from .._protected import GIT_DIR_RULE, PROTECTED_RULES, ProtectedRule, protected_rule
from ._protect import (
    RECENT_NS,
    Coverage,
    Found,
    ScanCache,
    Spec,
    carve_outs,
    coarse_now,
    find_changed,
    find_protected,
    match_spec,
)
from ._unmake import ALL_FRESH_MAX, all_fresh, unmake_git_dir

__all__ = [
    "MAX_ENTRIES",
    "MAX_FILE_BYTES",
    "MAX_TOTAL_BYTES",
    "AuditOutcome",
    "ProtectedAudit",
    "SnapshotTooLarge",
    "remove_appeared_since",
]

MAX_ENTRIES: Final = 10_000
"""Entries one snapshot records at most; past it the command is refused (:class:`SnapshotTooLarge`)."""
MAX_FILE_BYTES: Final = 1 << 20
"""A file's content is kept when it is at most this large (1 MiB); a larger one only by identity."""
MAX_TOTAL_BYTES: Final = 16 << 20
"""Content kept per snapshot (16 MiB); files past it are kept by identity only."""

_DIR_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS: Final = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class SnapshotTooLarge(Exception):
    """The protected paths hold more than :data:`MAX_ENTRIES` entries: their changes could not be reverted."""


@dataclass(slots=True)
class _Node:
    """One snapshotted entry (``kind``: ``file``, ``dir``, ``link`` or ``other``)."""

    kind: str
    info: os.stat_result
    data: bytes | None = None  # a file's content; None past a cap (identity only)
    target: str = ""  # a link's
    children: dict[str, _Node] | None = None  # a directory's tracked children; None: not listable


def _kind(info: os.stat_result) -> str:
    mode = info.st_mode
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "dir"
    return "link" if stat.S_ISLNK(mode) else "other"


def _lstat(dir_fd: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


@contextlib.contextmanager
def _opened(dir_fd: int, name: str) -> Iterator[int]:
    fd = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    try:
        yield fd
    finally:
        os.close(fd)


def _read(dir_fd: int, name: str, limit: int) -> bytes | None:
    """The content of regular file ``name``, or ``None`` when it is not one or is over ``limit``."""
    try:
        fd = os.open(name, _READ_FLAGS, dir_fd=dir_fd)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = handle.read(limit + 1)
    return data if len(data) <= limit else None


@dataclass(slots=True)
class _Budget:
    entries: int = MAX_ENTRIES
    content: int = MAX_TOTAL_BYTES
    state: bool = False  # snapshotting steerable's own state folder (see _volatile)

    def take(self, dir_fd: int, name: str, spec: Spec, inner: str = "") -> _Node | None:
        if self.state and _volatile(dir_fd, name, inner):
            return None
        info = _lstat(dir_fd, name)
        if info is None:
            return None
        self.entries -= 1
        if self.entries < 0:
            raise SnapshotTooLarge(f"more than {MAX_ENTRIES} entries")
        node = _Node(_kind(info), info)
        if node.kind == "file" and info.st_size <= min(MAX_FILE_BYTES, self.content):
            node.data = _read(dir_fd, name, MAX_FILE_BYTES)
            self.content -= len(node.data or b"")
        elif node.kind == "link":
            node.target = os.readlink(name, dir_fd=dir_fd)
        elif node.kind == "dir":
            with contextlib.suppress(PermissionError), _opened(dir_fd, name) as fd:
                children = {}
                for child in sorted(os.listdir(fd)):
                    tracked, sub = match_spec(spec, child)
                    kept = (
                        self.take(fd, child, sub, f"{inner}/{child}" if inner else child) if tracked else None
                    )
                    if kept is not None:
                        children[child] = kept
                node.children = children  # only a complete listing: unlisted entries would be removed
        return node


@dataclass(frozen=True, slots=True)
class AuditOutcome:
    """What :meth:`ProtectedAudit.revert` did.

    Attributes:
        reverted: Protected paths (relative, sorted) whose change was undone.
        failed: Protected paths whose change could not be undone (an ``OSError``).
        rules: The rule of each path in either list.
    """

    reverted: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    rules: dict[str, ProtectedRule] = field(default_factory=dict)


@dataclass(slots=True)
class _Revert:
    """One revert pass: ``rule`` is the rule of the entry being put back, ``start`` the run's start.

    ``until``: after a crash, the last moment the run was known alive (its record's heartbeat plus
    a grace): what changed later is the user's, not the command's.
    """

    start: int
    rule: ProtectedRule
    until: int | None = None
    anchor: str = ""  # the protected entry being put back
    root_made_git: bool = False  # the workspace root became a git directory during the run (_unmake)
    outcome: AuditOutcome = field(default_factory=AuditOutcome)

    def at(self, item: Found) -> None:
        """Put back ``item`` from now on."""
        self.rule = item.rule
        self.anchor = item.rel

    def volatile(self, dir_fd: int, name: str, rel: str) -> bool:
        """Is ``rel`` steerable's own, written by it during the run (:func:`_volatile`)?"""
        if self.rule is not _STATE_RULE or rel == self.anchor:
            return False
        return _volatile(dir_fd, name, rel[len(self.anchor) + 1 :])

    def done(self, rel: str) -> None:
        if rel not in self.outcome.rules:
            self.outcome.reverted.append(rel)
            self.outcome.rules[rel] = self.rule

    def failed(self, rel: str) -> None:
        self.outcome.failed.append(rel)
        self.outcome.rules[rel] = self.rule

    # -- back to the snapshot --------------------------------------------------------------------
    def put_back(self, dir_fd: int, name: str, before: _Node | None, spec: Spec, rel: str) -> None:
        now = _lstat(dir_fd, name)
        if before is None:
            if now is not None and not self.volatile(dir_fd, name, rel):
                self.remove(dir_fd, name, now, spec, rel)
            return
        if before.kind == "dir" and (now is None or now.st_ino != before.info.st_ino):
            now = self.move_back(dir_fd, name, before, now, rel)
        if now is None or _kind(now) != before.kind:
            if now is not None:
                self.remove(dir_fd, name, now, None, rel)
            if self.create(dir_fd, name, before):
                self.done(rel)
            else:
                self.failed(rel)
        elif before.kind == "file":
            self.file(dir_fd, name, before, now, rel)
        elif before.kind == "link" and os.readlink(name, dir_fd=dir_fd) != before.target:
            os.unlink(name, dir_fd=dir_fd)
            os.symlink(before.target, name, dir_fd=dir_fd)
            self.done(rel)
        elif before.kind == "dir":
            self.directory(dir_fd, name, before, now, spec, rel)

    def move_back(
        self, dir_fd: int, name: str, before: _Node, now: os.stat_result | None, rel: str
    ) -> os.stat_result | None:
        """A directory renamed away within its parent (``mv .git g``) is renamed back."""
        with os.scandir(dir_fd) as listing:
            moved = [
                e.name
                for e in listing
                if e.inode() == before.info.st_ino and e.name != name and e.is_dir(follow_symlinks=False)
            ]
        if not moved or not _same_dir(dir_fd, moved[0], before):
            return now
        if now is not None:
            self.remove(dir_fd, name, now, None, rel)
        os.rename(moved[0], name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        self.done(rel)
        return _lstat(dir_fd, name)

    def file(self, dir_fd: int, name: str, before: _Node, now: os.stat_result, rel: str) -> None:
        was = before.info
        same_mode = stat.S_IMODE(now.st_mode) == stat.S_IMODE(was.st_mode) and now.st_nlink == was.st_nlink
        same_identity = (now.st_ino, now.st_size, now.st_ctime_ns, now.st_mtime_ns) == (
            was.st_ino,
            was.st_size,
            was.st_ctime_ns,
            was.st_mtime_ns,
        )
        # unchanged unless written in the clock tick of the snapshot (then the bytes tell); a file
        # kept by identity only has nothing else to tell
        if same_mode and same_identity and (before.data is None or was.st_ctime_ns < self.start - RECENT_NS):
            return
        if before.data is not None and same_mode and _read(dir_fd, name, len(before.data)) == before.data:
            return
        if before.data is None:  # too large to have been kept: it cannot be put back, so it goes
            os.unlink(name, dir_fd=dir_fd)
        else:  # a new inode: a hard link made to the file keeps the changed one, not this
            _write(dir_fd, name, before)
        self.done(rel)

    def directory(
        self, dir_fd: int, name: str, before: _Node, now: os.stat_result, spec: Spec, rel: str
    ) -> None:
        if stat.S_IMODE(now.st_mode) != stat.S_IMODE(before.info.st_mode):
            _chmod(dir_fd, name, stat.S_IMODE(before.info.st_mode))
            self.done(rel)
        if before.children is None:
            return
        with _opened(dir_fd, name) as fd:
            names = set(before.children) | {n for n in os.listdir(fd) if match_spec(spec, n)[0]}
            for child in sorted(names):
                sub = match_spec(spec, child)[1]
                self.put_back(fd, child, before.children.get(child), sub, f"{rel}/{child}")

    def create(self, dir_fd: int, name: str, node: _Node) -> bool:
        """Create ``name`` as the snapshot had it; ``False`` when (part of) it could not be (past a cap)."""
        if node.kind == "file" and node.data is not None:
            _write(dir_fd, name, node)
        elif node.kind == "link":
            os.symlink(node.target, name, dir_fd=dir_fd)
        elif node.kind != "dir":
            return False
        else:
            os.mkdir(name, 0o700, dir_fd=dir_fd)
            with _opened(dir_fd, name) as fd:
                complete = all([self.create(fd, child, sub) for child, sub in (node.children or {}).items()])
                _own(fd, node.info)
                os.fchmod(fd, stat.S_IMODE(node.info.st_mode))
            return complete
        return True

    def remove(self, dir_fd: int, name: str, now: os.stat_result, spec: Spec, rel: str) -> None:
        """Remove ``name``: all of it, or (``spec``: in a ``.git``) all but git's data (:data:`GIT_DATA`).

        A directory holding no data goes whole (and is reported as one path). In steerable's state
        folder what steerable itself holds (:func:`_volatile`) stays, and so do the directories
        holding it.
        """
        state = self.rule is _STATE_RULE
        if not stat.S_ISDIR(now.st_mode):
            os.unlink(name, dir_fd=dir_fd)
        elif not state and (spec is None or not _holds_data(dir_fd, name, spec)):
            shutil.rmtree(name, dir_fd=dir_fd)
        else:
            with _opened(dir_fd, name) as fd:
                for child in sorted(os.listdir(fd)):
                    tracked, sub = match_spec(spec, child)
                    info = _lstat(fd, child) if tracked else None
                    if info is not None and not self.volatile(fd, child, f"{rel}/{child}"):
                        self.remove(fd, child, info, sub, f"{rel}/{child}")
            if spec is not None:
                return
            if state and (rel == self.anchor or rel == f"{self.anchor}/txn"):
                return  # the state folder and its txn/ run nothing; the first write may make them mid-run
            try:
                os.rmdir(name, dir_fd=dir_fd)
            except OSError:  # it holds steerable's own entries
                return
        self.done(rel)

    # -- entries that appeared ---------------------------------------------------------------------
    def appeared(self, dir_fd: int, name: str, spec: Spec, rel: str) -> None:
        """An entry with no snapshot: removed (a ``.git`` one: all but its data), whatever its ``ctime``."""
        now = _lstat(dir_fd, name)
        if now is not None and not self.volatile(dir_fd, name, rel):
            self.remove(dir_fd, name, now, spec, rel)

    def fresh(self, info: os.stat_result) -> bool:
        """Did the run change ``info``'s entry (its ``ctime`` is from the start on, up to ``until``)?"""
        return info.st_ctime_ns >= self.start and (self.until is None or info.st_ctime_ns <= self.until)

    def changed_since_start(self, dir_fd: int, name: str, spec: Spec, rel: str) -> None:
        """An entry a capped scan had not reached (:meth:`ProtectedAudit._unreached`): what changed goes.

        What changed: its ``ctime`` is from the run's start on.

        A directory created or renamed into place goes whole (a ``.git`` one: all but its data);
        in an older one, each changed entry goes.
        """
        now = _lstat(dir_fd, name)
        if now is None or self.volatile(dir_fd, name, rel):
            return
        fresh = self.fresh(now)
        if not stat.S_ISDIR(now.st_mode):
            if fresh:
                os.unlink(name, dir_fd=dir_fd)
                self.done(rel)
            return
        if fresh:
            self.remove(dir_fd, name, now, spec, rel)
            return
        with _opened(dir_fd, name) as fd:
            for child in sorted(os.listdir(fd)):
                tracked, sub = match_spec(spec, child)
                if tracked:
                    self.changed_since_start(fd, child, sub, f"{rel}/{child}")


def _holds_data(dir_fd: int, name: str, spec: Spec) -> bool:
    """Does the directory ``name`` hold, at any depth, an entry ``spec`` does not track (git's data)?"""
    with _opened(dir_fd, name) as fd:
        for child in os.listdir(fd):
            tracked, sub = match_spec(spec, child)
            if not tracked:
                return True
            info = _lstat(fd, child) if sub is not None else None
            if info is not None and stat.S_ISDIR(info.st_mode) and _holds_data(fd, child, sub):
                return True
    return False


_STATE_RULE: Final = protected_rule(".steerable")


def _volatile(dir_fd: int, name: str, inner: str) -> bool:
    """Does steerable itself write ``inner`` (a path inside its state folder) while a command runs?

    Its ``.gitignore`` (which runs nothing), a write's intent file in ``txn/`` while its writer
    holds it locked (``flock``; the command's processes are gone, so a lock is steerable's) and
    that record's heartbeat (``.alive``), and a hidden intent file being published. The file
    tools' writes run concurrently with ``bash``.
    """
    if inner == ".gitignore":
        return True
    head, _, rest = inner.partition("/")
    if head != "txn" or not rest or "/" in rest:
        return False
    if rest.endswith(".json.alive"):  # a running record's heartbeat: as long as the record is locked
        return _locked(dir_fd, name.removesuffix(".alive"))
    return rest.startswith(".") or _locked(dir_fd, name)


def _locked(dir_fd: int, name: str) -> bool:
    try:
        fd = os.open(name, _READ_FLAGS, dir_fd=dir_fd)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)  # released with the descriptor
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


def _write(dir_fd: int, name: str, node: _Node) -> None:
    """Put ``node``'s content and mode at ``name`` (a new file renamed over it), without following links."""
    tmp = f".steerable-restore-{secrets.token_hex(6)}"
    fd = os.open(
        tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dir_fd
    )
    try:
        with os.fdopen(fd, "wb", closefd=False) as handle:
            handle.write(node.data or b"")
        _own(fd, node.info)
        os.fchmod(fd, stat.S_IMODE(node.info.st_mode))
        os.close(fd)
        fd = -1
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise


def _same_dir(dir_fd: int, name: str, before: _Node) -> bool:
    """Is ``name`` the snapshotted directory (an inode number can be reused): one child still the same?"""
    with _opened(dir_fd, name) as fd:
        if not before.children:
            return not os.listdir(fd)
        for child, node in before.children.items():
            info = _lstat(fd, child)
            if info is not None and info.st_ino == node.info.st_ino:
                return True
    return False


def _own(fd: int, info: os.stat_result) -> None:
    """Give a restored entry its old owner (root only: anyone else already is the owner)."""
    if os.geteuid() == 0 and hasattr(os, "fchown"):
        os.fchown(fd, info.st_uid, info.st_gid)


def _chmod(dir_fd: int, name: str, mode: int) -> None:
    """Change the mode of the directory ``name`` without following a link (and even when it is unreadable)."""
    fd = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        os.chmod(f"/proc/self/fd/{fd}", mode)
    finally:
        os.close(fd)


def _open_dirs(root_fd: int, components: list[str]) -> int | None:
    """Open ``components`` under ``root_fd`` one at a time with ``O_NOFOLLOW``.

    ``None`` when one is missing or not a real directory.
    """
    fd = os.dup(root_fd)
    for component in components:
        try:
            child = os.open(component, _DIR_FLAGS, dir_fd=fd)
        except OSError:
            os.close(fd)
            return None
        os.close(fd)
        fd = child
    return fd


def _subdir(dir_fd: int, name: str, revert: _Revert, rel: str) -> int:
    """Open the directory ``name`` a protected entry lives in (``.claude``), putting it back when gone."""
    info = _lstat(dir_fd, name)
    if info is not None and not stat.S_ISDIR(info.st_mode):
        os.unlink(name, dir_fd=dir_fd)
        info = None
    if info is None:
        os.mkdir(name, 0o755, dir_fd=dir_fd)
        revert.done(rel)
    return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)


class ProtectedAudit:
    """The protected entries under one root before a command, and how to put them back after it.

    :meth:`take` scans (:func:`find_protected`) and snapshots every entry but the ones
    :attr:`carved` (bubblewrap keeps those read-only): type, mode, owner, a file's content (up to
    :data:`MAX_FILE_BYTES`, :data:`MAX_TOTAL_BYTES` in all) or a link's target, a directory's
    entries; of a ``.git`` directory only :data:`GIT_SPEC`. :meth:`revert`, once the command's
    processes are gone, undoes every change to them, then scans again and removes what appeared
    under a protected name during the run.
    """

    def __init__(
        self,
        root: str,
        start: int,
        found: list[Found],
        carved: list[str],
        nodes: dict[str, _Node | None],
        cache: ScanCache | None = None,
        coverage: Coverage | None = None,
        identities: dict[tuple[int, int], str] | None = None,
    ) -> None:
        self._root = root
        self._identities = identities if identities is not None else {}
        self._coverage = coverage if coverage is not None else Coverage()
        self._cache = cache
        self._start = start
        self._found = {item.rel: item for item in found}
        self._carved = carved
        self._nodes = nodes

    @property
    def found(self) -> list[Found]:
        """The protected entries the scan found before the command."""
        return list(self._found.values())

    @property
    def carved(self) -> list[str]:
        """The absolute paths to bind read-only (:func:`carve_outs`); not snapshotted."""
        return list(self._carved)

    @classmethod
    def take(cls, root: str, *, carve: bool = False, cache: ScanCache | None = None) -> ProtectedAudit:
        """Scan ``root`` and snapshot its protected entries (but the :attr:`carved` ones).

        Args:
            root: The writable root (a real path).
            carve: The backend binds :func:`carve_outs` read-only (bubblewrap): leave them out.
            cache: Listings kept from earlier scans of this root (the ``bash`` tool keeps one).

        Raises:
            SnapshotTooLarge: Over :data:`MAX_ENTRIES` entries.
            OSError: ``root`` cannot be opened.
        """
        start = coarse_now()
        coverage = Coverage()
        found = find_protected(root, cache=cache, coverage=coverage)
        carved = carve_outs(root, found) if carve else []
        budget = _Budget()
        nodes: dict[str, _Node | None] = {}
        skip = set(carved)
        root_fd = os.open(root, _DIR_FLAGS)
        try:
            for item in found:
                if os.path.join(root, item.rel) in skip:
                    continue
                *dirs, name = item.rel.split("/")
                parent = _open_dirs(root_fd, dirs)
                if parent is not None:
                    try:
                        budget.state = item.rule is _STATE_RULE
                        nodes[item.rel] = budget.take(parent, name, item.spec)
                    finally:
                        os.close(parent)
        finally:
            os.close(root_fd)
        identities = {}  # each entry's (st_dev, st_ino): one seen elsewhere after the run was moved there
        for item in found:
            with contextlib.suppress(OSError):
                info = os.lstat(os.path.join(root, item.rel))
                identities[(info.st_dev, info.st_ino)] = item.rel
        return cls(root, start, found, carved, nodes, cache, coverage, identities)

    def revert(self) -> AuditOutcome:
        """Undo every change to the snapshotted entries; remove protected entries that appeared.

        Returns:
            What was reverted, and what could not be (each path with its rule).
        """
        revert = _Revert(self._start, PROTECTED_RULES[0])
        root_fd = os.open(self._root, _DIR_FLAGS)
        try:
            for rel, before in self._nodes.items():
                item = self._found[rel]
                revert.at(item)
                try:
                    self._put_back(root_fd, item, before, revert)
                except OSError:
                    revert.failed(rel)
            scanned = find_protected(self._root, targets=False, cache=self._cache)
            for item in scanned:
                if item.rel not in self._found:
                    revert.at(item)
                    try:
                        if not self._moved(root_fd, item, revert):
                            self._remove_new(root_fd, item, revert, self._unreached(root_fd, item))
                    except OSError:
                        revert.failed(item.rel)
            # past the scan's depth and cap: what the command made in the folders it changed
            seen = {item.rel for item in scanned} | set(self._found)
            for item in find_changed(self._root, self._start):
                if item.rel not in seen and not any(item.rel.startswith(f"{s}/") for s in seen):
                    revert.at(item)
                    try:
                        if not self._moved(root_fd, item, revert):
                            self._remove_new(root_fd, item, revert, True)
                    except OSError:
                        revert.failed(item.rel)
            _unmake_root(root_fd, revert)
        finally:
            os.close(root_fd)
        revert.outcome.reverted.sort()
        revert.outcome.failed.sort()
        return revert.outcome

    @staticmethod
    def _put_back(root_fd: int, item: Found, before: _Node | None, revert: _Revert) -> None:
        parts = item.rel.split("/")
        held = len(parts) - 1 - item.parents  # the directory holding the rule's first component
        fd = _open_dirs(root_fd, parts[:held])
        if fd is None:  # that directory is gone: nothing reads the entry there any more
            return
        try:
            for at in range(held, len(parts) - 1):
                child = _subdir(fd, parts[at], revert, "/".join(parts[: at + 1]))
                os.close(fd)
                fd = child
            revert.put_back(fd, parts[-1], before, item.spec, item.rel)
        finally:
            os.close(fd)

    def _moved(self, root_fd: int, item: Found, revert: _Revert) -> bool:
        """Is ``item`` an entry that was there before, moved with a directory the command renamed?

        Then it is the user's (``mv libs/foo libs/bar`` takes ``libs/foo/.git`` along), not removed
        as new: an entry that was bound read-only could not change; an audited one is put back to
        its snapshot where it now is.
        """
        try:
            info = os.lstat(os.path.join(self._root, item.rel))
        except OSError:
            return False
        was = self._identities.get((info.st_dev, info.st_ino))
        if was is None:
            return False
        with contextlib.suppress(OSError):
            still = os.lstat(os.path.join(self._root, was))
            if (still.st_dev, still.st_ino) == (info.st_dev, info.st_ino):
                return False  # a second name (a hard link), not a move: the new name goes
        before = self._nodes.get(was)
        if before is not None:
            moved = Found(item.rel, self._found[was].rule, spec=self._found[was].spec)
            self._put_back(root_fd, moved, before, revert)
        return True

    def _unreached(self, root_fd: int, item: Found) -> bool:
        """Was ``item`` there all along, where the first scan (past its cap) never looked?

        So when that scan stopped short, never listed the directory holding ``item``, and every
        directory on the way there is one it listed (the same inode) or one not changed during the
        run (``ctime``): nothing was created, renamed or moved in on the way. A scan reaches further
        after a command removed directories; such a user's repository is not stripped.
        """
        if self._coverage.complete:
            return False
        parts = item.rel.split("/")
        holder = parts[: len(parts) - 1 - item.parents]
        dirs = self._coverage.dirs
        fd = os.dup(root_fd)
        try:
            for at in range(len(holder) + 1):
                info = os.fstat(fd)
                was = dirs.get("/".join(holder[:at]))
                swapped = was is not None and was != (info.st_dev, info.st_ino)
                if swapped or (was is None and info.st_ctime_ns >= self._start):
                    return False
                if at < len(holder):
                    child = os.open(holder[at], _DIR_FLAGS, dir_fd=fd)
                    os.close(fd)
                    fd = child
        except OSError:
            return False
        finally:
            os.close(fd)
        return "/".join(holder) not in dirs

    @staticmethod
    def _remove_new(root_fd: int, item: Found, revert: _Revert, unreached: bool) -> None:
        *dirs, name = item.rel.split("/")
        fd = _open_dirs(root_fd, dirs)
        if fd is not None:
            try:
                if item.rule is GIT_DIR_RULE and item.spec is None:  # the root's HEAD, config, hooks...
                    revert.root_made_git = True  # what made the root one: after every entry (_unmake)
                    info = _lstat(fd, name)
                    if info is not None and all_fresh(revert, fd, name, info, [ALL_FRESH_MAX]):
                        revert.remove(fd, name, info, None, item.rel)  # wholly the run's (none of the user's)
                elif item.rule is GIT_DIR_RULE:  # an ordinary folder made a repository
                    with _opened(fd, name) as folder_fd:
                        unmake_git_dir(revert, folder_fd, item.rel)
                elif unreached:
                    revert.changed_since_start(fd, name, item.spec, item.rel)
                else:
                    revert.appeared(fd, name, item.spec, item.rel)
            finally:
                os.close(fd)


def remove_appeared_since(
    root: str, existing: Collection[str], since_ns: int, until_ns: int | None = None
) -> list[str]:
    """After a crash: remove protected entries not in ``existing`` changed from ``since_ns`` to ``until_ns``.

    What the audit of a command would have done had its process lived (``ProtectedAudit.revert``'s
    second half), judged by ``ctime`` from the record written before the command: an entry older than
    that is left alone. That bound is no defence against a forged record (every entry of a fresh
    checkout is newer than a record the repository ships): recovery calls this only for a record
    whose seal checks, one this user's steerable wrote for this workspace (``workspace._seal``).

    Args:
        root: The workspace root (a real path).
        existing: The protected entries (relative paths) that existed before the command.
        since_ns: When the record was written (its ``ctime``, in ns).
        until_ns: The last moment the run was known alive (the record's heartbeat plus a grace):
            an entry changed later is the user's (``None``: no bound).

    Returns:
        The paths removed, sorted.
    """
    revert = _Revert(since_ns, PROTECTED_RULES[0], until_ns)
    root_fd = os.open(root, _DIR_FLAGS)
    try:
        found = {item.rel: item for item in find_protected(root, targets=False)}
        for item in find_changed(root, since_ns):  # past the scan's depth and cap
            found.setdefault(item.rel, item)
        for item in found.values():
            if item.rel not in existing:
                revert.at(item)
                try:
                    ProtectedAudit._remove_new(root_fd, item, revert, True)
                except OSError:
                    revert.failed(item.rel)
        _unmake_root(root_fd, revert)
    finally:
        os.close(root_fd)
    return sorted(revert.outcome.reverted)


def _unmake_root(root_fd: int, revert: _Revert) -> None:
    """The workspace root became a git directory during the run: make it none (``_unmake``)."""
    if revert.root_made_git:
        revert.rule = GIT_DIR_RULE
        try:
            unmake_git_dir(revert, root_fd, "")
        except OSError:
            revert.failed("HEAD")
