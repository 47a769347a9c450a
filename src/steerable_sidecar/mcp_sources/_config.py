"""The MCP servers to start: :class:`McpServerConfig`, read from a JSON file or ``STEERABLE_MCP_CONFIG``.

The file's shapes and rules are in ``docs/mcp-sources.md`` (Configuration); the public names are
re-exported by :mod:`steerable_sidecar.mcp_sources._sources`.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final

from steerable_agent_runtime.config import env_text
from steerable_agent_runtime.errors import ConfigError

from ..shared._secrets import Redactor, credential_arguments, credential_values

__all__ = [
    "MAX_MCP_CONFIG_BYTES",
    "MCP_CONFIG_ENV",
    "SERVER_NAME",
    "McpServerConfig",
    "config_credentials",
    "config_secrets",
    "expand_home",
    "known_credentials",
    "load_mcp_config",
    "load_mcp_config_from_env",
]

MCP_CONFIG_ENV: Final = "STEERABLE_MCP_CONFIG"
"""Path of a JSON file listing the MCP servers every entry point connects."""

MAX_MCP_CONFIG_BYTES: Final = 1_000_000
"""The largest MCP config file read, in bytes (a host's whole settings file fits many times)."""
SERVER_NAME: Final = re.compile(r"(?!.*__)[A-Za-z0-9_-]{1,32}")
"""A server name: 1-32 of ``[A-Za-z0-9_-]``, never ``__`` (it separates server and tool)."""

_ENTRY_KEYS: Final = frozenset({"name", "command", "args", "env", "type", "cwd"})


def expand_home(text: str, environ: Mapping[str, str] | None = None) -> str:
    """``text`` with a leading ``~`` or ``~user`` replaced by that home folder, as a shell would.

    A host starts a server without a shell, so nothing else expands ``~/bin/server``. ``~`` is
    ``HOME`` of ``environ`` (default ``os.environ``); ``~user`` is that user's home, and is left as
    it is when no such user exists here (the caller says so). Anything else is returned unchanged.
    """
    if not text.startswith("~"):
        return text
    user, slash, rest = text[1:].partition("/")
    if not user:
        home = (os.environ if environ is None else environ).get("HOME") or os.path.expanduser("~")
        return home.rstrip("/") + slash + rest if rest or slash else home
    return os.path.expanduser(text)


def _unexpanded(what: str, value: str) -> str:
    user = value[1:].split("/", 1)[0]
    return (
        f"{what} {value!r} starts with ~{user}, but there is no user {user!r} here: write the absolute path"
    )


@dataclass(frozen=True)
class McpServerConfig:
    """One stdio MCP server to start.

    Attributes:
        name: The server's name in tool names (``mcp__<name>__<tool>``): ``[A-Za-z0-9_-]+``.
        command: The executable (looked up on ``PATH`` when it has no directory part).
        args: Its command-line arguments.
        env: Extra environment variables, on top of the SDK's safe set: the server does not
            inherit ours (docs/mcp-sources.md, Configuration).
        cwd: The server's working directory (default: steerable's): an absolute path.

    A leading ``~`` or ``~user`` in ``command``, ``cwd`` and each of ``args`` is expanded
    (:func:`expand_home`), as a shell would have: hosts start servers without one.

    Raises:
        ConfigError: On an invalid name, an empty command, a ``~user`` naming no user, or a
            relative ``cwd``.
    """

    name: str
    command: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] | None = None
    cwd: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not SERVER_NAME.fullmatch(self.name):
            raise ConfigError(
                f"MCP server name {self.name!r} is invalid: "
                "use 1-32 letters, digits, '_' and '-', without '__'"
            )
        if not isinstance(self.command, str) or not self.command.strip():
            raise ConfigError(f"MCP server {self.name!r}: command must be a non-empty string")
        object.__setattr__(self, "command", expand_home(self.command))
        if self.command.startswith("~"):
            raise ConfigError(f"MCP server {self.name!r}: {_unexpanded('command', self.command)}")
        object.__setattr__(self, "args", tuple(expand_home(arg) for arg in self.args))
        if self.cwd is not None:
            if not isinstance(self.cwd, str) or not self.cwd.strip():
                raise ConfigError(f"MCP server {self.name!r}: cwd must be a non-empty string")
            cwd = expand_home(self.cwd)
            if cwd.startswith("~"):
                raise ConfigError(f"MCP server {self.name!r}: {_unexpanded('cwd', cwd)}")
            if not os.path.isabs(cwd):
                raise ConfigError(
                    f"MCP server {self.name!r}: cwd {self.cwd!r} must be an absolute path (or start with ~/)"
                )
            object.__setattr__(self, "cwd", cwd)
        if self.env is not None:
            object.__setattr__(self, "env", MappingProxyType(dict(self.env)))


