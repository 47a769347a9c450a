"""The HTML converter: ``html-to-markdown`` in a sandboxed child process, bounded in memory and time.

HTML is converted to Markdown in a **child process** (:class:`HtmlConverter`), not a thread: the
converter amplifies some documents far past their size (a 1 MB page of table rows under a
``colspan=1000`` cell renders to 375 MB; 100 KB of nested ``<blockquote>`` takes 6 GB), and a
thread can neither be stopped at the fetch deadline nor held to a memory ceiling. The child parses
hostile input, so it runs under the layer-2 sandbox of ``bash`` (``docs/sandbox.md``) with no
writable root, no network and the allowlisted environment; where no sandbox can run (and the
sidecar is not confined) no child is started and HTML comes back as text. The child gets an
address-space ceiling of :data:`CONVERTER_MEMORY_FLOOR` plus :data:`CONVERTER_MEMORY_PER_BYTE`
times the page's UTF-8 size (Linux ``RLIMIT_AS``; other systems get no ceiling, only the deadline)
inside its sandbox's own limit (:func:`sandbox_memory_bytes`, also its memory cgroup), is killed
with its sandbox when the fetch deadline passes, and its Markdown is cut at ``max_chars`` (the
fetcher passes twice ``fetch_max_bytes``) with a marker. A page the converter cannot finish within
those bounds is returned as its text with the markup removed (:func:`~._html.text_from_html`,
linear), after a line saying so.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import os
import struct
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from steerable_agent_runtime.errors import SandboxUnavailableError
from steerable_agent_runtime.sandbox import (
    ResourceLimits,
    SandboxBackend,
    SandboxConfig,
    SandboxedProcess,
    SandboxInfo,
    SandboxSpawner,
)

from ._html import MARKDOWN_OPTIONS, text_from_html

__all__ = [
    "CONVERTER_MEMORY_FLOOR",
    "CONVERTER_MEMORY_PER_BYTE",
    "HtmlConverter",
    "Rendered",
    "capped",
    "sandbox_memory_bytes",
]

logger = logging.getLogger(__name__)

CONVERTER_MEMORY_FLOOR: Final = 64 << 20
"""Bytes of address space the converter child may add for any page (on Linux)."""

CONVERTER_MEMORY_PER_BYTE: Final = 32
"""Further bytes of address space per byte of the page's UTF-8 text. A benign 1 MB documentation
page takes about 18 MB of converter memory; 64 MB + 32 x 1 MB leaves room for denser pages."""


# The child: reads requests from stdin, answers on stdout, imports nothing but html_to_markdown and
# the standard library. Once its imports are done it writes one byte (_READY): a child that never
# does could not start (no interpreter, no package, a sandbox that failed to set up). Request: 4
# little-endian u64 (HTML bytes, base URL bytes, max_chars, memory allowance), the base URL, the
# HTML (UTF-8). Answer: a status byte (0 converted, 1 the converter refused the document, 2
# converted and cut at max_chars), a u64 size, the UTF-8 text. Before converting, it lowers its own
# soft RLIMIT_AS to its current size plus the allowance (never above the hard limit the sandbox
# set): a page that needs more makes the allocation fail, and the child dies (Rust aborts) or exits.
_CHILD_SOURCE: Final = r"""
import json, os, struct, sys
from html_to_markdown import ConversionError, ConversionOptions, convert
try:
    import resource
except ImportError:
    resource = None


def ceiling(allowance):
    if resource is None:
        return
    try:
        with open("/proc/self/statm", "rb") as statm:
            size = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        hard = resource.getrlimit(resource.RLIMIT_AS)[1]
        soft = size + allowance
        if hard != resource.RLIM_INFINITY:
            soft = min(soft, hard)
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    except (OSError, ValueError):
        pass


def main():
    options = json.loads(sys.argv[1])
    source, sink = sys.stdin.buffer, sys.stdout.buffer
    sink.write(b"R")
    sink.flush()
    while True:
        head = source.read(32)
        if len(head) < 32:
            return
        html_size, base_size, max_chars, allowance = struct.unpack("<4Q", head)
        base = source.read(base_size).decode("utf-8", "replace") if base_size else None
        html = source.read(html_size).decode("utf-8", "replace")
        ceiling(allowance)
        try:
            text, status = convert(html, ConversionOptions(base_url=base, **options)).content or "", 0
        except ConversionError:
            text, status = "", 1
        del html
        if len(text) > max_chars:
            text, status = text[:max_chars], 2
        data = text.encode("utf-8", "replace")
        del text
        sink.write(struct.pack("<BQ", status, len(data)))
        sink.write(data)
        sink.flush()


