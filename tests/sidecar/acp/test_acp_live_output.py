"""``steerable acp``: a running ``bash`` call shows its output as it comes (issue 31, "Live output"),
driven by the official ACP SDK's client side (docs/acp.md, "A prompt turn").

While the command runs, ``tool_call_update``s carry the tail of its output as the call's content
(a code block, at most one update every half second, the first no sooner than half a second
into the call); then the result is shown as before (``completed``, the whole output). A call that
ends sooner shows its result alone; a ``run_code`` program's printed lines show the same way.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from acp import text_block
from acp_client import EditorClient, in_process_acp, spawn_acp, start, write_script

from steerable_agent_runtime.llm import ScriptedProvider
from steerable_sidecar.acp._agent import AcpOptions

pytestmark = pytest.mark.slow

LINES = "for i in 1 2 3; do echo line$i; sleep 1; done"


def _bash_turn(command: str) -> list[Any]:
    return [{"tool_calls": [{"id": "b1", "name": "bash", "arguments": {"command": command}}]}, "Ran it."]


def _shown(update: Any) -> str:
    """The text of an update's one content block (a fenced code block)."""
    assert update.content is not None and len(update.content) == 1
    text: str = update.content[0].content.text
    return text


def _live(client: Any, call_id: str) -> list[Any]:
    """The call's output updates: no status, content only."""
    return [
        u for u in client.call_updates(call_id) if u.session_update == "tool_call_update" and u.status is None
    ]


async def test_bash_output_shows_while_it_runs_then_the_result(
    workspace: Path, tmp_path: Path, child_env: Callable[..., dict[str, str]]
) -> None:
    script = write_script(tmp_path / "turns.json", _bash_turn(LINES))
    env = child_env(STEERABLE_PROVIDER="scripted", STEERABLE_SCRIPT=str(script))
    client = EditorClient(permissions=["allow_once"])
    async with spawn_acp(
        client, env, "--state-dir", str(tmp_path / "state"), stderr=tmp_path / "err.log"
    ) as (conn, _):
        await start(conn)
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        turn = asyncio.ensure_future(conn.prompt(session_id=session.session_id, prompt=[text_block("run")]))
        await client.wait_for(lambda c: any(u.status == "in_progress" for u in c.call_updates("b1")))
        await client.wait_for(lambda c: any("line1" in _shown(u) for u in _live(c, "b1")), timeout_s=10)
        assert not turn.done()  # line1 is on screen while the command still runs
        answer = await asyncio.wait_for(turn, 30)
    assert answer.stop_reason == "end_turn"
    updates = client.call_updates("b1")
    statuses = [u.status for u in updates]
    assert statuses[:2] == ["pending", "in_progress"] and statuses[-1] == "completed"
    assert set(statuses[2:-1]) == {None}  # then output updates alone, then the result
    live = [_shown(u) for u in _live(client, "b1")]
    assert live[0] == "```\nline1\n```", live  # shown alone: before line2 came, a second later
    assert "```\nline1\nline2\n```" in live  # the output so far, not the last chunk alone
    assert _shown(updates[-1]) == "```\nline1\nline2\nline3\n```"  # the result, as before
    assert updates[-1].raw_output["data"]["stdout"] == "line1\nline2\nline3\n"


async def test_a_flood_shows_its_tail_and_a_quick_call_shows_its_result_alone(
    workspace: Path, tmp_path: Path
) -> None:
    turns = [
        {"tool_calls": [{"id": "f1", "name": "bash", "arguments": {"command": "seq 1 300000; sleep 1.2"}}]},
        {"tool_calls": [{"id": "q1", "name": "bash", "arguments": {"command": "echo quick"}}]},
        "Done.",
    ]
    options = AcpOptions(state_dir=tmp_path / "state", plugins=False, web_tools=False)
    client = EditorClient(permissions=["allow_always"])
    async with in_process_acp(client, options, ScriptedProvider(turns)) as conn:
        await start(conn)
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        answer = await conn.prompt(session_id=session.session_id, prompt=[text_block("flood")])
    assert answer.stop_reason == "end_turn"
    live = [_shown(u) for u in _live(client, "f1")]
    assert 1 <= len(live) <= 4, live  # 1.2 s: at most one update every 0.5 s
    for shown in live:
        body = shown.removeprefix("```\n").removesuffix("```")
        assert len(body.encode()) <= 4096 + 40 and body.count("\n") <= 41  # the marker line aside
    assert live[-1].startswith("```\n[... ") and live[-1].endswith("299999\n300000\n```"), live[-1]
    assert [u.status for u in client.call_updates("q1")] == ["pending", "in_progress", "completed"]


async def test_run_code_prints_show_the_same_way(workspace: Path, tmp_path: Path) -> None:
    code = "import time\nfor n in range(3):\n    print('step', n)\n    time.sleep(0.6)\nreturn 'ok'"
    turns = [
        {
            "tool_calls": [
                {"id": "r1", "name": "run_code", "arguments": {"code": code, "description": "steps"}}
            ]
        },
        "Done.",
    ]
    options = AcpOptions(state_dir=tmp_path / "state", plugins=False, web_tools=False)
    client = EditorClient(permissions=["allow_once"])
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("STEERABLE_RUN_CODE", "1")
        async with in_process_acp(client, options, ScriptedProvider(turns)) as conn:
            await start(conn)
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            answer = await conn.prompt(session_id=session.session_id, prompt=[text_block("steps")])
    assert answer.stop_reason == "end_turn"
    live = [_shown(u) for u in _live(client, "r1")]
    assert live and live[0].startswith("```\nstep 0\n"), live
    assert any("step 0\nstep 1\n" in shown for shown in live), live  # the output so far
    assert client.call_updates("r1")[-1].status == "completed"
