"""The sidecar protocol's wire shapes, as typed dicts: what every params, result and event holds.

Spec: the sidecar and its host (``tool.invoke``, ``tool.list``, ``toolsViaHost``,
``ask_user.request``, ``read_state.seed``); the long form is ``docs/sidecar-protocol.md``.
``scripts/generate_spec.py`` writes ``spec/sidecar.schema.json`` from these types and from the
request models in :mod:`steerable_sidecar.sidecar._server`, and ``js/`` generates its TypeScript types
from that file, so the Python and TypeScript views of the wire cannot drift;
``tests/sidecar/sidecar/test_protocol_schema.py`` checks a live sidecar's frames against it.

:data:`METHODS` (host -> sidecar requests), :data:`REVERSE` (sidecar -> host requests) and
:data:`NOTIFICATIONS` (sidecar -> host) name each method's params and result types. Keys are the
wire's camelCase; a ``NotRequired`` key is omitted when unset, never sent as ``null``.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal, NotRequired

from pydantic import ConfigDict, Field, WithJsonSchema, with_config
from typing_extensions import TypedDict  # pydantic reads its schema on Python 3.11 too

from steerable_agent_runtime.ask_user import AskUserQuestion

__all__ = [
    "ERROR_DATA",
    "METHODS",
    "NOTIFICATIONS",
    "REVERSE",
    "ApprovalRequestParams",
    "ApprovalResult",
    "AskUserAnswers",
    "AskUserCancelled",
    "AskUserRequestParams",
    "AskUserResult",
    "AssistantEvent",
    "CancelResult",
    "ChatEvent",
    "ChatEventParams",
    "ChatSummary",
    "DoneEvent",
    "EventToolCall",
    "ExposureName",
    "HostInvokeContext",
    "HostInvokeParams",
    "HostToolDescriptor",
    "HostToolEntry",
    "OpenAIFunctionTool",
    "OutcomeName",
    "PingResult",
    "PluginInfoWire",
    "PluginListResult",
    "PluginResult",
    "PluginStateName",
    "ReadStateSeedParams",
    "ReadyParams",
    "ReasoningEvent",
    "RoundEvent",
    "RunSummaryWire",
    "SearchHitWire",
    "ShutdownResult",
    "TextEvent",
    "ToolCallEvent",
    "ToolDescriptor",
    "ToolListResult",
    "ToolModeName",
    "ToolResultEvent",
    "UsageWire",
    "WebSearchRequestParams",
    "WebSearchResult",
]

_DOCS = ConfigDict(use_attribute_docstrings=True)

ToolModeName = Literal["read", "safe_write", "destructive", "local", "external"]
ExposureName = Literal["direct", "deferred", "hidden"]
OutcomeName = Literal[
    "completed", "terminal", "max_rounds", "cancelled", "error", "incomplete", "empty_answer", "refused"
]
"""``RunOutcome``'s values."""
PluginStateName = Literal["enabled", "disabled", "unloaded"]
JsonObject = dict[str, Any]
ToolResultWire = Annotated[JsonObject, WithJsonSchema({"type": "object", "x-envelope": "ToolResult"})]
"""A ToolResult's wire form (``spec/ToolResult.schema.json``: the generator makes it a ``$ref``)."""
ToolCallWire = Annotated[JsonObject, WithJsonSchema({"type": "object", "x-envelope": "ToolCall"})]
"""A ToolCall (``spec/ToolCall.schema.json``)."""


# -- host -> sidecar ------------------------------------------------------------------------------


@with_config(_DOCS)
class HostToolDescriptor(TypedDict):
    """A tool the host runs (``agent.chat.stream``'s ``tools``, ``toolsViaHost``): ``tool.list``'s shape."""

    name: str
    description: NotRequired[str]
    parameters: NotRequired[JsonObject]
    """The arguments' JSON Schema (default: an object with no properties)."""
    mode: NotRequired[ToolModeName]
    """Default: what ``decide_tool_mode`` infers from the name."""
    exposure: NotRequired[ExposureName]
    """Default: ``direct``."""


