"""The agent loop: completion semantics, batches, ids, dangling calls, trace spans, events, cancel."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from loop_script import EchoRouter, call, echo_router, tool_results, turn
from steerable_agent_runtime import ToolRouter
from steerable_agent_runtime.errors import ProviderError
from steerable_agent_runtime.llm import ChatRequest, ChatResponse, ScriptedProvider, Usage
from steerable_agent_runtime.loop import AgentLoop, RunOutcome
from steerable_agent_runtime.record import DurableRecord
from steerable_agent_runtime.trace import TraceSpan
from waiting import eventually


@pytest.fixture
def router() -> EchoRouter:
    return echo_router()


async def test_text_only_turn_completes(router: EchoRouter) -> None:
    provider = ScriptedProvider(["All done."])
    summary = await AgentLoop(provider, router).run([], "hi")
    assert summary.outcome is RunOutcome.COMPLETED
    assert summary.text == "All done." and summary.rounds == 1 and summary.tool_calls == 0
    assert provider.requests[0].messages == [{"role": "user", "content": "hi"}]
    assert [t["function"]["name"] for t in provider.requests[0].tools] == router.names()


async def test_tool_result_goes_back_to_the_model_as_result_json(router: EchoRouter) -> None:
    provider = ScriptedProvider([turn(call("echo", {"text": "x"}, id="c1")), "done"])
    loop = AgentLoop(provider, router)
    summary = await loop.run([], "go")
    assert summary.outcome is RunOutcome.COMPLETED and summary.rounds == 2 and summary.tool_calls == 1
    second = provider.requests[1].messages
    assert second[1]["tool_calls"][0]["function"] == {"name": "echo", "arguments": '{"text": "x"}'}
    assert second[2] == {
        "role": "tool",
        "tool_call_id": "c1",
        "content": json.dumps({"success": True, "data": {"echo": "x"}}),
    }
    assert summary.usage == Usage(10, 2)  # the second turn reported none


async def test_needs_followup_failure_reprompts_the_model(router: EchoRouter) -> None:  # ENV-7
    provider = ScriptedProvider(
        [turn(call("fragile", {"value": -1}, id="a")), turn(call("fragile", {"value": 3})), "ok"]
    )
    summary = await AgentLoop(provider, router).run([], "go")
    assert summary.outcome is RunOutcome.COMPLETED and summary.rounds == 3
    first = tool_results(list(provider.requests[1].messages))["a"]
    assert first == {
        "success": False,
        "needsFollowup": True,
        "error": "value must be positive; try again with value > 0",
    }


async def test_failure_without_followup_ends_the_run(router: EchoRouter) -> None:  # ENV-7, ENV-6
    provider = ScriptedProvider([turn(call("fragile", {"value": 0})), "never reached"])
    summary = await AgentLoop(provider, router).run([], "go")
    assert summary.outcome is RunOutcome.TERMINAL and summary.rounds == 1
    assert summary.terminal_result is not None and summary.terminal_result.error == "zero is fatal"
    assert provider.remaining == 1 and not summary.succeeded


async def test_terminal_success_ends_the_run_as_succeeded(router: EchoRouter) -> None:
    provider = ScriptedProvider([turn(call("finish", {"summary": "shipped"})), "never"])
    summary = await AgentLoop(provider, router).run([], "go")
    assert summary.outcome is RunOutcome.TERMINAL and summary.succeeded
    assert summary.to_dict()["terminalResult"] == {"success": True, "terminal": True, "message": "shipped"}


async def test_every_call_of_a_batch_is_recorded_before_a_terminal_one_ends_the_run(
    router: EchoRouter, tmp_path: Path
) -> None:  # ENV-8
    record = DurableRecord(tmp_path / "s.jsonl")
    provider = ScriptedProvider(
        [
            turn(
                call("slow_echo", {"text": "a", "delay_ms": 80}, id="c1"),
                call("fragile", {"value": 0}, id="c2"),
                call("slow_echo", {"text": "b", "delay_ms": 40}, id="c3"),
            ),
            "never",
        ]
    )
    loop = AgentLoop(provider, router, record=record)
    summary = await loop.run([], "go")
    assert summary.outcome is RunOutcome.TERMINAL and summary.tool_calls == 3
    recorded = tool_results(record.messages())
    assert list(recorded) == ["c1", "c2", "c3"]  # the model's order, not completion order
    assert recorded["c1"]["success"] and recorded["c3"]["success"] and not recorded["c2"]["success"]
    assert sorted(router.calls) == [("slow_echo", "a"), ("slow_echo", "b")]


async def test_batch_calls_run_concurrently(router: EchoRouter) -> None:
    calls = [call("slow_echo", {"text": str(i), "delay_ms": 200}) for i in range(5)]
    provider = ScriptedProvider([turn(*calls), "done"])
    started = asyncio.get_running_loop().time()
    await AgentLoop(provider, router).run([], "go")
    assert asyncio.get_running_loop().time() - started < 0.8  # 5 x 200 ms sequentially would be 1 s


async def test_identical_duplicate_runs_once_and_is_recorded_once(router: EchoRouter) -> None:  # ENV-8
    dup = call("echo", {"text": "same"}, id="d1")
    provider = ScriptedProvider([turn(dup, dup), "done"])
    loop = AgentLoop(provider, router)
    await loop.run([], "go")
    assert router.calls == [("echo", "same")]
    assistant = loop.messages[1]
    assert [c["id"] for c in assistant["tool_calls"]] == ["d1"]
    assert list(tool_results(loop.messages)) == ["d1"]


async def test_different_calls_sharing_an_id_both_run_under_unique_ids(router: EchoRouter) -> None:  # ENV-8
    provider = ScriptedProvider(
        [turn(call("echo", {"text": "one"}, id="x"), call("echo", {"text": "two"}, id="x")), "done"]
    )
    loop = AgentLoop(provider, router)
    await loop.run([], "go")
    assert sorted(router.calls) == [("echo", "one"), ("echo", "two")]
    ids = [c["id"] for c in loop.messages[1]["tool_calls"]]
    assert ids[0] == "x" and ids[1] != "x" and len(set(ids)) == 2
    results = tool_results(loop.messages)
    assert results[ids[0]]["data"] == {"echo": "one"} and results[ids[1]]["data"] == {"echo": "two"}


async def test_an_id_reused_from_an_earlier_turn_is_renamed(router: EchoRouter) -> None:  # ENV-2
    provider = ScriptedProvider(
        [turn(call("echo", {"text": "1"}, id="c")), turn(call("echo", {"text": "2"}, id="c")), "done"]
    )
    loop = AgentLoop(provider, router)
    await loop.run([], "go")
    ids = [c["id"] for m in loop.messages for c in m.get("tool_calls") or []]
    assert len(ids) == 2 and len(set(ids)) == 2 and ids[0] == "c"
    assert set(tool_results(loop.messages)) == set(ids)


async def test_invalid_json_arguments_get_a_followup_failure_without_running(router: EchoRouter) -> None:
    provider = ScriptedProvider([turn(call("echo", '{"text": "unterminated', id="bad")), "recovered"])
    loop = AgentLoop(provider, router)
    summary = await loop.run([], "go")
    assert summary.outcome is RunOutcome.COMPLETED and router.calls == []
    result = tool_results(loop.messages)["bad"]
    assert result["success"] is False and result["needsFollowup"] is True
    assert result["data"] == {"code": "invalid_tool_call"}
    assert result["error"].startswith("the arguments of echo are not valid JSON (Unterminated string")
    # the raw text is kept in the assistant message so the provider sees the id it is answered for
    assert loop.messages[1]["tool_calls"][0]["function"]["arguments"] == '{"text": "unterminated'


async def test_max_rounds_stops_a_model_that_keeps_calling_tools(router: EchoRouter) -> None:
    provider = ScriptedProvider([turn(call("echo", {"text": str(i)})) for i in range(5)])
    summary = await AgentLoop(provider, router, max_rounds=3).run([], "go")
    assert summary.outcome is RunOutcome.MAX_ROUNDS and summary.rounds == 3 and summary.tool_calls == 3


async def test_provider_error_ends_the_run_with_error(router: EchoRouter) -> None:
    def boom(request: ChatRequest) -> ChatResponse:
        raise ProviderError("HTTP 500 from the model")

    summary = await AgentLoop(ScriptedProvider([boom]), router).run([], "go")
    assert summary.outcome is RunOutcome.ERROR and summary.error == "HTTP 500 from the model"


async def test_per_tool_timeout_is_a_failed_result(router: EchoRouter) -> None:
    provider = ScriptedProvider(
        [turn(call("slow_echo", {"text": "z", "delay_ms": 2000}, id="t")), "moved on"]
    )
    loop = AgentLoop(provider, router, tool_timeout_ms=50)
    summary = await loop.run([], "go")
    assert summary.outcome is RunOutcome.COMPLETED
    assert tool_results(loop.messages)["t"] == {
        "success": False,
        "needsFollowup": True,
        "error": "slow_echo timed out after 50 ms",
        "data": {"code": "timeout", "timeoutMs": 50},
    }


async def test_router_timeout_of_a_tool_is_a_failed_result() -> None:
    router = ToolRouter()

    @router.tool(timeout_ms=30)
    async def stuck() -> None:
        """Never returns."""
        await asyncio.sleep(10)

    loop = AgentLoop(ScriptedProvider([turn(call("stuck", id="s")), "ok"]), router)
    await loop.run([], "go")
    result = tool_results(loop.messages)["s"]
    assert result["success"] is False and result["data"]["code"] == "timeout"


async def test_cancel_records_an_answer_for_every_call_in_flight(router: EchoRouter, tmp_path: Path) -> None:
    record = DurableRecord(tmp_path / "s.jsonl")
    provider = ScriptedProvider(
        [turn(call("slow_echo", {"text": "a", "delay_ms": 5000}, id="inflight")), "never"]
    )
    events: list[dict[str, Any]] = []
    loop = AgentLoop(provider, router, record=record, on_event=events.append)
    task = asyncio.create_task(loop.run([], "go"))
    await eventually(lambda: any(e["type"] == "tool_call" for e in events), what="the call in flight")
    assert loop.cancel() is True
    summary = await asyncio.wait_for(task, 2)  # at once, not after the call's 5 s
    assert summary.outcome is RunOutcome.CANCELLED
    result = tool_results(record.messages())["inflight"]
    assert result["success"] is False and result["data"] == {"code": "cancelled"}
    assert record.entries()[-1]["run"]["outcome"] == "cancelled"
    assert events[-1]["type"] == "done" and loop.cancel() is False


async def test_outside_cancellation_propagates(router: EchoRouter) -> None:
    provider = ScriptedProvider([turn(call("slow_echo", {"text": "a", "delay_ms": 5000}))])
    events: list[dict[str, Any]] = []
    loop = AgentLoop(provider, router, on_event=events.append)
    task = asyncio.create_task(loop.run([], "go"))
    await eventually(lambda: any(e["type"] == "tool_call" for e in events), what="the call in flight")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_trace_span_per_call_carries_mode_tier_outcome(router: EchoRouter) -> None:  # ENV-3
    spans: list[TraceSpan] = []
    provider = ScriptedProvider(
        [
            turn(
                call("echo", {"text": "a"}, id="1"),
                call("fragile", {"value": -1}, id="2"),
                call("nope", id="3"),
            ),
            "ok",
        ]
    )
    await AgentLoop(provider, router, trace=spans.append).run([], "go")
    by_id = {s.call_id: s for s in spans}
    assert by_id["1"].attrs["mode"] == "local" and by_id["1"].attrs["tier"] == "direct"
    assert by_id["1"].attrs["outcome"] == "ok" and by_id["2"].attrs["outcome"] == "retry"
    assert by_id["3"].attrs["mode"] is None and by_id["3"].attrs["outcome"] == "retry"
    assert all(s.attrs["durationMs"] >= 0 for s in spans)


async def test_events_stream_text_calls_results_and_done(router: EchoRouter) -> None:
    events: list[dict[str, Any]] = []

    async def sink(event: dict[str, Any]) -> None:
        events.append(event)

    provider = ScriptedProvider(
        [turn(call("echo", {"text": "a"}, id="1"), text="Let me check."), "Finished now."], chunk_chars=5
    )
    await AgentLoop(provider, router, on_event=sink).run([], "go")
    kinds = [e["type"] for e in events]
    assert kinds[0] == "round" and kinds[-1] == "done"
    assert "".join(e["text"] for e in events if e["type"] == "text") == "Let me check.Finished now."
    assert [e["call"]["id"] for e in events if e["type"] == "tool_call"] == ["1"]
    assert [e["result"]["data"] for e in events if e["type"] == "tool_result"] == [{"echo": "a"}]
    assert events[-1]["summary"]["outcome"] == "completed"


async def test_a_failing_event_sink_never_stops_the_run(router: EchoRouter) -> None:
    def sink(event: dict[str, Any]) -> None:
        raise RuntimeError("ui crashed")

    summary = await AgentLoop(ScriptedProvider(["ok"]), router, on_event=sink).run([], "go")
    assert summary.outcome is RunOutcome.COMPLETED


async def test_resume_after_a_crash_mid_call_answers_the_dangling_calls(
    router: EchoRouter, tmp_path: Path
) -> None:
    # a process died while running c2: the record has the assistant message and only c1's result
    record = DurableRecord(tmp_path / "s.jsonl")
    assistant = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "echo", "arguments": "{}"}},
            {"id": "c2", "type": "function", "function": {"name": "echo", "arguments": "{}"}},
        ],
    }
    done = {"role": "tool", "tool_call_id": "c1", "content": '{"success": true}'}
    await record.append_messages([{"role": "user", "content": "go"}, assistant, done])
    provider = ScriptedProvider(["resumed"])
    history = await record.load()
    await AgentLoop(provider, router, record=record).run(history, "continue")
    sent = list(provider.requests[0].messages)
    # every tool call id has an answer before the next user message (OpenAI rejects it otherwise)
    assert [m.get("tool_call_id") for m in sent[2:5]] == ["c1", "c2", None]
    assert json.loads(sent[3]["content"]) == {
        "success": False,
        "needsFollowup": True,
        "error": "interrupted: the process stopped before this call finished; check its effect before retrying it",
        "data": {"code": "interrupted"},
    }
    assert sent[4] == {"role": "user", "content": "continue"}
    assert [m.get("tool_call_id") for m in record.messages()][:4] == [None, None, "c1", "c2"]


async def test_a_dangling_call_inside_the_history_is_answered_in_place(router: EchoRouter) -> None:
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "a"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "x", "type": "function", "function": {"name": "echo", "arguments": "{}"}}],
        },
        {"role": "user", "content": "b"},
    ]
    provider = ScriptedProvider(["ok"])
    await AgentLoop(provider, router).run(history, "c")
    roles = [m["role"] for m in provider.requests[0].messages]
    assert roles == ["user", "assistant", "tool", "user", "user"]


async def test_identical_repeat_of_a_reused_id_still_runs_once(router: EchoRouter) -> None:  # ENV-8
    # providers that restart ids each turn (call_0, call_1...) reuse ids across turns
    provider = ScriptedProvider(
        [
            turn(call("echo", {"text": "first"}, id="call_0")),
            turn(
                call("echo", {"text": "second"}, id="call_0"), call("echo", {"text": "second"}, id="call_0")
            ),
            "done",
        ]
    )
    loop = AgentLoop(provider, router)
    await loop.run([], "go")
    assert router.calls == [("echo", "first"), ("echo", "second")]
    ids = [c["id"] for m in loop.messages for c in m.get("tool_calls") or []]
    assert len(ids) == 2 and len(set(ids)) == 2


async def test_model_timeout_ends_the_run_with_error(router: EchoRouter) -> None:
    class Stalling:
        async def complete(self, request: ChatRequest) -> ChatResponse:
            await asyncio.sleep(30)
            raise AssertionError

        async def stream(self, request: ChatRequest) -> Any:
            from steerable_agent_runtime.llm import TextDelta

            while True:  # a server sending keep-alives forever
                await asyncio.sleep(0.01)
                yield TextDelta("")

    summary = await AgentLoop(Stalling(), router, model_timeout_ms=100).run([], "go")
    assert summary.outcome is RunOutcome.ERROR
    assert summary.error == "the model did not finish its answer within 100 ms"


async def test_cancel_during_event_emission_still_answers_every_call(
    router: EchoRouter, tmp_path: Path
) -> None:
    record = DurableRecord(tmp_path / "s.jsonl")
    provider = ScriptedProvider(
        [turn(call("echo", {"text": "a"}, id="k1"), call("echo", {"text": "b"}, id="k2"))]
    )
    loop: AgentLoop

    async def slow_sink(event: dict[str, Any]) -> None:
        if event["type"] == "tool_call":
            loop.cancel()  # arrives while the loop is announcing the calls, before any runs
            await asyncio.sleep(1)

    loop = AgentLoop(provider, router, record=record, on_event=slow_sink)
    summary = await loop.run([], "go")
    assert summary.outcome is RunOutcome.CANCELLED and summary.tool_calls == 2
    results = tool_results(record.messages())
    assert list(results) == ["k1", "k2"] and all(r["data"] == {"code": "cancelled"} for r in results.values())
    assert router.calls == []


async def test_orphan_tool_messages_are_dropped_on_resume(router: EchoRouter) -> None:
    history = [
        {"role": "user", "content": "a"},
        {
            "role": "tool",
            "tool_call_id": "lost",
            "content": '{"success": true}',
        },  # its assistant line was lost
    ]
    provider = ScriptedProvider(["ok"])
    await AgentLoop(provider, router).run(history, "b")
    assert [m["role"] for m in provider.requests[0].messages] == ["user", "user"]
