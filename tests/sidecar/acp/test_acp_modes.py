"""``steerable acp``'s session modes, slash commands, session list and context usage (docs/acp.md).

Each mode is a consent policy (MODE-2's table is ``default``; MODE-5: the consent gate applies
it): the tests drive the official SDK's client in this process against the scripted model and
check what the editor is asked, what the model is answered and what is on disk.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError, text_block
from acp.client.connection import ClientSideConnection
from acp_client import AGENT_COMMAND, EditorClient, in_process_acp, start

from steerable_agent_runtime.llm import ChatRequest, ChatResponse, ScriptedProvider, StreamEvent, Usage
from steerable_agent_runtime.modes import CONSENT_POLICIES
from steerable_sidecar.acp._agent import AcpOptions
from steerable_sidecar.acp._listing import PAGE_SIZE

pytestmark = pytest.mark.slow

WRITE = {"id": "w1", "name": "write_file", "arguments": {"path": "new.txt", "content": "hello\n"}}
BASH = {"id": "b1", "name": "bash", "arguments": {"command": "echo hi > ran.txt"}}
READ = {"id": "r1", "name": "read_file", "arguments": {"path": "notes.txt"}}


@pytest.fixture
def state(tmp_path: Path) -> Path:
    path = tmp_path / "state"
    path.mkdir()
    return path


Agent = Callable[..., AbstractAsyncContextManager[ClientSideConnection]]


class RecordingProvider(ScriptedProvider):
    """The scripted model, keeping what each request carried (the tool results it was answered)."""

    def __init__(self, turns: list[Any]) -> None:
        super().__init__(turns)
        self.requests: list[ChatRequest] = []

    async def complete(self, request: ChatRequest) -> ChatResponse:
        self.requests.append(request)
        return await super().complete(request)

    def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        self.requests.append(request)
        return super().stream(request)


@pytest.fixture
def agent(state: Path) -> Agent:
    @asynccontextmanager
    async def make(
        client: EditorClient, provider: ScriptedProvider, **options: Any
    ) -> AsyncIterator[ClientSideConnection]:
        settings = AcpOptions(state_dir=state, plugins=False, web_tools=False, **options)
        async with in_process_acp(client, settings, provider) as conn:
            await start(conn)
            yield conn

    return make


def _tool_answer(provider: RecordingProvider, call_id: str) -> dict[str, Any]:
    """What the model was answered for ``call_id`` (the tool message's JSON)."""
    for request in provider.requests:
        for message in request.messages:
            if message.get("role") == "tool" and message.get("tool_call_id") == call_id:
                answer: dict[str, Any] = json.loads(message["content"])
                return answer
    raise AssertionError(f"the model was never answered for {call_id}")


def _dump(items: Any) -> Any:
    return [item.model_dump(by_alias=True, exclude_none=True) for item in items]


# -- the modes -------------------------------------------------------------------------------------


async def test_a_new_session_offers_the_four_modes_and_starts_in_the_specs_default(
    agent: Agent, workspace: Path
) -> None:
    """The mode picker's list (``modes``) and the ``mode`` config option say the same (MODE-2)."""
    async with agent(EditorClient(), RecordingProvider([])) as conn:
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
    assert session.modes is not None
    assert session.modes.current_mode_id == "default"
    assert [(m.id, m.name) for m in session.modes.available_modes] == [
        ("read-only", "Read only"),
        ("ask", "Ask"),
        ("default", "Default"),
        ("auto", "Auto"),
    ]
    options = _dump(session.config_options or [])
    assert [o["id"] for o in options] == ["model", "mode"]
    mode = options[1]
    assert mode["category"] == "mode" and mode["currentValue"] == "default"
    assert [choice["value"] for choice in mode["options"]] == ["read-only", "ask", "default", "auto"]


async def test_in_ask_mode_an_edit_waits_for_the_editors_permission(agent: Agent, workspace: Path) -> None:
    """MODE-5: ``ask`` puts a safe_write call to the user; a rejection leaves the disk as it was."""
    client = EditorClient(permissions=["reject_once"])
    provider = RecordingProvider([{"tool_calls": [WRITE]}, "ok"])
    async with agent(client, provider) as conn:
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.set_session_mode(mode_id="ask", session_id=session.session_id)
        await conn.prompt(session_id=session.session_id, prompt=[text_block("write it")])
    assert [call.title for call, _ in client.asked] and client.asked[0][0].kind == "edit"
    answer = _tool_answer(provider, "w1")
    assert answer["success"] is False and answer["needsFollowup"] is True
    assert answer["data"]["code"] == "consent_denied"
    assert not (workspace / "new.txt").exists()


async def test_ask_mode_asks_even_for_a_tool_allowed_always_before_and_offers_no_always(
    agent: Agent, workspace: Path
) -> None:
    """``ask`` asks before each call: an "allow always" given in ``default`` is set aside while it
    holds, and counts again once the session is back in ``default``."""
    client = EditorClient(permissions=["allow_always", "allow_once"])
    bashes = [{"tool_calls": [{**BASH, "id": f"b{n}"}]} for n in range(3)]
    provider = RecordingProvider([bashes[0], "one", bashes[1], "two", bashes[2], "three"])
    async with agent(client, provider) as conn:
        session = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        await conn.prompt(session_id=session, prompt=[text_block("first")])
        await conn.set_session_mode(mode_id="ask", session_id=session)
        await conn.prompt(session_id=session, prompt=[text_block("second")])
        await conn.set_session_mode(mode_id="default", session_id=session)
        await conn.prompt(session_id=session, prompt=[text_block("third")])
    assert [[option.option_id for option in options] for _, options in client.asked] == [
        ["allow_once", "allow_always", "reject_once"],
        ["allow_once", "reject_once"],
    ]
    assert all(_tool_answer(provider, f"b{n}")["success"] for n in range(3))


async def test_in_default_mode_an_edit_runs_without_asking(agent: Agent, workspace: Path) -> None:
    """MODE-2: the spec's table: safe_write auto-runs, so the editor is asked nothing."""
    client = EditorClient()
    async with agent(client, RecordingProvider([{"tool_calls": [WRITE]}, "ok"])) as conn:
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=[text_block("write it")])
    assert client.asked == []
    assert (workspace / "new.txt").read_text() == "hello\n"


