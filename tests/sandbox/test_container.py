"""The container posture (``STEERABLE_SANDBOX=container``): ``bash`` and ``run_code`` run without a
layer-2 wrap, keep the container's environment but credentials, use its network, and what a
command leaves running outlives the call and the run, on record for ``steerable jobs``. Everything
here runs real processes; the default posture is checked to be unchanged beside it."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from test_runner import alive, gone, sleeper

from steerable_agent_runtime import ToolCall, ToolResult, ToolRouter, workspace_tools_for_cwd
from steerable_agent_runtime.sandbox import (
    BackgroundJob,
    ContainerBackend,
    InheritedBackend,
    SandboxConfig,
    container_environment,
    list_jobs,
    select_backend,
)
from steerable_agent_runtime.sandbox._jobs import jobs_result
from steerable_cli import run_steerable
from waiting import eventually, wait_until

CONTAINER = {"STEERABLE_SANDBOX": "container"}


async def bash(router: ToolRouter, command: str, **arguments: Any) -> ToolResult:
    return await router.dispatch(ToolCall(id="c", name="bash", arguments={"command": command, **arguments}))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def get(port: int) -> int:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as response:
        return int(response.status)


def running(pid: int) -> bool:
    """The pid names a live process (a zombie waiting for its reaper counts as ended)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def background_sentence(job: dict[str, Any]) -> str:
    """What the model is told about one process its command left running."""
    return (
        f"1 process the command started is still running: pid {job['pid']} ({job['command']}). It keeps "
        f"running after this call and after the run, its output going to {job['log']}. Stop it with "
        f"`kill {job['pid']}` when it is no longer needed (`steerable jobs` lists what commands left "
        "running; `steerable jobs stop PID` stops one and what it started)."
    )


# -- the switch -------------------------------------------------------------------------------------


def test_container_is_a_sandbox_choice_and_wins_over_confined():
    config = SandboxConfig.from_env({"STEERABLE_SANDBOX": "CONTAINER"})
    assert config.container and config.backend == "container"
    assert isinstance(select_backend(config), ContainerBackend)
    both = SandboxConfig.from_env({**CONTAINER, "STEERABLE_SIDECAR_CONFINED": "1"})
    assert isinstance(select_backend(both), ContainerBackend)
    assert not SandboxConfig.from_env({}).container
    assert isinstance(select_backend(SandboxConfig(confined=True)), InheritedBackend)


async def test_results_and_doctor_name_the_container_backend(workspace: Path, env: dict[str, str]):
    router = workspace_tools_for_cwd(workspace, environ=env)
    result = await bash(router, "echo inside")
    assert result.success and result.data is not None and result.data["stdout"] == "inside\n"
    assert result.data["_sandbox"] == {"backend": "container", "enforcement": "none"}
    assert "backgroundJobs" not in result.data and result.message is None  # nothing left running
    spec = router.get("bash")
    assert spec is not None and "The container is the sandbox" in spec.description
    doctor = run_steerable("doctor", "--json", "--no-plugins", env=env, cwd=workspace)
    rows = {row["item"]: row for row in json.loads(doctor.stdout)["checks"] if row["section"] == "Sandbox"}
    assert rows["backend"]["value"] == "container (none enforcement)"
    assert rows["backend"]["detail"].startswith("STEERABLE_SANDBOX=container")
    assert rows["network"]["value"] == "the container's"


# -- 1. writes, 2. environment, 3. network ---------------------------------------------------------


async def test_a_command_writes_outside_the_workspace_only_in_the_container_posture_run_9(
    workspace: Path, outside: Path, env: dict[str, str]
):
    """RUN-9: the default sandbox still refuses the write; the container posture lets it through."""
    target = outside / "written.txt"
    default = workspace_tools_for_cwd(workspace)
    refused = await bash(default, f"echo no > {target}")
    assert refused.success is False and refused.data is not None and refused.data["exitCode"] != 0
    assert not target.exists()
    container = workspace_tools_for_cwd(workspace, environ=env)
    written = await bash(container, f"echo yes > {target} && mkdir -p {outside}/etc/x && echo ok")
    assert written.success, written
    assert target.read_text() == "yes\n" and (outside / "etc" / "x").is_dir()


