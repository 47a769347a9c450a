"""MCP servers as tool sources: connect stdio MCP servers and register their tools on a router.

Beyond the spec; the long form (names, tiers, modes by MODE-4, result mapping, failures,
lifetime) is docs/mcp-sources.md. Server ``s``'s tool ``t`` is registered as ``mcp__s__t``
(:func:`mcp_tool_name`), ``deferred`` by default, and called on the server as ``t``. The official
``mcp`` SDK is imported inside the functions that need it (about 0.7 s), so importing this module
stays cheap.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from types import TracebackType
from typing import Any, Final

from steerable_agent_runtime.context import CallContext, context_keyword
from steerable_agent_runtime.errors import DuplicateToolError, McpServerError, UserError
from steerable_agent_runtime.tools import Tool, ToolExposure, ToolHandler, ToolRouter
from steerable_agent_runtime.types import ToolResult

from ._config import (
    MAX_MCP_CONFIG_BYTES,
    MCP_CONFIG_ENV,
    McpServerConfig,
    config_secrets,
    known_credentials,
    load_mcp_config,
    load_mcp_config_from_env,
)
from ._connection import CALL_GRACE_S, Connection
from ._tools import (
    MAX_RESULT_BYTES,
    MAX_RESULT_BYTES_ENV,
    MCP_TOOL_PREFIX,
    bounded_result,
    build_tool,
    call_tool_result,
    load_mcp_catalogue,
    mcp_tool_name,
)

__all__ = [
    "DEFAULT_CALL_TIMEOUT_MS",
    "DEFAULT_CONNECT_TIMEOUT_MS",
    "MAX_MCP_CONFIG_BYTES",
    "MAX_RESULT_BYTES",
    "MAX_RESULT_BYTES_ENV",
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

DEFAULT_CALL_TIMEOUT_MS: Final = 120_000
"""Default bound on one tool call, in milliseconds (2 minutes)."""
DEFAULT_CONNECT_TIMEOUT_MS: Final = 30_000
"""Default bound on starting a server and listing its tools, in milliseconds (30 s)."""

_ROUTER_GRACE_MS: Final = 5_000  # the router's deadline backstops ours by this much


class McpToolSources:
    """Connected MCP servers whose tools are registered on a router while the sources are open.

    Use it as an async context manager (``async with McpToolSources(router, configs):``); the
    servers run and their tools stay registered inside (an example: docs/mcp-sources.md, Lifetime).

    Entering starts every server concurrently and registers its tools, failing loud: if any
    server cannot start, list or register, everything started is closed, nothing stays
    registered, and :class:`McpServerError` names the server. Leaving unregisters the tools and
    stops the servers (docs/mcp-sources.md, Failures and Lifetime).

    Args:
        router: Where the tools are registered.
        configs: The servers (see :func:`load_mcp_config`); names must be unique.
        exposure: The tier of every MCP tool; ``deferred`` (found through ``tool_search``) by default.
        call_timeout_ms: Bound on one tool call, in milliseconds (> 0); a call past it fails with
            ``data.code == "timeout"`` and ``needsFollowup``.
        connect_timeout_ms: Bound on starting one server and listing its tools, in milliseconds (> 0).
        max_result_bytes: The most one result may bring into the conversation, in UTF-8 bytes of
            its ``data`` as JSON (and of its error text); more is spilled whole through the run's
            ``SpillHooks``, or cut where there are none (SAFE-5, docs/mcp-sources.md, "Large
            results"). ``STEERABLE_MCP_MAX_RESULT_BYTES`` for the commands; 100,000 by default,
            from 20,000 to 10,000,000.

    Raises:
        UserError: On duplicate server names, a non-positive timeout or an unknown tier.
        ConfigError: On a ``max_result_bytes`` out of range.
    """

    def __init__(
        self,
        router: ToolRouter,
        configs: Sequence[McpServerConfig],
        *,
        exposure: ToolExposure | str = ToolExposure.DEFERRED,
        call_timeout_ms: int = DEFAULT_CALL_TIMEOUT_MS,
        connect_timeout_ms: int = DEFAULT_CONNECT_TIMEOUT_MS,
        max_result_bytes: int = MAX_RESULT_BYTES.default,
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
        self._max_result_bytes = MAX_RESULT_BYTES.check(max_result_bytes, "McpToolSources.max_result_bytes")
        self._connections = [
            Connection(
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

    def _register(self, connection: Connection) -> None:
        timeout_ms = self._call_timeout_ms + round(CALL_GRACE_S * 1000) + _ROUTER_GRACE_MS
        for definition in connection.definitions:
            original = str(definition.get("name"))
            schema = definition.get("inputSchema")
            key = context_keyword(schema if isinstance(schema, dict) else {})
            handler = _dispatcher(connection, original, key, self._max_result_bytes)
            try:
                tool = build_tool(
                    connection.name,
                    definition,
                    handler,
                    exposure=self._exposure,
                    timeout_ms=timeout_ms,
                    context_param=key,
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


def _dispatcher(connection: Connection, tool: str, key: str, max_result_bytes: int) -> ToolHandler:
    """A tool's handler: the call goes to the server, its result is bounded (SAFE-5)."""

    async def handler(**arguments: Any) -> ToolResult:
        context: CallContext | None = arguments.pop(key, None)  # None: the handler called by hand
        result = await connection.call(tool, arguments)
        return await bounded_result(result, context, max_bytes=max_result_bytes)

    return handler
