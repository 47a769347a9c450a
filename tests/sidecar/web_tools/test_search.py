"""web_search backends against local servers speaking the real wire formats (no internet, ever).

Each HTTP test points a provider's ``base_url`` at a small HTTP/1.1 server on 127.0.0.1 (defined
below, on ``web_servers.LocalListener``) that records every request and answers from a script.

Fixture provenance (``tests/fixtures/web/``), all written by hand, none captured (no internet here):

* ``tavily_search.json``: a Tavily ``POST /search`` answer in the documented response shape
  (https://docs.tavily.com/api-reference/endpoint/search: ``query``, ``answer``, ``images``,
  ``results[]`` of ``{title, url, content, score, raw_content}``, ``response_time``, plus
  ``follow_up_questions`` and ``request_id`` as the live API sends them).
* ``tavily_401.json`` / ``tavily_429.json`` / ``tavily_432.json``: Tavily error bodies
  (``{"detail": {"error": ...}}``) with the messages Tavily's help centre lists for a bad key,
  the rate limit and the plan limit (https://help.tavily.com/articles/8645538886-understanding-http-errors).
* ``ddg_lite_results.html`` / ``ddg_lite_challenge.html``: see the comment at the top of each.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import logging
import random
import tracemalloc
import types
import zlib
from collections import deque
from collections.abc import Awaitable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote

import httpx
import pytest

from steerable_agent_runtime import ToolRouter
from steerable_agent_runtime.errors import ConfigError, PeerClosedError, RemoteError, UserError, WebError
from steerable_sidecar.web_tools import (
    DomainPolicy,
    DuckDuckGoSearchProvider,
    HostSearchProvider,
    SearchHit,
    TavilySearchProvider,
    WebSearchProvider,
    WebToolsConfig,
    default_web_search_provider,
    filter_hits,
    install_web_tools,
)
from steerable_sidecar.web_tools._hits import MAX_CONSIDERED_RESULTS
from steerable_sidecar.web_tools._search_http import MAX_RESPONSE_BYTES

from .web_servers import LocalListener, Seen, closed_port, read_request

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "web"
KEY = "tvly-dev-SECRET-9f8e7d6c5b4a3f2e"


def fixture_bytes(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


# -- a scripted local HTTP/1.1 server -------------------------------------------------------------


@dataclass
class Reply:
    """One scripted answer. ``hang``: never answer; ``trickle``: send headers, then a byte every 50 ms;
    ``endless``: a chunked body that never ends (until the client goes away)."""

    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    hang: bool = False
    trickle: bool = False
    endless: bool = False


class LocalServer(LocalListener):
    """Answers each request with the next scripted :class:`Reply` (404 when none is left)."""

    def __init__(self) -> None:
        super().__init__()
        self.replies: deque[Reply] = deque()
        self.requests: list[Seen] = []

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def script(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen = await read_request(reader)
        if seen is None:
            return
        self.requests.append(seen)
        reply = self.replies.popleft() if self.replies else Reply(404, b"no reply scripted")
        if reply.hang:
            await asyncio.sleep(3600)
        reason = "OK" if reply.status == 200 else "Status"
        out = [f"HTTP/1.1 {reply.status} {reason}", "Connection: close"]
        out += [f"{name}: {value}" for name, value in reply.headers.items()]
        if reply.trickle or reply.endless:
            out.append("Transfer-Encoding: chunked")
            writer.write(("\r\n".join(out) + "\r\n\r\n").encode("latin-1"))
            chunk = b"x" if reply.trickle else b"x" * 65_536
            while True:
                writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                await writer.drain()
                await asyncio.sleep(0.05 if reply.trickle else 0)
        if not any(name.lower() == "content-length" for name in reply.headers):
            out.append(f"Content-Length: {len(reply.body)}")
        writer.write(("\r\n".join(out) + "\r\n\r\n").encode("latin-1") + reply.body)
        await writer.drain()


def json_reply(payload: Any, status: int = 200, **headers: str) -> Reply:
    return Reply(status, json.dumps(payload).encode(), {"Content-Type": "application/json", **headers})


@pytest.fixture
async def server():
    async with LocalServer() as local:
        yield local


@pytest.fixture
async def client():
    async with httpx.AsyncClient() as shared:
        yield shared


@pytest.fixture
def tavily(server, client):
    return TavilySearchProvider(KEY, base_url=server.origin, client=client, timeout_ms=5_000)


@pytest.fixture
def ddg(server, client):
    return DuckDuckGoSearchProvider(base_url=f"{server.origin}/lite/", client=client, timeout_ms=5_000)


async def search_error(provider: Any, query: str = "python asyncio timeout", **options: Any) -> WebError:
    options.setdefault("max_results", 5)
    with pytest.raises(WebError) as caught:
        async with asyncio.timeout(10):  # a provider that ignores its own deadline fails, not hangs
            await provider.search(query, **options)
    return caught.value


# -- the protocol and the hit ---------------------------------------------------------------------


def test_every_backend_satisfies_the_provider_protocol_web_4(client):
    async def invoke(request: dict[str, Any]) -> dict[str, Any]:
        return {"results": []}

    backends: list[WebSearchProvider] = [
        TavilySearchProvider(KEY, client=client),
        DuckDuckGoSearchProvider(client=client),
        HostSearchProvider(invoke),
    ]
    assert [isinstance(backend, WebSearchProvider) for backend in backends] == [True, True, True]
    assert [(b.name, b.supports_domain_lists) for b in backends] == [
        ("tavily", True),
        ("ddg", False),
        ("host", True),
    ]


def test_a_hit_serialises_as_title_url_snippet():
    hit = SearchHit(title="T", url="https://example.com/", snippet="S")
    assert hit.to_json() == {"title": "T", "url": "https://example.com/", "snippet": "S"}


# -- filter_hits: the post-hoc domain policy (WEB-11) ---------------------------------------------


def hits_for(*urls: str) -> list[SearchHit]:
    return [SearchHit(title=f"t{i}", url=url, snippet="") for i, url in enumerate(urls)]


@pytest.mark.parametrize(
    ("allowed", "blocked", "urls", "kept"),
    [
        pytest.param(
            ("example.com",),
            (),
            ["https://example.com/a", "https://docs.example.com/b", "https://a.b.example.com/c"],
            ["https://example.com/a", "https://docs.example.com/b", "https://a.b.example.com/c"],
            id="an entry covers its host and every subdomain",
        ),
        pytest.param(
            ("example.com",),
            (),
            ["https://notexample.com/", "https://example.com.evil.net/", "https://example.org/"],
            [],
            id="look-alike hosts are not subdomains",
        ),
        pytest.param(
            ("example.com",),
            ("ads.example.com",),
            ["https://www.example.com/", "https://ads.example.com/x", "https://cdn.ads.example.com/y"],
            ["https://www.example.com/"],
            id="blocked wins over allowed",
        ),
        pytest.param(
            ("example.com",),
            ("example.com",),
            ["https://example.com/"],
            [],
            id="blocked wins on an exact tie",
        ),
        pytest.param(
            (),
            ("pinterest.com",),
            ["https://en.wikipedia.org/", "https://www.pinterest.com/pin/1", "https://python.org/"],
            ["https://en.wikipedia.org/", "https://python.org/"],
            id="an empty allow-list allows every other host",
        ),
        pytest.param(
            ("example.com",),
            (),
            ["https://EXAMPLE.com/Upper", "https://Docs.Example.COM./dot"],
            ["https://EXAMPLE.com/Upper", "https://Docs.Example.COM./dot"],
            id="host case and a trailing dot do not matter",
        ),
    ],
)
def test_filter_hits_applies_the_domain_lists_web_11(allowed, blocked, urls, kept):
    result = filter_hits(hits_for(*urls), DomainPolicy(allowed, blocked), 20)
    assert [hit.url for hit in result] == kept


@pytest.mark.parametrize(
    "url",
    [
        "javascript:alert(document.cookie)",
        "data:text/html,<script>alert(1)</script>",
        "ftp://example.com/file",
        "file:///etc/passwd",
        "/relative/path",
        "//example.com/protocol-relative",
        "https://user:password@example.com/",
        "https://example.com/" + "a" * 2100,
        "https:///no-host",
        "not a url at all",
    ],
)
def test_filter_hits_drops_urls_that_fail_validation_web_11(url):
    result = filter_hits(hits_for(url, "https://example.com/ok"), DomainPolicy((), ()), 20)
    assert [hit.url for hit in result] == ["https://example.com/ok"]


def test_filter_hits_drops_repeats_keeping_the_first_and_order():
    hits = hits_for(
        "https://a.example/1",
        "https://b.example/2",
        "https://a.example/1",
        "https://a.example/1#section",
        "https://c.example/3",
    )
    result = filter_hits(hits, DomainPolicy((), ()), 20)
    assert [(hit.title, hit.url) for hit in result] == [
        ("t0", "https://a.example/1"),
        ("t1", "https://b.example/2"),
        ("t4", "https://c.example/3"),
    ]


def test_filter_hits_caps_after_filtering():
    hits = hits_for(
        "https://blocked.example/1",
        "https://a.example/1",
        "javascript:void(0)",
        "https://b.example/2",
        "https://c.example/3",
    )
    result = filter_hits(hits, DomainPolicy((), ("blocked.example",)), 2)
    assert [hit.url for hit in result] == ["https://a.example/1", "https://b.example/2"]
    assert filter_hits(hits, DomainPolicy((), ()), 0) == []


# -- Tavily: the request --------------------------------------------------------------------------


async def test_tavily_posts_the_documented_body_with_the_bearer_key_web_5(server, tavily):
    server.script(Reply(200, fixture_bytes("tavily_search.json"), {"Content-Type": "application/json"}))
    await tavily.search("python asyncio timeout", max_results=5)
    [seen] = server.requests
    assert (seen.method, seen.target) == ("POST", "/search")
    assert seen.headers["authorization"] == f"Bearer {KEY}"
    assert seen.headers["content-type"] == "application/json"
    assert seen.json() == {"query": "python asyncio timeout", "max_results": 5, "search_depth": "basic"}
    assert KEY not in seen.body.decode() and KEY not in seen.target


async def test_tavily_sends_the_domain_lists_natively_web_11(server, tavily):
    server.script(json_reply({"results": []}), json_reply({"results": []}), json_reply({"results": []}))
    await tavily.search("q", max_results=3, allowed_domains=("python.org", "docs.rs"))
    await tavily.search("q", max_results=3, blocked_domains=("pinterest.com",))
    await tavily.search(
        "q", max_results=3, allowed_domains=("python.org",), blocked_domains=("wiki.python.org",)
    )
    assert [seen.json() for seen in server.requests] == [
        {
            "query": "q",
            "max_results": 3,
            "search_depth": "basic",
            "include_domains": ["python.org", "docs.rs"],
        },
        {"query": "q", "max_results": 3, "search_depth": "basic", "exclude_domains": ["pinterest.com"]},
        {
            "query": "q",
            "max_results": 3,
            "search_depth": "basic",
            "include_domains": ["python.org"],
            "exclude_domains": ["wiki.python.org"],
        },
    ]


async def test_tavily_requests_at_most_20_and_at_least_1(server, tavily):
    server.script(json_reply({"results": []}), json_reply({"results": []}))
    await tavily.search("q", max_results=50)
    await tavily.search("q", max_results=0)
    assert [seen.json()["max_results"] for seen in server.requests] == [20, 1]


async def test_tavily_base_url_keeps_its_path_and_drops_a_trailing_slash(server, client):
    provider = TavilySearchProvider(KEY, base_url=f"{server.origin}/proxy/tavily/", client=client)
    server.script(json_reply({"results": []}))
    assert await provider.search("q", max_results=1) == []
    assert server.requests[0].target == "/proxy/tavily/search"


# -- Tavily: the answer ---------------------------------------------------------------------------


async def test_tavily_results_become_hits_content_as_snippet(server, tavily):
    server.script(Reply(200, fixture_bytes("tavily_search.json"), {"Content-Type": "application/json"}))
    hits = await tavily.search("python asyncio timeout", max_results=5)
    assert [hit.to_json() for hit in hits] == [
        {
            "title": "Coroutines and Tasks — Python 3.12.4 documentation",
            "url": "https://docs.python.org/3/library/asyncio-task.html",
            "snippet": "Timeouts. coroutine asyncio.timeout(delay) Return an asynchronous context manager "
            "that can be used to limit the amount of time spent waiting on something. delay can either "
            "be None, or a float/int number of seconds to wait.",
        },
        {
            "title": "Python asyncio force timeout - Stack Overflow",
            "url": "https://stackoverflow.com/questions/28609534/python-asyncio-force-timeout",
            "snippet": "Using asyncio a coroutine can be executed with a timeout so it gets cancelled after "
            "the timeout: @asyncio.coroutine def coro(): yield from asyncio.sleep(10)",
        },
        {
            "title": "Asyncio Timeout Best Practices - Super Fast Python",
            "url": "https://superfastpython.com/asyncio-timeout/",
            "snippet": "You can wait for an asyncio task or coroutine to complete with a timeout using the "
            "asyncio.wait_for() function.",
        },
    ]


async def test_tavily_hits_outside_the_lists_are_dropped_even_if_tavily_returns_them_web_11(server, tavily):
    server.script(Reply(200, fixture_bytes("tavily_search.json"), {"Content-Type": "application/json"}))
    hits = await tavily.search("q", max_results=5, blocked_domains=("stackoverflow.com",))
    assert [hit.url for hit in hits] == [
        "https://docs.python.org/3/library/asyncio-task.html",
        "https://superfastpython.com/asyncio-timeout/",
    ]


async def test_tavily_answer_is_capped_at_max_results(server, tavily):
    server.script(Reply(200, fixture_bytes("tavily_search.json"), {"Content-Type": "application/json"}))
    hits = await tavily.search("q", max_results=2)
    assert len(hits) == 2


async def test_tavily_long_fields_are_clipped_and_missing_ones_empty(server, tavily):
    server.script(
        json_reply(
            {
                "results": [
                    {"url": "https://a.example/", "title": "T" * 400, "content": "word " * 400},
                    {"url": "https://b.example/", "title": None, "content": None},
                    {"url": "https://c.example/"},
                ]
            }
        )
    )
    first, second, third = await tavily.search("q", max_results=5)
    assert (len(first.title), first.title[-1]) == (300, "…")
    assert (len(first.snippet), first.snippet[-1]) == (1000, "…")
    assert (second.title, second.snippet, third.title, third.snippet) == ("", "", "", "")


# -- Tavily: every error the model can see --------------------------------------------------------


async def test_tavily_401_names_the_key_variables(server, tavily):
    server.script(Reply(401, fixture_bytes("tavily_401.json"), {"Content-Type": "application/json"}))
    error = await search_error(tavily)
    assert error.code == "search_auth"
    assert error.error == (
        "Tavily refused the search API key (HTTP 401: Unauthorized: missing or invalid API key.); "
        "set a valid key in STEERABLE_WEB_SEARCH_API_KEY or TAVILY_API_KEY"
    )
    assert error.data == {"code": "search_auth", "provider": "tavily", "status": 401}


async def test_tavily_403_is_an_auth_failure_too(server, tavily):
    server.script(json_reply({"detail": {"error": "Forbidden"}}, 403))
    error = await search_error(tavily)
    assert (error.code, error.error) == (
        "search_auth",
        "Tavily refused the search API key (HTTP 403: Forbidden); "
        "set a valid key in STEERABLE_WEB_SEARCH_API_KEY or TAVILY_API_KEY",
    )


async def test_tavily_429_passes_retry_after_on(server, tavily):
    server.script(
        Reply(
            429, fixture_bytes("tavily_429.json"), {"Content-Type": "application/json", "Retry-After": "30"}
        )
    )
    error = await search_error(tavily)
    assert error.code == "search_rate_limited"
    assert error.error == (
        "Tavily is rate-limiting searches (HTTP 429: Your request has been blocked due to excessive "
        "requests. Please reduce rate of requests.); retry in 30 s"
    )
    assert error.data == {
        "code": "search_rate_limited",
        "provider": "tavily",
        "status": 429,
        "retryAfterSeconds": 30,
    }


async def test_tavily_429_with_an_http_date_or_no_retry_after(server, tavily):
    when = format_datetime(datetime.now(UTC) + timedelta(seconds=120), usegmt=True)
    server.script(json_reply({"detail": {"error": "slow down"}}, 429, **{"Retry-After": when}))
    server.script(json_reply({"detail": {"error": "slow down"}}, 429))
    dated = await search_error(tavily)
    assert dated.data is not None
    assert 118 <= dated.data["retryAfterSeconds"] <= 120
    bare = await search_error(tavily)
    assert bare.error == "Tavily is rate-limiting searches (HTTP 429: slow down); wait before searching again"
    assert bare.data is not None
    assert "retryAfterSeconds" not in bare.data


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        pytest.param(
            Reply(432, fixture_bytes("tavily_432.json"), {"Content-Type": "application/json"}),
            "Tavily answered HTTP 432: This request exceeds your plan's set usage limit. "
            "Please upgrade your plan or contact support@tavily.com",
            id="plan limit",
        ),
        pytest.param(
            Reply(500, b"<html><body>Internal Server Error</body></html>", {"Content-Type": "text/html"}),
            "Tavily answered HTTP 500: <html><body>Internal Server Error</body></html>",
            id="5xx with an html body",
        ),
        pytest.param(Reply(502), "Tavily answered HTTP 502: (empty body)", id="5xx empty"),
        pytest.param(
            Reply(307, headers={"Location": "https://evil.example/search"}),
            "Tavily answered HTTP 307: (empty body)",
            id="a redirect is not followed",
        ),
        pytest.param(
            Reply(200, b"<html>captive portal</html>"), "Tavily's answer is not JSON", id="not json"
        ),
        pytest.param(json_reply([1, 2]), "Tavily's answer is malformed: not a JSON object", id="array"),
        pytest.param(
            json_reply({"answer": "x"}), "Tavily's answer is malformed: no results list", id="no results"
        ),
        pytest.param(
            json_reply({"results": {"url": "x"}}),
            "Tavily's answer is malformed: no results list",
            id="results object",
        ),
        pytest.param(
            json_reply({"results": [{"url": "https://a.example/"}, "b"]}),
            "Tavily's answer is malformed: result 2 is not an object",
            id="result not an object",
        ),
        pytest.param(
            json_reply({"results": [{"title": "no url", "content": "x"}]}),
            "Tavily's answer is malformed: result 1 has no url",
            id="result without url",
        ),
        pytest.param(
            json_reply({"results": [{"url": "https://a.example/", "title": 42}]}),
            "Tavily's answer is malformed: result 1 has a non-text title",
            id="non-text title",
        ),
    ],
)
async def test_tavily_failures_are_search_failed_naming_the_provider(server, tavily, reply, message):
    server.script(reply)
    error = await search_error(tavily)
    assert error.data is not None
    assert (error.code, error.error, error.data["provider"]) == ("search_failed", message, "tavily")
    assert len(server.requests) == 1


async def test_a_long_error_detail_is_clipped(server, tavily):
    server.script(json_reply({"detail": {"error": "x" * 1000}}, 400))
    error = await search_error(tavily)
    assert error.error == "Tavily answered HTTP 400: " + "x" * 197 + "..."


async def test_tavily_server_that_never_answers_times_out(server, client):
    provider = TavilySearchProvider(KEY, base_url=server.origin, client=client, timeout_ms=200)
    server.script(Reply(hang=True))
    error = await search_error(provider)
    assert (error.code, error.error) == (
        "search_failed",
        "Tavily did not answer within 200 ms (STEERABLE_WEB_SEARCH_TIMEOUT_MS)",
    )


async def test_the_deadline_covers_the_whole_call_not_each_read(server, client):
    # A byte every 50 ms never trips a per-read timeout; the whole-call deadline still ends it.
    provider = TavilySearchProvider(KEY, base_url=server.origin, client=client, timeout_ms=300)
    server.script(Reply(trickle=True))
    started = asyncio.get_running_loop().time()
    error = await search_error(provider)
    elapsed = asyncio.get_running_loop().time() - started
    assert error.error == "Tavily did not answer within 300 ms (STEERABLE_WEB_SEARCH_TIMEOUT_MS)"
    assert 0.25 <= elapsed < 2.0  # at the 300 ms deadline: the trickle never ends


async def test_an_unreachable_tavily_is_search_failed(client):
    port = closed_port()
    provider = TavilySearchProvider(KEY, base_url=f"http://127.0.0.1:{port}", client=client, timeout_ms=2_000)
    error = await search_error(provider)
    assert error.code == "search_failed"
    assert error.error.startswith(f"could not reach Tavily at http://127.0.0.1:{port}: ")


@pytest.mark.parametrize(
    "reply",
    [
        pytest.param(
            Reply(endless=True, headers={"Content-Type": "application/json"}), id="endless chunked body"
        ),
        pytest.param(
            Reply(body=b"{}", headers={"Content-Length": str(MAX_RESPONSE_BYTES + 1)}),
            id="declared too large",
        ),
        pytest.param(
            Reply(
                body=gzip.compress(b" " * (MAX_RESPONSE_BYTES + 1)),
                headers={"Content-Type": "application/json", "Content-Encoding": "gzip"},
            ),
            id="gzip bomb (decoded bytes count)",
        ),
    ],
)
async def test_an_oversized_answer_is_refused_not_read_whole(server, tavily, reply):
    server.script(reply)
    error = await search_error(tavily)
    assert (error.code, error.error) == (
        "search_failed",
        f"Tavily's answer is larger than {MAX_RESPONSE_BYTES} bytes; not read",
    )


# -- Tavily: the key stays secret -----------------------------------------------------------------


@pytest.mark.parametrize(
    "reply",
    [
        json_reply({"detail": {"error": f"Unauthorized: invalid API key {KEY}"}}, 401),
        json_reply({"detail": {"error": f"bad key {KEY}"}}, 429),
        json_reply({"error": f"upstream failed for Bearer {KEY}"}, 500),
        json_reply({"detail": {"error": "y" * 170 + KEY}}, 400),  # the clip cuts the key short
        Reply(200, f"not json {KEY}".encode()),
    ],
)
async def test_the_key_never_reaches_an_error_or_a_log_line_web_5(server, tavily, caplog, reply):
    caplog.set_level(logging.DEBUG)
    server.script(reply)
    error = await search_error(tavily)
    visible = [error.error, str(error), repr(error.data), *(r.getMessage() for r in caplog.records)]
    assert [text for text in visible if KEY in text or KEY[:12] in text] == []
    assert "search_" in error.code


def test_the_key_is_not_in_the_provider_repr():
    provider = TavilySearchProvider(KEY, base_url="https://api.tavily.com")
    assert repr(provider) == "TavilySearchProvider(base_url='https://api.tavily.com', timeout_ms=30000)"


@pytest.mark.parametrize("key", ["", "   ", "tvly-abc def", "tvly-abc\ndef", "tvly-ünïcode"])
def test_a_key_an_http_header_cannot_carry_is_refused_without_echoing_it(key):
    with pytest.raises(UserError) as caught:
        TavilySearchProvider(key)
    assert "STEERABLE_WEB_SEARCH_API_KEY or TAVILY_API_KEY" in str(caught.value)
    assert not key.strip() or key not in str(caught.value)


@pytest.mark.parametrize(
    "base_url", ["ftp://api.tavily.com", "https://user:pw@api.tavily.com", "not a url", ""]
)
def test_a_bad_base_url_is_refused(base_url):
    with pytest.raises(UserError, match="base_url must be an http"):
        TavilySearchProvider(KEY, base_url=base_url)


@pytest.mark.parametrize(
    ("base_url", "why"),
    [
        ("https://api.tavily.com/?key=tvly-secret", "must not have a query or fragment"),
        ("https://api.tavily.com/#frag", "must not have a query or fragment"),
        ("http://", "with a host"),
        ("http://[::1/", "is not a URL"),
        (None, "must be a string URL, not NoneType"),
        (b"https://api.tavily.com", "must be a string URL, not bytes"),
    ],
)
@pytest.mark.parametrize("backend", [TavilySearchProvider, DuckDuckGoSearchProvider])
def test_a_base_url_the_configuration_would_refuse_is_refused_by_the_constructor_too(backend, base_url, why):
    """One base-URL check serves the configuration and both constructors (``_endpoints``)."""
    args = (KEY,) if backend is TavilySearchProvider else ()
    with pytest.raises(UserError, match="base_url must be an http") as caught:
        backend(*args, base_url=base_url)
    assert why in str(caught.value)
    assert "tvly-secret" not in str(caught.value)


def test_the_duckduckgo_base_url_is_kept_as_given():
    """DuckDuckGo posts to its URL itself: the trailing ``/`` of ``/lite/`` stays."""
    assert DuckDuckGoSearchProvider().base_url == "https://lite.duckduckgo.com/lite/"
    assert TavilySearchProvider(KEY, base_url="https://api.tavily.com/").base_url == "https://api.tavily.com"


@pytest.mark.parametrize("timeout_ms", [0, -1, True, 1.5])
def test_a_bad_timeout_is_refused(timeout_ms):
    with pytest.raises(UserError, match="timeout_ms must be a positive integer"):
        TavilySearchProvider(KEY, timeout_ms=timeout_ms)


async def test_an_injected_client_stays_open_and_an_owned_one_is_closed(client):
    injected = TavilySearchProvider(KEY, client=client)
    await injected.aclose()
    assert not client.is_closed
    async with TavilySearchProvider(KEY) as owned:
        own_client = owned._client
    assert own_client.is_closed


# -- DuckDuckGo lite ------------------------------------------------------------------------------

DDG_HITS = [
    {
        "title": "Coroutines and Tasks — Python 3.12.4 documentation",
        "url": "https://docs.python.org/3/library/asyncio-task.html",
        "snippet": "This section outlines high-level asyncio APIs to work with coroutines and Tasks. "
        "Timeouts: asyncio.timeout(delay) returns an asynchronous context manager that can be used to "
        "limit the amount of time spent waiting on something.",
    },
    {
        "title": "Python asyncio force timeout - Stack Overflow",
        "url": "https://stackoverflow.com/questions/28609534/python-asyncio-force-timeout?tab=votes#answers",
        "snippet": "Using asyncio & wait_for, how can I cancel a coroutine that doesn't finish in time?",
    },
    {
        "title": "Asyncio Timeout Best Practices - Super Fast Python",
        "url": "https://superfastpython.com/asyncio-timeout/",
        "snippet": "We can add a timeout to an asyncio task via asyncio.wait_for() … and, since Python 3.11, "
        "asyncio.timeout().",
    },
    {
        "title": "PEP 654 – Exception Groups and except* | peps.python.org",
        "url": "https://peps.python.org/pep-0654/",
        "snippet": "This document proposes language extensions that allow programs to raise and handle "
        "multiple unrelated exceptions simultaneously.",
    },
]


def ddg_page(name: str = "ddg_lite_results.html", status: int = 200) -> Reply:
    return Reply(status, fixture_bytes(name), {"Content-Type": "text/html; charset=UTF-8"})


async def test_ddg_submits_the_lite_form(server, ddg):
    server.script(ddg_page())
    await ddg.search("python asyncio timeout", max_results=5)
    [seen] = server.requests
    assert (seen.method, seen.target) == ("POST", "/lite/")
    assert seen.headers["content-type"] == "application/x-www-form-urlencoded"
    assert parse_qs(seen.body.decode()) == {"q": ["python asyncio timeout"]}
    assert "authorization" not in seen.headers


async def test_ddg_parses_organic_results_drops_ads_and_unwraps_redirects(server, ddg):
    server.script(ddg_page())
    hits = await ddg.search("python asyncio timeout", max_results=10)
    assert [hit.to_json() for hit in hits] == DDG_HITS


async def test_ddg_caps_at_max_results(server, ddg):
    server.script(ddg_page())
    hits = await ddg.search("python asyncio timeout", max_results=2)
    assert [hit.url for hit in hits] == [DDG_HITS[0]["url"], DDG_HITS[1]["url"]]


async def test_ddg_applies_the_lists_to_the_whole_page_before_the_cap_web_11(server, ddg):
    # DuckDuckGo has no domain parameter; the allowed host is third on the page, yet one hit is kept.
    server.script(ddg_page(), ddg_page())
    allowed = await ddg.search("q", max_results=1, allowed_domains=("superfastpython.com",))
    blocked = await ddg.search("q", max_results=2, blocked_domains=("python.org",))
    assert [hit.url for hit in allowed] == ["https://superfastpython.com/asyncio-timeout/"]
    assert [hit.url for hit in blocked] == [DDG_HITS[1]["url"], DDG_HITS[2]["url"]]
    assert [parse_qs(seen.body.decode()) for seen in server.requests] == [{"q": ["q"]}, {"q": ["q"]}]


async def test_ddg_link_forms(server, ddg):
    page = b"""<table>
    <tr><td><a rel="nofollow" href="https://duckduckgo.com/y.js?ad_domain=x.example&amp;u3=z" class='result-link'>ad link in an unmarked row</a></td></tr>
    <tr><td><a href="https://duckduckgo.com/?q=more" class='result-link'>a link back into DuckDuckGo</a></td></tr>
    <tr><td><a href="//duckduckgo.com/l/?rut=only" class='result-link'>a redirect without a target</a></td></tr>
    <tr><td><a href="//duckduckgo.com/l/?uddg=http%3A%2F%2Fplain.example%2Fa%20b&amp;rut=1" class='result-link'>http target</a></td></tr>
    <tr><td><a href="//www.example.org/protocol-relative" class="result-link other">protocol relative</a></td></tr>
    <tr><td><a href="javascript:alert(1)" class='result-link'>script</a></td></tr>
    <tr><td><a href="https://untitled.example/" class='result-link'></a></td></tr>
    <tr><td class='result-snippet'>   spaced
         out   </td></tr>
    </table>"""
    server.script(Reply(200, page, {"Content-Type": "text/html"}))
    hits = await ddg.search("q", max_results=10)
    assert [hit.to_json() for hit in hits] == [
        {"title": "http target", "url": "http://plain.example/a b", "snippet": ""},
        {"title": "protocol relative", "url": "https://www.example.org/protocol-relative", "snippet": ""},
        {"title": "", "url": "https://untitled.example/", "snippet": "spaced out"},
    ]


async def test_ddg_drops_every_sponsored_row_whatever_its_link(server, ddg):
    page = b"""<table>
    <tr class="result-sponsored"><td>1.</td><td><a rel="nofollow" href="https://shop.example/deal" class='result-link'>Direct ad</a></td></tr>
    <tr class="result-sponsored"><td></td><td class='result-snippet'>Buy now.</td></tr>
    <tr><td>1.</td><td><a rel="nofollow" href="https://organic.example/" class='result-link'>Organic</a></td></tr>
    <tr><td></td><td class='result-snippet'>Kept.</td></tr>
    </table>"""
    server.script(Reply(200, page, {"Content-Type": "text/html"}))
    hits = await ddg.search("q", max_results=10)
    assert [hit.to_json() for hit in hits] == [
        {"title": "Organic", "url": "https://organic.example/", "snippet": "Kept."}
    ]


async def test_ddg_reads_at_most_100_result_links_of_a_page(server, ddg):
    rows = "".join(
        f"<tr><td><a href='https://h{i}.example/' class='result-link'>{i}</a></td></tr>" for i in range(150)
    )
    server.script(*(Reply(200, f"<table>{rows}</table>".encode()) for _ in range(2)))
    assert [hit.title for hit in await ddg.search("q", max_results=1, allowed_domains=("h99.example",))] == [
        "99"
    ]
    assert await ddg.search("q", max_results=1, allowed_domains=("h100.example",)) == []


async def test_ddg_decodes_the_declared_charset(server, ddg):
    page = "<a href='https://z.example/' class='result-link'>Zürich</a>".encode("latin-1")
    server.script(Reply(200, page, {"Content-Type": "text/html; charset=ISO-8859-1"}))
    [hit] = await ddg.search("q", max_results=1)
    assert hit.title == "Zürich"


async def test_ddg_no_results_page_is_an_empty_list(server, ddg):
    page = b"""<form action="/lite/" method="post"><input name="q" value="zzqx"></form>
    <div class="filters"><table border="0"><tr><td>&nbsp;</td><td>No results.</td></tr></table></div>"""
    server.script(Reply(200, page, {"Content-Type": "text/html"}))
    assert await ddg.search("zzqx", max_results=5) == []


@pytest.mark.parametrize("status", [202, 200, 403])
async def test_ddg_bot_challenge_is_a_failure_not_an_empty_search(server, ddg, status):
    server.script(ddg_page("ddg_lite_challenge.html", status))
    error = await search_error(ddg)
    assert (error.code, error.error) == (
        "search_failed",
        f"DuckDuckGo answered with a bot challenge instead of results (HTTP {status}); "
        "retry later, or configure Tavily (STEERABLE_WEB_SEARCH_API_KEY)",
    )
    assert error.data == {"code": "search_failed", "provider": "ddg", "status": status}


@pytest.mark.parametrize(
    ("reply", "code", "message"),
    [
        pytest.param(
            Reply(429, b"", {"Retry-After": "5"}),
            "search_rate_limited",
            "DuckDuckGo is rate-limiting searches (HTTP 429); retry in 5 s",
            id="429",
        ),
        pytest.param(Reply(500, b"oops"), "search_failed", "DuckDuckGo answered HTTP 500", id="5xx"),
        pytest.param(
            Reply(303, headers={"Location": "/lite/?q=x"}),
            "search_failed",
            "DuckDuckGo answered HTTP 303",
            id="3xx",
        ),
        pytest.param(
            Reply(200, b"<html><body><div class='new-layout'>results moved</div></body></html>"),
            "search_failed",
            "DuckDuckGo's answer has no results table (its page markup may have changed)",
            id="unknown markup",
        ),
    ],
)
async def test_ddg_failures(server, ddg, reply, code, message):
    server.script(reply)
    error = await search_error(ddg)
    assert error.data is not None
    assert (error.code, error.error, error.data["provider"]) == (code, message, "ddg")


async def test_ddg_times_out_on_the_same_deadline(server, client):
    provider = DuckDuckGoSearchProvider(base_url=f"{server.origin}/lite/", client=client, timeout_ms=150)
    server.script(Reply(hang=True))
    error = await search_error(provider)
    assert error.error == "DuckDuckGo did not answer within 150 ms (STEERABLE_WEB_SEARCH_TIMEOUT_MS)"


# -- the host -------------------------------------------------------------------------------------


class FakeHost:
    """A reverse-channel ``invoke``: records each request and answers (or raises) from a script."""

    def __init__(self, *answers: Any) -> None:
        self.answers = deque(answers)
        self.requests: list[dict[str, Any]] = []

    async def __call__(self, request: dict[str, Any]) -> Any:
        self.requests.append(request)
        answer = self.answers.popleft()
        if isinstance(answer, BaseException):
            raise answer
        return answer


async def test_host_gets_the_request_object_and_its_hits_come_back_web_6():
    host = FakeHost(
        {
            "results": [
                {"title": "Docs", "url": "https://docs.python.org/3/", "snippet": "The  Python\ndocs"},
                {"title": "Blocked", "url": "https://www.pinterest.com/x", "snippet": ""},
                {"title": "Wiki", "url": "https://en.wikipedia.org/wiki/Python", "snippet": None},
            ]
        }
    )
    provider = HostSearchProvider(host)
    hits = await provider.search(
        "python", max_results=25, allowed_domains=(), blocked_domains=("pinterest.com",)
    )
    assert host.requests == [
        {"query": "python", "maxResults": 20, "allowedDomains": [], "blockedDomains": ["pinterest.com"]}
    ]
    assert [hit.to_json() for hit in hits] == [
        {"title": "Docs", "url": "https://docs.python.org/3/", "snippet": "The Python docs"},
        {"title": "Wiki", "url": "https://en.wikipedia.org/wiki/Python", "snippet": ""},
    ]


async def test_host_answer_is_capped_at_max_results():
    results = [{"title": str(i), "url": f"https://h{i}.example/", "snippet": ""} for i in range(5)]
    hits = await HostSearchProvider(FakeHost({"results": results})).search("q", max_results=3)
    assert [hit.title for hit in hits] == ["0", "1", "2"]


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        pytest.param(None, "the host's answer is malformed: not a JSON object", id="null"),
        pytest.param(["x"], "the host's answer is malformed: not a JSON object", id="array"),
        pytest.param({}, "the host's answer is malformed: no results list", id="no results"),
        pytest.param(
            {"results": "x"}, "the host's answer is malformed: no results list", id="results string"
        ),
        pytest.param(
            {"results": [7]}, "the host's answer is malformed: result 1 is not an object", id="number"
        ),
        pytest.param(
            {"results": [{"title": "t", "snippet": "s"}]},
            "the host's answer is malformed: result 1 has no url",
            id="no url",
        ),
        pytest.param(
            {"results": [{"url": "https://a.example/", "snippet": ["s"]}]},
            "the host's answer is malformed: result 1 has a non-text snippet",
            id="snippet list",
        ),
    ],
)
async def test_host_malformed_answers_are_search_failed(answer, message):
    error = await search_error(HostSearchProvider(FakeHost(answer)))
    assert (error.code, error.error) == ("search_failed", message)
    assert error.data == {"code": "search_failed", "provider": "host"}


@pytest.mark.parametrize(
    ("raised", "message", "extra"),
    [
        pytest.param(
            RemoteError(-32601, "method not found: web.search"),
            "the host could not run the search: method not found: web.search",
            {"rpcCode": -32601},
            id="json-rpc error",
        ),
        pytest.param(
            PeerClosedError(),
            "the host could not run the search: the peer closed the connection before answering",
            {"rpcCode": -32099},
            id="peer closed",
        ),
        pytest.param(
            RuntimeError("hosted search is not available for this model"),
            "the host could not run the search (RuntimeError: hosted search is not available for this model)",
            {},
            id="any exception",
        ),
        pytest.param(
            TimeoutError(), "the host could not run the search (TimeoutError: no detail)", {}, id="timeout"
        ),
    ],
)
async def test_host_failures_are_search_failed(raised, message, extra):
    error = await search_error(HostSearchProvider(FakeHost(raised)))
    assert (error.code, error.error) == ("search_failed", message)
    assert error.data == {"code": "search_failed", "provider": "host", **extra}


async def test_a_web_error_from_the_host_passes_through_unchanged():
    original = WebError("search_rate_limited", "the host's search quota is spent; retry in 60 s")
    error = await search_error(HostSearchProvider(FakeHost(original)))
    assert error is original


async def test_cancelling_a_host_search_cancels_the_call():
    started = asyncio.Event()

    async def invoke(request: dict[str, Any]) -> dict[str, Any]:
        started.set()
        await asyncio.sleep(3600)
        return {"results": []}

    task = asyncio.create_task(HostSearchProvider(invoke).search("q", max_results=1))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


# -- default_web_search_provider ------------------------------------------------------------------


async def test_default_provider_is_tavily_with_the_configured_key_url_and_timeout_web_5(server, client):
    config = WebToolsConfig(search_api_key=KEY, search_base_url=server.origin, search_timeout_ms=1_234)
    provider = default_web_search_provider(config, client=client)
    assert isinstance(provider, TavilySearchProvider)
    assert (provider.base_url, provider.timeout_ms) == (server.origin, 1_234)
    server.script(json_reply({"results": []}))
    await provider.search("q", max_results=1)
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"


def test_tavily_without_a_key_leaves_web_search_unregistered_and_never_falls_back_to_ddg_web_5_web_6():
    assert default_web_search_provider(WebToolsConfig(search_api_key="")) is None
    assert default_web_search_provider(WebToolsConfig.from_env({"TAVILY_API_KEY": ""})) is None


def test_tavily_key_from_either_variable_web_5():
    for env in ({"STEERABLE_WEB_SEARCH_API_KEY": KEY}, {"TAVILY_API_KEY": KEY}):
        provider = default_web_search_provider(WebToolsConfig.from_env(env))
        assert isinstance(provider, TavilySearchProvider)
        assert provider._secret == KEY


def test_host_needs_no_key_but_a_host_to_call_web_6():
    config = WebToolsConfig(search_provider="host")
    host = FakeHost()
    assert isinstance(default_web_search_provider(config, host_invoke=host), HostSearchProvider)
    assert default_web_search_provider(config) is None


def test_ddg_is_chosen_only_explicitly_web_6(client):
    provider = default_web_search_provider(
        WebToolsConfig(search_provider="ddg", search_timeout_ms=777), client=client
    )
    assert isinstance(provider, DuckDuckGoSearchProvider)
    assert (provider.base_url, provider.timeout_ms) == ("https://lite.duckduckgo.com/lite/", 777)
    with_key = default_web_search_provider(WebToolsConfig(search_provider="ddg", search_api_key=KEY))
    assert isinstance(with_key, DuckDuckGoSearchProvider)


def test_an_unknown_provider_name_is_refused_even_past_the_config_web_6():
    with pytest.raises(ConfigError, match="bing"):
        WebToolsConfig.from_env({"STEERABLE_WEB_SEARCH_PROVIDER": "bing"})
    smuggled = types.SimpleNamespace(search_provider="bing", search_api_key="", search_timeout_ms=1)
    with pytest.raises(ConfigError) as caught:
        default_web_search_provider(smuggled)  # type: ignore[arg-type]
    assert str(caught.value) == (
        "STEERABLE_WEB_SEARCH_PROVIDER='bing' is not a search provider; use tavily, host or ddg"
    )


# -- hostile backends (attack review, issue 6) ----------------------------------------------------
#
# A search backend is untrusted input: whatever it answers ends in hits or a WebError, costs at
# most about the response cap in memory, and never stalls the event loop.


def gzip_of_spaces(size: int) -> bytes:
    """``size`` spaces (a multiple of 1 MiB) gzipped without holding them: 64 MiB is 65 KB."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = b" " * (1 << 20)
    return b"".join(packer.compress(block) for _ in range(size >> 20)) + packer.flush()


