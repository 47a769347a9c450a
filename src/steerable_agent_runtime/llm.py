"""The model seam: ``LLMProvider`` and the chat types every provider speaks.

Spec: Provider seam (``WebSearchProvider`` is "the same grain as ``LLMProvider``": a protocol, a
default factory, explicit injection). The conversation is a list of OpenAI chat-completions
messages (``{"role": "system" | "user" | "assistant" | "tool", ...}``), the format every
OpenAI-compatible endpoint (OpenAI, OpenRouter, DeepSeek, GLM, Ollama) accepts, so the durable
record can be replayed to any of them unchanged.

This module has no network code: the OpenAI-compatible HTTP provider lives in
``steerable_sidecar.providers._openai``. ``ScriptedProvider``, which replays given turns for tests and
demos, lives in :mod:`steerable_agent_runtime.scripted` and is served from here too.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeAlias, runtime_checkable

from ._depth import arguments_too_deep, too_deep_retry
from .types import ToolCall, new_call_id

__all__ = [
    "ChatRequest",
    "ChatResponse",
    "InvalidToolCall",
    "LLMProvider",
    "Message",
    "REASONING_KEYS",
    "ReasoningDelta",
    "ResponseComplete",
    "SCRIPTED_TURNS_SCHEMA",
    "ScriptedProvider",
    "StreamEvent",
    "TextDelta",
    "ToolCallDelta",
    "Usage",
    "parse_tool_call",
]

Message: TypeAlias = dict[str, Any]
"""One OpenAI chat-completions message, e.g. ``{"role": "user", "content": "hi"}``."""

REASONING_KEYS: Final = ("reasoning_content", "reasoning_details")
"""The keys an assistant message carries its reasoning under, in the conversation and the durable
record: ``reasoning_content`` (the text, as DeepSeek, vLLM and GLM name it) and
``reasoning_details`` (OpenRouter's structured blocks, verbatim). Each provider maps them to what
its endpoint accepts before sending (``docs/providers.md``, "Reasoning")."""


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts of one model call (or a sum of several).

    Attributes:
        prompt_tokens: Tokens sent (the provider's ``prompt_tokens``).
        completion_tokens: Tokens generated.
        cached_tokens: Of ``prompt_tokens``, those the server read from its prompt cache
            (``prompt_tokens_details.cached_tokens``, DeepSeek's ``prompt_cache_hit_tokens``);
            ``None`` when it did not say.
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int | None = None

    @property
    def total_tokens(self) -> int:
        """``prompt_tokens + completion_tokens``."""
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        cached = (
            None
            if self.cached_tokens is None and other.cached_tokens is None
            else (self.cached_tokens or 0) + (other.cached_tokens or 0)
        )
        return Usage(
            self.prompt_tokens + other.prompt_tokens, self.completion_tokens + other.completion_tokens, cached
        )

    def to_dict(self) -> dict[str, int]:
        """Return ``{"promptTokens", "completionTokens", "totalTokens"}`` (camelCase, for the wire)."""
        return {
            "promptTokens": self.prompt_tokens,
            "completionTokens": self.completion_tokens,
            "totalTokens": self.total_tokens,
        }


@dataclass(frozen=True, slots=True)
class InvalidToolCall:
    """A tool call the model sent that cannot become a :class:`ToolCall`.

    The agent loop answers it with a failed result carrying ``needsFollowup`` (the model can fix
    its JSON), without dispatching anything.

    Attributes:
        id: The call id (generated when the model sent none).
        name: The tool name as sent (may be empty).
        arguments: The raw argument text as sent.
        error: Why it was refused, phrased for the model.
        data: The failed result's ``data``; ``None`` gives ``{"code": "invalid_tool_call"}``
            (arguments nested too deeply carry the router's ``arguments_too_deep`` data instead).
    """

    id: str
    name: str
    arguments: str
    error: str
    data: Mapping[str, Any] | None = field(default=None, compare=False)


AnyToolCall: TypeAlias = ToolCall | InvalidToolCall


def parse_tool_call(call_id: str | None, name: str | None, arguments: Any) -> AnyToolCall:
    """Turn one model tool call into a :class:`ToolCall`, parsing string arguments exactly once.

    Providers send ``arguments`` as a JSON string (OpenAI wire format). An empty string means no
    arguments (``{}``), which some models send for parameterless tools.

    Args:
        call_id: The id the model gave; ``None`` or ``""`` gets a fresh cuid2 id.
        name: The tool name.
        arguments: A JSON string, or an already-decoded mapping.

    Returns:
        A :class:`ToolCall`, or an :class:`InvalidToolCall` when the name is missing, the
        arguments are not a JSON object (invalid JSON, an array, a number...), or they nest
        deeper than the router accepts (SAFE-6: the loop then never holds them; the error is the
        router's, ``data.code == "arguments_too_deep"``).
    """
    ident = call_id if isinstance(call_id, str) and call_id else new_call_id()
    tool_name = name if isinstance(name, str) else ""
    if not tool_name:
        return InvalidToolCall(
            ident, "", _raw(arguments), "the tool call has no function name; name one of the offered tools"
        )
    if isinstance(arguments, Mapping):
        decoded: Any = dict(arguments)
    elif arguments is None or (isinstance(arguments, str) and not arguments.strip()):
        decoded = {}
    elif isinstance(arguments, str):
        try:
            decoded = json.loads(arguments)
        except RecursionError:  # deeper than the decoder goes
            return _too_deep(ident, tool_name, arguments, None)
        except ValueError as exc:
            return InvalidToolCall(
                ident,
                tool_name,
                arguments,
                f"the arguments of {tool_name} are not valid JSON ({getattr(exc, 'msg', exc)}); "
                "send the arguments as one JSON object",
            )
    else:
        decoded = arguments
    if not isinstance(decoded, dict):
        return InvalidToolCall(
            ident,
            tool_name,
            _raw(arguments),
            f"the arguments of {tool_name} must be a JSON object, not {type(decoded).__name__}",
        )
    depth = arguments_too_deep(decoded)
    if depth is not None:
        return _too_deep(ident, tool_name, _raw(arguments), depth)
    return ToolCall(id=ident, name=tool_name, arguments=decoded)


def _too_deep(ident: str, name: str, raw: str, depth: int | None) -> InvalidToolCall:
    signal = too_deep_retry(name, depth)
    return InvalidToolCall(ident, name, raw, signal.error, signal.data)


def _raw(arguments: Any) -> str:
    """The argument text as sent: the string itself, or a mapping written as JSON."""
    if isinstance(arguments, str):
        return arguments
    try:
        return json.dumps(arguments, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(arguments)
    except RecursionError:  # and str() would recurse as deep
        return "(arguments nested too deeply to write)"


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """One model call.

    Attributes:
        messages: The conversation so far (OpenAI chat messages).
        tools: The offered tools as OpenAI function-tool descriptors
            (``ToolRouter.describe_model()``); empty offers none.
        model: Overrides the provider's configured model.
        temperature: Sampling temperature, when set.
        max_tokens: Cap on generated tokens, when set.
    """

    messages: Sequence[Message]
    tools: Sequence[Mapping[str, Any]] = ()
    model: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class ChatResponse:
    """The model's whole answer to one :class:`ChatRequest`.

    Attributes:
        text: The assistant text (may be empty when it only calls tools).
        tool_calls: Tool calls in the order the model sent them; unparseable ones are
            :class:`InvalidToolCall` entries.
        usage: Token counts.
        finish_reason: The provider's ``finish_reason`` (``stop``, ``tool_calls``, ``length``...).
        model: The model that answered, when the provider says.
        reasoning: The model's reasoning text (``reasoning_content`` / ``reasoning`` deltas of a
            thinking model); empty when it sent none.
        reasoning_details: OpenRouter's ``reasoning_details`` blocks, verbatim, in order.
        refusal: The model's refusal text (OpenAI's ``refusal`` field); non-empty means the model
            declined the task, and the run ends ``refused`` carrying it.
        echoed: Fields of the message the vendor needs back verbatim on the next request
            (Gemini's ``extra_content``), kept in :meth:`assistant_message`.
        call_fields: The same per tool call, by call id (Gemini's ``thought_signature``).
    """

    text: str = ""
    tool_calls: tuple[AnyToolCall, ...] = ()
    usage: Usage = field(default_factory=Usage)
    finish_reason: str | None = None
    model: str | None = None
    reasoning: str = ""
    reasoning_details: tuple[Any, ...] = ()
    refusal: str = ""
    echoed: Mapping[str, Any] = field(default_factory=dict)
    call_fields: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    @property
    def is_empty(self) -> bool:
        """``True`` when the answer has no text (blank counts as none) and no tool calls.

        Reasoning alone does not make an answer: a thinking model that only thought said nothing.
        A refusal is an answer (the run ends ``refused``).
        """
        return not self.tool_calls and not self.text.strip() and not self.refusal.strip()

    def assistant_message(self) -> Message:
        """Return the assistant message to append to the conversation (OpenAI shape).

        Invalid calls keep their raw argument text so each later ``tool`` message answers an id
        the provider has seen. ``content`` is ``None`` only beside tool calls (an assistant message
        with neither is refused by some endpoints: Ollama answers 400 "invalid message content
        type: <nil>"). Reasoning is kept under :data:`REASONING_KEYS`, so a thinking model gets it
        back on the next request where its endpoint wants it; the vendor's :attr:`echoed` and
        :attr:`call_fields` are kept verbatim (each provider strips what its endpoint refuses).
        """
        content = self.text if self.text or not self.tool_calls else None
        message: Message = {"role": "assistant", "content": content, **self.echoed}
        if self.reasoning:
            message["reasoning_content"] = self.reasoning
        if self.reasoning_details:
            message["reasoning_details"] = list(self.reasoning_details)
        if self.tool_calls:
            message["tool_calls"] = [
                {
                    **self.call_fields.get(call.id, {}),
                    "id": call.id,
                    "type": "function",
                    "function": {
                        "name": call.name,
                        "arguments": call.arguments
                        if isinstance(call, InvalidToolCall)
                        else json.dumps(call.arguments, ensure_ascii=False),
                    },
                }
                for call in self.tool_calls
            ]
        return message


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of assistant text, as it streams."""

    text: str


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    """A piece of the model's reasoning (a thinking model's ``reasoning_content``), as it streams."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    """A piece of a tool call as it streams (for progress display; the loop waits for the whole call).

    Attributes:
        index: The call's position in the response.
        id: The call id, once known.
        name: The tool name, once known.
        arguments: This delta's fragment of the argument JSON text.
    """

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""


@dataclass(frozen=True, slots=True)
class ResponseComplete:
    """The last event of every stream: the assembled response."""

    response: ChatResponse


StreamEvent: TypeAlias = TextDelta | ReasoningDelta | ToolCallDelta | ResponseComplete
"""What :meth:`LLMProvider.stream` yields; the stream always ends with one :class:`ResponseComplete`."""


@runtime_checkable
class LLMProvider(Protocol):
    """A chat model. Implementations are injected (never looked up globally).

    Both methods raise :class:`~steerable_agent_runtime.errors.ProviderError` when the model call
    fails (HTTP status, network error, a broken stream). A malformed *tool call* is not a provider
    failure: it arrives as an :class:`InvalidToolCall`.
    """

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """Run one model call and return the whole response."""
        ...

    def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        """Run one model call, yielding deltas and finally one :class:`ResponseComplete`."""
        ...


if TYPE_CHECKING:
    from .scripted import SCRIPTED_TURNS_SCHEMA, ScriptedProvider
_SCRIPTED: Final = frozenset({"SCRIPTED_TURNS_SCHEMA", "ScriptedProvider"})


def __getattr__(name: str) -> object:
    """``ScriptedProvider`` and ``SCRIPTED_TURNS_SCHEMA``, from :mod:`.scripted` (their module)."""
    if name in _SCRIPTED:
        from . import scripted

        return getattr(scripted, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