async def test_a_command_may_change_protected_paths_only_in_the_container_posture_file_15(
    workspace: Path, env: dict[str, str]
):
    """FILE-15 reverts a command's ``git init`` / hook by default; in the container posture (a task
    container, thrown away after the trial) what the command wrote stays."""
    command = "git init -q && git config user.name trial && printf 'exit 0\\n' > .git/hooks/pre-commit"
    default = await bash(workspace_tools_for_cwd(workspace), command)
    assert default.data is not None and default.data.get("protectedReverted"), default
    assert not (workspace / ".git" / "hooks" / "pre-commit").exists()
    kept = await bash(workspace_tools_for_cwd(workspace, environ=env), command)
    assert kept.success and kept.data is not None and "protectedReverted" not in kept.data, kept
    assert (workspace / ".git" / "hooks" / "pre-commit").read_text() == "exit 0\n"
    assert "name = trial" in (workspace / ".git" / "config").read_text()


async def test_the_container_environment_passes_on_but_credentials_run_7(
    workspace: Path, env: dict[str, str]
):
    """RUN-7 holds by default; the container posture keeps the image's variables, never a credential."""
    secrets = {
        "STEERABLE_API_KEY": "sk-canary-steerable-0001",
        "OPENAI_API_KEY": "sk-canary-openai-0002",
        "GITHUB_TOKEN": "ghp_canary0003",
        "PGPASSWORD": "canary-pg-0004",
        "DATABASE_URL": "postgres://app:canary-db-0005@db/app",
        "STEERABLE_EXTRA_HEADERS": '{"X-Gateway": "canary-header-0006"}',
    }
    kept = {"JAVA_HOME": "/opt/jdk", "TASK_MODE": "verify", "SSH_AUTH_SOCK": "/run/agent.sock"}
    environ = {k: v for k, v in env.items() if not k.startswith(("LC_", "LANG"))}
    environ.update({**secrets, **kept})
    router = workspace_tools_for_cwd(workspace, environ=environ)
    result = await bash(router, "env")
    assert result.success and result.data is not None
    seen = dict(line.split("=", 1) for line in result.data["stdout"].splitlines() if "=" in line)
    assert "canary" not in result.data["stdout"]
    assert set(secrets).isdisjoint(seen)
    assert {name: seen.get(name) for name in kept} == kept
    assert seen["STEERABLE_STATE_DIR"] == env["STEERABLE_STATE_DIR"]  # `steerable jobs` finds the records
    assert seen["PATH"] == environ["PATH"] and seen.get("TMPDIR") == environ.get("TMPDIR")
    assert "LC_CTYPE" not in seen  # the relay's Python coerces its own locale, not the command's
    assert len(seen["STEERABLE"]) == 16  # the token that marks the processes the command starts
    default_router = workspace_tools_for_cwd(workspace, environ={**environ, "STEERABLE_SANDBOX": "auto"})
    default = await bash(default_router, "env")
    assert default.data is not None and "JAVA_HOME" not in default.data["stdout"]


def test_every_secret_setting_is_scrubbed_from_the_container_environment():
    """The variables steerable itself marks secret (shown only as set/unset) never reach a command."""
    from steerable_sidecar.config._settings import VARIABLES

    secret = [var.name for var in VARIABLES if var.kind == "secret" or var.masked]
    assert "STEERABLE_API_KEY" in secret and "STEERABLE_EXTRA_HEADERS" in secret
    env = container_environment({name: "x" * 24 for name in secret} | {"PATH": "/bin"})
    assert env == {"PATH": "/bin"}


async def test_the_network_is_the_containers(workspace: Path, env: dict[str, str]):
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        port = server.getsockname()[1]
        router = workspace_tools_for_cwd(workspace, environ=env)
        call = asyncio.ensure_future(bash(router, f"echo hello > /dev/tcp/127.0.0.1/{port} && echo sent"))
        conn, _ = await asyncio.to_thread(server.accept)
        with conn:
            assert await asyncio.to_thread(conn.recv, 64) == b"hello\n"
        result = await call
    assert result.success and result.data is not None and result.data["stdout"] == "sent\n"


# -- 4. background processes outlive the call and the run ------------------------------------------


