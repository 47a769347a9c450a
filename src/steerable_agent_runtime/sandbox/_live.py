"""A running command's output as it comes, for ``CallContext.send_output``: coalesced, bounded, UTF-8.

The runner hands every chunk it reads from the command's stdout and stderr to
:meth:`LiveOutput.feed` (synchronous: it never waits for anyone, and keeps only the last
``max_bytes`` of what was not sent yet), and :meth:`LiveOutput.pump` sends what arrived: the first
output at once, then at most one chunk every ``interval_s``, each the tail of what arrived since
the last one (:func:`~steerable_agent_runtime.context.output_tail`: ``max_lines`` lines,
``max_bytes`` bytes, with a line saying how much was left out). A slow consumer only makes the
pump wait; the command and its capture go on, and what piles up meanwhile is clipped to its tail.
Chunks end at a line end; a line that has not ended after ``interval_s`` is sent as far as it goes.
Each stream is decoded on its own, so a character split across two reads (or interleaved with the
other stream) arrives whole, and bytes that are no UTF-8 become U+FFFD. The result is not touched:
``bash`` captures its output as before (docs/sandbox.md, "The bash tool").
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import logging
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Final

from ..context import OUTPUT_TAIL_BYTES, OUTPUT_TAIL_LINES, CallContext, output_tail
from ._output import OutputObserver

__all__ = ["LIVE_INTERVAL_S", "LiveOutput", "live_output"]

logger = logging.getLogger(__name__)

LIVE_INTERVAL_S: Final = 0.5
"""The shortest time between two chunks of a command's live output."""

_UTF8 = codecs.getincrementaldecoder("utf-8")


class LiveOutput:
    """Coalesces a command's stdout and stderr into bounded text chunks (see the module docstring).

    Args:
        send: Where chunks go (``context.send_output``); awaited by :meth:`pump` alone.
        interval_s: The shortest time between two chunks.
        max_lines: Lines per chunk at most.
        max_bytes: UTF-8 bytes per chunk at most (the marker line aside); also what is kept of the
            output not sent yet.
    """

    def __init__(
        self,
        send: Callable[[str], Awaitable[None]],
        *,
        interval_s: float = LIVE_INTERVAL_S,
        max_lines: int = OUTPUT_TAIL_LINES,
        max_bytes: int = OUTPUT_TAIL_BYTES,
    ) -> None:
        self._send = send
        self._interval_s = interval_s
        self._max_lines = max_lines
        self._max_bytes = max_bytes
        self._decoders: dict[str, codecs.IncrementalDecoder] = {}
        self._pending: deque[tuple[str, int]] = deque()  # (text, the bytes it came from), oldest first
        self._pending_bytes = 0
        self._dropped = 0  # bytes left out of the pending output since the last chunk
        self._partial_since: float | None = None  # when the unsent start of a line arrived
        self._arrived = asyncio.Event()
        self.sent = 0
        """How many chunks went out."""

    def feed(self, stream: str, chunk: bytes) -> None:
        """Take one read of ``stream`` (``stdout`` or ``stderr``); returns at once."""
        if not chunk:
            return
        decoder = self._decoders.get(stream)
        if decoder is None:
            decoder = self._decoders[stream] = _UTF8(errors="replace")
        if len(chunk) > self._max_bytes:  # only its tail can be shown: decode no more than that
            self._dropped += self._pending_bytes + len(chunk) - self._max_bytes
            self._pending.clear()
            self._pending_bytes = 0
            chunk = chunk[len(chunk) - self._max_bytes :]
            decoder.reset()
            lead = 0
            while lead < min(3, len(chunk)) and 0x80 <= chunk[lead] < 0xC0:  # the rest of a character
                lead += 1
            self._dropped += lead
            chunk = chunk[lead:]
        self._pending.append((decoder.decode(chunk), len(chunk)))
        self._pending_bytes += len(chunk)
        while len(self._pending) > 1 and self._pending_bytes - self._pending[0][1] >= self._max_bytes:
            _, size = self._pending.popleft()
            self._pending_bytes -= size
            self._dropped += size
        self._arrived.set()

    def _take(self, now: float) -> tuple[str | None, float | None]:
        """The next chunk, or ``None`` and how long until the unended line may go (``None``: no output)."""
        text = "".join(part for part, _ in self._pending)
        if not text and not self._dropped:
            return None, None
        cut = text.rfind("\n") + 1
        if cut == 0:  # only the start of a line: it gets one interval to end
            if self._partial_since is None:
                self._partial_since = now
            waited = now - self._partial_since
            if waited < self._interval_s and self._pending_bytes < self._max_bytes:
                return None, self._interval_s - waited
            cut = len(text)
        rest = text[cut:]
        self._pending.clear()
        self._pending_bytes = 0
        if rest:
            size = len(rest.encode("utf-8", "replace"))
            self._pending.append((rest, size))
            self._pending_bytes = size
        self._partial_since = now if rest else None
        shown = output_tail(
            text[:cut], max_lines=self._max_lines, max_bytes=self._max_bytes, dropped_bytes=self._dropped
        )
        self._dropped = 0
        return shown, None

    async def pump(self) -> None:
        """Send chunks until cancelled (the command ended); the first output goes at once."""
        loop = asyncio.get_running_loop()
        while True:
            await self._arrived.wait()
            self._arrived.clear()
            shown, retry_s = self._take(loop.time())
            if shown is None:
                if retry_s is not None:  # the line may end meanwhile; look again either way
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._arrived.wait(), retry_s)
                    self._arrived.set()
                continue
            await self._send(shown)
            self.sent += 1
            await asyncio.sleep(self._interval_s)


@contextlib.asynccontextmanager
async def live_output(context: CallContext | None) -> AsyncIterator[OutputObserver | None]:
    """A :class:`LiveOutput` pumping into ``context``'s output while the block runs.

    Yields its :meth:`~LiveOutput.feed`, for the runner; ``None`` (nothing is decoded or sent)
    when nobody watches (no context, or one without an output sink). Leaving stops the pump: what
    arrived after its last chunk is not sent (the call's result has it all).
    """
    if context is None or context.output is None:
        yield None
        return
    live = LiveOutput(context.send_output)
    pump = asyncio.create_task(live.pump(), name=f"live-output-{context.call.name}")
    try:
        yield live.feed
    finally:
        pump.cancel()
        await asyncio.gather(pump, return_exceptions=True)
        logger.debug("%s: %d live output chunks sent", context.call.name, live.sent)
