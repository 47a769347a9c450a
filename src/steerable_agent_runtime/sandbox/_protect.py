"""Protected paths inside a writable root (FILE-15): where they are, and what bubblewrap binds read-only.

The rules are ``steerable_agent_runtime._protected``'s (``PROTECTED_ENTRIES``, matched like
``protected_rule``: any case, ignorable code points dropped). :func:`find_protected` looks for them
:data:`SCAN_DEPTH` levels deep (not inside ``node_modules`` nor inside a protected entry);
:func:`carve_outs` is what bubblewrap binds read-only; the audit (``_audit.py``) snapshots the rest
before a command and reverts every change after it. ``docs/sandbox.md`` (Protected paths) says
what each backend covers and what stays open.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import stat
import sys
import time
from collections import deque
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Final

from .._git_config import configured_code_paths
from .._protected import (
    ENV_MARKERS,
    GIT_DIR_RULE,
    GIT_MARKERS,
    INTERPRETER_ENV_RULE,
    PLAIN_NAMES,
    PROTECTED_RULES,
    ProtectedRule,
    is_git_directory,
    protected_rule,
    runtime_roots,
)
from ..config import default_state_dir

logger = logging.getLogger(__name__)

__all__ = [
    "CHANGED_MAX_DIRS",
    "ENV_SPEC",
    "GIT_DATA",
    "GIT_SPEC",
    "VCS_SPECS",
    "LINK_WALK_MAX",
    "RECENT_NS",
    "SCAN_DEPTH",
    "SCAN_MAX_DIRS",
    "SKIPPED",
    "STORE_MAX_BYTES",
    "AllBut",
    "Coverage",
    "Found",
    "Matching",
    "ScanCache",
    "Spec",
    "bindable",
    "carve_outs",
    "coarse_now",
    "find_changed",
    "find_protected",
    "guarded_inside",
    "known_entries_file",
    "match_spec",
]

SCAN_DEPTH: Final = 3
"""Protected entries are looked for this many path components deep (``a/b/.git``), as sandbox-runtime does."""
SCAN_MAX_DIRS: Final = 512
"""Directories one scan lists at most (breadth first: the root's own entries always come first)."""
LINK_WALK_MAX: Final = 2048
"""Entries of the protected directories one scan looks through for links (see :func:`find_protected`)."""
SKIPPED: Final = frozenset({"node_modules"})
"""Directories the scan does not enter."""
RECENT_NS: Final = 50_000_000
"""A file changed this close (ns) before a listing or a snapshot may change again in the same clock tick."""
_CLOCK_REALTIME_COARSE: Final = 5  # Linux: the clock file timestamps are taken from

GIT_DATA: Final = frozenset(
    {
        "objects",
        "refs",
        "logs",
        "index",
        "HEAD",
        "packed-refs",
        "ORIG_HEAD",
        "FETCH_HEAD",
        "MERGE_HEAD",
        "CHERRY_PICK_HEAD",
        "REVERT_HEAD",
        "COMMIT_EDITMSG",
        "description",
        "shallow",
        "lfs",
    }
)
"""What of a git directory is its data (objects, refs, the index, big caches): all it holds runs no code."""


@dataclass(frozen=True, eq=False, slots=True)
class AllBut:
    """A directory's spec: every child but the ``skip`` names, each with ``named``'s spec or this one."""

    skip: frozenset[str]
    named: dict[str, Spec] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Matching:
    """A directory's spec: the children whose names match one of ``patterns`` (``fnmatch``), each whole."""

    patterns: tuple[str, ...]


Spec = Mapping[str, "Spec"] | AllBut | Matching | None
"""What of a directory is tracked: ``None`` all, child names (``*``: any) to specs, :class:`AllBut` or
:class:`Matching`."""

_GIT_DIR: Final = AllBut(GIT_DATA)
_GIT_DIR.named["modules"] = {"*": _GIT_DIR}  # a submodule may be named "objects": none skipped there
_GIT_DIR.named["worktrees"] = {"*": _GIT_DIR}  # and a worktree "index"
GIT_SPEC: Final[Spec] = _GIT_DIR
"""What of a ``.git`` directory is tracked: every entry but :data:`GIT_DATA`, at every level.

git follows ``config``, ``hooks``, ``commondir``, ``gitdir``, ``worktrees/*``, ``info/*`` and
``modules/<name>/`` (a name may hold ``/``) to code it runs; the data names are skipped at every
level (inside ``modules`` and ``worktrees`` too), but for the children of ``modules`` and
``worktrees`` themselves (a submodule or worktree may be named ``objects``).
"""


_SITE_PACKAGES: Final = {"site-packages": Matching(("*.pth", "sitecustomize.py", "usercustomize.py"))}
ENV_SPEC: Final[Spec] = {
    "pyvenv.cfg": None,
    "bin": None,
    "Scripts": None,
    "conda-meta": {},
    "etc": {"conda": None},  # conda's activate.d scripts
    "lib": {"*": _SITE_PACKAGES},
    "lib64": {"*": _SITE_PACKAGES},
    "Lib": _SITE_PACKAGES,
}
"""What of an interpreter environment is tracked: what runs without being asked for (SAFE-2).

``pyvenv.cfg`` (which interpreter), ``bin/`` and ``Scripts/`` (the interpreter links, the activate
scripts, every console script), and in each ``site-packages`` the ``.pth`` files and
``sitecustomize`` / ``usercustomize`` (run at every interpreter start); the installed packages
themselves are data here (bubblewrap binds the whole environment read-only all the same)."""

VCS_SPECS: Final[Mapping[str, Spec]] = {
    ".git/**": GIT_SPEC,
    ".hg/**": {"hgrc": None, "hgrc.d": None, "sharedpath": None, "requires": None},
    ".jj/**": {"repo": {"config.toml": None}},
    ".svn/**": {},
    ".bzr/**": {"branch": {"branch.conf": None}},
}
"""What of each version-control directory is audited: what makes its tool run a command (of ``.hg``
also ``sharedpath`` and ``requires``, which make it read another folder's ``hgrc``, as git's
``commondir``); the rest (objects, stores, the working-copy database) is data. The file tools
refuse all of it."""


@dataclass(slots=True)
class Coverage:
    """What one scan listed: each directory's ``(st_dev, st_ino)``; ``complete``: it hit no cap."""

    dirs: dict[str, tuple[int, int]] = field(default_factory=dict)
    complete: bool = True


_NESTED: Final = tuple(
    rule for rule in PROTECTED_RULES if len(rule.pattern.removesuffix("/**").split("/")) > 1
)


@dataclass(frozen=True, slots=True)
class Found:
    """One protected entry under a root.

    Attributes:
        rel: Its path relative to the root, ``/``-separated; no symbolic link before its last component.
        rule: The rule protecting it.
        link: It is a symbolic link: never bound, audited as a link (and its target, when that is
            inside the root, as an entry of its own).
        parents: How many of its last components but one belong to the rule (1 for
            ``.claude/commands``): the audit recreates those when they are gone.
        spec: What of it is audited: everything (``None``), or of a ``.git`` :data:`GIT_SPEC`.
    """

    rel: str
    rule: ProtectedRule
    link: bool = False
    parents: int = 0
    spec: Spec = None


def find_protected(
    root: str,
    *,
    depth: int = SCAN_DEPTH,
    targets: bool = True,
    cache: ScanCache | None = None,
    coverage: Coverage | None = None,
) -> list[Found]:
    """The protected entries that exist under ``root`` (a real path), at most ``depth`` components deep.

    Breadth first, at most :data:`SCAN_MAX_DIRS` directories; symbolic links, ``node_modules`` and
    protected entries themselves are not entered. A ``.claude`` directory is looked into for its
    protected children at any scanned depth. With ``targets``, what a protected link points at
    inside ``root`` is listed too (under the link's rule), and so is what a link inside a protected
    directory points at (``.git/hooks/pre-commit -> ../../hooks/pre-commit``: git runs
    ``hooks/pre-commit``). With a ``cache``, a directory whose ``ctime`` has not changed since it
    was last listed is not listed again (:class:`ScanCache`). A ``coverage`` is filled with what
    the scan listed.
    """
    found: dict[str, Found] = {}
    queue: deque[tuple[str, int]] = deque([("", 0)])
    listed = 0
    while queue and listed < SCAN_MAX_DIRS:
        rel, level = queue.popleft()
        listed += 1
        listing = _list(f"{root}/{rel}" if rel else root, cache)
        if listing is None:
            continue
        if coverage is not None:
            coverage.dirs[rel] = listing.key[:2]
        if _by_contents(root, rel, listing, found, targets):
            continue
        # one level more under a dotted folder (.pixi/envs/default, .tox/py/...): small, and where tools
        # keep their environments
        deeper = level + 1 < depth + (rel.startswith(".") or "/." in rel)
        prefix = f"{rel}/" if rel else ""
        for name, is_dir, is_link in listing.dotted:  # dotted folders first (.venv, .config...)
            path = prefix + name
            protected = _classify(root, path, name, is_dir, is_link, found, targets)
            if not protected and deeper and is_dir:
                queue.append((path, level + 1))
        if deeper:
            queue.extend((prefix + name, level + 1) for name in listing.subdirs)
    if coverage is not None:
        coverage.complete = not queue
    if cache is not None:
        _remembered(root, found, cache, targets)
    _configured(root, found, targets)
    if targets:
        _link_targets(root, found)
    return list(found.values())


CHANGED_MAX_DIRS: Final = 50_000
"""Folders :func:`find_changed` lists at most (each changed during the run)."""


def find_changed(root: str, since_ns: int) -> list[Found]:
    """The protected entries in folders changed from ``since_ns`` on, at any depth, past every cap.

    What a command made is in folders whose ``ctime`` it moved (an entry added, removed or renamed
    in them), so walking only those finds every new protected entry however deep, however many
    folders the command made around it (:data:`CHANGED_MAX_DIRS` at most); an untouched folder
    is not entered. Old entries in a changed folder are found too: the caller judges them by
    ``ctime`` (``ProtectedAudit``: only what changed goes).
    """
    found: dict[str, Found] = {}
    queue: deque[str] = deque([""])
    listed = 0
    while queue and listed < CHANGED_MAX_DIRS:
        rel = queue.popleft()
        listed += 1
        listing = _list(f"{root}/{rel}" if rel else root, None)
        if listing is None or _by_contents(root, rel, listing, found, False):
            continue
        prefix = f"{rel}/" if rel else ""
        dirs = [prefix + name for name in listing.subdirs]
        for name, is_dir, is_link in listing.dotted:
            if not _classify(root, prefix + name, name, is_dir, is_link, found, False) and is_dir:
                dirs.append(prefix + name)
        queue.extend(path for path in dirs if _changed_since(f"{root}/{path}", since_ns))
    return list(found.values())


def _changed_since(path: str, since_ns: int) -> bool:
    try:
        return os.lstat(path).st_ctime_ns >= since_ns
    except OSError:
        return False


def _by_contents(root: str, rel: str, listing: _Listing, found: dict[str, Found], targets: bool) -> bool:
    """Record ``rel`` when its contents make it protected (SAFE-2); ``True``: it is one entry, not entered.

    An interpreter environment, or a git directory under an ordinary name (tracked as a ``.git``);
    when the workspace root itself is a git directory, what makes it one and what git runs from it.
    """
    if listing.environment and rel:
        _add(root, found, Found(rel, INTERPRETER_ENV_RULE, spec=ENV_SPEC), targets)
        return True
    if listing.git_dir and rel:
        _add(root, found, Found(rel, GIT_DIR_RULE, spec=GIT_SPEC), targets)
        return True
    if listing.git_dir:
        for name in (*sorted(GIT_MARKERS), "config", "hooks", "info"):
            path = os.path.join(root, name)
            if os.path.lexists(path):
                _add(root, found, Found(name, GIT_DIR_RULE, os.path.islink(path)), targets)
    return False


def _remembered(root: str, found: dict[str, Found], cache: ScanCache, targets: bool) -> None:
    """Add the entries earlier scans found that this one did not reach, and remember this scan's.

    A scan stops at :data:`SCAN_MAX_DIRS`: a command that makes hundreds of folders would push the
    user's nested repositories and environments past it for the next calls (SAFE-2). An entry found
    once stays guarded while it exists (not reached through a link), whatever the cap, in later
    processes too when the cache has a store (:func:`known_entries_file`).
    """
    cache.load()
    for rel, item in cache.known.items():
        path = os.path.join(root, rel)
        parts = rel.split("/")
        through_link = any(os.path.islink(os.path.join(root, *parts[:i])) for i in range(1, len(parts)))
        if rel not in found and not through_link and os.path.lexists(path):
            _add(root, found, Found(rel, item.rule, os.path.islink(path), item.parents, item.spec), targets)
    cache.known = dict(found)
    cache.save()


def _configured(root: str, found: dict[str, Found], targets: bool) -> None:
    """Add what git configuration runs or includes inside ``root`` (``_git_config``), if present.

    A path reached through a symbolic link before its last component is left out (``Found.rel``
    never goes through one); an absent one is found by the scan after the run, once made.
    """
    for rel, rule in configured_code_paths(Path(root)):
        parts = rel.split("/")
        if any(os.path.islink(os.path.join(root, *parts[:i])) for i in range(1, len(parts))):
            continue
        path = os.path.join(root, rel)
        if os.path.lexists(path):
            _add(root, found, Found(rel, rule, os.path.islink(path)), targets)


def _link_targets(root: str, found: dict[str, Found]) -> None:
    """Add what links inside the protected directories point at inside ``root``.

    At most :data:`LINK_WALK_MAX` entries are looked at per scan (of a ``.git``, only
    :data:`GIT_SPEC`).
    """
    budget = LINK_WALK_MAX
    for item in [f for f in found.values() if not f.link]:
        stack: list[tuple[str, Spec]] = [(item.rel, item.spec)]
        while stack and budget > 0:
            rel, spec = stack.pop()
            try:
                with os.scandir(f"{root}/{rel}") as listing:
                    entries = list(listing)
            except OSError:  # a protected file, or gone
                continue
            budget -= len(entries)
            for entry in entries:
                tracked, sub = match_spec(spec, entry.name)
                if not tracked:
                    continue
                if entry.is_symlink():
                    real = os.path.realpath(entry.path)
                    target = os.path.relpath(real, root)
                    outside = target == "." or target.startswith("../") or os.path.isabs(target)
                    covered = any(_within(target, f) or _within(f, target) for f in found)
                    if not (outside or covered) and os.path.lexists(real):
                        found[target] = Found(target, item.rule, spec=sub)
                elif _is_dir(entry):
                    stack.append((f"{rel}/{entry.name}", sub))


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root + "/")


