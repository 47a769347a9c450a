"""``steerable acp`` driven by a second client: the official TypeScript SDK (``@agentclientprotocol/sdk``).

``tests/hosts/acp_client.mjs`` (Node, the SDK pinned by ``tests/hosts/package.json``, installed by
``npm ci --prefix tests/hosts``) starts ``python -m steerable_sidecar acp`` as its child, runs one
turn by a JSON plan, and prints what it was shown: the ``initialize`` answer, every
``session/update`` as the SDK parsed it, each ``session/request_permission`` with the option it
picked, and the stop reason. It also lists the problems the SDK would otherwise swallow (an update
it could not parse is logged and dropped; one it parsed differently from what was sent): none may
appear. The Python SDK's client drives the same agent in test_acp_e2e.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from acp_client import AGENT_COMMAND, SLEEPING, WHOLE_TURN, write_script

from steerable_agent_runtime import DurableRecord

HOSTS_DIR = Path(__file__).resolve().parents[2] / "hosts"
CLIENT = HOSTS_DIR / "acp_client.mjs"
SDK = HOSTS_DIR / "node_modules" / "@agentclientprotocol" / "sdk"
NODE = shutil.which("node")

CLIENT_TIMEOUT_MS = 60_000  # the client's own bound on a run (it kills the agent past it); a run takes ~1.5 s
RUN_TIMEOUT_S = 90  # ours, on the client process itself

pytestmark = [
    pytest.mark.slow,
    pytest.mark.node,
    pytest.mark.skipif(NODE is None, reason="node is not installed: the TypeScript ACP client needs it"),
    pytest.mark.skipif(
        not SDK.is_dir(),
        reason=(
            "tests/hosts/node_modules/@agentclientprotocol/sdk is missing: run "
            "`npm ci --prefix tests/hosts --no-audit --no-fund` (.ci/run does) to install the pinned SDK"
        ),
    ),
]


@pytest.fixture
def state(tmp_path: Path) -> Path:
    path = tmp_path / "state"
    path.mkdir()
    return path


@pytest.fixture
def ts_turn(tmp_path: Path, state: Path, child_env: Callable[..., dict[str, str]]) -> Callable[..., Any]:
    """Run one turn with the TypeScript client: the scripted model plays ``turns``; ``plan`` as
    acp_client.mjs reads it. Returns the client's JSON report (problems already checked empty)."""

    async def run(turns: list[Any], **plan: Any) -> dict[str, Any]:
        script = write_script(tmp_path / f"turns-{time.monotonic_ns()}.json", turns)
        env = child_env(STEERABLE_PROVIDER="scripted", STEERABLE_SCRIPT=str(script))
        env["ACP_PLAN"] = json.dumps({"timeoutMs": CLIENT_TIMEOUT_MS, **plan})
        assert NODE is not None
        # the client: acp.mjs -- the agent command, as an editor's agent settings name it
        proc = await asyncio.create_subprocess_exec(
            NODE,
            str(CLIENT),
            "--",
            *AGENT_COMMAND,
            "--state-dir",
            str(state),
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,  # its own group: the agent it started dies with it on a timeout
        )
        try:
            async with asyncio.timeout(RUN_TIMEOUT_S):
                out, err = await proc.communicate()
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()
            pytest.fail(f"the TypeScript ACP client did not finish within {RUN_TIMEOUT_S} s")
        stderr = err.decode(errors="replace")
        if proc.returncode != 0:
            pytest.fail(f"the TypeScript ACP client failed (exit {proc.returncode}):\n{stderr}")
        lines = out.decode().splitlines()
        assert len(lines) == 1, f"expected one JSON line on stdout, got {lines!r}\nstderr:\n{stderr}"
        report: dict[str, Any] = json.loads(lines[0])
        assert report["problems"] == [], stderr
        assert report["agentExit"] == 0, stderr  # the agent leaves cleanly once its stdin closes
        return report

    return run


