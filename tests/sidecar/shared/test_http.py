"""The shared HTTP readers of ``steerable_sidecar.shared._http`` on hostile input, called directly.

The provider (``tests/sidecar/providers/test_providers.py``) and the search backends
(``tests/sidecar/web_tools/test_search.py``, ``test_odd_answers.py``) test the same readers through
their own answers.
"""

from __future__ import annotations

import json
import tracemalloc
import zlib
from collections.abc import AsyncIterator

import httpx
import pytest

from steerable_agent_runtime.errors import ConfigError
from steerable_sidecar.shared._decoding import Inflater, content_coding
from steerable_sidecar.shared._http import (
    MAX_ERROR_BODY_BYTES,
    MAX_ERROR_CHARS,
    ClientOwner,
    clip,
    error_message,
    read_capped,
    retry_after_s,
)


@pytest.mark.parametrize(
    ("text", "limit", "marker", "clipped"),
    [
        ("  a \n\t b  ", 200, "...", "a b"),
        ("", 200, "...", ""),
        (" \n ", 200, "...", ""),
        ("x" * 10, 10, "...", "x" * 10),
        ("x" * 11, 10, "...", "xxxxxxx..."),
        ("x" * 11, 10, "…", "xxxxxxxxx…"),
        ("word " * 10, 8, "...", "word..."),  # no space left before the marker
        ("word " * 10, 11, "…", "word word…"),
        ({"error": "x"}, 200, "...", '{"error": "x"}'),
        (["a\nb"], 200, "...", '["a\\nb"]'),
        (None, 200, "...", "null"),
        ({"when": {1, 2}}, 200, "...", '{"when": "{1, 2}"}'),  # not JSON: its str()
    ],
)
def test_clip(text: object, limit: int, marker: str, clipped: str) -> None:
    assert clip(text, limit, marker=marker) == clipped


def test_clip_of_a_huge_text_is_at_most_the_limit() -> None:
    huge = ("a" * 999 + "\n") * 10_000
    assert len(clip(huge)) == MAX_ERROR_CHARS
    assert clip(huge).endswith("...")
    assert len(clip(json.loads("[" * 500 + "]" * 500), 50)) == 50


def test_error_message_of_a_huge_or_nested_body_is_clipped_never_an_exception() -> None:
    huge = json.dumps({"error": {"message": "slow " * 100_000}}).encode()
    assert error_message(huge) == ("slow " * 40).strip()[:197].rstrip() + "..."
    assert len(error_message(b"\x00\xff" * 1_000_000)) == MAX_ERROR_CHARS
    assert (
        error_message(b'{"error": {"message": 5}, "detail": null}')
        == '{"error": {"message": 5}, "detail": null}'
    )


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("Sun, 06 Nov 1994 08:49:37 GMT", 0.0),
        ("Sunday, 06-Nov-94 08:49:37 GMT", 0.0),
        ("Sun Nov  6 08:49:37 1994", 0.0),  # asctime: GMT by definition (RFC 9110, 5.6.7)
        ("Sun Nov 16 08:49:37 1994", 0.0),
        ("Sun, 06 Nov 1994 08:49:37", None),  # no zone, not asctime: no instant
        ("Sun, 06 Nov 1994 08:49:37 -0000", None),  # RFC 5322's "unknown zone"
        ("Sun Nov 6 08:49:37 1994", None),  # asctime pads the day with a space
        ("sun nov  6 08:49:37 1994", None),
        ("Sun Nov  6 08:49:37 1994 trailing", None),
        ("Sun Nov  6 25:61:61 1994", None),
        ("\x00" * 100, None),
        ("," * 10_000, None),
        ("Mon, 99 Foo 2024 25:61:61 GMT", None),
        ("Fri, 31 Dec 99999 23:59:59 GMT", None),
        ("Thu, 01 Jan 1970 00:00:00 +9999", None),
    ],
)
def test_retry_after_dates(value: str, seconds: float | None) -> None:
    assert retry_after_s({"retry-after": value}) == seconds


def test_an_asctime_date_ahead_counts_from_now() -> None:
    now = 784111777.0  # Sun Nov  6 08:49:37 1994 GMT
    assert retry_after_s({"retry-after": "Sun Nov  6 08:51:37 1994"}, now=now) == 120.0
    assert retry_after_s({"retry-after": "Sun, 06 Nov 1994 08:51:37 +0100"}, now=now) == 0.0


