"""The ``web_fetch`` engine: DNS, the SSRF check, a pinned connection, redirects, streaming bounds.

Spec: Web tools (sidecar), sections Bounds, SSRF policy and Egress-proxy interaction (requirements
WEB-8, WEB-9, WEB-12, WEB-13, WEB-14). docs/web-tools.md, ``web_fetch {url}``, holds the long form:
the order of the checks, absolute-name DNS, the pinned connection, redirects and the byte bounds.

:meth:`WebFetcher.fetch` runs :func:`validate_url`, the domain policy, the caller's ``admit()``,
then per hop DNS, the SSRF check of every answer and the request. It inflates the body itself
(``_content``), decodes it in a worker thread, converts HTML in a sandboxed child
(``_converter``), and raises nothing but :class:`WebError`, whatever a server sends.
"""

from __future__ import annotations

import asyncio
import http
import ipaddress
import os
import socket
import ssl
import zlib
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from http.cookiejar import Cookie, CookieJar
from typing import Any, Final
from urllib.request import Request as UrllibRequest

import certifi
import httpx

from steerable_agent_runtime import __version__
from steerable_agent_runtime.errors import ConfigError, WebError

from ..shared._decoding import Inflater, content_coding
from ..shared._http import REDIRECT_STATUSES, RedirectRefused, clip, redirect_target, send_unfollowed
from ._codes import WebErrorCode
from ._config import ALLOWED_DOMAINS_ENV, WEB_LIMIT_ENV, WebToolsConfig
from ._content import render_body
from ._converter import HtmlConverter, Rendered
from ._media_types import (
    BINARY_SNIFF_BYTES,
    SNIFF_BYTES,
    ContentKind,
    binary_type,
    parse_content_type,
    refuse_binary,
    require_text,
    sniff,
    text_kind,
)
from ._policy import DomainPolicy, check_addresses, url_host, validate_url

__all__ = ["Resolver", "WebFetcher", "system_resolver"]

Resolver = Callable[[str, int], Awaitable[Sequence[str]]]
"""Resolves ``(host, port)`` to IP address strings, e.g. ``["93.184.216.34", "2606:2800:220:1::"]``."""

USER_AGENT: Final = f"steerable/{__version__} (+web_fetch)"
_ACCEPT: Final = (
    "text/html,application/xhtml+xml,text/markdown;q=0.9,text/plain;q=0.9,application/json;q=0.9,*/*;q=0.5"
)
_DEFAULT_PORTS: Final = {"http": 80, "https": 443}
_TIMEOUT_ENV: Final = WEB_LIMIT_ENV["fetch_timeout_ms"].variable
_REDIRECTS_ENV: Final = WEB_LIMIT_ENV["fetch_max_redirects"].variable
# How much of an error page is read and shown back (data.excerpt of an "http_status" error).
_EXCERPT_BYTES: Final = 8192
_EXCERPT_CHARS: Final = 500
# Real host names with a pooled connection kept (direct mode); idle pools past this are closed.
_MAX_HOST_POOLS: Final = 32
# Raw (still compressed) bytes read per byte of the cap, plus a fixed slack: past this the body
# stops (truncated) even if it inflated to nothing, e.g. endless empty gzip members.
_RAW_PER_BYTE: Final = 10
_RAW_SLACK: Final = 65536
# Characters of rendered content per byte of the cap: Markdown past this is cut (truncated).
_RENDERED_PER_BYTE: Final = 2
# Where system_resolver looks a name up before DNS (the usual nsswitch order: files, then dns).
_HOSTS_FILE = "/etc/hosts"


