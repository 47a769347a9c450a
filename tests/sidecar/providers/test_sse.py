"""The SSE reader: line breaks only at CR and LF, across reads, and llama.cpp's ``error:`` lines."""

from __future__ import annotations

import httpx

from steerable_sidecar.providers._sse import SSEvent, aiter_sse

DONE = b"data: [DONE]\n\n"


async def events_of(body: bytes, *, piece: int = 1) -> list[SSEvent]:
    async def stream():
        for start in range(0, len(body), piece):
            yield body[start : start + piece]

    response = httpx.Response(200, content=stream(), headers={"content-type": "text/event-stream"})
    return [event async for event in aiter_sse(response)]


async def test_the_sse_reader_splits_lines_only_at_cr_and_lf_even_across_reads():
    body = "data: a\u2028b é\r\n\r\nevent: x\rdata: 1\rdata: 2\r\r: comment\n\ndata: ☕\n\n".encode()
    expected = [SSEvent("", "a\u2028b é"), SSEvent("x", "1\n2"), SSEvent("", "☕")]
    for piece in (1, 2, 3, len(body)):
        assert await events_of(body, piece=piece) == expected


async def test_the_sse_reader_reads_llama_cpp_error_lines_as_error_events():
    assert (await events_of(b'error: {"code":500}\n\n' + DONE))[0] == SSEvent("error", '{"code":500}')
    assert await events_of(b'error: {"message":"cut"}') == [SSEvent("error", '{"message":"cut"}')]
    assert await events_of(b"data: {half") == []  # an unfinished ordinary event is dropped
