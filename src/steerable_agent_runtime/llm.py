"""The model seam: ``LLMProvider`` and the chat types every provider speaks.

Spec: Provider seam (``WebSearchProvider`` is "the same grain as ``LLMProvider``": a protocol, a
default factory, explicit injection). The conversation is a list of OpenAI chat-completions
messages (``{"role": "system" | "user" | "assistant" | "tool", ...}``), the format every
OpenAI-compatible endpoint (OpenAI, OpenRouter, DeepSeek, GLM, Ollama) accepts, so the durable
record can be replayed to any of them unchanged.

This module has no network code: the OpenAI-compatible HTTP provider lives in
``steerable_sidecar.providers``. :class:`ScriptedProvider` replays given turns for tests and demos.
"""

from __future__ import annotations

import functools
import itertools
import json
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Protocol, TypeAlias, runtime_checkable

from ._depth import arguments_too_deep, too_deep_retry
from .errors import ProviderError, UserError
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


ScriptedTurn: TypeAlias = "ChatResponse | str | Mapping[str, Any] | Callable[[ChatRequest], ChatResponse]"

SCRIPTED_TURNS_SCHEMA: Final[dict[str, Any]] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "Scripted turns (STEERABLE_SCRIPT)",
    "type": "array",
    "items": {"$ref": "#/$defs/turn"},
    "$defs": {
        "turn": {
            "description": "A plain text answer (a string), or an answer with tool calls.",
            "type": ["string", "object"],
            "properties": {
                "text": {"type": ["string", "null"]},
                "tool_calls": {"type": "array", "items": {"$ref": "#/$defs/tool_call"}},
                "usage": {"$ref": "#/$defs/usage"},
            },
            "additionalProperties": False,
        },
        "tool_call": {
            "type": "object",
            "properties": {
                "id": {"type": "string", "description": "Missing: a fresh id."},
                "name": {"type": "string"},
                "arguments": {
                    "type": ["string", "object"],
                    "description": "A JSON string (an invalid one scripts a model's slip) or an "
                    "object; missing: no arguments.",
                },
            },
            "required": ["name"],
            "additionalProperties": False,
        },
        "usage": {
            "type": "object",
            "properties": {
                "prompt_tokens": {"type": "integer", "minimum": 0},
                "completion_tokens": {"type": "integer", "minimum": 0},
            },
            "additionalProperties": False,
        },
    },
}
"""The JSON Schema (draft 2020-12) of a scripted-turns file: a list of turns, each a string or a
mapping ``{"text"?, "tool_calls"?: [{"id"?, "name", "arguments"?}], "usage"?: {"prompt_tokens"?,
"completion_tokens"?}}``. :class:`ScriptedProvider` checks its string and mapping turns against it."""


class ScriptedProvider:
    """An :class:`LLMProvider` that replays given turns: for tests, demos and offline runs.

    A turn is a :class:`ChatResponse`, a string (a plain text answer), a mapping shaped as
    :data:`SCRIPTED_TURNS_SCHEMA` (``arguments`` may be an object or a JSON string, even an invalid
    one, to script a model's slip), or a callable taking the :class:`ChatRequest` and returning a
    :class:`ChatResponse` (docs/providers.md, ScriptedProvider). String and mapping turns are
    checked up front, so a misspelt key fails here, not halfway through a run.

    Args:
        turns: The turns, in order.
        chunk_chars: ``stream`` yields text in pieces of this many characters.

    Attributes:
        requests: Every request received, in order (for assertions).

    Raises:
        UserError: When a turn does not match the schema, e.g. ``scripted turn 3: unknown key
            'tool_call' (allowed: text, tool_calls, usage)`` (turns count from 1).
    """

    def __init__(self, turns: Iterable[Any], *, chunk_chars: int = 16) -> None:
        self._turns = list(turns)
        problem = _scripted_turns_problem(self._turns)
        if problem is not None:
            raise UserError(problem)
        self._next = 0
        self.chunk_chars = max(1, chunk_chars)
        self.requests: list[ChatRequest] = []

    @classmethod
    def from_file(cls, path: str | Path) -> ScriptedProvider:
        """Load turns from a JSON file holding a list of turns (strings or mappings).

        Raises:
            ProviderError: When the file cannot be read, is not a JSON list, or a turn does not
                match :data:`SCRIPTED_TURNS_SCHEMA` (``{path}: scripted turn 2, tool_calls: 5 is
                not a list``).
        """
        try:
            turns = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError) as exc:
            raise ProviderError(f"cannot load the scripted turns from {path}: {exc}") from exc
        if not isinstance(turns, list):
            raise ProviderError(f"{path}: scripted turns must be a JSON list")
        try:
            return cls(turns)
        except UserError as exc:
            raise ProviderError(f"{path}: {exc}") from None

    @property
    def remaining(self) -> int:
        """Turns not yet played."""
        return len(self._turns) - self._next

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """Return the next scripted turn.

        Raises:
            ProviderError: When every turn has been played.
        """
        self.requests.append(request)
        if self._next >= len(self._turns):
            raise ProviderError(f"the scripted provider has no turn left (it had {len(self._turns)})")
        turn = self._turns[self._next]
        self._next += 1
        return _scripted_response(turn, request)

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        """Yield the next turn's reasoning and text in chunks, one delta per tool call, then the response."""
        response = await self.complete(request)
        for start in range(0, len(response.reasoning), self.chunk_chars):
            yield ReasoningDelta(response.reasoning[start : start + self.chunk_chars])
        for start in range(0, len(response.text), self.chunk_chars):
            yield TextDelta(response.text[start : start + self.chunk_chars])
        for index, call in enumerate(response.tool_calls):
            arguments = call.arguments if isinstance(call, InvalidToolCall) else json.dumps(call.arguments)
            yield ToolCallDelta(index, call.id, call.name, arguments)
        yield ResponseComplete(response)