def _calls(report: dict[str, Any], call_id: str) -> list[dict[str, Any]]:
    """Every ``tool_call`` / ``tool_call_update`` the client was shown for one call, in order."""
    return [
        u
        for u in report["updates"]
        if u["sessionUpdate"] in ("tool_call", "tool_call_update") and u["toolCallId"] == call_id
    ]


def _text(report: dict[str, Any]) -> str:
    return "".join(
        u["content"]["text"] for u in report["updates"] if u["sessionUpdate"] == "agent_message_chunk"
    )


def _tool_results(state: Path, session_id: str) -> dict[str, dict[str, Any]]:
    messages = DurableRecord.for_session(state / "sessions", session_id).messages()
    return {m["tool_call_id"]: json.loads(m["content"]) for m in messages if m["role"] == "tool"}


async def test_a_whole_turn_reads_edits_with_a_diff_and_runs_an_approved_bash(
    workspace: Path, state: Path, ts_turn: Callable[..., Any]
) -> None:
    report = await ts_turn(
        WHOLE_TURN,
        cwd=str(workspace),
        prompt="change beta to gamma",
        permissions=["allow_once"],
    )
    hello = report["initialize"]
    assert hello["protocolVersion"] == 1
    assert hello["agentCapabilities"]["loadSession"] is True
    assert hello["agentInfo"]["name"] == "steerable"
    assert report["stopReason"] == "end_turn"
    assert (workspace / "notes.txt").read_text() == "alpha\ngamma\n"
    assert _text(report) == "Reading.Done: beta is gamma now."
    path = str(workspace / "notes.txt")

    read = _calls(report, "c1")
    assert [u["status"] for u in read] == ["pending", "in_progress", "completed"]
    assert (read[0]["title"], read[0]["kind"], read[0]["locations"]) == (
        "Read notes.txt",
        "read",
        [{"path": path}],
    )

    edit = _calls(report, "c2")
    assert [u["status"] for u in edit] == ["pending", "in_progress", "completed"]
    assert (edit[0]["title"], edit[0]["kind"]) == ("Edit notes.txt", "edit")
    assert edit[-1]["content"] == [
        {"type": "diff", "path": path, "oldText": "alpha\nbeta\n", "newText": "alpha\ngamma\n"}
    ]

    bash = _calls(report, "c3")
    assert (bash[0]["title"], bash[0]["kind"]) == ("Run `cat notes.txt`", "execute")
    assert [u["status"] for u in bash] == ["pending", "in_progress", "completed"]
    assert bash[-1]["content"] == [
        {"type": "content", "content": {"type": "text", "text": "```\nalpha\ngamma\n```"}}
    ]
    (asked,) = report["permissions"]
    assert asked["toolCall"]["toolCallId"] == "c3"
    assert asked["toolCall"]["rawInput"] == {"command": "cat notes.txt"}
    assert [(o["optionId"], o["kind"]) for o in asked["options"]] == [
        ("allow_once", "allow_once"),
        ("allow_always", "allow_always"),
        ("reject_once", "reject_once"),
    ]
    # the permission was asked before the command was shown running
    index = report["updates"].index
    assert index(bash[0]) < index(bash[1])
    assert _tool_results(state, report["sessionId"])["c3"]["data"]["stdout"] == "alpha\ngamma\n"


async def test_a_rejected_permission_runs_nothing_and_the_call_shows_failed(
    workspace: Path, state: Path, ts_turn: Callable[..., Any]
) -> None:
    report = await ts_turn(
        [
            {"tool_calls": [{"id": "b1", "name": "bash", "arguments": {"command": "touch made.txt"}}]},
            "Understood.",
        ],
        cwd=str(workspace),
        prompt="make a file",
        permissions=["reject_once"],
    )
    assert report["stopReason"] == "end_turn"
    assert not (workspace / "made.txt").exists()
    assert [p["chosen"] for p in report["permissions"]] == ["reject_once"]
    updates = _calls(report, "b1")
    assert [u["status"] for u in updates] == ["pending", "failed"]
    result = _tool_results(state, report["sessionId"])["b1"]
    assert result["success"] is False and result["data"]["code"] == "consent_denied"
    assert updates[-1]["content"] == [
        {"type": "content", "content": {"type": "text", "text": result["error"]}}
    ]
    assert _text(report) == "Understood."


