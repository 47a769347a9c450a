"""The OpenAI-compatible chat-completions provider and the default factory (configuration: ``_config``).

Spec: Provider seam (``LLMProvider`` is a protocol, a default factory and explicit injection).
One HTTP implementation serves every OpenAI-compatible endpoint: POST
``{base_url}/chat/completions`` with ``stream: true``, parsed as server-sent events with
``steerable_sidecar.providers._sse``. What each vendor needs differently is data, its
:class:`~steerable_sidecar.providers._vendor_profiles.VendorProfile`: the request is shaped by
``_wire_out``, the stream read by ``_chunks``; both are listed in ``docs/providers.md``.

Secrets: the API key lives in a :class:`pydantic.SecretStr` (its repr is masked), is sent only in
the ``Authorization`` (Azure: ``api-key``) header, and is scrubbed from every
:class:`ProviderError` message and log line, even when a server echoes it back.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Final
from urllib.parse import urlsplit

import httpx

from steerable_agent_runtime.errors import ConfigError, ProviderError, UserError
from steerable_agent_runtime.finish import finish_kind, finish_problem
from steerable_agent_runtime.llm import (
    ChatRequest,
    ChatResponse,
    LLMProvider,
    ResponseComplete,
    ScriptedProvider,
    StreamEvent,
)

from ..shared._http import (
    MAX_COMPLETION_BYTES,
    MAX_ERROR_BODY_BYTES,
    ClientOwner,
    error_message,
    read_capped,
    refused_redirect,
    retry_after_s,
)
from ..shared._secrets import redact
from ._chunks import (
    MAX_DETAIL_CHARS,
    ChunkAssembler,
    completion_body,
    event_error,
    json_body,
    malformed_call_error,
    retryable_status,
)
from ._config import (
    API_KEY_ENV,
    BASE_URL_ENV,
    DEFAULT_BASE_URLS,
    DEFAULT_MAX_TOKENS,
    DEFAULT_REQUEST_TIMEOUT_MS,
    MAX_REQUEST_TIMEOUT_MS,
    MAX_TOKENS_ENV,
    MODEL_ENV,
    PROVIDER_ENV,
    PROVIDER_NAMES,
    REQUEST_TIMEOUT_ENV,
    SCRIPT_ENV,
    LLMConfig,
    ProviderName,
)
from ._sse import aiter_sse
from ._wire_out import encoded, request_body

__all__ = [
    "API_KEY_ENV",
    "BASE_URL_ENV",
    "DEFAULT_BASE_URLS",
    "DEFAULT_MAX_TOKENS",
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
_DEFAULT_MAX_RETRIES: Final = 2
_DEFAULT_RETRY_BASE_DELAY_MS: Final = 500
_DEFAULT_RETRY_MAX_DELAY_MS: Final = 20_000


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
        self._profile = config.choice.profile
        self._tools_checked = False  # the once-per-provider probe of _tools_probe
        base, _, query = config.base_url.partition("?")
        self._url = f"{base}/chat/completions" + (f"?{query}" if query else "")
        self._where = f"{config.provider} at {base}"
        self._secret = config.api_key.get_secret_value() if config.api_key else ""
        self._timeout = httpx.Timeout(config.request_timeout_ms / 1000)
        self._headers = {"Accept": "text/event-stream", "Content-Type": "application/json"}
        self._headers.update(config.extra_headers)
        if self._secret and self._profile.auth_header == "api-key":
            self._headers["api-key"] = self._secret
        elif self._secret:
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

        The request body is ``{"model", "messages", "stream": true}`` shaped by the endpoint's
        vendor profile (``_wire_out.request_body``: ``stream_options``, ``tools`` when any are
        offered, ``temperature``, the output bound, the thinking switch, ``STEERABLE_EXTRA_BODY``);
        ``request.model`` overrides the configured model.

        Raises:
            ProviderError: For a non-2xx answer (``status`` set; ``retryable`` for 408, 409, 429
                and 5xx), a network error or timeout (``retryable``), an error reported inside
                the stream, an unparseable chunk, or a stream that ended before any
                ``finish_reason`` or ``[DONE]`` ("stream ended early"). Raised after the retries
                described on the class; the message never contains the API key.
        """
        if request.tools and not self._tools_checked:
            await self._check_tools(request)
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

    async def _check_tools(self, request: ChatRequest) -> None:
        """Once per provider: refuse to start a run whose tools would never reach the model."""
        if self._profile.tools_probe == "none":
            self._tools_checked = True
            return
        from ._tools_probe import tools_problem

        assert self.config.base_url is not None  # checked in __init__
        problem = await tools_problem(
            self._client,
            self._profile.tools_probe,
            self.config.base_url,
            request.model or self._model,
            request.tools,
            self._headers,
        )
        if problem is not None:
            raise ProviderError(self._scrub(f"{self._where}: {problem}"))
        self._tools_checked = True

    def _encode(self, request: ChatRequest) -> bytes:
        return encoded(request_body(self.config, request, request.model or self._model))

    def _delay_s(self, retries: int, retry_after_s: float | None) -> float:
        wanted = retry_after_s if retry_after_s is not None else self.retry_base_delay_ms / 1000 * 2**retries
        return min(wanted, self.retry_max_delay_ms / 1000)

    async def _attempt(self, content: bytes, attempt: _Attempt) -> AsyncIterator[StreamEvent]:
        """One HTTP exchange; every failure leaves as a scrubbed :class:`ProviderError`."""
        assembler = ChunkAssembler(self._profile)
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
        self, response: httpx.Response, assembler: ChunkAssembler, attempt: _Attempt
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
            for event in assembler.feed(completion_body(body)):
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

    async def _events(
        self, response: httpx.Response, assembler: ChunkAssembler
    ) -> AsyncIterator[StreamEvent]:
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
                    raise event_error(data or "(an error event without a message)")
                if not data:
                    continue
                chunk = json_body(data.encode("utf-8"))
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
        detail = _page_text(error_message(body, limit=MAX_DETAIL_CHARS))
        hint = ""
        if status in (401, 403):
            hint = " (check STEERABLE_API_KEY)"
        elif status in (400, 422) and self._profile.max_tokens_field in detail:
            hint = f" (set {MAX_TOKENS_ENV} to what the model accepts, or 0 to send no bound)"
        if status in (404, 405, 501):  # the URL is the problem (501: a server that takes no POST, a
            # static file server): show the one posted, and the likely fix; asking again cannot help
            message = f"{self._where} answered HTTP {status} to POST {self._url} ({detail})"
            message += _missing_version_hint(self.config.base_url or "")
            return ProviderError(message, status=status, retryable=False)
        else:
            message = f"{self._where} answered HTTP {status}{hint}: {detail}"
        if malformed_call_error(detail, status):  # the model's own call: the same request fails the same way
            return ProviderError(message, status=status, malformed_call=True)
        return ProviderError(message, status=status, retryable=retryable_status(status))

    def _scrub(self, text: str) -> str:
        """``text`` (an error message) without the key, whole or cut short by a clip (``sk-ab...``).

        Only error messages and log lines are scrubbed, never the model's output. Keys shorter
        than 8 characters (``ollama``) are placeholders, not secrets, and are left alone so error
        text stays readable. The values of ``STEERABLE_EXTRA_HEADERS`` (a gateway's key) are
        scrubbed the same way.
        """
        for secret in (self._secret, *self.config.extra_headers.values()):
            text = redact(text, secret)
        return text

    def _located(self, exc: ProviderError) -> ProviderError:
        """``exc`` with the provider and base URL in front of its message, when not there yet."""
        if str(exc).startswith(self._where):
            return exc
        return _reworded(exc, f"{self._where}: {exc}")

    def _scrubbed(self, exc: ProviderError) -> ProviderError:
        text = str(exc)
        if self._scrub(text) == text:
            return exc
        return _reworded(exc, self._scrub(text))


