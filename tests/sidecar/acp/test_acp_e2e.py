"""``steerable acp`` driven by the official ACP SDK's client, as an editor drives it (docs/acp.md).

Most tests serve the agent in this process (``in_process_acp``: the command's own start-up path
over real pipes, with a :class:`ScriptedProvider`); the ones about processes (a resume in a new
process, a client that disappears, the model's configuration from the environment) start
``python -m steerable_sidecar acp`` for real. Each checks what the editor is shown, what the model
is sent back, and what is on disk and in the durable record.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError, embedded_text_resource, resource_block, text_block
from acp.client.connection import ClientSideConnection
from acp.schema import HttpMcpServer, McpServerStdio, NewSessionResponse
from acp_client import SLEEPING, WHOLE_TURN, EditorClient, in_process_acp, spawn_acp, start, write_script
from pydantic import SecretStr

from fake_openai import FakeOpenAI
from steerable_agent_runtime import DurableRecord, RunOutcome
from steerable_agent_runtime.llm import ChatResponse, ScriptedProvider, parse_tool_call
from steerable_agent_runtime.loop import RunSummary
from steerable_agent_runtime.workspace import version_of
from steerable_sidecar.acp._agent import AcpOptions, stop_reason
from steerable_sidecar.providers._openai import LLMConfig, OpenAICompatibleProvider

pytestmark = pytest.mark.slow


@pytest.fixture
def acp_env(
    tmp_path: Path, child_env: Callable[..., dict[str, str]]
) -> Callable[[list[Any]], dict[str, str]]:
    """The agent's environment with the scripted model playing ``turns``."""

    def make(turns: list[Any]) -> dict[str, str]:
        script = write_script(tmp_path / f"turns-{time.monotonic_ns()}.json", turns)
        return child_env(STEERABLE_PROVIDER="scripted", STEERABLE_SCRIPT=str(script))

    return make


@pytest.fixture
def state(tmp_path: Path) -> Path:
    path = tmp_path / "state"
    path.mkdir()
    return path


Serve = Callable[[EditorClient, list[Any]], contextlib.AbstractAsyncContextManager[ClientSideConnection]]


@pytest.fixture
def serve(state: Path) -> Serve:
    """``steerable acp`` in this process for ``client``, the scripted model playing ``turns``."""

    def make(
        client: EditorClient, turns: list[Any]
    ) -> contextlib.AbstractAsyncContextManager[ClientSideConnection]:
        options = AcpOptions(state_dir=state, plugins=False, web_tools=False)
        served: contextlib.AbstractAsyncContextManager[ClientSideConnection] = in_process_acp(
            client, options, ScriptedProvider(turns)
        )
        return served

    return make


def _text(text: str) -> list[Any]:
    return [text_block(text)]


async def _sleep_under_way(
    conn: ClientSideConnection, client: EditorClient, workspace: Path
) -> tuple[NewSessionResponse, asyncio.Future[Any]]:
    """A session whose turn runs ``SLEEPING``'s ``sleep 60``, allowed and shown ``in_progress``."""
    await start(conn)
    session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
    turn = asyncio.ensure_future(conn.prompt(session_id=session.session_id, prompt=_text("sleep")))
    await client.wait_for(lambda c: any(u.status == "in_progress" for u in c.call_updates("s1")))
    return session, turn


def _record(state: Path, session_id: str) -> list[dict[str, Any]]:
    return DurableRecord.for_session(state / "sessions", session_id).messages()


def _tool_results(messages: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {m["tool_call_id"]: json.loads(m["content"]) for m in messages if m["role"] == "tool"}


async def test_a_whole_turn_reads_edits_with_a_diff_and_runs_an_approved_bash(
    workspace: Path, state: Path, serve: Serve
) -> None:
    """Streamed text, a read with its location, an edit shown as a diff, bash asked (MODE-2) and run."""
    turns = WHOLE_TURN
    client = EditorClient(permissions=["allow_once"])
    async with serve(client, turns) as conn:
        hello = await start(conn)
        assert hello.protocol_version == 1
        assert hello.agent_capabilities.load_session is True
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        answer = await conn.prompt(session_id=session.session_id, prompt=_text("change beta to gamma"))
    assert answer.stop_reason == "end_turn"
    assert (workspace / "notes.txt").read_text() == "alpha\ngamma\n"
    assert client.text() == "Reading.Done: beta is gamma now."
    path = str(workspace / "notes.txt")

    read = client.call_updates("c1")
    assert [u.status for u in read] == ["pending", "in_progress", "completed"]
    assert (read[0].title, read[0].kind, read[0].locations[0].path) == ("Read notes.txt", "read", path)

    edit = client.call_updates("c2")
    assert (edit[0].title, edit[0].kind) == ("Edit notes.txt", "edit")
    diff = edit[-1].content[0]
    assert (diff.type, diff.path, diff.old_text, diff.new_text) == (
        "diff",
        path,
        "alpha\nbeta\n",
        "alpha\ngamma\n",
    )

    bash = client.call_updates("c3")
    assert (bash[0].title, bash[0].kind) == ("Run `cat notes.txt`", "execute")
    # shown running only once allowed, then its output
    assert [u.status for u in bash] == ["pending", "in_progress", "completed"]
    assert bash[-1].content[0].content.text == "```\nalpha\ngamma\n```"
    asked, options = client.asked[0]
    assert asked.tool_call_id == "c3"
    assert [(o.option_id, o.kind) for o in options] == [
        ("allow_once", "allow_once"),
        ("allow_always", "allow_always"),
        ("reject_once", "reject_once"),
    ]
    record = _record(state, session.session_id)
    assert record[0]["role"] == "system" and str(workspace) in record[0]["content"]
    assert _tool_results(record)["c3"]["data"]["stdout"] == "alpha\ngamma\n"


async def test_a_refused_permission_runs_nothing_and_the_model_is_told(
    workspace: Path, state: Path, serve: Serve
) -> None:
    """A rejected ``session/request_permission``: the command never runs, the call shows failed."""
    turns = [
        {"tool_calls": [{"id": "b1", "name": "bash", "arguments": {"command": "touch made.txt"}}]},
        "Understood.",
    ]
    client = EditorClient(permissions=["reject_once"])
    async with serve(client, turns) as conn:
        await start(conn)
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        answer = await conn.prompt(session_id=session.session_id, prompt=_text("make a file"))
    assert answer.stop_reason == "end_turn"
    assert not (workspace / "made.txt").exists()
    updates = client.call_updates("b1")
    assert [u.status for u in updates] == ["pending", "failed"]
    result = _tool_results(_record(state, session.session_id))["b1"]
    assert result["success"] is False and result["data"]["code"] == "consent_denied"
    assert updates[-1].content[0].content.text == result["error"]


async def test_allow_always_asks_once_per_tool_for_the_session(
    workspace: Path, state: Path, serve: Serve
) -> None:
    turns = [
        {"tool_calls": [{"id": "b1", "name": "bash", "arguments": {"command": "echo one"}}]},
        {"tool_calls": [{"id": "b2", "name": "bash", "arguments": {"command": "echo two"}}]},
        "Both ran.",
    ]
    client = EditorClient(permissions=["allow_always"])
    async with serve(client, turns) as conn:
        await start(conn)
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=_text("run both"))
    assert [asked.tool_call_id for asked, _ in client.asked] == ["b1"]
    results = _tool_results(_record(state, session.session_id))
    assert results["b2"]["data"]["stdout"] == "two\n"