@with_config(_DOCS)
class OpenAIFunctionTool(TypedDict):
    """The same as an OpenAI function-tool descriptor."""

    type: Literal["function"]
    function: HostToolDescriptor


HostToolEntry = HostToolDescriptor | OpenAIFunctionTool
"""One entry of ``agent.chat.stream``'s ``tools``."""


@with_config(_DOCS)
class PingResult(TypedDict):
    """``system.ping``'s answer."""

    pong: Literal[True]
    pid: int
    """The sidecar's process id."""


@with_config(_DOCS)
class ShutdownResult(TypedDict):
    """``system.shutdown``'s answer; the process exits once the calls in flight answered (5 s at most)."""

    ok: Literal[True]


@with_config(_DOCS)
class ToolDescriptor(TypedDict):
    """One tool of ``tool.list``: every exposure tier, with its JSON Schema (spec: Exposure tiers)."""

    name: str
    description: str
    parameters: JsonObject
    """The arguments' JSON Schema (an object schema)."""
    mode: ToolModeName
    """Its ToolMode (spec: ToolMode); only ``local`` needs consent."""
    exposure: ExposureName
    """Its tier: ``direct`` tools are offered, ``deferred`` ones found by ``tool_search``."""


@with_config(_DOCS)
class ToolListResult(TypedDict):
    """``tool.list``'s answer, the handshake: a tool that is not configured is not listed."""

    tools: list[ToolDescriptor]
    protocolVersion: int


@with_config(_DOCS)
class UsageWire(TypedDict):
    """Tokens of one model call (``assistant`` events) or summed over a chat (summaries).

    Each count is 0 when the provider reported none.
    """

    promptTokens: int
    completionTokens: int
    totalTokens: int


@with_config(_DOCS)
class RunSummaryWire(TypedDict):
    """How an agent run ended (``RunSummary.to_dict()``)."""

    outcome: OutcomeName
    rounds: int
    """Model calls made."""
    toolCalls: int
    """Tool calls answered, refused and invalid ones included."""
    usage: UsageWire
    text: str
    """The last assistant text."""
    terminalResult: NotRequired[ToolResultWire]
    """The terminal ToolResult, when ``outcome`` is ``terminal``."""
    error: NotRequired[str]
    """Why: the provider's error (``error``), why the answer is not whole (``incomplete``), or the
    model's refusal (``refused``)."""
    finishReason: NotRequired[str]
    """The last answer's finish reason, as the provider sent it."""


@with_config(_DOCS)
class ChatSummary(RunSummaryWire):
    """``agent.chat.stream``'s answer, when the run ends."""

    chatId: str
    sessionId: str


@with_config(_DOCS)
class CancelResult(TypedDict):
    """``agent.chat.cancel``'s answer."""

    cancelled: bool
    """False when no such chat is running."""


@with_config(_DOCS)
class PluginInfoWire(TypedDict):
    """One plugin (``PluginInfo.to_dict()``)."""

    name: str
    origin: str
    """The source that found it: ``entry-point``, ``directory``, or a remote source's name."""
    source: str
    """Where exactly: ``module:attr in distribution version``, or the plugin file's path."""
    state: PluginStateName
    tools: list[str]
    """The tool names it registered."""


@with_config(_DOCS)
class PluginListResult(TypedDict):
    """``plugin.list``'s answer."""

    plugins: list[PluginInfoWire]


@with_config(_DOCS)
class PluginResult(TypedDict):
    """``plugin.enable`` / ``disable`` / ``reload`` / ``unload``'s answer: the plugin afterwards."""

    plugin: PluginInfoWire


# -- sidecar -> host notifications ------------------------------------------------------------------


@with_config(_DOCS)
class ReadyParams(TypedDict):
    """``lifecycle.ready``: sent once, as the sidecar's first frame."""

    version: str
    """The steerable version."""
    protocolVersion: int
    pid: int
    workspace: str
    """The workspace root, absolute."""


@with_config(_DOCS)
class RoundEvent(TypedDict):
    """A model call starts."""

    type: Literal["round"]
    round: int
    """1-based."""


