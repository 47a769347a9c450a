"""``CallContext``: what dispatch tells a tool about the call it runs, and the executor protocol.

The one object per call that passes down the executor chain (``AgentLoop`` -> ``ApprovalGate`` ->
``ToolRouter.dispatch``) and into a tool that asks for it, the way pydantic-ai's ``RunContext`` and
the MCP SDK's ``Context`` are handed to tools: it carries the call, the executor chain running it,
cancellation and an output sink. A tool opts in with a parameter annotated
``CallContext``: dispatch passes the context there, and the parameter is not part of the tool's
JSON Schema (the model never sees it, and cannot send it)::

    @tool(router=router)
    async def build(target: str, context: CallContext) -> str:
        await context.send_output(f"building {target}")
        return "built"

Spec: ToolCall ("new per-call metadata should go through the harness's TraceSpan.attrs, not into
ToolCall"): :attr:`CallContext.attrs` lands in the call's ``TraceSpan.attrs`` (as
:meth:`CallContext.trace_attrs` gives it; docs/runtime.md, "The call context").
"""

from __future__ import annotations

import inspect
import json
import logging
import re
import threading
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Protocol

from ._utf8 import utf8_safe
from .errors import UserError

if TYPE_CHECKING:  # annotations only: a tool module asking for a CallContext loads no pydantic
    from .spill import SpillHooks
    from .types import ToolCall, ToolResult

__all__ = [
    "OUTPUT_TAIL_BYTES",
    "OUTPUT_TAIL_LINES",
    "CallContext",
    "OutputSink",
    "TerminalHost",
    "ToolExecutor",
    "context_keyword",
    "output_gap",
    "output_tail",
    "plain_output",
    "strip_controls",
    "unfinished_escape",
]

logger = logging.getLogger(__name__)


class ToolExecutor(Protocol):
    """Runs one call; answers with a result (a failed one for bad input), never raises for it.

    ``context`` is the call's :class:`CallContext` (``None``: the innermost dispatch makes one);
    a wrapper passes it on to the executor it wraps. A one-argument executor
    (``async def ex(call) -> ToolResult``, the older shape) still works where an executor is
    taken (``AgentLoop``, ``ApprovalGate``): it is adapted once, when they are built; it does not
    see the call's context (docs/agent-loop.md).
    """

    def __call__(self, call: ToolCall, context: CallContext | None = None, /) -> Awaitable[ToolResult]:
        """Run ``call`` and return its result."""
        ...


OutputSink = Callable[[str], Awaitable[None] | None]
"""Receives one chunk of a running call's output (text, as the tool produced it); sync or async.

Chunks are increments: each holds output the earlier ones did not (``bash`` sends what its command
printed since its last chunk, at most one chunk every half second, clipped by :func:`output_tail`
with a line saying how much was left out). A sink that shows "the output so far" keeps the tail of
their concatenation itself (``steerable acp``: docs/acp.md, "A prompt turn").
"""


class TerminalHost(Protocol):
    """A terminal the user watches that can run a command line for a call (an ACP editor's).

    ``bash`` hands its sandboxed command line to it (``docs/acp.md``, "Terminals"): the words are
    the sandbox's own start (every confinement is in them, none in an inherited descriptor), so
    the terminal only shows what runs; steerable still watches, times out and stops the command.
    """

    async def open(self, command: str, args: Sequence[str], *, cwd: str) -> str:
        """Start ``command`` with ``args`` in ``cwd`` in a new terminal shown with the call; its id.

        Raises:
            Exception: The terminal could not be made (the caller runs the command itself).
        """
        ...

    async def close(self, terminal_id: str, *, ran: bool) -> None:
        """Stop what still runs there and let the terminal go.

        ``ran``: the command ran there (it stays shown with the call); ``False``: it never started
        there, and the caller runs it itself.
        """
        ...


OUTPUT_TAIL_LINES: Final = 20
"""The most lines :func:`output_tail` keeps by default (what one live-output message shows)."""

