"""The HTTP exchange the in-process ``web_search`` backends share: one deadline, a size cap, errors.

Spec: Web tools › Bounds. A backend's answer is read at most :data:`MAX_RESPONSE_BYTES`, counted
both as received and after content decoding (gzip and deflate are inflated here a bounded step at
a time, never by httpx, so a compression bomb costs at most the cap), with a single
``Content-Encoding`` only. Error bodies, ``Retry-After`` and redirects are read by
:mod:`steerable_sidecar.shared._http`, shared with the model provider.
"""

from __future__ import annotations

import asyncio
import logging
import math
import zlib
from dataclasses import dataclass
from typing import Any, Final

import httpx

from steerable_agent_runtime.errors import ConfigError, UserError, WebError

from ..shared._decoding import Inflater, content_coding
from ..shared._endpoints import checked_base_url
from ..shared._http import ClientOwner, RedirectRefused, clip, retry_after_s, send_unfollowed
from ._charsets import codec_for
from ._codes import WebErrorCode
from ._config import WEB_LIMIT_ENV

__all__ = ["ACCEPT_ENCODING", "MAX_RESPONSE_BYTES", "Answer", "HttpBackend", "search_base_url"]

logger = logging.getLogger(__name__)

MAX_RESPONSE_BYTES: Final = 4 * 1024 * 1024
"""The most bytes read from one backend answer, both as received and content-decoded; a larger
answer fails the search."""

ACCEPT_ENCODING: Final = "gzip"
"""The ``Accept-Encoding`` both backends send; the answer is inflated here (:class:`HttpBackend`)."""

_TIMEOUT_VAR: Final = WEB_LIMIT_ENV["search_timeout_ms"].variable


@dataclass(frozen=True, slots=True)
class Answer:
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


def search_base_url(base_url: object, what: str, appends: str) -> str:
    """``base_url`` as given, after :func:`~steerable_sidecar.shared._endpoints.checked_base_url`'s checks.

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


class HttpBackend(ClientOwner):
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

    async def _exchange(self, request: httpx.Request) -> Answer:
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
        return Answer(response.status_code, response.headers, body, response.charset_encoding)

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
                f"coding only, gzip or deflate (it asks for {ACCEPT_ENCODING})",
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

    def _rate_limited(self, answer: Answer, detail: str = "") -> WebError:
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
