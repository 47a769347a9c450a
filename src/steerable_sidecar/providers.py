"""The OpenAI-compatible chat-completions provider and the default factory (configuration: ``_llm_config``).

Spec: Provider seam (``LLMProvider`` is a protocol, a default factory and explicit injection).
One HTTP implementation serves every OpenAI-compatible endpoint (OpenAI, OpenRouter, DeepSeek,
GLM, Ollama): POST ``{base_url}/chat/completions`` with ``stream: true``, parsed as server-sent
events with ``steerable_sidecar._sse``. Each endpoint's deviations from the OpenAI wire format are handled in
one place, :class:`_Assembler`, and listed in ``docs/providers.md``.

Secrets: the API key lives in a :class:`pydantic.SecretStr` (its repr is masked), is sent only in
the ``Authorization`` header, and is scrubbed from every :class:`ProviderError` message and log
line, even when a server echoes it back.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final

import httpx

from steerable_agent_runtime.errors import ConfigError, ProviderError, UserError
from steerable_agent_runtime.finish import finish_kind, finish_problem
from steerable_agent_runtime.llm import (
    ChatRequest,
    ChatResponse,
    LLMProvider,
    Message,
    ReasoningDelta,
    ResponseComplete,
    ScriptedProvider,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    Usage,
    parse_tool_call,
)
from steerable_agent_runtime.types import new_call_id

from ._http import (
    MAX_COMPLETION_BYTES,
    MAX_ERROR_BODY_BYTES,
    ClientOwner,
    clip,
    error_message,
    read_capped,
    refused_redirect,
    retry_after_s,
)
from ._llm_config import (
    API_KEY_ENV,
    BASE_URL_ENV,
    DEFAULT_BASE_URLS,
    DEFAULT_REQUEST_TIMEOUT_MS,
    MAX_REQUEST_TIMEOUT_MS,
    MODEL_ENV,
    PROVIDER_ENV,
    PROVIDER_NAMES,
    REQUEST_TIMEOUT_ENV,
    SCRIPT_ENV,
    LLMConfig,
    ProviderName,
)
from ._secrets import redact
from ._sse import aiter_sse

__all__ = [
    "API_KEY_ENV",
    "BASE_URL_ENV",
    "DEFAULT_BASE_URLS",
    "DEFAULT_REQUEST_TIMEOUT_MS",
    "MAX_REQUEST_TIMEOUT_MS",
    "MODEL_ENV",
    "PROVIDER_ENV",
    "PROVIDER_NAMES",
    "REQUEST_TIMEOUT_ENV",
    "SCRIPT_ENV",
    "LLMConfig",
    "OpenAICompatibleProvider",
    "ProviderName",
    "default_llm_provider",
]

logger = logging.getLogger(__name__)


_AFTER_DONE_S: Final = 0.25  # how long the body's end may take to follow data: [DONE]
_MAX_FINISH_REASON_CHARS: Final = 64  # the longest known is 29 (model_context_window_exceeded)
_DEFAULT_MAX_RETRIES: Final = 2
_DEFAULT_RETRY_BASE_DELAY_MS: Final = 500
_DEFAULT_RETRY_MAX_DELAY_MS: Final = 20_000
_RETRYABLE_STATUS: Final = frozenset({408, 409, 429})
_MAX_DETAIL_CHARS: Final = 500  # the provider's error text kept in a ProviderError message


# -- stream assembly --------------------------------------------------------------------------------


@dataclass(slots=True)
class _PartialCall:
    id: str | None = None
    name: str | None = None
    fragments: list[str] = field(default_factory=list)


class _Assembler:
    """Folds chat-completion chunks into events and, at the end, one :class:`ChatResponse`.

    OpenAI's streaming reference is the baseline; the vendors' variants it accepts (Ollama's whole or
    re-indexed calls, object ``arguments``, ``reasoning_content`` / ``reasoning`` /
    ``reasoning_details`` deltas, usage in a last chunk, in-stream errors, the legacy
    ``function_call`` delta, a whole ``chat.completion`` body) are listed in docs/providers.md,
    "Assembling tool calls", "Reasoning (thinking models)" and "Errors and retries". Tool-call
    arguments are joined per call and parsed once, by :func:`parse_tool_call`, when the response is
    complete, so invalid JSON becomes an ``InvalidToolCall``, never an exception; an error the vendor
    sends in the stream becomes a :class:`ProviderError` carrying its message.
    """

    def __init__(self) -> None:
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.reasoning_details: list[dict[str, Any]] = []
        self.calls: list[_PartialCall] = []
        self.by_wire_index: dict[int, int] = {}
        self.finish_reason: str | None = None
        self.usage = Usage()
        self.model: str | None = None
        self.done = False  # saw data: [DONE], or a whole non-streamed completion
        self.legacy_id: str | None = None  # the id given to a legacy function_call

    def feed(self, chunk: Any) -> list[StreamEvent]:
        if not isinstance(chunk, dict):
            raise ProviderError(
                f"the provider sent a stream chunk that is not an object: {clip(chunk, _MAX_DETAIL_CHARS)}"
            )
        error = _chunk_error(chunk)
        if error is not None:
            raise error
        if isinstance(chunk.get("model"), str) and chunk["model"]:
            self.model = chunk["model"]
        if isinstance(chunk.get("usage"), dict):
            self.usage = _usage(chunk["usage"])
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

    def _delta(self, delta: Mapping[str, Any]) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        content = delta.get("content")
        if isinstance(content, str) and content:
            self.text.append(content)
            events.append(TextDelta(content))
        events.extend(self._reasoning(delta))
        tool_calls = delta.get("tool_calls")
        for call in tool_calls if isinstance(tool_calls, list) else ():
            if isinstance(call, dict):
                events.append(self._tool_delta(call))
        legacy = delta.get("function_call")  # the pre-"tools" shape: one call, no id, no index
        if isinstance(legacy, dict):
            self.legacy_id = self.legacy_id or new_call_id()
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
                    joined = isinstance(value, str) and isinstance(kept.get(key), str)
                    if key in _JOINED_DETAIL_KEYS and joined:
                        kept[key] += value
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
        calls = tuple(
            parse_tool_call(c.id, c.name, _whole_text("".join(c.fragments)))
            for c in self.calls
            if c.id or c.name or c.fragments
        )
        return ChatResponse(
            text=_whole_text("".join(self.text)),
            tool_calls=calls,
            usage=self.usage,
            finish_reason=self.finish_reason,
            model=self.model,
            reasoning=_whole_text("".join(self.reasoning)),
            reasoning_details=tuple(self.reasoning_details),
        )


_JOINED_DETAIL_KEYS: Final = frozenset({"text", "summary", "data"})
"""The string fields of a ``reasoning_details`` block that stream in fragments (OpenRouter)."""


# -- reasoning on the way back ----------------------------------------------------------------------

_REASONING_BACK: Final[Mapping[str, tuple[str | None, bool]]] = MappingProxyType(
    {
        "openai": (None, False),
        "deepseek": ("reasoning_content", False),
        "glm": ("reasoning_content", False),
        "openrouter": ("reasoning", True),
        "ollama": ("reasoning", False),
    }
)
"""Per provider: the assistant-message key the reasoning text goes back under (``None``: not sent),
and whether OpenRouter's ``reasoning_details`` blocks go back. See docs/providers.md, "Reasoning"."""