@dataclass(frozen=True, slots=True)
class _Listing:
    """What the scan needs of one directory, kept while its ``(st_dev, st_ino, st_ctime_ns)`` holds.

    Adding, removing or renaming an entry changes the directory's ``ctime``, and no process can
    set a ``ctime`` back; a directory changed within 50 ms of its listing is not kept (a change
    in the same clock tick would keep the ``ctime``).
    """

    key: tuple[int, int, int]
    subdirs: tuple[str, ...]  # real directories with names no protected name folds from
    dotted: tuple[tuple[str, bool, bool], ...]  # (name, is a real directory, is a link) of the others
    environment: bool = False  # it holds an interpreter environment's marker (pyvenv.cfg, conda-meta)
    git_dir: bool = False  # it holds HEAD, objects/ and refs/: a git directory, whatever its name


_LISTINGS_MAX: Final = 65_536


class ScanCache:
    """Directory listings kept between scans of one workspace (one per ``bash`` tool).

    A listing is reused while its directory's ``(st_dev, st_ino, st_ctime_ns)`` holds (see
    :class:`_Listing`); at most 65,536 are kept. :attr:`known` keeps the protected entries found,
    guarded on later scans even past the cap.

    Args:
        store: A file the known entries are kept in across processes (:func:`known_entries_file`):
            read before the first scan, rewritten when they change. ``None``: this process only.
    """

    def __init__(self, store: Path | None = None) -> None:
        self._listings: dict[str, _Listing] = {}
        self.known: dict[str, Found] = {}  # the protected entries the last scan found (see _remembered)
        self.store = store
        self._stored: frozenset[tuple[str, str]] | None = None  # what the store holds (None: not read)

    def load(self) -> None:
        """Read the store into :attr:`known` once (blocking; a missing or damaged store reads as empty).

        At most :data:`STORE_MAX_BYTES` are read: a larger store (a sparse file of gigabytes), or one
        nested too deeply to parse, is ignored with a log line, never read whole.
        """
        if self._stored is not None:
            return
        self._stored = frozenset()
        if self.store is None:
            return
        try:  # O_NONBLOCK: a FIFO there cannot hang the call; only a regular file is read
            fd = os.open(self.store, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            return
        try:
            with os.fdopen(fd, "rb") as handle:
                regular = stat.S_ISREG(os.fstat(handle.fileno()).st_mode)
                raw = handle.read(STORE_MAX_BYTES + 1) if regular else b""
        except OSError:
            return
        if len(raw) > STORE_MAX_BYTES:
            logger.warning(
                "steerable: %s is over %d bytes; the protected entries kept there are ignored",
                self.store,
                STORE_MAX_BYTES,
            )
            return
        try:
            entries = json.loads(raw)["entries"]
        except (ValueError, RecursionError, KeyError, TypeError) as exc:
            logger.warning(
                "steerable: %s is damaged (%s); the protected entries kept there are ignored",
                self.store,
                type(exc).__name__,
            )
            return
        for entry in entries[:_STORED_MAX] if isinstance(entries, list) else ():
            item = _stored_entry(entry)
            if item is not None:
                self.known.setdefault(item.rel, item)
        self._stored = _stored_keys(self.known)

    def save(self) -> None:
        """Write :attr:`known` to the store when it changed (blocking; a failure is only logged)."""
        keys = _stored_keys(self.known)
        if self.store is None or keys == self._stored:
            return
        entries = [
            {"rel": rel, "rule": rule, "parents": self.known[rel].parents} for rel, rule in sorted(keys)
        ]
        tmp = self.store.with_name(f".{self.store.name}.{os.getpid()}.tmp")
        try:
            self.store.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            tmp.write_text(json.dumps({"version": 1, "entries": entries[:_STORED_MAX]}), encoding="utf-8")
            os.replace(tmp, self.store)
        except OSError as exc:
            logger.debug("steerable: protected entries not kept in %s: %s", self.store, exc)
            with contextlib.suppress(OSError):
                tmp.unlink()
            return
        self._stored = keys

    def get(self, path: str, key: tuple[int, int, int]) -> _Listing | None:
        """The kept listing of ``path`` if its directory is unchanged, else ``None``."""
        kept = self._listings.get(path)
        return kept if kept is not None and kept.key == key else None

    def put(self, path: str, listing: _Listing) -> None:
        """Keep ``listing`` (the whole cache is dropped when full)."""
        if len(self._listings) >= _LISTINGS_MAX:
            self._listings.clear()
        self._listings[path] = listing


_STORED_MAX: Final = 4096
STORE_MAX_BYTES: Final = 4 << 20
"""A store (:func:`known_entries_file`) larger than this (4 MiB) is ignored: 4 096 entries fit in ~0.5 MiB."""
_STORED_RULES: Final = {rule.pattern: rule for rule in (*PROTECTED_RULES, GIT_DIR_RULE, INTERPRETER_ENV_RULE)}


def known_entries_file(root: str, environ: Mapping[str, str] | None = None) -> Path:
    """Where the protected entries found under ``root`` are kept between processes (SAFE-2).

    ``<state dir>/protected/<sha256 of root>.json`` in steerable's state folder
    (``config.default_state_dir``), which sandboxed commands cannot read or write (SAFE-3). A later
    process guards a nested repository it would not reach under :data:`SCAN_MAX_DIRS` (a command
    of an earlier run made hundreds of folders in front of it) from its first call on.
    """
    digest = hashlib.sha256(os.fsencode(root)).hexdigest()[:32]
    return default_state_dir(environ) / "protected" / f"{digest}.json"


def _canonical_spec(rule: ProtectedRule) -> Spec:
    if rule is GIT_DIR_RULE:
        return GIT_SPEC
    if rule is INTERPRETER_ENV_RULE:
        return ENV_SPEC
    return VCS_SPECS.get(rule.pattern)


def _stored_keys(known: Mapping[str, Found]) -> frozenset[tuple[str, str]]:
    """The entries a store keeps: those found by name or contents, with their rule's whole spec.

    What git configuration names is looked up again at every scan, and a link's target is found
    through its link: neither is kept.
    """
    return frozenset(
        (rel, item.rule.pattern)
        for rel, item in known.items()
        if _STORED_RULES.get(item.rule.pattern) is item.rule and item.spec is _canonical_spec(item.rule)
    )


def _stored_entry(entry: object) -> Found | None:
    if not isinstance(entry, dict):
        return None
    rel, pattern, parents = entry.get("rel"), entry.get("rule"), entry.get("parents", 0)
    rule = _STORED_RULES.get(pattern) if isinstance(pattern, str) else None
    if rule is None or not isinstance(rel, str) or not isinstance(parents, int) or isinstance(parents, bool):
        return None
    parts = rel.split("/")
    if rel.startswith("/") or any(part in ("", ".", "..") for part in parts) or not 0 <= parents < len(parts):
        return None
    return Found(rel, rule, parents=parents, spec=_canonical_spec(rule))


def _list(path: str, cache: ScanCache | None) -> _Listing | None:
    try:
        info = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode):  # swapped for a link since its parent was listed: not entered
        return None
    key = (info.st_dev, info.st_ino, info.st_ctime_ns)
    kept = cache.get(path, key) if cache is not None else None
    if kept is not None:
        return kept
    subdirs: list[str] = []
    dotted: list[tuple[str, bool, bool]] = []
    environment = False
    git_markers: set[str] = set()
    try:
        with os.scandir(path) as entries:
            for entry in entries:
                name = entry.name
                plain = name.isascii() and not name.startswith(".")
                if plain and name.casefold() not in PLAIN_NAMES:  # cannot fold to a protected name
                    if name not in SKIPPED and _is_dir(entry):
                        subdirs.append(name)
                    environment = environment or _marks(entry, ENV_MARKERS)
                    if name in GIT_MARKERS:  # in any form git accepts: a link, a file
                        git_markers.add(name)
                else:
                    dotted.append((name, _is_dir(entry), entry.is_symlink()))
    except OSError:
        return None
    listing = _Listing(key, tuple(subdirs), tuple(dotted), environment, is_git_directory(git_markers))
    if cache is not None and info.st_ctime_ns < coarse_now() - RECENT_NS:
        cache.put(path, listing)
    return listing