OUTPUT_TAIL_BYTES: Final = 2048
"""The most UTF-8 bytes :func:`output_tail` keeps by default."""


@dataclass(slots=True, eq=False)
class CallContext:
    """One tool call as it runs: the call, the executor chain running it, where its output goes.

    Attributes:
        call: The call being run (its id included).
        executor: The live executor chain running this call (approval, host forwarding), set by
            the agent loop; a tool that makes calls of its own (``run_code``) sends them through it,
            so they are approved and forwarded exactly like the model's own calls. ``None`` when no
            agent loop runs the call (a host's ``tool.invoke``, ``steerable mcp``/``call``/
            ``session``): such a tool uses its own router and fails closed on calls that need
            consent. ``steerable mcp`` with a client that can be asked sets one of its own: the
            connection's ``web_fetch`` question (SAFE-4), ``local`` calls still refused.
        output: Where :meth:`send_output` chunks go (the MCP server's progress notifications), or
            ``None``: nobody watches.
        attrs: Free-form per-call metadata for the call's ``TraceSpan.attrs`` (the sidecar's
            ``tool.invoke`` ``context``, anything a tool notes). The span's own fields (``mode``,
            ``tier``, ``outcome``, ``approved``...) are never taken from here, and a value JSON
            cannot encode is shown as its ``repr`` (see :meth:`trace_attrs`).
        spill: The run's :class:`~steerable_agent_runtime.spill.SpillHooks`, set by the agent loop
            that has one, for a tool with a tighter bound of its own (:meth:`spill_data`); ``None``
            where nothing stores spills (a host's ``tool.invoke``, ``steerable mcp``/``call``/
            ``session``, a ``run_code`` program's calls).
        terminal: A terminal of the user's where ``bash`` runs its command (``steerable acp
            --editor-terminal`` with an editor that has terminals), or ``None``: it runs its own.
    """

    call: ToolCall
    executor: ToolExecutor | None = None
    output: OutputSink | None = None
    attrs: dict[str, Any] = field(default_factory=dict)
    spill: SpillHooks | None = None
    terminal: TerminalHost | None = None
    _stopped: threading.Event = field(default_factory=threading.Event, init=False, repr=False)
    _approved: bool | None = field(default=None, init=False, repr=False)
    _sealed: bool = field(default=False, init=False, repr=False)
    _spilled: bool = field(default=False, init=False, repr=False)

    @property
    def spilled(self) -> bool:
        """``True`` once :meth:`spill_data` stored this call's data (the span's ``spilled``)."""
        return self._spilled

    async def spill_data(self, result: ToolResult, *, threshold_bytes: int) -> ToolResult | None:
        """Hand ``result``'s ``data`` to the run's spill store when it is larger than ``threshold_bytes``.

        For a tool whose own bound is tighter than the run's (MCP results, SAFE-5): the whole goes
        to :attr:`spill` and the model gets a preview and a ``spill://`` locator, as for any
        spilled result.

        Args:
            result: The tool's result.
            threshold_bytes: Spill when ``data`` as UTF-8 JSON is longer than this many bytes.

        Returns:
            ``None`` when :attr:`spill` is ``None`` (the tool bounds the result itself); else the
            result as ``SpillHooks.apply`` gives it: the same object when small enough.

        Raises:
            OSError: The spill store could not hold it (a full disk).
        """
        if self.spill is None:
            return None
        spilled = await self.spill.apply(self.call, result, threshold_bytes=threshold_bytes)
        self._spilled = self._spilled or spilled is not result
        return spilled

    @property
    def approved(self) -> bool | None:
        """The consent decision for this call: ``True``/``False`` when a prompt ran, else ``None``.

        Only the executor chain records it (:meth:`record_approval`, before the tool runs), so a
        tool cannot forge its own consent; it lands in the span as ``approved``.
        """
        return self._approved

    def record_approval(self, approved: bool) -> None:
        """Record the consent decision (the :class:`~steerable_agent_runtime.executor.ApprovalGate` does).

        Raises:
            UserError: Once the call's tool has started (:meth:`seal`): a tool does not decide
                its own consent.
        """
        if self._sealed:
            raise UserError(f"the consent decision of {self.call.name} is the executor chain's to record")
        self._approved = approved

    def seal(self) -> None:
        """Close :meth:`record_approval`: dispatch calls it right before the tool runs."""
        self._sealed = True

    def trace_attrs(self, fixed: Collection[str] = ()) -> dict[str, Any]:
        """:attr:`attrs` as they land in a ``TraceSpan``: JSON-ready, never a crash.

        Args:
            fixed: The span's own field names (``mode``, ``approved``...): such keys are left
                out, so a tool can neither overwrite nor fake them.

        Returns:
            A new dict with string keys (another key becomes its ``str``); a value ``json`` cannot
            encode (a set, an object, a cycle; also nested inside a list or dict) is replaced by its
            ``repr``, so the durable record can always be written.
        """
        noted = {(k if isinstance(k, str) else str(k)): v for k, v in list(self.attrs.items())}
        return {k: _json_ready(v) for k, v in noted.items() if k not in fixed}

    @property
    def cancelled(self) -> bool:
        """``True`` once the call was cancelled or ran past its timeout (thread-safe).

        An async tool gets ``CancelledError`` at its next ``await`` anyway; a sync tool runs in a
        worker thread that nothing can interrupt, and checks this to stop early.
        """
        return self._stopped.is_set()

    def cancel(self) -> None:
        """Mark the call cancelled (dispatch does, when the call's task is cancelled or times out)."""
        self._stopped.set()

    async def send_output(self, text: str) -> None:
        """Stream one chunk of output while the call runs; nothing happens without a sink.

        The chunk is not part of the result: return what the model should see. A lone surrogate
        in it reaches the sink as U+FFFD, as in a result (``ToolResult.to_wire``), so every
        transport sends strict UTF-8 JSON. Best effort: a sink that fails (a client gone) is
        logged, never raised into the tool.
        """
        sink = self.output
        if sink is not None:
            try:
                await _settled(sink(utf8_safe(text)))
            except Exception:
                logger.exception("the output sink of %s failed", self.call.name)