def load_mcp_config(source: str | os.PathLike[str]) -> list[McpServerConfig]:
    """Read MCP server configs from a JSON file.

    Two shapes: a list ``[{"name", "command", "args"?, "env"?, "cwd"?, "type"?: "stdio"}, ...]``, or
    Claude Desktop's and Cursor's ``{"mcpServers": {name: {...}}}``; an unknown key or another
    transport is refused, never ignored (docs/mcp-sources.md, Configuration).

    Args:
        source: Path of the JSON file (a leading ``~`` is expanded).

    Returns:
        The servers, in file order (possibly none).

    Raises:
        ConfigError: The file cannot be read or parsed, or an entry is invalid; the message names
            the file and the entry.
    """
    path = Path(expand_home(os.fspath(source)))
    try:
        if path.exists() and not path.is_file():  # a FIFO would block the start, /dev/zero fill memory
            raise ConfigError(f"MCP config {path}: not a regular file")
        with path.open("rb") as handle:
            data = handle.read(MAX_MCP_CONFIG_BYTES + 1)
        if len(data) > MAX_MCP_CONFIG_BYTES:
            raise ConfigError(f"MCP config {path}: larger than {MAX_MCP_CONFIG_BYTES} bytes")
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"MCP config {path}: cannot read it ({exc})") from exc
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"MCP config {path}: not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})"
        ) from exc
    except (ValueError, RecursionError) as exc:  # a 5000-digit integer, nesting too deep
        raise ConfigError(f"MCP config {path}: not usable JSON ({exc or 'nested too deeply'})") from exc

    if isinstance(document, list):
        entries = [(f"entry {i}", entry, None) for i, entry in enumerate(document)]
    elif isinstance(document, dict) and isinstance(document.get("mcpServers"), dict):
        entries = [(f"server {name!r}", entry, name) for name, entry in document["mcpServers"].items()]
    else:
        raise ConfigError(
            f"MCP config {path}: expected a list of {{name, command, args, env}} objects or "
            '{"mcpServers": {name: {command, args, env}}}'
        )
    configs: list[McpServerConfig] = []
    seen: set[str] = set()
    for where, entry, keyed_name in entries:
        config = _config_entry(path, where, entry, keyed_name)
        if config.name in seen:
            raise ConfigError(f"MCP config {path}: {where}: server name {config.name!r} is used twice")
        seen.add(config.name)
        configs.append(config)
    return configs


def load_mcp_config_from_env(environ: Mapping[str, str] | None = None) -> list[McpServerConfig]:
    """Read the MCP config file named by :data:`MCP_CONFIG_ENV`; no servers when it is unset or empty.

    Args:
        environ: The environment to read (default ``os.environ``).

    Raises:
        ConfigError: As :func:`load_mcp_config`, the message also naming the variable.
    """
    value = env_text(MCP_CONFIG_ENV, environ)
    if value is None:
        return []
    try:
        return load_mcp_config(expand_home(value, environ))  # ~ as the deny-read set reads it
    except ConfigError as exc:
        raise ConfigError(f"{MCP_CONFIG_ENV}: {exc}") from exc


def config_secrets(environ: Mapping[str, str] | None = None) -> list[str]:
    """The ``env`` values of the servers :data:`MCP_CONFIG_ENV` names: credentials to keep out of text.

    Args:
        environ: The environment to read (default ``os.environ``).

    Returns:
        Every value of every server's ``env``, and the credentials in its ``args`` (``--token X``,
        ``--api-key=X``, URL passwords); none when the file is unset or unreadable (its error is
        reported where the servers are started).
    """
    try:
        servers = load_mcp_config_from_env(environ)
    except ConfigError:
        return []
    return [secret for server in servers for secret in config_credentials(server)]


def known_credentials(environ: Mapping[str, str] | None = None) -> Redactor:
    """Every credential steerable knows of in ``environ``, as a :class:`Redactor`.

    The credential-named variables and URL passwords (:func:`credential_values`), and the MCP
    servers' ``env`` values and ``args`` credentials (:func:`config_secrets`): what ``steerable
    mcp`` and ``steerable doctor`` keep out of what they print.
    """
    env = os.environ if environ is None else environ
    return Redactor.of([*credential_values(env), *config_secrets(env)])


def config_credentials(config: McpServerConfig) -> list[str]:
    """One server's credentials: its ``env`` values, and the ``--token VALUE`` kind in its ``args``."""
    return [*(config.env or {}).values(), *credential_arguments(config.args)]


def _config_entry(path: Path, where: str, entry: Any, keyed_name: str | None) -> McpServerConfig:
    def bad(problem: str) -> ConfigError:
        return ConfigError(f"MCP config {path}: {where}: {problem}")

    if not isinstance(entry, dict):
        raise bad(f"expected an object, got {type(entry).__name__}")
    allowed = _ENTRY_KEYS - {"name"} if keyed_name is not None else _ENTRY_KEYS
    unknown = sorted(set(entry) - allowed)
    if unknown:
        transport = " (only stdio servers, started by a command, are supported)" if "url" in unknown else ""
        raise bad(f"unknown key(s) {', '.join(map(repr, unknown))}{transport}; allowed: {sorted(allowed)}")
    if entry.get("type", "stdio") != "stdio":
        raise bad(f"type {entry['type']!r} is not supported; only stdio servers (a command) are")
    name = keyed_name if keyed_name is not None else entry.get("name")
    if not isinstance(name, str) or not SERVER_NAME.fullmatch(name):
        raise bad(
            f"name {name!r} is invalid: use 1-32 letters, digits, '_' and '-', without '__' "
            "(it separates the server from the tool in mcp__<server>__<tool>)"
        )
    command = entry.get("command")
    if not isinstance(command, str) or not command.strip():
        raise bad("command must be a non-empty string")
    args = entry.get("args", [])
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise bad("args must be a list of strings")
    env = entry.get("env")
    if env is not None and (
        not isinstance(env, dict)
        or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items())
    ):
        raise bad("env must be an object of string values")
    cwd = entry.get("cwd")
    if cwd is not None and (not isinstance(cwd, str) or not cwd.strip()):
        raise bad("cwd must be a non-empty string")
    try:
        return McpServerConfig(name=name, command=command, args=tuple(args), env=env, cwd=cwd)
    except ConfigError as exc:  # a ~user naming no user, a relative cwd: said for this file and entry
        raise bad(str(exc).removeprefix(f"MCP server {name!r}: ")) from None