main()
"""

_READY: Final = b"R"
# Bytes written to the child per drain (bounds the copy the pipe transport buffers).
_PIPE_CHUNK: Final = 65536
# A child that converted a page larger than this (UTF-8 bytes) is not kept: its heap may stay large.
# Every kept child's sandbox is sized for a page this large; a larger page gets a child of its own.
_REUSE_MAX_BYTES: Final = 2 << 20
# Processes in a converter's sandbox (bubblewrap's two and the child, or the launcher and the
# child); the child itself is single-threaded, so it can start nothing of its own.
_CHILD_PROCESSES: Final = 4
# Bytes of the child's stderr kept (head and tail), shown when it cannot start.
_CHILD_STDERR_BYTES: Final = 4096
# Address space for the interpreter, html_to_markdown and what a warm child's heap keeps.
_CHILD_BASE_BYTES: Final = 128 << 20
_UNAVAILABLE: Final = "no layer-2 sandbox can run the converter here"


class _CannotStart(Exception):
    """A converter child did not start (already logged)."""


@dataclass(eq=False, slots=True)
class _Child:
    """One sandboxed converter child, the page size its memory limit allows, its time so far."""

    process: SandboxedProcess
    pages_up_to: int
    busy_s: float = 0.0  # wall-clock seconds spent converting: a bound on a one-thread child's CPU time

    @property
    def pid(self) -> int:
        """The pid of the process spawned for it (bubblewrap, or the launcher)."""
        return self.process.pid


def sandbox_memory_bytes(page_bytes: int, configured: int = 0) -> int:
    """The memory limit of a converter child's sandbox that serves pages up to ``page_bytes``.

    ``RLIMIT_AS`` of every process in the sandbox (the hard limit under which the child sets its
    per-page ceiling), the memory cgroup of the whole sandbox where one is writable, and the size
    of bubblewrap's ``/tmp`` and ``/dev/shm``: 128 MiB for the interpreter, five bytes per byte of
    the page (its UTF-8 and its ``str`` in the child), plus the page's converter allowance
    (:data:`CONVERTER_MEMORY_FLOOR` + :data:`CONVERTER_MEMORY_PER_BYTE` per byte).

    Args:
        page_bytes: The largest page, in UTF-8 bytes.
        configured: ``STEERABLE_SANDBOX_MEMORY_BYTES`` (0: no limit); the result never exceeds it.

    Returns:
        Bytes.
    """
    need = (
        _CHILD_BASE_BYTES + 5 * page_bytes + CONVERTER_MEMORY_FLOOR + CONVERTER_MEMORY_PER_BYTE * page_bytes
    )
    return min(need, configured) if configured else need


@dataclass(frozen=True)
class Rendered:
    """What the model reads of a body, and whether the rendering shortened or changed it.

    Attributes:
        text: The decoded text or Markdown (or, when ``fallback`` is set, the page's text), at
            most ``max_chars`` characters.
        cut: The rendered text went past ``max_chars`` and was cut there.
        fallback: Why an HTML page is not Markdown (it fell back to :func:`text_from_html`), or
            ``None``.
        max_chars: The cut point, named in the marker.
    """

    text: str
    cut: bool = False
    fallback: str | None = None
    max_chars: int = 0

    @property
    def content(self) -> str:
        """``text``, after a line saying why it is not Markdown, before a line saying where it was cut."""
        content = self.text
        if self.fallback is not None:
            content = (
                f"[web_fetch: this page could not be converted to Markdown ({self.fallback}); "
                f"its text follows]\n\n{content}"
            )
        if self.cut:
            content += f"\n\n[web_fetch: cut at {self.max_chars} characters]"
        return content


def capped(text: str, max_chars: int, fallback: str | None = None) -> Rendered:
    if len(text) > max_chars:
        return Rendered(text[:max_chars], cut=True, fallback=fallback, max_chars=max_chars)
    return Rendered(text, fallback=fallback, max_chars=max_chars)


class HtmlConverter:
    """HTML to Markdown in a sandboxed child process held to a memory ceiling and the fetch deadline.

    docs/web-tools.md, ``web_fetch {url}`` (the Content and No sandbox paragraphs), has the child's
    policy, its memory ceiling and when a child is kept; docs/sandbox.md the backends. The backend is
    chosen once, off the event loop, by :func:`~steerable_agent_runtime.sandbox.select_backend`;
    with none (and not confined) no child starts and every page comes back as its text. A child that
    overran its ceiling, crashed or outlived the deadline is killed with its whole sandbox before
    :meth:`convert` returns. Call :meth:`aclose` when done.

    Args:
        keep_idle: How many finished children to keep for later conversions.
        sandbox: The sandbox settings (default: :meth:`SandboxConfig.from_env` of ``environ``);
            the container posture counts as ``auto`` here (it is ``bash``'s and ``run_code``'s).
        backend: Use this backend instead of selecting one (tests, embedders with their own).
        environ: Where the settings and the child's allowlisted environment come from (default
            ``os.environ``, read at each start).

    Raises:
        ConfigError: An invalid ``STEERABLE_SANDBOX*`` or ``STEERABLE_SIDECAR_CONFINED`` value (the
            message names it), when ``sandbox`` is not given.
    """

    def __init__(
        self,
        *,
        keep_idle: int = 1,
        sandbox: SandboxConfig | None = None,
        backend: SandboxBackend | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        config = SandboxConfig.from_env(environ) if sandbox is None else sandbox
        if config.container:  # that posture is bash's and run_code's: hostile HTML keeps a sandbox
            config = dataclasses.replace(config, backend="auto")
        self._config = config
        self._backend = backend
        self._spawner = SandboxSpawner(self._config, backend=backend, environ=environ)
        self._unavailable = False
        self._selecting = asyncio.Lock()
        self._idle: list[_Child] = []
        self._keep_idle = keep_idle
        self._closed = False
        self._warned = False

    @property
    def sandbox(self) -> SandboxInfo | None:
        """The sandbox the children run under (``bwrap``, ``full``...).

        ``None`` until the first conversion chose it, and when none can run.
        """
        return self._backend.info if self._backend is not None else None

    async def convert(self, html: str, *, base_url: str | None, max_chars: int, deadline: float) -> Rendered:
        """Convert ``html`` to Markdown within the bounds, or fall back to its text.

        Args:
            html: The decoded document (at most ``fetch_max_bytes`` characters from the fetcher).
            base_url: The page's URL, for relative links.
            max_chars: The most characters of Markdown kept; past it the text is cut (``cut``).
            deadline: ``loop.time()`` by which the conversion must end; the child is killed then.

        Returns:
            The Markdown (``cut`` when it went past ``max_chars``), or, when the converter refused
            the page, ran out of its memory ceiling, crashed, could not start, passed the deadline
            or has no sandbox to run in, :func:`text_from_html` of the page with ``fallback``
            saying why.
        """
        data = html.encode("utf-8", "replace")
        size = len(data)
        allowance = CONVERTER_MEMORY_FLOOR + CONVERTER_MEMORY_PER_BYTE * size
        child: _Child | None = None
        busy = 0.0
        try:
            async with asyncio.timeout_at(deadline):
                backend = await self._select()
                if backend is not None:
                    child = await self._take(backend, size)
                    busy = time.monotonic()
                    await _send(child.process, data, (base_url or "").encode(), max_chars, allowance)
                    del data  # only the page's text and the answer are held while the child works
                    status, answer = await _receive(child.process)
        except TimeoutError:
            await _stop(child)
            return await _fallback(html, "the conversion ran past the fetch deadline", max_chars)
        except _CannotStart:
            return await _fallback(html, "the converter could not start", max_chars)
        except (OSError, asyncio.IncompleteReadError):
            if child is None:  # failed before a child was there to take the page
                return await _fallback(html, "the converter could not start", max_chars)
            return await _fallback(html, await _died(child, size, allowance), max_chars)
        except BaseException:
            await _stop(child)
            raise
        if child is None:
            return await _fallback(html, _UNAVAILABLE, max_chars)
        child.busy_s += time.monotonic() - busy
        await self._give_back(child, reusable=size <= _REUSE_MAX_BYTES)
        if status == 1:
            return await _fallback(html, "the converter could not parse it", max_chars)
        return Rendered(answer.decode("utf-8", "replace"), cut=status == 2, max_chars=max_chars)

    async def aclose(self) -> None:
        """Stop the idle children (a conversion still running stops its child when it ends)."""
        self._closed = True
        idle, self._idle = self._idle, []
        for child in idle:
            await _stop(child)

    async def _select(self) -> SandboxBackend | None:
        """The backend, chosen on first use in a worker thread (its probes block); ``None``: none."""
        if self._backend is None and not self._unavailable:
            async with self._selecting:
                if self._backend is None and not self._unavailable:
                    try:
                        self._backend = await self._spawner.select()
                    except SandboxUnavailableError as exc:
                        self._unavailable = True
                        logger.warning(
                            "web_fetch's HTML converter runs only in a layer-2 sandbox, and none can run "
                            "here: HTML pages are returned as plain text. %s",
                            exc.message,
                        )
        return self._backend

    async def _take(self, backend: SandboxBackend, size: int) -> _Child:
        if size <= _REUSE_MAX_BYTES:
            while self._idle:
                child = self._idle.pop()
                if child.process.returncode is None:
                    return child
                await _stop(child)
        pages_up_to = max(size, _REUSE_MAX_BYTES)
        limits = ResourceLimits(
            cpu_seconds=self._config.limits.cpu_seconds,
            memory_bytes=sandbox_memory_bytes(pages_up_to, self._config.limits.memory_bytes),
            max_processes=_CHILD_PROCESSES,
            max_output_bytes=_CHILD_STDERR_BYTES,
        )
        # no writable root: the child may write only the run's private temporary directory
        policy = self._spawner.policy((), cwd=Path(os.path.abspath(os.sep)), network=False, limits=limits)
        argv = [sys.executable, "-P", "-c", _CHILD_SOURCE, json.dumps(MARKDOWN_OPTIONS)]
        try:
            process = await self._spawner.spawn(argv, policy, backend=backend, stdin=True, stdout="pipe")
        except (OSError, SandboxUnavailableError) as exc:
            self._warn(backend, str(exc))
            raise _CannotStart from exc
        try:
            assert process.stdout is not None
            ready = await process.stdout.readexactly(len(_READY))
        except asyncio.IncompleteReadError:
            ready = b""
        except BaseException:
            await process.close()
            raise
        if ready != _READY:
            self._warn(backend, await _why_not_started(process))
            raise _CannotStart
        return _Child(process, pages_up_to)

    async def _give_back(self, child: _Child, *, reusable: bool) -> None:
        cpu = self._config.limits.cpu_seconds
        if (
            reusable
            and not self._closed
            and len(self._idle) < self._keep_idle
            and (not cpu or child.busy_s < cpu / 2)
        ):
            self._idle.append(child)
        else:
            await _stop(child)

    def _warn(self, backend: SandboxBackend, why: str) -> None:
        if not self._warned:
            self._warned = True
            logger.warning(
                "web_fetch cannot start its HTML converter (%s -P -c ... under %s): %s; HTML pages are "
                "returned as plain text",
                sys.executable,
                backend.info.backend,
                why,
            )


async def _why_not_started(process: SandboxedProcess) -> str:
    """Reap a child that ended (or answered wrongly) before it was ready; its exit status and stderr."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(process.wait(), 1.0)
    process.kill()
    run = await process.finish()
    await process.close()
    said = run.stderr.text.strip().replace("\n", " | ")
    return f"exit status {run.exit_code}" + (f", stderr: {said}" if said else "")