async def test_cancel_during_a_tool_stops_it_and_the_prompt_answers_cancelled(
    workspace: Path, state: Path, serve: Serve
) -> None:
    """``session/cancel`` while bash sleeps: the call ends cancelled (shown and recorded) at once."""
    turns = SLEEPING
    client = EditorClient(permissions=["allow_once"])
    async with serve(client, turns) as conn:
        session, turn = await _sleep_under_way(conn, client, workspace)
        started = time.monotonic()
        await conn.cancel(session_id=session.session_id)
        answer = await asyncio.wait_for(turn, 20)
        elapsed = time.monotonic() - started
        # the session takes the next prompt after a cancel
        again = await conn.prompt(session_id=session.session_id, prompt=_text("hello?"))
    assert answer.stop_reason == "cancelled"
    assert elapsed < 10  # at the cancel: the sleep alone would take 60 s
    assert again.stop_reason == "end_turn"
    last = client.call_updates("s1")[-1]
    assert last.status == "failed" and last.content[0].content.text == "cancelled"
    result = _tool_results(_record(state, session.session_id))["s1"]
    assert result["success"] is False and result["data"]["code"] == "cancelled"


async def test_load_replays_the_history_and_a_write_is_checked_against_the_recorded_read(
    workspace: Path, state: Path, acp_env: Callable[[list[Any]], dict[str, str]]
) -> None:
    """``session/load`` in a new process re-seeds the read state: a write without a re-read passes
    the CAS gate (FILE-7); in a fresh session the same write is refused as never read (FILE-8)."""
    first = acp_env(
        [{"tool_calls": [{"id": "r1", "name": "read_file", "arguments": {"path": "notes.txt"}}]}, "Read it."]
    )
    async with spawn_acp(EditorClient(), first, "--state-dir", str(state)) as (conn, _):
        await start(conn)
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=_text("read notes"))
    write = {"id": "w1", "name": "write_file", "arguments": {"path": "notes.txt", "content": "rewritten\n"}}
    second = acp_env([{"tool_calls": [write]}, "Written."])
    loaded = EditorClient()
    async with spawn_acp(loaded, second, "--state-dir", str(state)) as (conn, _):
        await start(conn)
        await conn.load_session(cwd=str(workspace), session_id=session.session_id, mcp_servers=[])
        replayed = list(loaded.updates)
        await conn.prompt(session_id=session.session_id, prompt=_text("now rewrite it"))
    assert (workspace / "notes.txt").read_text() == "rewritten\n"
    assert [u.session_update for u in replayed] == [
        "user_message_chunk",
        "tool_call",
        "tool_call_update",
        "agent_message_chunk",
    ]
    assert replayed[0].content.text == "read notes"
    assert replayed[2].status == "completed"
    assert _tool_results(_record(state, session.session_id))["w1"]["success"] is True

    fresh = acp_env([{"tool_calls": [write]}, "Tried."])
    async with spawn_acp(EditorClient(), fresh, "--state-dir", str(state)) as (conn, _):
        await start(conn)
        other = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.prompt(session_id=other.session_id, prompt=_text("rewrite it"))
    refused = _tool_results(_record(state, other.session_id))["w1"]
    assert refused["success"] is False and refused["data"]["code"] == "not_read"


async def test_a_load_of_an_unknown_session_is_resource_not_found(
    workspace: Path, state: Path, serve: Serve
) -> None:
    async with serve(EditorClient(), ["hi"]) as conn:
        await start(conn)
        for session_id in ("no-such-session", "../escape"):
            with pytest.raises(RequestError) as caught:
                await conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
            assert caught.value.code == -32002
        with pytest.raises(RequestError) as caught:
            await conn.prompt(session_id="no-such-session", prompt=_text("hello"))
        assert caught.value.code == -32002


async def test_ask_user_goes_to_the_client_as_an_elicitation_form_ask_8(
    workspace: Path, state: Path, serve: Serve
) -> None:
    question = {
        "intro": "Two choices.",
        "questions": [
            {"id": "db", "text": "Which database?", "type": "select", "options": ["sqlite", "postgres"]},
            {"id": "name", "text": "Project name?", "type": "text"},
        ],
    }
    turns = [{"tool_calls": [{"id": "q1", "name": "ask_user", "arguments": question}]}, "Thanks."]
    client = EditorClient(answers=[{"db": "postgres", "name": "demo"}])
    async with serve(client, turns) as conn:
        await start(conn, elicitation=True)
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=_text("ask me"))
    message, mode = client.elicitations[0]
    assert message == "Two choices."
    schema = mode.requested_schema.model_dump(by_alias=True, exclude_none=True)
    assert schema["properties"]["db"]["enum"] == ["sqlite", "postgres"]
    assert schema["required"] == ["db", "name"]
    result = _tool_results(_record(state, session.session_id))["q1"]
    assert result["data"]["answers"] == {"db": "postgres", "name": "demo"}


async def test_ask_user_without_elicitation_fails_saying_so_and_never_hangs(
    workspace: Path, state: Path, serve: Serve
) -> None:
    question = {"intro": "", "questions": [{"id": "x", "text": "Yes?", "type": "text"}]}
    turns = [{"tool_calls": [{"id": "q1", "name": "ask_user", "arguments": question}]}, "Assumed yes."]
    async with serve(EditorClient(), turns) as conn:
        await start(conn)
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        answer = await asyncio.wait_for(conn.prompt(session_id=session.session_id, prompt=_text("ask")), 30)
    assert answer.stop_reason == "end_turn"
    result = _tool_results(_record(state, session.session_id))["q1"]
    assert result["success"] is False
    assert result["data"]["code"] == "tool_unavailable"
    assert "does not support questions" in result["error"]