async def system_resolver(host: str, port: int) -> list[str]:
    """Resolve a host as an absolute name: ``/etc/hosts``, then ``getaddrinfo`` for ``host.``.

    The trailing dot makes the DNS lookup absolute, so the resolver's ``search`` domains are never
    appended: ``wiki`` cannot become ``wiki.corp.example.com``, and what the domain policy checked is
    what is resolved. glibc does not match ``name.`` against ``/etc/hosts``, so that file is read
    first, for the exact name (any case), as the default ``hosts: files dns`` order would. Both run
    off the event loop.

    Args:
        host: The host name (an IP literal resolves to itself).
        port: The port (it can change nothing but the answer order).

    Returns:
        The address strings in the resolver's order, deduplicated; an IPv6 answer with a scope
        carries it as ``%scope``, so the SSRF check refuses it.

    Raises:
        OSError: ``socket.gaierror`` when the name does not resolve.
    """
    loop = asyncio.get_running_loop()
    name = host
    if not _is_ip(host):
        name = host.lower().removesuffix(".")
        listed = await asyncio.to_thread(_hosts_file_answers, name)
        if listed:
            return listed
        name += "."
    infos = await loop.getaddrinfo(name, port, type=socket.SOCK_STREAM)
    answers: dict[str, None] = {}
    for family, _type, _proto, _canonical, sockaddr in infos:
        address = str(sockaddr[0])
        if family == socket.AF_INET6 and len(sockaddr) >= 4 and sockaddr[3]:
            address = f"{address}%{sockaddr[3]}"
        answers[address] = None
    return list(answers)


def _hosts_file_answers(name: str) -> list[str]:
    """The addresses :data:`_HOSTS_FILE` lists for ``name`` (lowercase, no trailing dot), in file order."""
    answers: dict[str, None] = {}
    try:
        with open(_HOSTS_FILE, encoding="utf-8", errors="replace") as lines:
            for line in lines:
                fields = line.partition("#")[0].split()
                if len(fields) >= 2 and any(alias.lower().removesuffix(".") == name for alias in fields[1:]):
                    answers[fields[0]] = None
    except OSError:
        return []
    return list(answers)


class _NoCookies(CookieJar):
    """A cookie jar that keeps nothing: no cookie from one fetch is ever sent back."""

    def set_cookie(self, cookie: Cookie) -> None:
        return None

    def extract_cookies(self, response: Any, request: UrllibRequest) -> None:
        return None


@dataclass
class _HostPool:
    transport: httpx.AsyncHTTPTransport
    active: int = 0


class _CountedStream(httpx.AsyncByteStream):
    """A response stream that releases its pool's in-use count when closed."""

    def __init__(self, inner: httpx.AsyncByteStream, pool: _HostPool) -> None:
        self._inner = inner
        self._pool: _HostPool | None = pool

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            yield chunk

    async def aclose(self) -> None:
        try:
            await self._inner.aclose()
        finally:
            if self._pool is not None:
                self._pool.active -= 1
                self._pool = None


class _PoolPerHost(httpx.AsyncBaseTransport):
    """Direct mode's transport: one connection pool per real host name (the request's SNI name).

    A pinned request's URL holds an IP address, and httpx pools connections by URL origin; with one
    pool for everything, a TLS connection verified for ``a.example`` could carry a request for
    ``b.example`` resolving to the same address, unverified. Pools share one SSL context (building
    one costs about 16 ms); idle pools beyond :data:`_MAX_HOST_POOLS` are closed, least recent first.
    """

    def __init__(self, ssl_context: ssl.SSLContext) -> None:
        self._ssl_context = ssl_context
        self._pools: OrderedDict[str, _HostPool] = OrderedDict()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        name = request.extensions.get("sni_hostname") or request.url.host
        pool = self._pools.get(name)
        if pool is None:
            pool = self._pools[name] = _HostPool(httpx.AsyncHTTPTransport(verify=self._ssl_context))
        self._pools.move_to_end(name)
        pool.active += 1  # before eviction: a pool in use is never closed
        try:
            await self._evict()
            response = await pool.transport.handle_async_request(request)
        except BaseException:
            pool.active -= 1
            raise
        assert isinstance(response.stream, httpx.AsyncByteStream)
        response.stream = _CountedStream(response.stream, pool)
        return response

    async def _evict(self) -> None:
        """Close idle pools, least recently used first, until at most :data:`_MAX_HOST_POOLS` remain."""
        while len(self._pools) > _MAX_HOST_POOLS:
            idle = next((name for name, pool in self._pools.items() if pool.active == 0), None)
            if idle is None:
                return
            await self._pools.pop(idle).transport.aclose()

    async def aclose(self) -> None:
        pools = list(self._pools.values())
        self._pools.clear()
        for pool in pools:
            await pool.transport.aclose()


