"""The web's odd answers (issue 13): redirects to non-http URLs (WEB-16), binary bodies under text
types (WEB-17), and the shared HTTP-answer readers in ``steerable_sidecar.shared._http``.

Every server here is a real loopback HTTP/1.1 server (``web_servers.ScriptedServer``).
"""

from __future__ import annotations

import gzip
import time
from collections.abc import AsyncIterator
from email.utils import formatdate
from typing import Any

import httpx
import pytest

from steerable_agent_runtime import ToolRouter
from steerable_agent_runtime.errors import WebError
from steerable_sidecar.shared._http import (
    RedirectRefused,
    error_message,
    redirect_target,
    refused_redirect,
    retry_after_s,
    send_unfollowed,
)
from steerable_sidecar.web_tools import (
    DuckDuckGoSearchProvider,
    TavilySearchProvider,
    WebToolsConfig,
    install_web_tools,
)
from steerable_sidecar.web_tools._media_types import binary_type

from .web_servers import PUBLIC_IP, PinRecorder, Reply, ScriptedResolver, ScriptedServer

HOST = "docs.example.com"
KEY = "tvly-dev-SECRET-0a1b2c3d4e5f"

# Locations httpx itself cannot turn into a request (it raises InvalidURL while reading the answer).
HOSTLESS = ["mailto:x@y", "javascript:alert(1)", "data:text/html,hi"]
# Locations httpx accepts but that are no http(s) URL one may request.
UNUSABLE = {
    "ftp://h/x": "'ftp://h/x' is not an http(s) URL (its scheme is ftp:)",
    "http://[bad": "'http://[bad' is not a valid URL (Invalid IPv6 URL)",
}
HOSTLESS_REASON = (
    "the server redirected to a Location that is not an http(s) URL "
    "(a mailto:, javascript:, data: or other URL without a host)"
)


@pytest.fixture
async def site() -> AsyncIterator[ScriptedServer]:
    async with ScriptedServer() as server:
        yield server


def web_router(site: ScriptedServer, **config: Any) -> tuple[ToolRouter, Any]:
    router = ToolRouter()
    tools = install_web_tools(
        router,
        WebToolsConfig(**config),
        provider=None,
        resolver=ScriptedResolver({HOST: [PUBLIC_IP]}),
        transport=PinRecorder({f"{PUBLIC_IP}:80": site.port}),
    )
    return router, tools


async def fetch(site: ScriptedServer, path: str = "/a") -> Any:
    router, tools = web_router(site)
    try:
        return await router.dispatch(
            {"id": "1", "name": "web_fetch", "arguments": {"url": f"http://{HOST}{path}"}}
        )
    finally:
        await tools.aclose()


# -- WEB-16: web_fetch ------------------------------------------------------------------------------


@pytest.mark.parametrize("location", HOSTLESS)
async def test_web_fetch_refuses_a_hostless_redirect_as_invalid_redirect_WEB_16(
    site: ScriptedServer, location: str
) -> None:
    site.routes["/a"] = Reply.redirect(location)
    result = await fetch(site)
    assert (result.success, result.needs_followup) == (False, True)
    assert result.data == {"code": "invalid_redirect"}
    assert result.error == (
        f"http://{HOST}/a answered with an unusable Location header: {HOSTLESS_REASON}; "
        "web_fetch follows http(s) redirects only"
    )
    assert site.paths() == ["/a"]


@pytest.mark.parametrize(("location", "reason"), UNUSABLE.items())
@pytest.mark.parametrize("status", [301, 302, 307])
async def test_web_fetch_refuses_a_non_http_or_broken_redirect_as_invalid_redirect_WEB_16(
    site: ScriptedServer, location: str, reason: str, status: int
) -> None:
    site.routes["/a"] = Reply.redirect(location, status)
    result = await fetch(site)
    assert (result.success, result.needs_followup) == (False, True)
    assert result.data == {"code": "invalid_redirect", "status": status}
    assert result.error == (
        f"http://{HOST}/a answered HTTP {status} with an unusable Location header: {reason}; "
        "web_fetch follows http(s) redirects only"
    )
    assert site.paths() == ["/a"]


