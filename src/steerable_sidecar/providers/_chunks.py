"""Reading a chat-completions stream: chunks folded into events and one ``ChatResponse``.

OpenAI's streaming reference is the baseline; every vendor variant is read the same way whatever
the profile (a gateway may relay any of them; docs/providers.md, "Assembling tool calls",
"Reasoning", "Errors and retries", "Vendor profiles"). What a profile adds on the read side is
which extra fields to keep for the way back (:attr:`VendorProfile.echo_call_fields`) and the id
format of a call the server sent without one.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from steerable_agent_runtime.errors import ProviderError
from steerable_agent_runtime.llm import (
    ChatResponse,
    ReasoningDelta,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    Usage,
    parse_tool_call,
)
from steerable_agent_runtime.types import new_call_id

from ..shared._http import clip
from ._vendor_profiles import VendorProfile
from ._wire_out import ALNUM9, whole_text

__all__ = [
    "MAX_DETAIL_CHARS",
    "ChunkAssembler",
    "chunk_error",
    "completion_body",
    "event_error",
    "json_body",
    "malformed_call_error",
    "retryable_status",
]

MAX_DETAIL_CHARS: Final = 500  # the provider's error text kept in a ProviderError message
_MAX_FINISH_REASON_CHARS: Final = 64  # the longest known is 29 (model_context_window_exceeded)
_RETRYABLE_STATUS: Final = frozenset({408, 409, 429})
_JOINED_DETAIL_KEYS: Final = frozenset({"text", "summary", "data"})
"""The string fields of a ``reasoning_details`` block that stream in fragments (OpenRouter)."""

_MINIMAX_STATUS: Final[Mapping[int, tuple[int, bool]]] = {
    1000: (500, True),  # unknown error
    1001: (504, True),  # timeout
    1002: (429, True),  # rate limit
    1004: (401, False),  # authentication failed
    1008: (402, False),  # insufficient balance
    1013: (500, True),  # internal service error
    1027: (400, False),  # output refused by the content policy
    1039: (429, True),  # token rate limit
    2013: (400, False),  # invalid parameters
}
"""MiniMax ``base_resp.status_code`` -> (the HTTP status it stands for, retryable)."""

_MALFORMED_CALL_HINTS: Final = (
    "failed to parse tool call",
    "failed to parse input",  # llama.cpp's chat parser ("Failed to parse input at pos 12: ...")
    "error parsing tool call",  # Ollama
    "tool call parse",
    "invalid tool call",
    "could not parse tool call",
)
"""How servers word "the model's own tool call could not be parsed" (llama.cpp, Ollama, vLLM)."""


@dataclass(slots=True)
class _PartialCall:
    id: str | None = None
    name: str | None = None
    fragments: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)


class ChunkAssembler:
    """Folds chat-completion chunks into events and, at the end, one :class:`ChatResponse`.

    Tool-call arguments are joined per call and parsed once, by :func:`parse_tool_call`, when the
    response is complete, so invalid JSON becomes an ``InvalidToolCall``, never an exception; an
    error the vendor sends in the stream becomes a :class:`ProviderError` carrying its message.

    Args:
        profile: The endpoint's profile: which extra fields to keep, which id format to make.
    """

    def __init__(self, profile: VendorProfile) -> None:
        self.profile = profile
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.refusal: list[str] = []
        self.reasoning_details: list[dict[str, Any]] = []
        self.echoed: dict[str, Any] = {}
        self.calls: list[_PartialCall] = []
        self.by_wire_index: dict[int, int] = {}
        self.finish_reason: str | None = None
        self.usage = Usage()
        self.model: str | None = None
        self.done = False  # saw data: [DONE], or a whole non-streamed completion
        self.legacy_id: str | None = None  # the id given to a legacy function_call

    def new_id(self) -> str:
        """A call id in the profile's format, for a call the server sent without one."""
        if self.profile.call_id_format == "alnum9":
            return "".join(secrets.choice(ALNUM9) for _ in range(9))
        return new_call_id()

    def feed(self, chunk: Any) -> list[StreamEvent]:
        if not isinstance(chunk, dict):
            raise ProviderError(
                f"the provider sent a stream chunk that is not an object: {clip(chunk, MAX_DETAIL_CHARS)}"
            )
        error = chunk_error(chunk)
        if error is not None:
            raise error
        if isinstance(chunk.get("model"), str) and chunk["model"]:
            self.model = chunk["model"]
        self._read_usage(chunk)
        events: list[StreamEvent] = []
        choices = chunk.get("choices")
        for choice in choices if isinstance(choices, list) else ():
            if not isinstance(choice, dict) or choice.get("index", 0) not in (0, None):
                continue  # we never ask for n > 1
            delta = choice.get("delta") or choice.get("message")  # "message": a whole completion
            if isinstance(delta, dict):
                events.extend(self._delta(delta))
            reason = choice.get("finish_reason")
            if isinstance(reason, str) and reason:
                self.finish_reason = reason[:_MAX_FINISH_REASON_CHARS]  # it reaches summaries and records
        return events

    def _read_usage(self, chunk: Mapping[str, Any]) -> None:
        """Usage where vendors put it: top level (OpenAI), ``x_groq.usage`` (Groq), a choice's (Moonshot)."""
        places: list[Any] = [chunk.get("usage")]
        groq = chunk.get("x_groq")
        if isinstance(groq, dict):
            places.append(groq.get("usage"))
        choices = chunk.get("choices")
        for choice in choices if isinstance(choices, list) else ():
            if isinstance(choice, dict):
                places.append(choice.get("usage"))
        for place in places:
            if isinstance(place, dict):
                counted = _usage(place)
                if counted.total_tokens or not self.usage.total_tokens:
                    self.usage = counted

    def _delta(self, delta: Mapping[str, Any]) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        content = delta.get("content")
        if isinstance(content, str) and content:
            self.text.append(content)
            events.append(TextDelta(content))
        refusal = delta.get("refusal")
        if isinstance(refusal, str) and refusal:
            self.refusal.append(refusal)
        for key in self.profile.echo_message_fields:
            if delta.get(key) is not None:
                self.echoed[key] = _merged(self.echoed.get(key), delta[key])
        events.extend(self._reasoning(delta))
        tool_calls = delta.get("tool_calls")
        for call in tool_calls if isinstance(tool_calls, list) else ():
            if isinstance(call, dict):
                events.append(self._tool_delta(call))
        legacy = delta.get("function_call")  # the pre-"tools" shape: one call, no id, no index
        if isinstance(legacy, dict):
            self.legacy_id = self.legacy_id or self.new_id()
            events.append(self._tool_delta({"id": self.legacy_id, "function": legacy}))
        return events

    def _reasoning(self, delta: Mapping[str, Any]) -> list[StreamEvent]:
        """``reasoning_content`` (or, failing that, ``reasoning``) text, and ``reasoning_details``."""
        details = delta.get("reasoning_details")
        for block in details if isinstance(details, list) else ():
            if isinstance(block, dict):
                self._reasoning_block(block)
        for key in ("reasoning_content", "reasoning"):  # a gateway sending both means one text
            piece = delta.get(key)
            if isinstance(piece, str) and piece:
                self.reasoning.append(piece)
                return [ReasoningDelta(piece)]
        return []

    def _reasoning_block(self, block: dict[str, Any]) -> None:
        """Keep one ``reasoning_details`` entry; a streamed fragment of an earlier block joins it."""
        index = block.get("index")
        for kept in self.reasoning_details if isinstance(index, int) else ():
            if kept.get("index") == index and kept.get("type") == block.get("type"):
                for key, value in block.items():
                    if key in _JOINED_DETAIL_KEYS and isinstance(value, str):
                        kept[key] = _joined(kept.get(key), value)
                    elif value is not None:
                        kept[key] = value
                return
        self.reasoning_details.append(dict(block))

    def _tool_delta(self, wire: Mapping[str, Any]) -> ToolCallDelta:
        raw_function = wire.get("function")
        function: Mapping[str, Any] = raw_function if isinstance(raw_function, dict) else {}
        raw_id, raw_name = wire.get("id"), function.get("name")
        call_id = raw_id if isinstance(raw_id, str) and raw_id else None
        name = raw_name if isinstance(raw_name, str) and raw_name else None
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            fragment = arguments
        elif arguments is None:
            fragment = ""
        else:
            fragment = json.dumps(arguments, ensure_ascii=False)
        position = self._position(wire.get("index"), call_id, name)
        partial = self.calls[position]
        if partial.id is None:
            partial.id = call_id
        if partial.name is None:
            partial.name = name
        if fragment:
            partial.fragments.append(fragment)
        for key in self.profile.echo_call_fields:
            if wire.get(key) is not None:
                partial.extra[key] = _merged(partial.extra.get(key), wire[key])
        return ToolCallDelta(position, partial.id, partial.name, fragment)

    def _position(self, index: Any, call_id: str | None, name: str | None) -> int:
        if isinstance(index, int) and not isinstance(index, bool):
            position = self.by_wire_index.get(index)
            if position is None or _other_call(self.calls[position].id, call_id):
                position = self._new_call()
                self.by_wire_index[index] = position
            return position
        last = self.calls[-1] if self.calls else None
        if (
            last is None
            or _other_call(last.id, call_id)
            or (call_id is None and name is not None and last.name is not None)
        ):
            return self._new_call()
        return len(self.calls) - 1

    def _new_call(self) -> int:
        self.calls.append(_PartialCall())
        return len(self.calls) - 1

    def response(self) -> ChatResponse:
        kept = [c for c in self.calls if c.id or c.name or c.fragments]
        for partial in kept:
            partial.id = partial.id or self.new_id()
        calls = tuple(parse_tool_call(c.id, c.name, whole_text("".join(c.fragments))) for c in kept)
        return ChatResponse(
            text=whole_text("".join(self.text)),
            tool_calls=calls,
            usage=self.usage,
            finish_reason=self.finish_reason,
            model=self.model,
            reasoning=whole_text("".join(self.reasoning)),
            reasoning_details=tuple(_settled(block) for block in self.reasoning_details),
            refusal=whole_text("".join(self.refusal)),
            echoed=_settled(self.echoed),
            call_fields={c.id: _settled(c.extra) for c in kept if c.id and c.extra},
        )