def _marks(entry: os.DirEntry[str], markers: tuple[tuple[str, bool], ...]) -> bool:
    """Is ``entry`` one of ``markers`` (``(name, is a directory)``: ``pyvenv.cfg``, ``conda-meta``)?"""
    for marker, is_dir in markers:
        if entry.name == marker:
            with contextlib.suppress(OSError):
                return entry.is_dir(follow_symlinks=False) if is_dir else entry.is_file(follow_symlinks=False)
    return False


def carve_outs(root: str, found: Collection[Found] | None = None) -> list[str]:
    """The absolute paths bubblewrap binds read-only under ``root`` (a real path).

    Each found entry that is a real file or directory reached through no symbolic link
    (``realpath`` is itself). A bind's source is resolved on the host, so a link
    (``.git -> /proc``) left by one command would otherwise mount its target into every later
    run; links are audited instead.
    """
    items = find_protected(root) if found is None else found
    return [path for item in items if not item.link and bindable(path := os.path.join(root, item.rel))]


def guarded_inside(writable: Sequence[str], protected: Sequence[str]) -> list[str]:
    """Existing runtime roots and ``protected`` paths that lie inside a writable root, outermost first.

    What bubblewrap, and Landlock in its mount namespace, bind read-only (SAFE-2).

    A protected path is guarded only when it is a real directory or file reached through no
    symbolic link (``_protect.bindable``): bubblewrap resolves a bind's source on the host, so a
    ``.git -> /proc`` planted by one command would otherwise mount the host's ``/proc`` (or
    ``/tmp``) into every later run, and a link to a file would make every later run fail.
    """
    runtime = {os.path.realpath(p) for p in runtime_roots()}
    guarded: list[str] = []
    for path in sorted({*runtime, *protected}, key=len):
        if any(_within(path, g) for g in guarded) or not any(_within(path, w) for w in writable):
            continue
        if path in protected:
            if not bindable(path):
                continue  # a symbolic link (or anything else) a command may have planted
        elif not os.path.exists(path):
            continue
        guarded.append(path)
    return guarded


