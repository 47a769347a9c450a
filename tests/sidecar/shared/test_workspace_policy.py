"""Issue 32, item 2: one workspace rule for every command (``steerable_sidecar.shared._workspace_rule``).

Each command that opens a workspace refuses ``/``, a home folder, a folder above one and a folder
holding steerable's state directory (or inside it), whether it is the current directory or named by
``--workspace``: exit 2 and one message naming the fix. A project folder works; the container
posture (``STEERABLE_SANDBOX=container``, Harbor's) opens any folder, ``/`` included. Every case
runs the real ``steerable`` command.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from steerable_cli import run_steerable

WHOLE = "steerable will not give a model a whole disk or a home folder"
FORGE = "a model working there could forge the session records kept in it"
FIX = "Open a project folder instead: cd into it, or pass --workspace DIR"
MCP_FIX = (
    "Name a project folder instead: --workspace DIR "
    '(in the host\'s configuration: "args": ["mcp", "--workspace", "/path/to/project"])'
)

COMMANDS: dict[str, list[str]] = {
    "tools": ["tools"],
    "call": ["call", "read_file", '{"path": "notes.txt"}'],
    "session": ["session"],
    "plugins": ["plugins"],
    "run": ["run", "--instruction", "say done", "--no-web-tools"],
    "sidecar": ["sidecar"],
    "mcp": ["mcp"],
}
"""Every command that opens a workspace at start, with the arguments it needs to run."""


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """``$HOME`` of the commands run here: a folder of the test's own."""
    folder = tmp_path.resolve() / "users" / "me"
    folder.mkdir(parents=True)
    return folder


@pytest.fixture
def project(home: Path) -> Path:
    """A project folder below ``home``, with ``notes.txt``."""
    folder = home / "src" / "project"
    folder.mkdir(parents=True)
    (folder / "notes.txt").write_text("alpha\n", encoding="utf-8")
    return folder


@pytest.fixture
def env(
    tmp_path: Path, home: Path, child_env: Callable[..., dict[str, str]]
) -> Callable[..., dict[str, str]]:
    """The child environment: ``HOME`` is :func:`home`, a scripted model for ``run``, the state outside."""
    script = tmp_path / "turns.json"
    script.write_text(json.dumps(["done"]), encoding="utf-8")

    def build(**extra: str) -> dict[str, str]:
        base = child_env(
            HOME=str(home),
            STEERABLE_STATE_DIR=str(tmp_path / "state"),
            STEERABLE_PROVIDER="scripted",
            STEERABLE_SCRIPT=str(script),
        )
        base.pop("XDG_STATE_HOME", None)
        return {**base, **extra}

    return build


