"""MCP servers as tool sources: connect stdio MCP servers and register their tools on a router.

Beyond the spec (issue 4, section 4); the user guide is ``docs/mcp-sources.md``. The official
``mcp`` SDK is imported inside the functions that need it (about 0.7 s), so importing this module
stays cheap.

* Naming: server ``s``'s tool ``t`` is registered as ``mcp__s__t`` (:func:`mcp_tool_name`); the call
  reaches the server under ``t``, its original name.
* Tier: ``deferred`` by default, so ``tool_search`` finds the tools and the offered list stays small.
* Mode: :func:`~steerable_agent_runtime.modes.mode_from_annotations` on the server's *original*
  tool name (MODE-4): hints that say something decide, otherwise the spec's name rules on ``t``,
  otherwise ``local``.
* Results: ``isError`` is a failure with ``needsFollowup``; ``structuredContent`` becomes ``data``;
  text becomes ``data.text`` (:func:`call_tool_result`).
* Failures: a server that cannot start (or publishes an unusable tool) raises
  :class:`~steerable_agent_runtime.errors.McpServerError` naming it, and nothing stays registered.
  A server that dies later gives failed results (``data.code == "mcp_server_unavailable"``,
  ``needsFollowup``) and every call is bounded by ``call_timeout_ms``.
* Lifetime: each connection is owned by one long-lived task that enters and exits the SDK client
  (its anyio task groups require both in the same task); calls are made from any task.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import re
import threading
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType, TracebackType
from typing import TYPE_CHECKING, Any, Final, Literal

from steerable_agent_runtime.config import env_text
from steerable_agent_runtime.errors import ConfigError, DuplicateToolError, McpServerError, UserError
from steerable_agent_runtime.modes import mode_from_annotations
from steerable_agent_runtime.tools import Tool, ToolExposure, ToolHandler, ToolRouter
from steerable_agent_runtime.types import ToolResult

from ._secrets import Redactor, credential_arguments, credential_values
from .boot import MCP_CONFIG_ENV

if TYPE_CHECKING:
    from mcp import Client
    from mcp_types import CallToolResult

__all__ = [
    "MAX_MCP_CONFIG_BYTES",
    "MCP_CONFIG_ENV",
    "MCP_TOOL_PREFIX",
    "McpServerConfig",
    "McpServerError",
    "McpToolSources",
    "call_tool_result",
    "config_secrets",
    "known_credentials",
    "load_mcp_catalogue",
    "load_mcp_config",
    "load_mcp_config_from_env",
    "mcp_tool_name",
]

logger = logging.getLogger(__name__)

MCP_TOOL_PREFIX: Final = "mcp__"
"""Every MCP tool's registered name starts with this, then ``<server>__<tool>``."""
MAX_MCP_CONFIG_BYTES: Final = 1_000_000
"""The largest MCP config file read, in bytes (a host's whole settings file fits many times)."""
DEFAULT_CALL_TIMEOUT_MS: Final = 120_000
"""Default bound on one tool call, in milliseconds (2 minutes)."""
DEFAULT_CONNECT_TIMEOUT_MS: Final = 30_000
"""Default bound on starting a server and listing its tools, in milliseconds (30 s)."""

_SERVER_NAME: Final = re.compile(r"(?!.*__)[A-Za-z0-9_-]{1,32}")
"""A server name: 1-32 of ``[A-Za-z0-9_-]``, never ``__`` (it separates server and tool)."""

MAX_TOOL_NAME_CHARS: Final = 64
"""OpenAI-compatible APIs refuse longer function names; longer MCP names are shortened."""
_NOT_NAME_CHAR: Final = re.compile(r"[^A-Za-z0-9_-]")
_ENTRY_KEYS: Final = frozenset({"name", "command", "args", "env", "type"})
_LIST_PAGE_CAP: Final = 100  # tools/list pages followed at most: a paginator that never ends cannot hang boot
_CALL_GRACE_S: Final = 1.0  # our own deadline backstops the SDK's by this much
_ROUTER_GRACE_MS: Final = 5_000  # and the router's deadline backstops ours
_CLOSE_TIMEOUT_S: Final = (
    15.0  # the SDK's stdio shutdown is bounded (about 6 s worst case); never wait forever
)
_STDERR_TAIL_LINES: Final = 20
_STDERR_TAIL_CHARS: Final = 2_000