@with_config(_DOCS)
class ReasoningEvent(TypedDict):
    """A streamed piece of a thinking model's reasoning."""

    type: Literal["reasoning"]
    text: str


@with_config(_DOCS)
class TextEvent(TypedDict):
    """A streamed piece of assistant text."""

    type: Literal["text"]
    text: str


@with_config(_DOCS)
class AssistantEvent(TypedDict):
    """A model answer, as recorded."""

    type: Literal["assistant"]
    message: JsonObject
    """The recorded assistant message, OpenAI's chat shape: ``role`` (``assistant``), ``content``
    (text, or ``null`` when the model only called tools), ``tool_calls`` (``[{id, type:
    "function", function: {name, arguments}}]``, the arguments a JSON *string*, unlike the
    ``tool_call`` event's) and ``reasoning_content`` when the model reasoned."""
    usage: UsageWire
    """This model call's tokens."""
    finishReason: str | None
    """As the provider sent it (``null`` when it sent none); summaries omit it instead."""


@with_config(_DOCS)
class EventToolCall(TypedDict):
    """A tool call as the model made it."""

    id: str
    name: str
    arguments: JsonObject | str
    """The arguments; the raw text when they are not a JSON object (then ``invalid`` says why)."""
    invalid: NotRequired[str]
    """Why the call cannot run; it is answered with a failed result, never dispatched."""


@with_config(_DOCS)
class ToolCallEvent(TypedDict):
    """A tool call is about to run."""

    type: Literal["tool_call"]
    call: EventToolCall


@with_config(_DOCS)
class ToolResultEvent(TypedDict):
    """A tool call's result."""

    type: Literal["tool_result"]
    id: str
    name: str
    result: ToolResultWire


@with_config(_DOCS)
class DoneEvent(TypedDict):
    """The run ended (the last event; a chat cancelled before its first round sends none)."""

    type: Literal["done"]
    summary: RunSummaryWire
    """The ``agent.chat.stream`` answer's fields, without ``chatId`` and ``sessionId``."""


ChatEvent = (
    RoundEvent | ReasoningEvent | TextEvent | AssistantEvent | ToolCallEvent | ToolResultEvent | DoneEvent
)
"""A chat's progress event, told apart by ``type``."""


@with_config(_DOCS)
class ChatEventParams(TypedDict):
    """``agent.chat.event``: one progress event of a running chat."""

    chatId: str
    event: ChatEvent


# -- sidecar -> host requests -------------------------------------------------------------------------


@with_config(_DOCS)
class HostInvokeContext(TypedDict):
    """Which chat a forwarded call belongs to."""

    chatId: str


@with_config(_DOCS)
class HostInvokeParams(TypedDict):
    """Reverse ``tool.invoke`` (``toolsViaHost`` chats): the host runs the call, answers a ToolResult.

    The arguments were validated against the host's own schema first.
    """

    id: str
    name: str
    arguments: JsonObject
    context: HostInvokeContext


@with_config(_DOCS)
class AskUserRequestParams(TypedDict):
    """``ask_user.request``: the canonical question card (spec: ask_user)."""

    chatId: str
    intro: str
    questions: list[AskUserQuestion]
    outro: NotRequired[str]


@with_config(_DOCS)
class AskUserAnswers(TypedDict):
    """The user answered: ``{questionId: value}`` (a list for a multi-select question)."""

    answers: JsonObject


@with_config(_DOCS)
class AskUserCancelled(TypedDict):
    """The user dismissed the card."""

    cancelled: Literal[True]


AskUserResult = AskUserAnswers | AskUserCancelled
"""``ask_user.request``'s answer."""


@with_config(_DOCS)
class ApprovalRequestParams(TypedDict):
    """``approval.request``: may a consent-mode call go ahead, or a ``web_fetch`` reach a new host?"""

    chatId: str
    call: ToolCallWire
    """The call awaiting consent, as the model made it (its arguments validated first)."""
    mode: ToolModeName
    reason: NotRequired[Literal["new_domain"]]
    """Present when the question is not the call's mode: ``new_domain``, the first ``web_fetch``
    of ``domain`` in the session (SAFE-4); ``approved: true`` allows that host for the rest of it."""
    domain: NotRequired[str]
    """With ``reason``: the whole host the call would reach (lowercase, IDNA A-labels)."""
    url: NotRequired[str]
    """With ``reason``: the URL the call asks for."""


