"""Local test servers for the web tools: a scripted HTTP/1.1 server, proxies, a pinning transport.

Everything listens on 127.0.0.1 and runs on the test's own event loop; nothing reaches the
internet. The pieces:

* :class:`LocalListener`: a TCP server on 127.0.0.1 whose connection handlers are cancelled when
  it closes; the servers and the proxy here are built on it, and :func:`read_request` reads the
  request they get.
* :class:`ScriptedServer`: an HTTP/1.1 server (plain or TLS) whose routes are :class:`Reply`
  scripts (status, headers, a body written whole, in chunks, chunked-encoded, dripped, with a lying
  ``Content-Length``...); it records every request it got (:attr:`ScriptedServer.seen`), with the
  TLS SNI name the client sent.
* :func:`make_tls`: a throwaway CA and a leaf certificate for some host names (``cryptography``).
* :class:`PinRecorder`: an ``httpx`` transport that plays the network: a request the fetcher
  pinned to ``93.184.216.34:80`` goes to the local server mapped to that address, and the transport
  records the address, ``Host`` header and ``sni_hostname`` it was asked for.
* :class:`ScriptedResolver`: a resolver (``(host, port) -> addresses``) answering from a table, in
  turn when a host has several answer lists (DNS rebinding).
* :class:`ScriptedProxy`: an HTTP proxy that refuses (403/407 to CONNECT and to forwarded requests)
  or forwards (CONNECT tunnels and absolute-form requests) to mapped local servers.
* :func:`closed_port`: a local port nothing listens on.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import gzip
import ipaddress
import json
import socket
import ssl
import tempfile
import zlib
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import httpx
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

__all__ = [
    "PUBLIC_IP",
    "LocalListener",
    "Pinned",
    "PinRecorder",
    "Reply",
    "ScriptedProxy",
    "ScriptedResolver",
    "ScriptedServer",
    "Seen",
    "TlsMaterial",
    "closed_port",
    "deflate_body",
    "gzip_body",
    "gzip_bomb",
    "make_tls",
    "read_request",
]

PUBLIC_IP = "93.184.216.34"
"""A globally reachable address the tests map to a local server (it is never contacted)."""

_REASONS = {
    200: "OK",
    204: "No Content",
    301: "Moved Permanently",
    302: "Found",
    303: "See Other",
    307: "Temporary Redirect",
    308: "Permanent Redirect",
    400: "Bad Request",
    403: "Forbidden",
    404: "Not Found",
    407: "Proxy Authentication Required",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
}


@dataclass
class Reply:
    """One scripted response.

    Attributes:
        status: The status code.
        headers: Extra header lines, written as given (``Content-Type``, ``Location``...).
        body: The body, written whole (or split by ``chunks``).
        chunks: The body as separate writes instead of ``body`` (each one ``drip`` seconds apart).
        stream: A factory of an async iterator of body pieces, for large bodies made on the fly.
        chunked: Send ``Transfer-Encoding: chunked`` (one HTTP chunk per piece).
        content_length: ``"auto"`` (the real length, when not chunked), an integer to lie with,
            or ``None`` to send none and close the connection after the body.
        drip: Seconds to wait before each piece.
        reason: The reason phrase (default: the standard one).
        delay: Seconds to wait before the status line.
        hang_up: Close the connection without answering.
    """

    status: int = 200
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""
    chunks: list[bytes] | None = None
    stream: Callable[[], AsyncIterator[bytes]] | None = None
    chunked: bool = False
    content_length: int | str | None = "auto"
    drip: float = 0.0
    reason: str | None = None
    delay: float = 0.0
    hang_up: bool = False

    @classmethod
    def text(
        cls,
        body: str,
        content_type: str = "text/plain; charset=utf-8",
        *,
        status: int = 200,
        headers: Sequence[tuple[str, str]] = (),
    ) -> Reply:
        """A text reply with its Content-Type (UTF-8 encoded)."""
        return cls(status=status, headers=[("Content-Type", content_type), *headers], body=body.encode())

    @classmethod
    def redirect(cls, location: str, status: int = 302) -> Reply:
        """A redirect to ``location``."""
        return cls(status=status, headers=[("Location", location)])


@dataclass
class Seen:
    """A request the server (or proxy) received."""

    method: str
    target: str
    headers: dict[str, str]
    sni: str | None
    body: bytes = b""

    def json(self) -> Any:
        """The body, parsed as JSON."""
        return json.loads(self.body)


Route = Reply | Callable[[Seen], Reply]


class LocalListener:
    """A TCP server whose connection handlers are tracked: leaving it cancels those still running.

    Subclasses answer one connection in :meth:`_serve`; a connection that breaks, or that is still
    being served when the listener closes, just ends. :attr:`port` is the bound port once entered.
    """

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self.host = host
        self.port = port
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    def _ssl_context(self) -> ssl.SSLContext | None:
        return None

    async def __aenter__(self) -> Self:
        self._server = await asyncio.start_server(self._accept, self.host, self.port, ssl=self._ssl_context())
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(BaseException):
                await task
        await self._server.wait_closed()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            await self._serve(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, ssl.SSLError):
            return
        except asyncio.CancelledError:
            return  # the listener is shutting down; asyncio would log a cancelled handler as an error
        finally:
            self._tasks.discard(task)
            writer.close()
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await writer.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        raise NotImplementedError


class ScriptedServer(LocalListener):
    """An HTTP/1.1 server on 127.0.0.1 answering from scripted routes (keep-alive supported).

    Use as ``async with ScriptedServer({"/": Reply.text("hi")}) as server:``; an unknown path gets
    a 404. With ``tls`` the server speaks HTTPS and records each connection's SNI name.
    """

    def __init__(
        self,
        routes: Mapping[str, Route] | None = None,
        *,
        tls: TlsMaterial | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        super().__init__(host=host, port=port)
        self.routes: dict[str, Route] = dict(routes or {})
        self.seen: list[Seen] = []
        self.connections = 0
        self._tls = tls
        self._sni: dict[int, str | None] = {}

    @property
    def scheme(self) -> str:
        """``https`` with TLS, else ``http``."""
        return "https" if self._tls else "http"

    def paths(self) -> list[str]:
        """The request targets received, in order."""
        return [s.target for s in self.seen]

    def _ssl_context(self) -> ssl.SSLContext | None:
        return self._tls.server_context(self._sni) if self._tls else None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        ssl_object = writer.get_extra_info("ssl_object")
        sni = self._sni.get(id(ssl_object)) if ssl_object is not None else None
        while True:
            seen = await read_request(reader, sni)
            if seen is None:
                return
            self.seen.append(seen)
            route = self.routes.get(seen.target) or self.routes.get(seen.target.split("?")[0])
            if route is None:
                reply = Reply.text("not found", status=404)
            else:
                reply = route(seen) if callable(route) else route
            keep_open = await _write_reply(writer, reply)
            if not keep_open or seen.headers.get("connection", "").lower() == "close":
                return


async def read_request(reader: asyncio.StreamReader, sni: str | None = None) -> Seen | None:
    """Read one request (head and ``Content-Length`` body); ``None`` when the connection ends first."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError):
        return None
    lines = head.decode("latin-1").split("\r\n")
    method, target, _version = lines[0].split(" ", 2)
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if ":" in line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0") or 0)
    body = await reader.readexactly(length) if length else b""
    return Seen(method=method, target=target, headers=headers, sni=sni, body=body)


