"""One connected MCP server: :class:`Connection` owns the SDK client, :class:`StderrTail` its stderr.

Lifetime: each connection is owned by one long-lived task that enters and exits the SDK client
(its anyio task groups require both in the same task); calls are made from any task. A server
that dies gives failed results (``mcp_server_unavailable``); see ``docs/mcp-sources.md``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections import deque
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any, Final, Literal

from steerable_agent_runtime.errors import McpServerError
from steerable_agent_runtime.types import ToolResult

from ..shared._codes import McpErrorCode
from ..shared._secrets import Redactor
from ._config import McpServerConfig, config_credentials
from ._tools import call_tool_result, failure

if TYPE_CHECKING:
    from mcp import Client, MCPError

__all__ = ["CALL_GRACE_S", "Connection", "ServerState", "StderrTail"]

logger = logging.getLogger(__name__)

CALL_GRACE_S: Final = 1.0
"""Our own deadline on a call backstops the SDK's by this much, in seconds."""

_LIST_PAGE_CAP: Final = 100  # tools/list pages followed at most: a paginator that never ends cannot hang boot
_CLOSE_TIMEOUT_S: Final = (
    15.0  # the SDK's stdio shutdown is bounded (about 6 s worst case); never wait forever
)
_SDK_CLOSED_MESSAGE: Final = "Connection closed"  # the SDK's CONNECTION_CLOSED errors (see _raised_by_sdk)
_STDERR_TAIL_LINES: Final = 20
_STDERR_TAIL_CHARS: Final = 2_000

ServerState = Literal["starting", "connected", "dead", "closed"]
"""A connection's state, as ``McpToolSources.servers`` reports it."""


class StderrTail:
    """The server's stderr: a pipe drained by a daemon thread into the log and a bounded tail.

    Server output goes to this module's logger at DEBUG (never to our own
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


class Connection:
    """One server: an owner task holds the SDK client open from connect to close."""

    def __init__(self, config: McpServerConfig, *, connect_timeout_s: float, call_timeout_s: float) -> None:
        self.config = config
        self._redact = Redactor.of(config_credentials(config))  # its errors and stderr reach the model
        self.state: ServerState = "starting"
        self.error: str | None = None
        self.definitions: list[dict[str, Any]] = []
        self.tool_names: list[str] = []
        self._connect_timeout_s = connect_timeout_s
        self._call_timeout_s = call_timeout_s
        self._client: Client | None = None
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._stderr: StderrTail | None = None

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
        self._stderr = StderrTail(self.name, self._redact)
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

    def _new_client(self, stderr: StderrTail) -> Client:
        """An SDK client over ``stdio_client``, with the server's stderr sent to ``stderr``."""
        from mcp import Client, StdioServerParameters
        from mcp.client.stdio import stdio_client

        cwd = self.config.cwd
        if cwd is not None and not os.path.isdir(cwd):  # the OS would only say "No such file or directory"
            raise McpServerError(self.name, f"MCP server {self.name!r}: its cwd {cwd!r} is not a directory")
        params = StdioServerParameters(
            command=self.config.command,
            args=list(self.config.args),
            env=dict(self.config.env) if self.config.env is not None else None,
            cwd=cwd,
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
        from pydantic import ValidationError

        client = self._client
        if client is None or self.state != "connected":
            return await self._unavailable(tool)
        timeout_ms = round(self._call_timeout_s * 1000)
        try:
            async with asyncio.timeout(self._call_timeout_s + CALL_GRACE_S):
                result = await client.call_tool(tool, arguments, read_timeout_seconds=self._call_timeout_s)
        except TimeoutError:
            return self._timed_out(tool, timeout_ms)
        except MCPError as exc:
            raised_by_sdk = _raised_by_sdk(exc)
            if raised_by_sdk == "closed":
                return await self._died(tool, "the connection closed: the server exited or closed its pipes")
            if raised_by_sdk == "timeout":
                return self._timed_out(tool, timeout_ms)
            return failure(
                McpErrorCode.MCP_ERROR,
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
            return failure(
                McpErrorCode.MCP_INVALID_RESULT,
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
        return failure(
            McpErrorCode.TIMEOUT,
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
        return failure(
            McpErrorCode.MCP_SERVER_UNAVAILABLE,
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

    return any(isinstance(leaf, MCPError) and _raised_by_sdk(leaf) == "closed" for leaf in _leaves(exc))


def _raised_by_sdk(exc: MCPError) -> Literal["closed", "timeout"] | None:
    """``closed`` or ``timeout`` when the SDK raised ``exc`` itself; ``None`` for a server's error answer.

    A fronted server may answer with any code, -32000 and -32001 included, which the SDK also uses
    for a closed connection (``CONNECTION_CLOSED``) and an elapsed read timeout (``REQUEST_TIMEOUT``).
    The SDK's own are told apart by how ``mcp.shared.jsonrpc_dispatcher`` raises them: the closed
    one always with the message ``Connection closed`` and no data, the timeout one while handling
    the ``TimeoutError`` of its wait; a server's answer is rebuilt from its error object after the
    wait, so only a server that answers -32000 ``Connection closed`` without data reads as closed.
    """
    from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

    if exc.data is not None:
        return None
    if exc.code == CONNECTION_CLOSED and exc.message == _SDK_CLOSED_MESSAGE:
        return "closed"
    if exc.code == REQUEST_TIMEOUT and isinstance(exc.__context__, TimeoutError):
        return "timeout"
    return None


def _is_closed_transport(group: BaseExceptionGroup[BaseException]) -> bool:
    import anyio

    closed = (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError, EOFError)
    return all(isinstance(leaf, closed) for leaf in _leaves(group))
