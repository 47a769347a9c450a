"""web_search backends: the :class:`WebSearchProvider` protocol, Tavily, DuckDuckGo lite and the host.

Spec: Web tools (sidecar) › Provider seam. ``web_search`` goes through :class:`WebSearchProvider`,
the same grain as :class:`~steerable_agent_runtime.llm.LLMProvider`: a protocol, a default factory
(:func:`default_web_search_provider`) and explicit injection at registration. Three backends ship:

* :class:`TavilySearchProvider`: the in-process default, ``POST {base_url}/search`` with its own
  bearer key (``STEERABLE_WEB_SEARCH_API_KEY`` or ``TAVILY_API_KEY``, never the LLM key);
* :class:`DuckDuckGoSearchProvider`: the explicit free backend (``STEERABLE_WEB_SEARCH_PROVIDER=ddg``),
  which parses the DuckDuckGo lite HTML page; never a silent fallback from Tavily (WEB-6);
* :class:`HostSearchProvider`: the host runs the search over the sidecar's reverse channel
  (``STEERABLE_WEB_SEARCH_PROVIDER=host``).

Domain policy (spec: Web tools › Domain policy, WEB-11): the allowed / blocked lists go to a
backend that applies them natively (Tavily's ``include_domains`` / ``exclude_domains``, the host's
request), and :func:`filter_hits` applies them again to the returned hits, so the policy holds for
every provider, a custom one included.

Every failure is a :class:`~steerable_agent_runtime.errors.WebError` (a ``needsFollowup`` result):
``search_auth`` (HTTP 401/403: the key), ``search_rate_limited`` (HTTP 429) or ``search_failed``
(anything else: 5xx, a timeout, a connection error, a redirect (never followed; one whose
``Location`` is not an http(s) URL included, WEB-16), a malformed, oversized, too deeply nested or
undecodable answer), each naming the provider. No answer a backend can send raises anything else.
Error bodies and ``Retry-After`` are read by :mod:`steerable_sidecar._http`, shared with the model
provider.
The Tavily key goes only in the ``Authorization`` header and is scrubbed from every hit, error
message and log line, even when a server echoes it back.

Bounds on a backend's answer: at most :data:`MAX_RESPONSE_BYTES`, counted both as received and
after content decoding (gzip and deflate are inflated here a bounded step at a time, never by
httpx, so a compression bomb costs at most the cap); a single ``Content-Encoding`` only; at most
:data:`MAX_CONSIDERED_RESULTS` results looked at; JSON and HTML parsed in a worker thread.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import re
import zlib
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any, Final, Protocol, runtime_checkable
from urllib.parse import parse_qs, urlsplit

import httpx

from steerable_agent_runtime.errors import ConfigError, RemoteError, UserError, WebError

from .._endpoints import checked_base_url, header_safe
from .._http import ClientOwner, RedirectRefused, clip, error_message, retry_after_s, send_unfollowed
from .._secrets import redact
from ._charsets import codec_for
from ._codes import WebErrorCode
from ._config import (
    SEARCH_API_KEY_ENV,
    SEARCH_PROVIDER_ENV,
    TAVILY_API_KEY_ENV,
    WEB_LIMIT_ENV,
    WebToolsConfig,
)
from ._decoding import Inflater, content_coding
from ._policy import DomainPolicy, url_host, validate_url

__all__ = [
    "MAX_CONSIDERED_RESULTS",
    "MAX_RESPONSE_BYTES",
    "MAX_SEARCH_RESULTS",
    "DDG_LITE_URL",
    "TAVILY_BASE_URL",
    "DuckDuckGoSearchProvider",
    "HostInvoke",
    "HostSearchProvider",
    "SearchHit",
    "TavilySearchProvider",
    "WebSearchProvider",
    "default_web_search_provider",
    "filter_hits",
]

logger = logging.getLogger(__name__)

MAX_SEARCH_RESULTS: Final = WEB_LIMIT_ENV["search_max_results"].ceiling
"""The most hits one search returns (spec: Bounds, ``search_max_results`` ceiling)."""

MAX_RESPONSE_BYTES: Final = 4 * 1024 * 1024
"""The most bytes read from one backend answer, both as received and content-decoded; a larger
answer fails the search."""

MAX_CONSIDERED_RESULTS: Final = 100
"""The most results of one answer looked at (a real page holds about 30); the rest are ignored."""

TAVILY_BASE_URL: Final = "https://api.tavily.com"
DDG_LITE_URL: Final = "https://lite.duckduckgo.com/lite/"

_KEY_VARS: Final = f"{SEARCH_API_KEY_ENV} or {TAVILY_API_KEY_ENV}"
_TIMEOUT_VAR: Final = WEB_LIMIT_ENV["search_timeout_ms"].variable
_MAX_TITLE_CHARS: Final = 300
_MAX_SNIPPET_CHARS: Final = 1_000
_ACCEPT_ENCODING: Final = "gzip"


HostInvoke = Callable[[dict[str, Any]], Awaitable[Mapping[str, Any]]]
"""The reverse-channel call :class:`HostSearchProvider` makes: request object in, answer out."""


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One search result.

    Attributes:
        title: The page title (whitespace collapsed, at most 300 characters).
        url: The page URL, as the backend gave it (DuckDuckGo redirect links already unwrapped).
        snippet: A short extract of the page (whitespace collapsed, at most 1,000 characters).
    """

    title: str
    url: str
    snippet: str

    def to_json(self) -> dict[str, str]:
        """Return ``{"title", "url", "snippet"}``, the hit as the tool result carries it."""
        return {"title": self.title, "url": self.url, "snippet": self.snippet}


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