def context_keyword(parameters: Mapping[str, Any]) -> str:
    """The keyword a schema-given tool's handler gets its :class:`CallContext` under.

    For ``Tool.from_schema(..., context_param=...)`` (host tools, MCP tools): ``_context``, with
    ``_`` added until it is not one of the schema's ``properties``.

    Args:
        parameters: The tool's JSON Schema.

    Returns:
        A keyword that names no argument.
    """
    properties = parameters.get("properties")
    key = "_context"
    while isinstance(properties, Mapping) and key in properties:
        key += "_"
    return key


def output_tail(
    text: str,
    *,
    max_lines: int = OUTPUT_TAIL_LINES,
    max_bytes: int = OUTPUT_TAIL_BYTES,
    dropped_bytes: int = 0,
) -> str:
    """The end of ``text`` that fits ``max_lines`` lines and ``max_bytes`` UTF-8 bytes, for a live view.

    Cut at a line boundary where the kept part holds one (else inside the line, never inside a
    character); when anything was left out, a first line says how much:
    ``[... 1234 bytes not shown]``.

    Args:
        text: The output (a lone surrogate counts as one byte: ``?``).
        max_lines: Lines kept at most (a last line without its newline counts as one).
        max_bytes: UTF-8 bytes kept at most, the marker line aside.
        dropped_bytes: Bytes the caller already left out before ``text`` (added to the marker).

    Returns:
        ``text`` itself when it fits and nothing was dropped before it.
    """
    encoded = text.encode("utf-8", "replace")
    kept = (
        text if len(encoded) <= max_bytes else encoded[len(encoded) - max_bytes :].decode("utf-8", "ignore")
    )
    if len(kept) < len(text):
        newline = kept.find("\n")
        if 0 <= newline < len(kept) - 1:  # a partial first line goes when a whole one follows
            kept = kept[newline + 1 :]
    lines = kept.split("\n")
    whole = len(lines) - (1 if lines[-1] == "" else 0)
    if whole > max_lines:
        kept = "\n".join(lines[whole - max_lines :])
    dropped = dropped_bytes + (len(encoded) - len(kept.encode("utf-8", "replace")) if kept is not text else 0)
    if dropped <= 0:
        return kept
    return f"[... {dropped} bytes not shown]\n{kept}"