def _ssl_context(environ: Mapping[str, str]) -> ssl.SSLContext:
    """The CA bundle: ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` from ``environ`` when set, else certifi's."""
    cafile = environ.get("SSL_CERT_FILE") or None
    capath = environ.get("SSL_CERT_DIR") or None
    if cafile or capath:
        return ssl.create_default_context(cafile=cafile, capath=capath)
    return ssl.create_default_context(cafile=certifi.where())


def _proxy_urls(config: WebToolsConfig, environ: Mapping[str, str]) -> dict[str, str]:
    """The proxy per scheme: ``<scheme>_proxy``, then ``all_proxy`` (lowercase first), else the config's."""
    found: dict[str, str] = {}
    for scheme in ("http", "https"):
        names = (f"{scheme}_proxy", f"{scheme.upper()}_PROXY", "all_proxy", "ALL_PROXY")
        value = next((environ[n].strip() for n in names if environ.get(n, "").strip()), config.egress_proxy)
        if value:
            found[scheme] = value if "://" in value else f"http://{value}"
    return found


def _host_header(url: httpx.URL) -> str:
    host = url_host(url)
    if ":" in host:
        host = f"[{host}]"
    return host if url.port is None else f"{host}:{url.port}"


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _same_origin(a: httpx.URL, b: httpx.URL) -> bool:
    """RFC 6454 origin equality: scheme, A-label host and effective port."""
    if a.scheme != b.scheme or b.scheme not in _DEFAULT_PORTS:
        return False
    return url_host(a) == url_host(b) and (a.port or _DEFAULT_PORTS[a.scheme]) == (
        b.port or _DEFAULT_PORTS[b.scheme]
    )


def _unusable_location(url: httpx.URL, status: int, detail: str) -> WebError:
    """``invalid_redirect`` for a redirect (HTTP ``status``) whose ``Location`` cannot be followed."""
    return WebError(
        WebErrorCode.INVALID_REDIRECT,
        f"{url} answered HTTP {status} with an unusable Location header: {detail}",
        data={"status": status},
    )


def _ssl_reason(exc: BaseException) -> str | None:
    """The TLS failure somewhere in an exception's chain, as text, or ``None``."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ssl.SSLCertVerificationError):
            return f"certificate verify failed: {current.verify_message}"
        if isinstance(current, ssl.SSLError):
            return current.reason or str(current)
        current = current.__cause__ or current.__context__
    return None


def _reason(exc: BaseException) -> str:
    """The most specific message in an exception's chain."""
    current: BaseException | None = exc
    text = ""
    while current is not None:
        text = str(current) or text
        if isinstance(current, socket.gaierror) and current.strerror:
            return current.strerror  # "Name or service not known"
        if isinstance(current, OSError) and current.errno and current.errno > 0:
            return os.strerror(current.errno)  # "Connection refused", not the address it was pinned to
        current = current.__cause__ or current.__context__
    return text or type(exc).__name__


@dataclass
class _Page:
    url: httpx.URL
    status: int
    media_type: str
    kind: ContentKind
    charset: str | None
    body: bytearray
    truncated: bool