# -- the domain policy, post hoc ------------------------------------------------------------------


def filter_hits(hits: Iterable[SearchHit], policy: DomainPolicy, max_results: int) -> list[SearchHit]:
    """Apply the domain policy to returned hits: the post-hoc half of WEB-11, for every provider.

    A hit is dropped when its URL fails :func:`~._policy.validate_url` (not http(s), credentials in
    the URL, over 2,048 characters, no host: ``javascript:`` and relative links go here), when the
    policy refuses its host (an entry matches its host and every subdomain; blocked wins), or when
    an earlier hit had the same URL (compared without its ``#fragment``). Order is kept. Only the
    first :data:`MAX_CONSIDERED_RESULTS` hits are looked at, so a provider that returns a huge
    list costs no more than a real result page.

    Args:
        hits: The provider's hits, best first.
        policy: The deployment's allowed / blocked lists.
        max_results: The most hits to keep; 0 or less keeps none.

    Returns:
        At most ``max_results`` hits, in their original order.
    """
    kept: list[SearchHit] = []
    seen: set[str] = set()
    for considered, hit in enumerate(hits):
        if len(kept) >= max_results or considered >= MAX_CONSIDERED_RESULTS:
            break
        try:
            url = validate_url(hit.url)
        except WebError:
            continue
        if not policy.allows(url_host(url)):
            continue
        key = str(url.copy_with(fragment=None))
        if key in seen:
            continue
        seen.add(key)
        kept.append(hit)
    return kept


# -- shared helpers -------------------------------------------------------------------------------


def _clamp_results(max_results: int) -> int:
    return min(max(1, max_results), MAX_SEARCH_RESULTS)


class _Malformed(ValueError):
    """Why a backend's answer is not ``{"results": [{"url", "title"?, <snippet>?}, ...]}``."""


def _same(text: str) -> str:
    return text