async def _pieces(reply: Reply) -> AsyncIterator[bytes]:
    if reply.stream is not None:
        async for piece in reply.stream():
            yield piece
    elif reply.chunks is not None:
        for piece in reply.chunks:
            yield piece
    elif reply.body:
        yield reply.body


async def _write_reply(writer: asyncio.StreamWriter, reply: Reply) -> bool:
    """Write a reply; return whether the connection may serve another request."""
    if reply.delay:
        await asyncio.sleep(reply.delay)
    if reply.hang_up:
        return False
    reason = reply.reason or _REASONS.get(reply.status, "Status")
    lines = [f"HTTP/1.1 {reply.status} {reason}"]
    lines += [f"{name}: {value}" for name, value in reply.headers]
    keep_open = True
    if reply.chunked:
        lines.append("Transfer-Encoding: chunked")
    elif reply.content_length == "auto" and reply.stream is None:
        size = len(b"".join(reply.chunks)) if reply.chunks is not None else len(reply.body)
        lines.append(f"Content-Length: {size}")
    elif reply.content_length in (None, "auto"):
        lines.append("Connection: close")
        keep_open = False
    else:
        lines.append(f"Content-Length: {reply.content_length}")
        keep_open = False  # a lying length leaves the connection in an unknown state
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
    await writer.drain()
    async for piece in _pieces(reply):
        if reply.drip:
            await asyncio.sleep(reply.drip)
        writer.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n" if reply.chunked else piece)
        await writer.drain()
    if reply.chunked:
        writer.write(b"0\r\n\r\n")
        await writer.drain()
    return keep_open