async def test_read_only_refuses_writes_and_commands_without_asking_and_reads_still_run(
    agent: Agent, workspace: Path
) -> None:
    """The model is told which mode refused the call and what to do; nothing is written or run."""
    client = EditorClient(permissions=["allow_once", "allow_once"])
    provider = RecordingProvider([{"tool_calls": [READ, WRITE, BASH]}, "ok"])
    async with agent(client, provider) as conn:
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        answer = await conn.set_config_option(
            config_id="mode", session_id=session.session_id, value="read-only"
        )
        await conn.prompt(session_id=session.session_id, prompt=[text_block("look")])
    assert _dump(answer.config_options)[1]["currentValue"] == "read-only"
    assert client.asked == []
    assert _tool_answer(provider, "r1")["success"] is True
    refused = _tool_answer(provider, "w1")
    assert refused["error"] == (
        "The session is in read-only mode, which does not allow write_file (a safe_write-mode tool). "
        "Continue with the tools it allows, or ask the user to switch the mode."
    )
    assert refused["needsFollowup"] is True
    assert refused["data"] == {"code": "consent_denied", "mode": "safe_write", "policy": "read-only"}
    assert _tool_answer(provider, "b1")["data"]["mode"] == "local"
    assert not (workspace / "new.txt").exists() and not (workspace / "ran.txt").exists()
    # the mode picked through the config option is said as a current_mode_update too
    assert [u.current_mode_id for u in client.of_kind("current_mode_update")] == ["read-only"]


async def test_auto_runs_a_command_without_asking(agent: Agent, workspace: Path) -> None:
    client = EditorClient()
    async with agent(
        client, RecordingProvider([{"tool_calls": [BASH]}, "ok"]), consent=_policy("auto")
    ) as conn:
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        assert session.modes is not None and session.modes.current_mode_id == "auto"
        await conn.prompt(session_id=session.session_id, prompt=[text_block("run")])
    assert client.asked == []
    assert (workspace / "ran.txt").read_text() == "hi\n"