ServerState = Literal["starting", "connected", "dead", "closed"]


# -- configuration ------------------------------------------------------------------------------


@dataclass(frozen=True)
class McpServerConfig:
    """One stdio MCP server to start.

    Attributes:
        name: The server's name in tool names (``mcp__<name>__<tool>``): ``[A-Za-z0-9_-]+``.
        command: The executable (looked up on ``PATH`` when it has no directory part).
        args: Its command-line arguments.
        env: Extra environment variables. The server does not inherit ours: it gets the SDK's
            safe set (``HOME``, ``LOGNAME``, ``PATH``, ``SHELL``, ``TERM``, ``USER`` on POSIX) plus
            these, so no ``STEERABLE_*`` key or token leaks to it.

    Raises:
        ConfigError: On an invalid name or an empty command.
    """

    name: str
    command: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _SERVER_NAME.fullmatch(self.name):
            raise ConfigError(
                f"MCP server name {self.name!r} is invalid: "
                "use 1-32 letters, digits, '_' and '-', without '__'"
            )
        if not isinstance(self.command, str) or not self.command.strip():
            raise ConfigError(f"MCP server {self.name!r}: command must be a non-empty string")
        object.__setattr__(self, "args", tuple(self.args))
        if self.env is not None:
            object.__setattr__(self, "env", MappingProxyType(dict(self.env)))


def load_mcp_config(source: str | os.PathLike[str]) -> list[McpServerConfig]:
    """Read MCP server configs from a JSON file.

    Two shapes are accepted: a list ``[{"name", "command", "args"?, "env"?}, ...]``, or the
    ``{"mcpServers": {name: {"command", "args"?, "env"?}}}`` object that Claude Desktop and Cursor
    use (other top-level keys there belong to the host application and are ignored). An entry may
    say ``"type": "stdio"``; other keys in an entry (and other transports) are refused rather than
    ignored, so a typo never silently drops an argument.

    Args:
        source: Path of the JSON file.

    Returns:
        The servers, in file order (possibly none).

    Raises:
        ConfigError: The file cannot be read or parsed, or an entry is invalid; the message names
            the file and the entry.
    """
    path = Path(source)
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
        return load_mcp_config(value)
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
    return [secret for server in servers for secret in _config_credentials(server)]


def known_credentials(environ: Mapping[str, str] | None = None) -> Redactor:
    """Every credential steerable knows of in ``environ``, as a :class:`Redactor`.

    The credential-named variables and URL passwords (:func:`credential_values`), and the MCP
    servers' ``env`` values and ``args`` credentials (:func:`config_secrets`): what ``steerable
    mcp`` and ``steerable doctor`` keep out of what they print.
    """
    env = os.environ if environ is None else environ
    return Redactor.of([*credential_values(env), *config_secrets(env)])


def _config_credentials(config: McpServerConfig) -> list[str]:
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
    if not isinstance(name, str) or not _SERVER_NAME.fullmatch(name):
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
    return McpServerConfig(name=name, command=command, args=tuple(args), env=env)


# -- naming, modes and results ------------------------------------------------------------------


