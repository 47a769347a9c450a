"""The deny-read set in the file tools: what they neither read, list nor write (SAFE-3).

``bash`` and ``run_code`` cannot read the deny-read set (``sandbox/_deny.py``); the file tools run
in this process, so they keep out of it themselves, from the same set
(:func:`~steerable_agent_runtime.sandbox._deny.denials_for_files`). A path the model names in it,
or one resolving into it through a link, is refused with ``denied_path``; ``list_dir``, ``glob``
and ``grep`` leave its entries out without descending into them (ripgrep is told to exclude them,
and what it prints is filtered again) and say how many they left out. The entries are worked out
once, when the workspace opens; where none lies inside the workspace (a project folder rather
than ``~``, the usual case) each check is a test of an empty tuple.

Entries are names, and a command can rename a folder on the way to one (``mv .config cfg``). The
sandbox's guard puts it back after the command (``sandbox/_deny_moves.py``); while the command runs,
an entry is also refused where the command has put it (``displaced_entries``, found through the
handle the guard holds on it), and when it could not be put back every path is refused
(:meth:`DeniedPaths.refuse_displaced`) until the user has moved it back. docs/sandbox.md, "Deny-read".
"""

from __future__ import annotations

import os
import re
import sys
import time
import unicodedata
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Final

from ..errors import WorkspaceError
from ..sandbox._deny import DENY_READ_ENV, denials_for_files
from ._codes import FileErrorCode

__all__ = ["DENIED_FIELD", "DeniedPaths", "denied_error"]

DENIED_FIELD: Final = "deniedSkipped"
"""The result field of ``list_dir``, ``glob`` and ``grep`` counting the denied entries left out."""

_GLOB_SPECIAL: Final = re.compile(r"([\\*?\[\]{}])")


def _casefold(text: str) -> str:
    return unicodedata.normalize("NFC", text).casefold()


def _ignores_case(root: Path) -> bool:
    """Does the workspace's filesystem ignore case in names (macOS, Windows)? Asked of one name in it."""
    try:
        with os.scandir(root) as entries:
            probe = next((root / e.name for e in entries if e.name.swapcase() != e.name), None)
    except OSError:
        probe = None
    if probe is None and root.name.swapcase() != root.name:
        probe = root
    if probe is None:  # no name with a case to swap: as the platform's usual filesystem does
        return sys.platform in ("darwin", "win32")
    try:
        return os.path.samestat(os.lstat(probe), os.lstat(probe.parent / probe.name.swapcase()))
    except (OSError, ValueError):
        return False


