"""The records of the container posture's background jobs are not trusted (``sandbox/_jobs.py``).

Commands can write ``<state dir>/jobs``: a forged record must not make ``steerable jobs stop``
signal a process that no command started nor delete a file outside that directory. Genuine jobs
(those a command left, the ones that cleared their environment with ``env -i`` too) still stop.
Also the container environment's scrub of the credentials steerable and tasks hold under other
names. Everything runs real leftovers; nothing is mocked.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from steerable_agent_runtime import ToolCall, ToolResult, workspace_tools_for_cwd
from steerable_agent_runtime.config import credential_name
from steerable_agent_runtime.sandbox import BackgroundJob, container_environment, list_jobs, stop_jobs
from waiting import WAIT_S, wait_until

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="job records read /proc")

NOT_A_JOB = "steerable jobs stop: {pid} is not a running background job (`steerable jobs` lists them)\n"


@pytest.fixture
def directory(state: Path) -> Path:
    jobs = state / "jobs"
    jobs.mkdir(parents=True)
    return jobs


@pytest.fixture
def spawn(leftovers: list[int]) -> Iterator[Callable[..., subprocess.Popen[bytes]]]:
    """Start ``sleep 30`` (or ``argv``) as a child of this test, killed and reaped at the end."""
    started: list[subprocess.Popen[bytes]] = []

    def start(*argv: str, environ: dict[str, str] | None = None, **options: Any) -> subprocess.Popen[bytes]:
        child = subprocess.Popen(list(argv) or ["sleep", "30"], env=environ, **options)
        started.append(child)
        leftovers.append(child.pid)
        # Popen returns once the child's execve closed its close-on-exec descriptors, a moment
        # before the kernel has put the new arguments and environment in place: until then /proc
        # shows both empty, and on a busy machine (two test runs at once) a record is read then
        wait_until(
            lambda: child.poll() is not None or Path(f"/proc/{child.pid}/cmdline").read_bytes(),
            what="the child's command line in /proc",
        )
        return child

    yield start
    for child in started:
        child.kill()
        child.wait()


def stat(pid: int) -> list[str]:
    """``/proc/PID/stat`` after the command name: state, ppid, pgrp, session... (starttime at 19)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def ticks(pid: int) -> int:
    return int(stat(pid)[19])


def running(pid: int) -> bool:
    try:
        return stat(pid)[0] != "Z"
    except OSError:
        return False


def ended(pid: int, within_s: float = WAIT_S) -> bool:
    """Whether ``pid`` ended (waited for, ``within_s`` at most)."""
    try:
        wait_until(lambda: not running(pid), what=f"process {pid} ended", timeout_s=within_s)
    except AssertionError:
        return False
    return True


def record(directory: Path, pid: int, **fields: Any) -> dict[str, Any]:
    """Write ``<pid>.json`` as a job's record, ``fields`` replacing (or, ``None``, dropping) fields."""
    data: dict[str, Any] = {
        "pid": pid,
        "command": "sleep 30",
        "started_at": time.time(),
        "start_ticks": ticks(pid),
        "started_by": "sleep 30 &",
        "workspace": "/app",
        "log": str(directory / f"{secrets.token_hex(8)}.log"),
        "group": 0,
    }
    data.update(fields)
    data = {name: value for name, value in data.items() if value is not None}
    (directory / f"{pid}.json").write_text(json.dumps(data), encoding="utf-8")
    return data


def job_of(data: dict[str, Any]) -> BackgroundJob:
    return BackgroundJob(**data)


def jobs_cli(capsys: pytest.CaptureFixture[str], state: Path, *argv: str) -> tuple[int, str, str]:
    from steerable_sidecar.cli._main import main

    code = main(["jobs", "--state-dir", str(state), *argv])
    out, err = capsys.readouterr()
    return code, out, err


async def bash(environ: dict[str, str], workspace: Path, command: str) -> ToolResult:
    router = workspace_tools_for_cwd(workspace, environ=environ)
    return await router.dispatch(ToolCall(id="c", name="bash", arguments={"command": command}))


# -- the review's forged record -------------------------------------------------------------------


def test_a_forged_record_neither_signals_the_process_nor_deletes_its_log(
    tmp_path: Path, directory: Path, spawn: Callable[..., subprocess.Popen[bytes]]
):
    """``{pid, start_ticks}`` copied from ``/proc/PID/stat``, ``log`` a file elsewhere: refused."""
    victim = spawn()
    outside = tmp_path / "x"
    outside.mkdir()
    for name in ("victim.txt", "victim.txt.1"):
        (outside / name).write_text("keep me\n")
    forged = record(directory, victim.pid, log=str(outside / "victim.txt"))

    assert list_jobs(directory) == []
    assert not (directory / f"{victim.pid}.json").exists()  # dropped as an ended job's record
    assert stop_jobs([job_of(forged)], directory, grace_s=0.2) == [(job_of(forged), "gone")]
    assert victim.poll() is None and running(victim.pid)
    assert sorted(p.name for p in outside.iterdir()) == ["victim.txt", "victim.txt.1"]
    assert (outside / "victim.txt").read_text() == "keep me\n"