async def peak_bytes_of(call: Awaitable[Any]) -> int:
    tracemalloc.start()
    try:
        await call
    except WebError:
        pass
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return peak


async def test_stacked_gzip_is_refused_from_the_header_without_inflating(server, tavily):
    # 1.8 KB of "gzip, gzip" inflated to 1 GiB inside httpx before any size check could run.
    body = gzip.compress(gzip_of_spaces(64 << 20))
    server.script(Reply(200, body, {"Content-Type": "application/json", "Content-Encoding": "gzip, gzip"}))
    peak = await peak_bytes_of(tavily.search("q", max_results=5))
    server.script(Reply(200, body, {"Content-Type": "application/json", "Content-Encoding": "gzip, gzip"}))
    error = await search_error(tavily)
    assert (error.code, error.error) == (
        "search_failed",
        "Tavily sent its answer with Content-Encoding 'gzip, gzip'; web_search decodes one coding only, "
        "gzip or deflate (it asks for gzip)",
    )
    assert error.data == {"code": "search_failed", "provider": "tavily", "contentEncoding": "gzip, gzip"}
    assert peak < MAX_RESPONSE_BYTES


async def test_a_gzip_bomb_costs_about_the_cap_in_memory_not_its_inflated_size(server, tavily):
    body = gzip_of_spaces(64 << 20)  # 65 KB on the wire, one read: httpx inflated it whole
    server.script(Reply(200, body, {"Content-Type": "application/json", "Content-Encoding": "gzip"}))
    peak = await peak_bytes_of(tavily.search("q", max_results=5))
    assert peak < 3 * MAX_RESPONSE_BYTES
    server.script(Reply(200, body, {"Content-Type": "application/json", "Content-Encoding": "gzip"}))
    error = await search_error(tavily)
    assert error.error == f"Tavily's answer is larger than {MAX_RESPONSE_BYTES} bytes; not read"