async def test_update_plan_is_shown_as_a_plan(workspace: Path, state: Path, serve: Serve) -> None:
    plan = {
        "plan": [
            {"step": "Read the code", "status": "completed"},
            {"step": "Fix it", "status": "in_progress"},
        ]
    }
    turns = [{"tool_calls": [{"id": "p1", "name": "update_plan", "arguments": plan}]}, "Working."]
    client = EditorClient()
    async with serve(client, turns) as conn:
        await start(conn)
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=_text("plan"))
    (shown,) = client.of_kind("plan")
    assert [(e.content, e.status) for e in shown.entries] == [
        ("Read the code", "completed"),
        ("Fix it", "in_progress"),
    ]


async def test_a_client_that_disappears_mid_turn_ends_the_turn_with_the_record_intact(
    workspace: Path, state: Path, acp_env: Callable[[list[Any]], dict[str, str]]
) -> None:
    env = acp_env(SLEEPING)
    client = EditorClient(permissions=["allow_once"])
    async with spawn_acp(client, env, "--state-dir", str(state)) as (conn, process):
        session, turn = await _sleep_under_way(conn, client, workspace)
        started = time.monotonic()
        assert process.stdin is not None
        process.stdin.close()  # the editor is gone: no more frames, ever
        code = await asyncio.wait_for(process.wait(), 20)
        turn.cancel()
    assert code == 0
    assert time.monotonic() - started < 10  # at the end of input: the sleep alone would take 60 s
    record = _record(state, session.session_id)
    result = _tool_results(record)["s1"]
    assert result["data"]["code"] == "cancelled"
    assert [m["role"] for m in record] == ["system", "user", "assistant", "tool"]


async def test_a_model_configuration_error_is_the_session_new_error(
    workspace: Path, state: Path, child_env: Callable[..., dict[str, str]]
) -> None:
    env = child_env(STEERABLE_PROVIDER="no-such-vendor")
    async with spawn_acp(EditorClient(), env, "--state-dir", str(state)) as (conn, _):
        await start(conn)
        with pytest.raises(RequestError) as caught:
            await conn.new_session(cwd=str(workspace), mcp_servers=[])
    assert "STEERABLE_PROVIDER" in str(caught.value)


async def test_a_cwd_that_is_not_a_project_is_invalid_params(
    workspace: Path, state: Path, serve: Serve
) -> None:
    async with serve(EditorClient(), ["hi"]) as conn:
        await start(conn)
        for cwd, reason in (
            ("/", "home folder"),
            ("relative/path", "absolute"),
            (str(workspace / "missing"), "not a directory"),
            (os.path.expanduser("~"), "home folder"),
        ):
            with pytest.raises(RequestError) as caught:
                await conn.new_session(cwd=cwd, mcp_servers=[])
            assert caught.value.code == -32602
            assert reason in str(caught.value.data)


async def test_load_in_a_new_agent_replays_thoughts_calls_and_results(workspace: Path, state: Path) -> None:
    """The same as the two-process load, in one process: two agents, one after the other."""
    options = AcpOptions(state_dir=state, plugins=False, web_tools=False)
    reasoned = ChatResponse(
        text="Reading.",
        reasoning="I should read the notes.",
        tool_calls=(parse_tool_call("r1", "read_file", '{"path": "notes.txt"}'),),
        finish_reason="tool_calls",
    )
    async with in_process_acp(EditorClient(), options, ScriptedProvider([reasoned, "Read it."])) as conn:
        await start(conn)
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=_text("read notes"))
    (workspace / "notes.txt").write_text("changed behind the session's back\n")
    write = {"id": "w1", "name": "write_file", "arguments": {"path": "notes.txt", "content": "mine\n"}}
    loaded = EditorClient()
    async with in_process_acp(loaded, options, ScriptedProvider([{"tool_calls": [write]}, "Stale."])) as conn:
        await start(conn)
        await conn.load_session(cwd=str(workspace), session_id=session.session_id, mcp_servers=[])
        replayed = list(loaded.updates)
        await conn.prompt(session_id=session.session_id, prompt=_text("overwrite it"))
    assert [u.session_update for u in replayed] == [
        "user_message_chunk",
        "agent_thought_chunk",
        "agent_message_chunk",
        "tool_call",
        "tool_call_update",
        "agent_message_chunk",
    ]
    assert replayed[1].content.text == "I should read the notes."
    assert replayed[3].title == "Read notes.txt" and replayed[3].kind == "read"
    # the re-seeded version is the one read: the outside change is a conflict, not a blind write (FILE-4)
    refused = _tool_results(_record(state, session.session_id))["w1"]
    assert refused["success"] is False and refused["data"]["code"] == "conflict"
    assert (workspace / "notes.txt").read_text() == "changed behind the session's back\n"


MCP_SERVER = str(Path(__file__).resolve().parents[2] / "fixtures" / "mcp_tool_server.py")


async def test_the_clients_mcp_servers_become_tools_of_the_session(workspace: Path, serve: Serve) -> None:
    call = {"id": "m1", "name": "mcp__Fixture_Tools__echo", "arguments": {"text": "hello"}}
    server = McpServerStdio(name="Fixture Tools", command=sys.executable, args=[MCP_SERVER], env=[])
    client = EditorClient()
    async with serve(client, [{"tool_calls": [call]}, "Echoed."]) as conn:
        await start(conn)
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[server])
        answer = await conn.prompt(session_id=session.session_id, prompt=_text("echo"))
        with pytest.raises(RequestError) as http:
            await conn.new_session(
                cwd=str(workspace),
                mcp_servers=[
                    HttpMcpServer(type="http", name="web", url="http://127.0.0.1:9/mcp", headers=[])
                ],
            )
        failing = McpServerStdio(
            name="broken", command=sys.executable, args=[MCP_SERVER, "--fail-at-start"], env=[]
        )
        with pytest.raises(RequestError) as broken:
            await conn.new_session(cwd=str(workspace), mcp_servers=[failing])
    assert answer.stop_reason == "end_turn"
    (shown,) = client.of_kind("tool_call")
    assert shown.title == "Fixture_Tools: echo"  # named after its server
    assert client.call_updates("m1")[-1].status == "completed"
    assert http.value.code == -32602 and "only stdio" in str(http.value.data)
    assert broken.value.code == -32603 and "broken" in str(broken.value)