def _hit(item: Any, index: int, snippet_key: str, scrub: Callable[[str], str] = _same) -> SearchHit:
    """One hit from an answer's result object; a result without a string ``url`` is malformed.

    ``scrub`` is applied to the title, URL and snippet as received, before any clipping (which could
    otherwise cut a secret into a prefix no longer recognised).
    """
    if not isinstance(item, Mapping):
        raise _Malformed(f"result {index} is not an object")
    url = item.get("url")
    if not isinstance(url, str) or not url.strip():
        raise _Malformed(f"result {index} has no url")
    fields: dict[str, str] = {}
    for key in ("title", snippet_key):
        value = item.get(key)
        if value is not None and not isinstance(value, str):
            raise _Malformed(f"result {index} has a non-text {key}")
        fields[key] = value or ""
    return SearchHit(
        title=clip(scrub(fields["title"]), _MAX_TITLE_CHARS, marker="…"),
        url=scrub(url).strip(),
        snippet=clip(scrub(fields[snippet_key]), _MAX_SNIPPET_CHARS, marker="…"),
    )


def _hits(answer: Any, snippet_key: str, scrub: Callable[[str], str] = _same) -> list[SearchHit]:
    """The hits of the first :data:`MAX_CONSIDERED_RESULTS` results of ``{"results": [...]}``, in order.

    Results past the bound are ignored, not checked.

    Raises:
        _Malformed: When the answer or one of the considered results has the wrong shape.
    """
    if not isinstance(answer, Mapping):
        raise _Malformed("not a JSON object")
    results = answer.get("results")
    if not isinstance(results, list):
        raise _Malformed("no results list")
    considered = results[:MAX_CONSIDERED_RESULTS]
    return [_hit(item, index, snippet_key, scrub) for index, item in enumerate(considered, start=1)]


@dataclass(frozen=True, slots=True)
class _Answer:
    """A backend's HTTP answer, read whole (within the size cap)."""

    status: int
    headers: httpx.Headers
    body: bytes
    charset: str | None

    def text(self) -> str:
        """The body decoded with the declared charset, errors replaced.

        Only WHATWG Encoding Standard labels are honoured (the fetcher's table); none, or any other
        label (``base64``, ``idna``...), decodes as UTF-8.
        """
        codec = codec_for(self.charset or "") or "utf-8"
        return self.body.decode(codec, "replace")


def _origin(url: httpx.URL) -> str:
    return f"{url.scheme}://{url.netloc.decode('ascii', 'replace')}"


def _checked_base_url(base_url: object, what: str, appends: str) -> str:
    """``base_url`` as given, after :func:`~steerable_sidecar._endpoints.checked_base_url`'s checks.

    Raises:
        UserError: Naming ``what`` and why (the value is shown by scheme and host only).
    """
    try:
        checked_base_url(base_url, variable="base_url", key_variable="the api_key argument", appends=appends)
    except ConfigError as exc:
        raise UserError(
            f"{what} base_url must be an http(s) URL with a host, no credentials, query or fragment ({exc})"
        ) from None
    assert isinstance(base_url, str)  # checked_base_url refuses anything else
    return base_url