async def test_empty_gzip_members_count_as_received_bytes(server, tavily):
    # Inflates to nothing, so only the received bytes can stop it.
    members = gzip.compress(b"", mtime=0) * (MAX_RESPONSE_BYTES // 20 + 1)
    server.script(Reply(200, members, {"Content-Type": "application/json", "Content-Encoding": "gzip"}))
    error = await search_error(tavily)
    assert error.error == f"Tavily's answer is larger than {MAX_RESPONSE_BYTES} bytes; not read"


@pytest.mark.parametrize(
    ("coding", "packed"),
    [
        ("gzip", gzip.compress),
        ("x-gzip", gzip.compress),
        ("deflate", zlib.compress),
        ("deflate", lambda data: zlib.compress(data)[2:-4]),  # raw deflate, as some servers send it
        ("identity", lambda data: data),
        (" GZIP ", gzip.compress),
    ],
)
async def test_a_single_content_coding_is_decoded(server, tavily, coding, packed):
    answer = json.dumps({"results": [{"title": "T", "url": "https://a.example/", "content": "S"}]})
    server.script(Reply(200, packed(answer.encode()), {"Content-Encoding": coding}))
    assert [hit.to_json() for hit in await tavily.search("q", max_results=5)] == [
        {"title": "T", "url": "https://a.example/", "snippet": "S"}
    ]


@pytest.mark.parametrize(
    ("coding", "body", "message"),
    [
        (
            "br",
            b"\x0b\x02\x80{}\x03",
            "Tavily sent its answer with Content-Encoding 'br'; web_search decodes one coding only, "
            "gzip or deflate (it asks for gzip)",
        ),
        (
            "identity, gzip",
            b"{}",
            "Tavily sent its answer with Content-Encoding 'identity, gzip'; web_search decodes one coding "
            "only, gzip or deflate (it asks for gzip)",
        ),
        ("gzip", b"{not gzip at all}", "Tavily's answer is not valid gzip (its Content-Encoding)"),
    ],
)
async def test_an_unreadable_content_coding_is_search_failed(server, tavily, coding, body, message):
    server.script(Reply(200, body, {"Content-Encoding": coding}))
    error = await search_error(tavily)
    assert (error.code, error.error) == ("search_failed", message)


async def test_both_http_backends_ask_for_gzip_only(server, tavily, ddg):
    server.script(json_reply({"results": []}), ddg_page())
    await tavily.search("q", max_results=1)
    await ddg.search("q", max_results=1)
    assert [seen.headers["accept-encoding"] for seen in server.requests] == ["gzip", "gzip"]


DEEP_JSON = b'{"results":' + b"[" * 200_000 + b"]" * 200_000 + b"}"


async def test_json_nested_past_the_recursion_limit_is_search_failed(server, tavily):
    server.script(Reply(200, DEEP_JSON, {"Content-Type": "application/json"}))
    error = await search_error(tavily)
    assert (error.code, error.error) == ("search_failed", "Tavily's answer is nested too deeply to read")


async def test_a_deeply_nested_error_body_still_names_the_key_variables(server, tavily):
    server.script(Reply(401, DEEP_JSON, {"Content-Type": "application/json"}))
    error = await search_error(tavily)
    assert (error.code, error.error) == (
        "search_auth",
        'Tavily refused the search API key (HTTP 401: {"results":' + "[" * 186 + "...); "
        "set a valid key in STEERABLE_WEB_SEARCH_API_KEY or TAVILY_API_KEY",
    )


@pytest.mark.parametrize("charset", ["base64", "idna", "rot13", "hex", "zlib", "utf-7", "x-unknown", "utf-8"])
async def test_ddg_decodes_a_non_text_or_unknown_charset_label_as_utf8(server, ddg, charset):
    page = "<a href='https://z.example/' class='result-link'>Zürich</a>".encode()
    server.script(Reply(200, page, {"Content-Type": f"text/html; charset={charset}"}))
    [hit] = await ddg.search("q", max_results=1)
    assert hit.title == "Zürich"


@pytest.mark.parametrize(
    ("charset", "encoded"),
    [("windows-1251", "cp1251"), ("Shift_JIS", "cp932"), ("KOI8-R", "koi8-r"), ("gb2312", "gb18030")],
)
async def test_ddg_decodes_whatwg_labels(server, ddg, charset, encoded):
    page = "<a href='https://z.example/' class='result-link'>Москва 東京</a>"
    if encoded == "koi8-r":
        page = page.replace(" 東京", "")
    if encoded == "cp1251":
        page = page.replace(" 東京", "")
    server.script(Reply(200, page.encode(encoded), {"Content-Type": f"text/html; charset={charset}"}))
    [hit] = await ddg.search("q", max_results=1)
    assert hit.title == page.split(">")[1].split("<")[0]


async def test_ddg_page_the_html_parser_cannot_read_is_search_failed(server, ddg):
    # html.parser raises AssertionError on a malformed marked section.
    server.script(Reply(200, b"<table><tr><td><![x <a class='result-link' href='https://a.example/'>A</a>"))
    error = await search_error(ddg)
    assert (error.code, error.error) == (
        "search_failed",
        "DuckDuckGo's answer is malformed: its HTML has a malformed '<![' section the results parser "
        "cannot read",
    )
    assert error.data == {"code": "search_failed", "provider": "ddg", "status": 200}


@pytest.mark.parametrize(
    ("retry_after", "seconds"),
    [
        ("30", 30),
        (" 7 ", 7),
        ("0", 0),
        ("999999999", 999_999_999),
        ("1000000000", None),  # ten digits: not a delay anyone means
        ("9" * 5000, None),  # int() refuses more than 4300 digits
        ("\u00b2", None),  # '²'.isdigit() is True
        ("-5", None),
        ("1.5", 2),  # a fraction, as model servers send it, rounded up
        ("soon", None),
        ("Mon, 99 Foo 2024 25:61:61 GMT", None),
        ("Thu, 01 Jan 1970 00:00:00 GMT", 0),  # in the past
        ("Thu, 01 Jan 2015 00:00:00 -0000", None),  # RFC 2822 "-0000": no zone, not an HTTP-date
        ("Fri, 31 Dec 99999 23:59:59 GMT", None),
        ("Sun Nov  6 08:49:37 1994", 0),  # asctime: an HTTP-date (RFC 9110, 5.6.7), GMT by definition
        ("Sunday, 06-Nov-94 08:49:37 GMT", 0),  # RFC 850, the other obsolete form
        ("Sun, 06 Nov 1994 08:49:37", None),  # an IMF-fixdate without its GMT: no instant
        ("Sun Nov 6 08:49:37 1994 garbage", None),
    ],
)
@pytest.mark.parametrize("backend", ["tavily", "ddg"])
async def test_retry_after_in_any_form_ends_in_search_rate_limited(
    server, client, backend, retry_after, seconds
):
    if backend == "tavily":
        provider: Any = TavilySearchProvider(KEY, base_url=server.origin, client=client, timeout_ms=5_000)
    else:
        provider = DuckDuckGoSearchProvider(base_url=server.origin, client=client, timeout_ms=5_000)
    server.script(Reply(429, b"{}", {"Retry-After": retry_after}))
    error = await search_error(provider)
    assert error.code == "search_rate_limited"
    assert error.data is not None
    assert error.data.get("retryAfterSeconds") == seconds
    if seconds is None:
        assert error.error.endswith("; wait before searching again")


async def test_an_http_date_retry_after_far_ahead_is_counted_in_seconds(server, tavily):
    server.script(Reply(429, b"{}", {"Retry-After": "Fri, 31 Dec 9999 23:59:59 GMT"}))
    error = await search_error(tavily)
    expected = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC).timestamp() - datetime.now(UTC).timestamp()
    assert error.data is not None
    assert abs(error.data["retryAfterSeconds"] - expected) < 5


