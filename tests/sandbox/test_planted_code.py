"""SAFE-2: planted code, by kind of place. Nothing a command or a file tool leaves runs on the host later.

Each case plants code where a host program runs it later (Mercurial's hooks in a repository made
mid-run, a ``.pth`` in the project's own virtual environment, a cargo build wrapper, a script
``core.fsmonitor`` names, a hooks folder the user's *global* git config names relatively), through
the real ``bash`` tool under each real Linux backend, then runs the real host program (``hg``,
``git``, the environment's ``python``) outside any sandbox, as the user would next, and checks that
the planted code never ran. The file tools refuse the same paths.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

import pytest
from sbx_helpers import LINUX_BACKENDS, older_than_now, real_backend

from steerable_agent_runtime import ToolCall, workspace_tools_for_cwd
from steerable_agent_runtime.sandbox import LandlockBackend, SandboxPolicy, bash_tool
from steerable_agent_runtime.sandbox._protect import coarse_now
from steerable_agent_runtime.workspace._txn import HEARTBEAT_GRACE_NS, HEARTBEAT_S
from waiting import wait_until

HG = shutil.which("hg")
GIT = shutil.which("git")


def host_env(home: Path, **extra: str) -> dict[str, str]:
    return {"PATH": os.environ["PATH"], "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1", **extra}


def git(root: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    assert GIT is not None, "git is not installed (.ci/run installs it)"
    return subprocess.run([GIT, *args], cwd=root, env=env, capture_output=True, text=True, check=False)


def binds_read_only(backend: str) -> bool:
    """bubblewrap binds existing protected entries read-only; Landlock too where it gets a mount namespace."""
    return backend == "bwrap" or LandlockBackend().isolates()


def tool_for(root: Path, backend: str) -> Any:
    real_backend(backend)  # fails naming the fix when the backend cannot run here
    environ = {"STEERABLE_SANDBOX": backend, "PATH": os.environ["PATH"], "HOME": str(root.parent)}
    return bash_tool(root, environ=environ)


def _last_heartbeat(workspace: Path) -> int:
    """When the sandboxed runs' records in ``workspace`` were last marked alive (ns; the record's
    ``ctime`` before its first heartbeat), as recovery reads it; 0 before any record."""
    txn = workspace / ".steerable" / "txn"
    times = [0]
    for entry in txn.glob("*.json*") if txn.is_dir() else ():
        with contextlib.suppress(FileNotFoundError):
            info = entry.stat()
            times.append(info.st_mtime_ns if entry.name.endswith(".alive") else info.st_ctime_ns)
    return max(times)


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    """Where planted code would leave its mark: outside the workspace, written only by the host."""
    return tmp_path / f"pwned-{uuid.uuid4().hex[:8]}"


@pytest.mark.parametrize("backend", LINUX_BACKENDS)
async def test_hg_hooks_in_a_repository_made_mid_run_never_run_safe_2(
    backend: str, workspace: Path, marker: Path, tmp_path: Path
) -> None:
    # SAFE-2: version-control metadata of any tool, made during the call; `hg status` then runs
    # on the host (the user's shell prompt does it for them)
    assert HG is not None, "Mercurial is not installed (.ci/run installs it)"
    (workspace / "sub").mkdir()
    # a repository copied in (as root under Landlock `hg init` itself cannot chmod its files); the
    # template lies outside /tmp, which bubblewrap hides
    template = Path(tempfile.mkdtemp(prefix="steerable-hg-", dir="/var/tmp"))
    subprocess.run([HG, "init", str(template / "repo")], env=host_env(tmp_path), check=True)
    tool = tool_for(workspace, backend)
    try:
        result = await tool.handler(
            command=f"cp -r {template}/repo/.hg sub/.hg && "
            f"printf '[hooks]\\npre-status = touch {marker}\\n' >> sub/.hg/hgrc; echo done"
        )
    finally:
        shutil.rmtree(template, ignore_errors=True)
    assert result.data is not None and result.data["code"] == "protected_reverted", result.error
    # what makes Mercurial run or read code (hgrc, and requires with sharedpath) goes; the store stays
    assert result.data["protectedReverted"] == ["sub/.hg/hgrc", "sub/.hg/requires"]
    subprocess.run(
        [HG, "status"], cwd=workspace / "sub", env=host_env(tmp_path), capture_output=True, check=False
    )
    assert not marker.exists() and (workspace / "sub" / ".hg" / "store").is_dir()


@pytest.mark.parametrize("backend", LINUX_BACKENDS)
async def test_an_existing_hg_repository_keeps_its_hgrc_safe_2(
    backend: str, workspace: Path, marker: Path, tmp_path: Path
) -> None:
    assert HG is not None, "Mercurial is not installed (.ci/run installs it)"
    subprocess.run([HG, "init", "nested/repo"], cwd=workspace, env=host_env(tmp_path), check=True)
    hgrc = workspace / "nested" / "repo" / ".hg" / "hgrc"
    before = hgrc.read_bytes() if hgrc.exists() else None
    tool = tool_for(workspace, backend)
    result = await tool.handler(
        command=f"printf '[hooks]\\npre-status = touch {marker}\\n' >> nested/repo/.hg/hgrc; echo done"
    )
    assert (hgrc.read_bytes() if hgrc.exists() else None) == before
    if binds_read_only(backend) and before is not None:  # an existing file is bound read-only
        assert result.data is not None and "Read-only file system" in result.data["stderr"]
    subprocess.run([HG, "status"], cwd=workspace / "nested" / "repo", env=host_env(tmp_path), check=True)
    assert not marker.exists()


@pytest.fixture
def venv(workspace: Path) -> Path:
    """The project's own virtual environment, made by the host (``python -m venv``)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(workspace / ".venv")], check=True)
    return workspace / ".venv"