async def test_a_second_hop_to_mailto_is_refused_too_WEB_16(site: ScriptedServer) -> None:
    site.routes["/a"] = Reply.redirect("/b")
    site.routes["/b"] = Reply.redirect("mailto:x@y", 308)
    result = await fetch(site)
    assert (result.success, result.needs_followup, result.data["code"]) == (False, True, "invalid_redirect")
    assert result.error.startswith(f"http://{HOST}/b answered with an unusable Location header")
    assert site.paths() == ["/a", "/b"]


# -- WEB-16: web_search -----------------------------------------------------------------------------


def backend(name: str, site: ScriptedServer, client: httpx.AsyncClient) -> Any:
    origin = f"http://127.0.0.1:{site.port}"
    if name == "tavily":
        return TavilySearchProvider(KEY, base_url=origin, client=client, timeout_ms=5_000)
    return DuckDuckGoSearchProvider(base_url=f"{origin}/search", client=client, timeout_ms=5_000)


LABELS = {"tavily": "Tavily", "ddg": "DuckDuckGo"}


@pytest.mark.parametrize("location", [*HOSTLESS, *UNUSABLE])
@pytest.mark.parametrize("name", ["tavily", "ddg"])
async def test_web_search_ends_a_non_http_redirect_as_search_failed_WEB_16(
    site: ScriptedServer, name: str, location: str
) -> None:
    site.routes["/search"] = Reply.redirect(location)
    async with httpx.AsyncClient() as client:
        provider = backend(name, site, client)
        with pytest.raises(WebError) as caught:
            await provider.search("q", max_results=3)
        router = ToolRouter()
        tools = install_web_tools(router, WebToolsConfig(), provider=provider)
        try:
            result = await router.dispatch({"id": "1", "name": "web_search", "arguments": {"query": "q"}})
        finally:
            await tools.aclose()
    error = caught.value
    label = LABELS[name]
    assert error.data is not None
    assert error.code == "search_failed" and error.data["provider"] == name
    if location in HOSTLESS:
        assert error.error == (
            f"{label} at http://127.0.0.1:{site.port} answered with a redirect: {HOSTLESS_REASON}"
        )
    else:  # a redirect is never followed: its status is the failure
        assert error.error.startswith(f"{label} answered HTTP 302")
    assert result.data is not None
    assert (result.success, result.needs_followup, result.data["code"]) == (False, True, "search_failed")


# -- WEB-17: binary bodies under text types ----------------------------------------------------------

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 20
PDF = b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Type /Catalog >>\nendobj\n" + bytes(range(256)) * 20
BINARY_BODIES = {
    "pdf-as-html": (PDF, "text/html; charset=utf-8", "application/pdf"),
    "png-as-json": (PNG, "application/json", "image/png"),
    "gif-as-text": (b"GIF89a" + bytes(200), "text/plain", "image/gif"),
    "jpeg-as-html": (b"\xff\xd8\xff\xe0\x00\x10JFIF" + bytes(100), "text/html", "image/jpeg"),
    "docx-as-xml": (b"PK\x03\x04\x14\x00\x06\x00" + bytes(300), "application/xml", "application/zip"),
    "gzip-undeclared": (gzip.compress(b"hello " * 1000), "text/plain", "application/gzip"),
    "elf-as-text": (b"\x7fELF\x02\x01\x01" + bytes(500), "text/plain", "application/x-elf"),
    "nuls-as-html": (b"<html>" + b"\x00ab" * 3000, "text/html", "application/octet-stream"),
    "random-as-text": (
        bytes((i * 7919 + 13) % 256 for i in range(10_000)),
        "text/plain",
        "application/octet-stream",
    ),
}


@pytest.mark.parametrize(("body", "served_as", "found"), BINARY_BODIES.values(), ids=BINARY_BODIES.keys())
async def test_web_fetch_refuses_a_binary_body_under_a_text_type_WEB_17_WEB_9(
    site: ScriptedServer, body: bytes, served_as: str, found: str
) -> None:
    site.routes["/a"] = Reply(headers=[("Content-Type", served_as)], body=body)
    result = await fetch(site)
    declared = served_as.split(";")[0]
    assert (result.success, result.needs_followup) == (False, True)
    assert result.data == {"code": "unsupported_content_type", "contentType": found, "declaredType": declared}
    url = f"http://{HOST}/a"
    assert result.error == (
        f"{url} is {found} (served as {declared}), not text; web_fetch reads text only. To download "
        f"binary content use the bash tool with curl (curl -L -o FILE '{url}')."
    )


