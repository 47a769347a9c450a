"""MCP tools as steerable tools: their names, modes and schemas, their results, and the catalogue.

Naming, modes and result mapping are described in ``docs/mcp-sources.md``; the public names are
re-exported by :mod:`steerable_sidecar.mcp_sources._sources`.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from steerable_agent_runtime.config import EnvInt
from steerable_agent_runtime.errors import ConfigError, UserError
from steerable_agent_runtime.modes import MODE_META_KEY, ToolMode, mode_from_annotations
from steerable_agent_runtime.spill import scalar_fields
from steerable_agent_runtime.tools import Tool, ToolExposure, ToolHandler
from steerable_agent_runtime.types import ToolResult

from ..shared._codes import McpErrorCode
from ._config import SERVER_NAME

if TYPE_CHECKING:
    from mcp_types import CallToolResult

    from steerable_agent_runtime.context import CallContext

__all__ = [
    "MAX_RESULT_BYTES",
    "MAX_RESULT_BYTES_ENV",
    "MAX_TOOL_NAME_CHARS",
    "MCP_TOOL_PREFIX",
    "bounded_result",
    "build_tool",
    "call_tool_result",
    "failure",
    "load_mcp_catalogue",
    "mcp_tool_name",
]

logger = logging.getLogger(__name__)

MCP_TOOL_PREFIX: Final = "mcp__"
"""Every MCP tool's registered name starts with this, then ``<server>__<tool>``."""
MAX_TOOL_NAME_CHARS: Final = 64
"""OpenAI-compatible APIs refuse longer function names; longer MCP names are shortened."""

MAX_RESULT_BYTES_ENV: Final = "STEERABLE_MCP_MAX_RESULT_BYTES"
MAX_RESULT_BYTES: Final = EnvInt(MAX_RESULT_BYTES_ENV, 100_000, floor=20_000, ceiling=10_000_000)
"""The most an MCP tool result may put in the conversation, in UTF-8 bytes of its ``data`` as JSON
(and of its error text): 100,000 by default, about Claude Code's 25,000 tokens
(``MAX_MCP_OUTPUT_TOKENS``) at 4 bytes a token; from 20,000 to 10,000,000 (SAFE-5)."""

_NOT_NAME_CHAR: Final = re.compile(r"[^A-Za-z0-9_-]")


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