def site_packages(venv: Path) -> Path:
    found = sorted(venv.glob("lib/python*/site-packages"))
    assert found, f"no site-packages in {venv}"
    return found[0]


@pytest.mark.parametrize("backend", LINUX_BACKENDS)
async def test_a_pth_planted_in_the_project_venv_never_runs_safe_2(
    backend: str, workspace: Path, venv: Path, marker: Path
) -> None:
    # SAFE-2: interpreter environments inside the workspace; the environment's next python runs
    # every .pth in site-packages before anything else
    pth = site_packages(venv).relative_to(workspace) / "zz_planted.pth"
    tool = tool_for(workspace, backend)
    result = await tool.handler(
        command=f'echo \'import os; open("{marker}", "w").close()\' > {pth}; '
        ".venv/bin/python -c 'print(\"venv-usable\")'; echo done"
    )
    assert result.data is not None and "venv-usable" in result.data["stdout"]  # it still runs, read-only
    assert not (workspace / pth).exists()
    if binds_read_only(backend):
        assert "Read-only file system" in result.data["stderr"]
    else:
        assert result.data["code"] == "protected_reverted" and result.data["protectedReverted"] == [str(pth)]
        assert "rule <interpreter environment>" in (result.error or "")
    subprocess.run([str(venv / "bin" / "python"), "-c", "pass"], check=True)
    assert not marker.exists()


@pytest.mark.parametrize("backend", LINUX_BACKENDS)
async def test_tool_configurations_that_run_commands_are_put_back_safe_2(
    backend: str, workspace: Path
) -> None:
    # SAFE-2: the table of tool configurations (cargo build wrappers, package-manager rc files,
    # git-hook managers, editors' exrc, agents' folders)
    planted = [
        ".cargo/config.toml",
        ".npmrc",
        "lefthook.yml",
        "bunfig.toml",
        ".nvim.lua",
        ".kiro/hooks/x.json",
    ]
    script = "; ".join(f"mkdir -p $(dirname {p}) && echo '[build]' > {p}" for p in planted)
    tool = tool_for(workspace, backend)
    result = await tool.handler(command=f"{script}; echo done")
    assert result.data is not None and result.data["code"] == "protected_reverted", result.error
    assert sorted(result.data["protectedReverted"]) == sorted(
        [".cargo/config.toml", ".npmrc", "lefthook.yml", "bunfig.toml", ".nvim.lua", ".kiro"]
    )
    assert not any((workspace / p).exists() for p in planted)


@pytest.fixture
def fsmonitor_repo(workspace: Path, tmp_path: Path) -> Path:
    """A repository whose own config (the user's) runs ``./mon.sh`` on every ``git status``."""
    env = host_env(tmp_path)
    assert git(workspace, "init", "-q", ".", env=env).returncode == 0
    (workspace / "mon.sh").write_text("#!/bin/sh\nexit 0\n")
    (workspace / "mon.sh").chmod(0o755)
    assert git(workspace, "config", "core.fsmonitor", "./mon.sh", env=env).returncode == 0
    return workspace


@pytest.mark.parametrize("backend", LINUX_BACKENDS)
async def test_a_script_the_git_config_runs_is_protected_safe_2(
    backend: str, fsmonitor_repo: Path, marker: Path, tmp_path: Path
) -> None:
    # SAFE-2: what an existing git configuration names is code too (core.fsmonitor = ./mon.sh)
    tool = tool_for(fsmonitor_repo, backend)
    result = await tool.handler(command=f"echo 'touch {marker}' >> mon.sh; echo done")
    assert (fsmonitor_repo / "mon.sh").read_text() == "#!/bin/sh\nexit 0\n"
    assert result.data is not None
    if binds_read_only(backend):
        assert "Read-only file system" in result.data["stderr"]
    else:
        assert result.data["protectedReverted"] == ["mon.sh"]
        assert "rule <named by git configuration>" in (result.error or "")
    git(fsmonitor_repo, "status", env=host_env(tmp_path))
    assert not marker.exists()
    # the file tools refuse it too
    router = workspace_tools_for_cwd(fsmonitor_repo, bash=False, web_tools=False)
    refused = await router.dispatch(
        ToolCall(id="w", name="write_file", arguments={"path": "mon.sh", "content": f"touch {marker}\n"})
    )
    assert refused.data is not None and refused.data["code"] == "protected_path"
    assert refused.data["rule"] == "<named by git configuration>"