def test_the_cli_refuses_a_forged_record(
    tmp_path: Path,
    state: Path,
    directory: Path,
    spawn: Callable[..., subprocess.Popen[bytes]],
    capsys: pytest.CaptureFixture[str],
):
    victim = spawn()
    target = tmp_path / "victim.txt"
    target.write_text("keep me\n")
    record(directory, victim.pid, log=str(target))
    assert jobs_cli(capsys, state, "stop", str(victim.pid)) == (1, "", NOT_A_JOB.format(pid=victim.pid))
    record(directory, victim.pid, log=str(target))
    assert jobs_cli(capsys, state, "--json") == (0, "[]\n", "")
    record(directory, victim.pid, log=str(target))
    assert jobs_cli(capsys, state, "stop", "--all") == (0, "no background jobs\n", "")
    assert victim.poll() is None and target.read_text() == "keep me\n"
    assert list(directory.iterdir()) == []


def test_a_log_in_the_directory_does_not_make_a_process_without_the_token_a_job(
    directory: Path, spawn: Callable[..., subprocess.Popen[bytes]]
):
    """The record may name a log of the right shape: the process must still carry its token."""
    victim = spawn()
    forged = record(directory, victim.pid)
    log = Path(forged["log"])
    log.write_text("another job's output\n")
    assert list_jobs(directory) == []
    assert stop_jobs([job_of(forged)], directory, grace_s=0.2) == [(job_of(forged), "gone")]
    assert victim.poll() is None
    assert not log.exists()  # a log in the directory, and no recorded job writes there


def test_the_process_group_rule_needs_the_commands_group_whose_leader_has_exited(
    directory: Path, spawn: Callable[..., subprocess.Popen[bytes]]
):
    """A forged ``group`` is refused for a group leader, and for a group whose leader still runs."""
    leader = spawn(start_new_session=True)  # its own group and session: pgrp == pid
    assert stat(leader.pid)[2:4] == [str(leader.pid)] * 2
    record(directory, leader.pid, group=leader.pid)
    assert list_jobs(directory) == []

    shell = spawn("sh", "-c", "sleep 30 & wait", start_new_session=True)
    wait_until(lambda: _children(shell.pid), what="the shell's sleep started")
    [pid] = _children(shell.pid)
    assert stat(pid)[2:4] == [str(shell.pid)] * 2  # in the shell's group and session; the shell runs
    record(directory, pid, group=shell.pid)
    assert list_jobs(directory) == []
    assert running(pid) and shell.poll() is None