def bindable(path: str) -> bool:
    """Is ``path`` (absolute) a real file or directory reached through no symbolic link?"""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return False
    return (stat.S_ISDIR(mode) or stat.S_ISREG(mode)) and os.path.realpath(path) == path


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _classify(
    root: str, path: str, name: str, is_dir: bool, is_link: bool, found: dict[str, Found], targets: bool
) -> bool:
    """Record ``name`` when it is protected (or holds protected children); ``True`` when it was."""
    rule = protected_rule(name)
    if rule is not None:
        _add(root, found, Found(path, rule, is_link, spec=VCS_SPECS.get(rule.pattern)), targets)
        return True
    nested = [r for r in _NESTED if protected_rule(f"{name}/{r.pattern.split('/')[1]}") is r]
    if not nested:
        return False
    if is_link:  # a linked .claude: the link itself is what must not change
        _add(root, found, Found(path, nested[0], True), targets)
    elif is_dir:
        with contextlib.suppress(OSError), os.scandir(os.path.join(root, path)) as listing:
            for child in listing:
                rule = protected_rule(f"{name}/{child.name}")
                if rule is not None:
                    _add(root, found, Found(f"{path}/{child.name}", rule, child.is_symlink(), 1), targets)
    return True


def _add(root: str, found: dict[str, Found], item: Found, targets: bool) -> None:
    found.setdefault(item.rel, item)
    if item.link and targets:  # what a protected link points at, when it is inside the root, is protected too
        real = os.path.realpath(os.path.join(root, item.rel))
        if real != root and real.startswith(root.rstrip("/") + "/") and os.path.lexists(real):
            target = os.path.relpath(real, root)
            found.setdefault(target, Found(target, item.rule, spec=item.spec))


def match_spec(spec: Spec, name: str) -> tuple[bool, Spec]:
    """Whether ``spec`` tracks the child ``name``, and the child's own spec."""
    if spec is None:
        return True, None
    if isinstance(spec, Matching):
        return any(fnmatchcase(name, pattern) for pattern in spec.patterns), None
    if isinstance(spec, AllBut):
        return (False, None) if name in spec.skip else (True, spec.named.get(name, spec))
    if name in spec:
        return True, spec[name]
    if "*" in spec:
        return True, spec["*"]
    return False, None


def coarse_now() -> int:
    """Now, on the clock Linux stamps files with (a file changed later has a ``ctime`` at least this)."""
    if sys.platform.startswith("linux"):
        return time.clock_gettime_ns(_CLOCK_REALTIME_COARSE)
    return time.time_ns()