class DeniedPaths:
    """The deny-read entries one workspace's file tools refuse, resolved once (SAFE-3).

    Args:
        root: The workspace's real path.
        deny_read: The configured set (``deny_read_from_env``).
        outside: The tools accept paths outside ``root``: entries there count too.
    """

    def __init__(self, root: Path, deny_read: Iterable[Path], *, outside: bool = False) -> None:
        self.root = root
        deny_read = tuple(deny_read)
        folds = bool(deny_read) and _ignores_case(root)
        self.fold: Callable[[str], str] = _casefold if folds else str
        self.entries: tuple[str, ...] = tuple(
            denials_for_files(deny_read, str(root), outside=outside, fold=self.fold if folds else None)
        )
        self._keys = tuple(self.fold(entry) for entry in self.entries)
        self._exact = frozenset(self._keys)
        self._prefixes = tuple(key + "/" for key in self._keys)  # one C-level startswith for all
        self._names: dict[str, set[str]] = {}  # folder (compared form) -> the denied names in it
        for key in self._keys:
            folder, _, name = key.rpartition("/")
            self._names.setdefault(folder or "/", set()).add(name)
        self._moved: tuple[str, float, frozenset[str]] | None = None  # see _moved_names

    def __bool__(self) -> bool:
        return bool(self.entries)

    def entry_for(self, path: str) -> str | None:
        """The entry ``path`` (absolute) is or lies in, as resolved; ``None`` when it is in none.

        An entry a command in flight has moved (its folder renamed) counts where it is now too.
        """
        if not self.entries:
            return None
        key = self.fold(path)
        if key in self._exact or key.startswith(self._prefixes):
            for entry, denied in zip(self.entries, self._keys, strict=True):
                if key == denied or key.startswith(denied + "/"):
                    return entry
        from ..sandbox._deny_moves import displaced_entries  # with entries: the guard's, loaded with it

        for where, entry in displaced_entries():  # empty unless a run with an entry inside is in flight
            moved = self.fold(where)
            if key == moved or key.startswith(moved + "/"):
                return entry
        return None

    def refuse_displaced(self, path: str) -> None:
        """Refuse ``path`` (any path) while an entry an earlier command moved could not be put back.

        Raises:
            WorkspaceError: ``denied_path``, naming what is away, where it is, and what the user does.
        """
        if not self.entries:
            return
        from ..sandbox._deny_moves import displaced_text, stuck

        displaced = stuck()
        if displaced:
            first = displaced[0].entries[0] if displaced[0].entries else displaced[0].original
            entry = os.path.relpath(first, self.root) if first.startswith(f"{self.root}/") else first
            raise WorkspaceError(
                FileErrorCode.DENIED_PATH,
                f"{path} was not looked at: {displaced_text(displaced)}",
                data={"path": path, "entry": entry},
            )

    def skips(self, folder: str, name: str) -> bool:
        """Is ``name`` in ``folder`` (a real path) a denied entry, to leave out of a listing?"""
        names = self._names.get(self.fold(folder)) if self._names else None
        if names is not None and self.fold(name) in names:
            return True
        return bool(self.entries) and self.fold(name) in self._moved_names(folder)

    def _moved_names(self, folder: str) -> frozenset[str]:
        """The names in ``folder`` of entries a run in flight moved there (kept 20 ms for one listing)."""
        kept = self._moved
        now = time.monotonic()
        if kept is not None and kept[0] == folder and now - kept[1] < 0.02:
            return kept[2]
        from ..sandbox._deny_moves import displaced_entries

        top = self.fold(folder).rstrip("/") + "/"
        moved = [
            self.fold(where)[len(top) :]
            for where, _ in displaced_entries()
            if self.fold(where).startswith(top)
        ]
        names = frozenset(rel for rel in moved if "/" not in rel)
        self._moved = (folder, now, names)
        return names

    def below(self, folder: str) -> list[str]:
        """The entries strictly below ``folder`` (a real path), relative to it (POSIX).

        With the entries a run in flight moved, where they are now.
        """
        if not self.entries:
            return []
        top = self.fold(folder).rstrip("/") + "/"
        depth = len(top.split("/")) - 1
        pairs = zip(self.entries, self._keys, strict=True)
        below = ["/".join(entry.split("/")[depth:]) for entry, key in pairs if key.startswith(top)]
        from ..sandbox._deny_moves import displaced_entries

        moved = [where for where, _ in displaced_entries() if self.fold(where).startswith(top)]
        return below + ["/".join(where.split("/")[depth:]) for where in moved]

    def walk_filter(self, folder: str) -> tuple[list[str], Callable[[str], bool] | None]:
        """The exclusions ripgrep gets for a walk of ``folder``, and a test of what it printed.

        Returns:
            ``--glob=!/entry`` flags (``--iglob`` where case is ignored) and a test of paths
            relative to ``folder`` (is one a denied entry or inside one?); ``([], None)`` when
            no entry lies below ``folder``.
        """
        below = self.below(folder)
        if not below:
            return [], None
        flag = "--iglob=!/" if self.fold is not str else "--glob=!/"
        keys = tuple(self.fold(rel) for rel in below)

        def hidden(rel: str) -> bool:
            key = self.fold(rel)
            return any(key == denied or key.startswith(denied + "/") for denied in keys)

        return [flag + _GLOB_SPECIAL.sub(r"\\\1", rel) for rel in below], hidden

    def skipped_below(self, folder: str, *, hidden: bool = True) -> int:
        """How many existing entries below ``folder`` a walk leaves out (``hidden``: dot names are walked)."""
        return sum(
            1
            for rel in self.below(folder)
            if (hidden or not any(part.startswith(".") for part in rel.split("/")))
            and os.path.lexists(os.path.join(folder, rel))
        )


def denied_error(path: str, via: str | None, entry: str) -> WorkspaceError:
    """The refusal of a path in the deny-read set.

    Args:
        path: The path as the model gave it.
        via: What it resolves to, when that differs (a link into the set), else ``None``.
        entry: The denied entry it is or lies in, as the model sees paths.

    Returns:
        ``denied_path``, naming the path, the entry and what the user can do.
    """
    resolved = f" (it resolves to {via})" if via is not None else ""
    return WorkspaceError(
        FileErrorCode.DENIED_PATH,
        f"{path}{resolved} is in the deny-read set ({entry}): the file tools do not read, list or write "
        f"it, and sandboxed commands cannot read it (SAFE-3). If the user wants it used, ask them to do it "
        f"themselves; the set is steerable's defaults (credentials, host configurations, its state "
        f'directory) plus {DENY_READ_ENV} (docs/sandbox.md, "Deny-read")',
        data={"path": path, "entry": entry},
    )