def gzip_body(data: bytes) -> bytes:
    """``data`` gzip-compressed (``Content-Encoding: gzip``)."""
    return gzip.compress(data, mtime=0)


def deflate_body(data: bytes, *, raw: bool = False) -> bytes:
    """``data`` zlib-wrapped deflate (``Content-Encoding: deflate``, RFC 9110), or raw deflate."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15 if raw else 15)
    return compressor.compress(data) + compressor.flush()


def gzip_bomb(decoded_bytes: int, fill: bytes = b"a") -> bytes:
    """A gzip stream of ``decoded_bytes`` bytes ``fill`` (about 1000x smaller than what it inflates to).

    The default fill is text: a body of NULs is refused as binary before it is read (WEB-17).
    """
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = fill * (1 << 20)
    out = []
    left = decoded_bytes
    while left > 0:
        out.append(compressor.compress(block[: min(left, len(block))]))
        left -= len(block)
    out.append(compressor.flush())
    return b"".join(out)


@dataclass
class TlsMaterial:
    """A throwaway CA and a leaf certificate for some host names, as files and contexts."""

    ca_file: Path
    cert_file: Path
    key_file: Path

    def server_context(self, sni_log: dict[int, str | None]) -> ssl.SSLContext:
        """A server context presenting the leaf certificate; each handshake's SNI goes to ``sni_log``."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.cert_file, self.key_file)

        def record(ssl_object: ssl.SSLObject, server_name: str | None, _ctx: ssl.SSLContext) -> None:
            sni_log[id(ssl_object)] = server_name

        context.sni_callback = record
        return context

    def client_context(self) -> ssl.SSLContext:
        """A client context trusting only the throwaway CA."""
        return ssl.create_default_context(cafile=str(self.ca_file))


def make_tls(hostnames: Iterable[str], directory: Path | None = None) -> TlsMaterial:
    """Make a CA and a certificate valid for ``hostnames`` (names or IP literals), written as PEM files."""
    where = directory or Path(tempfile.mkdtemp(prefix="steerable-tls-"))
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "steerable test CA")])
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    names: list[x509.GeneralName] = []
    for name in hostnames:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            names.append(x509.DNSName(name))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "steerable test server")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    material = TlsMaterial(where / "ca.pem", where / "cert.pem", where / "key.pem")
    material.ca_file.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    material.cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    material.key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return material


@dataclass
class Pinned:
    """What a request asked :class:`PinRecorder` for: the address, the Host header, the SNI name."""

    address: str
    port: int
    host_header: str | None
    sni: str | None


