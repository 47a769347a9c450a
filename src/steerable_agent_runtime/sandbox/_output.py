"""What a sandboxed run gives back: captured output clipped to a byte cap, and the run's result."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from ._backend import SandboxInfo

__all__ = [
    "PIPE_LIMIT_BYTES",
    "READ_CHUNK",
    "CapturedOutput",
    "Clip",
    "OutputObserver",
    "RunResult",
    "captured",
]

PIPE_LIMIT_BYTES: Final = 16 * 1024 * 1024
"""Longest line ``SandboxedProcess.stdout.readline()`` accepts in ``stdout="pipe"`` mode (16 MiB)."""

READ_CHUNK: Final = 64 * 1024

OutputObserver = Callable[[str, bytes], None]
"""Sees each read of a captured stream as it comes (``"stdout"`` or ``"stderr"``, the bytes).

Called on the event loop by the reader: it must return at once (``LiveOutput.feed``).
"""


@dataclass(frozen=True, slots=True)
class CapturedOutput:
    """One captured stream, clipped to a byte cap.

    Attributes:
        text: The output decoded as UTF-8 (invalid bytes replaced). When clipped, the head and the
            tail are kept and the middle is replaced by a marker line naming how much was left out.
        total_bytes: How many bytes the stream produced in all.
        kept_bytes: How many of them ``text`` holds.
    """

    text: str
    total_bytes: int
    kept_bytes: int

    @property
    def clipped(self) -> bool:
        """Whether bytes were left out."""
        return self.total_bytes > self.kept_bytes


class Clip:
    """Keep the first and last ``cap // 2`` bytes of a stream, count the rest."""

    def __init__(self, cap: int) -> None:
        self.head_cap = cap - cap // 2
        self.tail_cap = cap // 2
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.head_cap - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk and self.tail_cap:
            self.tail += chunk
            if len(self.tail) > 2 * self.tail_cap:  # trim now and then, not on every chunk
                del self.tail[: len(self.tail) - self.tail_cap]

    def result(self) -> CapturedOutput:
        tail = bytes(self.tail[-self.tail_cap :]) if self.tail_cap else b""
        return captured(bytes(self.head), tail, self.total)


def captured(head: bytes, tail: bytes, total: int) -> CapturedOutput:
    """A stream kept as its ``head`` and ``tail`` out of ``total`` bytes (what :class:`Clip` keeps)."""
    kept = len(head) + len(tail)
    text = head.decode("utf-8", "replace")
    if total > kept:
        text += f"\n[... {total - kept} bytes clipped; {total} bytes in total ...]\n"
    return CapturedOutput(text + tail.decode("utf-8", "replace"), total, kept)


@dataclass(frozen=True, slots=True)
class RunResult:
    """How a sandboxed run ended.

    Attributes:
        exit_code: The command's exit status (``128 + n`` when signal ``n`` killed it; 125 when
            the sandbox could not be set up and the command never ran); ``None`` when the run
            was stopped (timed out) before the command exited on its own.
        timed_out: The wall-clock deadline passed and the process tree was killed.
        stdout: Captured stdout (empty in ``stdout="pipe"`` mode: the caller read it).
        stderr: Captured stderr.
        duration_ms: Wall-clock time from spawn to exit, milliseconds.
        sandbox: The backend it ran under (``sandbox.as_data()`` is ``data._sandbox``).
        memory_exceeded: The kernel's OOM killer killed a process of the run (counted in the
            run's own memory cgroup: the tree went over ``memory_bytes`` together); the rest of
            the tree was then killed, unless it had already ended by itself (on cgroup v1 the
            kernel kills one process, the runner the others: a shell may still report the
            ``SIGKILL`` and exit first, with its own status). Always ``False`` without a memory
            cgroup (the per-process ``RLIMIT_AS`` shows as ``MemoryError`` / ``ENOMEM`` in the
            command instead).
    """

    exit_code: int | None
    timed_out: bool
    stdout: CapturedOutput
    stderr: CapturedOutput
    duration_ms: float
    sandbox: SandboxInfo
    memory_exceeded: bool = False
