"""Reading HTTP answers: error bodies, ``Retry-After`` and redirects, for every HTTP client here.

The model provider (:mod:`steerable_sidecar.providers._openai`), the search backends
(:mod:`steerable_sidecar.web_tools._search_http`) and ``web_fetch``
(:mod:`steerable_sidecar.web_tools._fetch`) read the same kinds of answers, and a server can send
any of them any bytes. One copy of each reader lives here (each docstring names its rule), and
none of them raises on a hostile answer: an error body nested 100,000 deep gives its text, never
``RecursionError``, and a ``Location`` httpx cannot parse becomes :class:`RedirectRefused`, never
its uncaught ``InvalidURL``.
"""

from __future__ import annotations

import email.utils
import json
import re
import time
import zlib
from collections.abc import Mapping
from datetime import UTC
from types import TracebackType
from typing import Any, Final, Self
from urllib.parse import urlsplit

import httpx

from ._decoding import Inflater, content_coding
from ._endpoints import env_proxy_client

__all__ = [
    "MAX_COMPLETION_BYTES",
    "MAX_DELAY_DIGITS",
    "MAX_ERROR_BODY_BYTES",
    "MAX_ERROR_CHARS",
    "REDIRECT_STATUSES",
    "ClientOwner",
    "RedirectRefused",
    "clip",
    "error_message",
    "read_capped",
    "redirect_target",
    "refused_redirect",
    "retry_after_s",
    "send_unfollowed",
]

MAX_ERROR_CHARS: Final = 200
"""The most characters of a server's error text kept by :func:`error_message` and :func:`clip`."""

MAX_DELAY_DIGITS: Final = 9
"""The most digits of a delay's whole part (about 31 years in seconds); a longer run is not a
delay anyone means, and :func:`retry_after_s` ignores it."""

REDIRECT_STATUSES: Final = frozenset({301, 302, 303, 307, 308})
"""The statuses whose ``Location`` names the next request (as httpx counts them)."""

EMPTY_BODY: Final = "(empty body)"

_WHITESPACE = re.compile(r"\s+")
_DECIMAL = re.compile(rf"[0-9]{{1,{MAX_DELAY_DIGITS}}}(?:\.[0-9]{{1,6}})?")
# RFC 9110, 5.6.7: asctime-date = day-name SP month SP ( 2DIGIT / ( SP DIGIT ) ) SP time-of-day SP year
_ASCTIME = re.compile(r"[A-Z][a-z]{2} [A-Z][a-z]{2} (?:[0-9]{2}| [0-9]) [0-9]{2}:[0-9]{2}:[0-9]{2} [0-9]{4}")
_HTTP_SCHEMES: Final = ("http", "https")
_SHOWN_LOCATION_CHARS: Final = 100
_LOCATION_PARSE_ERROR: Final = "Invalid URL in location header"  # httpx's RemoteProtocolError text


def clip(text: object, limit: int = MAX_ERROR_CHARS, *, marker: str = "...") -> str:
    """``text`` on one line, at most ``limit`` characters: what an error message or a hit shows.

    Whitespace runs become one space and the ends are stripped; a longer text is cut and ends in
    ``marker``, with no space before it. A value that is not a string (a JSON value an answer
    held) is shown as its JSON first.

    Args:
        text: The text, or any JSON value.
        limit: The most characters returned (the marker included).
        marker: What ends a cut text: ``"..."`` in error messages, ``"…"`` in search hits.

    Returns:
        The clipped text (``""`` for nothing but whitespace).
    """
    if not isinstance(text, str):
        text = json.dumps(text, ensure_ascii=False, default=str)
    text = _WHITESPACE.sub(" ", text).strip()
    return text if len(text) <= limit else text[: limit - len(marker)].rstrip() + marker