async def test_a_cancel_while_an_allowed_sleep_runs_stops_the_turn_cancelled(
    workspace: Path, state: Path, ts_turn: Callable[..., Any]
) -> None:
    started = time.monotonic()
    report = await ts_turn(
        SLEEPING,
        cwd=str(workspace),
        prompt="sleep",
        permissions=["allow_once"],
        cancel="session",
    )
    assert report["stopReason"] == "cancelled"
    assert report["cancel"]["stopAfterMs"] < 10_000  # from session/cancel sent to the prompt's answer
    assert time.monotonic() - started < 30  # the whole client run, agent start-up and exit included
    # (both at the cancel: the sleep alone would take 60 s; a run takes about 1.5 s)
    updates = _calls(report, "s1")
    assert [u["status"] for u in updates] == ["pending", "in_progress", "failed"]
    assert updates[-1]["content"] == [{"type": "content", "content": {"type": "text", "text": "cancelled"}}]
    assert "never" not in _text(report)
    result = _tool_results(state, report["sessionId"])["s1"]
    assert result["success"] is False and result["data"]["code"] == "cancelled"


async def test_aborting_the_prompt_request_cancels_the_turn_as_session_cancel_does(
    workspace: Path, state: Path, ts_turn: Callable[..., Any]
) -> None:
    """The SDK's own request cancellation (an aborted ``cancellationSignal``: ``$/cancel_request``
    with the prompt's id) stops the turn too, and the prompt still answers, ``cancelled``."""
    report = await ts_turn(
        SLEEPING,
        cwd=str(workspace),
        prompt="sleep",
        permissions=["allow_once"],
        cancel="request",
    )
    assert report["stopReason"] == "cancelled"
    assert report["cancel"]["stopAfterMs"] < 10_000
    assert [u["status"] for u in _calls(report, "s1")] == ["pending", "in_progress", "failed"]
    assert _tool_results(state, report["sessionId"])["s1"]["data"]["code"] == "cancelled"


async def test_the_typescript_client_picks_a_mode_and_lists_the_session(
    workspace: Path, state: Path, ts_turn: Callable[..., Any]
) -> None:
    """The modes, ``session/set_mode``, the commands and ``session/list`` in the other SDK (MODE-5)."""
    write = {"id": "w1", "name": "write_file", "arguments": {"path": "new.txt", "content": "x\n"}}
    report = await ts_turn(
        [{"tool_calls": [write]}, "Left as it was."],
        cwd=str(workspace),
        prompt="Add new.txt\nwith x in it",
        mode="ask",
        permissions=["reject_once"],
        list=True,
    )
    assert report["initialize"]["agentCapabilities"]["sessionCapabilities"] == {"list": {}}
    modes = report["session"]["modes"]
    assert modes["currentModeId"] == "default"
    assert [m["id"] for m in modes["availableModes"]] == ["read-only", "ask", "default", "auto"]
    (asked,) = report["permissions"]
    assert (asked["toolCall"]["toolCallId"], asked["toolCall"]["kind"]) == ("w1", "edit")
    assert not (workspace / "new.txt").exists()
    kinds = [u["sessionUpdate"] for u in report["updates"]]
    assert kinds[0] == "available_commands_update" and "session_info_update" in kinds
    (listed,) = report["listed"]["sessions"]
    assert (listed["sessionId"], listed["title"]) == (report["sessionId"], "Add new.txt")
    assert listed["cwd"] == str(workspace.resolve())