_JSON_TYPE_NAMES: Final = {
    "array": "a list",
    "object": "an object",
    "string": "a string",
    "integer": "an integer",
    "null": "null",
}
_MAX_REPORTED: Final = 3


@functools.cache
def _turns_validator() -> Any:
    """The validator of :data:`SCRIPTED_TURNS_SCHEMA`; in-process turns may use tuples and mappings."""
    import jsonschema  # heavy (~70 ms): only a scripted run pays for it

    def is_array(_checker: Any, instance: Any) -> bool:
        return isinstance(instance, (list, tuple))

    def is_object(_checker: Any, instance: Any) -> bool:
        return isinstance(instance, Mapping)

    base = jsonschema.Draft202012Validator
    checker = base.TYPE_CHECKER.redefine_many({"array": is_array, "object": is_object})
    extended = jsonschema.validators.extend(base, type_checker=checker)  # type: ignore[no-untyped-call]
    return extended(SCRIPTED_TURNS_SCHEMA)


def _scripted_turns_problem(turns: list[Any]) -> str | None:
    """Check the string and mapping turns against :data:`SCRIPTED_TURNS_SCHEMA`; ``None`` if fine.

    ``ChatResponse`` and callable turns are not checked (a blank stands in, keeping the numbering).
    """
    validator = _turns_validator()
    checkable = [
        "" if isinstance(turn, ChatResponse) or (callable(turn) and not isinstance(turn, Mapping)) else turn
        for turn in turns
    ]
    # the validator walks the turns in order: stop past the few that are shown (a 500,000-turn
    # file of bad turns would otherwise take most of a minute to report)
    errors = list(itertools.islice(validator.iter_errors(checkable), _MAX_REPORTED + 1))
    if not errors:
        return None
    errors.sort(key=lambda e: e.absolute_path[0] if e.absolute_path else -1)
    shown = "; ".join(_describe_turn_error(e) for e in errors[:_MAX_REPORTED])
    return f"{shown}; and more problems" if len(errors) > _MAX_REPORTED else shown


def _describe_turn_error(error: Any) -> str:
    """``scripted turn 2, tool_calls[0]: 'name' is required`` for one ``jsonschema`` error."""
    path = list(error.absolute_path)
    where = f"scripted turn {path[0] + 1}" if path else "scripted turns"
    inner = ""
    for step in path[1:]:
        inner += f"[{step}]" if isinstance(step, int) else (f".{step}" if inner else str(step))
    if inner:
        where += f", {inner}"
    instance, expected = error.instance, error.validator_value
    if error.validator == "additionalProperties":
        allowed = list(error.schema.get("properties", {}))
        unknown = [key for key in instance if key not in allowed]
        clipped = [repr(k if len(k) <= 40 else k[:37] + "...") for k in map(str, unknown[:5])]
        keys = ", ".join(clipped) + (", ..." if len(unknown) > 5 else "")
        what = f"unknown key{'s' if len(unknown) > 1 else ''} {keys} (allowed: {', '.join(allowed)})"
    elif error.validator == "required":
        missing = [key for key in expected if key not in instance]
        what = ", ".join(repr(key) for key in missing) + (" are" if len(missing) > 1 else " is") + " required"
    elif error.validator == "type":
        names = [expected] if isinstance(expected, str) else list(expected)
        what = f"{_shown(instance)} is not {' or '.join(_JSON_TYPE_NAMES.get(n, n) for n in names)}"
    elif error.validator == "minimum":
        what = f"{_shown(instance)} is less than {expected}"
    else:  # not reached with this schema; jsonschema's own words
        what = str(error.message)
    return f"{where}: {what}"


def _shown(value: Any, limit: int = 60) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, default=repr)
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _scripted_response(turn: Any, request: ChatRequest) -> ChatResponse:
    if isinstance(turn, ChatResponse):
        return turn
    if isinstance(turn, str):
        return ChatResponse(text=turn, finish_reason="stop")
    if callable(turn):
        result = turn(request)
        if not isinstance(result, ChatResponse):
            raise ProviderError(
                f"a scripted turn callable returned {type(result).__name__}, not ChatResponse"
            )
        return result
    if isinstance(turn, Mapping):
        calls = tuple(
            parse_tool_call(c.get("id"), c.get("name"), c.get("arguments", {}))
            for c in turn.get("tool_calls", ())
            if isinstance(c, Mapping)
        )
        usage = turn.get("usage") or {}
        try:
            counted = Usage(int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0)))
        except (AttributeError, TypeError, ValueError):
            raise ProviderError(f"a scripted turn has an invalid usage {usage!r}") from None
        return ChatResponse(
            text=str(turn.get("text") or ""),
            tool_calls=calls,
            usage=counted,
            finish_reason="tool_calls" if calls else "stop",
        )
    raise ProviderError(f"unsupported scripted turn {type(turn).__name__}")
