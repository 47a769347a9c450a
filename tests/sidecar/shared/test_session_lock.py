"""One session, one process (REC-3): real processes sharing one state directory.

``steerable run --session-id``, a sidecar chat and ``steerable acp`` take the same lock beside the
session's record: a first opener is held mid-run (the loopback model hangs its second answer, after
the first tool call is recorded), a second is refused with the error naming the first's pid and
command line, and once the first ends, normally or by kill -9, the session opens again and the
record holds each call once.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError, text_block
from acp_client import EditorClient, spawn_acp, start
from run_helpers import summary_of

from fake_openai import FakeOpenAI
from steerable_agent_runtime.errors import RemoteError, UserError
from steerable_sidecar.sidecar._client import SidecarClient
from waiting import wait_until

pytestmark = pytest.mark.slow

PYTHON = (sys.executable, "-P", "-m", "steerable_sidecar")
FIRST_CALL = {"tool_calls": [{"id": "c1", "name": "list_dir", "arguments": {"path": "."}}]}
SECOND_CALL = {"tool_calls": [{"id": "c2", "name": "list_dir", "arguments": {"path": "."}}]}


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.txt").write_text("alpha\n")
    return root


@pytest.fixture
def state(tmp_path: Path) -> Path:
    return tmp_path / "state"


@pytest.fixture
def env(fake_openai: FakeOpenAI, state: Path, child_env: Callable[..., dict[str, str]]) -> dict[str, str]:
    return child_env(
        STEERABLE_PROVIDER="openai",
        STEERABLE_MODEL="m",
        STEERABLE_BASE_URL=fake_openai.base_url,
        STEERABLE_API_KEY="sk-x",
        STEERABLE_STATE_DIR=str(state),
    )


def run_args(session_id: str, ws: Path, instruction: str) -> list[str]:
    return ["run", "--session-id", session_id, "--cwd", str(ws), "--instruction", instruction, "--quiet"]


def busy(session_id: str, pid: int, command: str) -> str:
    """The refusal every surface words the same way (docs/headless.md, exit code 75)."""
    return (
        f"session {session_id!r} is open in another steerable process (pid {pid}: {command}); "
        "wait for it to end, or use another session id"
    )


def wait_for_requests(fake: FakeOpenAI, count: int) -> None:
    wait_until(lambda: len(fake.requests) >= count, what=f"the model's request {count}")


def held_run(fake: FakeOpenAI, ws: Path, env: dict[str, str], session_id: str) -> subprocess.Popen[str]:
    """A ``steerable run`` held mid-run: c1 is recorded and its second model call hangs."""
    fake.script([FIRST_CALL, {"hang": True}])
    proc = subprocess.Popen(
        [*PYTHON, *run_args(session_id, ws, "hold")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    wait_for_requests(fake, 2)
    return proc


def run_command(session_id: str, ws: Path) -> str:
    """How the held run's command line reads in the refusal."""
    return f"python -m steerable_sidecar run --session-id {session_id} --cwd {ws} --instruction hold --quiet"


