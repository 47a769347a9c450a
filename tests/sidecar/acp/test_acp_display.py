"""What an editor is shown of ``steerable acp``'s calls, from a new user's attack (docs/acp.md, "Tool calls").

A call's result, as its last ``tool_call_update`` shows it, is plain text with the session's
secrets redacted, as its live output is (the model's result, ``rawOutput``, unchanged); a title
cannot misstate the call (a command's further lines counted, control characters and bidi
controls made visible); a tool named as if it only reads but whose mode says otherwise gets
neither a read kind nor a "Read ..." title; ``/tools`` says what the mode will do with each tool,
as the consent gate judges it; mode ids and slash command names are taken in any case. The
tests drive the official ACP SDK's client against a real ``steerable acp`` where the behaviour
depends on the process's environment, in this process otherwise.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError, text_block
from acp.client.connection import ClientSideConnection
from acp.schema import McpServerStdio
from acp_client import EditorClient, in_process_acp, spawn_acp, start, write_script

from steerable_agent_runtime.llm import ScriptedProvider
from steerable_agent_runtime.modes import ToolMode
from steerable_sidecar.acp._agent import AcpOptions
from steerable_sidecar.acp._updates import result_content, tool_kind, tool_title, visible
from steerable_sidecar.shared._secrets import Redactor

pytestmark = pytest.mark.slow

KEY = "sk-test-1234567890abcdef"
OSC52 = "\x1b]52;c;ZXZpbA==\x07"
MCP_SERVER = str(Path(__file__).resolve().parents[2] / "fixtures" / "mcp_tool_server.py")

Agent = Callable[..., AbstractAsyncContextManager[ClientSideConnection]]


@pytest.fixture
def agent(tmp_path: Path) -> Agent:
    @asynccontextmanager
    async def make(
        client: EditorClient, turns: list[Any], **options: Any
    ) -> AsyncIterator[ClientSideConnection]:
        settings = AcpOptions(state_dir=tmp_path / "state", plugins=False, **{"web_tools": False, **options})
        async with in_process_acp(client, settings, ScriptedProvider(turns)) as conn:
            await start(conn)
            yield conn

    return make


def _content(update: Any) -> list[str]:
    """The texts of an update's content blocks."""
    return [block.content.text for block in update.content or [] if block.type == "content"]


# -- 1. a result is shown plain and redacted ------------------------------------------------------


async def test_a_finished_calls_content_is_plain_and_redacted_the_models_result_unchanged(
    workspace: Path, tmp_path: Path, child_env: Callable[..., dict[str, str]]
) -> None:
    """The report's repro: the key in the process's environment, ``--consent auto``; the live
    updates were clean, the completed one (which stays on screen) showed the key and the OSC 52."""
    code = f"print('k={KEY}' + chr(27) + '[31mred' + chr(27) + '[0m')\nreturn 'ok'"
    turns = [
        {"tool_calls": [{"id": "b1", "name": "bash", "arguments": {"command": f"echo token={KEY}; sleep 0.7"}}]},
        {"tool_calls": [{"id": "b2", "name": "bash", "arguments": {"command": r"printf 'before\033]52;c;ZXZpbA==\007after\n'"}}]},
        {"tool_calls": [{"id": "b3", "name": "bash", "arguments": {"command": f"echo {KEY} >&2; exit 3"}}]},
        {"tool_calls": [{"id": "r1", "name": "run_code", "arguments": {"code": code, "description": "print"}}]},
        {"tool_calls": [{"id": "f1", "name": "read_file", "arguments": {"path": f"gone-{KEY}{OSC52}.txt"}}]},
        "Done.",
    ]  # fmt: skip
    script = write_script(tmp_path / "turns.json", turns)
    env = child_env(
        STEERABLE_PROVIDER="scripted",
        STEERABLE_SCRIPT=str(script),
        STEERABLE_API_KEY=KEY,
        STEERABLE_RUN_CODE="1",
    )
    client = EditorClient()
    async with spawn_acp(
        client, env, "--consent", "auto", "--state-dir", str(tmp_path / "state"), stderr=tmp_path / "err.log"
    ) as (conn, _):
        await start(conn)
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        answer = await asyncio.wait_for(
            conn.prompt(session_id=session.session_id, prompt=[text_block("run")]), 60
        )
    assert answer.stop_reason == "end_turn"
    done = {call: client.call_updates(call)[-1] for call in ("b1", "b2", "b3", "r1", "f1")}
    assert [u.status for u in done.values()] == ["completed", "completed", "failed", "completed", "failed"]
    assert _content(done["b1"]) == ["```\ntoken=[redacted]\n```"]
    assert _content(done["b2"]) == ["```\nbeforeafter\n```"]
    assert _content(done["b3"])[0] == "```\n[redacted]\n```"
    assert '"logs": "k=[redacted]red\\n"' in _content(done["r1"])[0]  # its data, strings cleaned
    shown = "".join(text for update in done.values() for text in _content(update))
    assert KEY not in shown and "\x1b" not in shown and "\x07" not in shown, shown
    assert "gone-[redacted].txt" in _content(done["f1"])[0]  # an error message: the path, cleaned
    # what the model got, and what rawOutput carries, is the result as it was
    assert done["b1"].raw_output["data"]["stdout"] == f"token={KEY}\n"
    assert done["b2"].raw_output["data"]["stdout"] == f"before{OSC52}after\n"