async def test_client_owner_closes_only_its_own_client() -> None:
    timeout = httpx.Timeout(1.0)
    async with httpx.AsyncClient() as injected:
        holder = ClientOwner(injected, what="test", timeout=timeout)
        await holder.aclose()
        assert not injected.is_closed
    async with ClientOwner(None, what="test", timeout=timeout) as owner:
        own = owner._client
        assert not own.is_closed and own.timeout == timeout
    assert own.is_closed
    await owner.aclose()  # twice is fine


def test_client_owner_names_who_cannot_use_the_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "ftp://user:hunter2@proxy.invalid:99999")
    with pytest.raises(
        ConfigError, match="the test client cannot use the proxy set in HTTPS_PROXY"
    ) as caught:
        ClientOwner(None, what="the test client", timeout=httpx.Timeout(1.0))
    assert "hunter2" not in str(caught.value)


class _Received(httpx.AsyncByteStream):
    """A body as a server sends it, in one chunk, unread until the reader reads it."""

    def __init__(self, data: bytes) -> None:
        self._data = data

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield self._data


def _answer(status: int, encoding: str, data: bytes) -> httpx.Response:
    return httpx.Response(status, headers={"content-encoding": encoding}, stream=_Received(data))


def _gzip(data: bytes) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)  # 31: the gzip container
    return packer.compress(data) + packer.flush()


async def test_read_capped_inflates_a_dense_gzip_bomb_only_to_the_cap() -> None:
    """One received chunk of 100 MB of zeros (about 100 KB of gzip) costs about the cap, not 100 MB."""
    bomb = _gzip(bytes(100_000_000))
    response = _answer(500, "gzip", bomb)
    tracemalloc.start()
    try:
        body, cut = await read_capped(response, MAX_ERROR_BODY_BYTES)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (body, cut) == (bytes(MAX_ERROR_BODY_BYTES), True)
    assert peak < 8 * MAX_ERROR_BODY_BYTES + len(bomb)


@pytest.mark.parametrize(
    ("encoding", "content"),
    [
        ("gzip", _gzip(b'{"error": {"message": "quota"}}')),
        ("x-gzip", _gzip(b'{"error": {"message": "quota"}}')),
        ("deflate", zlib.compress(b'{"error": {"message": "quota"}}')),
        ("deflate", zlib.compress(b'{"error": {"message": "quota"}}')[2:-4]),  # raw deflate, as some send
        ("GZIP ", _gzip(b'{"error": {"message": "quota"}}')),
        ("gzip, gzip", _gzip(_gzip(b'{"error": {"message": "quota"}}'))),  # a list: httpx decodes it
        ("identity", b'{"error": {"message": "quota"}}'),
        ("", b'{"error": {"message": "quota"}}'),
    ],
)
async def test_read_capped_decodes_every_coding_it_did_before(encoding: str, content: bytes) -> None:
    response = _answer(429, encoding, content)
    body, cut = await read_capped(response, MAX_ERROR_BODY_BYTES)
    assert (error_message(body), cut) == ("quota", False)


async def test_read_capped_of_a_body_exactly_at_the_cap_is_not_cut() -> None:
    response = _answer(200, "gzip", _gzip(b"x" * 100))
    assert await read_capped(response, 100) == (b"x" * 100, False)


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
async def test_read_capped_of_a_corrupt_body_is_httpx_decoding_error(encoding: str) -> None:
    response = _answer(500, encoding, b"\x1f\x8b\x08garbage" * 10)
    with pytest.raises(httpx.DecodingError):
        await read_capped(response, MAX_ERROR_BODY_BYTES)


def test_the_inflater_never_returns_more_than_the_room() -> None:
    inflater = Inflater("gzip")
    packed = _gzip(bytes(10_000_000))
    out = inflater.decode(packed, 1000)
    assert out == bytes(1000)


def test_the_inflater_reads_every_gzip_member_and_raw_deflate() -> None:
    assert Inflater("gzip").decode(_gzip(b"one ") + _gzip(b"two"), 100) == b"one two"
    assert Inflater("deflate").decode(zlib.compress(b"wrapped"), 100) == b"wrapped"
    assert Inflater("deflate").decode(zlib.compress(b"raw")[2:-4], 100) == b"raw"
    assert Inflater("identity").decode(b"plain text", 5) == b"plain"
    with pytest.raises(zlib.error):
        Inflater("gzip").decode(b"not gzip at all", 100)


@pytest.mark.parametrize(
    ("header", "coding"),
    [
        ("", "identity"),
        ("identity", "identity"),
        (" GZip ", "gzip"),
        ("x-gzip", "gzip"),
        ("deflate", "deflate"),
        ("gzip, gzip", None),
        ("br", None),
        ("zstd", None),
        ("gzip\x00", None),
    ],
)
def test_content_coding(header: str, coding: str | None) -> None:
    assert content_coding(header) == coding
