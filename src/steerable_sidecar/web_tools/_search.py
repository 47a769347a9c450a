"""web_search backends: the :class:`WebSearchProvider` protocol, Tavily, DuckDuckGo lite and the host.

Spec: Web tools (sidecar) › Provider seam and Domain policy (WEB-6, WEB-11, WEB-16);
docs/web-tools.md, ``web_search {query, max_results?}``, has the backends, their errors and bounds.

:func:`default_web_search_provider` picks one of :class:`TavilySearchProvider` (the default),
:class:`DuckDuckGoSearchProvider` (``ddg``, never a fallback) and :class:`HostSearchProvider`
(``host``, over the sidecar's reverse channel). Every failure is a
:class:`~steerable_agent_runtime.errors.WebError` with code ``search_auth``,
``search_rate_limited`` or ``search_failed``; the Tavily key is scrubbed from every hit and message.

Where the rest lives: :class:`~._hits.SearchHit` and :func:`~._hits.filter_hits` (the domain policy
applied to every provider's hits) in :mod:`._hits`; the HTTP exchange both in-process backends share
in :mod:`._search_http`; error bodies and ``Retry-After`` in :mod:`steerable_sidecar.shared._http`;
DuckDuckGo's page parser in :mod:`._ddg`.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final, Protocol, runtime_checkable

import httpx

from steerable_agent_runtime.errors import ConfigError, RemoteError, UserError, WebError

from ..shared._endpoints import header_safe
from ..shared._http import clip, error_message
from ..shared._secrets import redact
from ._codes import WebErrorCode
from ._config import SEARCH_API_KEY_ENV, SEARCH_PROVIDER_ENV, TAVILY_API_KEY_ENV, WebToolsConfig
from ._ddg import DuckDuckGoSearchProvider
from ._hits import Malformed, SearchHit, clamp_results, filter_hits, hits_from
from ._policy import DomainPolicy
from ._search_http import ACCEPT_ENCODING, Answer, HttpBackend, search_base_url

__all__ = [
    "TAVILY_BASE_URL",
    "HostInvoke",
    "HostSearchProvider",
    "TavilySearchProvider",
    "WebSearchProvider",
    "default_web_search_provider",
]

logger = logging.getLogger(__name__)

TAVILY_BASE_URL: Final = "https://api.tavily.com"
_KEY_VARS: Final = f"{SEARCH_API_KEY_ENV} or {TAVILY_API_KEY_ENV}"


HostInvoke = Callable[[dict[str, Any]], Awaitable[Mapping[str, Any]]]
"""The reverse-channel call :class:`HostSearchProvider` makes: request object in, answer out."""


@runtime_checkable
class WebSearchProvider(Protocol):
    """A web search backend. Implementations are injected at registration (never looked up globally).

    Spec: Web tools › Provider seam (WEB-4). The caller clamps ``max_results`` to 1..20 and applies
    :func:`filter_hits` to whatever comes back, so a provider that ignores the domain lists cannot
    widen the policy; one that applies them natively (``supports_domain_lists``) ranks inside it.

    Attributes:
        name: ``"tavily"``, ``"ddg"``, ``"host"`` or a custom name; error messages name it.
        supports_domain_lists: ``True`` when the backend applies allowed / blocked lists itself.
    """

    name: str
    supports_domain_lists: bool

    async def search(
        self,
        query: str,
        *,
        max_results: int,
        allowed_domains: tuple[str, ...] = (),
        blocked_domains: tuple[str, ...] = (),
    ) -> list[SearchHit]:
        """Run one search and return at most ``max_results`` hits, best first.

        Args:
            query: The model's query text.
            max_results: The most hits wanted (1..20).
            allowed_domains: Lowercase A-label domains; non-empty restricts results to them and
                their subdomains.
            blocked_domains: Lowercase A-label domains whose hosts (and subdomains) are excluded.

        Raises:
            WebError: ``search_auth``, ``search_rate_limited`` or ``search_failed``.
        """
        ...


# -- Tavily ---------------------------------------------------------------------------------------


class TavilySearchProvider(HttpBackend):
    """Tavily's Search API: ``POST {base_url}/search`` with a bearer key (WEB-5).

    Wire format (https://docs.tavily.com/api-reference/endpoint/search; authentication per
    https://docs.tavily.com/api-reference/introduction): a JSON body ``{"query", "max_results",
    "search_depth": "basic"}`` plus ``include_domains`` / ``exclude_domains`` when those lists are
    non-empty; the answer's ``results[]`` carry ``title``, ``url`` and ``content`` (the snippet).
    The key is sent only as ``Authorization: Bearer <key>``, never in the body or a URL, and is
    scrubbed from every error message and log line.

    Args:
        api_key: The Tavily key (``STEERABLE_WEB_SEARCH_API_KEY`` or ``TAVILY_API_KEY``).
        base_url: The API root; ``/search`` is appended.
        client: A shared HTTP client; ``None`` makes one the provider owns (closed by :meth:`aclose`).
        timeout_ms: The deadline of one whole search call, in milliseconds.

    Raises:
        UserError: When the key is empty or cannot go in an HTTP header (the message never
            contains it), or ``timeout_ms`` is not a positive integer.
    """

    name = "tavily"
    supports_domain_lists = True
    _label = "Tavily"

    def __init__(
        self,
        api_key: str,
        *,
        base_url: str = TAVILY_BASE_URL,
        client: httpx.AsyncClient | None = None,
        timeout_ms: int = 30_000,
    ) -> None:
        if not isinstance(api_key, str) or not api_key.strip():
            raise UserError(f"TavilySearchProvider needs a non-empty API key ({_KEY_VARS})")
        if not header_safe(api_key):
            raise UserError(
                f"the web search API key contains characters an HTTP header cannot carry ({_KEY_VARS})"
            )
        self.base_url = search_base_url(base_url, "Tavily", "/search").rstrip("/")
        super().__init__(client=client, timeout_ms=timeout_ms)
        self._url = f"{self.base_url}/search"
        self._secret = api_key

    def __repr__(self) -> str:
        return f"TavilySearchProvider(base_url={self.base_url!r}, timeout_ms={self.timeout_ms})"

    async def search(
        self,
        query: str,
        *,
        max_results: int,
        allowed_domains: tuple[str, ...] = (),
        blocked_domains: tuple[str, ...] = (),
    ) -> list[SearchHit]:
        """Run one Tavily search.

        Args:
            query: The query text.
            max_results: The most hits wanted; clamped to 1..20 and sent as ``max_results``.
            allowed_domains: Sent as ``include_domains`` when non-empty.
            blocked_domains: Sent as ``exclude_domains`` when non-empty.

        Returns:
            At most ``max_results`` hits, in Tavily's order, already through :func:`filter_hits`
            with the given lists.

        Raises:
            WebError: ``search_auth`` for HTTP 401/403 (the message names the key variables),
                ``search_rate_limited`` for HTTP 429 (``data.retryAfterSeconds`` when Tavily sent a
                usable ``Retry-After``), ``search_failed`` for any other status, a timeout, a
                network error, or an answer that exceeds 4 MiB (received or inflated), has a
                ``Content-Encoding`` other than one of gzip or deflate, is not JSON, is nested
                deeper than the interpreter can parse, or is malformed in its first 100 results.
        """
        wanted = clamp_results(max_results)
        body: dict[str, Any] = {"query": query, "max_results": wanted, "search_depth": "basic"}
        if allowed_domains:
            body["include_domains"] = list(allowed_domains)
        if blocked_domains:
            body["exclude_domains"] = list(blocked_domains)
        request = self._client.build_request(
            "POST",
            self._url,
            json=body,
            headers={
                "Authorization": f"Bearer {self._secret}",
                "Accept": "application/json",
                "Accept-Encoding": ACCEPT_ENCODING,
            },
            timeout=self._timeout,
        )
        response = await self._exchange(request)
        policy = DomainPolicy(allowed_domains, blocked_domains)
        # Up to 4 MiB of JSON and up to 100 URL checks: a worker thread, not the event loop.
        return await asyncio.to_thread(self._read_answer, response, policy, wanted)

    def _read_answer(self, response: Answer, policy: DomainPolicy, wanted: int) -> list[SearchHit]:
        """The hits of an answer (runs in a worker thread); every failure is a ``WebError``."""
        if response.status != 200:
            raise self._status_error(response)
        try:
            answer = json.loads(response.body)
        except RecursionError:
            raise self._error("Tavily's answer is nested too deeply to read") from None
        except ValueError:
            raise self._error("Tavily's answer is not JSON") from None
        try:
            hits = hits_from(answer, "content", self._scrub_hit)
        except Malformed as exc:
            raise self._error(f"Tavily's answer is malformed: {exc}") from None
        return filter_hits(hits, policy, wanted)

    def _status_error(self, response: Answer) -> WebError:
        status = response.status
        detail = error_message(response.body)
        if status in (401, 403):
            return self._error(
                f"Tavily refused the search API key (HTTP {status}: {detail}); "
                f"set a valid key in {_KEY_VARS}",
                WebErrorCode.SEARCH_AUTH,
                status=status,
            )
        if status == 429:
            return self._rate_limited(response, detail)
        return self._error(f"Tavily answered HTTP {status}: {detail}", status=status)

    def _scrub_hit(self, text: str) -> str:
        """A hit's ``text`` without the key, also when percent-encoded (in a URL)."""
        return redact(text, self._secret, clipped=False, encoded=True)

    def _scrub(self, text: str) -> str:
        """``text`` without the key, whole or cut short by a clip (``tvly-ab...``)."""
        return redact(text, self._secret, encoded=True)