class _HttpBackend(ClientOwner):
    """The HTTP exchange both HTTP backends share: one deadline, a size cap, errors named by provider."""

    name: str
    _label: str

    def __init__(self, *, client: httpx.AsyncClient | None, timeout_ms: int) -> None:
        if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int) or timeout_ms < 1:
            raise UserError(f"timeout_ms must be a positive integer (milliseconds), not {timeout_ms!r}")
        self.timeout_ms = timeout_ms
        self._timeout = httpx.Timeout(timeout_ms / 1000)
        super().__init__(client, what="web_search", timeout=self._timeout)

    def _scrub(self, text: str) -> str:
        return text

    async def _exchange(self, request: httpx.Request) -> _Answer:
        """Send ``request`` and read its body (at most :data:`MAX_RESPONSE_BYTES`) within the deadline.

        The whole exchange (connect, send, every read) shares one ``timeout_ms`` deadline; a
        redirect is never followed.

        Raises:
            WebError: ``search_failed`` for a timeout, a network error, an oversized answer, or a
                redirect whose ``Location`` httpx cannot make a URL of (``mailto:``...).
        """
        try:
            async with asyncio.timeout(self.timeout_ms / 1000):
                response = await send_unfollowed(self._client, request)
                try:
                    body = await self._read_capped(response)
                finally:
                    await response.aclose()
        except (TimeoutError, httpx.TimeoutException):
            raise self._error(
                f"{self._label} did not answer within {self.timeout_ms} ms ({_TIMEOUT_VAR})"
            ) from None
        except RedirectRefused as exc:
            where = _origin(request.url)
            raise self._error(f"{self._label} at {where} answered with a redirect: {exc}") from None
        except httpx.ConnectError as exc:
            raise self._error(
                f"could not reach {self._label} at {_origin(request.url)}: {exc or 'connection refused'}"
            ) from None
        except httpx.HTTPError as exc:
            raise self._error(
                f"the exchange with {self._label} at {_origin(request.url)} failed "
                f"({type(exc).__name__}: {exc or 'no detail'})"
            ) from None
        return _Answer(response.status_code, response.headers, body, response.charset_encoding)

    async def _read_capped(self, response: httpx.Response) -> bytes:
        """The body, content-decoded here, a bounded step at a time (never by httpx).

        httpx's own decoding inflates a whole received chunk in one call, so 2 KB of stacked gzip
        would become gigabytes before any check. Here the raw bytes are read with ``aiter_raw`` and
        inflated by the fetcher's bounded inflater, at most one byte past the cap in all; peak memory
        is about the cap.

        Raises:
            WebError: ``search_failed`` for more than :data:`MAX_RESPONSE_BYTES` received or decoded,
                a ``Content-Encoding`` other than one of gzip, deflate or identity (a list of codings
                included), or a body that does not decode.
        """
        declared = response.headers.get("content-length", "")
        if (
            declared.isascii()
            and declared.isdigit()
            and (len(declared) > 9 or int(declared) > MAX_RESPONSE_BYTES)
        ):
            raise self._too_large()
        sent_coding = response.headers.get("content-encoding", "")
        coding = content_coding(sent_coding)
        if coding is None:
            shown = clip(sent_coding)
            raise self._error(
                f"{self._label} sent its answer with Content-Encoding {shown!r}; web_search decodes one "
                f"coding only, gzip or deflate (it asks for {_ACCEPT_ENCODING})",
                contentEncoding=shown,
            )
        inflater = Inflater(coding)
        body = bytearray()
        received = 0
        limit = MAX_RESPONSE_BYTES + 1  # one byte past the cap tells "larger" from "exactly the cap"
        try:
            async for raw in response.aiter_raw():
                received += len(raw)
                if received > MAX_RESPONSE_BYTES:
                    raise self._too_large()
                body += inflater.decode(raw, limit - len(body))
                if len(body) > MAX_RESPONSE_BYTES:
                    raise self._too_large()
        except zlib.error:
            raise self._error(
                f"{self._label}'s answer is not valid {coding} (its Content-Encoding)", contentEncoding=coding
            ) from None
        return bytes(body)

    def _rate_limited(self, answer: _Answer, detail: str = "") -> WebError:
        """``search_rate_limited`` for an HTTP 429, with the ``Retry-After`` delay when it is usable."""
        delay = retry_after_s(answer.headers)
        retry_after = None if delay is None else math.ceil(delay)
        when = f"retry in {retry_after} s" if retry_after is not None else "wait before searching again"
        extra = {"retryAfterSeconds": retry_after} if retry_after is not None else {}
        said = f": {detail}" if detail else ""
        return self._error(
            f"{self._label} is rate-limiting searches (HTTP 429{said}); {when}",
            WebErrorCode.SEARCH_RATE_LIMITED,
            status=429,
            **extra,
        )

    def _too_large(self) -> WebError:
        return self._error(f"{self._label}'s answer is larger than {MAX_RESPONSE_BYTES} bytes; not read")

    def _error(self, message: str, code: WebErrorCode = WebErrorCode.SEARCH_FAILED, **data: Any) -> WebError:
        message = self._scrub(message)
        logger.info("web_search via %s failed: %s", self.name, message)
        # detail taken from the answer (a header, a status text) may echo the key as well
        data = {k: self._scrub(v) if isinstance(v, str) else v for k, v in data.items()}
        return WebError(code, message, data={"provider": self.name, **data})


