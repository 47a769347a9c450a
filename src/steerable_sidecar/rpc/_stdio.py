"""The stdio transport of a :class:`~steerable_sidecar.rpc._peer.JsonRpcPeer`: file descriptors as streams.

:func:`isolate_stdio` reserves the process's stdin and stdout for the protocol;
:func:`open_fd_streams` wraps any pair of fds (pipes through the event loop, files through a
thread). The public names are re-exported by :mod:`steerable_sidecar.rpc._peer`.
"""

from __future__ import annotations

import asyncio
import os
import selectors
import stat
import sys
import threading
from typing import Final, Protocol

from steerable_agent_runtime.errors import UserError

__all__ = ["READ_CHUNK", "LineWriter", "isolate_stdio", "open_fd_streams", "open_stdio_streams"]

READ_CHUNK: Final = 256 * 1024
"""Bytes asked of the reader per read; also the StreamReader limit of :func:`open_fd_streams`."""


class LineWriter(Protocol):
    """The write half a peer needs: :class:`asyncio.StreamWriter` satisfies it."""

    def write(self, data: bytes, /) -> object:
        """Queue ``data`` for writing."""

    async def drain(self) -> None:
        """Wait until the queued data may be written (flow control)."""


_isolated = False


def isolate_stdio() -> tuple[int, int]:
    """Reserve the process's stdin and stdout for the protocol; return private copies of them.

    After this call nothing else in the process can reach the protocol stream by accident: fd 1
    (and so ``print()``, C extensions and child processes that inherit stdout) is a copy of
    stderr, ``sys.stdout`` is ``sys.stderr``, and fd 0 reads ``/dev/null`` (a child that inherits
    stdin cannot swallow frames). Call it once, early, before anything writes to stdout.

    Returns:
        ``(read_fd, write_fd)``: the original stdin and stdout, as new non-inheritable fds.

    Raises:
        UserError: stdio was already isolated in this process.
    """
    global _isolated
    if _isolated:
        raise UserError("isolate_stdio() already ran in this process")
    for stream in (sys.stdout, sys.__stdout__):
        if stream is not None:
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
    read_fd = os.dup(0)
    write_fd = os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    try:
        os.dup2(null, 0)
        try:
            os.dup2(2, 1)
        except OSError:  # no stderr: stray output goes nowhere rather than into the protocol
            os.dup2(null, 1)
    finally:
        os.close(null)
    sys.stdout = sys.stderr
    _isolated = True
    return read_fd, write_fd


async def open_stdio_streams(*, isolate: bool = True) -> tuple[asyncio.StreamReader, LineWriter]:
    """Open the process's stdin and stdout as the sidecar's protocol streams.

    Args:
        isolate: Run :func:`isolate_stdio` first (the default), so a stray ``print()`` lands on
            stderr instead of corrupting frames. ``False`` uses copies of fds 0 and 1 as they are.

    Returns:
        A reader and a writer for :class:`JsonRpcPeer`; see :func:`open_fd_streams`.
    """
    read_fd, write_fd = isolate_stdio() if isolate else (os.dup(0), os.dup(1))
    return await open_fd_streams(read_fd, write_fd)


async def open_fd_streams(read_fd: int, write_fd: int) -> tuple[asyncio.StreamReader, LineWriter]:
    """Wrap two file descriptors as asyncio streams; takes ownership of both fds.

    Pipes, sockets and terminals go through the event loop (``connect_read_pipe`` /
    ``connect_write_pipe``). Anything the loop cannot poll (a regular file, ``/dev/null``:
    ``steerable ... < requests.jsonl > answers.jsonl``) falls back to a daemon thread that reads
    the fd (without backpressure: a file is read ahead at disk speed), and to plain blocking
    writes on the loop, which a regular file or ``/dev/null`` never holds up for long.

    Returns:
        The reader and the writer.
    """
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=READ_CHUNK)
    if _pollable(read_fd, selectors.EVENT_READ):
        read_pipe = os.fdopen(read_fd, "rb", buffering=0)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), read_pipe)
    else:
        _start_thread_reader(read_fd, reader, loop)
    writer: LineWriter
    if _pollable(write_fd, selectors.EVENT_WRITE):
        write_pipe = os.fdopen(write_fd, "wb", buffering=0)
        transport, protocol = await loop.connect_write_pipe(
            lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader()), write_pipe
        )
        writer = asyncio.StreamWriter(transport, protocol, None, loop)
    else:
        writer = _BlockingWriter(write_fd)
    return reader, writer


def _pollable(fd: int, events: int) -> bool:
    """Whether the event loop can watch ``fd`` (epoll refuses regular files and /dev/null)."""
    mode = os.fstat(fd).st_mode
    if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)):
        return False
    with selectors.DefaultSelector() as selector:
        try:
            selector.register(fd, events)
        except (OSError, ValueError):
            return False
    return True


def _start_thread_reader(fd: int, reader: asyncio.StreamReader, loop: asyncio.AbstractEventLoop) -> None:
    def pump() -> None:
        try:
            while chunk := os.read(fd, READ_CHUNK):
                loop.call_soon_threadsafe(reader.feed_data, chunk)
            loop.call_soon_threadsafe(reader.feed_eof)
        except OSError as exc:
            try:
                loop.call_soon_threadsafe(reader.set_exception, exc)
            except RuntimeError:
                pass
        except RuntimeError:  # the loop closed under us
            pass
        finally:
            os.close(fd)

    threading.Thread(target=pump, name=f"steerable-rpc-read-fd{fd}", daemon=True).start()


class _BlockingWriter:
    """A :class:`LineWriter` over an fd the loop cannot poll: each write completes at once."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def write(self, data: bytes, /) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]

    async def drain(self) -> None:
        return None