async def test_hostile_answers_reach_the_model_as_search_failed_not_a_tool_exception(server, client):
    # What the model sees through the tool router: a followup-able search error, never
    # tool_exception (a terminal result) from an exception escaping the backend.
    provider = TavilySearchProvider(KEY, base_url=server.origin, client=client, timeout_ms=5_000)
    router = ToolRouter()
    web = install_web_tools(router, WebToolsConfig(), provider=provider)
    server.script(Reply(200, DEEP_JSON), Reply(429, b"{}", {"Retry-After": "9" * 5000}))
    seen = []
    for _ in range(2):
        result = await router.dispatch({"id": "1", "name": "web_search", "arguments": {"query": "x"}})
        assert result.data is not None
        seen.append((result.success, result.needs_followup, result.data["code"]))
    await web.aclose()
    assert seen == [(False, True, "search_failed"), (False, True, "search_rate_limited")]


def random_answer(rng: random.Random) -> httpx.Response:
    """A backend answer assembled from the pieces that broke parsers: deep nesting, odd charsets,
    odd codings, odd Retry-After values, marked sections, lone surrogates, huge numbers."""
    json_bits = [
        '{"results":[',
        "{",
        "}",
        "[",
        "]",
        '"url":',
        '"https://a.example/"',
        '"title":',
        "null",
        ",",
        '"content":',
        "1e999",
        "9" * 5000,
        '"\\ud800"',
        '"detail":',
        '{"error":',
        '"x"',
        ":",
    ]
    html_bits = [
        "<a class='result-link' href='",
        "//duckduckgo.com/l/?uddg=",
        "https://b.example/",
        "'>",
        "</a>",
        "<td class='result-snippet'>",
        "<![",
        "<!x",
        "<![CDATA[",
        "]]>",
        "&#xD800;",
        "&#99999999999;",
        "No results.",
        "anomaly-modal",
        "<tr class='result-sponsored'>",
        "\x00",
    ]
    bits = json_bits if rng.random() < 0.5 else html_bits
    body = "".join(rng.choice(bits) for _ in range(rng.randint(0, 60)))
    if rng.random() < 0.1:
        body = "[" * rng.randint(1_000, 5_000) + body
    raw = body.encode("utf-8", "surrogatepass")
    headers = {
        "Content-Type": "text/html; charset="
        + rng.choice(
            [
                "utf-8",
                "base64",
                "idna",
                "utf-16",
                "utf-32",
                "iso-2022-jp",
                "cp037",
                "punycode",
                "uu",
                "quopri",
                "bz2",
                "mbcs",
                "",
                "x" * 300,
                "\u00e9",
            ]
        )
    }
    coding = rng.choice(["", "", "gzip", "deflate", "gzip, gzip", "br", "zstd", "compress"])
    if coding:
        headers["Content-Encoding"] = coding
        if coding == "gzip":
            raw = gzip.compress(raw) if rng.random() < 0.8 else raw[: rng.randint(0, 10)]
        elif coding == "deflate":
            raw = zlib.compress(raw)[: rng.choice([None, 5])]
    status = rng.choice([200, 200, 200, 202, 401, 403, 429, 432, 500])
    if status == 429:
        headers["Retry-After"] = rng.choice(
            [
                "9" * 5000,
                "\u00b2",
                "12",
                "Sat, 29 Feb 2023 00:00:00 GMT",
                "Tue, 01 Jan 0000 00:00:00 GMT",
                "Fri, 31 Dec 9999 23:59:59 +2359",
                "\x7f",
                "1" * 10,
            ]
        )
    return httpx.Response(
        status,
        headers=[(k.encode("ascii"), v.encode("latin-1", "replace")) for k, v in headers.items()],
        stream=httpx.ByteStream(raw),
    )