class _Parts(list[str]):
    """The pieces of a string that streams in fragments, joined once by :func:`_settled`.

    Joining as they come (``text += piece``) copies everything received so far at every chunk:
    50,000 fragments of 64 characters took 28 s that way, on the event loop.
    """


def _joined(earlier: Any, piece: str) -> Any:
    """``earlier`` (a string so far, or its :class:`_Parts`) with ``piece`` after it, in O(1)."""
    if isinstance(earlier, _Parts):
        earlier.append(piece)
        return earlier
    if isinstance(earlier, str):
        return _Parts((earlier, piece))
    return piece


def _merged(earlier: Any, later: Any) -> Any:
    """A streamed extra field: objects merge key by key (in place), strings join, else the later wins."""
    if isinstance(later, dict):
        out = earlier if isinstance(earlier, dict) else {}
        for key, value in later.items():
            out[key] = _merged(out.get(key), value)
        return out
    if isinstance(later, str) and isinstance(earlier, str | _Parts):
        return _joined(earlier, later)
    return later


def _settled(value: Any) -> Any:
    """``value`` with every :class:`_Parts` joined (a fresh copy of its objects)."""
    if isinstance(value, _Parts):
        return "".join(value)
    if isinstance(value, dict):
        return {key: _settled(item) for key, item in value.items()}
    return value