class PinRecorder(httpx.AsyncBaseTransport):
    """A transport standing in for the network: pinned addresses are mapped to local servers.

    ``routes`` maps ``"address:port"`` (or a bare ``"address"``, any port) to a local port; a request
    to an unmapped address fails like an unreachable host (``httpx.ConnectError``). Every request
    is recorded in :attr:`calls` before it is forwarded with its headers and extensions unchanged,
    so TLS runs with the fetcher's ``sni_hostname`` against ``verify``.
    """

    def __init__(self, routes: Mapping[str, int], *, verify: ssl.SSLContext | bool = True) -> None:
        self.routes = dict(routes)
        self.calls: list[Pinned] = []
        self._inner = httpx.AsyncHTTPTransport(verify=verify)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Record the request, then send it to the mapped local port."""
        address = request.url.host
        port = request.url.port or (443 if request.url.scheme == "https" else 80)
        sni = request.extensions.get("sni_hostname")
        self.calls.append(Pinned(address, port, request.headers.get("host"), sni))
        local = self.routes.get(f"{address}:{port}", self.routes.get(address))
        if local is None:
            raise httpx.ConnectError(
                f"[Errno 101] Network is unreachable ({address}:{port})", request=request
            )
        request.url = request.url.copy_with(host="127.0.0.1", port=local)
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        """Close the inner transport."""
        await self._inner.aclose()


class ScriptedResolver:
    """A resolver answering from a table; a host with several answer lists gets them in turn.

    ``table`` maps a host to its addresses, or to a list of address lists (the first call gets the
    first list, and so on; the last repeats). An unknown host raises ``socket.gaierror`` as
    ``getaddrinfo`` does. :attr:`calls` records each ``(host, port)``.
    """

    def __init__(self, table: Mapping[str, Sequence[str] | Sequence[Sequence[str]]]) -> None:
        self.table = dict(table)
        self.calls: list[tuple[str, int]] = []

    async def __call__(self, host: str, port: int) -> list[str]:
        """The scripted answer for ``host``."""
        self.calls.append((host, port))
        answer = self.table.get(host)
        if answer is None:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        if answer and not isinstance(answer[0], str):
            turn = sum(1 for h, _ in self.calls if h == host) - 1
            lists = list(answer)
            return list(lists[min(turn, len(lists) - 1)])
        return [str(a) for a in answer]


class ScriptedProxy(LocalListener):
    """An HTTP proxy on 127.0.0.1 that refuses everything or forwards to mapped local servers.

    ``refuse`` is a status (403, 407) answered to every CONNECT and forwarded request. Otherwise
    ``upstream`` maps ``"host:port"`` to a local port: CONNECT opens a tunnel there, an
    absolute-form request (``GET http://host/path``) is passed on in origin form. An unmapped
    target gets 403. :attr:`seen` records each request line's method and target.
    """

    def __init__(self, *, refuse: int | None = None, upstream: Mapping[str, int] | None = None) -> None:
        super().__init__()
        self.refuse = refuse
        self.upstream = dict(upstream or {})
        self.seen: list[Seen] = []

    @property
    def url(self) -> str:
        """The proxy's URL, for ``HTTPS_PROXY``."""
        return f"http://127.0.0.1:{self.port}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen = await read_request(reader)
        if seen is None:
            return
        self.seen.append(seen)
        if seen.method == "CONNECT":
            authority = seen.target
            rest = b""
        else:
            url = httpx.URL(seen.target)
            authority = f"{url.host}:{url.port or 80}"
            origin_form = url.raw_path.decode("ascii")
            head = [f"{seen.method} {origin_form} HTTP/1.1"]
            head += [f"{k}: {v}" for k, v in seen.headers.items() if not k.startswith("proxy-")]
            head = [line for line in head if not line.lower().startswith("connection:")]
            rest = ("\r\n".join([*head, "Connection: close"]) + "\r\n\r\n").encode("latin-1")
        local = self.upstream.get(authority)
        if self.refuse is not None or local is None:
            status = self.refuse or 403
            await _write_reply(writer, Reply.text("blocked by the egress proxy", status=status))
            return
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", local)
        if seen.method == "CONNECT":
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            await writer.drain()
        else:
            up_writer.write(rest)
            await up_writer.drain()
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except ConnectionError:
        pass
    finally:
        with contextlib.suppress(Exception):
            writer.close()


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound for a moment, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