def mcp_tool_name(server: str, tool: str) -> str:
    """Return the registered name of ``server``'s tool ``tool``: ``mcp__<server>__<tool>``.

    Characters outside ``[A-Za-z0-9_-]`` in the tool name become ``_`` (model APIs accept only
    those), and a name over 64 characters is cut to 55 plus ``_`` and 8 hex digits of the tool
    name's SHA-256 (OpenAI rejects longer function names); the server is still called with the
    original name.
    """
    name = f"{MCP_TOOL_PREFIX}{server}__{_NOT_NAME_CHAR.sub('_', tool)}"
    if len(name) <= MAX_TOOL_NAME_CHARS:
        return name
    digest = hashlib.sha256(tool.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{name[: MAX_TOOL_NAME_CHARS - 9]}_{digest}"


def _build_tool(
    server: str,
    definition: Mapping[str, Any],
    handler: ToolHandler,
    *,
    exposure: ToolExposure | str,
    timeout_ms: int | None,
) -> Tool:
    """A :class:`Tool` from an MCP tool definition in its wire form (camelCase keys).

    Raises:
        UserError: When the definition has no name or an unusable input schema.
    """
    original = definition.get("name")
    if not isinstance(original, str) or not original:
        raise UserError(f"a tool of MCP server {server!r} has no name")
    schema = definition.get("inputSchema")
    if not isinstance(schema, dict):
        raise UserError(f"MCP tool {original!r}: inputSchema is not an object")
    annotations = definition.get("annotations")
    hints = annotations if isinstance(annotations, dict) else None
    description = definition.get("description") or definition.get("title") or (hints or {}).get("title") or ""
    kept = dict(hints or {})
    if isinstance(definition.get("title"), str):
        kept["title"] = definition["title"]  # the tool-level title wins (MCP 2025-06-18, tools)
    return Tool.from_schema(
        mcp_tool_name(server, original),
        schema,
        handler,
        description=str(description),
        mode=mode_from_annotations(original, hints),
        exposure=exposure,
        timeout_ms=timeout_ms,
        annotations=kept or None,
    )


def call_tool_result(result: CallToolResult, *, server: str, tool: str) -> ToolResult:
    """Map an MCP ``CallToolResult`` onto a :class:`ToolResult`.

    * ``isError: true``: ``success: false, needsFollowup: true`` (MCP reports tool errors in the
      result precisely so the model can self-correct); ``error`` is the text content, ``data`` is
      ``{"code": "mcp_tool_error", "server", "tool"}`` plus ``structured`` when the server sent
      ``structuredContent``.
    * Otherwise ``success: true`` and ``data`` is the ``structuredContent`` (an object as is, any
      other JSON value as ``{"value": ...}``); the text blocks are then left out, since MCP has
      them carry the same content serialised. Without ``structuredContent``, ``data.text`` is the
      text blocks joined by newlines and ``data.content`` lists any other blocks (images and
      audio without their base64 payload, which a text transcript cannot use: ``bytes`` gives
      its decoded size). No content at all gives ``{"success": true}``.
    * ``message`` (user-facing text) is never set: MCP has no such notion.

    Args:
        result: The SDK's result.
        server: The server name (for the error's ``data``).
        tool: The tool's original name (for the error's ``data``).
    """
    texts = [block.text for block in result.content if block.type == "text"]
    if result.is_error:
        data: dict[str, Any] = {"code": "mcp_tool_error", "server": server, "tool": tool}
        if result.structured_content is not None:
            data["structured"] = result.structured_content
        text = "\n".join(texts).strip()
        return ToolResult(
            success=False,
            needs_followup=True,
            error=text or f"MCP tool {tool!r} of server {server!r} reported an error without a message",
            data=data,
        )
    structured = result.structured_content
    if structured is not None:
        return ToolResult.success_with(structured if isinstance(structured, dict) else {"value": structured})
    payload: dict[str, Any] = {}
    if texts:
        payload["text"] = "\n".join(texts)
    others = [
        _summarise_block(block.model_dump(by_alias=True, exclude_none=True)) for block in result.content
    ]
    others = [block for block in others if block["type"] != "text"]
    if others:
        payload["content"] = others
    return ToolResult.success_with(payload or None)


def _summarise_block(block: dict[str, Any]) -> dict[str, Any]:
    """A content block without base64 payloads (image/audio ``data``, a resource's ``blob``)."""
    if block.get("type") in ("image", "audio") and isinstance(block.get("data"), str):
        encoded = block.pop("data")
        block["bytes"] = _decoded_size(encoded)
    resource = block.get("resource")
    if isinstance(resource, dict) and isinstance(resource.get("blob"), str):
        resource = dict(resource)
        resource["bytes"] = _decoded_size(resource.pop("blob"))
        block["resource"] = resource
    return block


def _decoded_size(encoded: str) -> int:
    stripped = encoded.strip()
    return len(stripped) * 3 // 4 - stripped[-2:].count("=")


def _failure(code: str, error: str, *, server: str, tool: str, **extra: Any) -> ToolResult:
    return ToolResult(
        success=False,
        needs_followup=True,
        error=error,
        data={"code": code, "server": server, "tool": tool, **extra},
    )


# -- the catalogue ------------------------------------------------------------------------------


def load_mcp_catalogue(
    path: str | os.PathLike[str], *, exposure: ToolExposure | str = ToolExposure.DEFERRED
) -> list[Tool]:
    """Load MCP tool definitions from an inventory file as schema-only tools (nothing is started).

    For search and mode tests over real definitions: the ``tests/data/peer/mcp-inventories`` files,
    either one ``*.json`` inventory (``{"servers": [{"server", "tools": [...]}]}``) or the flat
    ``catalogue.jsonl`` (one ``{"server", "tool"}`` per line). Names, modes and schemas are built
    exactly as for a connected server; every handler returns a failed result (``needsFollowup``,
    ``data.code == "mcp_server_unavailable"``) saying the tool is catalogue only.

    Args:
        path: The inventory file.
        exposure: The tier of the returned tools (``deferred`` by default).

    Returns:
        The tools, not registered anywhere, in file order.

    Raises:
        ConfigError: The file cannot be read or parsed, or a definition is unusable; the message
            names the file and the tool.
    """
    source = Path(path)
    try:
        text = source.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"MCP catalogue {source}: cannot read it ({exc})") from exc
    try:
        pairs = list(_catalogue_entries(source, text))
    except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as exc:
        raise ConfigError(
            f"MCP catalogue {source}: not an MCP inventory ({type(exc).__name__}: {exc})"
        ) from exc
    tools: list[Tool] = []
    for server, definition in pairs:
        where = f"server {server!r} tool {definition.get('name')!r}"
        if not isinstance(server, str) or not _SERVER_NAME.fullmatch(server):
            raise ConfigError(f"MCP catalogue {source}: {where}: invalid server name")
        try:
            tools.append(
                _build_tool(
                    server,
                    definition,
                    _catalogue_handler(server, str(definition.get("name"))),
                    exposure=exposure,
                    timeout_ms=None,
                )
            )
        except UserError as exc:
            raise ConfigError(f"MCP catalogue {source}: {where}: {exc}") from exc
    return tools