async def test_a_thinking_models_reasoning_streams_as_thoughts_and_goes_back_to_it(
    workspace: Path, state: Path, fake_openai: FakeOpenAI
) -> None:
    """DeepSeek's thinking mode over the loopback server: the second round must carry the reasoning."""
    call = {"id": "r1", "name": "read_file", "arguments": '{"path": "notes.txt"}'}
    fake_openai.script(
        [
            {"reasoning": "The user wants the notes. Read them.", "tool_calls": [call]},
            {"text": "They say alpha and beta.", "require_reasoning": "reasoning_content"},
        ]
    )
    config = LLMConfig(
        provider="deepseek", model="m", base_url=fake_openai.base_url, api_key=SecretStr("sk-t")
    )
    client = EditorClient()
    options = AcpOptions(state_dir=state, plugins=False, web_tools=False)
    async with OpenAICompatibleProvider(config) as llm, in_process_acp(client, options, llm) as conn:
        await start(conn)
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        answer = await conn.prompt(session_id=session.session_id, prompt=_text("what do the notes say?"))
    assert answer.stop_reason == "end_turn"
    assert client.text("agent_thought_chunk") == "The user wants the notes. Read them."
    assert client.text() == "They say alpha and beta."
    assert len(fake_openai.requests) == 2


@pytest.mark.parametrize(
    ("outcome", "finish", "expected"),
    [
        (RunOutcome.COMPLETED, "stop", "end_turn"),
        (RunOutcome.TERMINAL, "tool_calls", "end_turn"),
        (RunOutcome.EMPTY_ANSWER, "stop", "end_turn"),
        (RunOutcome.MAX_ROUNDS, "tool_calls", "max_turn_requests"),
        (RunOutcome.CANCELLED, None, "cancelled"),
        (RunOutcome.INCOMPLETE, "length", "max_tokens"),
        (RunOutcome.INCOMPLETE, "content_filter", "refusal"),
        (RunOutcome.INCOMPLETE, "sensitive", "refusal"),
    ],
)
def test_stop_reasons_map_from_the_loops_outcomes(
    outcome: RunOutcome, finish: str | None, expected: str
) -> None:
    assert stop_reason(RunSummary(outcome, finish_reason=finish)) == expected


def test_a_provider_failure_is_a_json_rpc_error_naming_it() -> None:
    summary = RunSummary(RunOutcome.ERROR, error="openai at http://127.0.0.1:9/v1: connection refused")
    with pytest.raises(RequestError) as caught:
        stop_reason(summary)
    assert caught.value.code == -32603
    assert "connection refused" in str(caught.value)


async def test_a_max_rounds_turn_and_a_provider_failure_reach_the_client(
    workspace: Path, state: Path
) -> None:
    looping = [{"tool_calls": [{"name": "list_dir", "arguments": {}}]}] * 3
    options = AcpOptions(state_dir=state, plugins=False, web_tools=False, max_rounds=2)
    async with in_process_acp(EditorClient(), options, ScriptedProvider(looping)) as conn:
        await start(conn)
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        answer = await conn.prompt(session_id=session.session_id, prompt=_text("loop"))
        assert answer.stop_reason == "max_turn_requests"
        with pytest.raises(RequestError) as caught:  # the script ran out: the provider fails
            await conn.prompt(session_id=session.session_id, prompt=_text("again"))
    assert caught.value.code == -32603 and "the model failed" in str(caught.value)


async def test_read_file_reads_the_editors_unsaved_buffer_and_a_write_waits_for_the_save(
    workspace: Path, state: Path, serve: Serve
) -> None:
    """``fs/read_text_file``: the buffer's text with the hash of what was returned as its version;
    a write is checked against the disk (FILE-4) and refused until the editor saves."""
    notes = str(workspace / "notes.txt")
    read = {"id": "r1", "name": "read_file", "arguments": {"path": "notes.txt"}}
    write = {"id": "w1", "name": "write_file", "arguments": {"path": "notes.txt", "content": "over\n"}}
    client = EditorClient(buffers={notes: "alpha\nbeta\nunsaved line\n"})
    async with serve(client, [{"tool_calls": [read]}, {"tool_calls": [write]}, "Asked to save."]) as conn:
        await start(conn, fs=True)
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=_text("rewrite notes"))
    results = _tool_results(_record(state, session.session_id))
    shown = results["r1"]["data"]
    assert client.reads == [notes]
    assert shown["content"] == "alpha\nbeta\nunsaved line\n"
    assert shown["version"] == version_of(b"alpha\nbeta\nunsaved line\n")
    assert shown["unsavedChanges"] is True and "save" in shown["note"]
    assert results["w1"]["success"] is False and results["w1"]["data"]["code"] == "conflict"
    assert (workspace / "notes.txt").read_text() == "alpha\nbeta\n"


async def test_a_saved_buffer_or_one_the_editor_lacks_is_the_disk_read(
    workspace: Path, state: Path, serve: Serve
) -> None:
    (workspace / "crlf.txt").write_bytes(b"one\r\ntwo\r\n")
    calls = [
        {"id": "r1", "name": "read_file", "arguments": {"path": "notes.txt"}},
        {"id": "r2", "name": "read_file", "arguments": {"path": "crlf.txt"}},
    ]
    write = {"id": "w1", "name": "write_file", "arguments": {"path": "notes.txt", "content": "over\n"}}
    client = EditorClient(buffers={str(workspace / "crlf.txt"): "one\ntwo\n"})  # notes.txt: not open
    async with serve(client, [{"tool_calls": calls}, {"tool_calls": [write]}, "Done."]) as conn:
        await start(conn, fs=True)
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=_text("read both"))
    results = _tool_results(_record(state, session.session_id))
    assert results["r1"]["data"]["version"] == version_of(b"alpha\nbeta\n")
    assert results["r2"]["data"]["version"] == version_of(b"one\r\ntwo\r\n")
    assert "unsavedChanges" not in results["r2"]["data"]
    assert results["w1"]["success"] is True
    assert (workspace / "notes.txt").read_text() == "over\n"