def steerable(command: str, *extra: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run ``steerable COMMAND`` with its arguments, no plugins, end of input at once."""
    return run_steerable(*COMMANDS[command], "--no-plugins", *extra, env=env, cwd=cwd, stdin="")


def _fix(command: str) -> str:
    return MCP_FIX if command == "mcp" else FIX


# -- refused: /, home, above home, however the folder is named -------------------------------------


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("how", ["current directory", "--workspace"])
@pytest.mark.parametrize("where", ["root", "home"])
def test_every_command_refuses_the_root_and_a_home_folder(
    command: str, how: str, where: str, home: Path, project: Path, env: Callable[..., dict[str, str]]
) -> None:
    folder = Path("/") if where == "root" else home
    if how == "current directory":
        done = steerable(command, env=env(), cwd=folder)
        origin = "the current directory"
    else:
        done = steerable(command, "--workspace", str(folder), env=env(), cwd=project)
        origin = "--workspace"
    what = "is the file system's root" if where == "root" else "is a home folder"
    message = f"the workspace {folder} ({origin}) {what}; {WHOLE}. {_fix(command)}"
    assert (done.returncode, done.stderr) == (2, f"steerable {command}: {message}\n")
    if command == "run":  # and its one JSON line, as for any usage error
        assert json.loads(done.stdout) == {"outcome": "usage_error", "error": message, "exitCode": 2}
    else:
        assert done.stdout == ""


@pytest.mark.parametrize("command", ["call", "run"])
def test_a_folder_above_a_home_is_refused_and_a_relative_workspace_is_resolved(
    command: str, home: Path, project: Path, env: Callable[..., dict[str, str]]
) -> None:
    above = home.parent
    done = steerable(command, env=env(), cwd=above)
    expected = (
        f"the workspace {above} (the current directory) is above the home folder {home}; {WHOLE}. {FIX}"
    )
    assert (done.returncode, done.stderr) == (2, f"steerable {command}: {expected}\n")
    done = steerable(command, "-w", "../..", env=env(), cwd=project)
    expected = f"the workspace {home} (--workspace ../..) is a home folder; {WHOLE}. {FIX}"
    assert (done.returncode, done.stderr) == (2, f"steerable {command}: {expected}\n")


def test_an_empty_workspace_and_a_deleted_current_directory_are_refused(
    tmp_path: Path, project: Path, env: Callable[..., dict[str, str]]
) -> None:
    done = steerable("call", "--workspace", " ", env=env(), cwd=project)
    assert (done.returncode, done.stderr) == (2, f"steerable call: --workspace is empty. {FIX}\n")
    gone = tmp_path / "gone"
    gone.mkdir()
    script = f"cd {gone} && rmdir {gone} && exec {sys.executable} -P -m steerable_sidecar tools --no-plugins"
    done = subprocess.run(
        ["/bin/sh", "-c", script], capture_output=True, text=True, env=env(), timeout=60, check=False
    )
    assert (done.returncode, done.stderr) == (
        2,
        f"steerable tools: the current directory no longer exists. {FIX}\n",
    )
    gone.mkdir()
    doctor = script.replace("tools --no-plugins", "doctor --json --no-plugins")  # a report, no crash
    done = subprocess.run(
        ["/bin/sh", "-c", doctor], capture_output=True, text=True, env=env(), timeout=60, check=False
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    rows = {(c["section"], c["item"]): c for c in json.loads(done.stdout)["checks"]}
    assert rows["Workspace", "workspace rule"]["status"] == "error"
    assert rows["Workspace", "workspace rule"]["detail"] == f"the current directory no longer exists. {FIX}"


# -- refused: the state directory's folder -----------------------------------------------------------


def test_a_folder_holding_the_state_directory_is_refused(
    project: Path, env: Callable[..., dict[str, str]]
) -> None:
    state = project / ".records"
    done = steerable("call", env=env(STEERABLE_STATE_DIR=str(state)), cwd=project)
    expected = (
        f"the workspace {project} (the current directory) holds steerable's state directory {state}; "
        f"{FORGE}. {FIX}; or move the state directory (STEERABLE_STATE_DIR)"
    )
    assert (done.returncode, done.stderr) == (2, f"steerable call: {expected}\n")
    # --state-dir names it for the commands that take it, and the fix says so
    done = steerable("run", "--state-dir", ".records", env=env(), cwd=project)
    expected = (
        f"the workspace {project} (the current directory) holds steerable's state directory {state}; "
        f"{FORGE}. {FIX}; or move the state directory (--state-dir DIR or STEERABLE_STATE_DIR)"
    )
    assert (done.returncode, done.stderr) == (2, f"steerable run: {expected}\n")


def test_a_folder_inside_the_state_directory_is_refused(
    tmp_path: Path, project: Path, env: Callable[..., dict[str, str]]
) -> None:
    state = tmp_path.resolve() / "state"
    inside = state / "sessions"
    inside.mkdir(parents=True)
    done = steerable("sidecar", "--workspace", str(inside), "--state-dir", str(state), env=env(), cwd=project)
    expected = (
        f"the workspace {inside} (--workspace) is inside steerable's state directory {state}; "
        f"{FORGE}. {FIX}; or move the state directory (--state-dir DIR or STEERABLE_STATE_DIR)"
    )
    assert (done.returncode, done.stderr) == (2, f"steerable sidecar: {expected}\n")


# -- allowed: a project folder, and anything in the container posture ----------------------------


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_opens_a_project_folder(
    command: str, project: Path, env: Callable[..., dict[str, str]]
) -> None:
    done = steerable(command, env=env(), cwd=project)
    assert done.returncode == 0, done.stderr
    if command == "call":
        assert json.loads(done.stdout)["data"]["content"] == "alpha\n"
    if command == "run":
        assert json.loads(done.stdout)["outcome"] == "completed"


@pytest.mark.parametrize("how", ["current directory", "--workspace"])
def test_the_container_posture_runs_in_the_root(
    how: str, project: Path, env: Callable[..., dict[str, str]]
) -> None:
    """Harbor's trials: ``cd WORKDIR && steerable run`` with ``STEERABLE_SANDBOX=container``; ``/`` may be it."""
    container = env(STEERABLE_SANDBOX="container")
    if how == "current directory":
        done = steerable("run", env=container, cwd=Path("/"))
    else:
        done = steerable("run", "--workspace", "/", env=container, cwd=project)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1])["outcome"] == "completed"
    listed = steerable("call", "-w", "/", env=container, cwd=project)
    assert listed.returncode == 1  # no notes.txt in /: the tools ran there
    assert json.loads(listed.stdout)["data"]["code"] == "file_not_found"