async def test_fuzzed_backend_answers_end_in_hits_or_a_web_error():
    rng = random.Random(6)
    answers: deque[httpx.Response] = deque()
    transport = httpx.MockTransport(lambda request: answers.popleft())
    async with httpx.AsyncClient(transport=transport) as client:
        providers: list[WebSearchProvider] = [
            TavilySearchProvider(KEY, base_url="http://tavily.test", client=client),
            DuckDuckGoSearchProvider(base_url="http://ddg.test/lite/", client=client),
        ]
        outcomes: set[str] = set()
        for round_ in range(400):
            answers.append(random_answer(rng))
            try:
                hits = await providers[round_ % 2].search("q", max_results=5)
            except WebError as error:
                outcomes.add(error.code)
            else:
                assert all(isinstance(hit, SearchHit) for hit in hits)
                outcomes.add("hits")
    assert outcomes == {"hits", "search_auth", "search_failed", "search_rate_limited"}


async def test_results_past_the_first_100_are_not_looked_at(server, tavily):
    junk = [{"url": "javascript:void(0)"}] * MAX_CONSIDERED_RESULTS
    server.script(
        json_reply({"results": [*junk, {"url": "https://late.example/"}]}),
        json_reply({"results": [{"url": "https://a.example/"}, *junk[1:], "not an object"]}),
    )
    assert await tavily.search("q", max_results=5) == []
    assert [hit.url for hit in await tavily.search("q", max_results=5)] == ["https://a.example/"]