@with_config(_DOCS)
class ApprovalResult(TypedDict):
    """``approval.request``'s answer; anything but ``approved: true`` denies the call."""

    approved: bool


@with_config(_DOCS)
class ReadStateSeedParams(TypedDict):
    """``read_state.seed``: a resumed ``toolsViaHost`` session's read state, for the host's CAS gate."""

    sessionId: str
    readState: dict[str, str]
    """``{path: version}``, the versions the record's tool results carry."""


@with_config(_DOCS)
class WebSearchRequestParams(TypedDict):
    """``web_search.request`` (``STEERABLE_WEB_SEARCH_PROVIDER=host``): the host runs the search."""

    query: str
    maxResults: Annotated[int, Field(ge=1, le=20)]
    allowedDomains: list[str]
    blockedDomains: list[str]


@with_config(_DOCS)
class SearchHitWire(TypedDict):
    """One search hit."""

    title: str
    url: str
    snippet: str


@with_config(_DOCS)
class WebSearchResult(TypedDict):
    """``web_search.request``'s answer; the sidecar filters the hits by its domain policy again."""

    results: list[SearchHitWire]


# -- the method tables ---------------------------------------------------------------------------------

_ToolResult: Final = "ToolResult"
"""The envelope of ``spec/ToolResult.schema.json``, named rather than repeated."""
_ANY: Final = "any"
"""A result whose content is not part of the protocol (``read_state.seed``'s)."""

METHODS: Final[dict[str, tuple[object, object]]] = {
    "system.ping": (None, PingResult),
    "system.shutdown": (None, ShutdownResult),
    "tool.list": (None, ToolListResult),
    "tool.invoke": ("InvokeParams", _ToolResult),
    "agent.chat.stream": ("ChatParams", ChatSummary),
    "agent.chat.cancel": ("CancelParams", CancelResult),
    "plugin.list": (None, PluginListResult),
    "plugin.enable": ("PluginParams", PluginResult),
    "plugin.disable": ("PluginParams", PluginResult),
    "plugin.reload": ("PluginParams", PluginResult),
    "plugin.unload": ("PluginParams", PluginResult),
}
"""Host -> sidecar requests: ``{method: (params, result)}``. ``None`` params: the method takes none;
a string names a request model of :mod:`steerable_sidecar.sidecar._server` or the ToolResult envelope."""

REVERSE: Final[dict[str, tuple[object, object]]] = {
    "tool.invoke": (HostInvokeParams, _ToolResult),
    "ask_user.request": (AskUserRequestParams, AskUserResult),
    "approval.request": (ApprovalRequestParams, ApprovalResult),
    "read_state.seed": (ReadStateSeedParams, _ANY),
    "web_search.request": (WebSearchRequestParams, WebSearchResult),
}
"""Sidecar -> host requests: ``{method: (params, result)}``."""

NOTIFICATIONS: Final[dict[str, object]] = {
    "lifecycle.ready": ReadyParams,
    "agent.chat.event": ChatEventParams,
}
"""Sidecar -> host notifications: ``{method: params}``."""

ERROR_DATA: Final[dict[str, dict[str, object]]] = {
    "ToolSignal": {"message": str, "nextAction": str, "data": JsonObject},
    "WorkspaceError": {"code": str},
    "DuplicateToolError": {"name": str},
    "PluginLoadError": {"plugin": str, "tool": str, "otherPlugin": str},
    "PluginStateError": {"plugin": str, "state": str},
    "ProviderError": {"status": int, "retryable": bool},
    "McpServerError": {"server": str},
    "RemoteError": {"remoteCode": int, "remoteData": Any},
}
"""What an error response's ``data`` carries besides ``type`` (the class name), per class of
``rpc.ERROR_CODES``; a class also carries its ancestors' (``rpc.error_data_for`` writes them,
absent values left out). ``spec/sidecar.schema.json`` gives each class its ``data`` schema."""