# -- the host -------------------------------------------------------------------------------------


class HostSearchProvider:
    """The host runs the search (``STEERABLE_WEB_SEARCH_PROVIDER=host``, WEB-6).

    The sidecar holds no search key: the Electron host executes hosted search with its own chat
    credential and answers over the reverse channel. ``invoke`` sends the request object
    ``{"query", "maxResults", "allowedDomains": [...], "blockedDomains": [...]}`` (the JSON-RPC
    params of ``web_search.request``, camelCase as on every wire) and returns the
    host's answer ``{"results": [{"title", "url", "snippet"}, ...]}``. The lists travel with the
    request (``supports_domain_lists``), and the hits are filtered again here.

    Args:
        invoke: The reverse-channel call; its deadline is the channel's own.
    """

    name = "host"
    supports_domain_lists = True

    def __init__(self, invoke: HostInvoke) -> None:
        self._invoke = invoke

    def __repr__(self) -> str:
        return "HostSearchProvider()"

    async def search(
        self,
        query: str,
        *,
        max_results: int,
        allowed_domains: tuple[str, ...] = (),
        blocked_domains: tuple[str, ...] = (),
    ) -> list[SearchHit]:
        """Ask the host to run one search.

        Args:
            query: The query text.
            max_results: The most hits wanted; clamped to 1..20 and sent.
            allowed_domains: Sent as ``allowed_domains``.
            blocked_domains: Sent as ``blocked_domains``.

        Returns:
            At most ``max_results`` hits, through :func:`filter_hits` with the given lists.

        Raises:
            WebError: ``search_failed`` when the host's call raised (a JSON-RPC error, a closed
                peer, anything else; a ``WebError`` from the host passes through unchanged) or
                its answer is not ``{"results": [...]}`` with a string ``url`` in every result.
        """
        wanted = clamp_results(max_results)
        request = {
            "query": query,
            "maxResults": wanted,
            "allowedDomains": list(allowed_domains),
            "blockedDomains": list(blocked_domains),
        }
        try:
            answer = await self._invoke(request)
        except WebError:
            raise
        except RemoteError as exc:
            raise self._error(
                f"the host could not run the search: {clip(exc.message)}", rpcCode=exc.code
            ) from None
        except Exception as exc:  # any failure of the reverse call is a failed search
            reason = clip(str(exc)) or "no detail"
            raise self._error(f"the host could not run the search ({type(exc).__name__}: {reason})") from None
        try:
            hits = hits_from(answer, "snippet")
        except Malformed as exc:
            raise self._error(f"the host's answer is malformed: {exc}") from None
        return filter_hits(hits, DomainPolicy(allowed_domains, blocked_domains), wanted)

    def _error(self, message: str, **data: Any) -> WebError:
        logger.info("web_search via host failed: %s", message)
        return WebError(WebErrorCode.SEARCH_FAILED, message, data={"provider": "host", **data})