async def test_an_unknown_mode_is_refused_with_the_modes_listed(agent: Agent, workspace: Path) -> None:
    async with agent(EditorClient(), RecordingProvider([])) as conn:
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        with pytest.raises(RequestError) as raised:
            await conn.set_session_mode(mode_id="yolo", session_id=session.session_id)
        with pytest.raises(RequestError) as unknown_session:
            await conn.set_session_mode(mode_id="ask", session_id="nope")
    assert raised.value.code == -32602
    assert raised.value.data == {
        "modeId": "yolo",
        "reason": "unknown mode: the session's modes are read-only, ask, default, auto",
    }
    assert unknown_session.value.code == -32002


async def test_a_parked_session_and_a_loaded_one_keep_their_mode(agent: Agent, workspace: Path) -> None:
    """A session closed while idle (``max_live_sessions``) boots again in the mode it was left in."""
    client = EditorClient()
    provider = RecordingProvider(["hi", {"tool_calls": [WRITE]}, "ok"])
    async with agent(client, provider, max_live_sessions=1) as conn:
        first = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.set_session_mode(mode_id="read-only", session_id=first.session_id)
        await conn.prompt(session_id=first.session_id, prompt=[text_block("hi")])
        await conn.new_session(cwd=str(workspace), mcp_servers=[])  # parks the first
        await conn.prompt(session_id=first.session_id, prompt=[text_block("write")])
        loaded = await conn.load_session(cwd=str(workspace), session_id=first.session_id, mcp_servers=[])
    assert _tool_answer(provider, "w1")["data"]["policy"] == "read-only"
    assert loaded.modes is not None and loaded.modes.current_mode_id == "read-only"


async def test_a_session_loaded_by_another_process_keeps_the_mode_and_model_it_was_left_with(
    agent: Agent, workspace: Path, state: Path
) -> None:
    """The picks go to the session's record (made before its first prompt too): a new process's
    ``session/load`` opens the session in them, and the mode holds for its calls."""
    async with agent(EditorClient(), RecordingProvider(["hi"])) as conn:
        first = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        await conn.set_session_mode(mode_id="ask", session_id=first)  # no record yet
        await conn.prompt(session_id=first, prompt=[text_block("hi")])
        await conn.set_session_mode(mode_id="read-only", session_id=first)
        await conn.set_config_option(config_id="model", session_id=first, value="acme/coder-7b")
    kinds = [
        json.loads(line)["type"] for line in (state / "sessions" / f"{first}.jsonl").read_text().splitlines()
    ]
    assert kinds[:2] == ["session", "choice"] and kinds[-2:] == ["choice", "choice"]
    provider = RecordingProvider([{"tool_calls": [WRITE]}, "ok"])
    async with agent(EditorClient(), provider, consent=CONSENT_POLICIES["auto"]) as conn:
        loaded = await conn.load_session(cwd=str(workspace), session_id=first, mcp_servers=[])
        await conn.prompt(session_id=first, prompt=[text_block("write")])
    assert loaded.modes is not None and loaded.modes.current_mode_id == "read-only"
    assert [o["currentValue"] for o in _dump(loaded.config_options or [])] == ["acme/coder-7b", "read-only"]
    assert _tool_answer(provider, "w1")["data"]["policy"] == "read-only"
    assert not (workspace / "new.txt").exists()
    assert {request.model for request in provider.requests} == {"acme/coder-7b"}


async def test_a_recorded_pick_this_process_cannot_take_leaves_its_own_defaults(
    agent: Agent, workspace: Path, state: Path
) -> None:
    """A mode it does not offer, a model id with a space, and a ``choice`` nested in another entry
    (a trace's data) are not taken: the process's ``--consent`` mode and its model hold."""
    sessions = state / "sessions"
    sessions.mkdir()
    lines = [
        {"v": 1, "type": "session", "session": {"cwd": str(workspace), "title": "t"}},
        {"v": 1, "type": "choice", "choice": {"mode": "yolo", "model": "bad model"}},
        {"v": 1, "type": "trace", "trace": {"data": {"type": "choice", "choice": {"mode": "auto"}}}},
    ]
    (sessions / "old.jsonl").write_text(
        "".join(json.dumps(line, separators=(",", ":")) + "\n" for line in lines)
    )
    async with agent(EditorClient(), RecordingProvider([]), consent=CONSENT_POLICIES["ask"]) as conn:
        loaded = await conn.load_session(cwd=str(workspace), session_id="old", mcp_servers=[])
    assert loaded.modes is not None and loaded.modes.current_mode_id == "ask"
    assert [o["currentValue"] for o in _dump(loaded.config_options or [])] == ["default", "ask"]