def test_a_background_server_outlives_the_call_and_the_run_then_steerable_jobs_stops_it(
    workspace: Path, env: dict[str, str], state: Path, leftovers: list[int]
):
    port = free_port()
    start = f"{sys.executable} -m http.server {port} --bind 127.0.0.1 & echo started"
    probe = (
        f"{sys.executable} -c 'import time, urllib.request as u\n"
        f"for _ in range(100):\n"
        f'    try: print(u.urlopen("http://127.0.0.1:{port}/").status); break\n'
        f"    except OSError: time.sleep(0.05)'"
    )
    lines = "".join(
        json.dumps({"id": str(i), "name": "bash", "arguments": {"command": c, "timeout_ms": 60_000}}) + "\n"
        for i, c in enumerate((start, probe))
    )
    began = time.monotonic()
    session = run_steerable(
        "session", "--no-plugins", "-w", str(workspace), env=env, stdin=lines, timeout_s=60
    )
    assert session.returncode == 0, session.stderr  # the runtime has ended: the session process exited
    first, second = (json.loads(line)["result"] for line in session.stdout.splitlines())
    leftovers.extend(job["pid"] for job in first.get("data", {}).get("backgroundJobs", []))
    data = first["data"]
    assert first["success"] is True and data["stdout"] == "started\n"
    # not held by the server's pipes: held, the call would last until its 60 s timeout
    assert data["durationMs"] < 5_000 and time.monotonic() - began < 30
    [job] = data["backgroundJobs"]
    assert f"-m http.server {port}" in job["command"]
    assert job["log"].startswith(str(state / "jobs")) and job["log"].endswith(".log")
    assert first["message"] == background_sentence(job)
    assert second["success"] is True and second["data"]["stdout"] == "200\n"  # a second call reaches it
    assert "backgroundJobs" not in second["data"]
    assert get(port) == 200  # and so does this process, after the run

    listed = run_steerable("jobs", "--json", env=env, cwd=workspace)
    assert listed.returncode == 0, listed.stderr
    [record] = json.loads(listed.stdout)
    assert record["pid"] == job["pid"]
    assert record["command"] == f"{sys.executable} -m http.server {port} --bind 127.0.0.1"
    assert record["startedBy"] == start and record["workspace"] == str(workspace)
    assert abs(record["startedAt"] - time.time()) < 120
    table = run_steerable("jobs", env=env, cwd=workspace)
    assert table.stdout.splitlines()[0] == "PID      STARTED              COMMAND"
    assert table.stdout.splitlines()[1].startswith(f"{job['pid']:<8} ")
    assert f"http.server {port}" in table.stdout
    assert "GET / HTTP/1.1" in Path(job["log"]).read_text()  # what it printed after the call

    stopped = run_steerable("jobs", "stop", str(job["pid"]), env=env, cwd=workspace)
    assert stopped.returncode == 0, stopped.stderr
    assert stopped.stdout == f"stopped {job['pid']}: {record['command']}\n"
    wait_until(lambda: not running(job["pid"]), what="the stopped server gone")
    with pytest.raises(OSError):
        get(port)
    assert run_steerable("jobs", env=env, cwd=workspace).stdout == "no background jobs\n"
    assert not Path(job["log"]).exists()  # its output log goes with the last job writing there


def test_steerable_jobs_stop_refuses_an_unknown_pid_and_stops_all(
    workspace: Path, env: dict[str, str], leftovers: list[int], capsys: pytest.CaptureFixture[str]
):
    """The command in this process (its subprocess twin is the test above): usage, unknown pids."""
    from steerable_sidecar.cli._main import main

    def jobs(*argv: str) -> tuple[int, str, str]:
        code = main(["jobs", "--state-dir", env["STEERABLE_STATE_DIR"], *argv])
        out, err = capsys.readouterr()
        return code, out, err

    assert jobs("stop", "--all") == (0, "no background jobs\n", "")
    code, _, err = jobs("stop")
    assert code == 2 and err == "steerable jobs stop: give the pids to stop, or --all\n"
    seconds, token = sleeper()
    command = f"nohup sleep {seconds} >/dev/null 2>&1 & setsid sleep {seconds} &"
    result = asyncio.run(bash(workspace_tools_for_cwd(workspace, environ=env), command))
    assert result.data is not None
    listed = result.data["backgroundJobs"]
    leftovers.extend(job["pid"] for job in listed)
    assert len(listed) == 2 and all(token in job["command"] for job in listed)
    assert result.message is not None
    assert result.message.startswith("2 processes the command started are still running: pid ")
    code, out, _ = jobs("--json")
    assert code == 0 and sorted(job["pid"] for job in json.loads(out)) == sorted(j["pid"] for j in listed)
    code, out, _ = jobs()
    assert out.startswith("PID      STARTED              COMMAND\n")
    assert all(f"\n{job['pid']:<8} " in out for job in listed)  # a row per job, then its output line
    assert jobs("stop", "1") == (
        1,
        "",
        "steerable jobs stop: 1 is not a running background job (`steerable jobs` lists them)\n",
    )
    assert running(1)  # nothing was signalled
    code, out, _ = jobs("stop", "--all")
    assert code == 0 and out.count("stopped ") == 2
    assert asyncio.run(gone(token)), alive(token)