async def test_mcp_server_names_become_safe_distinct_tool_prefixes(workspace: Path, serve: Serve) -> None:
    servers: list[Any] = [
        McpServerStdio(name="My Server!", command=sys.executable, args=[MCP_SERVER], env=[]),
        McpServerStdio(name="My___Server", command=sys.executable, args=[MCP_SERVER], env=[]),
    ]
    calls = [
        {"id": "a", "name": "mcp__My_Server__echo", "arguments": {"text": "one"}},
        {"id": "b", "name": "mcp__My_Server_2__echo", "arguments": {"text": "two"}},
    ]
    client = EditorClient()
    async with serve(client, [{"tool_calls": calls}, "Both."]) as conn:
        await start(conn)
        session = await conn.new_session(cwd=str(workspace), mcp_servers=servers)
        await conn.prompt(session_id=session.session_id, prompt=_text("echo twice"))
        with pytest.raises(RequestError) as empty:
            await conn.prompt(session_id=session.session_id, prompt=_text("  "))
        with pytest.raises(RequestError) as no_command:
            await conn.new_session(
                cwd=str(workspace), mcp_servers=[McpServerStdio(name="x", command=" ", args=[], env=[])]
            )
    assert [client.call_updates(i)[-1].status for i in ("a", "b")] == ["completed", "completed"]
    assert empty.value.code == -32602 and "no text" in str(empty.value.data)
    assert no_command.value.code == -32602 and "command" in str(no_command.value.data)


async def test_apply_patch_shows_a_diff_for_every_file_it_touched(workspace: Path, serve: Serve) -> None:
    (workspace / "old.txt").write_text("keep\ngo\n")
    patch = "\n".join(
        [
            "*** Begin Patch",
            "*** Update File: notes.txt",
            "@@",
            " alpha",
            "-beta",
            "+BETA",
            "*** Add File: new.txt",
            "+fresh",
            "*** Delete File: old.txt",
            "*** End Patch",
        ]
    )
    calls = [
        {"id": "r1", "name": "read_file", "arguments": {"path": "notes.txt"}},
        {"id": "r2", "name": "read_file", "arguments": {"path": "old.txt"}},
    ]
    turns = [
        {"tool_calls": calls},
        {"tool_calls": [{"id": "p1", "name": "apply_patch", "arguments": {"patch": patch}}]},
        "ok",
    ]
    client = EditorClient()
    async with serve(client, turns) as conn:
        await start(conn)
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=_text("patch"))
    final = client.call_updates("p1")[-1]
    assert final.status == "completed"
    diffs = {d.path: (d.old_text, d.new_text) for d in final.content if d.type == "diff"}
    assert diffs == {
        str(workspace / "notes.txt"): ("alpha\nbeta\n", "alpha\nBETA\n"),
        str(workspace / "new.txt"): (None, "fresh\n"),
        str(workspace / "old.txt"): ("keep\ngo\n", ""),
    }


async def test_an_agent_killed_mid_call_reloads_with_the_call_shown_interrupted(
    workspace: Path, state: Path, acp_env: Callable[[list[Any]], dict[str, str]]
) -> None:
    """``kill -9`` while ``bash`` runs: the record has the call and no answer; a load shows it failed
    (interrupted), and the next turn answers it for the model too (REC-1)."""
    env = acp_env(SLEEPING)
    client = EditorClient(permissions=["allow_once"])
    async with spawn_acp(client, env, "--state-dir", str(state)) as (conn, process):
        session, turn = await _sleep_under_way(conn, client, workspace)
        process.kill()
        await process.wait()
        turn.cancel()
    assert [m["role"] for m in _record(state, session.session_id)] == ["system", "user", "assistant"]
    loaded = EditorClient()
    async with spawn_acp(loaded, acp_env(["Picked up again."]), "--state-dir", str(state)) as (conn, _):
        await start(conn)
        await conn.load_session(cwd=str(workspace), session_id=session.session_id, mcp_servers=[])
        shown = loaded.call_updates("s1")
        answer = await conn.prompt(session_id=session.session_id, prompt=_text("go on"))
    assert [u.status for u in shown] == ["pending", "failed"]
    assert "interrupted" in shown[-1].content[0].content.text
    assert answer.stop_reason == "end_turn"
    assert _tool_results(_record(state, session.session_id))["s1"]["data"]["code"] == "interrupted"


async def test_idle_sessions_past_the_limit_are_closed_and_come_back_when_used(
    workspace: Path, state: Path
) -> None:
    """``max_live_sessions``: a parked session boots again on its next prompt, its read state
    re-seeded from its record (FILE-7) and its "always allow" choices kept."""
    read = {"tool_calls": [{"id": "r1", "name": "read_file", "arguments": {"path": "notes.txt"}}]}
    write = {
        "tool_calls": [
            {"id": "w1", "name": "write_file", "arguments": {"path": "notes.txt", "content": "x\n"}}
        ]
    }
    bash = {"tool_calls": [{"id": "b1", "name": "bash", "arguments": {"command": "echo a"}}]}
    again = {"tool_calls": [{"id": "b2", "name": "bash", "arguments": {"command": "echo b"}}]}
    turns = [bash, "ran", read, "read", "other", write, "written", again, "ran again"]
    options = AcpOptions(state_dir=state, plugins=False, web_tools=False, max_live_sessions=1)
    client = EditorClient(permissions=["allow_always"])
    async with in_process_acp(client, options, ScriptedProvider(turns)) as conn:
        await start(conn)
        first = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.prompt(session_id=first.session_id, prompt=_text("run a"))
        await conn.prompt(session_id=first.session_id, prompt=_text("read"))
        second = await conn.new_session(cwd=str(workspace), mcp_servers=[])  # the first is parked
        await conn.prompt(session_id=second.session_id, prompt=_text("hello"))
        await conn.prompt(session_id=first.session_id, prompt=_text("write it"))  # booted again
        await conn.prompt(session_id=first.session_id, prompt=_text("run b"))
    results = _tool_results(_record(state, first.session_id))
    assert results["w1"]["success"] is True  # the recorded read still counts
    assert results["b2"]["data"]["stdout"] == "b\n"
    assert len(client.asked) == 1  # allow_always survived the parking


async def test_an_edit_of_a_fifo_is_refused_and_never_waited_on(workspace: Path, serve: Serve) -> None:
    """The diff capture opens what the model names without blocking: a FIFO hangs nothing."""
    os.mkfifo(workspace / "pipe")
    edits = [
        {"id": f"e{i}", "name": "write_file", "arguments": {"path": "pipe", "content": "x"}} for i in range(8)
    ]
    client = EditorClient()
    async with serve(client, [{"tool_calls": edits}, "Could not."]) as conn:
        await start(conn)
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        answer = await asyncio.wait_for(conn.prompt(session_id=session.session_id, prompt=_text("w")), 30)
        again = await asyncio.wait_for(conn.new_session(cwd=str(workspace), mcp_servers=[]), 30)
    assert answer.stop_reason == "end_turn" and again.session_id
    assert {client.call_updates(f"e{i}")[-1].status for i in range(8)} == {"failed"}


