"""The agent loop: messages -> model -> tool calls -> executor -> tool messages -> repeat.

Spec: Completion semantics. Every call of a model turn runs concurrently and every result is
recorded, in the model's order, before a terminal result (``is_terminal_result``) ends the run; a
turn without tool calls completes it. The rules beyond the spec (ENV-8: unique call ids, calls
whose arguments are not a JSON object, the durable record, spills, trace spans, cancelling) are in
docs/agent-loop.md, "Batches of parallel calls" through "Progress events".
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

from ._codes import ToolErrorCode
from ._executor_shape import AnyExecutor, taking_context
from ._outcome import DEFAULT_MAX_ROUNDS as DEFAULT_MAX_ROUNDS  # public here, defined there
from ._outcome import RunOutcome
from ._results import timed_out_result
from .context import CallContext, ToolExecutor
from .errors import ProviderError, UserError
from .finish import finish_kind, finish_problem
from .llm import (
    ChatRequest,
    ChatResponse,
    InvalidToolCall,
    LLMProvider,
    Message,
    ReasoningDelta,
    ResponseComplete,
    TextDelta,
    Usage,
)
from .record import DurableRecord
from .spill import SpillHooks
from .tools import ToolRouter
from .trace import TraceSink, TraceSpan
from .types import ToolCall, ToolResult, is_terminal_result, new_call_id

__all__ = [
    "INTERRUPTED_RESULT",
    "AgentLoop",
    "EventSink",
    "LoopEvent",
    "RunOutcome",
    "RunSummary",
    "tool_message",
]

logger = logging.getLogger(__name__)

LoopEvent = dict[str, Any]
"""A progress event, JSON-ready: ``{"type": "round" | "reasoning" | "text" | "assistant" |
"tool_call" | "tool_result" | "done", ...}`` (see :class:`AgentLoop`)."""

EventSink = Callable[[LoopEvent], Awaitable[None] | None]
"""Receives every :data:`LoopEvent`; may be sync or async. Its exceptions are logged, never raised."""


@dataclass(slots=True)
class RunSummary:
    """The outcome of one :meth:`AgentLoop.run`.

    Attributes:
        outcome: How it ended.
        rounds: Model calls made.
        tool_calls: Tool calls answered (including refused and invalid ones).
        usage: Tokens summed over every model call.
        text: The last assistant text.
        terminal_result: The first terminal result, when the outcome is ``terminal``.
        error: The provider's error, when the outcome is ``error``; why the answer is not whole,
            when it is ``incomplete``; ``"the model refused: <its words>"`` when ``refused``; why
            the run was stopped, when a ``cancelled`` one was given a reason
            (:meth:`AgentLoop.cancel`: a signal ending the process).
        finish_reason: The last model answer's ``finish_reason``, as the provider sent it.
    """

    outcome: RunOutcome
    rounds: int = 0
    tool_calls: int = 0
    usage: Usage = field(default_factory=Usage)
    text: str = ""
    terminal_result: ToolResult | None = None
    error: str | None = None
    finish_reason: str | None = None

    @property
    def succeeded(self) -> bool:
        """``True`` for a completed run, or a terminal one whose result succeeded."""
        if self.outcome is RunOutcome.COMPLETED:
            return True
        return self.outcome is RunOutcome.TERMINAL and bool(
            self.terminal_result and self.terminal_result.success
        )

    def to_dict(self) -> dict[str, Any]:
        """Return the camelCase wire form.

        Keys: ``outcome``, ``rounds``, ``toolCalls``, ``usage``, ``text`` and, when set,
        ``terminalResult``, ``error`` and ``finishReason``.
        """
        out: dict[str, Any] = {
            "outcome": self.outcome.value,
            "rounds": self.rounds,
            "toolCalls": self.tool_calls,
            "usage": self.usage.to_dict(),
            "text": self.text,
        }
        if self.terminal_result is not None:
            out["terminalResult"] = self.terminal_result.to_wire()
        if self.error is not None:
            out["error"] = self.error
        if self.finish_reason is not None:
            out["finishReason"] = self.finish_reason
        return out


_MAX_REFUSAL_CHARS = 4_000
"""The most of a refusal's words kept in ``RunSummary.error`` (a server could send megabytes)."""