async def test_the_call_returns_when_its_command_ends_and_later_output_goes_to_the_log(
    workspace: Path, env: dict[str, str], leftovers: list[int]
):
    router = workspace_tools_for_cwd(workspace, environ=env)
    go = workspace / "go"
    command = f"(until [ -e {go} ]; do sleep 0.01; done; echo later; echo oops >&2; sleep 1) & echo now"
    result = await bash(router, command, timeout_ms=60_000)
    # the call returned while the subshell, which holds the command's stdout and stderr, still
    # waits for go (a call that waited for it would have ended at its 60 s timeout, failed)
    assert not go.exists()
    assert result.success and result.data is not None and result.data["stdout"] == "now\n"
    [job] = result.data["backgroundJobs"]
    leftovers.append(job["pid"])
    assert result.message == background_sentence(job)
    log = Path(job["log"])
    go.touch()
    await eventually(lambda: log.exists() and "oops" in log.read_text(), what="the later output logged")
    assert sorted(log.read_text().split()) == ["later", "oops"]


async def test_a_timeout_still_kills_the_process_group(workspace: Path, env: dict[str, str]):
    seconds, token = sleeper()
    router = workspace_tools_for_cwd(workspace, environ=env)
    began = time.monotonic()
    result = await bash(router, f"echo begun; sleep {seconds} & sleep {seconds}", timeout_ms=400)
    # cut short at the 400 ms deadline: a call that waited for its sleeps would take over 100 s
    assert time.monotonic() - began < 10
    assert result.success is False and result.needs_followup is True
    assert result.error == (
        "The command timed out after 400 ms; it and the processes in its process group were killed."
    )
    assert result.data is not None and result.data["code"] == "timeout" and result.data["stdout"] == "begun\n"
    assert "backgroundJobs" not in result.data
    assert await gone(token), f"left running: {alive(token)}"


async def test_a_failing_command_names_what_it_left_running_after_its_error(
    workspace: Path, env: dict[str, str], leftovers: list[int]
):
    seconds, token = sleeper()
    router = workspace_tools_for_cwd(workspace, environ=env)
    result = await bash(router, f"sleep {seconds} & exit 3")
    assert result.success is False and result.data is not None and result.data["code"] == "exit_status"
    [job] = result.data["backgroundJobs"]
    leftovers.append(job["pid"])
    assert result.error == f"The command exited with status 3. {background_sentence(job)}"
    assert job["pid"] in alive(token)  # (with the relay that keeps its output, whose command line names it)


async def test_under_the_default_backend_leftovers_are_still_killed(workspace: Path, state: Path):
    seconds, token = sleeper()
    router = workspace_tools_for_cwd(workspace, environ={**os.environ, "STEERABLE_STATE_DIR": str(state)})
    result = await bash(router, f"sleep {seconds} & echo left")
    assert result.success and result.data is not None and result.data["stdout"] == "left\n"
    assert result.data["_sandbox"]["backend"] in ("bwrap", "landlock") and "backgroundJobs" not in result.data
    assert await gone(token), f"left running: {alive(token)}"
    assert list_jobs(state / "jobs") == []
    spec = router.get("bash")
    assert spec is not None and "Background processes are killed when the command exits." in spec.description


def test_the_sentence_for_several_processes():
    jobs = [
        BackgroundJob(
            pid=pid,
            command=f"worker {pid}",
            started_at=0.0,
            start_ticks=0,
            started_by="x",
            workspace="/app",
            log="/s/jobs/t.log",
        )
        for pid in range(101, 113)
    ]
    told = jobs_result(ToolResult(success=True, data={"exitCode": 0}), jobs)
    assert told.message == (
        "12 processes the command started are still running: "
        + ", ".join(f"pid {pid} (worker {pid})" for pid in range(101, 111))
        + " and 2 more. They keep running after this call and after the run, their output going to "
        "/s/jobs/t.log. Stop one with `kill PID` when it is no longer needed (`steerable jobs` lists what "
        "commands left running; `steerable jobs stop PID` stops one and what it started)."
    )
    assert told.data is not None and len(told.data["backgroundJobs"]) == 12
    assert told.data["backgroundJobs"][0] == {"pid": 101, "command": "worker 101", "log": "/s/jobs/t.log"}


# -- 5. the file tools keep their gates; run_code ---------------------------------------------------