async def test_two_prompts_at_once_run_one_turn_and_refuse_the_other(
    workspace: Path, state: Path, serve: Serve
) -> None:
    client = EditorClient()
    async with serve(client, ["one", "two"]) as conn:
        await start(conn)
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        answers = await asyncio.gather(
            conn.prompt(session_id=session.session_id, prompt=_text("first")),
            conn.prompt(session_id=session.session_id, prompt=_text("second")),
            return_exceptions=True,
        )
    refused = [a for a in answers if isinstance(a, RequestError)]
    assert len(refused) == 1 and refused[0].code == -32600
    assert [m["role"] for m in _record(state, session.session_id)] == ["system", "user", "assistant"]


async def test_a_prompt_right_behind_a_cancel_mid_tool_is_taken(workspace: Path, serve: Serve) -> None:
    client = EditorClient(permissions=["allow_once"])
    async with serve(client, [SLEEPING[0], "after"]) as conn:
        session, turn = await _sleep_under_way(conn, client, workspace)
        await conn.cancel(session_id=session.session_id)
        after = await asyncio.wait_for(conn.prompt(session_id=session.session_id, prompt=_text("next")), 20)
        first = await turn
    assert (first.stop_reason, after.stop_reason) == ("cancelled", "end_turn")


async def test_a_failed_load_leaves_the_live_session_as_it_was(workspace: Path, serve: Serve) -> None:
    client = EditorClient()
    async with serve(client, ["first", "second"]) as conn:
        await start(conn)
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=_text("one"))
        with pytest.raises(RequestError) as bad:
            await conn.load_session(cwd="/", session_id=session.session_id, mcp_servers=[])
        answer = await conn.prompt(session_id=session.session_id, prompt=_text("two"))
    assert bad.value.code == -32602
    assert answer.stop_reason == "end_turn"


async def test_a_folder_holding_or_inside_the_state_directory_is_refused(tmp_path: Path) -> None:
    """Else the model could write session records that a later load replays as real."""
    project = tmp_path / "project"
    state = project / ".state"
    state.mkdir(parents=True)
    (state / "inner").mkdir()
    options = AcpOptions(state_dir=state, plugins=False, web_tools=False)
    async with in_process_acp(EditorClient(), options, ScriptedProvider(["hi"])) as conn:
        await start(conn)
        for cwd in (project, state, state / "inner"):
            with pytest.raises(RequestError) as caught:
                await conn.new_session(cwd=str(cwd), mcp_servers=[])
            assert caught.value.code == -32602 and "state directory" in str(caught.value.data)


async def test_locations_name_only_files_inside_the_workspace(
    workspace: Path, tmp_path: Path, serve: Serve
) -> None:
    """A path the tool will refuse (outside, a symlink out) is shown with no location to follow."""
    (tmp_path / "secret.txt").write_text("s3cr3t-token\n")
    (workspace / "link.txt").symlink_to(tmp_path / "secret.txt")
    calls = [
        {"id": "o1", "name": "read_file", "arguments": {"path": "../secret.txt"}},
        {"id": "o2", "name": "read_file", "arguments": {"path": str(tmp_path / "secret.txt")}},
        {"id": "o3", "name": "read_file", "arguments": {"path": "link.txt"}},
        {"id": "i1", "name": "read_file", "arguments": {"path": "notes.txt", "offset": 2}},
    ]
    client = EditorClient()
    async with serve(client, [{"tool_calls": calls}, "done"]) as conn:
        await start(conn)
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=_text("read"))
    for outside in ("o1", "o2", "o3"):
        shown = client.call_updates(outside)
        assert shown[0].locations is None
        assert shown[-1].status == "failed"
        assert "s3cr3t-token" not in json.dumps([u.model_dump(mode="json") for u in shown])
    (inside,) = client.call_updates("i1")[0].locations
    assert (inside.path, inside.line) == (str(workspace / "notes.txt"), 2)


async def test_a_session_open_in_one_agent_is_refused_to_another_until_it_closes(
    workspace: Path, state: Path
) -> None:
    """Two editor windows on one session would interleave two turns in one record: the second
    agent gets -32600 while the first has it open, and the session once the first is gone."""
    options = AcpOptions(state_dir=state, plugins=False, web_tools=False)
    async with in_process_acp(EditorClient(), options, ScriptedProvider(["one"])) as first:
        await start(first)
        session = await first.new_session(cwd=str(workspace), mcp_servers=[])
        await first.prompt(session_id=session.session_id, prompt=_text("hi"))
        async with in_process_acp(EditorClient(), options, ScriptedProvider(["two"])) as second:
            await start(second)
            with pytest.raises(RequestError) as busy:
                await second.load_session(cwd=str(workspace), session_id=session.session_id, mcp_servers=[])
        # the same agent may load it again (its own lock)
        await first.load_session(cwd=str(workspace), session_id=session.session_id, mcp_servers=[])
    assert busy.value.code == -32600 and "another steerable process" in str(busy.value.data)
    async with in_process_acp(EditorClient(), options, ScriptedProvider(["three"])) as third:
        await start(third)
        await third.load_session(cwd=str(workspace), session_id=session.session_id, mcp_servers=[])
        answer = await third.prompt(session_id=session.session_id, prompt=_text("again"))
    assert answer.stop_reason == "end_turn"


async def test_form_answers_off_the_schema_are_left_unanswered(
    workspace: Path, state: Path, serve: Serve
) -> None:
    question = {
        "intro": "Pick.",
        "questions": [
            {"id": "color", "text": "Color?", "type": "select", "options": ["red", "blue"]},
            {"id": "tags", "text": "Tags?", "type": "select", "options": ["a", "b"], "multiSelect": True},
            {"id": "name", "text": "Name?", "type": "text"},
            {"id": "ok", "text": "Fine?", "type": "select", "options": ["yes", "no"]},
        ],
    }
    client = EditorClient(answers=[{"color": "green", "tags": ["a", "z"], "name": 5, "ok": "yes"}])
    turns = [{"tool_calls": [{"id": "q1", "name": "ask_user", "arguments": question}]}, "ok"]
    async with serve(client, turns) as conn:
        await start(conn, elicitation=True)
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=_text("ask"))
    assert _tool_results(_record(state, session.session_id))["q1"]["data"]["answers"] == {"ok": "yes"}


