"""The one rule for the folder a command opens as its workspace (README, "The workspace").

Every command that opens a workspace follows it: ``tools``, ``call``, ``session``, ``plugins``,
``run``, ``sidecar`` and ``mcp`` at start (:func:`refuse_workspace`, from ``steerable_sidecar.cli._main``),
``acp`` for the folder each session opens (``acp._inputs.session_workspace``), and ``doctor`` reports
it. Whether it is the current directory or named by ``--workspace``, the workspace may not be:

- ``/``, the file system's root;
- a home folder (``$HOME`` and every person's account entry) or a folder above one (``/home``,
  ``/Users``): the model would get a whole disk or a person's files, steerable's own records
  among them;
- a folder that holds steerable's state directory, or lies inside it: the model could forge the
  session records that a later resume replays as real.

A refused workspace ends the command with exit 2 and one message naming the fix (open a project
folder, or pass ``--workspace DIR``). The one exception is the container posture
(``STEERABLE_SANDBOX=container``, docs/sandbox.md): there the container is the boundary, and an
eval task's workspace may be ``/``, ``/app`` or root's home.

Importing this module is cheap: no third-party import (``steerable call``'s start-up).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

from steerable_agent_runtime.config import default_state_dir, env_text

__all__ = ["container_posture", "person_homes", "refused_folder", "workspace_refusal"]

_CONTAINER: Final = "container"
"""``STEERABLE_SANDBOX``'s value for the container posture (``SandboxConfig.container``)."""
_SANDBOX_ENV: Final = "STEERABLE_SANDBOX"
_WITH_STATE_DIR_FLAG: Final = frozenset({"run", "sidecar", "acp", "doctor"})
"""The commands that take ``--state-dir``."""
_WHOLE: Final = "steerable will not give a model a whole disk or a home folder"
_FORGE: Final = "a model working there could forge the session records kept in it"
_MCP_FIX: Final = (
    'Name a project folder instead: --workspace DIR (in the host\'s configuration: "args": '
    '["mcp", "--workspace", "/path/to/project"])'
)
_FIX: Final = "Open a project folder instead: cd into it, or pass --workspace DIR"
_EDITOR_FIX: Final = "Open a project folder in the editor instead"


def _fix(command: str) -> str:
    return {"mcp": _MCP_FIX, "acp": _EDITOR_FIX}.get(command, _FIX)


def _state_fix(command: str) -> str:
    how = "STEERABLE_STATE_DIR"
    if command in _WITH_STATE_DIR_FLAG:
        how = f"--state-dir DIR or {how}"
    return f"{_fix(command)}; or move the state directory ({how})"


def _real(path: str | os.PathLike[str]) -> Path:
    """``path`` absolute, its links followed; a link loop is left as it is (``Path.resolve`` raises)."""
    return Path(os.path.realpath(path))


def container_posture(environ: Mapping[str, str] | None = None) -> bool:
    """Whether ``STEERABLE_SANDBOX=container``: the container is the boundary, any folder may be opened."""
    return (env_text(_SANDBOX_ENV, environ) or "").lower() == _CONTAINER


def person_homes(environ: Mapping[str, str] | None = None) -> list[Path]:
    """``$HOME`` (when set to an absolute path), this account's home and every person's, resolved.

    Every person's (root and uids from 500, the first uid of people on macOS; Linux starts at
    1000), not only this one's: root started in ``/home`` or in another user's home would hand
    the model that user's files, and an empty or wrong ``$HOME`` does not get around the rule.
    Service accounts (``/usr/sbin``, ``/var/www``) are left out.
    """
    found: list[Path] = []
    home = (os.environ if environ is None else environ).get("HOME", "")
    if os.path.isabs(home):
        found.append(_real(home))
    try:
        import pwd

        entries = [pwd.getpwuid(os.getuid()), *pwd.getpwall()]
    except (ImportError, KeyError, OSError):  # no passwd entry for this uid
        return found
    for entry in entries:
        person = entry.pw_uid == 0 or 500 <= entry.pw_uid < 65534 or entry.pw_uid == os.getuid()
        if person and os.path.isabs(entry.pw_dir) and entry.pw_dir != "/":
            found.append(_real(entry.pw_dir))
    return found


def refused_folder(
    root: Path, *, command: str, state_dir: Path, homes: Sequence[Path] | None = None
) -> str | None:
    """Why ``root`` (resolved) may not be a workspace, ending with the fix; ``None`` when it may.

    The words after ``the workspace ROOT (...)``: ``is the file system's root; ...``. The
    container posture is not looked at here (:func:`workspace_refusal` does).

    Args:
        root: The workspace, resolved.
        command: The command's name (``mcp`` and ``acp`` word the fix their way).
        state_dir: Steerable's state directory (resolved here).
        homes: Home folders, resolved (default :func:`person_homes`).
    """
    fix = _fix(command)
    if root == Path(root.anchor):
        return f"is the file system's root; {_WHOLE}. {fix}"
    for home in person_homes() if homes is None else homes:
        if root == home:
            return f"is a home folder; {_WHOLE}. {fix}"
        if root in home.parents:
            return f"is above the home folder {home}; {_WHOLE}. {fix}"
    state = _real(state_dir.expanduser())
    if root == state or state.is_relative_to(root):
        where = "is" if root == state else "holds"
    elif root.is_relative_to(state):
        where = "is inside"
    else:
        return None
    return f"{where} steerable's state directory {state}; {_FORGE}. {_state_fix(command)}"


def workspace_refusal(
    workspace: str | None,
    *,
    command: str,
    state_dir: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
    homes: Sequence[Path] | None = None,
) -> str | None:
    """Why ``command`` may not open its workspace, or ``None``: the message after ``steerable COMMAND:``.

    Args:
        workspace: ``--workspace`` as given (``None``: the current directory).
        command: The command's name.
        state_dir: ``--state-dir`` as given (``None``: ``STEERABLE_STATE_DIR``, else the XDG default).
        environ: The environment (default ``os.environ``).
        homes: Home folders, resolved (default :func:`person_homes`).
    """
    if workspace is not None and not workspace.strip():
        return f"--workspace is empty. {_fix(command)}"
    try:
        cwd: Path | None = _real(os.getcwd())
    except OSError:  # the current directory was deleted
        cwd = None
    if cwd is None and not (workspace and os.path.isabs(workspace)):
        return f"the current directory no longer exists. {_fix(command)}"
    if container_posture(environ):
        return None
    if workspace is None:
        assert cwd is not None
        root, origin = cwd, "the current directory"
    else:
        root = _real(Path(workspace) if cwd is None else cwd / workspace)
        origin = "--workspace" if workspace == str(root) else f"--workspace {workspace}"
    state = Path(state_dir) if state_dir else default_state_dir(environ)
    why = refused_folder(root, command=command, state_dir=state, homes=homes)
    return None if why is None else f"the workspace {root} ({origin}) {why}"