def test_filter_hits_looks_at_the_first_100_hits_only():
    hits = hits_for(*["javascript:void(0)"] * MAX_CONSIDERED_RESULTS, "https://late.example/")
    assert filter_hits(hits, DomainPolicy((), ()), 20) == []
    assert [hit.url for hit in filter_hits(hits[1:], DomainPolicy((), ()), 20)] == ["https://late.example/"]


async def test_host_results_past_the_first_100_are_not_looked_at():
    junk = [{"url": "javascript:void(0)"}] * MAX_CONSIDERED_RESULTS
    host = FakeHost({"results": [*junk, {"url": "https://late.example/"}, 7]})
    assert await HostSearchProvider(host).search("q", max_results=5) == []


async def test_ddg_snippets_past_the_100th_link_do_not_join_it(server, ddg):
    rows = "".join(
        f"<tr><td><a href='https://h{i}.example/' class='result-link'>{i}</a></td></tr>"
        f"<tr><td class='result-snippet'>s{i}</td></tr>"
        for i in range(MAX_CONSIDERED_RESULTS + 5)
    )
    server.script(Reply(200, f"<table>{rows}</table>".encode()))
    [hit] = await ddg.search("q", max_results=1, allowed_domains=(f"h{MAX_CONSIDERED_RESULTS - 1}.example",))
    assert hit.snippet == f"s{MAX_CONSIDERED_RESULTS - 1}"


