"""``list_dir``: one folder's entries, a page at a time, read through a race-safe handle.

The folder is opened by walking ``O_NOFOLLOW`` handles down from the workspace root (a folder
swapped for a symlink is ``path_changed``, never followed) and listed with ``os.scandir`` on that
handle. The scan only tells folders from the rest, from the directory entry's ``d_type`` (a
``stat`` only where the filesystem gives none); the names are sorted, and only the page's
non-folder entries are ``lstat``-ed, through the same handle, for their type and size. So a call
on a folder of 5,000 entries costs one scan, one sort and at most ``limit`` ``stat`` calls, and no
``realpath``. Steerable's own entries and the deny-read set's are left out (the latter counted).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any, Final

from ..errors import WorkspaceError
from ._codes import FileErrorCode
from ._denied import DENIED_FIELD
from ._disk import open_directory
from ._paths import WorkspaceRoot, listing_text
from ._txn import is_internal_name

__all__ = ["DEFAULT_PAGE", "MAX_PAGE", "directory", "list_dir"]

DEFAULT_PAGE: Final = 1000
"""Entries one ``list_dir`` call returns when no ``limit`` is given."""

MAX_PAGE: Final = 1000
"""Most entries one ``list_dir`` call returns (``limit``'s ceiling)."""

_INTERNAL_PREFIX: Final = ".steerable"  # every internal name starts so (``is_internal_name``)


def directory(root: WorkspaceRoot, path: str) -> tuple[Path, str]:
    """Resolve ``path`` to a folder inside the workspace: its real path and its display path.

    Raises:
        WorkspaceError: The path codes of :meth:`WorkspaceRoot.resolve`; ``file_not_found`` when it
            does not exist, ``not_a_directory`` when it is not a folder.
    """
    real = root.resolve(path)
    display = root.display(real)
    if not real.exists():
        raise WorkspaceError(
            FileErrorCode.FILE_NOT_FOUND,
            f"{display} does not exist; find the right path with list_dir or glob",
            data={"path": display},
        )
    if not real.is_dir():
        raise WorkspaceError(
            FileErrorCode.NOT_A_DIRECTORY, f"{display} is not a directory", data={"path": display}
        )
    return real, display


def list_dir(
    root: WorkspaceRoot, path: str = ".", offset: int = 0, limit: int = DEFAULT_PAGE
) -> dict[str, Any]:
    """List one page of a folder: directories first, then every other entry, each group by name.

    The order is by the name's code points, so it is the same from call to call while the folder
    does not change (``total`` changes when it does); ``offset`` and ``limit`` cut the page.

    Args:
        root: The workspace.
        path: The folder, workspace-relative.
        offset: Entries to skip (0-based): the ``nextOffset`` of the page before.
        limit: Most entries returned (1 to :data:`MAX_PAGE`).

    Returns:
        ``{path, total, truncated, nextOffset?, deniedSkipped?, entries: [{name, type, size?,
        notUtf8?}]}``: ``total`` counts every entry listed; ``truncated`` is true when entries
        follow this page, and ``nextOffset`` (only then) is the ``offset`` that lists them; the
        entries come last, so a host that keeps only the start of a long result keeps the paging
        hint. ``type`` is file, dir, symlink or other; ``size`` in bytes for files; a name that is
        not UTF-8 is shown with U+FFFD and ``notUtf8: true``. ``deniedSkipped``: how many entries
        of the deny-read set were left out (SAFE-3), when any. An entry removed between the scan
        and its ``stat`` is left out of the page (``nextOffset`` still counts it).

    Raises:
        WorkspaceError: ``invalid_range`` when ``offset`` is past the last entry; the codes of
            :func:`directory`; ``path_changed`` when a folder on the way became a symlink.
    """
    real, display = directory(root, path)
    dirs: list[str] = []
    others: list[str] = []
    add_dir, add_other = dirs.append, others.append
    denied, folder, skips = 0, str(real), root.denied.skips if root.denied else None
    with open_directory(root.path, real, display) as fd:
        with os.scandir(fd) as it:
            for entry in it:
                name = entry.name
                if name.startswith(_INTERNAL_PREFIX) and is_internal_name(name):
                    continue
                if skips is not None and skips(folder, name):
                    denied += 1
                    continue
                # d_type answers without a system call (a stat only where the filesystem gives none)
                if entry.is_dir(follow_symlinks=False):
                    add_dir(name)
                else:
                    add_other(name)
        total = len(dirs) + len(others)
        if offset and offset >= total:
            raise WorkspaceError(
                FileErrorCode.INVALID_RANGE,
                f"offset {offset} is past the end of {display} ({total} entries)",
                data={"path": display, "total": total},
            )
        dirs.sort()
        others.sort()
        end = min(offset + limit, total)
        page_dirs = dirs[offset:end]
        first_other = max(offset - len(dirs), 0)
        page_others = others[first_other : first_other + end - offset - len(page_dirs)]
        entries = [{"name": n, "type": "dir"} if n.isascii() else _item(n, "dir") for n in page_dirs]
        add = entries.append
        for name in page_others:
            try:  # one lstat through the folder's handle: the type and the size
                info = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:  # removed since the scan
                continue
            if stat.S_ISREG(info.st_mode) and name.isascii():  # the common case, without a call
                add({"name": name, "type": "file", "size": info.st_size})
            else:
                add(_item(name, _KINDS.get(stat.S_IFMT(info.st_mode), "other"), info.st_size))
    result: dict[str, Any] = {"path": display, "total": total, "truncated": end < total}
    if end < total:
        result["nextOffset"] = end
    if denied:
        result[DENIED_FIELD] = denied
    result["entries"] = entries
    return result


_KINDS: Final = {stat.S_IFREG: "file", stat.S_IFDIR: "dir", stat.S_IFLNK: "symlink"}


def _item(raw: str, kind: str, size: int = 0) -> dict[str, Any]:
    """One entry as the model sees it (``size`` only for a file)."""
    name = listing_text(raw)
    item: dict[str, Any] = {"name": name, "type": kind}
    if name != raw:
        item["notUtf8"] = True
    if kind == "file":
        item["size"] = size
    return item