def test_every_text_of_a_result_is_cleaned_with_the_redactor_it_is_given() -> None:
    redact = Redactor.of([KEY])
    failed = {"success": False, "error": f"boom \x1b[31m{KEY}\x1b[0m\x9b", "data": {"stdout": "x"}}
    texts = [c.content.text for c in result_content("mcp__s__t", failed, redact=redact)]
    assert texts == ["boom [redacted]"]
    # a string inside data is cleaned before JSON escapes it: a quoted key is caught, no \u001b shows
    quoted = 'pa"ss\\word-1234'
    link = "\x1b]8;;https://x\x1b\\link\x1b]8;;\x1b\\"
    data = {"success": True, "data": {"note": [f"{KEY}\x85{link}", quoted], f"\x1b[1m{KEY}": 1}}
    (block,) = result_content("mcp__s__t", data, redact=Redactor.of([KEY, quoted]))
    text = block.content.text
    assert (
        text
        == '```\n{\n  "note": [\n    "[redacted]link",\n    "[redacted]"\n  ],\n  "[redacted]": 1\n}\n```'
    )
    said = {"success": True, "message": f"10%\r100%\r\nkey {KEY}"}
    texts = [c.content.text for c in result_content("t", said, redact=redact)]
    assert texts == ["100%\nkey [redacted]"]


# -- 2. titles say what the call is ----------------------------------------------------------------


def test_a_title_counts_a_commands_lines_and_shows_what_would_hide_text() -> None:
    assert tool_title("bash", {"command": "echo safe\nrm -rf important"}) == "Run `echo safe` (+1 more line)"
    assert tool_title("bash", {"command": "\n\necho a\n  \nb\nc\n"}) == "Run `echo a` (+2 more lines)"
    assert tool_title("bash", {"command": "pytest   -q"}) == "Run `pytest -q`"
    assert (
        tool_title("bash", {"command": "echo `id`"}) == "Run `` echo `id` ``"
    )  # a span its ticks cannot end
    assert tool_title("bash", {"command": " \n"}) == "Run an empty command"
    assert (
        tool_title("bash", {"command": "printf '\x1b]52;c;ZXZpbA==\x07'\r"})
        == "Run `printf '␛]52;c;ZXZpbA==␇'␍`"
    )
    # bidi controls (Trojan Source) and separators: shown, not deleted (deleting could join words)
    assert (
        tool_title("read_file", {"path": "a\u202eb\u2066c\u200fd\u061ce\u2028f.txt"})
        == "Read a�b�c�d�e�f.txt"
    )
    assert tool_title("grep", {"pattern": "x\ty\n\x7f\x85"}) == "Search x y␊␡�"
    assert tool_title("mcp__evil\x1b[2J__tool", {}) == "evil␛[2J: tool"
    assert len(tool_title("x" * 1000, {})) == 200
    assert visible("plain text, ünïcode, عربي") == "plain text, ünïcode, عربي"


async def test_a_multi_line_command_is_asked_about_and_shown_as_several_lines(
    agent: Agent, workspace: Path
) -> None:
    """The permission request (``bash`` asks in ``default``) and the ``tool_call`` agree."""
    command = "echo safe\nrm -rf important"
    bidi = {"id": "r1", "name": "read_file", "arguments": {"path": "notes\u202etxt.exe"}}
    turns = [{"tool_calls": [{"id": "b1", "name": "bash", "arguments": {"command": command}}, bidi]}, "ok"]
    client = EditorClient(permissions=["reject_once"])
    async with agent(client, turns) as conn:
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=[text_block("go")])
    assert [call.title for call, _ in client.asked] == ["Run `echo safe` (+1 more line)"]
    assert client.call_updates("b1")[0].title == "Run `echo safe` (+1 more line)"
    assert client.call_updates("r1")[0].title == "Read notes�txt.exe"
    assert client.call_updates("b1")[0].raw_input == {"command": command}  # the arguments as they are


# -- 3. a name that says "read" does not outweigh the tool's mode ----------------------------------