def build_tool(
    server: str,
    definition: Mapping[str, Any],
    handler: ToolHandler,
    *,
    exposure: ToolExposure | str,
    timeout_ms: int | None,
    context_param: str | None = None,
) -> Tool:
    """A :class:`Tool` from an MCP tool definition in its wire form (camelCase keys).

    ``context_param`` is the keyword ``handler`` gets the call's ``CallContext`` under (see
    :func:`~steerable_agent_runtime.context.context_keyword`), or ``None``.

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
        mode=_mode(original, hints, definition.get("_meta")),
        exposure=exposure,
        timeout_ms=timeout_ms,
        annotations=kept or None,
        context_param=context_param,
    )


def _mode(name: str, hints: dict[str, Any] | None, meta: Any) -> ToolMode:
    """The tool's mode from its hints, or ``local`` when a fronted steerable says so in ``_meta``.

    Only ``local`` is taken from ``_meta``: it can make a call ask, never let one run unasked.
    """
    stated = meta.get(MODE_META_KEY) if isinstance(meta, dict) else None
    return ToolMode.LOCAL if stated == ToolMode.LOCAL.value else mode_from_annotations(name, hints)


def call_tool_result(result: CallToolResult, *, server: str, tool: str) -> ToolResult:
    """Map an MCP ``CallToolResult`` onto a :class:`ToolResult`.

    ``isError`` is a ``needsFollowup`` failure (``data.code == "mcp_tool_error"``);
    ``structuredContent`` becomes ``data`` (a non-object as ``{"value": ...}``), else text blocks
    become ``data.text`` and other blocks ``data.content`` without their payload
    (docs/mcp-sources.md, Result mapping).

    Args:
        result: The SDK's result.
        server: The server name (for the error's ``data``).
        tool: The tool's original name (for the error's ``data``).
    """
    texts = [block.text for block in result.content if block.type == "text"]
    if result.is_error:
        data: dict[str, Any] = {"code": McpErrorCode.MCP_TOOL_ERROR, "server": server, "tool": tool}
        if result.structured_content is not None:
            data["structured"] = result.structured_content
        text = "\n".join(texts).strip()
        return ToolResult.retry(
            text or f"MCP tool {tool!r} of server {server!r} reported an error without a message", data=data
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


async def bounded_result(result: ToolResult, context: CallContext | None, *, max_bytes: int) -> ToolResult:
    """Keep an MCP tool's result within ``max_bytes`` of the conversation (SAFE-5).

    ``data`` larger than ``max_bytes`` as UTF-8 JSON goes whole to the run's spill store
    (:meth:`CallContext.spill_data`: a preview and a ``spill://`` locator stay); where there is
    none it is cut: ``data`` keeps its small top-level fields and ``cut: {bytes, preview}``, the
    first characters of its JSON text, all within ``max_bytes``, and ``message`` says so. An
    error text longer than ``max_bytes`` is cut with a note. docs/mcp-sources.md, "Large results".

    Args:
        result: The mapped result (:func:`call_tool_result`, or a failure).
        context: The call's context (its ``spill``); ``None`` is a context without one.
        max_bytes: The cap, in bytes (:data:`MAX_RESULT_BYTES`).

    Returns:
        ``result`` itself when within the cap, else the bounded result.
    """
    if result.error is not None and _utf8_size(result.error) > max_bytes:
        result = result.model_copy(update={"error": _cut_error(result.error, max_bytes)})
    if not result.data:
        return result
    try:
        text = json.dumps(result.data, ensure_ascii=False)
    except (ValueError, RecursionError):  # no JSON form: ToolResult.to_wire answers for it
        return result
    size = _utf8_size(text)
    if size <= max_bytes:
        return result
    try:
        spilled = await context.spill_data(result, threshold_bytes=max_bytes) if context else None
    except OSError:  # the store is full: cut, never pass the whole on
        logger.exception("could not spill an MCP result of %d bytes; cutting it", size)
        spilled = None
    if spilled is not None:
        return spilled
    kept = scalar_fields(result.data)
    frame = json.dumps({**kept, "cut": {"bytes": size, "preview": ""}}, ensure_ascii=False)
    preview = _fitting(text, max_bytes - _utf8_size(frame))
    note = (
        f"The result data was {size} bytes, more than the {max_bytes} bytes an MCP result may bring "
        f"into the conversation ({MAX_RESULT_BYTES_ENV}), and nothing here stores the rest: "
        f"data.cut.preview holds the first {len(preview)} characters of its JSON text; the rest is "
        "dropped. If what you need is not in the preview, call the tool again asking for less "
        "(a narrower query, a filter, a smaller page or limit)."
    )
    message = f"{result.message} {note}" if result.message else note
    return result.model_copy(
        update={"data": {**kept, "cut": {"bytes": size, "preview": preview}}, "message": message}
    )


def _utf8_size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _fitting(text: str, room: int) -> str:
    """The longest start of ``text`` whose JSON string form takes at most ``room`` UTF-8 bytes."""
    low, high = 0, max(0, min(len(text), room))  # a character takes one byte or more
    while low < high:  # about 17 steps for a 100,000-byte cap
        middle = (low + high + 1) // 2
        if _utf8_size(json.dumps(text[:middle], ensure_ascii=False)) - 2 <= room:
            low = middle
        else:
            high = middle - 1
    return text[:low]


def _cut_error(error: str, max_bytes: int) -> str:
    note = (
        f"\n[cut: the error text was {_utf8_size(error)} bytes, more than the {max_bytes} an MCP "
        f"result may bring into the conversation ({MAX_RESULT_BYTES_ENV})]"
    )
    room = max_bytes - _utf8_size(note)
    head = error.encode("utf-8", "surrogatepass")[: max(0, room)].decode("utf-8", "ignore")
    return head + note


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


def failure(code: str, error: str, *, server: str, tool: str, **extra: Any) -> ToolResult:
    """A failed call the model can act on: ``needsFollowup``, ``data = {code, server, tool, **extra}``."""
    return ToolResult.retry(error, data={"code": code, "server": server, "tool": tool, **extra})


# -- the catalogue ------------------------------------------------------------------------------


def load_mcp_catalogue(
    path: str | os.PathLike[str], *, exposure: ToolExposure | str = ToolExposure.DEFERRED
) -> list[Tool]:
    """Load MCP tool definitions from an inventory file as schema-only tools (nothing is started).

    For search and mode tests over real definitions (docs/mcp-sources.md, A catalogue without
    servers): one ``*.json`` inventory (``{"servers": [{"server", "tools": [...]}]}``) or the flat
    ``catalogue.jsonl`` (one ``{"server", "tool"}`` per line). Tools are built as for a connected
    server; every handler fails with ``data.code == "mcp_server_unavailable"``.

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
        if not isinstance(server, str) or not SERVER_NAME.fullmatch(server):
            raise ConfigError(f"MCP catalogue {source}: {where}: invalid server name")
        try:
            tools.append(
                build_tool(
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
        return failure(
            McpErrorCode.MCP_SERVER_UNAVAILABLE,
            f"MCP tool {tool!r} of server {server!r} is catalogue only: not connected. Use another tool.",
            server=server,
            tool=tool,
        )

    return handler