async def test_a_large_binary_body_is_refused_from_its_first_bytes_WEB_17(site: ScriptedServer) -> None:
    async def endless() -> AsyncIterator[bytes]:
        yield PDF
        while True:  # never ends: the cap or the refusal from the first 4 KB stops the read
            yield bytes(65536)

    site.routes["/a"] = Reply(headers=[("Content-Type", "text/html")], stream=endless, chunked=True)
    result = await fetch(site)
    assert (
        result.data["code"] == "unsupported_content_type" and result.data["contentType"] == "application/pdf"
    )


TEXT_BODIES = {
    "utf-8": ("Grüße, 世界 — naïve café\n".encode() * 200, "text/plain; charset=utf-8"),
    "utf-16 with bom": ("\ufeffhello world\n".encode("utf-16-le") * 50, "text/plain"),
    "utf-16 declared": ("hello world\n".encode("utf-16-le") * 50, "text/plain; charset=utf-16le"),
    "ansi log": (b"\x1b[31merror\x1b[0m: \tdone\r\n\x0c" * 200, "text/plain"),
    "BMW": (b"BMW and ID3 are words here.\n" * 10, "text/plain"),
    "one stray nul": (b"a" * 4000 + b"\x00" + b"b" * 4000, "text/plain"),
    "cp1252": ("caf\u00e9 \u20ac".encode("cp1252") * 100, "text/plain; charset=windows-1252"),
}


@pytest.mark.parametrize(("body", "served_as"), TEXT_BODIES.values(), ids=TEXT_BODIES.keys())
async def test_text_that_only_looks_odd_is_still_read_WEB_17(
    site: ScriptedServer, body: bytes, served_as: str
) -> None:
    site.routes["/a"] = Reply(headers=[("Content-Type", served_as)], body=body)
    result = await fetch(site)
    assert result.success, result.error
    assert "\ufffd" not in result.data["content"]


def test_binary_type_reads_only_the_first_4_kb_WEB_17() -> None:
    late = b"plain text " * 400 + bytes(5000)  # NULs only after 4 KB
    assert binary_type(late, declared_charset=None, kind="text") is None
    assert binary_type(b"", declared_charset=None, kind="text") is None


async def test_a_binary_error_page_gives_no_excerpt(site: ScriptedServer) -> None:
    site.routes["/a"] = Reply(status=404, headers=[("Content-Type", "text/html")], body=PNG)
    result = await fetch(site)
    assert result.data == {"code": "http_status", "status": 404}


# -- the shared readers (steerable_sidecar.shared._http) ------------------------------------------------------


DEEP = b"[" * 100_000 + b"]" * 100_000


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b'{"error": {"message": "bad key", "type": "x"}}', "bad key"),
        (
            b'{"detail": {"error": "Unauthorized: missing or invalid API key."}}',
            "Unauthorized: missing or invalid API key.",
        ),
        (b'{"error": "quota"}', "quota"),
        (b'{"message": "  spaced\\n out  "}', "spaced out"),
        (b'{"detail": "Not Found"}', "Not Found"),
        (b'{"detail": [{"msg": "field required"}]}', '{"detail": [{"msg": "field required"}]}'),
        (b"<html>Bad gateway</html>", "<html>Bad gateway</html>"),
        (b"", "(empty body)"),
        (b"  \n ", "(empty body)"),
        (b'{"error": {"message": ""}, "message": "fallback"}', "fallback"),
        (b"\xff\xfe oops", "\ufffd\ufffd oops"),
    ],
)
def test_error_message_takes_the_servers_own_text(body: bytes, message: str) -> None:
    assert error_message(body) == message