def _other_call(known: str | None, incoming: str | None) -> bool:
    return known is not None and incoming is not None and known != incoming


_MAX_TOKEN_COUNT: Final = 2**53
"""A usage count past this is no count (JSON numbers are exact up to it); read as 0."""


def _count(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= _MAX_TOKEN_COUNT:
        return value
    return None


def _usage(raw: Mapping[str, Any]) -> Usage:
    """A usage object's counts; the cached part of the prompt where the vendor says it.

    Cached prompt tokens: ``prompt_tokens_details.cached_tokens`` (OpenAI, GLM, OpenRouter, DeepSeek
    lately), ``prompt_cache_hit_tokens`` (DeepSeek), a ``cached_tokens`` beside ``prompt_tokens``.
    """
    details = raw.get("prompt_tokens_details")
    cached = _count(details.get("cached_tokens")) if isinstance(details, dict) else None
    for key in ("prompt_cache_hit_tokens", "cached_tokens"):
        cached = cached if cached is not None else _count(raw.get(key))
    return Usage(_count(raw.get("prompt_tokens")) or 0, _count(raw.get("completion_tokens")) or 0, cached)


def chunk_error(chunk: Mapping[str, Any]) -> ProviderError | None:
    """The error a stream chunk (or a 200 JSON body) reports, or ``None`` for an ordinary chunk.

    ``{"error": {...}}`` or ``{"error": "text"}`` (OpenRouter, Ollama), an error object at the
    top level without ``choices``: ``{"object": "error", "message", "type", "code"}`` (vLLM),
    ``{"code": 500, "message": ...}`` (llama.cpp and others), and MiniMax's ``base_resp`` with a
    non-zero ``status_code`` (its rate limit arrives this way with HTTP 200).
    """
    if chunk.get("error"):
        return _payload_error(chunk["error"])
    base = chunk.get("base_resp")
    code = base.get("status_code") if isinstance(base, dict) else None
    if isinstance(base, dict) and isinstance(code, int) and not isinstance(code, bool) and code != 0:
        return _status_code_error(base)
    message = chunk.get("message")
    if chunk.get("object") == "error" or ("choices" not in chunk and isinstance(message, str) and message):
        return _payload_error(chunk)
    return None


def _status_code_error(base: Mapping[str, Any]) -> ProviderError:
    code = base["status_code"]
    status, retryable = _MINIMAX_STATUS.get(code, (None, False))
    text = base.get("status_msg") or "(no message)"
    return ProviderError(
        f"the provider reported an error: {clip(text, MAX_DETAIL_CHARS)} (status_code {code})",
        status=status,
        retryable=retryable,
    )


def _payload_error(error: Any) -> ProviderError:
    """A ProviderError for an error reported inside a 200 response (the caller adds where from)."""
    if isinstance(error, dict):
        message = error.get("message") or error
        kind = error.get("type")
        if isinstance(kind, str) and kind and isinstance(message, str) and kind not in message:
            message = f"{message} ({kind})"
        code = error.get("code")
    else:
        message, code = error, None
    status = code if isinstance(code, int) and not isinstance(code, bool) else None
    retryable = status is not None and retryable_status(status)
    text = f"the provider reported an error mid-stream: {clip(message, MAX_DETAIL_CHARS)}"
    if malformed_call_error(text, status):  # the same request makes the same call again: not retried
        return ProviderError(text, status=status, malformed_call=True)
    return ProviderError(text, status=status, retryable=retryable)


def malformed_call_error(message: str, status: int | None) -> bool:
    """Whether a server's error says it could not parse the model's own tool call (not a fault of ours).

    llama.cpp answers 500 "Failed to parse input at pos N" mid-stream, Ollama 500 "error parsing
    tool call"; sending the identical request again only repeats it, so the loop tells the model
    instead (docs/agent-loop.md, "A tool call the server could not parse"). Only a 5xx or an error
    without a status counts: a 4xx is about the request (a key, a rate limit), whatever it says.
    """
    if status is not None and status < 500:
        return False
    lowered = message.lower()
    return any(hint in lowered for hint in _MALFORMED_CALL_HINTS)


def event_error(data: str) -> ProviderError:
    """The error an ``event: error`` (or llama.cpp ``error:``) event carries, JSON or plain text."""
    try:
        payload = json.loads(data)
    except (ValueError, RecursionError):
        return _payload_error(data)
    if isinstance(payload, dict):
        return _payload_error(payload.get("error") or payload)
    return _payload_error(payload)


def retryable_status(status: int) -> bool:
    return status in _RETRYABLE_STATUS or status >= 500


def json_body(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        shown = clip(raw.decode("utf-8", "replace"), MAX_DETAIL_CHARS)
        raise ProviderError(f"the provider sent a body that is not JSON: {shown}") from None
    except RecursionError:
        shown = clip(raw.decode("utf-8", "replace"), MAX_DETAIL_CHARS)
        raise ProviderError(f"the provider sent JSON nested too deeply to read: {shown}") from None


def completion_body(raw: bytes) -> Any:
    """A whole ``chat.completion`` body, from a server that answered JSON to ``stream: true``."""
    body = json_body(raw)
    if isinstance(body, dict) and chunk_error(body) is None and not isinstance(body.get("choices"), list):
        raise ProviderError(f"the provider answered JSON without choices: {clip(body, MAX_DETAIL_CHARS)}")
    return body