# -- the default factory --------------------------------------------------------------------------


def default_web_search_provider(
    config: WebToolsConfig,
    *,
    client: httpx.AsyncClient | None = None,
    host_invoke: HostInvoke | None = None,
) -> WebSearchProvider | None:
    """The provider ``config.search_provider`` names, or ``None`` when web_search stays unregistered.

    Spec: Web tools › Provider seam (WEB-4, WEB-5, WEB-6). ``"tavily"``: :class:`TavilySearchProvider`,
    ``None`` when the key is empty (never a DuckDuckGo fallback); ``"host"``:
    :class:`HostSearchProvider` over ``host_invoke``, ``None`` without one; ``"ddg"``:
    :class:`DuckDuckGoSearchProvider`. The HTTP backends take ``search_timeout_ms``.

    Args:
        config: The resolved web-tools configuration.
        client: The shared HTTP client for the HTTP backends (``None``: each makes its own).
        host_invoke: The reverse-channel call for ``"host"``.

    Returns:
        The provider, or ``None``.

    Raises:
        ConfigError: For a provider name this module does not know (``WebToolsConfig`` already
            refuses one at resolve time; this guards direct construction).
    """
    provider = config.search_provider
    if provider == "tavily":
        key = config.search_api_key
        if not key:
            return None
        return TavilySearchProvider(
            key, base_url=config.search_base_url, client=client, timeout_ms=config.search_timeout_ms
        )
    if provider == "host":
        return HostSearchProvider(host_invoke) if host_invoke is not None else None
    if provider == "ddg":
        return DuckDuckGoSearchProvider(client=client, timeout_ms=config.search_timeout_ms)
    raise ConfigError(f"{SEARCH_PROVIDER_ENV}={provider!r} is not a search provider; use tavily, host or ddg")