def _children(parent: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if stat(int(entry))[1] == str(parent):
                    found.append(int(entry))
            except OSError:
                pass
    return found


# -- what a record must be ------------------------------------------------------------------------


@pytest.fixture
def genuine(
    directory: Path, spawn: Callable[..., subprocess.Popen[bytes]]
) -> tuple[subprocess.Popen[bytes], dict[str, Any]]:
    """A process carrying a command's token, and its record (as ``JobWatch.leftovers`` writes it)."""
    token = secrets.token_hex(8)
    child = spawn("sleep", "30", environ={"PATH": os.environ["PATH"], "STEERABLE": token})
    data = record(directory, child.pid, log=str(directory / f"{token}.log"))
    [listed] = list_jobs(directory)
    assert (listed.pid, listed.start_ticks, listed.log) == (child.pid, data["start_ticks"], data["log"])
    return child, data


@pytest.mark.parametrize(
    "change",
    [
        {"pid": True},
        {"pid": "PID"},
        {"start_ticks": "TICKS"},
        {"start_ticks": "FLOAT"},
        {"start_ticks": None},
        {"started_at": True},
        {"started_at": "1714560000"},
        {"command": ["sleep", "30"]},
        {"log": None},
        {"log": "/tmp/victim.txt"},
        {"log": "LOGDIR/../victim.log"},
        {"log": "LOGDIR/0123456789ABCDEF.log"},
        {"log": "LOGDIR/0123456789abcdef.log.1"},
        {"log": "0123456789abcdef.log"},
        {"group": False},
        {"extra": 1},
    ],
    ids=lambda change: ",".join(f"{k}={v}" for k, v in change.items()),
)
def test_a_record_with_a_field_out_of_shape_is_dropped(
    directory: Path, genuine: tuple[subprocess.Popen[bytes], dict[str, Any]], change: dict[str, Any]
):
    child, data = genuine
    spelled = {
        "PID": str(child.pid),
        "TICKS": str(data["start_ticks"]),
        "FLOAT": float(data["start_ticks"]),
    }
    for name, value in change.items():
        if isinstance(value, str) and value in spelled:
            value = spelled[value]
        elif isinstance(value, str):
            value = value.replace("LOGDIR", str(directory))
        data = {**data, name: value}
    data = {name: value for name, value in data.items() if value is not None}
    (directory / f"{child.pid}.json").write_text(json.dumps(data))
    assert list_jobs(directory) == []
    assert not (directory / f"{child.pid}.json").exists()
    assert child.poll() is None


def test_a_record_under_another_pids_name_or_not_an_object_is_dropped(
    directory: Path, genuine: tuple[subprocess.Popen[bytes], dict[str, Any]]
):
    child, data = genuine
    (directory / f"{child.pid}.json").rename(directory / "1.json")
    assert list_jobs(directory) == [] and list(directory.iterdir()) == []
    (directory / f"{child.pid}.json").write_text(json.dumps([data]))
    assert list_jobs(directory) == []
    (directory / f"{child.pid}.json").write_text(json.dumps(data) + " " * 70_000)  # over 64 KiB
    assert list_jobs(directory) == []
    os.mkfifo(directory / f"{child.pid}.json")  # opened without blocking, and not a file
    assert list_jobs(directory) == []
    assert child.poll() is None


def test_other_files_in_the_directory_are_left_alone(
    directory: Path, genuine: tuple[subprocess.Popen[bytes], dict[str, Any]]
):
    _, data = genuine
    kept = ["notes.json", "0042.json", "-1.json", ".9.json", "3f9c0a1b2c3d4e5f.log"]
    for name in kept:
        (directory / name).write_text("{}")
    assert [job.pid for job in list_jobs(directory)] == [data["pid"]]
    assert {p.name for p in directory.iterdir()} == {*kept, f"{data['pid']}.json"}


def test_a_symlinked_record_is_not_followed(
    tmp_path: Path, directory: Path, genuine: tuple[subprocess.Popen[bytes], dict[str, Any]]
):
    """A link named ``<pid>.json`` is not a record, even to a record that would count."""
    child, data = genuine
    elsewhere = tmp_path / "elsewhere.json"
    (directory / f"{child.pid}.json").rename(elsewhere)
    (directory / f"{child.pid}.json").symlink_to(elsewhere)
    assert list_jobs(directory) == []
    assert not (directory / f"{child.pid}.json").is_symlink()  # the link goes, not what it names
    assert json.loads(elsewhere.read_text()) == data
    assert child.poll() is None
    elsewhere.rename(directory / f"{child.pid}.json")  # the same record, a file: a job again
    assert [job.pid for job in list_jobs(directory)] == [child.pid]


def test_a_log_reached_by_another_spelling_of_the_directory_counts_but_is_deleted_there(
    tmp_path: Path, directory: Path, genuine: tuple[subprocess.Popen[bytes], dict[str, Any]]
):
    child, data = genuine
    alias = tmp_path / "alias"
    alias.symlink_to(directory)
    name = Path(data["log"]).name
    data = record(directory, child.pid, log=str(alias / name))
    (directory / name).write_text("output\n")
    (directory / f"{name}.1").write_text("older output\n")
    [job] = list_jobs(directory)
    assert stop_jobs([job], directory, grace_s=2) == [(job, "stopped")]
    assert ended(child.pid)
    assert list(directory.iterdir()) == [] and alias.is_symlink()


# -- genuine jobs still stop -------------------------------------------------------------------------


def test_a_job_carrying_its_token_stops_and_its_log_goes(
    directory: Path, genuine: tuple[subprocess.Popen[bytes], dict[str, Any]]
):
    child, data = genuine
    Path(data["log"]).write_text("output\n")
    [job] = list_jobs(directory)
    assert stop_jobs([job], directory, grace_s=2) == [(job, "stopped")]
    assert child.wait(timeout=5) == -15
    assert list(directory.iterdir()) == []


def test_jobs_a_command_left_stop_through_the_cli_env_i_too(
    workspace: Path,
    env: dict[str, str],
    state: Path,
    leftovers: list[int],
    capsys: pytest.CaptureFixture[str],
):
    """``env -i`` drops the token: such a job is recorded, listed and stopped by its process group."""
    seconds = f"{100 + secrets.randbelow(10_000) / 10_000:.4f}"
    command = f"env -i sleep {seconds} & nohup sleep {seconds} >/dev/null 2>&1 & echo started"
    result = asyncio.run(bash(env, workspace, command))
    assert result.success and result.data is not None, result
    left = result.data["backgroundJobs"]
    leftovers.extend(job["pid"] for job in left)
    assert len(left) == 2
    by_env = {b"STEERABLE=" in Path(f"/proc/{job['pid']}/environ").read_bytes(): job for job in left}
    cleared, carrying = by_env[False], by_env[True]
    stored = json.loads((state / "jobs" / f"{cleared['pid']}.json").read_text())
    assert 0 < stored["group"] != cleared["pid"]
    assert stat(cleared["pid"])[2:4] == [str(stored["group"])] * 2  # the relay's group and session
    assert not running(stored["group"])  # the relay has exited

    code, out, err = jobs_cli(capsys, state, "--json")
    assert (code, err) == (0, "")
    assert sorted(job["pid"] for job in json.loads(out)) == sorted(job["pid"] for job in left)
    code, out, err = jobs_cli(capsys, state, "stop", str(cleared["pid"]), str(carrying["pid"]))
    assert (code, err) == (0, "")
    assert out == f"stopped {cleared['pid']}: sleep {seconds}\nstopped {carrying['pid']}: sleep {seconds}\n"
    assert ended(cleared["pid"]) and ended(carrying["pid"])
    assert jobs_cli(capsys, state) == (0, "no background jobs\n", "")


# -- the container environment's scrub --------------------------------------------------------------

SCRUBBED = {
    "STEERABLE_EXTRA_BODY": '{"api_key": "canary-body-0001"}',
    "STEERABLE_BASE_URL": "https://gw.example/v1?key=canary-url-0002",
    "OPENAI_API_KEYS": "canary-keys-0003,canary-keys-0004",
    "AZURE_OPENAI_KEY_1": "canary-azure-0005",
    "AZURE_OPENAI_KEY2": "canary-azure-0006",
    "SECRET_KEY_BASE": "canary-rails-0007",
    "AUTHORIZATION": "Bearer canary-auth-0008",
    "HTTP_AUTHORIZATION": "Bearer canary-auth-0009",
    "GITHUB_TOKENS": "canary-gh-0010",
    "APP_SECRETS": "canary-app-0011",
    "openai_api_keys": "canary-lower-0012",
}
KEPT = {
    "JAVA_HOME": "/opt/jdk",
    "TOKENIZERS_PARALLELISM": "false",
    "KEYBOARD": "us",
    "MONKEY": "patched",
    "KEY_DIR": "/etc/keys",
    "XAUTHORITY": "/run/user/0/xauth",
    "SSH_AUTH_SOCK": "/run/agent.sock",
    "SECRET_KEY_BASE_DIR": "/srv/rails",
    "AUTHORIZATION_URL": "https://idp.example/authorize",
    "PWD": "/app",
    "STEERABLE_MODEL": "gpt-test",
    "PATH": "/usr/bin:/bin",
}


@pytest.mark.parametrize("name", sorted(SCRUBBED))
def test_the_container_environment_drops_each_newly_covered_name(name: str):
    assert container_environment({**KEPT, name: SCRUBBED[name]}) == KEPT


NAMED = {name: value for name, value in SCRUBBED.items() if not name.startswith("STEERABLE_")}
"""The credentials told by their names (steerable's two settings are told by theirs alone)."""


def test_credential_names_and_harmless_ones():
    assert [name for name in SCRUBBED if credential_name(name)] == list(NAMED)
    assert [name for name in KEPT if credential_name(name)] == []


def test_log_redaction_shares_the_rule():
    from steerable_sidecar.shared._secrets import credential_values

    assert sorted(credential_values({**KEPT, **NAMED})) == sorted(NAMED.values())


async def test_a_command_sees_none_of_them(workspace: Path, env: dict[str, str]):
    environ = {k: v for k, v in env.items() if not k.startswith(("LC_", "LANG"))}
    environ.update({**SCRUBBED, **{k: v for k, v in KEPT.items() if k not in ("PATH", "PWD")}})
    result = await bash(environ, workspace, "env")
    assert result.success and result.data is not None, result
    assert "canary" not in result.data["stdout"]
    seen = dict(line.split("=", 1) for line in result.data["stdout"].splitlines() if "=" in line)
    assert set(SCRUBBED).isdisjoint(seen)
    assert {k: seen.get(k) for k in KEPT if k not in ("PATH", "PWD")} == {
        k: v for k, v in KEPT.items() if k not in ("PATH", "PWD")
    }