def _catalogue_entries(source: Path, text: str) -> Iterator[tuple[str, dict[str, Any]]]:
    if source.suffix == ".jsonl":
        for line in text.splitlines():
            if line.strip():
                row = json.loads(line)
                yield row["server"], row["tool"]
        return
    for server in json.loads(text)["servers"]:
        for definition in server["tools"]:
            yield server["server"], definition


def _catalogue_handler(server: str, tool: str) -> ToolHandler:
    async def handler(**_arguments: Any) -> ToolResult:
        return _failure(
            "mcp_server_unavailable",
            f"MCP tool {tool!r} of server {server!r} is catalogue only: not connected. Use another tool.",
            server=server,
            tool=tool,
        )

    return handler


# -- connections --------------------------------------------------------------------------------


class _StderrTail:
    """The server's stderr: a pipe drained by a daemon thread into the log and a bounded tail.

    Server output goes to the ``steerable_sidecar.mcp_sources`` logger at DEBUG (never to our own
    stderr, which may be a protocol's log channel); the last lines explain a failure.
    """

    def __init__(self, server: str, redact: Redactor | None = None) -> None:
        self._server = server
        self._redact = redact or Redactor()
        self._lines: deque[str] = deque(maxlen=_STDERR_TAIL_LINES)
        read_fd, write_fd = os.pipe()
        self._read = os.fdopen(read_fd, "rb", buffering=0)
        self.writer = os.fdopen(write_fd, "w", encoding="utf-8")
        self._thread = threading.Thread(target=self._drain, name=f"mcp-stderr-{server}", daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        partial = b""
        while chunk := self._read.read(65_536):
            *lines, partial = (partial + chunk).split(b"\n")
            for raw in lines:
                self._note(raw)
        if partial:
            self._note(partial)

    def _note(self, raw: bytes) -> None:
        line = raw.decode("utf-8", errors="replace").rstrip()
        line = self._redact(line)  # the tail reaches error messages, and so the model
        if line:
            self._lines.append(line)
            logger.debug("[mcp %s] %s", self._server, line)

    def close_writer(self) -> None:
        """Drop our copy of the write end (the child holds its own), so EOF can arrive."""
        if not self.writer.closed:
            self.writer.close()

    async def tail(self, *, wait_s: float = 0.0) -> str:
        """The last lines, after waiting up to ``wait_s`` for the server's last words to arrive."""
        if wait_s and self._thread.is_alive():
            await asyncio.to_thread(self._thread.join, wait_s)
        text = "\n".join(self._lines)
        return text[-_STDERR_TAIL_CHARS:]

    async def close(self) -> None:
        self.close_writer()
        await asyncio.to_thread(self._thread.join, 1.0)
        if not self._thread.is_alive():  # a survivor holding the pipe keeps the (daemon) thread and fd
            self._read.close()


class _Connection:
    """One server: an owner task holds the SDK client open from connect to close."""

    def __init__(self, config: McpServerConfig, *, connect_timeout_s: float, call_timeout_s: float) -> None:
        self.config = config
        self._redact = Redactor.of(_config_credentials(config))  # its errors and stderr reach the model
        self.state: ServerState = "starting"
        self.error: str | None = None
        self.definitions: list[dict[str, Any]] = []
        self.tool_names: list[str] = []
        self._connect_timeout_s = connect_timeout_s
        self._call_timeout_s = call_timeout_s
        self._client: Client | None = None
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._stderr: _StderrTail | None = None

    @property
    def name(self) -> str:
        return self.config.name

    async def start(self) -> None:
        """Start the server and list its tools.

        Raises:
            McpServerError: It could not be started or listed within the connect timeout.
        """
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(self._own(ready), name=f"mcp server {self.name}")
        try:
            await asyncio.shield(ready)
        except asyncio.CancelledError:
            await self.close()
            raise

    async def _own(self, ready: asyncio.Future[None]) -> None:
        """The owner task: enter the client, list, wait for close, exit, all in this one task."""
        self._stderr = _StderrTail(self.name, self._redact)
        try:
            async with AsyncExitStack() as stack:
                try:
                    async with asyncio.timeout(self._connect_timeout_s):
                        client = await stack.enter_async_context(self._new_client(self._stderr))
                        self._stderr.close_writer()
                        self.definitions = await self._list_tools(client)
                except TimeoutError:
                    raise McpServerError(
                        self.name,
                        f"MCP server {self.name!r} did not start and list its tools within "
                        f"{self._connect_timeout_s * 1000:.0f} ms",
                    ) from None
                self._client = client
                self.state = "connected"
                ready.set_result(None)
                await self._stop.wait()
                self._client = None
        except BaseException as exc:  # reported to start() or logged; a cancellation is re-raised
            self._client = None
            self._stderr.close_writer()  # so the tail below sees the server's last words and EOF
            if isinstance(exc, asyncio.CancelledError) and not ready.done():
                ready.cancel()
            elif not ready.done():
                self.state = "dead"
                ready.set_exception(await self._start_error(exc))
            elif not self._stop.is_set():
                self.error = f"the connection failed ({_describe(exc)})"
                logger.warning("MCP server %r: %s", self.name, self.error)
            else:
                logger.debug("MCP server %r: error while closing", self.name, exc_info=exc)
            if isinstance(exc, asyncio.CancelledError):
                raise
        finally:
            if self.state == "connected":
                self.state = "closed" if self._stop.is_set() else "dead"
            self._stderr.close_writer()

    def _new_client(self, stderr: _StderrTail) -> Client:
        """An SDK client over ``stdio_client``, with the server's stderr sent to ``stderr``."""
        from mcp import Client, StdioServerParameters
        from mcp.client.stdio import stdio_client

        params = StdioServerParameters(
            command=self.config.command,
            args=list(self.config.args),
            env=dict(self.config.env) if self.config.env is not None else None,
        )
        return Client(stdio_client(params, errlog=stderr.writer), cache=None)

    async def _list_tools(self, client: Client) -> list[dict[str, Any]]:
        definitions: list[dict[str, Any]] = []
        cursor: str | None = None
        for _ in range(_LIST_PAGE_CAP):
            page = await client.list_tools(cursor=cursor)
            definitions.extend(
                t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in page.tools
            )
            cursor = page.next_cursor
            if cursor is None:
                break
        return definitions

    async def _start_error(self, exc: BaseException) -> McpServerError:
        if isinstance(exc, McpServerError):
            reason = str(exc)
        elif _is_connection_closed(exc):
            reason = (
                f"MCP server {self.name!r} (command {self.config.command!r}) closed the connection during "
                "start-up: the process exited or is not an MCP stdio server"
            )
        else:
            reason = (
                f"MCP server {self.name!r} (command {self.config.command!r}) failed to start: "
                f"{_describe(exc)}"
            )
        tail = await self._stderr.tail(wait_s=0.5) if self._stderr is not None else ""
        if tail:
            reason += f"\n--- its stderr (last lines) ---\n{tail}"
        self.error = reason
        error = McpServerError(self.name, reason)
        error.__cause__ = exc
        return error

    async def call(self, tool: str, arguments: dict[str, Any]) -> ToolResult:
        """Call ``tool`` (its original name) on the server; never raises for server trouble.

        A failure's text is redacted with the server's own credentials (its ``env`` values and
        ``args`` credentials): the server's error messages reach the model.
        """
        result = await self._call(tool, arguments)
        if result.error:
            result = result.model_copy(update={"error": self._redact(result.error)})
        return result

    async def _call(self, tool: str, arguments: dict[str, Any]) -> ToolResult:
        from mcp import MCPError
        from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT
        from pydantic import ValidationError

        client = self._client
        if client is None or self.state != "connected":
            return await self._unavailable(tool)
        timeout_ms = round(self._call_timeout_s * 1000)
        try:
            async with asyncio.timeout(self._call_timeout_s + _CALL_GRACE_S):
                result = await client.call_tool(tool, arguments, read_timeout_seconds=self._call_timeout_s)
        except TimeoutError:
            return self._timed_out(tool, timeout_ms)
        except MCPError as exc:
            if exc.code == CONNECTION_CLOSED:
                return await self._died(tool, "the connection closed: the server exited or closed its pipes")
            if exc.code == REQUEST_TIMEOUT:
                return self._timed_out(tool, timeout_ms)
            return _failure(
                "mcp_error",
                f"MCP server {self.name!r} refused the call to {tool!r}: {exc.error.message} "
                f"(JSON-RPC error {exc.code})",
                server=self.name,
                tool=tool,
                jsonrpcCode=exc.code,
            )
        except (OSError, EOFError) as exc:
            return await self._died(tool, _describe(exc))
        except (RuntimeError, ValidationError) as exc:
            if self._client is None or self.state != "connected":
                return await self._unavailable(tool)
            return _failure(
                "mcp_invalid_result",
                f"MCP server {self.name!r} answered {tool!r} with an invalid result: {_describe(exc)}",
                server=self.name,
                tool=tool,
            )
        except BaseExceptionGroup as group:
            if _is_closed_transport(group):
                return await self._died(tool, _describe(group))
            raise
        return call_tool_result(result, server=self.name, tool=tool)

    def _timed_out(self, tool: str, timeout_ms: int) -> ToolResult:
        return _failure(
            "timeout",
            f"MCP tool {tool!r} of server {self.name!r} timed out after {timeout_ms} ms",
            server=self.name,
            tool=tool,
            timeoutMs=timeout_ms,
        )

    async def _died(self, tool: str, why: str) -> ToolResult:
        if self.state == "connected" and not self._stop.is_set():  # not our own close racing the call
            self.state = "dead"
            tail = await self._stderr.tail(wait_s=0.2) if self._stderr is not None else ""
            self.error = why + (f"; its last stderr line: {tail.splitlines()[-1]}" if tail else "")
            logger.warning("MCP server %r died: %s", self.name, self.error)
        return await self._unavailable(tool)

    async def _unavailable(self, tool: str) -> ToolResult:
        state = "was closed" if self._stop.is_set() and self.state != "dead" else "is not running"
        why = f" ({self.error})" if self.error else ""
        return _failure(
            "mcp_server_unavailable",
            f"MCP server {self.name!r} {state}{why}. Its tool {tool!r} cannot be called in this "
            "session: do not retry it; use another tool or tell the user.",
            server=self.name,
            tool=tool,
        )

    async def close(self) -> None:
        """Ask the owner task to exit the client, and wait for it (bounded)."""
        self._stop.set()
        task = self._task
        if task is not None and not task.done() and self.state == "starting":
            task.cancel()  # still connecting: the SDK's shielded shutdown stops the process
        if task is not None and not task.done():
            done, _ = await asyncio.wait({task}, timeout=_CLOSE_TIMEOUT_S)
            if not done:
                logger.warning(
                    "MCP server %r did not close within %.0f s; cancelling", self.name, _CLOSE_TIMEOUT_S
                )
                task.cancel()
                await asyncio.wait({task})
        if task is not None and task.done() and not task.cancelled():
            task.exception()  # retrieved: start() reported it already
        if self.state in ("starting", "connected"):
            self.state = "closed"
        if self._stderr is not None:
            await self._stderr.close()

    def describe(self) -> dict[str, Any]:
        info: dict[str, Any] = {
            "name": self.name,
            "command": self.config.command,
            "tools": list(self.tool_names),
            "state": self.state,
        }
        if self.error:
            info["error"] = self.error
        return info


def _describe(exc: BaseException) -> str:
    leaves = _leaves(exc)
    return "; ".join(
        f"{type(leaf).__name__}: {leaf}" if str(leaf) else type(leaf).__name__ for leaf in leaves
    )


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


def _is_connection_closed(exc: BaseException) -> bool:
    from mcp import MCPError
    from mcp_types import CONNECTION_CLOSED

    return any(isinstance(leaf, MCPError) and leaf.code == CONNECTION_CLOSED for leaf in _leaves(exc))


def _is_closed_transport(group: BaseExceptionGroup[BaseException]) -> bool:
    import anyio

    closed = (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError, EOFError)
    return all(isinstance(leaf, closed) for leaf in _leaves(group))


# -- the public source --------------------------------------------------------------------------


class McpToolSources:
    """Connected MCP servers whose tools are registered on a router while the sources are open.

    Use it as an async context manager; the servers run and their tools stay registered inside::

        async with McpToolSources(router, load_mcp_config("mcp.json")):
            ...  # mcp__<server>__<tool> tools dispatch through router

    Entering starts every server concurrently, lists its tools (following pagination) and
    registers each one; it fails loud: if any server cannot start, list or register, everything
    already started is closed, nothing stays registered, and :class:`McpServerError` names the
    server (with its stderr's last lines). Leaving unregisters the tools and stops the servers
    (stdin closed, then SIGTERM / SIGKILL to the process group, as the SDK does; bounded).

    Args:
        router: Where the tools are registered.
        configs: The servers (see :func:`load_mcp_config`); names must be unique.
        exposure: The tier of every MCP tool; ``deferred`` (found through ``tool_search``) by default.
        call_timeout_ms: Bound on one tool call, in milliseconds (> 0); a call past it fails with
            ``data.code == "timeout"`` and ``needsFollowup``.
        connect_timeout_ms: Bound on starting one server and listing its tools, in milliseconds (> 0).

    Raises:
        UserError: On duplicate server names, a non-positive timeout or an unknown tier.
    """

    def __init__(
        self,
        router: ToolRouter,
        configs: Sequence[McpServerConfig],
        *,
        exposure: ToolExposure | str = ToolExposure.DEFERRED,
        call_timeout_ms: int = DEFAULT_CALL_TIMEOUT_MS,
        connect_timeout_ms: int = DEFAULT_CONNECT_TIMEOUT_MS,
    ) -> None:
        for label, value in (
            ("call_timeout_ms", call_timeout_ms),
            ("connect_timeout_ms", connect_timeout_ms),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise UserError(f"{label} must be a positive number of milliseconds, got {value!r}")
        names = [c.name for c in configs]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise UserError(f"MCP server names must be unique; repeated: {', '.join(duplicates)}")
        try:
            self._exposure = ToolExposure(exposure)
        except ValueError:
            raise UserError(f"unknown exposure {exposure!r}; use one of direct, deferred, hidden") from None
        self._router = router
        self._call_timeout_ms = call_timeout_ms
        self._connections = [
            _Connection(
                config, connect_timeout_s=connect_timeout_ms / 1000, call_timeout_s=call_timeout_ms / 1000
            )
            for config in configs
        ]
        self._registered: dict[str, Tool] = {}
        self._entered = False

    async def __aenter__(self) -> McpToolSources:
        """Start every server, list its tools and register them.

        Raises:
            McpServerError: A server failed to start, list or register (named in the message);
                nothing stays registered and every server is stopped.
            UserError: The sources were already entered.
        """
        if self._entered:
            raise UserError("McpToolSources can be entered only once")
        self._entered = True
        try:
            outcomes = await asyncio.gather(*(c.start() for c in self._connections), return_exceptions=True)
            failures = [o for o in outcomes if isinstance(o, BaseException)]
            for failure in failures:
                if not isinstance(failure, Exception):
                    raise failure  # a cancellation: not ours to turn into an error
            for extra in failures[1:]:
                logger.error("%s", extra)
            if failures:
                raise failures[0]
            for connection in self._connections:
                self._register(connection)
        except BaseException:
            await self.aclose()
            raise
        return self

    def _register(self, connection: _Connection) -> None:
        timeout_ms = self._call_timeout_ms + round(_CALL_GRACE_S * 1000) + _ROUTER_GRACE_MS
        for definition in connection.definitions:
            original = str(definition.get("name"))
            handler = _dispatcher(connection, original)
            try:
                tool = _build_tool(
                    connection.name, definition, handler, exposure=self._exposure, timeout_ms=timeout_ms
                )
                self._router.register(tool)
            except DuplicateToolError as exc:
                by = "another MCP tool" if exc.name in self._registered else "a tool already on the router"
                raise McpServerError(
                    connection.name,
                    f"MCP server {connection.name!r}: tool {original!r} would be registered as {exc.name!r}, "
                    f"which {by} already uses",
                ) from exc
            except UserError as exc:
                raise McpServerError(
                    connection.name, f"MCP server {connection.name!r} published an unusable tool: {exc}"
                ) from exc
            self._registered[tool.name] = tool
            connection.tool_names.append(tool.name)

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Unregister every MCP tool and stop every server (idempotent, bounded)."""
        for name, tool in list(self._registered.items()):
            current = self._router.get(name)
            if current is not None and current.handler is tool.handler:  # set_exposure keeps the handler
                self._router.unregister(name)
        self._registered.clear()
        await asyncio.gather(*(c.close() for c in self._connections))

    def servers(self) -> list[dict[str, Any]]:
        """Describe each configured server.

        Returns:
            One ``{name, command, tools, state, error?}`` per server, in config order:
            ``tools`` are the registered names; ``state`` is ``starting`` (not entered yet),
            ``connected``, ``dead``
            (it failed to start, or a call found its connection closed) or ``closed`` (after
            :meth:`aclose`); ``error`` says why a server is dead.
        """
        return [c.describe() for c in self._connections]


def _dispatcher(connection: _Connection, tool: str) -> ToolHandler:
    async def handler(**arguments: Any) -> ToolResult:
        return await connection.call(tool, arguments)

    return handler