# -- Tavily ---------------------------------------------------------------------------------------


class TavilySearchProvider(_HttpBackend):
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
        self.base_url = _checked_base_url(base_url, "Tavily", "/search").rstrip("/")
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
        wanted = _clamp_results(max_results)
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
                "Accept-Encoding": _ACCEPT_ENCODING,
            },
            timeout=self._timeout,
        )
        response = await self._exchange(request)
        policy = DomainPolicy(allowed_domains, blocked_domains)
        # Up to 4 MiB of JSON and up to 100 URL checks: a worker thread, not the event loop.
        return await asyncio.to_thread(self._read_answer, response, policy, wanted)

    def _read_answer(self, response: _Answer, policy: DomainPolicy, wanted: int) -> list[SearchHit]:
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
            hits = _hits(answer, "content", self._scrub_hit)
        except _Malformed as exc:
            raise self._error(f"Tavily's answer is malformed: {exc}") from None
        return filter_hits(hits, policy, wanted)

    def _status_error(self, response: _Answer) -> WebError:
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


# -- DuckDuckGo lite ------------------------------------------------------------------------------


class DuckDuckGoSearchProvider(_HttpBackend):
    """DuckDuckGo's lite HTML page (https://lite.duckduckgo.com/lite/): the explicit free backend.

    Chosen only by ``STEERABLE_WEB_SEARCH_PROVIDER=ddg``, never as a fallback for a missing Tavily
    key (WEB-6). The request is the lite page's own form submission: ``POST`` with the form field
    ``q=<query>``. The answer is parsed with the standard library's :mod:`html.parser`: titles and
    links from ``a.result-link``, snippets from ``td.result-snippet``; rows of
    ``tr.result-sponsored`` and ``duckduckgo.com/y.js`` ad links are dropped, and redirect links
    ``//duckduckgo.com/l/?uddg=<target>&rut=...`` are unwrapped to the target.

    DuckDuckGo has no domain-list parameter, so ``supports_domain_lists`` is ``False``; the
    ``site:`` operator is not used (its behaviour on the lite page is undocumented). The lists are
    applied to the whole result page (about 30 hits) before it is cut to ``max_results``, so a
    restrictive allow-list keeps as many hits as the page holds.

    Args:
        base_url: The lite page's URL.
        client: A shared HTTP client; ``None`` makes one the provider owns (closed by :meth:`aclose`).
        timeout_ms: The deadline of one whole search call, in milliseconds.

    Raises:
        UserError: When ``timeout_ms`` is not a positive integer.
    """

    name = "ddg"
    supports_domain_lists = False
    _label = "DuckDuckGo"

    def __init__(
        self,
        *,
        base_url: str = DDG_LITE_URL,
        client: httpx.AsyncClient | None = None,
        timeout_ms: int = 30_000,
    ) -> None:
        self.base_url = _checked_base_url(base_url, "DuckDuckGo", "a query")
        super().__init__(client=client, timeout_ms=timeout_ms)

    def __repr__(self) -> str:
        return f"DuckDuckGoSearchProvider(base_url={self.base_url!r}, timeout_ms={self.timeout_ms})"

    async def search(
        self,
        query: str,
        *,
        max_results: int,
        allowed_domains: tuple[str, ...] = (),
        blocked_domains: tuple[str, ...] = (),
    ) -> list[SearchHit]:
        """Run one DuckDuckGo lite search (one result page).

        Args:
            query: The query text, sent as the form field ``q``.
            max_results: The most hits wanted; clamped to 1..20.
            allowed_domains: Applied to the parsed page (not sent).
            blocked_domains: Applied to the parsed page (not sent).

        Returns:
            At most ``max_results`` organic hits in page order, through :func:`filter_hits`; an
            empty list when the page says it found nothing.

        Raises:
            WebError: ``search_rate_limited`` for HTTP 429; ``search_failed`` for a bot-challenge
                page (DuckDuckGo answers HTTP 202 with no results), any other non-200 status, a
                timeout, a network error, an oversized answer or one with another
                ``Content-Encoding`` than one of gzip or deflate, HTML :mod:`html.parser` cannot
                read, or a page with neither results nor DuckDuckGo's "No results." notice (the
                markup changed). A charset label outside the WHATWG text encodings (``base64``,
                ``idna``) decodes as UTF-8.
        """
        wanted = _clamp_results(max_results)
        request = self._client.build_request(
            "POST",
            self.base_url,
            data={"q": query},
            headers={
                "Accept": "text/html",
                "Accept-Encoding": _ACCEPT_ENCODING,
                "User-Agent": "Mozilla/5.0 (compatible; steerable web_search)",
            },
            timeout=self._timeout,
        )
        response = await self._exchange(request)
        status = response.status
        if status == 429:
            raise self._rate_limited(response)
        policy = DomainPolicy(allowed_domains, blocked_domains)
        try:
            page = await asyncio.to_thread(_read_lite_page, response, policy, wanted)  # up to 4 MiB of HTML
        except _Malformed as exc:
            raise self._error(f"DuckDuckGo's answer is malformed: {exc}", status=status) from None
        if status != 200 or not page.has_links:
            if not page.has_links and (status == 202 or page.challenge):
                raise self._error(
                    f"DuckDuckGo answered with a bot challenge instead of results (HTTP {status}); "
                    "retry later, or configure Tavily (STEERABLE_WEB_SEARCH_API_KEY)",
                    status=status,
                )
            if status != 200:
                raise self._error(f"DuckDuckGo answered HTTP {status}", status=status)
            if not page.no_results:
                raise self._error(
                    "DuckDuckGo's answer has no results table (its page markup may have changed)",
                    status=status,
                )
            return []
        return page.hits