_REASONING_FIELDS: Final = ("reasoning_content", "reasoning", "reasoning_details")


def _outgoing_messages(provider: str, messages: Any) -> list[Message]:
    """The conversation as ``provider``'s endpoint should receive it.

    * Reasoning (``reasoning_content``, or ``reasoning`` from a host that sent that, and
      ``reasoning_details``) goes back on assistant messages under the key the vendor reads, and
      is stripped where the vendor does not take it (OpenAI rejects unknown message fields).
    * An assistant message with ``content: null`` and no tool calls is sent with ``content: ""``
      (Ollama answers 400 "invalid message content type: <nil>" otherwise).

    Other messages pass unchanged (the same objects).
    """
    key, details = _REASONING_BACK.get(provider, (None, False))
    out: list[Message] = []
    for message in messages:
        if not isinstance(message, dict) or message.get("role") != "assistant":
            out.append(message)
            continue
        needs_content = message.get("content") is None and not message.get("tool_calls")
        if not needs_content and not any(field in message for field in _REASONING_FIELDS):
            out.append(message)
            continue
        sent = {k: v for k, v in message.items() if k not in _REASONING_FIELDS}
        if needs_content:
            sent["content"] = ""
        text = message.get("reasoning_content") or message.get("reasoning")
        blocks = message.get("reasoning_details")
        if details and isinstance(blocks, list) and blocks:
            sent["reasoning_details"] = blocks
        elif key is not None and isinstance(text, str) and text:
            sent[key] = text
        out.append(sent)
    return out