class WebFetcher:
    """Fetches a URL for ``web_fetch`` under the deployment's bounds and policies.

    One shared ``httpx.AsyncClient`` serves the fetcher's life; call :meth:`aclose` when done. In
    direct mode each hop connects to the address its SSRF check validated (WEB-13); in egress-proxy
    mode (``config.egress_confined``; WEB-14) requests go through the proxy and cannot be pinned.
    docs/web-tools.md, "Pinned connection", "Sent" and "Behind the desktop's egress proxy", has both.

    Args:
        config: The bounds and policies.
        resolver: ``(host, port) -> addresses``; defaults to :func:`system_resolver`.
        transport: The transport for direct mode (tests map pinned addresses to local servers);
            defaults to a pool per real host name. Closed by :meth:`aclose`.
        environ: Where proxy variables and ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` are read
            (defaults to ``os.environ``).

    Raises:
        ConfigError: When the egress proxy is a SOCKS proxy and ``socksio`` is not installed.
    """

    def __init__(
        self,
        config: WebToolsConfig,
        *,
        resolver: Resolver | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        env = os.environ if environ is None else environ
        self._config = config
        self._policy = DomainPolicy.from_config(config)
        self._resolver: Resolver = resolver or system_resolver
        self._proxied = config.egress_confined
        context = _ssl_context(env)
        mounts: dict[str, httpx.AsyncBaseTransport] | None = None
        if self._proxied:
            try:
                mounts = {
                    f"{scheme}://": httpx.AsyncHTTPTransport(verify=context, proxy=httpx.Proxy(url))
                    for scheme, url in _proxy_urls(config, env).items()
                }
            except ImportError as exc:
                raise ConfigError(f"the egress proxy needs an extra package: {exc}") from None
            base = transport or httpx.AsyncHTTPTransport(verify=context)
        else:
            base = transport or _PoolPerHost(context)
        self._converter = HtmlConverter()
        self._client = httpx.AsyncClient(
            transport=base,
            mounts=mounts,
            verify=context,
            trust_env=False,
            follow_redirects=False,
            cookies=_NoCookies(),
            timeout=httpx.Timeout(config.fetch_timeout_ms / 1000),
            headers={"User-Agent": USER_AGENT, "Accept": _ACCEPT, "Accept-Encoding": "gzip, deflate"},
        )

    async def aclose(self) -> None:
        """Close the shared client and its connections, and stop the HTML converter's child."""
        try:
            await self._client.aclose()
        finally:
            await self._converter.aclose()

    async def fetch(self, url: str, *, admit: Callable[[], None] | None = None) -> dict[str, Any]:
        """Fetch a URL and return its text (HTML as Markdown), or report a cross-origin redirect.

        Args:
            url: The model's URL (http or https, at most 2048 characters, no credentials).
            admit: Called once the URL passed its checks and the domain policy, before any network
                work: the tool layer's session-cap counter. Whatever it raises propagates.

        Returns:
            ``{"url", "status", "contentType", "bytes", "truncated", "content"}``: the final URL
            (the real host, never the pinned address), the final status, the media type
            (``"text/html"``; sniffed when the server sent none), the body bytes read after content
            decoding (at most ``fetch_max_bytes``), whether anything was cut (the body went on past
            the cap, broke off, or went on past ten times the cap in raw bytes; or the rendered
            text went past twice the cap in characters, which a last line then says), and the
            text. An HTML page the converter could not finish within its bounds comes back as its
            text with the markup removed, after a line saying why. For a cross-origin redirect:
            ``{"url", "status", "redirect_to", "content"}``, the content telling the model to call
            ``web_fetch`` on ``redirect_to``.

        Raises:
            WebError: With ``code`` one of ``invalid_url``, ``domain_blocked``,
                ``domain_not_allowed`` (checked before ``admit``); ``dns_failed``,
                ``ssrf_blocked``, ``domain_blocked`` (a DNS answer the block-list names; any hop);
                ``too_many_redirects`` (naming ``STEERABLE_WEB_FETCH_MAX_REDIRECTS``),
                ``invalid_redirect`` (a Location that does not parse or fails the URL checks); ``timeout``
                (naming ``STEERABLE_WEB_FETCH_TIMEOUT_MS``); ``http_status`` (4xx/5xx, ``data``
                with ``status`` and a short ``excerpt``); ``unsupported_content_type`` (from the
                headers, before the body is read), ``unsupported_content_encoding``,
                ``decoding_failed`` (a corrupt compressed body, or any failure decoding the text);
                ``connect_failed``, ``tls_failed``, ``network_error``, ``protocol_error``;
                ``proxy_refused`` and ``proxy_unreachable`` (egress-proxy mode). No other exception
                comes out of a server's answer.
        """
        target = validate_url(url)
        self._policy.check(url_host(target))
        if admit is not None:
            admit()
        deadline = asyncio.get_running_loop().time() + self._config.fetch_timeout_ms / 1000
        try:
            async with asyncio.timeout_at(deadline):
                outcome = await self._follow(target, deadline)
        except TimeoutError:
            raise self._timeout(target) from None
        if isinstance(outcome, dict):
            return outcome
        size = len(outcome.body)
        rendered = await self._render(
            outcome.url,
            outcome.body,
            kind=outcome.kind,
            charset=outcome.charset,
            truncated=outcome.truncated,
            base_url=str(outcome.url),
            max_chars=_RENDERED_PER_BYTE * self._config.fetch_max_bytes,
            deadline=deadline,
        )
        return {
            "url": str(outcome.url),
            "status": outcome.status,
            "contentType": outcome.media_type,
            "bytes": size,
            "truncated": outcome.truncated or rendered.cut,
            "content": rendered.content,
        }

    async def _render(
        self,
        url: httpx.URL,
        body: bytearray,
        *,
        kind: ContentKind,
        charset: str | None,
        truncated: bool,
        base_url: str | None,
        max_chars: int,
        deadline: float,
    ) -> Rendered:
        """:func:`render_body`, with any failure to decode turned into ``decoding_failed``."""
        try:
            return await render_body(
                body,
                kind=kind,
                declared_charset=charset,
                truncated=truncated,
                base_url=base_url,
                max_chars=max_chars,
                deadline=deadline,
                converter=self._converter,
            )
        except WebError:
            raise
        except Exception as exc:  # the boundary: a hostile body ends in a WebError, nothing else
            reason = f"{type(exc).__name__}: {exc}"[:200]
            raise WebError(
                WebErrorCode.DECODING_FAILED,
                f"web_fetch could not decode the body of {url} ({reason})",
                data={"reason": reason},
            ) from None

    def _timeout(self, url: httpx.URL) -> WebError:
        ms = self._config.fetch_timeout_ms
        return WebError(
            WebErrorCode.TIMEOUT,
            f"web_fetch gave up on {url} after {ms} ms ({_TIMEOUT_ENV}={ms} bounds DNS, every redirect "
            "and the body together); try again later, or another source",
            data={"timeoutMs": ms},
        )

    async def _follow(self, url: httpx.URL, deadline: float) -> _Page | dict[str, Any]:
        """Request ``url`` and follow same-origin redirects (WEB-8); ``deadline`` bounds error excerpts."""
        redirects = 0
        while True:
            response = await self._send(url)
            try:
                location = response.headers.get("location", "").strip()
                if response.status_code in REDIRECT_STATUSES and location:
                    try:
                        target = redirect_target(url, location).copy_with(fragment=None)
                    except RedirectRefused as exc:
                        raise _unusable_location(
                            url, response.status_code, f"{exc}; web_fetch follows http(s) redirects only"
                        ) from None
                    if not _same_origin(url, target):
                        return {
                            "url": str(url),
                            "status": response.status_code,
                            "redirect_to": str(target),
                            "content": f"{url} redirects to another origin: {target}. It was not followed; "
                            "call web_fetch on that URL if you want its content.",
                        }
                    redirects += 1
                    if redirects > self._config.fetch_max_redirects:
                        limit = self._config.fetch_max_redirects
                        raise WebError(
                            WebErrorCode.TOO_MANY_REDIRECTS,
                            f"{url} redirected more than {limit} times within its origin "
                            f"({_REDIRECTS_ENV}={limit}); the page may redirect in a loop",
                            data={"maxRedirects": limit},
                        )
                    try:
                        url = validate_url(str(target))
                    except WebError as exc:
                        raise _unusable_location(url, response.status_code, exc.error) from None
                    self._policy.check(url_host(url))
                    continue
                if response.status_code >= 300:
                    raise await self._status_error(url, response, deadline)
                return await self._page(url, response)
            finally:
                await response.aclose()

    async def _send(self, url: httpx.URL) -> httpx.Response:
        """One hop: DNS, the SSRF check of every answer, the (pinned) request; headers only."""
        host = url_host(url)
        addresses = await self._addresses(url, host)
        check_addresses(host, addresses, url=str(url))
        self._policy.check_answers(host, addresses, url=str(url))
        if self._proxied:
            try:
                return await send_unfollowed(self._client, self._client.build_request("GET", url))
            except RedirectRefused as exc:
                raise self._refused_redirect(url, exc) from None
            except httpx.HTTPError as exc:
                raise self._network_error(exc, url) from None
        failure: httpx.HTTPError | None = None
        for address in addresses:
            request = self._client.build_request(
                "GET",
                url.copy_with(host=address),
                headers={"Host": _host_header(url)},
                extensions={} if _is_ip(host) else {"sni_hostname": host},
            )
            try:
                return await send_unfollowed(self._client, request)
            except RedirectRefused as exc:
                raise self._refused_redirect(url, exc) from None
            except httpx.ConnectError as exc:
                if _ssl_reason(exc) is not None:
                    raise self._network_error(exc, url) from None
                failure = exc  # this address is unreachable: try the next validated one
            except httpx.HTTPError as exc:
                raise self._network_error(exc, url) from None
        assert failure is not None
        raise self._network_error(failure, url) from None

    async def _addresses(self, url: httpx.URL, host: str) -> Sequence[str]:
        """The addresses ``host`` resolves to (an IP literal is its own), for the SSRF check.

        Raises:
            WebError: ``dns_failed`` when the lookup fails.
        """
        if _is_ip(host):
            return [host]
        try:
            return await self._resolver(host, url.port or _DEFAULT_PORTS[url.scheme])
        except OSError as exc:
            raise WebError(
                WebErrorCode.DNS_FAILED,
                f"web_fetch could not reach {url}: the DNS lookup of {host} failed ({_reason(exc)}); "
                "check the host name (or whether this machine can resolve names at all)",
                data={"host": host},
            ) from None

    def _refused_redirect(self, url: httpx.URL, exc: RedirectRefused) -> WebError:
        """``invalid_redirect`` for a ``Location`` httpx refused while reading the answer (``mailto:``...)."""
        return WebError(
            WebErrorCode.INVALID_REDIRECT,
            f"{url} answered with an unusable Location header: {exc}; "
            "web_fetch follows http(s) redirects only",
        )

    def _network_error(self, exc: httpx.HTTPError, url: httpx.URL) -> WebError:
        host = url_host(url)
        if isinstance(exc, httpx.TimeoutException):
            return self._timeout(url)
        if isinstance(exc, httpx.ProxyError):
            return self._proxy_refused(host, str(exc))
        tls = _ssl_reason(exc)
        if tls is not None:
            return WebError(
                WebErrorCode.TLS_FAILED,
                f"web_fetch could not set up TLS with {host}: {tls}",
                data={"host": host, "reason": tls},
            )
        reason = _reason(exc)
        if isinstance(exc, httpx.ConnectError):
            if self._proxied:
                return WebError(
                    WebErrorCode.PROXY_UNREACHABLE,
                    f"web_fetch could not connect to the egress proxy for {host} ({reason}); "
                    "the proxy may have stopped",
                    data={"host": host, "reason": reason},
                )
            return WebError(
                WebErrorCode.CONNECT_FAILED,
                f"web_fetch could not connect to {host} ({reason})",
                data={"host": host, "reason": reason},
            )
        if isinstance(exc, httpx.ProtocolError):
            return WebError(
                WebErrorCode.PROTOCOL_ERROR,
                f"{host} broke the HTTP protocol ({reason})",
                data={"host": host, "reason": reason},
            )
        return WebError(
            WebErrorCode.NETWORK_ERROR,
            f"the connection to {host} failed ({reason})",
            data={"host": host, "reason": reason},
        )

    def _proxy_refused(self, host: str, answer: str) -> WebError:
        allowed = self._config.allowed_domains
        listed = ", ".join(allowed) if allowed else "empty, so the proxy admits no web host"
        return WebError(
            WebErrorCode.PROXY_REFUSED,
            f"the egress proxy refused {host} ({answer}); the proxy admits only the hosts listed exactly "
            f"in {ALLOWED_DOMAINS_ENV} ({listed}), and a subdomain must be listed itself",
            data={"host": host, "answer": answer, "allowedDomains": list(allowed)},
        )

    async def _status_error(self, url: httpx.URL, response: httpx.Response, deadline: float) -> WebError:
        """The ``http_status`` error for a 4xx/5xx (or an unfollowable 3xx), with a short excerpt."""
        status = response.status_code
        try:
            reason = response.reason_phrase or http.HTTPStatus(status).phrase
        except ValueError:
            reason = ""
        if self._proxied and status == 407:
            return self._proxy_refused(url_host(url), f"{status} {reason}".strip())
        media_type, params = parse_content_type(response.headers.get("content-type"))
        kind = text_kind(media_type) if media_type else "text"
        excerpt = ""
        if kind is not None:
            try:
                body, cut = await self._read(url, response, _EXCERPT_BYTES)
                rendered = await self._render(
                    url,
                    body,
                    kind=kind,
                    charset=params.get("charset"),
                    truncated=cut,
                    base_url=None,
                    max_chars=_EXCERPT_BYTES,
                    deadline=deadline,
                )
                binary = binary_type(body, declared_charset=params.get("charset"), kind=kind)
                excerpt = "" if binary else clip(rendered.text, _EXCERPT_CHARS, marker="")
            except (WebError, httpx.HTTPError):
                excerpt = ""
        message = f"HTTP {status} {reason} from {url}".replace("  ", " ")
        if self._proxied and status == 403:
            message += (
                f" (through the egress proxy: if the proxy refused it, {url_host(url)} must be listed "
                f"exactly in {ALLOWED_DOMAINS_ENV})"
            )
        data: dict[str, Any] = {"status": status}
        if excerpt:
            data["excerpt"] = excerpt
        return WebError(WebErrorCode.HTTP_STATUS, message, data=data)

    async def _page(self, url: httpx.URL, response: httpx.Response) -> _Page:
        """Check the type from the headers, then read the body within the cap."""
        media_type, params = parse_content_type(response.headers.get("content-type"))
        kind = require_text(media_type, str(url)) if media_type else None
        charset = params.get("charset")
        check_bytes = SNIFF_BYTES if kind is None else BINARY_SNIFF_BYTES

        def check(head: bytes) -> None:
            if media_type is None or kind is None:  # untyped: refused when the sniffer says binary
                require_text(sniff(head), str(url))
            else:  # WEB-17: a binary body under a text type
                refuse_binary(head, declared=media_type, declared_charset=charset, kind=kind, url=str(url))

        body, truncated = await self._read(
            url, response, self._config.fetch_max_bytes, check=check, check_bytes=check_bytes
        )
        check(bytes(body[:check_bytes]))  # a body shorter than check_bytes is checked whole here
        if media_type is None or kind is None:
            media_type = sniff(body)
            kind = require_text(media_type, str(url))
        return _Page(url, response.status_code, media_type, kind, charset, body, truncated)

    async def _read(
        self,
        url: httpx.URL,
        response: httpx.Response,
        cap: int,
        *,
        check: Callable[[bytes], None] | None = None,
        check_bytes: int = SNIFF_BYTES,
    ) -> tuple[bytearray, bool]:
        """Read at most ``cap`` content-decoded bytes; ``(body, truncated)``.

        ``truncated`` is true when the body went on past the cap, broke off (the connection
        closed or reset before the declared end), or went on past ``10 * cap + 64 KB`` raw
        (still compressed) bytes. ``check`` is called once on the first ``check_bytes`` as soon
        as they arrived (whatever it raises propagates), so a binary body is refused without
        reading the rest; a shorter body is not checked here.
        """
        sent = response.headers.get("content-encoding", "")
        coding = content_coding(sent)
        if coding is None:
            shown = sent.strip().lower()
            raise WebError(
                WebErrorCode.UNSUPPORTED_CONTENT_ENCODING,
                f"{url} sent its body with Content-Encoding {shown!r}, which web_fetch cannot decode "
                "(it asks for gzip or deflate only)",
                data={"contentEncoding": shown},
            )
        inflater = Inflater(coding)
        body = bytearray()
        limit = cap + 1  # one byte past the cap tells "more" from "exactly the cap"
        raw_left = _RAW_PER_BYTE * cap + _RAW_SLACK
        try:
            async for raw in response.aiter_raw():
                raw_left -= len(raw)
                body += inflater.decode(raw, limit - len(body))
                if check is not None and len(body) >= check_bytes:
                    check(bytes(body[:check_bytes]))
                    check = None
                if len(body) >= limit:
                    break
                if raw_left < 0:
                    return body, True
        except zlib.error:
            raise WebError(
                WebErrorCode.DECODING_FAILED,
                f"{url} sent a body that is not valid {coding} (its Content-Encoding)",
                data={"contentEncoding": coding},
            ) from None
        except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
            if not body:
                raise self._network_error(exc, url) from None
            return body, True
        except httpx.HTTPError as exc:
            raise self._network_error(exc, url) from None
        truncated = len(body) > cap
        del body[cap:]
        return body, truncated
