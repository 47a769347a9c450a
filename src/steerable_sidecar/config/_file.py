"""The user's configuration file: every ``STEERABLE_*`` setting, written down once.

A TOML file in the platform's configuration folder (:func:`default_config_path`:
``$XDG_CONFIG_HOME/steerable/config.toml``, else ``~/.config/steerable/config.toml``; macOS
``~/Library/Application Support/steerable/config.toml``; Windows ``%APPDATA%/steerable/config.toml``),
or the file ``STEERABLE_CONFIG`` names (``off`` reads none). Its keys are the variables' names
without ``STEERABLE_``, in lower case, at the top level::

    provider = "groq"
    model = "openai/gpt-oss-120b"
    api_key = "gsk_..."
    max_tokens = 4096
    thinking = "low"
    extra_headers = { X-Title = "my agent" }

Precedence, for every command: a flag, then the variable, then the file, then the default. A value
is read exactly as its variable would be (the same checks, the same messages), so a file holds
nothing a variable could not. An unknown key is an error naming the closest known one.

The file is never read from inside the workspace: a model that can write files must not be able
to change its own provider, key or policy. When the file lies in the workspace (``-w ~``), it is
ignored with a warning, unless ``STEERABLE_CONFIG_IN_WORKSPACE=1``; ``.config/steerable/`` is a
protected path besides. docs/configuration.md, "The configuration file", is the long form.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from steerable_agent_runtime.config import env_flag, env_text
from steerable_agent_runtime.errors import ConfigError

from ._names import CONFIG_ENV, CONFIG_IN_WORKSPACE_ENV

__all__ = [
    "CONFIG_ENV",
    "CONFIG_IN_WORKSPACE_ENV",
    "MAX_CONFIG_BYTES",
    "ConfigFile",
    "config_file_inside",
    "default_config_path",
    "read_config_file",
    "with_origins",
]

MAX_CONFIG_BYTES: Final = 1024 * 1024
_PREFIX: Final = "STEERABLE_"
_NOT_IN_FILE: Final = frozenset({CONFIG_ENV, CONFIG_IN_WORKSPACE_ENV})
"""Settings about the file itself: they can only be variables."""


@dataclass(frozen=True, slots=True)
class ConfigFile:
    """What the configuration file gave (``steerable doctor`` shows it).

    Attributes:
        path: The file looked for; ``None`` when ``STEERABLE_CONFIG=off``.
        found: Whether it exists.
        values: The variables it sets, by name (``STEERABLE_MODEL``), as text a variable would hold.
        ignored: Why it was not read although it exists (inside the workspace), else ``""``.
    """

    path: Path | None
    found: bool = False
    values: Mapping[str, str] = field(default_factory=dict)
    ignored: str = ""

    def applied(self, environ: Mapping[str, str]) -> dict[str, str]:
        """The values the file adds to ``environ``: those of variables unset (or empty) there."""
        return {name: value for name, value in self.values.items() if env_text(name, environ) is None}

    def origins(self, names: Iterable[str]) -> dict[str, str]:
        """Where the file set each of ``names`` (variables it gave): ``{name: "`key` in PATH"}``."""
        return {name: f"`{_key(name)}` in {self.path}" for name in names if name in self.values}


def _key(name: str) -> str:
    """The file's key for a variable: ``STEERABLE_MAX_TOKENS`` is ``max_tokens``."""
    return name.removeprefix(_PREFIX).lower()


def with_origins(message: str, origins: Mapping[str, str]) -> str:
    """``message`` (an error naming variables) with where each variable it names came from.

    ``STEERABLE_MAX_TOKENS='lots' must be ...`` becomes ``... (STEERABLE_MAX_TOKENS is
    `max_tokens` in ~/.config/steerable/config.toml)`` when the configuration file set it, so the
    user is sent to the line they wrote, not to a variable they never set.

    Args:
        message: The error's text.
        origins: Each variable set from somewhere else than the environment, and where
            (:meth:`ConfigFile.origins`).

    Returns:
        ``message``, with one note per variable it names (as a whole name) that ``origins`` has.
    """
    import re

    notes = [
        f"{name} is {origin}"
        for name, origin in origins.items()
        if re.search(rf"(?<![A-Z0-9_]){re.escape(name)}(?![A-Z0-9_])", message)
    ]
    return f"{message} ({'; '.join(notes)})" if notes else message


def default_config_path(environ: Mapping[str, str] | None = None) -> Path:
    """The platform's place for the file (module docstring); ``STEERABLE_CONFIG`` is not read here."""
    env = os.environ if environ is None else environ
    if sys.platform == "win32":  # pragma: no cover - Windows
        return Path(env.get("APPDATA") or Path.home() / "AppData" / "Roaming") / "steerable" / "config.toml"
    if sys.platform == "darwin":  # pragma: no cover - macOS
        return Path.home() / "Library" / "Application Support" / "steerable" / "config.toml"
    base = env.get("XDG_CONFIG_HOME", "").strip()
    root = (
        Path(base) if base and Path(base).is_absolute() else Path(env.get("HOME") or Path.home()) / ".config"
    )
    return root / "steerable" / "config.toml"