async def test_a_huge_answer_does_not_stall_the_event_loop(server, tavily):
    # 200k results in 4 MiB: before the bound, checking every URL on the loop stalled it ~6 s.
    item = '{"url":"http://a_"},'
    count = (MAX_RESPONSE_BYTES - 64) // len(item)
    server.script(Reply(200, ('{"results":[' + item * count + '{"url":"http://a_"}]}').encode()))
    gaps: list[float] = []

    async def ticker() -> None:
        loop = asyncio.get_running_loop()
        last = loop.time()
        while True:
            await asyncio.sleep(0.01)
            gaps.append(loop.time() - last)
            last = loop.time()

    ticking = asyncio.create_task(ticker())
    hits = await tavily.search("q", max_results=5)
    ticking.cancel()
    assert [hit.url for hit in hits] == ["http://a_"]  # one hit: the rest are its repeats
    # the rest is json.loads holding the GIL, about 70 ms on 2 cores: the check on the loop stalled it ~6 s
    assert max(gaps) < 3.0


async def test_the_key_is_scrubbed_from_every_hit_field_web_5(server, tavily):
    # The documentation promises the key never appears in a result, even when Tavily echoes it.
    server.script(
        json_reply(
            {
                "results": [
                    {
                        "title": f"debug Bearer {KEY}",
                        "url": f"https://a.example/?k={KEY}",
                        "content": f"your key is {KEY}",
                    },
                    {"title": "x" * 290 + KEY, "url": "https://b.example/?k=" + KEY.replace("-", "%2D")},
                ]
            }
        )
    )
    hits = [hit.to_json() for hit in await tavily.search("q", max_results=5)]
    assert hits == [
        {
            "title": "debug Bearer [redacted]",
            "url": "https://a.example/?k=[redacted]",
            "snippet": "your key is [redacted]",
        },
        {"title": "x" * 290 + "[redacted]", "url": "https://b.example/?k=[redacted]", "snippet": ""},
    ]
    assert KEY not in json.dumps(hits)


@pytest.mark.parametrize(
    "headers",
    [
        {"Content-Encoding": KEY},  # echoed into data.contentEncoding
        {"Content-Encoding": quote(KEY, safe="")},  # and percent-encoded
    ],
)
async def test_a_key_echoed_by_the_backend_never_reaches_error_data(headers: dict[str, str]) -> None:
    transport = httpx.MockTransport(lambda request: httpx.Response(200, headers=headers, content=b"{}"))
    async with httpx.AsyncClient(transport=transport) as client:
        provider = TavilySearchProvider(KEY, base_url="http://tavily.test", client=client)
        with pytest.raises(WebError) as caught:
            await provider.search("q", max_results=3)
    wire = json.dumps({"error": str(caught.value), "data": caught.value.data})
    assert KEY not in wire and quote(KEY, safe="") not in wire and "[redacted]" in wire
