"""One session assembly (steerable_sidecar/shared/_assembly.py) for the sidecar's chat, headless runs and the next front end."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from steerable_agent_runtime import DurableRecord, ToolCall, ToolMode, workspace_tools_for_cwd
from steerable_agent_runtime.llm import ScriptedProvider
from steerable_agent_runtime.trace import TraceSpan
from steerable_sidecar.rpc._peer import JsonRpcPeer, open_fd_streams
from steerable_sidecar.shared._assembly import LoopOptions, Transport, assemble_loop, open_session
from steerable_sidecar.sidecar._server import Sidecar, SidecarConfig


def _read_call(call_id: str, path: str) -> dict[str, Any]:
    return {"tool_calls": [{"id": call_id, "name": "read_file", "arguments": json.dumps({"path": path})}]}


async def test_a_front_end_supplies_only_its_transport_and_a_resume_is_seeded(tmp_path: Path) -> None:
    ws, state = tmp_path / "ws", tmp_path / "state"
    ws.mkdir()
    (ws / "a.txt").write_text("one\n")
    first = await open_session(state, "s1")
    assert (
        first.history == []
        and first.opening("sys", [{"role": "user", "content": "hi"}])[0]["role"] == "system"
    )
    router = workspace_tools_for_cwd(ws, bash=False)
    events: list[str] = []
    loop = await assemble_loop(
        first,
        ScriptedProvider([_read_call("r1", "a.txt"), "read"]),
        router,
        transport=Transport(on_event=lambda e: events.append(e["type"])),
    )
    await loop.run(first.history, first.opening("sys", [{"role": "user", "content": "read a"}]))
    assert "read_spilled" in router and events[-1] == "done"  # the spill store's tool, and progress

    seeded: list[dict[str, str]] = []
    asked: list[tuple[str, ToolMode]] = []
    spans: list[TraceSpan] = []

    async def approve(call: ToolCall, mode: ToolMode) -> bool:
        asked.append((call.name, mode))
        return False

    again = await open_session(state, "s1")
    assert again.history and again.opening("sys", [{"role": "user", "content": "x"}]) == [
        {"role": "user", "content": "x"}  # a resume gets no second system prompt
    ]
    fresh = workspace_tools_for_cwd(ws)
    shell = {"tool_calls": [{"id": "b1", "name": "bash", "arguments": '{"command": "true"}'}]}
    resumed = await assemble_loop(
        again,
        ScriptedProvider([shell, "ok"]),
        fresh,
        transport=Transport(approve=approve, trace=spans.append, read_state=seeded.append),
        options=LoopOptions(max_rounds=3),
    )
    assert list(seeded[0]) == ["a.txt"]  # the read state rebuilt from the history just loaded
    summary = await resumed.run(again.history, [{"role": "user", "content": "run it"}])
    assert summary.outcome.value == "completed" and resumed.max_rounds == 3
    assert asked == [("bash", ToolMode.LOCAL)] and spans[0].attrs["approved"] is False


async def test_the_record_is_read_off_the_event_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    record = DurableRecord.for_session(tmp_path / "sessions", "s")
    await record.append_messages([{"role": "user", "content": "hello"}])
    readers: list[threading.Thread] = []
    real = DurableRecord.messages

    def spying(self: DurableRecord) -> list[dict[str, Any]]:
        readers.append(threading.current_thread())
        return real(self)

    monkeypatch.setattr(DurableRecord, "messages", spying)
    session = await open_session(tmp_path, "s")
    assert session.history == [{"role": "user", "content": "hello"}]
    router = workspace_tools_for_cwd(tmp_path, bash=False)
    await assemble_loop(
        session, ScriptedProvider([]), router, transport=Transport(read_state=router.workspace.state.seed)
    )
    assert len(readers) == 1 and readers[0] is not threading.main_thread()  # once, in a worker


async def test_the_sidecars_default_tools_are_booted_like_every_entry_point(tmp_path: Path) -> None:
    a_read, a_write = os.pipe()  # nobody writes: the sidecar is called in-process
    s_reader, s_writer = await open_fd_streams(a_read, os.open(os.devnull, os.O_WRONLY))
    config = SidecarConfig(workspace=tmp_path, state_dir=tmp_path / "state", environ={})
    sidecar = Sidecar(JsonRpcPeer(s_reader, s_writer, name="sidecar"), config)
    answer = await sidecar.tool_invoke({"name": "web_fetch", "arguments": {"url": "https://example.com"}})
    assert answer["data"]["code"] == "tool_unavailable"  # boot_tools marks the offline web pair
    assert "read_file" in sidecar.router and sidecar.plugins.plugins() == []
    os.close(a_write)