def _clipped(text: str) -> str:
    return text if len(text) <= _MAX_REFUSAL_CHARS else text[:_MAX_REFUSAL_CHARS] + "..."


def tool_message(call_id: str, result: ToolResult) -> Message:
    """Return the ``tool`` message carrying ``result``'s JSON (what the durable record stores).

    Spec: File tools (the durable record's tool messages carry the result JSON).
    """
    return {
        "role": "tool",
        "tool_call_id": call_id,
        "content": json.dumps(result.to_wire(), ensure_ascii=False),
    }


class AgentLoop:
    """Drive a model and its tools until the run completes, ends on a terminal result, or stops.

    Args:
        provider: The model.
        router: The tools (for the offered list and each call's mode and tier).
        executor: Runs calls (default ``router.dispatch``); wrap it in an
            :class:`~steerable_agent_runtime.executor.ApprovalGate` for consent. A one-argument
            executor (``async def ex(call)``) still works; it does not see the call's context.
        offered: Returns the tool descriptors offered each round (default
            ``router.describe_model``, the direct tier).
        max_rounds: Model calls per run, at least 1 (else ``UserError``).
        record: The durable record; every message is appended (fsync'd) before the next model call.
        spill: Externalises oversized result data.
        trace: Receives one :class:`TraceSpan` per tool call.
        on_event: Receives progress events (see :data:`LoopEvent`).
        model: Overrides the provider's model.
        tool_timeout_ms: A deadline for each call as a whole, in milliseconds (``None``: only the
            router's per-tool timeouts apply). A call past it gets a failed result with
            ``needsFollowup`` and ``data.code == "timeout"``.
        model_timeout_ms: A deadline for each whole model call, in milliseconds (``None``: none);
            past it the run ends ``error`` (a server that keeps a stream open without finishing
            cannot hang a run).
        stream: Use :meth:`LLMProvider.stream` (text arrives as ``text`` events) instead of
            :meth:`LLMProvider.complete`.

    Attributes:
        messages: The conversation, growing as the run goes.
    """

    def __init__(
        self,
        provider: LLMProvider,
        router: ToolRouter,
        *,
        executor: AnyExecutor | None = None,
        offered: Callable[[], Sequence[Mapping[str, Any]]] | None = None,
        max_rounds: int = DEFAULT_MAX_ROUNDS,
        record: DurableRecord | None = None,
        spill: SpillHooks | None = None,
        trace: TraceSink | None = None,
        on_event: EventSink | None = None,
        model: str | None = None,
        tool_timeout_ms: int | None = None,
        model_timeout_ms: int | None = None,
        stream: bool = True,
    ) -> None:
        if max_rounds < 1:
            raise UserError("max_rounds must be at least 1")
        self.provider = provider
        self.router = router
        self.executor: ToolExecutor = taking_context(executor) if executor is not None else router.dispatch
        self.offered = offered if offered is not None else router.describe_model
        self.max_rounds = max_rounds
        self.record = record
        self.spill = spill
        self.trace = trace
        self.on_event = on_event
        self.model = model
        self.tool_timeout_ms = tool_timeout_ms
        self.model_timeout_ms = model_timeout_ms
        self.stream = stream
        self._answered = 0
        self._spans: list[dict[str, Any]] = []
        self.messages: list[Message] = []
        self._seen_ids: set[str] = set()
        self._task: asyncio.Task[Any] | None = None
        self._cancel_requested = False
        self._cancel_reason: str | None = None

    # -- control --------------------------------------------------------------------------------
    def cancel(self, reason: str | None = None) -> bool:
        """Stop the run in progress; :meth:`run` returns a ``cancelled`` summary.

        Args:
            reason: Why, when it is not the user's choice (``"steerable is shutting down
                (SIGTERM)"``): the calls still running are then recorded as interrupted
                (``data.code == "interrupted"``, a ``needsFollowup`` result saying so) instead of
                cancelled by the user, and the summary's ``error`` is the reason. The first
                reason given stays.

        Returns:
            ``True`` when a run was in progress.
        """
        task = self._task
        if task is None or task.done():
            return False
        self._cancel_requested = True
        if self._cancel_reason is None:
            self._cancel_reason = reason
        task.cancel()
        return True

    def _stopped_result(self) -> ToolResult:
        """What a call the cancel stopped is recorded with."""
        if self._cancel_reason is None:
            return CANCELLED_RESULT
        return _interrupted_result(self._cancel_reason)

    # -- running --------------------------------------------------------------------------------
    async def run(self, history: Sequence[Message], prompt: str | Sequence[Message]) -> RunSummary:
        """Run the loop.

        Args:
            history: Earlier messages, already in the record (e.g. ``await record.load()`` on a
                resume); they are not written again.
            prompt: The new user text, or new messages (a system prompt, a user message); they
                are appended to the record before the first model call.

        Returns:
            The :class:`RunSummary`. Provider failures end the run with ``error``; tool failures
            never raise.
        """
        self.messages, interrupted = _answer_dangling_calls(_without_empty_answers(history))
        self._seen_ids = _ids_in(self.messages)
        new = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else [dict(m) for m in prompt]
        new = interrupted + new
        summary = RunSummary(RunOutcome.COMPLETED)
        self._task = asyncio.current_task()
        self._cancel_requested = False
        self._cancel_reason = None
        self._answered = 0
        try:
            await self._append(new)
            await self._rounds(summary)
        except asyncio.CancelledError:
            # every call the record shows must have an answer, however the run was stopped
            _, unanswered = _answer_dangling_calls(self.messages, self._stopped_result())
            self._answered += len(unanswered)
            await self._append(unanswered)
            task = asyncio.current_task()
            if not self._cancel_requested or task is None:
                raise
            task.uncancel()
            summary.outcome = RunOutcome.CANCELLED
            summary.error = self._cancel_reason
        finally:
            self._task = None
            summary.tool_calls = self._answered
        await self._finish(summary)
        return summary

    async def _rounds(self, summary: RunSummary) -> None:
        unparsed = 0  # consecutive answers the server could not parse (told to the model once)
        while True:
            if summary.rounds >= self.max_rounds:
                summary.outcome = RunOutcome.MAX_ROUNDS
                return
            summary.rounds += 1
            await self._emit({"type": "round", "round": summary.rounds})
            request = ChatRequest(messages=list(self.messages), tools=list(self.offered()), model=self.model)
            try:
                response = await self._call_model(request)
                retry = response.is_empty and finish_kind(response.finish_reason) == "stop"
                if retry:  # LOOP-1: nothing said and nothing called: ask once more
                    logger.warning("the model returned an empty answer; asking once more")
                    summary.usage = summary.usage + response.usage
                    response = await self._call_model(request)
            except ProviderError as exc:
                if exc.malformed_call and unparsed == 0:
                    unparsed += 1
                    await self._tell_unparsed(exc)
                    continue
                summary.outcome = RunOutcome.ERROR
                summary.error = str(exc)
                return
            unparsed = 0
            summary.usage = summary.usage + response.usage
            summary.finish_reason = response.finish_reason
            if response.refusal.strip() and not response.tool_calls:
                summary.outcome = RunOutcome.REFUSED  # the vendor's words, never a finished task
                summary.error = f"the model refused: {_clipped(response.refusal.strip())}"
                summary.text = response.text
                return
            problem = finish_problem(response.finish_reason)
            if problem is not None and finish_kind(response.finish_reason) == "error":
                summary.outcome = RunOutcome.ERROR  # a vendor failure reported as a finish reason
                summary.error = problem
                return
            if problem is not None:  # cut off or filtered: never a finished task
                await self._incomplete(summary, response, problem)
                return
            if response.is_empty:  # never recorded: an empty assistant message breaks a resume (REC-1)
                summary.outcome = RunOutcome.EMPTY_ANSWER
                summary.error = (
                    "the model returned an empty answer (no text and no tool call) twice"
                    f" (finish_reason: {response.finish_reason or 'none'})"
                )
                return
            response = self._unique_ids(response)
            summary.text = response.text
            message = response.assistant_message()
            await self._append([message], entries=[_response_entry(summary.rounds, response)])
            await self._emit(_assistant_event(message, response))
            if not response.tool_calls:
                summary.outcome = RunOutcome.COMPLETED
                return
            results = await self._run_batch(response.tool_calls)
            terminal = next((r for r in results if is_terminal_result(r)), None)
            if terminal is not None:
                summary.outcome = RunOutcome.TERMINAL
                summary.terminal_result = terminal
                return

    async def _tell_unparsed(self, exc: ProviderError) -> None:
        """Tell the model its tool call was unreadable to the server, as a ``needsFollowup`` result.

        The server (llama.cpp, Ollama) failed on the model's own output, so nothing of that answer
        reached us and there is no call id to answer: the result goes in a ``user`` message.
        """
        logger.warning("the server could not parse the model's tool call; telling the model: %s", exc)
        result = ToolResult.retry(
            "the model server could not parse your last tool call, so nothing ran: "
            f"{exc}. Call the tool again with one JSON object of arguments matching its schema",
            data={"code": ToolErrorCode.UNPARSED_TOOL_CALL},
        )
        await self._append([{"role": "user", "content": json.dumps(result.to_wire(), ensure_ascii=False)}])

    async def _incomplete(self, summary: RunSummary, response: ChatResponse, problem: str) -> None:
        """End the run ``incomplete``: record what the model said; its calls get a not-run answer.

        A cut-off answer's calls may be cut off too, so none of them runs; each gets a failed
        result (``data.code == "incomplete_answer"``) so the record stays valid for a resume.
        """
        summary.outcome = RunOutcome.INCOMPLETE
        summary.error = problem
        if response.is_empty:
            return  # never recorded (an empty assistant message breaks a resume)
        response = self._unique_ids(response)
        summary.text = response.text
        message = response.assistant_message()
        await self._append([message], entries=[_response_entry(summary.rounds, response)])
        await self._emit(_assistant_event(message, response))
        not_run = ToolResult.retry(
            f"not run: {problem}, so this call may be incomplete",
            data={"code": ToolErrorCode.INCOMPLETE_ANSWER, "finishReason": response.finish_reason},
        )
        self._answered += len(response.tool_calls)
        await self._append([tool_message(call.id, not_run) for call in response.tool_calls])

    async def _call_model(self, request: ChatRequest) -> ChatResponse:
        if self.model_timeout_ms is None:
            return await self._model_answer(request)
        try:
            async with asyncio.timeout(self.model_timeout_ms / 1000):
                return await self._model_answer(request)
        except TimeoutError:
            raise ProviderError(
                f"the model did not finish its answer within {self.model_timeout_ms} ms", retryable=True
            ) from None

    async def _model_answer(self, request: ChatRequest) -> ChatResponse:
        if not self.stream:
            return await self.provider.complete(request)
        response: ChatResponse | None = None
        async for event in self.provider.stream(request):
            if isinstance(event, TextDelta):
                await self._emit({"type": "text", "text": event.text})
            elif isinstance(event, ReasoningDelta):
                await self._emit({"type": "reasoning", "text": event.text})
            elif isinstance(event, ResponseComplete):
                response = event.response
        if response is None:
            raise ProviderError("the provider's stream ended without a response")
        return response

    def _unique_ids(self, response: ChatResponse) -> ChatResponse:
        """Apply the id rules of the module docstring; returns the response to record and run."""
        calls: list[ToolCall | InvalidToolCall] = []
        sent: dict[str, list[ToolCall | InvalidToolCall]] = {}  # as the model sent them, by its id
        fields = dict(response.call_fields)  # a vendor's echoed fields follow a call to its fresh id
        changed = False
        for call in response.tool_calls:
            earlier = sent.setdefault(call.id, [])
            if call in earlier:
                changed = True  # the same call sent twice: run and record it once
                continue
            earlier.append(call)
            if call.id in self._seen_ids:
                fresh = new_call_id()
                if call.id in response.call_fields:
                    fields[fresh] = response.call_fields[call.id]
                call = (
                    dataclasses.replace(call, id=fresh)
                    if isinstance(call, InvalidToolCall)
                    else call.model_copy(update={"id": fresh})
                )
                changed = True
            self._seen_ids.add(call.id)
            calls.append(call)
        if not changed:
            return response
        return dataclasses.replace(response, tool_calls=tuple(calls), call_fields=fields)

    async def _run_batch(self, calls: Sequence[ToolCall | InvalidToolCall]) -> list[ToolResult]:
        results: list[ToolResult | None] = [None] * len(calls)

        async def one(index: int, call: ToolCall | InvalidToolCall) -> None:
            results[index] = await self._run_one(call)

        for call in calls:
            await self._emit({"type": "tool_call", "call": _call_wire(call)})
        self._spans = []
        tasks = [asyncio.ensure_future(one(i, c)) for i, c in enumerate(calls)]
        try:
            await asyncio.gather(*tasks)
        except asyncio.CancelledError:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            stopped = self._stopped_result()
            done = [r if r is not None else stopped for r in results]
            self._answered += len(calls)
            await self._append([tool_message(c.id, r) for c, r in zip(calls, done, strict=True)], self._spans)
            raise
        final = [r for r in results if r is not None]
        self._answered += len(calls)
        await self._append([tool_message(c.id, r) for c, r in zip(calls, final, strict=True)], self._spans)
        for call, result in zip(calls, final, strict=True):
            await self._emit(
                {"type": "tool_result", "id": call.id, "name": call.name, "result": result.to_wire()}
            )
        return final

    async def _run_one(self, call: ToolCall | InvalidToolCall) -> ToolResult:
        started = time.perf_counter_ns()
        if isinstance(call, InvalidToolCall):
            data = dict(call.data) if call.data is not None else {"code": ToolErrorCode.INVALID_TOOL_CALL}
            result = ToolResult.retry(call.error, data=data)
            self._trace(call, result, started, {}, {})
            return result
        context = CallContext(call, executor=self.executor, spill=self.spill)  # spill: a tool's own cap
        result = await self._execute(call, context)
        fixed: dict[str, Any] = {}
        if self.spill is not None:
            try:
                spilled = await self.spill.apply(call, result)
            except OSError:  # cannot store it: keep the whole result rather than lose it
                logger.exception("could not spill the result of %s", call.name)
                spilled = result
            fixed["spilled"] = spilled is not result or context.spilled
            result = spilled
        if context.approved is not None:  # the gate's decision, when a consent prompt ran
            fixed["approved"] = context.approved
        self._trace(call, result, started, context.trace_attrs(_SPAN_FIELDS), fixed)
        return result

    async def _execute(self, call: ToolCall, context: CallContext) -> ToolResult:
        # context.executor is the live-executor hook: a tool that calls tools itself (run_code)
        # sends its nested calls through this same executor (consent, host forwarding)
        try:
            if self.tool_timeout_ms is None:
                return await self.executor(call, context)
            async with asyncio.timeout(self.tool_timeout_ms / 1000):
                return await self.executor(call, context)
        except TimeoutError:
            return timed_out_result(call.name, self.tool_timeout_ms)
        except Exception as exc:  # an executor broke its contract: still an answer, never a crash
            logger.exception("executor raised for %s", call.name)
            return ToolResult.retry(
                f"{call.name} failed: {type(exc).__name__}: {exc}",
                data={"code": ToolErrorCode.TOOL_EXCEPTION},
            )

    def _trace(
        self,
        call: ToolCall | InvalidToolCall,
        result: ToolResult,
        started: int,
        noted: dict[str, Any],
        fixed: dict[str, Any],
    ) -> None:
        """Record the call's span: what the tool noted (JSON-ready), then the fixed fields, which win."""
        ended = time.perf_counter_ns()
        spec = self.router.get(call.name)
        attrs = {
            **noted,
            "mode": spec.mode.value if spec is not None else None,
            "tier": spec.exposure.value if spec is not None else None,
            "durationMs": (ended - started) / 1e6,
            "outcome": "terminal" if is_terminal_result(result) else ("ok" if result.success else "retry"),
            **fixed,
        }
        span = TraceSpan(call.name, call.id, started, ended, result.success, attrs)
        self._spans.append(
            {"name": span.name, "callId": span.call_id, "success": span.success, "attrs": span.attrs}
        )
        if self.trace is None:
            return
        try:
            self.trace(span)
        except Exception:
            logger.exception("trace sink failed")

    # -- plumbing -------------------------------------------------------------------------------
    async def _append(
        self,
        messages: list[Message],
        spans: Sequence[Mapping[str, Any]] = (),
        *,
        entries: Sequence[tuple[str, Mapping[str, Any]]] = (),
    ) -> None:
        if not messages:
            return
        self.messages.extend(messages)
        if self.record is not None:
            # one write, one fsync: the batch's tool messages and their trace entries (or an
            # answer's response entry). Shielded: a cancel arriving mid-write must not leave the
            # record short of a message.
            lines = [*entries, *(("trace", span) for span in spans)]
            await asyncio.shield(self.record.append(messages, lines))

    async def _finish(self, summary: RunSummary) -> None:
        if self.record is not None:
            try:
                await self.record.append_entry("run", summary.to_dict())
            except OSError:
                logger.exception("could not record the run summary")
        await self._emit({"type": "done", "summary": summary.to_dict()})

    async def _emit(self, event: LoopEvent) -> None:
        if self.on_event is None:
            return
        try:
            outcome = self.on_event(event)
            if inspect.isawaitable(outcome):
                await outcome
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.exception("event sink failed on %s", event.get("type"))


