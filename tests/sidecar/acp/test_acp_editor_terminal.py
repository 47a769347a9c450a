"""``steerable acp --editor-terminal``: ``bash`` runs in the editor's terminal (ACP ``terminal/create``),
sandboxed exactly as in steerable's own runner (docs/acp.md, "Terminals"; SAFE-3 for the secrets).

The editor here is the official SDK's client side with terminals of its own: it starts what it is
given the way a careless editor would (the words joined into one ``sh -c`` line, unquoted, in its
own environment, which holds a secret), so the tests show that nothing of the sandbox depends on
the editor: the command line it gets is plain words, and the sandbox's start waits in a private
file. Each test checks what the editor shows, what the model gets, and that nothing outlives the
call.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import pytest
from acp import PROTOCOL_VERSION, RequestError, connect_to_agent, text_block
from acp.interfaces import Client
from acp.schema import (
    ClientCapabilities,
    CreateTerminalResponse,
    ReleaseTerminalResponse,
    TerminalExitStatus,
    TerminalOutputResponse,
    WaitForTerminalExitResponse,
)
from acp_client import EditorClient, Served, spawn_acp, write_script

from processes import running
from steerable_agent_runtime.llm import ScriptedProvider
from steerable_sidecar.acp._agent import AcpOptions
from waiting import eventually

pytestmark = pytest.mark.slow

CANARY = "editor-secret-canary-4711"


class TerminalEditor:
    """An editor with terminals: :class:`EditorClient` for the rest, real processes for ``terminal/*``."""

    def __init__(self, editor: EditorClient, *, refuse: bool = False) -> None:
        self.editor = editor
        self.refuse = refuse
        self.created: list[tuple[str, list[str], str | None, list[Any]]] = []
        self.released: list[str] = []
        self.processes: dict[str, asyncio.subprocess.Process] = {}
        self.shown: dict[str, bytearray] = {}
        self._readers: dict[str, asyncio.Task[None]] = {}

    async def request_permission(self, **kwargs: Any) -> Any:
        return await self.editor.request_permission(**kwargs)

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        await self.editor.session_update(session_id, update, **kwargs)

    def on_connect(self, conn: Any) -> None:
        pass

    async def create_terminal(
        self,
        command: str,
        session_id: str,
        args: list[str] | None = None,
        cwd: str | None = None,
        env: list[Any] | None = None,
        output_byte_limit: int | None = None,
        **kwargs: Any,
    ) -> CreateTerminalResponse:
        self.created.append((command, list(args or []), cwd, list(env or [])))
        if self.refuse:
            raise RequestError.internal_error({"reason": "this editor makes no terminals today"})
        line = " ".join([command, *(args or [])])  # unquoted, as a careless editor joins them
        process = await asyncio.create_subprocess_exec(
            "/bin/sh",
            "-c",
            line,
            cwd=cwd,
            env={**os.environ, "EDITOR_TOKEN": CANARY},
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        terminal = f"term-{len(self.created)}"
        self.processes[terminal] = process
        self.shown[terminal] = bytearray()
        self._readers[terminal] = asyncio.ensure_future(self._read(terminal, process))
        return CreateTerminalResponse(terminal_id=terminal)

    async def _read(self, terminal: str, process: asyncio.subprocess.Process) -> None:
        assert process.stdout is not None
        while chunk := await process.stdout.read(4096):
            self.shown[terminal] += chunk

    async def terminal_output(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> TerminalOutputResponse:
        return TerminalOutputResponse(
            output=self.shown[terminal_id].decode(errors="replace"), truncated=False
        )

    async def wait_for_terminal_exit(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> WaitForTerminalExitResponse:
        code = await self.processes[terminal_id].wait()
        return WaitForTerminalExitResponse(exit_code=code)

    async def kill_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> None:
        process = self.processes[terminal_id]
        if process.returncode is None:
            process.kill()

    async def release_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> ReleaseTerminalResponse:
        self.released.append(terminal_id)
        await self.kill_terminal(session_id, terminal_id)
        await self.processes[terminal_id].wait()
        await self._readers[terminal_id]
        return ReleaseTerminalResponse()

    def exit_status(self, terminal: str) -> TerminalExitStatus:
        return TerminalExitStatus(exit_code=self.processes[terminal].returncode)


async def _turn(
    client: TerminalEditor,
    workspace: Path,
    state: Path,
    turns: list[Any],
    *,
    editor_terminal: bool = True,
    terminal: bool = True,
    cancel_when: Callable[[], object] | None = None,
) -> Any:
    options = AcpOptions(state_dir=state, plugins=False, web_tools=False, editor_terminal=editor_terminal)
    served = await Served.start(options, ScriptedProvider(turns))
    conn = connect_to_agent(cast("Client", client), served.writer, served.reader, use_unstable_protocol=True)
    try:
        await conn.initialize(
            protocol_version=PROTOCOL_VERSION, client_capabilities=ClientCapabilities(terminal=terminal)
        )
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        turn = asyncio.ensure_future(conn.prompt(session_id=session.session_id, prompt=[text_block("run")]))
        if cancel_when is not None:
            await eventually(cancel_when, what="the moment to cancel the turn")
            await conn.cancel(session_id=session.session_id)
        return await asyncio.wait_for(turn, 60)
    finally:
        await conn.close()
        await served.close()


def _bash(command: str, call_id: str = "t1") -> list[Any]:
    return [{"tool_calls": [{"id": call_id, "name": "bash", "arguments": {"command": command}}]}, "Done."]


async def test_bash_runs_in_the_editors_terminal_sandboxed_and_the_result_is_the_same(
    workspace: Path, tmp_path: Path
) -> None:
    command = (
        "echo line1; echo oops >&2; touch /etc/steerable-pwned 2>/dev/null || echo refused; "
        "env | grep -c -e EDITOR_TOKEN -e "
        + CANARY
        + "; echo $STEERABLE_API_KEY; echo made > made.txt; exit 3"
    )
    client = TerminalEditor(EditorClient(permissions=["allow_once"]))
    answer = await _turn(client, workspace, tmp_path / "state", _bash(command))
    assert answer.stop_reason == "end_turn"
    (command_word, args, cwd, env) = client.created[0]
    assert env == [] and cwd == str(
        workspace
    )  # the editor adds nothing; steerable's environment rides inside
    assert all(" " not in word and "$" not in word and ";" not in word for word in [command_word, *args])
    assert "echo line1" not in " ".join(args)  # the model's command is not on the editor's command line
    shown = bytes(client.shown["term-1"]).decode()
    # the terminal shows the command's output as it comes, stdout and stderr (in the order read)
    assert sorted(shown.splitlines()) == sorted(["line1", "oops", "refused", "0", ""]), shown
    assert client.released == ["term-1"]
    assert (workspace / "made.txt").read_text() == "made\n"  # the workspace is writable as always
    assert not Path("/etc/steerable-pwned").exists()

    updates = client.editor.call_updates("t1")
    statuses = [u.status for u in updates]
    assert statuses[0] == "pending" and "in_progress" in statuses and statuses[-1] == "failed"
    (shown_terminal,) = [u for u in updates if u.status is None]
    assert [c.type for c in shown_terminal.content] == ["terminal"]
    assert shown_terminal.content[0].terminal_id == "term-1"
    final = updates[-1]
    assert final.content[0].type == "terminal" and final.content[0].terminal_id == "term-1"
    assert final.content[1].content.text == "The command exited with status 3."
    data = final.raw_output["data"]  # what the model gets: the runner's result, fields and all
    assert (data["stdout"], data["stderr"], data["exitCode"]) == ("line1\nrefused\n0\n\n", "oops\n", 3)
    assert data["_sandbox"]["backend"] in ("bwrap", "landlock") and data["timedOut"] is False


def _holds_a_pidfd_of(pid: int) -> bool:
    """Whether this process holds a pidfd of process ``pid`` (``Pid:`` in the descriptor's fdinfo)."""
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") != "anon_inode:[pidfd]":
                continue
            info = Path(f"/proc/self/fdinfo/{fd}").read_text(encoding="utf-8")
        except OSError:  # closed meanwhile
            continue
        if f"Pid:\t{pid}\n" in info:
            return True
    return False


async def test_a_cancelled_call_stops_the_command_in_the_terminal(workspace: Path, tmp_path: Path) -> None:
    marker = "57.2957"  # a sleep nobody else runs
    client = TerminalEditor(EditorClient(permissions=["allow_once"]))
    started = time.monotonic()

    def under_way() -> bool:
        """The sleep runs, and the agent (in this process) holds a pidfd of its launcher: it can stop it.

        The launcher's pid is in the run directory's ``pid`` file (the directory is the last word of
        the command the editor was given). Earlier (the sleep running, the agent still polling for
        that file), a cancel leaves the command running to its end.
        """
        if not client.created or not running(marker):
            return False
        try:
            words = (Path(client.created[0][1][-1]) / "pid").read_text(encoding="utf-8").split()
        except OSError:  # not written yet
            return False
        return len(words) >= 2 and _holds_a_pidfd_of(int(words[1]))

    answer = await _turn(
        client, workspace, tmp_path / "state", _bash(f"sleep {marker}"), cancel_when=under_way
    )
    # cancelled while the sleep runs: the sleep alone would take 57 s
    assert answer.stop_reason == "cancelled" and time.monotonic() - started < 15
    assert client.released == ["term-1"] and client.processes["term-1"].returncode is not None
    await eventually(lambda: not running(marker), what=f"the sleep {marker} killed")
    assert client.editor.call_updates("t1")[-1].status == "failed"


async def test_a_call_cancelled_before_the_agent_attaches_still_stops_the_command(
    workspace: Path, tmp_path: Path
) -> None:
    """The cancel lands as soon as the sleep runs: the agent may not have read the ``pid`` file yet.

    The trampoline took the plan and started the launcher in a session of its own, so releasing
    the terminal does not reach it: the agent finds it from the ``pid`` file (``late_attach``) and
    kills it. Before, the command ran on to its end (57 s here).
    """
    marker = "57.2958"  # a sleep nobody else runs
    client = TerminalEditor(EditorClient(permissions=["allow_once"]))
    started = time.monotonic()
    answer = await _turn(
        client, workspace, tmp_path / "state", _bash(f"sleep {marker}"), cancel_when=lambda: running(marker)
    )
    # the turn ends with the cancel, not with the sleep (57 s: the terminal waits for its command)
    assert answer.stop_reason == "cancelled" and time.monotonic() - started < 15
    assert client.released == ["term-1"]
    await eventually(lambda: not running(marker), what=f"the sleep {marker} killed", timeout_s=10)
    assert client.editor.call_updates("t1")[-1].status == "failed"


async def test_a_timeout_kills_the_command_and_is_reported_as_in_the_runner(
    workspace: Path, tmp_path: Path
) -> None:
    marker = "58.2957"
    turns = [
        {
            "tool_calls": [
                {
                    "id": "t1",
                    "name": "bash",
                    "arguments": {"command": f"echo go; sleep {marker}", "timeout_ms": 1500},
                }
            ]
        },
        "Done.",
    ]
    client = TerminalEditor(EditorClient(permissions=["allow_once"]))
    await _turn(client, workspace, tmp_path / "state", turns)
    data = client.editor.call_updates("t1")[-1].raw_output["data"]
    assert data["timedOut"] is True and data["exitCode"] is None and data["code"] == "timeout"
    assert data["stdout"] == "go\n"
    assert not running(marker)


async def test_without_the_option_or_terminals_or_when_refused_bash_runs_here(
    workspace: Path, tmp_path: Path
) -> None:
    for editor_terminal, terminal, refuse in ((False, True, False), (True, False, False), (True, True, True)):
        client = TerminalEditor(EditorClient(permissions=["allow_once"]), refuse=refuse)
        await _turn(
            client,
            workspace,
            tmp_path / f"state-{editor_terminal}-{terminal}-{refuse}",
            _bash("echo here"),
            editor_terminal=editor_terminal,
            terminal=terminal,
        )
        final = client.editor.call_updates("t1")[-1]
        assert final.status == "completed" and final.raw_output["data"]["stdout"] == "here\n"
        assert final.content[0].content.text == "```\nhere\n```"  # shown as ever, sandboxed as ever
        assert len(client.created) == (1 if refuse else 0) and client.processes == {}


async def test_the_flag_turns_it_on_for_a_real_steerable_acp(
    workspace: Path, tmp_path: Path, child_env: Callable[..., dict[str, str]]
) -> None:
    script = write_script(tmp_path / "turns.json", _bash("echo from-the-terminal"))
    env = child_env(STEERABLE_PROVIDER="scripted", STEERABLE_SCRIPT=str(script))
    client = TerminalEditor(EditorClient(permissions=["allow_once"]))
    state = str(tmp_path / "state")
    async with spawn_acp(client, env, "--editor-terminal", "--state-dir", state) as (conn, _):
        await conn.initialize(
            protocol_version=PROTOCOL_VERSION, client_capabilities=ClientCapabilities(terminal=True)
        )
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        answer = await conn.prompt(session_id=session.session_id, prompt=[text_block("run")])
    assert answer.stop_reason == "end_turn"
    assert bytes(client.shown["term-1"]) == b"from-the-terminal\n" and client.released == ["term-1"]
    final = client.editor.call_updates("t1")[-1]
    assert final.status == "completed" and final.raw_output["data"]["stdout"] == "from-the-terminal\n"