async def _send(process: SandboxedProcess, data: bytes, base: bytes, max_chars: int, allowance: int) -> None:
    """Send one request to a converter child, :data:`_PIPE_CHUNK` bytes at a time."""
    stdin = process.stdin
    assert stdin is not None
    stdin.write(struct.pack("<4Q", len(data), len(base), max_chars, allowance) + base)
    with memoryview(data) as view:
        for start in range(0, len(view), _PIPE_CHUNK):
            stdin.write(view[start : start + _PIPE_CHUNK])
            await stdin.drain()
    await stdin.drain()


async def _receive(process: SandboxedProcess) -> tuple[int, bytearray]:
    """Read a converter child's answer: ``(status, UTF-8 text)``, into one buffer."""
    stdout = process.stdout
    assert stdout is not None
    status, size = struct.unpack("<BQ", await stdout.readexactly(9))
    answer = bytearray()
    while len(answer) < size:
        chunk = await stdout.read(min(size - len(answer), _PIPE_CHUNK))
        if not chunk:
            raise asyncio.IncompleteReadError(bytes(answer), size)
        answer += chunk
    return int(status), answer


async def _stop(child: _Child | None) -> None:
    """Kill a converter child's sandbox (if it still runs), reap it and clean up after it."""
    if child is not None:
        await child.process.close()


async def _died(child: _Child, size: int, allowance: int) -> str:
    """Reap a child that stopped mid-conversion; the reason shown to the model."""
    await _stop(child)
    logger.info(
        "web_fetch's HTML converter stopped (exit status %s%s) on a %d-byte page; returning the page's text",
        child.process.returncode,
        ", over its sandbox's memory limit" if child.process.memory_exceeded else "",
        size,
    )
    return (
        f"the converter stopped before finishing: a {size}-byte page may use at most "
        f"{allowance >> 20} MB of converter memory"
    )


async def _fallback(html: str, why: str, max_chars: int) -> Rendered:
    """:func:`text_from_html` of the page (in a worker thread), cut at ``max_chars``."""
    return capped(await asyncio.to_thread(text_from_html, html), max_chars, why)