async def test_an_embedded_file_is_clipped_and_its_uri_escaped(
    workspace: Path, state: Path, serve: Serve
) -> None:
    big = "x" * 150_000
    block = resource_block(embedded_text_resource('file:///a".txt"><evil>', big))
    async with serve(EditorClient(), ["seen"]) as conn:
        await start(conn)
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=[text_block("look"), block])
    user = next(m for m in _record(state, session.session_id) if m["role"] == "user")["content"]
    assert '<context uri="file:///a&quot;.txt&quot;&gt;&lt;evil&gt;">' in user
    assert "x" * 100_000 + "\n[..." in user and "x" * 100_001 not in user
    assert "50000 more characters not included" in user


async def test_the_real_command_with_an_openai_compatible_model_over_loopback(
    workspace: Path, state: Path, fake_openai: FakeOpenAI, child_env: Callable[..., dict[str, str]]
) -> None:
    """``steerable acp`` as a process, its model the loopback server speaking DeepSeek's stream:
    thoughts, a read, and a second round that must carry the reasoning back."""
    call = {"id": "r1", "name": "read_file", "arguments": '{"path": "notes.txt"}'}
    fake_openai.script(
        [
            {"reasoning": "Read the notes first.", "text": "Looking.", "tool_calls": [call]},
            {"text": "alpha and beta.", "require_reasoning": "reasoning_content"},
        ]
    )
    env = child_env(
        STEERABLE_PROVIDER="deepseek",
        STEERABLE_MODEL="deepseek-reasoner",
        STEERABLE_BASE_URL=fake_openai.base_url,
        STEERABLE_API_KEY="sk-test-acp",
    )
    client = EditorClient()
    async with spawn_acp(client, env, "--state-dir", str(state)) as (conn, _):
        await start(conn)
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        answer = await conn.prompt(session_id=session.session_id, prompt=_text("what do the notes say?"))
    assert answer.stop_reason == "end_turn"
    assert client.text("agent_thought_chunk") == "Read the notes first."
    assert client.text() == "Looking.alpha and beta."
    assert client.call_updates("r1")[-1].status == "completed"
    assert fake_openai.requests[0].body["stream"] is True and len(fake_openai.requests) == 2


async def test_two_loads_at_once_one_failing_keep_the_session_locked(workspace: Path, state: Path) -> None:
    """Loads of one id are serialised: the failed one does not give back the lock the other holds."""
    options = AcpOptions(state_dir=state, plugins=False, web_tools=False)
    async with in_process_acp(EditorClient(), options, ScriptedProvider(["one"])) as first:
        await start(first)
        session = await first.new_session(cwd=str(workspace), mcp_servers=[])
        await first.prompt(session_id=session.session_id, prompt=_text("hi"))
    failing = McpServerStdio(
        name="broken", command=sys.executable, args=[MCP_SERVER, "--fail-at-start"], env=[]
    )
    async with in_process_acp(EditorClient(), options, ScriptedProvider([])) as second:
        await start(second)
        results = await asyncio.gather(
            second.load_session(cwd=str(workspace), session_id=session.session_id, mcp_servers=[failing]),
            second.load_session(cwd=str(workspace), session_id=session.session_id, mcp_servers=[]),
            return_exceptions=True,
        )
        assert isinstance(results[0], RequestError) and not isinstance(results[1], BaseException)
        async with in_process_acp(EditorClient(), options, ScriptedProvider([])) as third:
            await start(third)
            with pytest.raises(RequestError) as busy:
                await third.load_session(cwd=str(workspace), session_id=session.session_id, mcp_servers=[])
    assert busy.value.code == -32600


async def test_a_parked_session_gives_its_lock_back_and_takes_it_again(workspace: Path, state: Path) -> None:
    """A closed idle session holds no lock (no descriptor per session ever opened); booting it
    again takes it back, or says another process has it."""
    options = AcpOptions(state_dir=state, plugins=False, web_tools=False, max_live_sessions=1)
    other_options = AcpOptions(state_dir=state, plugins=False, web_tools=False)
    async with in_process_acp(EditorClient(), options, ScriptedProvider(["a", "b"])) as conn:
        await start(conn)
        first = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.prompt(session_id=first.session_id, prompt=_text("one"))
        await conn.new_session(cwd=str(workspace), mcp_servers=[])  # the first is parked
        async with in_process_acp(EditorClient(), other_options, ScriptedProvider([])) as other:
            await start(other)
            await other.load_session(cwd=str(workspace), session_id=first.session_id, mcp_servers=[])
            with pytest.raises(RequestError) as busy:
                await conn.prompt(session_id=first.session_id, prompt=_text("two"))
        answer = await conn.prompt(session_id=first.session_id, prompt=_text("two"))  # free again
    assert busy.value.code == -32600 and "another steerable process" in str(busy.value.data)
    assert answer.stop_reason == "end_turn"


async def test_a_parked_session_whose_folder_went_stays_parked_until_it_is_back(
    tmp_path: Path, state: Path
) -> None:
    project, other = tmp_path / "project", tmp_path / "other"
    project.mkdir()
    other.mkdir()
    options = AcpOptions(state_dir=state, plugins=False, web_tools=False, max_live_sessions=1)
    async with in_process_acp(EditorClient(), options, ScriptedProvider(["a", "b"])) as conn:
        await start(conn)
        first = await conn.new_session(cwd=str(project), mcp_servers=[])
        await conn.new_session(cwd=str(other), mcp_servers=[])  # the first is parked
        project.rename(tmp_path / "away")
        for _ in range(2):  # the same answer each time, not "unknown session" the second time
            with pytest.raises(RequestError) as gone:
                await conn.prompt(session_id=first.session_id, prompt=_text("hi"))
            assert gone.value.code == -32602 and "not a directory" in str(gone.value.data)
        (tmp_path / "away").rename(project)
        answer = await conn.prompt(session_id=first.session_id, prompt=_text("hi"))
    assert answer.stop_reason == "end_turn"


async def test_a_lock_that_cannot_be_taken_is_a_worded_error(workspace: Path, state: Path) -> None:
    options = AcpOptions(state_dir=state, plugins=False, web_tools=False)
    async with in_process_acp(EditorClient(), options, ScriptedProvider(["one"])) as conn:
        await start(conn)
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=_text("hi"))
    (state / "sessions" / f"{session.session_id}.lock").unlink()
    (state / "sessions" / f"{session.session_id}.lock").mkdir()  # something in the way
    async with in_process_acp(EditorClient(), options, ScriptedProvider([])) as conn:
        await start(conn)
        with pytest.raises(RequestError) as caught:
            await conn.load_session(cwd=str(workspace), session_id=session.session_id, mcp_servers=[])
    assert caught.value.code == -32603
    assert "lock" in str(caught.value) and "cannot be opened" in str(caught.value)