_SPAN_FIELDS: Final = frozenset({"mode", "tier", "durationMs", "outcome", "spilled", "approved"})
"""The attrs the loop itself sets on a call's span; a tool's ``context.attrs`` never supplies them."""


INTERRUPTED_RESULT: Final = ToolResult.retry(
    "interrupted: the process stopped before this call finished; check its effect before retrying it",
    data={"code": ToolErrorCode.INTERRUPTED},
)
"""The answer a resume gives a recorded call that never got a result (the process died mid-call)."""


CANCELLED_RESULT: Final = ToolResult(
    success=False,
    terminal=True,
    error="cancelled by the user before it finished",
    data={"code": ToolErrorCode.CANCELLED},
)
"""The answer a cancelled run records for each call that had not finished."""


def _interrupted_result(reason: str) -> ToolResult:
    """The answer recorded for a call a run stopped for ``reason`` (not the user's cancel).

    Args:
        reason: Why, e.g. ``"steerable is shutting down (SIGTERM)"``.
    """
    return ToolResult.retry(
        f"interrupted: {reason} before this call finished; check its effect before retrying it",
        data={"code": ToolErrorCode.INTERRUPTED, "reason": reason},
    )


def _answer_dangling_calls(
    history: list[Message], result: ToolResult | None = None
) -> tuple[list[Message], list[Message]]:
    """Make the history valid for OpenAI-compatible APIs: every call answered, no orphan answers.

    A process that died while tools ran leaves an assistant message whose calls have no tool
    message; an API rejects such a conversation, and also one with a tool message answering no
    call (a record line lost in the middle). Unanswered calls at the end of the history get new
    messages carrying ``result`` (default :data:`INTERRUPTED_RESULT`), returned second so the
    caller appends them to the record; an unanswered call earlier in the history is answered in
    place, right after its assistant message. Orphan tool messages are dropped.

    Returns:
        The repaired history (without the new tail messages) and the tail messages to append.
    """
    answer = result if result is not None else INTERRUPTED_RESULT
    answered = {m.get("tool_call_id") for m in history if m.get("role") == "tool"}
    asked: set[str] = set()
    repaired: list[Message] = []
    tail: list[Message] = []
    for index, message in enumerate(history):
        if message.get("role") == "tool":
            if message.get("tool_call_id") not in asked:
                logger.warning("dropping a tool message that answers no recorded call")
                continue
        repaired.append(message)
        calls = message.get("tool_calls") if message.get("role") == "assistant" else None
        if not calls:
            continue
        ids = [c["id"] for c in calls if isinstance(c, Mapping) and isinstance(c.get("id"), str)]
        asked.update(ids)
        answers = [tool_message(call_id, answer) for call_id in ids if call_id not in answered]
        answered.update(ids)
        if all(m.get("role") == "tool" for m in history[index + 1 :]):
            tail.extend(answers)
        else:
            repaired.extend(answers)
    return repaired, tail