class ClientOwner:
    """Holds the ``httpx.AsyncClient`` an object sends with, and closes it only when it made it.

    A client passed in belongs to the caller and stays open; without one, a client honouring the
    proxy variables is built (:func:`~steerable_sidecar.shared._endpoints.env_proxy_client`) and
    :meth:`aclose` (or leaving ``async with``) closes it. Subclasses send with ``self._client``.

    Args:
        client: The caller's client, or ``None`` for an own one.
        what: Who needs the client, named in a proxy error (``"web_search"``).
        timeout: The own client's timeout.

    Raises:
        ConfigError: When an own client cannot use the proxy the environment names.
    """

    def __init__(self, client: httpx.AsyncClient | None, *, what: str, timeout: httpx.Timeout) -> None:
        self._owns_client = client is None
        self._client = client if client is not None else env_proxy_client(what, timeout=timeout)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the own HTTP client (an injected client stays open)."""
        if self._owns_client:
            await self._client.aclose()


# -- error bodies ----------------------------------------------------------------------------------


def error_message(body: bytes | str, *, limit: int = MAX_ERROR_CHARS) -> str:
    """The server's own error text from an HTTP error body; never raises.

    The first non-empty string among, in order: ``error.message`` (OpenAI and most compatible
    servers), ``detail.error`` (Tavily), ``error`` as a string, ``message``, ``detail`` as a
    string (FastAPI, vLLM). Otherwise (not JSON, another shape, nested deeper than the
    interpreter can parse) the body's text. The result is :func:`clip`-ped.

    Args:
        body: The error body (bytes are decoded as UTF-8, errors replaced). Bound its size before
            calling: the whole of it is decoded and parsed.
        limit: The most characters returned.

    Returns:
        The message, or ``"(empty body)"`` when the body holds nothing but whitespace.
    """
    text = body if isinstance(body, str) else body.decode("utf-8", "replace")
    try:
        payload: Any = json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: nested deeper than the interpreter allows
        payload = None
    candidates: list[Any] = []
    if isinstance(payload, dict):
        error, detail = payload.get("error"), payload.get("detail")
        if isinstance(error, dict):
            candidates.append(error.get("message"))
        if isinstance(detail, dict):
            candidates.append(detail.get("error"))
        candidates += [error, payload.get("message"), detail]
    for candidate in candidates:
        if isinstance(candidate, str) and candidate.strip():
            return clip(candidate, limit)
    return clip(text, limit) or EMPTY_BODY


# -- Retry-After -----------------------------------------------------------------------------------


def retry_after_s(
    headers: Mapping[str, str], *, cap_s: float | None = None, now: float | None = None
) -> float | None:
    """The delay, in seconds, an answer (a 429, a 503) asks for; ``None`` when it names none.

    ``retry-after-ms`` (OpenAI's milliseconds) wins when usable; else ``Retry-After``, either
    delta-seconds or an HTTP-date counted from ``now`` (a past date is 0). A date is read in the
    three forms RFC 9110 (5.6.7) has recipients accept (asctime's is GMT by definition) or with a
    numeric zone; any other zone-less date (or RFC 5322's ``-0000``) names no instant and is
    ignored. A number is ASCII digits with an optional fraction (model servers send fractions),
    at most :data:`MAX_DELAY_DIGITS` before the point; anything else is ignored, never raised.

    Args:
        headers: The answer's headers (``httpx.Headers`` or any mapping with lowercase keys).
        cap_s: When given, the longest delay returned (a longer one is cut to it).
        now: The current time as a Unix timestamp (``time.time()`` when ``None``), for dates.

    Returns:
        The delay in seconds (a float, at least 0), or ``None``.
    """
    delay: float | None = None
    raw_ms = (headers.get("retry-after-ms") or "").strip()
    if _DECIMAL.fullmatch(raw_ms):
        delay = float(raw_ms) / 1000
    if delay is None:
        raw = (headers.get("retry-after") or "").strip()
        if _DECIMAL.fullmatch(raw):
            delay = float(raw)
        elif raw:
            delay = _date_delay(raw, time.time() if now is None else now)
    if delay is None:
        return None
    return delay if cap_s is None else min(delay, max(0.0, cap_s))


def _date_delay(raw: str, now: float) -> float | None:
    try:
        when = email.utils.parsedate_to_datetime(raw)
        if when.tzinfo is None:  # RFC 5322 "-0000", or no zone: an HTTP-date only in asctime form
            if not _ASCTIME.fullmatch(raw):
                return None
            when = when.replace(tzinfo=UTC)
        return max(0.0, when.timestamp() - now)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


# -- redirects -------------------------------------------------------------------------------------


class RedirectRefused(Exception):
    """A redirect whose ``Location`` is not an http(s) URL that can be requested.

    ``str(exc)`` is the reason, e.g. ``"'mailto:x@y' is not an http(s) URL (its scheme is
    mailto:)"``; callers turn it into their own documented error (``invalid_redirect``,
    ``search_failed``, a provider error).

    Attributes:
        reason: Why, naming the (clipped) ``Location``.
        location: The ``Location`` as sent, or ``None`` when httpx refused it before it could be
            read (see :func:`refused_redirect`).
    """

    def __init__(self, reason: str, location: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.location = location


def _shown(location: str) -> str:
    limit = _SHOWN_LOCATION_CHARS
    text = location if len(location) <= limit else location[: limit - 3] + "..."
    return repr(text)


def redirect_target(base: httpx.URL, location: str) -> httpx.URL:
    """The absolute http(s) URL a redirect's ``Location`` names, relative to ``base``.

    Only the URL's form is checked (scheme, parse, host); the caller's own URL checks (length,
    credentials, domain policy, SSRF) still apply to the result. A fragment is kept as sent.

    Args:
        base: The URL of the request that was redirected.
        location: The ``Location`` header value.

    Returns:
        The target URL.

    Raises:
        RedirectRefused: For an empty ``Location``, a scheme other than http or https
            (``mailto:``, ``javascript:``, ``data:``, ``ftp:``...), one that does not parse
            (``http://[bad``, control characters), or one without a host (``http://``).
    """
    text = location.strip()
    shown = _shown(text)
    if not text:
        raise RedirectRefused("the Location header is empty", location)
    if any(ord(char) < 0x20 or ord(char) == 0x7F for char in text):
        raise RedirectRefused(f"{shown} is not a valid URL (it has control characters)", location)
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018  # a bad port (":x", ":99999") raises here
    except ValueError as exc:
        raise RedirectRefused(f"{shown} is not a valid URL ({exc})", location) from None
    scheme = parts.scheme.lower()
    if scheme and scheme not in _HTTP_SCHEMES:
        raise RedirectRefused(f"{shown} is not an http(s) URL (its scheme is {scheme}:)", location)
    if scheme and not parts.hostname:
        raise RedirectRefused(f"{shown} is not a valid URL (it has no host)", location)
    try:
        target = base.join(text)
    except (httpx.InvalidURL, ValueError, UnicodeError) as exc:
        raise RedirectRefused(f"{shown} is not a valid URL ({exc})", location) from None
    if target.scheme not in _HTTP_SCHEMES:
        raise RedirectRefused(f"{shown} is not an http(s) URL (its scheme is {target.scheme}:)", location)
    if not target.host:
        raise RedirectRefused(f"{shown} is not a valid URL (it has no host)", location)
    return target


def refused_redirect(exc: BaseException) -> RedirectRefused | None:
    """The :class:`RedirectRefused` behind an exception ``httpx`` raised from ``send``, or ``None``.

    httpx computes a redirect's next request even with ``follow_redirects=False``; for a
    ``Location`` it cannot turn into a URL it raises ``httpx.InvalidURL`` (``mailto:x@y``,
    ``javascript:...``, ``data:...``: not an ``httpx.HTTPError``) or ``httpx.RemoteProtocolError``
    ("Invalid URL in location header"). Call this on what ``client.send(request, ...)`` (a
    request already built, so its own URL is valid) or ``client.stream(...)`` raised.

    Args:
        exc: The exception.

    Returns:
        A :class:`RedirectRefused` (its ``location`` is ``None``: httpx does not say it), or
        ``None`` when ``exc`` is about something else.
    """
    if isinstance(exc, httpx.InvalidURL):
        return RedirectRefused(
            "the server redirected to a Location that is not an http(s) URL "
            "(a mailto:, javascript:, data: or other URL without a host)"
        )
    if isinstance(exc, httpx.RemoteProtocolError) and str(exc).startswith(_LOCATION_PARSE_ERROR):
        why = clip(str(exc))
        return RedirectRefused(f"the server redirected to a Location that is not a valid URL ({why})")
    return None


async def send_unfollowed(
    client: httpx.AsyncClient, request: httpx.Request, *, stream: bool = True
) -> httpx.Response:
    """``client.send(request, follow_redirects=False)``, with an unusable ``Location`` refused.

    The caller reads (or closes) the response as after ``client.send``; a redirect comes back as
    the 3xx response itself (pass its ``Location`` to :func:`redirect_target` to follow it).

    Args:
        client: The client.
        request: A request built with ``client.build_request``.
        stream: Leave the body unread (``True``) or read it whole.

    Returns:
        The response.

    Raises:
        RedirectRefused: When the answer is a redirect whose ``Location`` httpx cannot parse
            into a URL (see :func:`refused_redirect`); the response is already closed.
        httpx.HTTPError: As ``client.send`` raises it.
    """
    try:
        return await client.send(request, stream=stream, follow_redirects=False)
    except (httpx.InvalidURL, httpx.RemoteProtocolError) as exc:
        refused = refused_redirect(exc)
        if refused is None:
            raise
        raise refused from None


MAX_ERROR_BODY_BYTES = 65_536
"""How much of an error answer is read (after decompression): enough for any message, and a
gzip bomb or an endless 500 body costs no more than this."""

MAX_COMPLETION_BYTES = 32_000_000
"""The largest non-streamed completion read (after decompression), in bytes."""


async def read_capped(response: httpx.Response, limit: int) -> tuple[bytes, bool]:
    """Read at most ``limit`` decoded bytes of ``response``'s body; the rest is never read.

    A body in one ``Content-Encoding`` of gzip or deflate is inflated here a bounded step at a
    time (:class:`~steerable_sidecar.shared._decoding.Inflater`), so a compression bomb costs about
    ``limit``; any other coding (``br``, ``zstd``, a list such as ``gzip, gzip``) is decoded by
    httpx, a received chunk at a time.

    Returns:
        ``(body, cut)``: the bytes read, and whether the body went on past ``limit``.

    Raises:
        httpx.DecodingError: The body is not valid in its ``Content-Encoding`` (as httpx raises it).
        httpx.HTTPError: As reading the body raises it.
    """
    coding = content_coding(response.headers.get("content-encoding", ""))
    if coding is not None and coding != "identity":
        return await _inflate_capped(response, Inflater(coding), limit)
    parts: list[bytes] = []
    size = 0
    async for piece in response.aiter_bytes():
        parts.append(piece)
        size += len(piece)
        if size > limit:
            return b"".join(parts)[:limit], True
    return b"".join(parts), False


async def _inflate_capped(response: httpx.Response, inflater: Inflater, limit: int) -> tuple[bytes, bool]:
    body = bytearray()
    try:
        async for raw in response.aiter_raw():
            body += inflater.decode(raw, limit + 1 - len(body))  # one byte past: "more" from "exactly"
            if len(body) > limit:
                return bytes(body[:limit]), True
    except zlib.error as exc:
        raise httpx.DecodingError(f"the body is not valid in its Content-Encoding ({exc})") from None
    return bytes(body), False