def read_config_file(
    environ: Mapping[str, str] | None = None, *, workspace: str | os.PathLike[str] | None = None
) -> ConfigFile:
    """Find and read the configuration file; nothing is changed (:meth:`ConfigFile.applied` merges).

    Args:
        environ: The environment (default ``os.environ``): ``STEERABLE_CONFIG``,
            ``STEERABLE_CONFIG_IN_WORKSPACE``, ``XDG_CONFIG_HOME``, ``HOME``.
        workspace: The command's workspace; a file inside it is ignored (module docstring).

    Returns:
        What the file gave; an absent default file is ``found=False`` with no values.

    Raises:
        ConfigError: Naming the file (and the key): a file ``STEERABLE_CONFIG`` names that does not
            exist, unreadable or invalid TOML, an unknown key, a value of the wrong type.
    """
    env = os.environ if environ is None else environ
    opted_in = env_flag(CONFIG_IN_WORKSPACE_ENV, False, environ=env)  # a bad value is an error at once
    named = env_text(CONFIG_ENV, env)
    if named is not None and named.lower() == "off":
        return ConfigFile(None)
    path = Path(named).expanduser() if named is not None else default_config_path(env)
    if not path.is_file():
        if named is not None:
            raise ConfigError(f"{CONFIG_ENV}={named!r} is not a file")
        return ConfigFile(path)
    if workspace is not None and _inside(path, Path(workspace)) and not opted_in:
        why = (
            f"it lies inside the workspace {workspace}, where a model could change its own provider, key "
            f"or policy; move it, or set {CONFIG_IN_WORKSPACE_ENV}=1"
        )
        return ConfigFile(path, found=True, ignored=why)
    from ._settings import VARIABLES  # the table: only once a file is there (start-up cost)

    table = _parsed(path)
    known = {_key(var.name): var for var in VARIABLES if var.name not in _NOT_IN_FILE}
    values: dict[str, str] = {}
    for key, value in table.items():
        var = known.get(key)
        if var is None:
            import difflib

            close = difflib.get_close_matches(key, list(known), n=1, cutoff=0.6)
            hint = (
                f"; did you mean {close[0]!r}?"
                if close
                else f"; keys are the STEERABLE_* names in lower case, without {_PREFIX}"
            )
            raise ConfigError(f"{path}: unknown key {key!r}{hint}")
        values[var.name] = _text(path, key, value, var.kind)
    return ConfigFile(path, found=True, values=values)


def _parsed(path: Path) -> dict[str, Any]:
    import tomllib  # only once a file is there (start-up: most runs have none)

    try:
        raw = path.read_bytes()[: MAX_CONFIG_BYTES + 1]
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{path}: larger than {MAX_CONFIG_BYTES} bytes")
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc})") from None


def _text(path: Path, key: str, value: Any, kind: str) -> str:
    """``value`` as the text its variable would hold (then read by the variable's own checks)."""
    where = f"{path}: {key}"
    if kind == "json":
        if not isinstance(value, dict):
            raise ConfigError(f'{where} must be a table ({key} = {{ name = "value" }})')
        return json.dumps(value)
    if kind == "list" and isinstance(value, list):
        if not all(isinstance(item, str) for item in value):
            raise ConfigError(f"{where} must be a list of strings")
        return ",".join(value)
    if isinstance(value, bool):
        return "1" if value else "0"
    if kind == "path" and isinstance(value, str) and value.strip():
        return _from_files_folder(path, key, value.strip())
    if isinstance(value, int | float | str):
        return str(value)
    raise ConfigError(f"{where} must be a string, a number or a boolean, not a {type(value).__name__}")


def _from_files_folder(path: Path, key: str, value: str) -> str:
    """A path the file gives, ``~`` expanded and a relative one taken from the file's folder.

    Not from the current directory: that is the workspace, where a model could put the file a
    relative path would then name. ``ripgrep``'s bare word (``rg`` on ``PATH``, ``off``) is kept.
    """
    if key == "ripgrep" and os.sep not in value:
        return value
    expanded = os.path.expanduser(value)
    return expanded if os.path.isabs(expanded) else str(path.parent / expanded)


def config_file_inside(folder: Path, environ: Mapping[str, str] | None = None) -> Path | None:
    """The configuration file in use when it lies inside ``folder`` and that is not opted into.

    For a workspace opened after the file was read (``steerable acp``'s sessions): a model working
    there could change the provider, key or policy of the next start.

    Returns:
        The file's path, or ``None`` (no file there, ``STEERABLE_CONFIG=off``, or
        ``STEERABLE_CONFIG_IN_WORKSPACE=1``).
    """
    env = os.environ if environ is None else environ
    named = env_text(CONFIG_ENV, env)
    if (named is not None and named.lower() == "off") or env_flag(
        CONFIG_IN_WORKSPACE_ENV, False, environ=env
    ):
        return None
    path = Path(named).expanduser() if named is not None else default_config_path(env)
    return path if path.is_file() and _inside(path, folder) else None


def _inside(path: Path, workspace: Path) -> bool:
    try:
        return path.resolve().is_relative_to(workspace.resolve())
    except OSError:
        return False