def test_the_last_choice_is_found_across_read_steps_and_a_torn_last_line(tmp_path: Path) -> None:
    """The record is read backwards in steps: a choice line cut by a step is read whole."""
    from steerable_agent_runtime.record import DurableRecord
    from steerable_sidecar.acp import _choices as _acp_choices

    path = tmp_path / "s.jsonl"
    choice = json.dumps(
        {"v": 1, "type": "choice", "choice": {"mode": "ask", "model": None}}, separators=(",", ":")
    )
    filler = json.dumps({"v": 1, "type": "message", "message": {"role": "user", "content": "x" * 3000}})
    torn = '{"v":1,"type":"choice","choice":{"mode":"au'
    path.write_text(f"{choice}\n" + f"{filler}\n" * 3 + torn)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_acp_choices, "_TAIL_BYTES", 100)  # many steps, the choice cut between two
        assert _acp_choices._last_choice(DurableRecord(path)) == {"mode": "ask", "model": None}
    assert _acp_choices._last_choice(DurableRecord(tmp_path / "none.jsonl")) is None


MCP_SERVER = str(Path(__file__).resolve().parents[2] / "fixtures" / "mcp_tool_server.py")


@pytest.mark.parametrize(
    ("mode", "asked"), [("default", []), ("ask", [("Fixture_Tools: delete_note", "delete")])]
)
async def test_an_editors_mcp_tool_asks_by_the_sessions_mode_under_its_servers_name(
    agent: Agent, workspace: Path, mode: str, asked: list[tuple[str, str]]
) -> None:
    """MODE-4, MODE-5: the server's destructive tool runs by the spec's table in ``default`` and is
    put to the user in ``ask``, titled with its server's name."""
    import sys

    from acp.schema import McpServerStdio

    server = McpServerStdio(name="Fixture Tools", command=sys.executable, args=[MCP_SERVER], env=[])
    delete = {"id": "d1", "name": "mcp__Fixture_Tools__delete_note", "arguments": {"note_id": "n1"}}
    client = EditorClient(permissions=["allow_once"])
    provider = RecordingProvider([{"tool_calls": [delete]}, "ok"])
    async with agent(client, provider) as conn:
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[server])
        await conn.set_session_mode(mode_id=mode, session_id=session.session_id)
        await conn.prompt(session_id=session.session_id, prompt=[text_block("delete n1")])
    assert [(call.title, call.kind) for call, _ in client.asked] == asked
    assert _tool_answer(provider, "d1")["success"] is True
    shown = client.call_updates("d1")[0]
    assert (shown.title, shown.kind) == ("Fixture_Tools: delete_note", "delete")


def _policy(name: str) -> Any:
    from steerable_agent_runtime import consent_policy

    return consent_policy(name)


# -- slash commands ---------------------------------------------------------------------------------


async def test_slash_commands_are_announced_and_answered_without_the_model(
    agent: Agent, workspace: Path
) -> None:
    client = EditorClient()
    provider = RecordingProvider([])
    async with agent(client, provider) as conn:
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await client.wait_for(lambda c: c.of_kind("available_commands_update"))
        reply = await conn.prompt(session_id=session.session_id, prompt=[text_block("/mode ask")])
        await conn.prompt(session_id=session.session_id, prompt=[text_block("/tools")])
    commands = client.of_kind("available_commands_update")[0].available_commands
    assert [c.name for c in commands] == ["mode", "model", "tools"]
    assert reply.stop_reason == "end_turn"
    assert provider.requests == []  # no model call
    text = client.text()
    assert text.startswith("Mode: ask: Ask before every write, command and outside call.\n")
    assert "- `write_file` (safe_write): asks first" in text
    assert "- `read_file` (read): runs" in text
    assert [u.current_mode_id for u in client.of_kind("current_mode_update")] == ["ask"]


