"""Confinement of model-supplied paths to the workspace root.

A path is accepted when, after resolving ``..`` and every symlink that exists, it lies under the
root's real path. Relative paths are taken from the root; absolute paths must already be under it.
A symlink inside the workspace that points outside is refused like ``..`` is, and a path in the
deny-read set (named so, or resolving into it) is refused too (:mod:`._denied`, SAFE-3).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from ..errors import PathEscapeError, WorkspaceError
from ._codes import FileErrorCode
from ._denied import DeniedPaths, denied_error

__all__ = ["WorkspaceRoot", "listing_text"]

_MAX_PATH_BYTES = 4096
_MAX_NAME_BYTES = 255


def listing_text(raw: str) -> str:
    """A path as listings show it: bytes that are not UTF-8 (surrogate-escaped) become U+FFFD."""
    try:
        raw.encode("utf-8")
    except UnicodeEncodeError:
        return raw.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return raw


class WorkspaceRoot:
    """The directory file tools are confined to.

    Args:
        root: The workspace directory; it must exist.
        allow_outside: Accept paths outside the root (for runs already jailed by the host).
        deny_read: The deny-read set (``deny_read_from_env``): paths in it are refused (SAFE-3).

    Attributes:
        denied: The entries of ``deny_read`` these tools can reach, resolved once.

    Raises:
        WorkspaceError: ``code="invalid_workspace"`` when ``root`` is not a directory.
    """

    def __init__(
        self, root: str | os.PathLike[str], *, allow_outside: bool = False, deny_read: Iterable[Path] = ()
    ) -> None:
        real = Path(os.path.realpath(root))
        if not real.is_dir():
            from ..config import tilde_problem

            raise WorkspaceError(
                FileErrorCode.INVALID_WORKSPACE,
                f"workspace {str(root)!r} is not a directory{tilde_problem(os.fspath(root))}",
            )
        self.path = real
        self.allow_outside = allow_outside
        self.denied = DeniedPaths(real, deny_read, outside=allow_outside)

    def resolve(self, path: str) -> Path:
        """Resolve a model-supplied path to a real absolute path inside the workspace.

        Args:
            path: Relative to the root, or absolute under it.

        Returns:
            The resolved path (symlinks followed as far as they exist).

        Raises:
            WorkspaceError: ``code="invalid_path"`` for an empty path or one with a NUL byte;
                ``code="denied_path"`` for a path in the deny-read set, or resolving into it.
            PathEscapeError: ``code="path_outside_workspace"`` when the path leaves the root.
        """
        if not isinstance(path, str) or not path.strip() or "\x00" in path:
            raise WorkspaceError(
                FileErrorCode.INVALID_PATH, f"invalid path {path!r}: give a non-empty relative path"
            )
        try:
            encoded = path.encode("utf-8")
        except UnicodeEncodeError:
            raise WorkspaceError(
                FileErrorCode.INVALID_PATH,
                f"invalid path {path!r}: it is not valid Unicode (a file whose name is not UTF-8 on disk "
                "cannot be addressed by the file tools; use bash for it)",
            ) from None
        if len(encoded) > _MAX_PATH_BYTES or any(len(part) > _MAX_NAME_BYTES for part in encoded.split(b"/")):
            raise WorkspaceError(
                FileErrorCode.INVALID_PATH,
                f"path too long ({len(encoded)} bytes; at most {_MAX_PATH_BYTES} in all and "
                f"{_MAX_NAME_BYTES} per name)",
            )
        candidate = Path(path).expanduser() if path.startswith("~") and self.allow_outside else Path(path)
        joined = candidate if candidate.is_absolute() else self.path / candidate
        lexical = os.path.normpath(joined)
        if self.denied:  # by the name given first: no "not a directory" or "not found" tells what is there
            self.denied.refuse_displaced(path)  # a command moved a secret that could not be put back
            self._not_denied(path, lexical, lexical)
        self._no_path_through_a_file(path)
        try:
            real = Path(os.path.realpath(joined))
        except (OSError, ValueError) as exc:
            raise WorkspaceError(FileErrorCode.INVALID_PATH, f"cannot resolve {path!r}: {exc}") from None
        if not self.allow_outside and not real.is_relative_to(self.path):
            raise PathEscapeError(
                FileErrorCode.PATH_OUTSIDE_WORKSPACE,
                f"{path!r} resolves outside the workspace {str(self.path)!r}; "
                "use a path inside the workspace (symlinks leaving it are refused too)",
                data={"path": path},
            )
        if self.denied:
            self._not_denied(path, str(real), lexical)
        return real

    def _not_denied(self, path: str, checked: str, lexical: str) -> None:
        """Refuse ``path`` when ``checked`` (its ``lexical`` form, or what it resolves to) is denied."""
        entry = self.denied.entry_for(checked)
        if entry is not None:
            via = None if checked == lexical else self.listing_name(Path(checked))
            raise denied_error(path, via, self.listing_name(Path(entry)))

    def _no_path_through_a_file(self, path: str) -> None:
        """Refuse ``file.txt/.`` or ``file.txt/x/..``, which the OS would call "not a directory"."""
        prefix = "/" if path.startswith("/") else str(self.path)
        components = [c for c in path.split("/") if c]
        for component in components[:-1]:
            prefix = os.path.join(prefix, component)
            if os.path.lexists(prefix) and not os.path.isdir(prefix):
                raise WorkspaceError(
                    FileErrorCode.NOT_A_DIRECTORY,
                    f"{path!r}: {component!r} is a file, so nothing can be inside it",
                    data={"path": path},
                )

    def symlink_target(self, path: str) -> str | None:
        """Return where ``path`` points when its last component is itself a symlink, else ``None``.

        The parent directories are resolved; only the final name is looked at without following it.

        Raises:
            WorkspaceError: ``denied_path`` for a path named in the deny-read set (nothing is looked at).
        """
        candidate = Path(path)
        lexical = candidate if candidate.is_absolute() else self.path / candidate
        if self.denied:
            self.denied.refuse_displaced(path)
            named = os.path.normpath(lexical)
            self._not_denied(path, named, named)
        try:
            final = Path(os.path.realpath(lexical.parent)) / lexical.name
            if not final.is_symlink():
                return None
            return self.display(Path(os.path.realpath(final)))
        except (OSError, ValueError):
            return None

    def display(self, real: Path) -> str:
        """Return the path the model and the durable record see: root-relative POSIX, else absolute.

        Raises:
            WorkspaceError: ``invalid_path`` when the path is not valid UTF-8 (a symlink leading to a
                name that is not UTF-8): such a path could not be written back by the model.
        """
        shown = self._raw_display(real)
        try:
            shown.encode("utf-8")
        except UnicodeEncodeError:
            raise WorkspaceError(
                FileErrorCode.INVALID_PATH,
                f"{self.listing_name(real)} leads to a file whose name is not UTF-8; the file tools "
                "cannot address it (use bash for it)",
            ) from None
        return shown

    def listing_name(self, real: Path) -> str:
        """Like :meth:`display`, but a name that is not UTF-8 is shown with U+FFFD (for listings)."""
        return listing_text(self._raw_display(real))

    def _raw_display(self, real: Path) -> str:
        if real.is_relative_to(self.path):
            return real.relative_to(self.path).as_posix() or "."
        return real.as_posix()