# -- doctor reports it; acp refuses it per session -----------------------------------------------


def test_doctor_reports_the_rule_with_the_commands_message(
    home: Path, project: Path, env: Callable[..., dict[str, str]]
) -> None:
    done = run_steerable("doctor", "--json", "--no-plugins", env=env(), cwd=home)
    message = f"the workspace {home} (the current directory) is a home folder; {WHOLE}. {FIX}"
    assert done.returncode == 2
    assert f"steerable: {message}" in done.stderr.splitlines()
    rows = {(c["section"], c["item"]): c for c in json.loads(done.stdout)["checks"]}
    assert rows["Workspace", "workspace rule"] | {"detail": message} == rows["Workspace", "workspace rule"]
    assert rows["Workspace", "workspace rule"]["status"] == "error"
    done = run_steerable("doctor", "--json", "--no-plugins", env=env(), cwd=project)
    rows = {(c["section"], c["item"]): c for c in json.loads(done.stdout)["checks"]}
    assert rows["Workspace", "workspace rule"]["value"] == "allowed"
    done = run_steerable("doctor", "--json", "--no-plugins", env=env(STEERABLE_SANDBOX="container"), cwd=home)
    rows = {(c["section"], c["item"]): c for c in json.loads(done.stdout)["checks"]}
    assert rows["Workspace", "workspace rule"]["detail"] == (
        "STEERABLE_SANDBOX=container: any folder (the container is the boundary)"
    )


def test_acp_refuses_a_session_in_the_root_or_a_home_folder(
    tmp_path: Path, home: Path, project: Path, env: Callable[..., dict[str, str]]
) -> None:
    lines = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}},
        *(
            {"jsonrpc": "2.0", "id": n, "method": "session/new", "params": {"cwd": cwd, "mcpServers": []}}
            for n, cwd in ((1, "/"), (2, str(home)), (3, str(project)))
        ),
    ]
    proc = subprocess.Popen(
        [sys.executable, "-P", "-m", "steerable_sidecar", "acp", "--no-plugins"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env(),
        cwd=home,  # its own folder does not matter: each session names one
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("".join(json.dumps(line) + "\n" for line in lines))
    proc.stdin.flush()
    answers: dict[int, dict[str, Any]] = {}
    while len(answers) < len(lines):
        answer = json.loads(proc.stdout.readline())
        if "id" in answer:
            answers[answer["id"]] = answer
    proc.stdin.close()
    assert proc.wait(timeout=30) == 0
    assert proc.stderr is not None
    proc.stderr.close()
    proc.stdout.close()
    for n, folder, what in ((1, "/", "is the file system's root"), (2, str(home), "is a home folder")):
        assert answers[n]["error"] == {
            "code": -32602,
            "message": "Invalid params",
            "data": {
                "cwd": folder,
                "reason": f"the folder {folder} {what}; {WHOLE}. Open a project folder in the editor instead",
            },
        }
    assert "sessionId" in answers[3]["result"]