def _whole_text(text: str) -> str:
    """Join surrogate halves that arrived in different chunks; a lone one becomes U+FFFD.

    A server may split an emoji's UTF-16 surrogate pair across two SSE chunks as JSON escapes
    (the high half in one chunk, the low half in the next); each chunk decodes to a lone
    surrogate, which no UTF-8 encoder accepts, so the joined text is repaired once here.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def _wire_safe(value: Any) -> Any:
    """``value`` with every string passed through :func:`_whole_text` (for a request body)."""
    if isinstance(value, str):
        return _whole_text(value)
    if isinstance(value, dict):
        return {_whole_text(k) if isinstance(k, str) else k: _wire_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_wire_safe(v) for v in value]
    return value


def _other_call(known: str | None, incoming: str | None) -> bool:
    return known is not None and incoming is not None and known != incoming


def _usage(raw: Mapping[str, Any]) -> Usage:
    def count(key: str) -> int:
        value = raw.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0

    return Usage(count("prompt_tokens"), count("completion_tokens"))


def _chunk_error(chunk: Mapping[str, Any]) -> ProviderError | None:
    """The error a stream chunk reports, or ``None`` for an ordinary chunk.

    ``{"error": {...}}`` or ``{"error": "text"}`` (OpenRouter, Ollama), and an error object at the
    top level, which has no ``choices``: ``{"object": "error", "message", "type", "code"}`` (vLLM),
    ``{"code": 500, "message": ...}`` (llama.cpp and others).
    """
    if chunk.get("error"):
        return _payload_error(chunk["error"])
    message = chunk.get("message")
    if chunk.get("object") == "error" or ("choices" not in chunk and isinstance(message, str) and message):
        return _payload_error(chunk)
    return None


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
    retryable = status is not None and _retryable_status(status)
    return ProviderError(
        f"the provider reported an error mid-stream: {clip(message, _MAX_DETAIL_CHARS)}",
        status=status,
        retryable=retryable,
    )


def _event_error(data: str) -> ProviderError:
    """The error an ``event: error`` (or llama.cpp ``error:``) event carries, JSON or plain text."""
    try:
        payload = json.loads(data)
    except (ValueError, RecursionError):
        return _payload_error(data)
    if isinstance(payload, dict):
        return _payload_error(payload.get("error") or payload)
    return _payload_error(payload)


def _retryable_status(status: int) -> bool:
    return status in _RETRYABLE_STATUS or status >= 500


# -- the provider -----------------------------------------------------------------------------------


@dataclass(slots=True)
class _Attempt:
    yielded: bool = False
    retry_after_s: float | None = None


class OpenAICompatibleProvider(ClientOwner):
    """An :class:`~steerable_agent_runtime.llm.LLMProvider` over an OpenAI-compatible HTTP endpoint.

    Each call POSTs ``{base_url}/chat/completions`` with ``stream: true``, yields :class:`TextDelta`
    and :class:`ToolCallDelta` events as they arrive and ends with exactly one
    :class:`ResponseComplete`; :meth:`complete` consumes :meth:`stream`. A ``retryable`` failure is
    retried only while nothing has been yielded (docs/providers.md, "Errors and retries"). One shared
    ``httpx.AsyncClient`` serves every call; close the provider with :meth:`aclose` or ``async with``
    (an injected ``client`` is left open for its owner).

    Args:
        config: The endpoint configuration (not ``scripted``: use :func:`default_llm_provider`).
        client: An ``httpx.AsyncClient`` to use instead of the provider's own (tests, proxies).
            The config's timeout is applied per request either way.
        max_retries: Retries after the first attempt; 0 disables retrying.
        retry_base_delay_ms: The first backoff wait, in milliseconds.
        retry_max_delay_ms: The longest single wait, in milliseconds (caps ``Retry-After`` too).

    Raises:
        ConfigError: When ``config`` is the scripted provider.
        UserError: When a retry setting is negative.
    """

    def __init__(
        self,
        config: LLMConfig,
        *,
        client: httpx.AsyncClient | None = None,
        max_retries: int = _DEFAULT_MAX_RETRIES,
        retry_base_delay_ms: int = _DEFAULT_RETRY_BASE_DELAY_MS,
        retry_max_delay_ms: int = _DEFAULT_RETRY_MAX_DELAY_MS,
    ) -> None:
        if config.base_url is None or config.model is None:
            raise ConfigError(
                f"STEERABLE_PROVIDER={config.provider} is not served over HTTP; use default_llm_provider"
            )
        if min(max_retries, retry_base_delay_ms, retry_max_delay_ms) < 0:
            raise UserError("max_retries, retry_base_delay_ms and retry_max_delay_ms must not be negative")
        self.config = config
        self.max_retries = max_retries
        self.retry_base_delay_ms = retry_base_delay_ms
        self.retry_max_delay_ms = retry_max_delay_ms
        self._model = config.model
        self._url = f"{config.base_url}/chat/completions"
        self._where = f"{config.provider} at {config.base_url}"
        self._secret = config.api_key.get_secret_value() if config.api_key else ""
        self._timeout = httpx.Timeout(config.request_timeout_ms / 1000)
        self._headers = {"Accept": "text/event-stream", "Content-Type": "application/json"}
        if self._secret:
            self._headers["Authorization"] = f"Bearer {self._secret}"
        super().__init__(client, what="the model provider", timeout=self._timeout)

    def __repr__(self) -> str:
        return f"OpenAICompatibleProvider({self.config!r})"

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """Run one model call and return the whole response (by consuming :meth:`stream`).

        Raises:
            ProviderError: As :meth:`stream` does.
        """
        response: ChatResponse | None = None
        async for event in self.stream(request):
            if isinstance(event, ResponseComplete):
                response = event.response
        if response is None:  # pragma: no cover - stream() always ends with ResponseComplete
            raise ProviderError(f"{self._where}: the stream ended without a response")
        return response

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        """Run one model call, yielding deltas as they arrive and then one :class:`ResponseComplete`.

        The request body is ``{"model", "messages", "stream": true, "stream_options":
        {"include_usage": true}}`` plus ``tools`` when any are offered and ``temperature`` /
        ``max_tokens`` when set; ``request.model`` overrides the configured model.

        Raises:
            ProviderError: For a non-2xx answer (``status`` set; ``retryable`` for 408, 409, 429
                and 5xx), a network error or timeout (``retryable``), an error reported inside
                the stream, an unparseable chunk, or a stream that ended before any
                ``finish_reason`` or ``[DONE]`` ("stream ended early"). Raised after the retries
                described on the class; the message never contains the API key.
        """
        content = self._encode(request)
        retries = 0
        while True:
            attempt = _Attempt()
            try:
                async for event in self._attempt(content, attempt):
                    attempt.yielded = True
                    yield event
                return
            except ProviderError as exc:
                if attempt.yielded or not exc.retryable or retries >= self.max_retries:
                    raise
                delay_s = self._delay_s(retries, attempt.retry_after_s)
                retries += 1
                logger.warning(
                    "%s; retrying in %.2f s (retry %d of %d)", exc, delay_s, retries, self.max_retries
                )
            await asyncio.sleep(delay_s)

    def _encode(self, request: ChatRequest) -> bytes:
        body: dict[str, Any] = {
            "model": request.model or self._model,
            "messages": _outgoing_messages(self.config.provider, request.messages),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if request.tools:
            body["tools"] = list(request.tools)
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.max_tokens is not None:
            body["max_tokens"] = request.max_tokens
        try:
            return json.dumps(body, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate somewhere in the conversation: repair, don't fail
            return json.dumps(_wire_safe(body), ensure_ascii=False).encode("utf-8")

    def _delay_s(self, retries: int, retry_after_s: float | None) -> float:
        wanted = retry_after_s if retry_after_s is not None else self.retry_base_delay_ms / 1000 * 2**retries
        return min(wanted, self.retry_max_delay_ms / 1000)

    async def _attempt(self, content: bytes, attempt: _Attempt) -> AsyncIterator[StreamEvent]:
        """One HTTP exchange; every failure leaves as a scrubbed :class:`ProviderError`."""
        assembler = _Assembler()
        try:
            async with self._client.stream(  # never follows a redirect, an injected client's neither
                "POST",
                self._url,
                content=content,
                headers=self._headers,
                timeout=self._timeout,
                follow_redirects=False,
            ) as response:
                async for event in self._answer(response, assembler, attempt):
                    yield event
        except ProviderError as exc:
            raise self._scrubbed(self._located(exc)) from None
        except (httpx.InvalidURL, httpx.RequestError) as exc:
            raise self._exchange_error(exc) from None
        if not assembler.done and assembler.finish_reason is None:
            raise ProviderError(
                f"{self._where}: the stream ended early (no finish_reason and no [DONE])", retryable=True
            )
        if finish_kind(assembler.finish_reason) == "error":  # GLM network_error, DeepSeek's resources
            raise ProviderError(f"{self._where}: {finish_problem(assembler.finish_reason)}", retryable=True)
        yield ResponseComplete(assembler.response())

    async def _answer(
        self, response: httpx.Response, assembler: _Assembler, attempt: _Attempt
    ) -> AsyncIterator[StreamEvent]:
        """The events of one answer: an error status raised, a whole JSON completion, or the SSE body."""
        if not response.is_success:  # a bounded read: a gzip bomb or endless body costs 64 KB
            body, _cut = await read_capped(response, MAX_ERROR_BODY_BYTES)
            attempt.retry_after_s = retry_after_s(response.headers)
            raise self._status_error(response, body)
        if "text/event-stream" not in response.headers.get("content-type", ""):
            body, cut = await read_capped(response, MAX_COMPLETION_BYTES)
            if cut:
                raise ProviderError(
                    f"{self._where}: the completion is larger than {MAX_COMPLETION_BYTES} bytes"
                )
            for event in assembler.feed(_completion(body)):
                yield event
            assembler.done = True
        else:
            async for event in self._events(response, assembler):
                yield event

    def _exchange_error(self, exc: httpx.InvalidURL | httpx.RequestError) -> ProviderError:
        """The scrubbed :class:`ProviderError` for what httpx raised during one exchange."""
        if isinstance(exc, httpx.TimeoutException):
            return ProviderError(
                self._scrub(
                    f"{self._where}: {_timeout_phase(exc)} timed out after "
                    f"{self.config.request_timeout_ms} ms (STEERABLE_REQUEST_TIMEOUT_MS)"
                ),
                retryable=True,
            )
        refused = refused_redirect(exc)  # a Location httpx cannot parse: not worth a retry
        if isinstance(exc, httpx.InvalidURL):  # a redirect to mailto:, javascript:, data:... (not followed)
            return ProviderError(self._scrub(f"{self._where}: {refused or exc}"))
        why = refused or f"{type(exc).__name__}: {exc or 'connection failed'}"  # network, protocol, decoding
        return ProviderError(
            self._scrub(f"{self._where}: {why}"),
            retryable=refused is None and isinstance(exc, httpx.TransportError),
        )

    async def _events(self, response: httpx.Response, assembler: _Assembler) -> AsyncIterator[StreamEvent]:
        """The events of one SSE body, up to ``data: [DONE]`` (which sets ``assembler.done``).

        SSE comments (``: OPENROUTER PROCESSING``) are dropped by :func:`aiter_sse`, which also
        reads llama.cpp's ``error:`` lines as ``error`` events. After ``[DONE]`` the rest of the
        body is read for at most ``_AFTER_DONE_S`` (its end normally follows at once, and the
        connection is then reused); a server that keeps the stream open (pings, silence) is cut
        off there, so it cannot turn a finished answer into a timeout.
        """
        async with contextlib.aclosing(aiter_sse(response)) as events:
            async for sse in events:
                data = sse.data.strip()
                if data == "[DONE]":
                    assembler.done = True
                    break
                if sse.event == "error":
                    raise _event_error(data or "(an error event without a message)")
                if not data:
                    continue
                chunk = _json(data.encode("utf-8"))
                for event in assembler.feed(chunk):
                    yield event
            if assembler.done:  # the body's end usually follows at once: read it, so the connection
                # is reused; a server that keeps the stream open gets a moment, then it is closed
                with contextlib.suppress(httpx.TransportError, TimeoutError):
                    async with asyncio.timeout(_AFTER_DONE_S):
                        async for _ in events:
                            pass

    def _status_error(self, response: httpx.Response, body: bytes) -> ProviderError:
        status = response.status_code
        hint = " (check STEERABLE_API_KEY)" if status in (401, 403) else ""
        detail = error_message(body, limit=_MAX_DETAIL_CHARS)
        return ProviderError(
            f"{self._where} answered HTTP {status}{hint}: {detail}",
            status=status,
            retryable=_retryable_status(status),
        )

    def _scrub(self, text: str) -> str:
        """``text`` (an error message) without the key, whole or cut short by a clip (``sk-ab...``).

        Only error messages and log lines are scrubbed, never the model's output. Keys shorter
        than 8 characters (``ollama``) are placeholders, not secrets, and are left alone so error
        text stays readable.
        """
        return redact(text, self._secret or "")

    def _located(self, exc: ProviderError) -> ProviderError:
        """``exc`` with the provider and base URL in front of its message, when not there yet."""
        if str(exc).startswith(self._where):
            return exc
        return ProviderError(f"{self._where}: {exc}", status=exc.status, retryable=exc.retryable)

    def _scrubbed(self, exc: ProviderError) -> ProviderError:
        text = str(exc)
        if self._scrub(text) == text:
            return exc
        return ProviderError(self._scrub(text), status=exc.status, retryable=exc.retryable)


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        shown = clip(raw.decode("utf-8", "replace"), _MAX_DETAIL_CHARS)
        raise ProviderError(f"the provider sent a body that is not JSON: {shown}") from None
    except RecursionError:
        shown = clip(raw.decode("utf-8", "replace"), _MAX_DETAIL_CHARS)
        raise ProviderError(f"the provider sent JSON nested too deeply to read: {shown}") from None


def _completion(raw: bytes) -> Any:
    """A whole ``chat.completion`` body, from a server that answered JSON to ``stream: true``."""
    body = _json(raw)
    if isinstance(body, dict) and _chunk_error(body) is None and not isinstance(body.get("choices"), list):
        raise ProviderError(f"the provider answered JSON without choices: {clip(body, _MAX_DETAIL_CHARS)}")
    return body


def _timeout_phase(exc: httpx.TimeoutException) -> str:
    if isinstance(exc, httpx.ConnectTimeout):
        return "connecting"
    if isinstance(exc, httpx.WriteTimeout):
        return "sending the request"
    if isinstance(exc, httpx.PoolTimeout):
        return "waiting for a free connection"
    return "waiting for the answer"


# -- the default factory ----------------------------------------------------------------------------


def default_llm_provider(
    config: LLMConfig | None = None, *, environ: Mapping[str, str] | None = None
) -> LLMProvider:
    """Build the provider the configuration names: the default factory of the provider seam.

    Args:
        config: The configuration; ``None`` resolves it with :meth:`LLMConfig.from_env`.
        environ: The environment ``from_env`` reads when ``config`` is ``None``.

    Returns:
        A :class:`ScriptedProvider` loaded from ``STEERABLE_SCRIPT`` for ``scripted``, else an
        :class:`OpenAICompatibleProvider` (close it with ``aclose()``).

    Raises:
        ConfigError: When the configuration is invalid or the script file cannot be loaded.
    """
    if config is None:
        config = LLMConfig.from_env(environ)
    if config.provider == "scripted":
        assert config.script is not None  # LLMConfig guarantees it
        try:
            return ScriptedProvider.from_file(config.script)
        except ProviderError as exc:
            raise ConfigError(f"STEERABLE_SCRIPT: {exc}") from None
    return OpenAICompatibleProvider(config)