def test_a_read_name_is_believed_only_when_the_mode_is_read() -> None:
    name = "mcp__filesystem__read_file"
    assert tool_kind(name, ToolMode.DESTRUCTIVE) == "delete"
    assert tool_title(name, {"path": "notes.txt"}, ToolMode.DESTRUCTIVE) == "filesystem: read_file notes.txt"
    assert tool_kind(name, ToolMode.READ) == "read"
    assert tool_title(name, {"path": "notes.txt"}, ToolMode.READ) == "filesystem: Read notes.txt"
    assert tool_title(name, {"path": "notes.txt"}) == "filesystem: Read notes.txt"  # mode unknown: by name
    assert tool_kind("mcp__s__search_issues", ToolMode.EXTERNAL) == "other"
    assert (
        tool_title("mcp__s__delete_by_query", {"query": "all"}, ToolMode.DESTRUCTIVE)
        == "s: delete_by_query all"
    )
    assert tool_kind("mcp__web__fetch_page", ToolMode.LOCAL) == "execute"
    assert (
        tool_title("mcp__web__fetch_page", {"url": "https://x.test"}, ToolMode.LOCAL)
        == "web: fetch_page https://x.test"
    )
    # the built-in tools keep their kinds and titles: their modes agree with their names
    assert (tool_kind("read_file", ToolMode.READ), tool_kind("web_fetch", ToolMode.READ)) == ("read", "fetch")
    assert tool_title("list_dir", {}, ToolMode.READ) == "List ."
    assert tool_kind("mcp__filesystem__write_file", ToolMode.DESTRUCTIVE) == "edit"  # a name that warns: kept


async def test_an_mcp_tool_named_read_but_annotated_destructive_is_shown_and_asked_by_its_mode(
    agent: Agent, workspace: Path
) -> None:
    """The fixture server's ``read_once`` (``destructiveHint: true``): kind ``delete``, not ``read``."""
    server = McpServerStdio(name="Fixture Tools", command=sys.executable, args=[MCP_SERVER], env=[])
    call = {"id": "d1", "name": "mcp__Fixture_Tools__read_once", "arguments": {"secret_id": "s1"}}
    client = EditorClient(permissions=["reject_once"])
    async with agent(client, [{"tool_calls": [call]}, "ok"]) as conn:
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[server])
        await conn.set_session_mode(mode_id="ask", session_id=session.session_id)
        await conn.prompt(session_id=session.session_id, prompt=[text_block("read it")])
    assert [(c.title, c.kind) for c, _ in client.asked] == [("Fixture_Tools: read_once", "delete")]
    shown = client.call_updates("d1")[0]
    assert (shown.title, shown.kind) == ("Fixture_Tools: read_once", "delete")


# -- 4. /tools says what the mode does -------------------------------------------------------------


async def test_slash_tools_judges_each_tool_as_the_consent_gate_does(agent: Agent, workspace: Path) -> None:
    """``web_fetch`` is an ``external`` call to the modes (refused in ``read-only``) and asks for a
    new host in ``default``; a tool allowed always runs, except in ``ask``."""
    bash = {"id": "b1", "name": "bash", "arguments": {"command": "true"}}
    client = EditorClient(permissions=["allow_always"])
    async with agent(client, [{"tool_calls": [bash]}, "ok"], web_tools=True) as conn:
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        said = []
        for prompt in ("/tools", "go", "/tools", "/mode ask", "/tools", "/mode read-only", "/tools"):
            before = len(client.text())
            await conn.prompt(session_id=session.session_id, prompt=[text_block(prompt)])
            said.append(client.text()[before:])
    default, _, allowed, _, ask, _, read_only = said
    fetch = "- `web_fetch` (external: reads the open web): "
    assert (
        fetch + "asks first for a new host; runs for a trusted one or one allowed in this session" in default
    )
    assert "- `bash` (local): asks first" in default and "- `read_file` (read): runs" in default
    assert "- `bash` (local): runs (allowed always in this session)" in allowed
    assert "- `bash` (local): asks first" in ask and fetch + "asks first" in ask
    assert fetch + "refused" in read_only and "- `bash` (local): refused" in read_only
    assert "(read)" not in default.split("web_fetch")[1].splitlines()[0]


# -- 5. mode ids and command names in any case -----------------------------------------------------


async def test_mode_ids_and_command_names_are_taken_in_any_case_and_answered_canonically(
    agent: Agent, workspace: Path
) -> None:
    client = EditorClient()
    async with agent(client, []) as conn:
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        sid = session.session_id
        await conn.prompt(session_id=sid, prompt=[text_block("/MODE ASK")])  # a command, not a prompt
        await conn.set_session_mode(mode_id="AUTO", session_id=sid)
        picked = await conn.set_config_option(config_id="mode", session_id=sid, value=" Read-Only ")
        with pytest.raises(RequestError) as option:
            await conn.set_config_option(config_id="mode", session_id=sid, value="yolo")
        with pytest.raises(RequestError) as mode:
            await conn.set_session_mode(mode_id="yolo", session_id=sid)
    assert [u.current_mode_id for u in client.of_kind("current_mode_update")] == ["ask", "read-only"]
    told = [u.model_dump(by_alias=True)["configOptions"][1] for u in client.of_kind("config_option_update")]
    assert [option["currentValue"] for option in told] == ["ask", "auto"]  # /mode, then set_mode
    assert client.text().startswith("Mode: ask: ")
    current = [o.model_dump(by_alias=True) for o in picked.config_options]
    assert current[1]["currentValue"] == "read-only"
    reason = "unknown mode: the session's modes are read-only, ask, default, auto"
    assert option.value.code == -32602
    assert option.value.data == {"configId": "mode", "value": "yolo", "reason": reason}
    assert mode.value.data == {"modeId": "yolo", "reason": reason}