_GAP: Final = re.compile(r"\[\.\.\. (\d+) bytes not shown\]\n")


def output_gap(chunk: str) -> tuple[int, str]:
    """The bytes a chunk's first line says were left out before it (:func:`output_tail`'s), and the rest.

    Returns:
        ``(0, chunk)`` when ``chunk`` does not start with such a line.
    """
    gap = _GAP.match(chunk)
    return (int(gap[1]), chunk[gap.end() :]) if gap else (0, chunk)


_ESCAPE: Final = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"  # CSI: colours, cursor moves (its final byte may be missing)
    # OSC (hyperlinks, clipboard writes), DCS, APC...: to BEL or ST, or the line's end
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d-\x9f])[^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[ -/]*[0-~]?"  # any other escape sequence (ESC ( B, ESC 7), a lone ESC
)
_UNFINISHED: Final = re.compile(
    r"(?:\x1b(?:\[[0-?]*[ -/]*|[\]PX^_][^\x07\x1b\x9c\n]*|[ -/]*)|\x9b[0-?]*[ -/]*"
    r"|[\x90\x98\x9d-\x9f][^\x07\x1b\x9c\n]*)\Z"
)
_CONTROL: Final = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")  # all but \t, \n and \r


def strip_controls(text: str) -> str:
    r"""``text`` without terminal escape sequences (CSI, OSC...) and control characters but ``\t\n\r``."""
    return _CONTROL.sub("", _ESCAPE.sub("", text))


def unfinished_escape(text: str) -> int:
    """Where an escape sequence that ``text``'s end cuts short starts (``len(text)``: none does).

    For a stream: hold that part back until the next piece completes (or ends) it.
    """
    found = _UNFINISHED.search(text, text.rfind("\n") + 1)
    return found.start() if found else len(text)


def plain_output(text: str, *, more: bool = False) -> str:
    r"""``text`` as a terminal shows it, for a host: no control sequence, each line's last overwrite.

    :func:`strip_controls`, then a line rewritten after a bare ``\r`` (a progress bar) keeps what
    was written last (``\r\n`` ends a line). For what a person is shown (a live view, the text
    ``steerable acp`` shows of a finished call): the result the model gets never passes through this.

    Args:
        text: Output as a command printed it.
        more: ``text`` is a stream's latest end: a ``\r`` ending it stays, so that what comes
            next overwrites its last line.
    """
    text = strip_controls(text)
    if "\r" not in text:
        return text
    lines = [_last_written(line) for line in text.split("\n")]
    if more and text.endswith("\r"):
        lines[-1] += "\r"
    return "\n".join(lines)


def _last_written(line: str) -> str:
    r"""What shows of ``line`` after its ``\r``s: its last non-empty part."""
    written = [part for part in line.split("\r") if part]
    return written[-1] if written else ""


def _json_ready(value: Any) -> Any:
    """``value`` itself when ``json`` encodes it, else its ``repr`` (or its type, when even that fails)."""
    try:
        json.dumps(value)
    except (TypeError, ValueError, RecursionError):
        pass
    else:
        return value
    try:
        return repr(value)
    except Exception:  # a broken __repr__, or nesting too deep even for repr
        return f"<{type(value).__name__}>"


async def _settled(value: object) -> None:
    """Await ``value`` when a sink answered with an awaitable (sinks may be sync or async)."""
    if inspect.isawaitable(value):
        await value
