"""What a hostile or broken model endpoint cannot do to a run (found by the issue 13 attack pass).

Each test serves raw bytes from a real loopback socket server, so nothing about httpx's or our
fake's framing is assumed: a gzip bomb or an endless error body costs at most 64 KB, a stream kept
open after ``[DONE]`` does not lose the answer, a 10 MB line is read whole (in linear time:
``benchmarks/sse_long_line.py``), a leading byte-order mark does not eat the first event, and a
100 000-character finish reason is clipped.
"""

from __future__ import annotations

import asyncio
import json
import time
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import pytest
from pydantic import SecretStr

from steerable_agent_runtime.errors import ProviderError
from steerable_agent_runtime.llm import ChatRequest, Message
from steerable_sidecar.providers._openai import LLMConfig, OpenAICompatibleProvider
from steerable_sidecar.shared._http import MAX_ERROR_BODY_BYTES

ASK = ChatRequest(messages=[Message(role="user", content="hi")])
Writer = Callable[[asyncio.StreamWriter], Awaitable[None]]


@asynccontextmanager
async def serving(write: Writer) -> AsyncIterator[tuple[OpenAICompatibleProvider, dict[str, int]]]:
    """A loopback server whose every answer is ``write``; yields a provider pointed at it."""
    seen = {"requests": 0}

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            (
                int(line.split(b":")[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length")
            ),
            0,
        )
        await reader.readexactly(length)
        seen["requests"] += 1
        try:
            await write(writer)
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    config = LLMConfig(
        provider="openai",
        model="m",
        base_url=f"http://127.0.0.1:{port}/v1",
        api_key=SecretStr("sk-limits-0123456789"),
        request_timeout_ms=3_000,
    )
    provider = OpenAICompatibleProvider(config, max_retries=0)
    try:
        yield provider, seen
    finally:
        await provider.aclose()
        server.close()


def sse_head() -> bytes:
    return b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n"


def chunk(delta: dict[str, object], finish: str | None = None) -> bytes:
    body = {
        "id": "c",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return b"data: " + json.dumps(body).encode() + b"\n\n"


async def test_a_gzip_bomb_error_body_is_read_only_to_the_cap() -> None:
    # an endless gzip body: each ~1 KB on the wire inflates to 1 MB; reading it whole never ends
    async def write(writer: asyncio.StreamWriter) -> None:
        writer.write(
            b"HTTP/1.1 500 Internal Server Error\r\ncontent-type: text/plain\r\ncontent-encoding: gzip\r\n\r\n"
        )
        packer = zlib.compressobj(9, zlib.DEFLATED, 31)  # 31: the gzip container
        block = b"x" * 1_000_000
        while not writer.is_closing():  # the client hung up: stop (drain() no longer waits then)
            writer.write(packer.compress(block) + packer.flush(zlib.Z_SYNC_FLUSH))
            await writer.drain()
            await asyncio.sleep(0)

    async with serving(write) as (provider, _):
        with pytest.raises(ProviderError) as info:
            await asyncio.wait_for(provider.complete(ASK), timeout=10)
    assert info.value.status == 500 and "answered HTTP 500: xxxx" in str(info.value)
    assert MAX_ERROR_BODY_BYTES == 65_536


async def test_an_endless_error_body_ends_at_the_cap() -> None:
    async def write(writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\n\r\n")
        while not writer.is_closing():  # reading it whole never ends
            writer.write(b"y" * 1000)
            await writer.drain()
            await asyncio.sleep(0)

    async with serving(write) as (provider, _):
        with pytest.raises(ProviderError) as info:
            await asyncio.wait_for(provider.complete(ASK), timeout=10)
    assert info.value.status == 503
    assert "yyyy" in str(info.value) and len(str(info.value)) < 1_000


@pytest.mark.parametrize("after", ["pings", "silence"])
async def test_a_stream_kept_open_after_done_keeps_its_answer(after: str) -> None:
    async def write(writer: asyncio.StreamWriter) -> None:
        writer.write(sse_head() + chunk({"role": "assistant", "content": "the answer"}) + chunk({}, "stop"))
        writer.write(b"data: [DONE]\n\n")
        await writer.drain()
        for _ in range(100):  # 20 s of pings (or of nothing) after the answer is complete
            if after == "pings":
                writer.write(b": ping\n\n")
                await writer.drain()
            await asyncio.sleep(0.2)

    async with serving(write) as (provider, _):
        started = time.perf_counter()
        response = await asyncio.wait_for(provider.complete(ASK), timeout=10)
        elapsed = time.perf_counter() - started
    assert response.text == "the answer" and response.finish_reason == "stop"
    # at [DONE]: waiting on would run into the 3 s request timeout (or the 20 s the stream stays open)
    assert elapsed < 1.5, f"the provider waited {elapsed:.1f} s after [DONE]"


async def test_a_10_mb_line_is_read_in_linear_time() -> None:
    text = "x" * 10_000_000

    async def write(writer: asyncio.StreamWriter) -> None:
        writer.write(sse_head())
        body = chunk({"role": "assistant", "content": text}) + chunk({}, "stop") + b"data: [DONE]\n\n"
        for start in range(0, len(body), 16_384):  # many reads, as a real network delivers it
            writer.write(body[start : start + 16_384])
            await writer.drain()

    async with serving(write) as (provider, _):
        response = await asyncio.wait_for(provider.complete(ASK), timeout=30)
    # read whole; that it is read in linear time (quadratic rescans took 7.5 s for 10 MB) is a
    # speed goal, measured by benchmarks/sse_long_line.py
    assert response.text == text


async def test_a_leading_byte_order_mark_does_not_eat_the_first_event() -> None:
    async def write(writer: asyncio.StreamWriter) -> None:
        writer.write(sse_head() + "\ufeff".encode() + chunk({"role": "assistant", "content": "FIRST "}))
        writer.write(chunk({"content": "second"}) + chunk({}, "stop") + b"data: [DONE]\n\n")
        await writer.drain()

    async with serving(write) as (provider, _):
        response = await provider.complete(ASK)
    assert response.text == "FIRST second"


async def test_a_huge_finish_reason_is_clipped() -> None:
    async def write(writer: asyncio.StreamWriter) -> None:
        writer.write(sse_head() + chunk({"role": "assistant", "content": "ok"}) + chunk({}, "z" * 100_000))
        writer.write(b"data: [DONE]\n\n")
        await writer.drain()

    async with serving(write) as (provider, _):
        response = await provider.complete(ASK)
    assert response.finish_reason == "z" * 64
