"""REC-4 pieces in this process: the shutdown a signal starts, and the stdio streams it drains.

The real-signal tests (sidecar, mcp, acp, session, run) are in test_signals.py.
"""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

from steerable_sidecar.rpc._stdio import open_fd_streams
from steerable_sidecar.shared._signals import Shutdown


async def test_the_first_signal_counts_and_wakes_every_waiter_rec_4() -> None:
    shutdown = Shutdown()
    assert not shutdown.requested and shutdown.name == "" and not shutdown.watched
    assert shutdown.reason == "steerable is shutting down (signal)"
    waiters = [asyncio.ensure_future(shutdown.wait()) for _ in range(2)]
    await asyncio.sleep(0)
    assert shutdown.watched
    shutdown.request(signal.SIGTERM)
    shutdown.request(signal.SIGHUP)  # a second one does not replace the first
    assert await asyncio.gather(*waiters) == [signal.SIGTERM, signal.SIGTERM]
    assert not shutdown.watched and shutdown.requested
    assert shutdown.interrupted_message() == (
        "interrupted: steerable is shutting down (SIGTERM) and stopped this call before it finished; "
        "check its effect before retrying it"
    )
    assert shutdown.interrupted_data() == {"type": "Interrupted", "code": "interrupted", "signal": "SIGTERM"}


async def test_an_unknown_signal_number_is_still_named_rec_4() -> None:
    shutdown = Shutdown()
    shutdown.request(200)
    assert shutdown.name == "signal 200"


async def test_pipes_go_through_the_loop_and_files_through_a_thread_rec_4(tmp_path: Path) -> None:
    # `steerable ... < requests.jsonl > answers.jsonl`: a regular file is read by a thread and written
    # with plain writes; pipes through the event loop
    requests = tmp_path / "requests.jsonl"
    requests.write_bytes(b'{"a": 1}\n{"b": 2}\n')
    answers = tmp_path / "answers.jsonl"
    read_fd = os.open(requests, os.O_RDONLY)
    write_fd = os.open(answers, os.O_WRONLY | os.O_CREAT, 0o600)
    reader, writer = await open_fd_streams(read_fd, write_fd)
    assert await reader.readline() == b'{"a": 1}\n'
    assert await reader.readline() == b'{"b": 2}\n'
    assert await reader.readline() == b""
    writer.write(b"answer\n")
    await writer.drain()
    assert answers.read_bytes() == b"answer\n"
    os.close(write_fd)

    in_read, in_write = os.pipe()
    out_read, out_write = os.pipe()
    reader, writer = await open_fd_streams(in_read, out_write)
    os.write(in_write, b"ping\n")
    assert await reader.readline() == b"ping\n"
    writer.write(b"pong\n")
    await writer.drain()
    assert os.read(out_read, 100) == b"pong\n"
    assert isinstance(writer, asyncio.StreamWriter)
    writer.close()
    await writer.wait_closed()
    os.close(in_write)
    assert await reader.readline() == b""
    os.close(out_read)
