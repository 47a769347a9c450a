"""One session assembly for every front end: the record, the spill store, the read state, the loop.

The sidecar's chat (``agent.chat.stream``), the headless run (``steerable run``) and ``steerable
acp`` (:mod:`steerable_sidecar.acp._agent`) put a session together the same way:
:func:`open_session` opens the durable record
(``<state>/sessions/<id>.jsonl``) and the spill store (``<state>/sessions/<id>.spill``) and loads the
history in a worker thread (no blocking I/O on the event loop); :func:`assemble_loop` registers
``read_spilled``, seeds the read state from the history on a resume (spec: File tools, "resume
re-seeds it from the durable record"), puts the consent gate in front of the router
(``docs/runtime.md``, Consent) and builds the :class:`AgentLoop`. A front end supplies only its
:class:`Transport`: how it asks for consent, where progress events and trace spans go, where a
resume's read state goes.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from steerable_agent_runtime import (
    DEFAULT_MAX_ROUNDS,
    AgentLoop,
    ApprovalGate,
    ApprovalHandler,
    ConsentPolicy,
    ConsentQuestions,
    DurableRecord,
    LLMProvider,
    SpillHooks,
    ToolExecutor,
    ToolRouter,
    TraceSink,
    read_file_state_from_messages,
)
from steerable_agent_runtime.llm import Message
from steerable_agent_runtime.loop import EventSink

__all__ = ["LoopOptions", "OpenSession", "ReadStateSink", "Transport", "assemble_loop", "open_session"]

ReadStateSink = Callable[[dict[str, str]], Awaitable[None] | None]
"""Takes a resumed session's rebuilt read state (``{path: version}``): the local workspace's
``state.seed``, or the host's ``read_state.seed`` when the host owns the file tools."""


@dataclass(frozen=True, slots=True)
class Transport:
    """What a front end supplies to :func:`assemble_loop`; the rest is assembled the same way.

    Attributes:
        approve: Asks for consent for a ``local`` call (the host's ``approval.request``,
            :func:`~steerable_agent_runtime.approve_all` for a jailed run, an ACP permission
            request); ``None``: nobody can be asked, such calls are refused (``consent_required``).
        on_event: Receives the loop's progress events (see ``docs/agent-loop.md``).
        trace: Receives one ``TraceSpan`` per tool call.
        read_state: Where a resume's read state goes (``None``: nowhere, one fewer CAS check).
        executor: Runs the calls instead of the consent gate over the router, for tools whose
            consent the host owns (the sidecar's ``toolsViaHost``); ``None`` gates the router.
        wrap: Wraps the executor the run uses (gate or ``executor``): ``steerable acp`` shows each
            call running and the diff an edit made around it; ``None`` leaves it as it is.
        questions: The session's questions about calls their mode lets run, put to ``approve``
            by the gate: a person-facing front end passes its session's ``FetchConsent`` (the
            first ``web_fetch`` of each host, SAFE-4); ``None`` (headless): none.
        consent: Which modes ask and which are refused (the session's policy, or a callable giving
            the current one: an ACP session's mode); ``None``: the spec's table (``local`` asks).
    """

    approve: ApprovalHandler | None = None
    on_event: EventSink | None = None
    trace: TraceSink | None = None
    read_state: ReadStateSink | None = None
    executor: ToolExecutor | None = None
    wrap: Callable[[ToolExecutor], ToolExecutor] | None = None
    questions: ConsentQuestions | None = None
    consent: ConsentPolicy | Callable[[], ConsentPolicy] | None = None


@dataclass(frozen=True, slots=True)
class LoopOptions:
    """How one run goes (``max_rounds`` model calls; a deadline per model call in milliseconds)."""

    max_rounds: int = DEFAULT_MAX_ROUNDS
    model: str | None = None
    model_timeout_ms: int | None = 600_000


@dataclass(frozen=True, slots=True)
class OpenSession:
    """A session's durable pieces, opened; ``history`` is what the record held (``[]``: a new one)."""

    id: str
    record: DurableRecord
    spill: SpillHooks
    history: list[Message]

    def opening(self, system: str | None, messages: Sequence[Message]) -> list[Message]:
        """The new messages of this run: ``system`` first on a new session only, then ``messages``."""
        first: list[Message] = [{"role": "system", "content": system}] if system and not self.history else []
        return [*first, *messages]


async def open_session(state_dir: Path, session_id: str) -> OpenSession:
    """Open ``session_id``'s record and spill store under ``state_dir / "sessions"``.

    The record is read in a worker thread, once: the read state of a resume comes from the same
    history (:func:`assemble_loop`).

    Raises:
        UserError: ``session_id`` is not a safe file name.
        OSError: The record exists but cannot be read.
    """
    sessions = state_dir / "sessions"
    record = DurableRecord.for_session(sessions, session_id)
    history = await asyncio.to_thread(_history, record)
    return OpenSession(session_id, record, SpillHooks(sessions / f"{session_id}.spill"), history)


def _history(record: DurableRecord) -> list[Message]:
    return record.messages() if record.exists() else []


async def assemble_loop(
    session: OpenSession,
    provider: LLMProvider,
    router: ToolRouter,
    *,
    transport: Transport,
    offered: Callable[[], Sequence[Mapping[str, Any]]] | None = None,
    options: LoopOptions | None = None,
) -> AgentLoop:
    """Build the run's loop over ``router``; on a resume, hand the read state to ``transport``.

    Args:
        session: From :func:`open_session`.
        provider: The model.
        router: The run's tools; ``read_spilled`` is registered on it here.
        transport: The front end's side (see :class:`Transport`).
        offered: The harness's offered list (``AssembledHarness.offered``); default the direct tier.
        options: Rounds and deadlines (default :class:`LoopOptions`).

    Returns:
        The loop, not started: ``await loop.run(session.history, prompt)``.
    """
    opts = options if options is not None else LoopOptions()
    session.spill.register(router)
    if session.history and transport.read_state is not None:
        seeded = transport.read_state(read_file_state_from_messages(session.history))
        if inspect.isawaitable(seeded):
            await seeded
    executor = transport.executor
    if executor is None:
        executor = ApprovalGate.for_router(
            router, approve=transport.approve, questions=transport.questions, policy=transport.consent
        )
    if transport.wrap is not None:
        executor = transport.wrap(executor)
    return AgentLoop(
        provider,
        router,
        executor=executor,
        offered=offered,
        max_rounds=opts.max_rounds,
        record=session.record,
        spill=session.spill,
        trace=transport.trace,
        on_event=transport.on_event,
        model=opts.model,
        model_timeout_ms=opts.model_timeout_ms,
    )