_NO_RESULTS = re.compile(r"No\s+(more\s+)?results\.", re.IGNORECASE)
_CHALLENGE = re.compile(r"anomaly-modal|bots use DuckDuckGo too|challenge-form", re.IGNORECASE)


def _classes(attrs: list[tuple[str, str | None]]) -> set[str]:
    for name, value in attrs:
        if name == "class" and value:
            return set(value.split())
    return set()


def _href(attrs: list[tuple[str, str | None]]) -> str:
    for name, value in attrs:
        if name == "href" and value:
            return value.strip()
    return ""


def _unwrap_ddg_link(href: str) -> str | None:
    """The result's real URL, or ``None`` for an ad (``/y.js``) or a link back into DuckDuckGo.

    ``//duckduckgo.com/l/?uddg=<percent-encoded target>&rut=...`` becomes the target; a
    protocol-relative link gets ``https:``. Other absolute links are returned unchanged.
    """
    if href.startswith("//"):
        href = "https:" + href
    try:
        parts = urlsplit(href)
    except ValueError:
        return None
    host = (parts.hostname or "").lower()
    if host == "duckduckgo.com" or host.endswith(".duckduckgo.com"):
        if parts.path == "/l/":
            target = parse_qs(parts.query).get("uddg")
            return target[0].strip() if target and target[0].strip() else None
        return None  # /y.js ad clicks and any other link into DuckDuckGo itself
    return href