_VERSION_SEGMENT: Final = re.compile(r"v[0-9]+[a-z0-9]*", re.IGNORECASE)  # v1, v1beta, v4


_TAG: Final = re.compile(r"<[^>]*>")


def _page_text(detail: str) -> str:
    """An HTML error page (a web server's, not the API's JSON) as its words, spaces collapsed."""
    if not detail.lstrip().startswith("<"):
        return detail
    return " ".join(_TAG.sub(" ", detail).split()) or detail


def _missing_version_hint(base_url: str) -> str:
    """``": the base URL may need /v1 (...)"`` when no segment of its path is a version, else ``""``.

    An OpenAI-compatible server serves ``/v1/chat/completions``; a base URL of just the server
    (``http://localhost:8080``) posts to ``/chat/completions``, which most servers answer 404. A
    base URL with a query (Azure's ``api-version``) has its own shape and gets no hint.
    """
    base, _, query = base_url.partition("?")
    if query or not base:
        return ""
    path = urlsplit(base).path
    if any(_VERSION_SEGMENT.fullmatch(segment) for segment in path.split("/")):
        return ""
    return f": the base URL may need /v1 ({BASE_URL_ENV}={base.rstrip('/')}/v1)"


def _reworded(exc: ProviderError, message: str) -> ProviderError:
    """``exc`` with another message; its status, retryability and kind kept."""
    return ProviderError(
        message, status=exc.status, retryable=exc.retryable, malformed_call=exc.malformed_call
    )


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