async def test_an_editor_that_does_not_answer_or_a_big_file_reads_the_disk(
    workspace: Path, state: Path, serve: Serve, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("steerable_sidecar.acp._session.EDITOR_READ_TIMEOUT_S", 0.5)
    monkeypatch.setattr("steerable_sidecar.acp._session.MAX_EDITOR_READ_BYTES", 1000)
    (workspace / "big.txt").write_text("y\n" * 1000)
    calls = [
        {"id": "r1", "name": "read_file", "arguments": {"path": "notes.txt"}},
        {"id": "r2", "name": "read_file", "arguments": {"path": "big.txt"}},
    ]
    again = {"id": "r3", "name": "read_file", "arguments": {"path": "notes.txt"}}
    client = EditorClient(hold_reads=asyncio.Event())  # an editor that never answers fs/read_text_file
    async with serve(client, [{"tool_calls": calls}, {"tool_calls": [again]}, "read"]) as conn:
        await start(conn, fs=True)
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        answer = await asyncio.wait_for(conn.prompt(session_id=session.session_id, prompt=_text("r")), 20)
    results = _tool_results(_record(state, session.session_id))
    assert answer.stop_reason == "end_turn"
    assert results["r1"]["data"]["content"] == "alpha\nbeta\n"
    assert results["r2"]["data"]["totalLines"] == 1000
    assert results["r3"]["data"]["content"] == "alpha\nbeta\n"
    # the big file was not asked of the editor, nor anything after the one read it left unanswered
    assert client.reads == [str(workspace / "notes.txt")]


async def test_list_dir_without_a_path_is_located_at_the_root(workspace: Path, serve: Serve) -> None:
    client = EditorClient()
    async with serve(
        client, [{"tool_calls": [{"id": "l1", "name": "list_dir", "arguments": {}}]}, "ok"]
    ) as conn:
        await start(conn)
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=_text("ls"))
    (where,) = client.call_updates("l1")[0].locations
    assert where.path == str(workspace)


async def test_sessions_booted_again_together_keep_their_locks_while_their_turns_run(
    tmp_path: Path, state: Path
) -> None:
    """Three parked sessions prompted at once, two live at most: none is parked again between its
    reboot and its turn, so each holds its lock while it runs and another process is refused."""
    projects = [tmp_path / f"p{i}" for i in range(5)]
    for project in projects:
        project.mkdir()
    slow = {"tool_calls": [{"name": "bash", "arguments": {"command": "sleep 1"}}]}
    options = AcpOptions(state_dir=state, plugins=False, web_tools=False, max_live_sessions=2)
    other_options = AcpOptions(state_dir=state, plugins=False, web_tools=False)
    client = EditorClient(permissions=["allow_always"] * 3)
    async with in_process_acp(client, options, ScriptedProvider([slow, slow, slow, "a", "b", "c"])) as conn:
        await start(conn)
        ids = [(await conn.new_session(cwd=str(p), mcp_servers=[])).session_id for p in projects]
        parked = ids[:3]  # the two most recent stay live
        turns = [asyncio.ensure_future(conn.prompt(session_id=i, prompt=_text("sleep"))) for i in parked]
        await client.wait_for(
            lambda c: sum(u.status == "in_progress" for u in c.of_kind("tool_call_update")) >= 3
        )
        async with in_process_acp(EditorClient(), other_options, ScriptedProvider([])) as other:
            await start(other)
            refused = []
            for session_id, project in zip(parked, projects, strict=False):
                with pytest.raises(RequestError) as busy:
                    await other.load_session(cwd=str(project), session_id=session_id, mcp_servers=[])
                refused.append(busy.value.code)
        answers = await asyncio.gather(*turns)
    assert refused == [-32600, -32600, -32600]
    assert [a.stop_reason for a in answers] == ["end_turn"] * 3


async def test_a_load_while_its_turn_runs_is_refused_and_the_turn_goes_on(
    workspace: Path, serve: Serve
) -> None:
    client = EditorClient(permissions=["allow_once"])
    async with serve(client, [SLEEPING[0], "done"]) as conn:
        session, turn = await _sleep_under_way(conn, client, workspace)
        with pytest.raises(RequestError) as busy:
            await conn.load_session(cwd=str(workspace), session_id=session.session_id, mcp_servers=[])
        assert not turn.done()
        await conn.cancel(session_id=session.session_id)
        answer = await asyncio.wait_for(turn, 20)
        await conn.load_session(cwd=str(workspace), session_id=session.session_id, mcp_servers=[])
    assert busy.value.code == -32600 and "a turn is running" in str(busy.value.data)
    assert answer.stop_reason == "cancelled"


async def test_calls_nested_too_deeply_are_shown_as_text_and_a_load_replays_them(
    workspace: Path, state: Path
) -> None:  # SAFE-6
    """The model's runaway argument text (300 levels, decodable; 1,000, not) is refused by the
    loop, shown to the editor as the text it is, and a later ``session/load`` replays it."""
    texts = {levels: '{"path": ' + "[" * (levels - 1) + "]" * (levels - 1) + "}" for levels in (300, 1_000)}
    calls = [{"id": f"d{levels}", "name": "read_file", "arguments": text} for levels, text in texts.items()]
    options = AcpOptions(state_dir=state, plugins=False, web_tools=False)
    client = EditorClient()
    async with in_process_acp(client, options, ScriptedProvider([{"tool_calls": calls}, "Flatter."])) as conn:
        await start(conn)
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        done = await conn.prompt(session_id=session.session_id, prompt=_text("go"))
    assert done.stop_reason == "end_turn"
    loaded = EditorClient()
    async with in_process_acp(loaded, options, ScriptedProvider([])) as conn:
        await start(conn)
        await conn.load_session(cwd=str(workspace), session_id=session.session_id, mcp_servers=[])
    for shown in (client, loaded):
        for levels, text in texts.items():
            started, finished = shown.call_updates(f"d{levels}")
            assert (started.session_update, started.raw_input) == ("tool_call", text)
            assert finished.status == "failed"
    recorded = _tool_results(_record(state, session.session_id))
    assert recorded["d300"]["error"] == (
        "Invalid arguments for read_file: nested 300 levels deep; at most 64 levels are accepted. "
        "Send flatter arguments."
    )
    assert recorded["d1000"]["data"] == {"code": "arguments_too_deep", "maxDepth": 64}