@dataclass(frozen=True, slots=True)
class _LitePage:
    """What a lite page says: its kept hits, and the signs read when it has no result links."""

    hits: list[SearchHit]
    has_links: bool
    no_results: bool
    challenge: bool


def _read_lite_page(answer: _Answer, policy: DomainPolicy, wanted: int) -> _LitePage:
    """Decode and parse a lite page (runs in a worker thread: up to 4 MiB of HTML).

    Raises:
        _Malformed: When :mod:`html.parser` cannot read the page (it raises ``AssertionError`` on a
            malformed ``<![`` marked section, e.g. ``<![x``).
    """
    page = answer.text()
    parser = _LiteResultsParser()
    try:
        parser.feed(page)
        parser.close()
    except AssertionError:
        raise _Malformed("its HTML has a malformed '<![' section the results parser cannot read") from None
    return _LitePage(
        hits=filter_hits(parser.hits(), policy, wanted),
        has_links=bool(parser.links),
        no_results=_NO_RESULTS.search(page) is not None,
        challenge=_CHALLENGE.search(page) is not None,
    )


class _LiteResultsParser(HTMLParser):
    """Collects (title, href, snippet, sponsored) from the lite page's results table.

    The lite page lays out each result as table rows: the number and ``a.result-link``; the
    ``td.result-snippet``; the ``span.link-text`` display URL and a timestamp; an empty spacer.
    A snippet belongs to the last link seen. Sponsored results carry ``class="result-sponsored"``
    on each of their rows. Character references are decoded by the parser.
    """

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.links: list[dict[str, Any]] = []
        self._row_sponsored = False
        self._in_title = False
        self._in_snippet = False
        self._full = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        classes = _classes(attrs)
        if tag == "tr":
            self._row_sponsored = "result-sponsored" in classes
        elif tag == "a" and "result-link" in classes:
            if len(self.links) >= MAX_CONSIDERED_RESULTS:
                self._full = True  # the rest of the page is ignored, not collected
                return
            self.links.append(
                {"href": _href(attrs), "title": [], "snippet": [], "sponsored": self._row_sponsored}
            )
            self._in_title = True
        elif tag == "td" and "result-snippet" in classes and self.links and not self._full:
            self._in_snippet = True

    def handle_endtag(self, tag: str) -> None:
        if tag == "a":
            self._in_title = False
        elif tag == "td":
            self._in_snippet = False
        elif tag == "table":
            self._row_sponsored = False

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.links[-1]["title"].append(data)
        elif self._in_snippet:
            self.links[-1]["snippet"].append(data)

    def hits(self) -> list[SearchHit]:
        """The organic hits among the first 100 result links, in page order (no ads, no DuckDuckGo links)."""
        found = []
        for link in self.links:
            url = None if link["sponsored"] else _unwrap_ddg_link(link["href"])
            if url is None:
                continue
            found.append(
                SearchHit(
                    title=clip("".join(link["title"]), _MAX_TITLE_CHARS, marker="…"),
                    url=url,
                    snippet=clip("".join(link["snippet"]), _MAX_SNIPPET_CHARS, marker="…"),
                )
            )
        return found


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
        wanted = _clamp_results(max_results)
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
            hits = _hits(answer, "snippet")
        except _Malformed as exc:
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

    Spec: Web tools › Provider seam (WEB-4, WEB-5, WEB-6):

    * ``"tavily"``: :class:`TavilySearchProvider` with ``search_api_key``, ``search_base_url`` and
      ``search_timeout_ms``; ``None`` when the key is empty (web_search is not offered);
    * ``"host"``: :class:`HostSearchProvider` over ``host_invoke``; ``None`` without one (the
      caller has no host to run the search);
    * ``"ddg"``: :class:`DuckDuckGoSearchProvider` with ``search_timeout_ms``.

    An empty Tavily key never falls back to DuckDuckGo: the free backend is chosen explicitly.

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
