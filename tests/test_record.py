"""The durable record (record.py): written before the next model call, resume, torn lines, session ids, trace entries."""

from __future__ import annotations

from pathlib import Path

import pytest

from loop_script import EchoRouter, call, echo_router, tool_results, turn
from steerable_agent_runtime import workspace_tools_for_cwd
from steerable_agent_runtime.llm import ChatRequest, ChatResponse, ScriptedProvider
from steerable_agent_runtime.loop import AgentLoop, RunOutcome
from steerable_agent_runtime.record import DurableRecord


@pytest.fixture
def router() -> EchoRouter:
    return echo_router()


async def test_record_is_written_before_the_next_model_call(router: EchoRouter, tmp_path: Path) -> None:
    record = DurableRecord(tmp_path / "s.jsonl")
    seen: list[list[str]] = []

    def second(request: ChatRequest) -> ChatResponse:
        # a fresh reader sees the tool message on disk before the model is called again
        seen.append([m["role"] for m in DurableRecord(record.path).messages()])
        return ChatResponse(text="done")

    provider = ScriptedProvider([turn(call("echo", {"text": "x"})), second])
    await AgentLoop(provider, router, record=record).run([], "go")
    assert seen == [["user", "assistant", "tool"]]


async def test_resume_replays_history_and_reseeds_read_state(tmp_path: Path) -> None:  # FILE-7
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("one\n")
    record = DurableRecord(tmp_path / "s.jsonl")
    router = workspace_tools_for_cwd(ws)
    await AgentLoop(
        ScriptedProvider([turn(call("read_file", {"path": "a.txt"})), "read it"]), router, record=record
    ).run([], "read a.txt")
    # a new process: fresh router, state rebuilt from the record, so an edit without re-reading passes
    history = await DurableRecord(record.path).load()
    from steerable_agent_runtime import ReadFileState

    resumed = workspace_tools_for_cwd(ws, state=ReadFileState(DurableRecord(record.path).read_state()))
    provider = ScriptedProvider(
        [turn(call("edit_file", {"path": "a.txt", "old_string": "one", "new_string": "two"}, id="e")), "ok"]
    )
    loop = AgentLoop(provider, resumed, record=DurableRecord(record.path))
    summary = await loop.run(history, "now edit it")
    assert summary.outcome is RunOutcome.COMPLETED
    assert tool_results(loop.messages)["e"]["success"] is True
    assert (ws / "a.txt").read_text() == "two\n"
    assert provider.requests[0].messages[: len(history)] == history
    roles = [m["role"] for m in DurableRecord(record.path).messages()]
    assert roles == ["user", "assistant", "tool", "assistant", "user", "assistant", "tool", "assistant"]


async def test_torn_last_line_is_skipped_and_cut_before_the_next_append(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    record = DurableRecord(path)
    await record.append_messages([{"role": "user", "content": "hi"}])
    with path.open("ab") as handle:
        handle.write(b'{"v":1,"type":"message","message":{"role":"assis')  # the process died here
    assert DurableRecord(path).messages() == [{"role": "user", "content": "hi"}]
    fresh = DurableRecord(path)
    await fresh.append_messages([{"role": "user", "content": "again"}])
    assert fresh.messages() == [{"role": "user", "content": "hi"}, {"role": "user", "content": "again"}]
    assert path.read_bytes().count(b"\n") == 2


def test_session_ids_cannot_escape_the_record_directory(tmp_path: Path) -> None:
    from steerable_agent_runtime import UserError

    for bad in ["../x", "a/b", ".hidden", "", "x" * 200, "a..b"]:
        with pytest.raises(UserError, match="invalid session id"):
            DurableRecord.for_session(tmp_path, bad)
    assert DurableRecord.for_session(tmp_path, "chat-1.2_x").path == tmp_path / "chat-1.2_x.jsonl"


async def test_trace_entries_are_written_with_the_batch(router: EchoRouter, tmp_path: Path) -> None:  # ENV-3
    record = DurableRecord(tmp_path / "s.jsonl")
    provider = ScriptedProvider([turn(call("echo", {"text": "a"}, id="1"), call("nope", id="2")), "ok"])
    await AgentLoop(provider, router, record=record).run([], "go")
    traces = [e["trace"] for e in record.entries() if e["type"] == "trace"]
    assert [(t["name"], t["callId"], t["success"]) for t in traces] == [
        ("echo", "1", True),
        ("nope", "2", False),
    ]
    assert traces[0]["attrs"]["mode"] == "local" and traces[0]["attrs"]["outcome"] == "ok"
    assert all("trace" not in str(m) for m in record.messages())  # never part of the conversation