async def run_once(env: dict[str, str], *args: str) -> tuple[int, dict[str, Any], str]:
    """``steerable run ARGS`` to its end without blocking the event loop: (exit code, summary, stderr)."""
    proc = await asyncio.create_subprocess_exec(
        *PYTHON,
        *args,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    done = subprocess.CompletedProcess[str]([], proc.returncode or 0, out.decode(), err.decode())
    assert proc.returncode is not None
    return proc.returncode, summary_of(done), done.stderr


def call_ids(state: Path, session_id: str) -> tuple[list[str], list[str]]:
    """The record's tool call ids: those the assistant messages asked for, those answered."""
    asked, answered = [], []
    for line in (state / "sessions" / f"{session_id}.jsonl").read_text().splitlines():
        entry = json.loads(line)
        if entry["type"] != "message":
            continue
        message = entry["message"]
        asked += [call["id"] for call in message.get("tool_calls") or []]
        if message["role"] == "tool":
            answered.append(message["tool_call_id"])
    return asked, answered


def stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.communicate(timeout=30)


async def test_a_second_run_of_an_open_session_is_refused_and_a_killed_holder_blocks_nothing_rec_3(
    fake_openai: FakeOpenAI, ws: Path, state: Path, env: dict[str, str]
) -> None:
    first = held_run(fake_openai, ws, env, "s1")
    try:
        code, summary, stderr = await run_once(env, *run_args("s1", ws, "second"))
        expected = busy("s1", first.pid, run_command("s1", ws))
        assert code == 75, stderr
        assert summary == {"outcome": "session_busy", "error": expected, "exitCode": 75}
        assert f"steerable run: {expected}" in stderr and "Traceback" not in stderr
        assert len(fake_openai.requests) == 2  # the refused run never called the model
        assert call_ids(state, "s1") == (["c1"], ["c1"])  # and wrote nothing
    finally:
        stop(first)  # kill -9: the kernel drops the lock; the file and its stale pid stay
    assert first.returncode == -9
    assert (state / "sessions" / "s1.lock").is_file()
    fake_openai.script([SECOND_CALL, "done"])
    code, summary, stderr = await run_once(env, *run_args("s1", ws, "again"))
    assert code == 0 and summary["outcome"] == "completed", stderr
    assert call_ids(state, "s1") == (["c1", "c2"], ["c1", "c2"])  # each call once, in order


async def test_a_run_that_ended_gives_the_session_back_rec_3(
    fake_openai: FakeOpenAI, ws: Path, state: Path, env: dict[str, str]
) -> None:
    first = held_run(fake_openai, ws, env, "s2")
    try:
        code, summary, _ = await run_once(env, *run_args("s2", ws, "second"))
        assert code == 75 and summary["error"] == busy("s2", first.pid, run_command("s2", ws))
        fake_openai.reset()  # the hanging answer fails (503) and the retry gets a text answer
        fake_openai.script(["first is done"])
        out, err = first.communicate(timeout=60)
    finally:
        stop(first)
    assert first.returncode == 0 and json.loads(out)["outcome"] == "completed", err
    fake_openai.script([SECOND_CALL, "second is done"])
    code, summary, stderr = await run_once(env, *run_args("s2", ws, "again"))
    assert code == 0 and summary["text"] == "second is done", stderr
    assert call_ids(state, "s2") == (["c1", "c2"], ["c1", "c2"])


async def test_a_sidecar_chat_and_a_run_share_the_lock_rec_3(
    fake_openai: FakeOpenAI, ws: Path, state: Path, env: dict[str, str]
) -> None:
    first = held_run(fake_openai, ws, env, "s3")
    async with await SidecarClient.start(workspace=ws, state_dir=state, env=env) as sidecar:
        try:
            with pytest.raises(RemoteError) as refused:
                await sidecar.start_chat("resume it", session_id="s3").result()
            assert isinstance(refused.value, UserError) and refused.value.code == -32030
            assert refused.value.message == busy("s3", first.pid, run_command("s3", ws))
            assert len(fake_openai.requests) == 2
        finally:
            stop(first)
        fake_openai.script([SECOND_CALL, "resumed"])
        resumed = await sidecar.start_chat("resume it", session_id="s3").result()
        assert resumed["outcome"] == "completed" and resumed["text"] == "resumed"
        assert call_ids(state, "s3") == (["c1", "c2"], ["c1", "c2"])

        # the other way round: a chat holds its session while it runs, and gives it back at its end
        fake_openai.reset()
        fake_openai.script([{"hang": True}])
        chat = sidecar.start_chat("hold", session_id="s4")
        await asyncio.to_thread(wait_for_requests, fake_openai, 1)
        code, summary, _ = await run_once(env, *run_args("s4", ws, "second"))
        command = f"python -m steerable_sidecar sidecar --workspace {ws} --state-dir {state}"
        assert code == 75 and summary["error"] == busy("s4", sidecar.process.pid, command)
        await chat.cancel()
        assert (await chat.result())["outcome"] == "cancelled"
        fake_openai.script(["ran"])
        code, summary, stderr = await run_once(env, *run_args("s4", ws, "again"))
        assert code == 0 and summary["text"] == "ran", stderr


async def test_acp_and_a_run_share_the_lock_rec_3(
    fake_openai: FakeOpenAI, ws: Path, state: Path, env: dict[str, str]
) -> None:
    first = held_run(fake_openai, ws, env, "s5")
    async with spawn_acp(EditorClient(), env) as (conn, agent):
        await start(conn)
        try:
            with pytest.raises(RequestError) as refused:
                await conn.load_session(cwd=str(ws), session_id="s5", mcp_servers=[])
            assert refused.value.code == -32600
            expected = busy("s5", first.pid, run_command("s5", ws))
            assert refused.value.data == {"sessionId": "s5", "reason": expected, "pid": first.pid}
        finally:
            stop(first)
        await conn.load_session(cwd=str(ws), session_id="s5", mcp_servers=[])
        fake_openai.script([SECOND_CALL, "loaded"])
        answer = await conn.prompt(session_id="s5", prompt=[text_block("go on")])
        assert answer.stop_reason == "end_turn"
        assert call_ids(state, "s5") == (["c1", "c2"], ["c1", "c2"])

        # the editor has the session open (no turn running): a run of it is refused, naming the agent
        code, summary, _ = await run_once(env, *run_args("s5", ws, "second"))
        command = "python -m steerable_sidecar acp --no-plugins --no-web-tools"
        assert code == 75 and summary["error"] == busy("s5", agent.pid, command)
    fake_openai.script(["after the editor"])
    code, summary, stderr = await run_once(env, *run_args("s5", ws, "after the editor left"))
    assert code == 0 and summary["text"] == "after the editor", stderr


def test_a_lock_file_naming_no_live_process_is_not_believed_rec_3(tmp_path: Path) -> None:
    import fcntl
    import os

    from steerable_sidecar.shared._session_lock import SessionHolder, SessionLocks

    sessions = tmp_path / "sessions"
    sessions.mkdir()
    lock = sessions / "s6.lock"
    lock.write_text(json.dumps({"pid": 999_999_999, "command": "steerable run (long gone)"}))
    outsider = os.open(lock, os.O_RDWR)  # holds the lock and never says who it is
    try:
        fcntl.flock(outsider, fcntl.LOCK_EX | fcntl.LOCK_NB)
        holder = SessionLocks(sessions).hold("s6")
        assert holder == SessionHolder("s6", None, "")
        assert holder.message() == (
            "session 's6' is open in another steerable process; wait for it to end, or use another session id"
        )
    finally:
        os.close(outsider)
    locks = SessionLocks(sessions)
    assert locks.hold("s6") is None and locks.holds("s6")
    assert json.loads(lock.read_text())["pid"] == os.getpid()  # the holder names itself
    locks.release_all()
    assert not locks.holds("s6")