# -- session/list ------------------------------------------------------------------------------------


async def test_session_list_names_the_recorded_sessions_newest_first_with_their_titles(
    agent: Agent, workspace: Path, tmp_path: Path, state: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    client = EditorClient()
    async with agent(client, RecordingProvider(["one", "two"])) as conn:
        first = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.prompt(session_id=first.session_id, prompt=[text_block("Fix the parser\nplease")])
        second = await conn.new_session(cwd=str(other), mcp_servers=[])
        await conn.prompt(session_id=second.session_id, prompt=[text_block("Other work")])
        os.utime(state / "sessions" / f"{first.session_id}.jsonl", ns=(1, 1))  # the older one
        unused = await conn.new_session(cwd=str(workspace), mcp_servers=[])  # no prompt: no record
        listed = await conn.list_sessions()
        mine = await conn.list_sessions(cwd=str(workspace))
    assert [(s.session_id, s.title, s.cwd) for s in listed.sessions] == [
        (second.session_id, "Other work", str(other.resolve())),
        (first.session_id, "Fix the parser", str(workspace.resolve())),
    ]
    assert listed.next_cursor is None
    assert [s.session_id for s in mine.sessions] == [first.session_id]
    assert unused.session_id not in {s.session_id for s in listed.sessions}
    assert [u.title for u in client.of_kind("session_info_update")] == ["Fix the parser", "Other work"]


async def test_session_list_pages_and_skips_records_it_cannot_place(
    agent: Agent, workspace: Path, state: Path
) -> None:
    sessions = state / "sessions"
    sessions.mkdir()
    for n in range(PAGE_SIZE + 5):
        entry = {"v": 1, "type": "session", "session": {"cwd": str(workspace), "title": f"task {n}"}}
        path = sessions / f"s{n:03d}.jsonl"
        path.write_text(json.dumps(entry) + "\n")
        os.utime(path, ns=(n * 10**9, n * 10**9))
    (sessions / "run.jsonl").write_text('{"v": 1, "type": "message", "message": {"role": "user"}}\n')
    (sessions / "broken.jsonl").write_text("not json\n")
    async with agent(EditorClient(), RecordingProvider([])) as conn:
        first = await conn.list_sessions()
        assert first.next_cursor is not None
        rest = await conn.list_sessions(cursor=first.next_cursor)
        with pytest.raises(RequestError) as bad:
            await conn.list_sessions(cursor="forged")
        with pytest.raises(RequestError) as relative:
            await conn.list_sessions(cwd="relative/dir")
    ids = [s.session_id for s in [*first.sessions, *rest.sessions]]
    assert len(first.sessions) == PAGE_SIZE and rest.next_cursor is None
    assert ids == [f"s{n:03d}" for n in reversed(range(PAGE_SIZE + 5))]
    assert bad.value.code == -32602 and relative.value.code == -32602


# -- usage -------------------------------------------------------------------------------------------


async def test_a_turn_ends_with_a_usage_update_when_the_context_window_is_known(
    agent: Agent, workspace: Path
) -> None:
    answer = ChatResponse(text="done", usage=Usage(prompt_tokens=1200, completion_tokens=34))
    client = EditorClient()
    async with agent(client, RecordingProvider([answer]), context_window=8192) as conn:
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=[text_block("hi")])
    assert [(u.used, u.size) for u in client.of_kind("usage_update")] == [(1234, 8192)]


async def test_without_a_context_window_no_usage_update_is_sent(agent: Agent, workspace: Path) -> None:
    answer = ChatResponse(text="done", usage=Usage(prompt_tokens=10, completion_tokens=2))
    client = EditorClient()
    async with agent(client, RecordingProvider([answer])) as conn:
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=[text_block("hi")])
    assert client.of_kind("usage_update") == []


# -- the command line -------------------------------------------------------------------------------