def _without_empty_answers(history: Sequence[Message]) -> list[Message]:
    """Copies of ``history``'s messages, minus assistant messages that say nothing (REC-1).

    Older records hold an empty answer as ``{"role": "assistant", "content": null}``; sent back,
    it makes Ollama answer 400 "invalid message content type: <nil>" on every later resume. It is
    dropped (not given ``content: ""``): it carries nothing for the model, and the history then
    reads as it would have been recorded now, since an empty answer is no longer recorded.
    """
    kept: list[Message] = []
    for message in history:
        content = message.get("content")
        empty = content is None or (isinstance(content, str) and not content.strip())
        if message.get("role") == "assistant" and empty and not message.get("tool_calls"):
            logger.warning("dropping an empty assistant message from the history")
            continue
        kept.append(dict(message))
    return kept


def _response_entry(round_number: int, response: ChatResponse) -> tuple[str, dict[str, Any]]:
    """The record entry written with an assistant message: how it ended, its usage and time.

    ``at`` is when the answer arrived (ISO 8601, UTC), for trajectories such as ATIF; ``usage``
    adds ``cachedTokens`` when the server said how many prompt tokens its cache served.
    """
    usage: dict[str, int] = response.usage.to_dict()
    if response.usage.cached_tokens is not None:
        usage["cachedTokens"] = response.usage.cached_tokens
    return (
        "response",
        {
            "round": round_number,
            "finishReason": response.finish_reason,
            "model": response.model,
            "usage": usage,
            "at": datetime.now(UTC).isoformat(timespec="milliseconds"),
        },
    )


def _assistant_event(message: Message, response: ChatResponse) -> LoopEvent:
    return {
        "type": "assistant",
        "message": message,
        "usage": response.usage.to_dict(),
        "finishReason": response.finish_reason,
    }


def _ids_in(messages: Sequence[Message]) -> set[str]:
    ids: set[str] = set()
    for message in messages:
        for call in message.get("tool_calls") or ():
            if isinstance(call, Mapping) and isinstance(call.get("id"), str):
                ids.add(call["id"])
    return ids


def _call_wire(call: ToolCall | InvalidToolCall) -> dict[str, Any]:
    if isinstance(call, InvalidToolCall):
        return {"id": call.id, "name": call.name, "arguments": call.arguments, "invalid": call.error}
    return call.model_dump()
