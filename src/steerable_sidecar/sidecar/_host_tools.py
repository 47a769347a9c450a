"""Tools that run in the host (``toolsViaHost``): schema-only registrations that forward calls.

Spec: Web tools ("the host router carries schemas only"), ``ask_user`` ("Under toolsViaHost the
sidecar answers ask_user locally from its own router ... the host's tool.invoke surface has no
ask_user, so forwarding it would fail with Unknown tool"), harness ("paths whose tools arrive over
the wire ... have no router to bind"). The sidecar validates each call against the schema the
host gave, then sends it back over the reverse ``tool.invoke``; tools the sidecar must answer
itself (``ask_user``, ``read_spilled``, later ``run_code``) stay on the local side.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final

from steerable_agent_runtime import CallContext, ToolCall, ToolResult, ToolRouter, UserError
from steerable_agent_runtime.ask_user import ASK_USER_TOOL_NAME
from steerable_agent_runtime.context import context_keyword
from steerable_agent_runtime.spill import READ_SPILLED_TOOL_NAME
from steerable_agent_runtime.tools import Tool

__all__ = ["LOCAL_ONLY_TOOLS", "HostInvoke", "register_host_tools"]

LOCAL_ONLY_TOOLS: Final = frozenset({ASK_USER_TOOL_NAME, READ_SPILLED_TOOL_NAME, "run_code"})
"""Tools the sidecar always answers itself, even when the host lists a tool of the same name."""

HostInvoke = Callable[[ToolCall], Awaitable[ToolResult]]
"""Sends one call to the host (the reverse ``tool.invoke``) and returns its result."""


def register_host_tools(
    router: ToolRouter, descriptors: Sequence[Mapping[str, Any]], invoke: HostInvoke
) -> list[str]:
    """Register the host's tools on ``router`` as forwarding tools.

    Args:
        router: The chat's router.
        descriptors: Tool descriptors as ``tool.list`` returns them (``name``, ``description``,
            ``parameters``, optional ``mode`` and ``exposure``), or OpenAI function-tool
            descriptors (``{"type": "function", "function": {...}}``).
        invoke: Sends a call to the host.

    Returns:
        The names registered (local-only names the host also listed are skipped).

    Raises:
        UserError: A descriptor without a name, with an invalid schema, mode or exposure, or a
            name given twice.
    """
    names: list[str] = []
    for raw in descriptors:
        descriptor = raw.get("function", raw) if isinstance(raw, Mapping) else None
        if not isinstance(descriptor, Mapping) or not isinstance(descriptor.get("name"), str):
            raise UserError("every host tool needs a string 'name'")
        name = descriptor["name"]
        if name in LOCAL_ONLY_TOOLS:
            continue
        parameters = descriptor.get("parameters") or {"type": "object", "properties": {}}
        if not isinstance(parameters, Mapping):
            raise UserError(f"host tool {name!r}: 'parameters' must be a JSON Schema object")

        key = context_keyword(parameters)  # the handler's keyword for the call context
        router.register(
            Tool.from_schema(
                name,
                parameters,
                _forwarder(invoke, name, key),
                description=str(descriptor.get("description") or ""),
                mode=descriptor.get("mode"),
                exposure=descriptor.get("exposure") or "direct",
                context_param=key,
            )
        )
        names.append(name)
    return names


def _forwarder(invoke: HostInvoke, name: str, key: str) -> Callable[..., Awaitable[ToolResult]]:
    """A host tool's handler: the call as dispatched goes to the host, its id from the context.

    The arguments are the ones the router validated against the host's schema (exact literals
    coerced), not ``context.call``'s: an executor that rewrote the call before dispatching it
    keeps the context it was given, and the host must see what was checked
    (docs/sidecar-protocol.md, "the host never sees invalid arguments").
    """

    async def forward(**arguments: Any) -> ToolResult:
        context: CallContext = arguments.pop(key)
        return await invoke(ToolCall(id=context.call.id, name=name, arguments=arguments))

    return forward