def test_a_bad_consent_value_exits_2_naming_where_it_came_from(tmp_path: Path) -> None:
    env = {**os.environ, "STEERABLE_CONSENT": "yolo", "STEERABLE_STATE_DIR": str(tmp_path)}
    done = subprocess.run(AGENT_COMMAND, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert "STEERABLE_CONSENT='yolo' is not a consent policy: use one of read-only, ask, default, auto" in (
        done.stderr
    )
    flagged = subprocess.run(
        [*AGENT_COMMAND, "--consent", "nope"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert flagged.returncode == 2 and "--consent='nope' is not a consent policy" in flagged.stderr


def test_an_mcp_tool_is_shown_by_what_it_does_and_under_its_servers_name() -> None:
    """The reference filesystem server's ``write_file`` (destructiveHint: true) is an edit, not a delete."""
    from steerable_agent_runtime.modes import ToolMode
    from steerable_sidecar.acp._updates import tool_kind, tool_title

    name = "mcp__filesystem__write_file"
    assert tool_kind(name, ToolMode.DESTRUCTIVE) == "edit"
    assert tool_title(name, {"path": "notes.txt", "content": "x"}) == "filesystem: Write notes.txt"
    assert tool_kind("mcp__filesystem__move_file", ToolMode.DESTRUCTIVE) == "move"
    assert tool_kind("mcp__git__git_log", ToolMode.READ) == "read"  # unknown first word: by mode
    assert tool_title("mcp__github__create_issue", {"title": "bug"}) == "github: create_issue"
    assert tool_kind("mcp__broken", ToolMode.LOCAL) == "execute"


async def test_choices_made_one_way_are_told_the_other_way_and_a_bad_name_is_answered(
    agent: Agent, workspace: Path
) -> None:
    """``session/set_mode`` sends a ``config_option_update``; ``/mode`` and ``/model`` send both
    kinds; an unknown name in a command is said in the answer and changes nothing."""
    client = EditorClient()
    async with agent(client, RecordingProvider([])) as conn:
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.set_session_mode(mode_id="ask", session_id=session.session_id)
        await conn.prompt(session_id=session.session_id, prompt=[text_block("/mode bogus")])
        await conn.prompt(session_id=session.session_id, prompt=[text_block("/model gpt-x")])
    updates = client.of_kind("config_option_update")
    assert [_dump(u.config_options)[1]["currentValue"] for u in updates] == ["ask", "ask"]
    assert _dump(updates[-1].config_options)[0]["currentValue"] == "gpt-x"
    text = client.text()
    assert text.startswith("unknown mode: the session's modes are read-only, ask, default, auto\nMode: ask:")
    assert text.endswith("Model: gpt-x\nOffered: default, gpt-x.")


async def test_a_turn_without_counts_sends_no_usage_update_from_the_turn_before(
    agent: Agent, workspace: Path
) -> None:
    counted = ChatResponse(text="one", usage=Usage(prompt_tokens=100, completion_tokens=20))
    client = EditorClient()
    async with agent(client, RecordingProvider([counted, "two"]), context_window=8192) as conn:
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=[text_block("a")])
        await conn.prompt(session_id=session.session_id, prompt=[text_block("b")])
    assert [(u.used, u.size) for u in client.of_kind("usage_update")] == [(120, 8192)]


async def test_session_list_clips_what_a_record_claims_and_skips_ids_load_refuses(
    agent: Agent, workspace: Path, state: Path
) -> None:
    sessions = state / "sessions"
    sessions.mkdir()
    for name, title in (("good", "\x1b]0;pwned\x07" + "x" * 60_000), ("has space", "t"), ("..weird", "t")):
        entry = {"v": 1, "type": "session", "session": {"cwd": str(workspace), "title": title}}
        (sessions / f"{name}.jsonl").write_text(json.dumps(entry) + "\n")
    async with agent(EditorClient(), RecordingProvider([])) as conn:
        listed = await conn.list_sessions()
    (only,) = listed.sessions
    assert only.session_id == "good" and only.title is not None
    assert len(only.title) == 80 and "\x1b" not in only.title and "\x07" not in only.title