async def test_a_relative_hooks_path_in_the_global_git_config_is_protected_safe_2(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # SAFE-2: core.hooksPath = .githooks in the user's global config makes every repository's
    # .githooks/ its hooks folder; the workspace repository's own config says nothing of it
    global_config = tmp_path / "global.gitconfig"
    global_config.write_text("[core]\n\thooksPath = .githooks\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(global_config))
    assert git(workspace, "init", "-q", ".", env=host_env(tmp_path)).returncode == 0
    router = workspace_tools_for_cwd(workspace, bash=False, web_tools=False)
    refused = await router.dispatch(
        ToolCall(
            id="w", name="write_file", arguments={"path": ".githooks/pre-commit", "content": "#!/bin/sh\n"}
        )
    )
    assert refused.data is not None and refused.data["code"] == "protected_path"
    assert refused.error is not None and refused.error.startswith(
        ".githooks/pre-commit is a protected path: <core.hooksPath> (the repository's git configuration names "
        "it as its hooks directory: git runs them)."
    )


@pytest.mark.parametrize(
    ("path", "rule"),
    [
        ("a/b/c/d/.git/config", ".git/**"),
        ("deep/er/.hg/hgrc", ".hg/**"),
        (".jj/repo/config.toml", ".jj/**"),
        (".cargo/config.toml", ".cargo/config.toml"),
        ("tools/lefthook.yml", "lefthook.yml"),
        (".yarnrc.yml", ".yarnrc.yml"),
        (".pdbrc", ".pdbrc"),
        ("web/lint-staged.config.js", "lint-staged.config.js"),
        (".mise/config.toml", ".mise/**"),
        ("opencode.json", "opencode.json"),
        (".venv/lib/python3.11/site-packages/zz.pth", "<interpreter environment>"),
        (".venv/bin/activate", "<interpreter environment>"),
        ("team.gitconfig", "<named by git configuration>"),
    ],
)
async def test_the_file_tools_refuse_every_kind_safe_2(
    path: str, rule: str, workspace: Path, venv: Path, tmp_path: Path
) -> None:
    # SAFE-2: the same kinds of places, refused by write_file (before anything is written)
    assert git(workspace, "init", "-q", ".", env=host_env(tmp_path)).returncode == 0
    with open(workspace / ".git" / "config", "a") as config:
        config.write("[include]\n\tpath = ../team.gitconfig\n")
    router = workspace_tools_for_cwd(workspace, bash=False, web_tools=False)
    result = await router.dispatch(
        ToolCall(id="w", name="write_file", arguments={"path": path, "content": "x\n"})
    )
    assert result.success is False and result.needs_followup is True
    assert result.data is not None and result.data["code"] == "protected_path" and result.data["rule"] == rule
    assert not (workspace / path).exists() or path == ".venv/bin/activate"
    assert json.dumps(result.to_wire())  # serialisable as the model gets it


@pytest.mark.parametrize("backend", LINUX_BACKENDS)
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGKILL])
def test_a_repository_planted_in_a_call_ends_with_steerable_whatever_kills_it_safe_2(
    backend: str, signum: int, workspace: Path, marker: Path, tmp_path: Path
) -> None:
    # SAFE-2: steerable is ended while a command that planted a nested repository's fsmonitor still
    # runs. SIGTERM and SIGHUP cancel the call (its sandbox killed, the plant removed) before the
    # process exits 128+n; after SIGKILL the next steerable process to open the workspace removes it
    env = host_env(tmp_path)
    assert git(workspace, "init", "-q", ".", env=env).returncode == 0
    child_env = {**os.environ, "STEERABLE_SANDBOX": backend, "HOME": str(tmp_path)}
    child_env = {
        k: v for k, v in child_env.items() if not k.startswith("STEERABLE_") or k == "STEERABLE_SANDBOX"
    }
    # the nested repository is copied in (as root under Landlock `git init` itself cannot chmod);
    # its template lies outside /tmp, which bubblewrap hides
    template = Path(tempfile.mkdtemp(prefix="steerable-git-", dir="/var/tmp"))
    assert git(template, "init", "-q", "repo", env=env).returncode == 0
    command = (
        f"cp -r {template}/repo/.git sub && printf '[core]\\n\\tfsmonitor = touch {marker}\\n' >> sub/.git/config; "
        f"printf '[core]\\n\\tfsmonitor = touch {marker}\\n' >> .git/config; echo planted; sleep 60"
    )
    (workspace / "sub").mkdir()
    line = json.dumps({"id": "1", "name": "bash", "arguments": {"command": command}})
    with subprocess.Popen(
        [sys.executable, "-P", "-m", "steerable_sidecar", "session", "-w", str(workspace), "--no-plugins"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=child_env,
    ) as session:
        try:
            assert session.stdin is not None
            session.stdin.write(line.encode() + b"\n")
            session.stdin.flush()
            planted = workspace / "sub" / ".git" / "config"
            wait_until(
                lambda: planted.exists() and "fsmonitor" in planted.read_text(), what="the command planted"
            )
            if signum == signal.SIGKILL:  # a few heartbeats after the plant: recovery still removes it
                planted_at = planted.stat().st_ctime_ns
                wait_until(
                    lambda: _last_heartbeat(workspace) >= planted_at + 2 * int(HEARTBEAT_S * 1e9),
                    what="two heartbeats of the run after the plant",
                )
            session.send_signal(signum)
            status = session.wait(timeout=30)
        finally:
            if session.poll() is None:
                session.kill()
            shutil.rmtree(template, ignore_errors=True)
    assert status == (128 + signum if signum != signal.SIGKILL else -signal.SIGKILL)
    if signum == signal.SIGKILL:  # nothing could run in the killed process: the next start cleans up
        # what the user makes after the crash (past the run's last heartbeat and its grace) is theirs
        theirs_from = _last_heartbeat(workspace) + HEARTBEAT_GRACE_NS
        wait_until(lambda: coarse_now() > theirs_from, what="the clock past the last heartbeat and its grace")
        (workspace / ".vscode").mkdir()
        (workspace / ".vscode" / "settings.json").write_text("{}\n")
        (workspace / ".mcp.json").write_text("{}\n")
        opened = subprocess.run(
            [sys.executable, "-P", "-m", "steerable_sidecar", "call", "list_dir", "{}", "-w", str(workspace)],
            env=child_env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert opened.returncode == 0, opened.stderr
    assert not planted.exists() or "fsmonitor" not in planted.read_text()
    assert "fsmonitor" not in (workspace / ".git" / "config").read_text()
    if signum == signal.SIGKILL:
        assert (workspace / ".vscode" / "settings.json").read_text() == "{}\n"
        assert (workspace / ".mcp.json").read_text() == "{}\n"
    git(workspace / "sub", "status", env=env)
    git(workspace, "status", env=env)
    assert not marker.exists()


@pytest.mark.parametrize("backend", LINUX_BACKENDS)
async def test_renaming_a_folder_keeps_the_protected_entries_inside_it_safe_2(
    backend: str, workspace: Path, tmp_path: Path
) -> None:
    # SAFE-2 without data loss: `mv libs/foo libs/bar` takes the user's nested repository and
    # editor settings along; they are the user's, not planted, and stay whole where they went
    env = host_env(tmp_path)
    repo = workspace / "libs" / "foo"
    repo.mkdir(parents=True)
    assert git(repo, "init", "-q", ".", env=env).returncode == 0
    assert git(repo, "remote", "add", "origin", "https://example.invalid/foo.git", env=env).returncode == 0
    (workspace / "packages" / "app" / ".vscode").mkdir(parents=True)
    (workspace / "packages" / "app" / ".vscode" / "settings.json").write_text('{"editor.tabSize": 2}\n')
    config = (repo / ".git" / "config").read_text()
    tool = tool_for(workspace, backend)
    result = await tool.handler(command="mv libs/foo libs/bar && mv packages/app packages/app2; echo done")
    assert result.data is not None and "done" in result.data["stdout"], result.error
    assert result.data.get("protectedReverted", []) == []
    assert (workspace / "libs" / "bar" / ".git" / "config").read_text() == config
    assert (workspace / "libs" / "bar" / ".git" / "hooks").is_dir()
    settings = workspace / "packages" / "app2" / ".vscode" / "settings.json"
    assert settings.read_text() == '{"editor.tabSize": 2}\n'
    remote = git(workspace / "libs" / "bar", "remote", "get-url", "origin", env=env)
    assert remote.stdout.strip() == "https://example.invalid/foo.git"


def test_landlock_binds_steerables_own_package_read_only_when_the_workspace_holds_it_safe_2(
    tmp_path: Path,
) -> None:
    # SAFE-2: an editable install of steerable inside the workspace runs at steerable's next start;
    # Landlock with a namespace binds it read-only as bubblewrap does (the attack review's break 9)
    from steerable_agent_runtime._protected import runtime_roots

    if not LandlockBackend().isolates():  # pragma: no cover - root or user namespaces here
        pytest.skip("no namespace can be made here")
    package_root = runtime_roots()[-1]  # the directory holding steerable_agent_runtime
    workspace = Path(package_root).parent
    plan = LandlockBackend().plan(
        ["true"], SandboxPolicy(writable_roots=(workspace,), read_only=()), private_tmp=tmp_path
    )
    options = list(plan.launcher_options)
    binds = [options[i + 1] for i, option in enumerate(options) if option == "--ro-bind"]
    assert os.path.realpath(package_root) in binds


@pytest.mark.parametrize("backend", LINUX_BACKENDS)
async def test_an_hg_share_pointing_at_an_ordinary_folder_never_runs_its_hooks_safe_2(
    backend: str, workspace: Path, marker: Path, tmp_path: Path
) -> None:
    # SAFE-2: .hg/sharedpath makes Mercurial read another folder's hgrc, as git's commondir does
    # (the attack review's break 11)
    assert HG is not None, "Mercurial is not installed (.ci/run installs it)"
    script = (
        f"mkdir -p sub/.hg store/store && printf 'share-safe\\nshared\\n' > sub/.hg/requires && "
        f"printf '%s' {workspace}/store > sub/.hg/sharedpath && printf 'share-safe\\n' > store/requires && "
        "printf 'dotencode\\nfncache\\ngeneraldelta\\nrevlogv1\\nsparserevlog\\nstore\\n' > store/store/requires && "
        f"printf '[hooks]\\npre-status = touch {marker}\\n' > store/hgrc; echo done"
    )
    tool = tool_for(workspace, backend)
    result = await tool.handler(command=script)
    # the planted .hg holds no data of its own: it goes whole
    assert result.data is not None and result.data.get("protectedReverted") == ["sub/.hg"], result.error
    assert not (workspace / "sub" / ".hg").exists()
    subprocess.run(
        [HG, "status"], cwd=workspace / "sub", env=host_env(tmp_path), capture_output=True, check=False
    )
    assert not marker.exists()


@pytest.mark.parametrize("backend", LINUX_BACKENDS)
async def test_a_git_directory_under_an_ordinary_name_is_no_way_in_safe_2(
    backend: str, workspace: Path, marker: Path, tmp_path: Path
) -> None:
    # SAFE-2: git takes any folder holding HEAD, objects/ and refs/ for a repository (the attack
    # review's break 1): planted in src/ with core.worktree = . it serves every git command below
    env = host_env(tmp_path)
    assert git(workspace, "init", "-q", ".", env=env).returncode == 0
    (workspace / "src" / "pkg").mkdir(parents=True)
    plant = (
        "cd src && mkdir -p objects refs/heads && echo 'ref: refs/heads/main' > HEAD && "
        "printf '[core]\\\\n\\\\trepositoryformatversion = 0\\\\n\\\\tbare = false\\\\n\\\\tworktree = .\\\\n"
        f"\\\\tfsmonitor = touch {marker}; false\\\\n' > config; echo done"
    )
    tool = tool_for(workspace, backend)
    result = await tool.handler(command=plant)
    # its HEAD goes, so git takes src/ for an ordinary folder again; nothing else of it is touched
    assert result.data is not None and result.data.get("protectedReverted") == ["src/HEAD"], result.error
    assert "rule <git directory>" in (result.error or "")
    git(workspace / "src" / "pkg", "status", env=env)
    assert not marker.exists()
    assert not (workspace / "src" / "HEAD").exists() and (workspace / "src" / "pkg").is_dir()
    assert (workspace / "src" / "config").is_file()
    # the file tools refuse the piece that makes the folder a repository
    router = workspace_tools_for_cwd(workspace, bash=False, web_tools=False)
    for path in ("lib/objects/keep", "lib/refs/heads/main"):
        made = await router.dispatch(
            ToolCall(id=path, name="write_file", arguments={"path": path, "content": ""})
        )
        assert made.success, made.error
    refused = await router.dispatch(
        ToolCall(
            id="h", name="write_file", arguments={"path": "lib/HEAD", "content": "ref: refs/heads/main\\n"}
        )
    )
    assert refused.data is not None and refused.data["code"] == "protected_path"
    assert refused.data["rule"] == "<git directory>"


@pytest.mark.parametrize("backend", LINUX_BACKENDS)
async def test_a_users_own_head_file_is_no_way_in_either_safe_2(
    backend: str, workspace: Path, marker: Path, tmp_path: Path
) -> None:
    # SAFE-2: src/ already held a file of the user's named HEAD; the command adds objects/ and refs/
    # (the second attack round's open item): what the command made goes, the user's HEAD stays
    env = host_env(tmp_path)
    assert git(workspace, "init", "-q", ".", env=env).returncode == 0
    (workspace / "src" / "pkg").mkdir(parents=True)
    (workspace / "src" / "HEAD").write_text("ref: refs/heads/main\n")
    (workspace / "src" / "refs").mkdir()
    (workspace / "src" / "refs" / "notes.txt").write_text("the user's\n")
    older_than_now(workspace)  # the user's files are older than the run (a clock tick or more)
    plant = (
        "cd src && mkdir -p objects/ab refs/heads && touch objects/ab/cd && "
        "printf '[core]\\n\\trepositoryformatversion = 0\\n\\tbare = false\\n\\tworktree = .\\n"
        f"\\tfsmonitor = touch {marker}; false\\n' > config; echo done"
    )
    result = await tool_for(workspace, backend).handler(command=plant)
    # refs/ holds an entry of the user's, so it stays; objects/ is all the command's, so it goes
    assert result.data is not None and result.data.get("protectedReverted") == ["src/objects"], result.error
    assert (workspace / "src" / "HEAD").read_text() == "ref: refs/heads/main\n"
    assert (workspace / "src" / "refs" / "notes.txt").is_file()
    git(workspace / "src" / "pkg", "status", env=env)
    assert not marker.exists()


@pytest.mark.parametrize("backend", LINUX_BACKENDS)
async def test_a_git_directory_assembled_over_two_calls_is_no_way_in_safe_2(
    backend: str, workspace: Path, marker: Path, tmp_path: Path
) -> None:
    # SAFE-2 (third attack round, break 1): call 1 writes HEAD and config in an ordinary folder (no git
    # directory yet), call 2 renames two old folders in as objects/ and refs/; the marker moved last
    # is moved aside, and nothing is deleted
    env = host_env(tmp_path)
    tool = tool_for(workspace, backend)
    first = await tool.handler(
        command="mkdir -p stage x y && printf 'ref: refs/heads/main\\n' > stage/HEAD && printf '[core]\\n"
        "\\trepositoryformatversion = 0\\n\\tbare = false\\n\\tworktree = ..\\n"
        f"\\tfsmonitor = touch {marker}; false\\n' > stage/config && echo k > x/keep && echo k > y/keep"
    )
    assert first.success, first.error
    older_than_now(workspace)  # what the first call left is older than the second
    second = await tool.handler(command="mv x stage/objects && mv y stage/refs; echo done")
    assert second.data is not None and second.data.get("protectedReverted") == ["stage/refs"], second.error
    moved = [p.name for p in (workspace / "stage").iterdir() if p.name.startswith("refs.steerable-moved-")]
    assert len(moved) == 1 and (workspace / "stage" / moved[0] / "keep").read_text() == "k\n"
    git(workspace / "stage", "status", env=env)
    assert not marker.exists()


@pytest.mark.parametrize("backend", LINUX_BACKENDS)
async def test_the_users_own_objects_at_the_root_are_never_deleted_safe_2(
    backend: str, workspace: Path, tmp_path: Path
) -> None:
    # SAFE-2 (third attack round, break 2): the workspace root holds the user's objects/ and refs/; a
    # command adds a file to objects/ and writes HEAD: only the HEAD it wrote goes
    for name in ("objects", "refs"):
        (workspace / name).mkdir()
        (workspace / name / "mine.txt").write_text("the user's\n")
    older_than_now(workspace)  # the user's files are older than the run
    result = await tool_for(workspace, backend).handler(
        command="echo built > objects/new.obj; echo 'ref: refs/heads/main' > HEAD; echo done"
    )
    assert result.data is not None and result.data.get("protectedReverted") == ["HEAD"], result.error
    assert (workspace / "objects" / "mine.txt").read_text() == "the user's\n"
    assert (workspace / "objects" / "new.obj").read_text() == "built\n"
    assert (workspace / "refs" / "mine.txt").is_file() and not (workspace / "HEAD").exists()


async def test_a_worktree_workspace_follows_its_repositorys_config_safe_2(tmp_path: Path) -> None:
    # SAFE-2: a linked worktree's .git is a file; the hooks folder the main repository's config names
    # is protected there too (the attack review's break 2a)
    env = host_env(tmp_path)
    main = tmp_path / "main"
    main.mkdir()
    assert git(main, "init", "-q", ".", env=env).returncode == 0
    assert git(main, "config", "core.hooksPath", ".githooks", env=env).returncode == 0
    (main / "README").write_text("x\n")
    assert git(main, "add", "README", env=env).returncode == 0
    committed = git(main, "-c", "user.name=u", "-c", "user.email=u@e", "commit", "-qm", "init", env=env)
    assert committed.returncode == 0, committed.stderr
    worktree = tmp_path / "feature"
    assert git(main, "worktree", "add", "-q", str(worktree), env=env).returncode == 0
    router = workspace_tools_for_cwd(worktree, bash=False, web_tools=False)
    refused = await router.dispatch(
        ToolCall(
            id="w", name="write_file", arguments={"path": ".githooks/pre-commit", "content": "#!/bin/sh\n"}
        )
    )
    assert refused.data is not None and refused.data["code"] == "protected_path", refused.error
    assert refused.data["rule"] == "<core.hooksPath>"


@pytest.mark.parametrize("backend", LINUX_BACKENDS)
async def test_a_hooks_path_through_a_link_protects_the_real_folder_safe_2(
    backend: str, workspace: Path, marker: Path, tmp_path: Path
) -> None:
    # SAFE-2: core.hooksPath = tools/hooks where tools -> shared: git runs shared/hooks/* (break 2b)
    env = host_env(tmp_path)
    assert git(workspace, "init", "-q", ".", env=env).returncode == 0
    (workspace / "shared" / "hooks").mkdir(parents=True)
    hook = workspace / "shared" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\nexit 0\n")
    (workspace / "tools").symlink_to("shared")
    assert git(workspace, "config", "core.hooksPath", "tools/hooks", env=env).returncode == 0
    tool = tool_for(workspace, backend)
    await tool.handler(command=f"echo 'touch {marker}' >> shared/hooks/pre-commit; echo done")
    assert hook.read_text() == "#!/bin/sh\nexit 0\n"
    router = workspace_tools_for_cwd(workspace, bash=False, web_tools=False)
    refused = await router.dispatch(
        ToolCall(id="w", name="write_file", arguments={"path": "shared/hooks/post-merge", "content": "x\n"})
    )
    assert refused.data is not None and refused.data["code"] == "protected_path", refused.error


@pytest.mark.parametrize("backend", LINUX_BACKENDS)
async def test_padding_the_workspace_past_the_scan_cap_hides_nothing_safe_2(
    backend: str, workspace: Path, venv: Path, marker: Path, tmp_path: Path
) -> None:
    # SAFE-2: one call makes 600 folders, so the next call's scan (512 folders, breadth first) would
    # not reach libs/foo/.git nor the project's .venv (the attack review's break 3)
    env = host_env(tmp_path)
    repo = workspace / "libs" / "foo"
    repo.mkdir(parents=True)
    assert git(repo, "init", "-q", ".", env=env).returncode == 0
    config = (repo / ".git" / "config").read_text()
    tool = tool_for(workspace, backend)
    padded = await tool.handler(command="for i in $(seq 1 600); do mkdir d$i; done; echo done")
    assert padded.data is not None and "done" in padded.data["stdout"], padded.error
    pth = site_packages(venv).relative_to(workspace) / "zz_planted.pth"
    await tool.handler(
        command=f"printf '[core]\\\\n\\\\tfsmonitor = touch {marker}\\\\n' >> libs/foo/.git/config; "
        f'echo \'import os; open("{marker}", "w").close()\' > {pth}; echo done'
    )
    assert (repo / ".git" / "config").read_text() == config
    assert not (workspace / pth).exists()
    git(repo, "status", env=env)
    subprocess.run([str(venv / "bin" / "python"), "-c", "pass"], check=True)
    assert not marker.exists()


_SECOND_PROCESS = """
import asyncio, json, sys
from pathlib import Path
from steerable_agent_runtime.sandbox import bash_tool
root, command, environ = Path(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])
result = asyncio.run(bash_tool(root, environ=environ).handler(command=command))
print(json.dumps({"error": result.error, "reverted": (result.data or {}).get("protectedReverted")}))
"""


@pytest.mark.parametrize("backend", LINUX_BACKENDS)
async def test_a_new_process_guards_the_repositories_an_earlier_one_found_safe_2(
    backend: str, workspace: Path, marker: Path, tmp_path: Path
) -> None:
    # SAFE-2: one steerable process pads the workspace past the scan cap; a second steerable process
    # (a real one) never reaches libs/foo/.git by scanning, yet guards it: the first one kept what it
    # found in the state folder (the second attack round's open item)
    env = host_env(tmp_path)
    repo = workspace / "libs" / "foo"
    repo.mkdir(parents=True)
    assert git(repo, "init", "-q", ".", env=env).returncode == 0
    config = (repo / ".git" / "config").read_text()
    environ = {"STEERABLE_SANDBOX": backend, "PATH": os.environ["PATH"], "HOME": str(tmp_path)}
    real_backend(backend)
    padded = await bash_tool(workspace, environ=environ).handler(
        command="for i in $(seq 1 600); do mkdir d$i; done; echo done"
    )
    assert padded.data is not None and "done" in padded.data["stdout"], padded.error
    stores = list((tmp_path / ".local" / "state" / "steerable" / "protected").iterdir())
    assert len(stores) == 1 and "libs/foo/.git" in stores[0].read_text()
    plant = f"printf '[core]\\n\\tfsmonitor = touch {marker}\\n' >> libs/foo/.git/config; echo done"

    def second_process(home: Path) -> dict[str, Any]:
        run = subprocess.run(
            [
                sys.executable,
                "-P",
                "-c",
                _SECOND_PROCESS,
                str(workspace),
                plant,
                json.dumps({**environ, "HOME": str(home)}),
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        return dict(json.loads(run.stdout.splitlines()[-1]))

    second_process(tmp_path)
    assert (repo / ".git" / "config").read_text() == config
    git(repo, "status", env=env)
    assert not marker.exists()
    # the same process with no record of the first (another state folder) does not reach it: the
    # padding is what hides the repository from a scan, and the record is what finds it
    fresh_home = tmp_path / "fresh-home"
    fresh_home.mkdir()
    second_process(fresh_home)
    assert (repo / ".git" / "config").read_text() != config


@pytest.mark.parametrize("backend", LINUX_BACKENDS)
async def test_an_environment_three_levels_down_a_dotted_folder_is_found_safe_2(
    backend: str, workspace: Path, marker: Path
) -> None:
    # SAFE-2: pixi keeps its conda environments in .pixi/envs/<name> (the attack review's break 10)
    env_dir = workspace / ".pixi" / "envs" / "default"
    (env_dir / "conda-meta").mkdir(parents=True)
    site = env_dir / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    tool = tool_for(workspace, backend)
    result = await tool.handler(command=f"echo 'import os' > {site.relative_to(workspace)}/zz.pth; echo done")
    assert not (site / "zz.pth").exists(), result.error


@pytest.mark.parametrize("backend", LINUX_BACKENDS)
@pytest.mark.parametrize(
    "shape",
    [
        "ln -s refs/heads/main HEAD",  # HEAD as a link
        "echo 'ref: refs/heads/main' > HEAD && rmdir objects && ln -s refs objects",  # objects as a link
        "echo 'ref: refs/heads/main' > HEAD && rmdir objects && cp /bin/true objects",  # objects a file
    ],
)
async def test_a_git_directory_in_any_form_git_accepts_is_found_safe_2(
    backend: str, shape: str, workspace: Path, marker: Path, tmp_path: Path
) -> None:
    # SAFE-2: git takes HEAD as a link, objects/ and refs/ as links or files (the second attack round)
    env = host_env(tmp_path)
    assert git(workspace, "init", "-q", ".", env=env).returncode == 0
    plant = (
        f"cd lib && mkdir -p objects refs/heads && {shape} && "
        "printf '[core]\\\\n\\\\trepositoryformatversion = 0\\\\n\\\\tbare = false\\\\n\\\\tworktree = .\\\\n"
        f"\\\\tfsmonitor = touch {marker}; false\\\\n' > config; echo done"
    )
    (workspace / "lib" / "src").mkdir(parents=True)
    tool = tool_for(workspace, backend)
    result = await tool.handler(command=plant)
    assert result.data is not None and "lib/HEAD" in result.data.get("protectedReverted", []), result.error
    git(workspace / "lib" / "src", "status", env=env)
    assert not marker.exists()


@pytest.mark.parametrize("backend", LINUX_BACKENDS)
async def test_a_git_directory_split_by_commondir_is_found_safe_2(
    backend: str, workspace: Path, marker: Path, tmp_path: Path
) -> None:
    # SAFE-2: HEAD and commondir in lib/, objects/, refs/ and the config in common/
    env = host_env(tmp_path)
    assert git(workspace, "init", "-q", ".", env=env).returncode == 0
    (workspace / "lib" / "src").mkdir(parents=True)
    plant = (
        "mkdir -p common/objects common/refs/heads && echo 'ref: refs/heads/main' > lib/HEAD && "
        "echo ../common > lib/commondir && printf '[core]\\\\n\\\\trepositoryformatversion = 0\\\\n"
        f"\\\\tbare = false\\\\n\\\\tworktree = ../lib\\\\n\\\\tfsmonitor = touch {marker}; false\\\\n' > common/config; "
        "echo done"
    )
    tool = tool_for(workspace, backend)
    result = await tool.handler(command=plant)
    assert result.data is not None and "lib/HEAD" in result.data.get("protectedReverted", []), result.error
    git(workspace / "lib" / "src", "status", env=env)
    assert not marker.exists()


async def test_the_file_tools_refuse_making_the_workspace_root_a_git_directory_safe_2(
    tmp_path: Path,
) -> None:
    # SAFE-2: a workspace without a .git of its own (a package of a monorepo): writing HEAD beside
    # objects/ and refs/ at its root would make git take it for a repository (the second round's 1)
    workspace = tmp_path / "pkg"
    workspace.mkdir()
    router = workspace_tools_for_cwd(workspace, bash=False, web_tools=False)
    for path in ("objects/info/keep", "refs/heads/keep", "config"):
        made = await router.dispatch(
            ToolCall(id=path, name="write_file", arguments={"path": path, "content": ""})
        )
        assert made.success, made.error
    refused = await router.dispatch(
        ToolCall(id="h", name="write_file", arguments={"path": "HEAD", "content": "ref: refs/heads/main\n"})
    )
    assert refused.data is not None and refused.data["code"] == "protected_path"
    assert refused.data["rule"] == "<git directory>"
    assert not (workspace / "HEAD").exists()


@pytest.mark.parametrize("backend", LINUX_BACKENDS)
@pytest.mark.parametrize("where", ["evil", "a/b/c/d/e"])
async def test_a_repository_made_past_the_scans_reach_in_the_same_call_goes_safe_2(
    backend: str, where: str, workspace: Path, marker: Path, tmp_path: Path
) -> None:
    # SAFE-2: 600 dotted folders push every plain one past the scan's cap, or the repository sits
    # five levels down; what the command made is found in the folders it changed (second round's 2)
    env = host_env(tmp_path)
    plant = (
        f"mkdir .p{{1..600}}; mkdir -p {where}/.git/objects {where}/.git/refs/heads && "
        f"echo 'ref: refs/heads/main' > {where}/.git/HEAD && printf '[core]\\\\n\\\\trepositoryformatversion = 0\\\\n"
        f"\\\\tfsmonitor = touch {marker}; false\\\\n' > {where}/.git/config; echo done"
    )
    tool = tool_for(workspace, backend)
    result = await tool.handler(command=plant)
    assert result.data is not None and "done" in result.data["stdout"]
    reverted = result.data.get("protectedReverted", [])
    assert any(path.startswith(f"{where}/.git") for path in reverted), result.error
    git(workspace / where, "status", env=env)
    assert not marker.exists()
    assert not (workspace / where / ".git" / "config").exists()


@pytest.mark.parametrize(
    ("global_config", "path"),
    [
        ("[core]\n\thooksPath = ~/dotfiles/hooks\n", "hooks/pre-commit"),  # ~ in the global hooks path
        (None, "gitconfig"),  # ~/.gitconfig is a link to the workspace's gitconfig (a dotfiles repo)
    ],
)
async def test_a_dotfiles_workspace_keeps_what_the_global_git_config_runs_safe_2(
    global_config: str | None, path: str, tmp_path: Path
) -> None:
    # SAFE-2: a workspace without .git that the user's global git configuration reaches into (the
    # second attack round's break 4): its hooks folder, or the global config file itself
    home = tmp_path / "home"
    dotfiles = home / "dotfiles"
    dotfiles.mkdir(parents=True)
    (dotfiles / "gitconfig").write_text(global_config or "[user]\n\tname = me\n")
    (home / ".gitconfig").symlink_to(dotfiles / "gitconfig")
    environ = {"HOME": str(home), "PATH": os.environ["PATH"]}
    router = workspace_tools_for_cwd(dotfiles, bash=False, web_tools=False, environ=environ)
    with pytest.MonkeyPatch.context() as patch:  # the file tools read the process's own git config
        patch.setenv("HOME", str(home))
        patch.delenv("GIT_CONFIG_GLOBAL", raising=False)
        patch.delenv("XDG_CONFIG_HOME", raising=False)
        refused = await router.dispatch(
            ToolCall(
                id="w", name="write_file", arguments={"path": path, "content": "[core]\n\tfsmonitor = x\n"}
            )
        )
    assert refused.data is not None and refused.data["code"] == "protected_path", refused.error