async def test_the_file_tools_keep_protected_paths_and_read_before_write_file_15_file_8(
    workspace: Path, env: dict[str, str]
):
    """FILE-15 and FILE-8: the posture changes bash and run_code only."""
    (workspace / "notes.txt").write_text("old\n")
    router = workspace_tools_for_cwd(workspace, environ=env)
    hook = await router.dispatch(
        ToolCall(id="w", name="write_file", arguments={"path": ".git/hooks/pre-commit", "content": "x\n"})
    )
    assert hook.success is False and hook.data is not None and hook.data["code"] == "protected_path"
    blind = await router.dispatch(
        ToolCall(id="w2", name="write_file", arguments={"path": "notes.txt", "content": "new\n"})
    )
    assert blind.success is False and blind.data is not None and blind.data["code"] == "not_read"
    assert (workspace / "notes.txt").read_text() == "old\n"


async def test_run_code_runs_in_the_container_posture_too(workspace: Path, env: dict[str, str]):
    from steerable_sidecar.run_code._tool import run_code_tool

    router = workspace_tools_for_cwd(workspace, environ=env)
    tool = run_code_tool(workspace, router=router, environ=env)
    assert "the container around it being the sandbox" in tool.description
    router.register(tool)
    code = "return [tools.read_file(path='a.txt')['content'], 6 * 7]"
    (workspace / "a.txt").write_text("from the workspace\n")
    call = ToolCall(id="r", name="run_code", arguments={"code": code, "description": "t"})
    result = await router.dispatch(call)
    assert result.success, result
    assert result.data is not None and result.data["value"] == ["from the workspace\n", 42]
    assert result.data["_sandbox"] == {"backend": "container", "enforcement": "none"}


async def test_web_fetchs_html_converter_keeps_its_sandbox_in_the_container_posture(env: dict[str, str]):
    """The posture is bash's and run_code's: the converter still parses hostile HTML under layer 2."""
    from steerable_sidecar.web_tools._converter import HtmlConverter

    converter = HtmlConverter(environ=env)
    try:
        deadline = asyncio.get_running_loop().time() + 30
        rendered = await converter.convert("<h1>Title</h1>", base_url=None, max_chars=1000, deadline=deadline)
    finally:
        await converter.aclose()
    assert rendered.text.strip() == "# Title"
    assert converter.sandbox is not None and converter.sandbox.backend in ("bwrap", "landlock")


# -- 6. the key in steerable's own environment ---------------------------------------------------------


def test_no_command_can_read_the_key_from_steerables_own_environment(workspace: Path) -> None:
    """The children's environment is scrubbed, but a command runs as steerable's user in this
    posture and could read steerable's ``/proc/PID/environ``, where the key is. As soon as the
    tools exist (before any model call) the credentials' values there are stars and the process is
    non-dumpable; ``os.environ`` keeps them. In a child process: both are process-wide."""
    import subprocess

    program = (
        "import asyncio, ctypes, os, sys\n"
        "from pathlib import Path\n"
        "from steerable_agent_runtime import ToolCall, workspace_tools_for_cwd\n"
        "dumpable = lambda: ctypes.CDLL(None).prctl(3, 0, 0, 0, 0)  # PR_GET_DUMPABLE\n"
        "shown = lambda: Path('/proc/self/environ').read_bytes().count(b'sk-canary-0042')\n"
        "before = (dumpable(), shown())\n"
        "router = workspace_tools_for_cwd(sys.argv[1])\n"
        "after = (dumpable(), shown(), os.environ['STEERABLE_API_KEY'])\n"
        'look = \'cat /proc/[0-9]*/environ 2>/dev/null | tr "\\\\0" "\\\\n" | grep -c sk-canary-0042; true\'\n'
        "result = asyncio.run(router.dispatch(ToolCall(id='c', name='bash', arguments={'command': look})))\n"
        "print(before, after, result.data['stdout'].strip() if result.data else result.error)\n"
    )
    clean = {k: v for k, v in os.environ.items() if not k.startswith("STEERABLE_")}
    canaries = {"STEERABLE_API_KEY": "sk-canary-0042", "OPENAI_API_KEY": "sk-canary-0042-openai"}
    want = {
        "auto": "(1, 2) (1, 2, 'sk-canary-0042') 0",  # the sandbox's own pid namespace hides steerable
        "container": "(1, 2) (0, 0, 'sk-canary-0042') 0",
    }
    for sandbox, expected in want.items():
        env = {**clean, **canaries, "STEERABLE_SANDBOX": sandbox, "JAVA_HOME": "/opt/jdk"}
        done = subprocess.run(
            [sys.executable, "-c", program, str(workspace)],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.stdout.strip() == expected, (sandbox, done.stdout, done.stderr[-2000:])
