"""The DuckDuckGo lite backend of ``web_search``: the request, and the lite page's results parser.

Spec: Web tools › Provider seam (``STEERABLE_WEB_SEARCH_PROVIDER=ddg``, never a silent fallback:
WEB-6). The page is parsed with the standard library's :mod:`html.parser` in a worker thread.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any, Final
from urllib.parse import parse_qs, urlsplit

import httpx

from ..shared._http import clip
from ._hits import (
    MAX_CONSIDERED_RESULTS,
    MAX_SNIPPET_CHARS,
    MAX_TITLE_CHARS,
    Malformed,
    SearchHit,
    clamp_results,
    filter_hits,
)
from ._policy import DomainPolicy
from ._search_http import ACCEPT_ENCODING, Answer, HttpBackend, search_base_url

__all__ = ["DDG_LITE_URL", "DuckDuckGoSearchProvider"]

DDG_LITE_URL: Final = "https://lite.duckduckgo.com/lite/"
"""The lite page's URL, the default ``base_url``."""


class DuckDuckGoSearchProvider(HttpBackend):
    """DuckDuckGo's lite HTML page (https://lite.duckduckgo.com/lite/): the explicit free backend.

    Chosen only by ``STEERABLE_WEB_SEARCH_PROVIDER=ddg``, never as a fallback (WEB-6). The request is
    the lite page's own form (``POST``, field ``q``), parsed with :mod:`html.parser`; what is kept,
    dropped and unwrapped is in docs/web-tools.md, ``web_search {query, max_results?}``.
    ``supports_domain_lists`` is ``False``: the lists are applied to the whole page before it is cut
    to ``max_results``.

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
        self.base_url = search_base_url(base_url, "DuckDuckGo", "a query")
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
                ``Content-Encoding`` than gzip or deflate, HTML :mod:`html.parser` cannot read, or a
                page with neither results nor DuckDuckGo's "No results." notice (the markup changed).
        """
        wanted = clamp_results(max_results)
        request = self._client.build_request(
            "POST",
            self.base_url,
            data={"q": query},
            headers={
                "Accept": "text/html",
                "Accept-Encoding": ACCEPT_ENCODING,
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
        except Malformed as exc:
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


def _read_lite_page(answer: Answer, policy: DomainPolicy, wanted: int) -> _LitePage:
    """Decode and parse a lite page (runs in a worker thread: up to 4 MiB of HTML).

    Raises:
        Malformed: When :mod:`html.parser` cannot read the page (it raises ``AssertionError`` on a
            malformed ``<![`` marked section, e.g. ``<![x``).
    """
    page = answer.text()
    parser = _LiteResultsParser()
    try:
        parser.feed(page)
        parser.close()
    except AssertionError:
        raise Malformed("its HTML has a malformed '<![' section the results parser cannot read") from None
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
                    title=clip("".join(link["title"]), MAX_TITLE_CHARS, marker="…"),
                    url=url,
                    snippet=clip("".join(link["snippet"]), MAX_SNIPPET_CHARS, marker="…"),
                )
            )
        return found
