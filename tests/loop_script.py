"""Scripting an agent loop run in tests: model turns, their calls, and the answers sent back."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from steerable_agent_runtime import ToolFailed, ToolResult, ToolRetry, ToolRouter


def call(name: str, arguments: Any = None, id: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "arguments": arguments if arguments is not None else {}}
    if id is not None:
        out["id"] = id
    return out


def turn(*calls: dict[str, Any], text: str = "") -> dict[str, Any]:
    return {"text": text, "tool_calls": list(calls), "usage": {"prompt_tokens": 10, "completion_tokens": 2}}


def tool_results(messages: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {m["tool_call_id"]: json.loads(m["content"]) for m in messages if m.get("role") == "tool"}


class EchoRouter(ToolRouter):
    """A router whose ``calls`` logs what its echo tools ran, as ``(tool name, text)``."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, Any]] = []


def echo_router() -> EchoRouter:
    """A router with echo, slow_echo, finish and fragile; ``calls`` logs what echo and slow_echo ran."""
    r = EchoRouter()

    @r.tool
    async def echo(text: str) -> dict[str, Any]:
        """Echo text back."""
        r.calls.append(("echo", text))
        return {"echo": text}

    @r.tool
    async def slow_echo(text: str, delay_ms: int = 50) -> dict[str, Any]:
        """Echo after a delay."""
        await asyncio.sleep(delay_ms / 1000)
        r.calls.append(("slow_echo", text))
        return {"echo": text}

    @r.tool
    async def finish(summary: str) -> Any:
        """End the task."""

        return ToolResult(success=True, terminal=True, message=summary)

    @r.tool
    async def fragile(value: int) -> dict[str, Any]:
        """Fails recoverably on negative values, fatally on zero."""
        if value < 0:
            raise ToolRetry("value must be positive; try again with value > 0")
        if value == 0:
            raise ToolFailed("zero is fatal")
        return {"value": value}

    return r