def test_error_message_of_a_body_nested_100000_deep_is_its_text_not_recursion_error() -> None:
    assert error_message(DEEP) == "[" * 197 + "..."
    assert error_message(b'{"error": ' + DEEP + b"}").startswith('{"error": [[[')
    assert len(error_message(b"x" * 10_000)) == 200


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"retry-after": "30"}, 30.0),
        ({"retry-after": " 7 "}, 7.0),
        ({"retry-after": "0.05"}, 0.05),
        ({"retry-after-ms": "20"}, 0.02),
        ({"retry-after-ms": "20", "retry-after": "9"}, 0.02),
        ({"retry-after-ms": "soon", "retry-after": "9"}, 9.0),
        ({"retry-after": "999999999"}, 999_999_999.0),
        ({"retry-after": "1000000000"}, None),
        ({"retry-after": "9" * 5000}, None),
        ({"retry-after": "\u00b2"}, None),
        ({"retry-after": "-5"}, None),
        ({"retry-after": "inf"}, None),
        ({"retry-after": "nan"}, None),
        ({"retry-after": "Thu, 01 Jan 1970 00:00:00 GMT"}, 0.0),
        ({"retry-after": "Thu, 01 Jan 2015 00:00:00 -0000"}, None),
        ({"retry-after": "Mon, 99 Foo 2024 25:61:61 GMT"}, None),
        ({}, None),
    ],
)
def test_retry_after_s(headers: dict[str, str], seconds: float | None) -> None:
    assert retry_after_s(headers) == seconds  # any mapping with lowercase keys
    if all(value.isascii() for value in headers.values()):
        assert retry_after_s(httpx.Headers(headers)) == seconds


def test_retry_after_s_counts_an_http_date_from_now_and_caps() -> None:
    now = time.time()
    headers = httpx.Headers({"retry-after": formatdate(now + 120, usegmt=True)})
    delay = retry_after_s(headers, now=now)
    assert delay is not None and 119 <= delay <= 120
    assert retry_after_s(headers, now=now, cap_s=5) == 5
    assert retry_after_s(httpx.Headers({"retry-after": "3600"}), cap_s=2.5) == 2.5


@pytest.mark.parametrize(
    ("location", "target"),
    [
        ("/b", "http://h.example/b"),
        ("c?x=1#f", "http://h.example/a/c?x=1#f"),
        ("//other.example/x", "http://other.example/x"),
        ("HTTPS://Other.Example/", "https://other.example/"),
        (" https://o.example/ ", "https://o.example/"),
    ],
)
def test_redirect_target_resolves_http_locations(location: str, target: str) -> None:
    assert str(redirect_target(httpx.URL("http://h.example/a/b"), location)) == target


@pytest.mark.parametrize(
    ("location", "reason"),
    [
        ("mailto:x@y", "'mailto:x@y' is not an http(s) URL (its scheme is mailto:)"),
        ("javascript:alert(1)", "'javascript:alert(1)' is not an http(s) URL (its scheme is javascript:)"),
        ("data:text/html,hi", "'data:text/html,hi' is not an http(s) URL (its scheme is data:)"),
        ("ftp://h/x", "'ftp://h/x' is not an http(s) URL (its scheme is ftp:)"),
        ("http://[bad", "'http://[bad' is not a valid URL (Invalid IPv6 URL)"),
        ("http://", "'http://' is not a valid URL (it has no host)"),
        ("https:///x", "'https:///x' is not a valid URL (it has no host)"),
        ("http://h:99999/", "'http://h:99999/' is not a valid URL (Port out of range 0-65535)"),
        ("/a\x01b", "'/a\\x01b' is not a valid URL (it has control characters)"),
        ("   ", "the Location header is empty"),
    ],
)
def test_redirect_target_refuses_what_is_not_an_http_url(location: str, reason: str) -> None:
    with pytest.raises(RedirectRefused) as caught:
        redirect_target(httpx.URL("http://h.example/a"), location)
    assert str(caught.value) == reason and caught.value.location == location


@pytest.mark.parametrize("location", HOSTLESS)
async def test_send_unfollowed_turns_httpx_invalid_url_into_redirect_refused(
    site: ScriptedServer, location: str
) -> None:
    site.routes["/a"] = Reply.redirect(location)
    async with httpx.AsyncClient() as client:
        url = f"http://127.0.0.1:{site.port}/a"
        with pytest.raises(httpx.InvalidURL):  # what httpx does on its own
            await client.send(client.build_request("GET", url), follow_redirects=False)
        with pytest.raises(RedirectRefused) as caught:
            await send_unfollowed(client, client.build_request("GET", url))
        site.routes["/b"] = Reply.redirect("/c")
        response = await send_unfollowed(client, client.build_request("GET", url.replace("/a", "/b")))
        await response.aclose()
    assert str(caught.value) == HOSTLESS_REASON
    assert response.status_code == 302 and response.headers["location"] == "/c"
    assert refused_redirect(ValueError("x")) is None
