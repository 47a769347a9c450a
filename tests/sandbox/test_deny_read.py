"""SAFE-3: secrets stay unread. A sandboxed command reads everything the user can but the deny-read set.

Each test runs real commands under each real Linux backend, in a fake home outside ``/tmp`` (under
bubblewrap, ``/tmp`` is private: a home there would be hidden whatever the deny-read set says),
with canary secrets where credentials, host configurations and steerable's own records live, and
readable files next to them: the canaries must not come out, the neighbours must.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sbx_helpers import LINUX_BACKENDS, real_backend

from steerable_agent_runtime import ConfigError
from steerable_agent_runtime.sandbox import (
    ResourceLimits,
    SandboxConfig,
    SandboxPolicy,
    run_sandboxed,
)
from steerable_agent_runtime.sandbox._deny import DEFAULT_DENY_READ, read_grants
from steerable_agent_runtime.sandbox._pinning import launcher_argv
from waiting import eventually

CANARY = f"canary-{uuid.uuid4().hex[:10]}"

SECRETS = (
    ".ssh/id_ed25519",
    ".aws/credentials",
    ".config/gh/hosts.yml",
    ".config/zed/settings.json",
    ".claude.json",
    ".codex/auth.json",
    ".netrc",
    ".docker/config.json",
    ".config/git/credentials",
    "mcp-servers.json",  # named by STEERABLE_MCP_CONFIG below
)


@pytest.fixture
def home() -> Iterator[Path]:
    """A fake home under ``/var/tmp`` (not ``/tmp``): secrets where tools keep them, and neighbours."""
    root = Path(tempfile.mkdtemp(prefix="steerable-home-", dir="/var/tmp"))
    try:
        for secret in SECRETS:
            path = root / secret
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"{CANARY} {secret}\n")
        (root / "notes.txt").write_text("visible-notes\n")
        (root / ".config" / "fish").mkdir(parents=True)
        (root / ".config" / "fish" / "config.fish").write_text("visible-fish\n")
        (root / ".local" / "state" / "steerable" / "sessions").mkdir(parents=True)
        (root / ".local" / "state" / "steerable" / "sessions" / "other.jsonl").write_text(
            f"{CANARY} record\n"
        )
        (root / "keys-link").symlink_to(root / ".ssh")  # a way round, by a link the model made earlier
        (root / "vault").mkdir()
        (root / "vault" / "token").write_text(f"{CANARY} vault\n")
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def config_for(home: Path, **extra: str) -> SandboxConfig:
    return SandboxConfig.from_env({"HOME": str(home), "PATH": os.environ.get("PATH", ""), **extra})


async def run(
    backend_name: str, config: SandboxConfig, workspace: Path, script: str
) -> tuple[str, int | None]:
    policy = SandboxPolicy(
        writable_roots=(workspace,),
        limits=ResourceLimits(max_output_bytes=200_000),
        deny_read=config.deny_read,
    )
    result = await run_sandboxed(
        ["/bin/bash", "-c", script], policy, backend=real_backend(backend_name), timeout_s=30
    )
    return result.stdout.text + result.stderr.text, result.exit_code


@pytest.mark.parametrize("backend_name", LINUX_BACKENDS)
async def test_credentials_host_configs_and_records_are_unreadable_safe_3(
    backend_name: str, home: Path, workspace: Path
) -> None:
    # SAFE-3: the default set (credential folders, the host configurations users put
    # STEERABLE_API_KEY in, steerable's state directory) plus STEERABLE_SANDBOX_DENY_READ
    config = config_for(
        home, STEERABLE_SANDBOX_DENY_READ="~/vault, /nonexistent/x", STEERABLE_MCP_CONFIG="~/mcp-servers.json"
    )
    (workspace / "mine.txt").write_text("visible-workspace\n")
    reads = " ".join(f"cat ~/{secret};" for secret in SECRETS)
    script = (
        f"export HOME={home}; {reads} cat ~/keys-link/id_ed25519; cat ~/vault/token; "
        "cat ~/.local/state/steerable/sessions/other.jsonl; grep -rs canary ~ ; ls -la ~/.ssh ~/keys-link/;"
        "cat ~/notes.txt ~/.config/fish/config.fish mine.txt; "
        'python3 -c \'import os,sys; [sys.stdout.write(open(os.path.join(d,f),errors="replace").read())'
        ' for d,_,fs in os.walk(os.environ["HOME"]) for f in fs if os.path.isfile(os.path.join(d,f))]\''
    )
    output, _ = await run(backend_name, config, workspace, script)
    assert CANARY not in output
    assert "visible-notes" in output and "visible-fish" in output and "visible-workspace" in output


@pytest.mark.parametrize("backend_name", LINUX_BACKENDS)
async def test_the_deny_read_set_can_be_turned_off_for_one_policy_safe_3(
    backend_name: str, home: Path, workspace: Path
) -> None:
    # SAFE-3: the set is what the policy carries: an embedder passing deny_read=() reads everything
    policy = SandboxPolicy(writable_roots=(workspace,), limits=ResourceLimits(max_output_bytes=10_000))
    result = await run_sandboxed(
        ["/bin/cat", str(home / ".ssh" / "id_ed25519")],
        policy,
        backend=real_backend(backend_name),
        timeout_s=30,
    )
    assert CANARY in result.stdout.text


@pytest.mark.parametrize("backend_name", LINUX_BACKENDS)
async def test_the_terminal_steerable_runs_in_cannot_be_read_safe_3(
    backend_name: str, home: Path, workspace: Path
) -> None:
    # SAFE-3: keystrokes typed into steerable's terminal wait on its pty; a command that opens the
    # pty's device (by its /dev/pts path, or /dev/tty) must not get them
    master, slave = os.openpty()
    try:
        device = os.ttyname(slave)
        os.write(master, f"{CANARY}-typed\n".encode())
        script = (
            f"timeout 2 cat {device}; echo rc=$?; timeout 2 cat /dev/tty; echo tty=$?; "
            "ls /dev/pts; head -c 4 /dev/urandom | wc -c; echo ok > /dev/null && echo devnull-ok; "
            # a root command reading the raw disk would read every file on it, past any rule
            "for d in /dev/sd? /dev/vd? /dev/xvd? /dev/nvme?n1; do [ -b $d ] && head -c 1 $d >/dev/null "
            "&& echo read-$d; done; true"
        )
        output, _ = await run(backend_name, config_for(home), workspace, script)
    finally:
        os.close(master)
        os.close(slave)
    assert CANARY not in output and "read-/dev/" not in output
    assert "devnull-ok" in output and "\n4\n" in output


@pytest.mark.parametrize("backend_name", LINUX_BACKENDS)
async def test_other_processes_command_lines_are_not_visible_safe_3(
    backend_name: str, home: Path, workspace: Path
) -> None:
    # SAFE-3: an MCP server started with a token on its command line, as hosts do
    secret_arg = f"--token={CANARY}-argv"
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", secret_arg])
    try:
        script = "cat /proc/[0-9]*/cmdline | tr '\\0' ' '; ps -eo args 2>/dev/null; echo done"
        output, _ = await run(backend_name, config_for(home), workspace, script)
    finally:
        other.kill()
        other.wait()
    assert "done" in output
    assert CANARY not in output


def test_a_relative_deny_read_entry_is_a_configuration_error_safe_3(home: Path) -> None:
    with pytest.raises(ConfigError) as raised:
        config_for(home, STEERABLE_SANDBOX_DENY_READ="secrets/keys")
    assert str(raised.value) == (
        "STEERABLE_SANDBOX_DENY_READ entry 'secrets/keys' is not an absolute path; give absolute or ~/ "
        "paths, separated by commas"
    )


def test_the_default_set_and_the_state_directory_safe_3(home: Path) -> None:
    config = config_for(home, XDG_STATE_HOME=str(home / "xdg"))
    assert config.deny_read[: len(DEFAULT_DENY_READ)] == tuple(
        home / entry[2:] for entry, _ in DEFAULT_DENY_READ
    )
    assert config.deny_read[len(DEFAULT_DENY_READ)] == home / "xdg" / "steerable"
    explicit = config_for(home, STEERABLE_STATE_DIR=str(home / "records"))
    assert home / "records" in explicit.deny_read


def test_read_grants_split_the_tree_around_what_is_denied(home: Path) -> None:
    denied = [str(home / ".ssh"), str(home / ".config" / "gh")]
    grants = read_grants(denied, root=str(home))
    assert str(home / ".ssh") not in grants and str(home / ".config") not in grants
    assert str(home / "notes.txt") in grants and str(home / ".config" / "zed") in grants
    assert str(home / "keys-link") not in grants  # a link into a denied folder is not followed
    assert not any(g == str(home) or g.startswith(str(home / ".ssh")) for g in grants)
    assert read_grants([], root=str(home)) == [str(home)]


def test_seatbelt_denies_the_set_by_parameters_safe_3(home: Path, tmp_path: Path) -> None:
    # SAFE-3 on macOS: the run is tested there only; here, that the profile and its parameters say it
    from steerable_agent_runtime.sandbox import SeatbeltBackend, seatbelt_profile

    ws = tmp_path / "ws"
    ws.mkdir()
    # a missing entry in an existing folder is denied too (the host may make it during the run); one
    # whose folder is missing as well is not
    deny = (home / ".ssh", home / "gone" / "x", home / "later.json", home / ".aws")
    policy = SandboxPolicy(writable_roots=(ws,), deny_read=deny)
    plan = SeatbeltBackend().plan(["true"], policy, private_tmp=tmp_path)
    profile = seatbelt_profile(writable_roots=2, network=False, deny_read=3)
    assert plan.argv[2] == profile
    assert f"-DDENY_READ_0={home / '.aws'}" in plan.argv and f"-DDENY_READ_1={home / '.ssh'}" in plan.argv
    assert f"-DDENY_READ_2={home / 'later.json'}" in plan.argv
    lines = profile.splitlines()
    assert lines.index('(deny file-read* (subpath (param "DENY_READ_1")))') > lines.index(
        "(allow file-read*)"
    )
    assert '(deny file-read-data (regex #"^/dev/ttys[0-9]+$"))' in lines


@pytest.mark.parametrize("backend_name", LINUX_BACKENDS)
async def test_a_state_directory_given_by_flag_is_unreadable_too_safe_3(
    backend_name: str, home: Path, workspace: Path
) -> None:
    # SAFE-3: --state-dir (SidecarClient's state_dir) names the directory in use, not the variable
    from steerable_sidecar.sidecar._client import SidecarClient

    real_backend(backend_name)
    state = home / "flagged-state"
    (state / "sessions").mkdir(parents=True)
    (state / "sessions" / "other.jsonl").write_text(f"{CANARY} other session\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("STEERABLE_")}
    env.update(HOME=str(home), STEERABLE_SANDBOX=backend_name)
    async with await SidecarClient.start(
        workspace=workspace, state_dir=state, env=env, args=["--no-plugins"]
    ) as client:
        result = await client.invoke(
            "bash",
            {"command": f"cat {state}/sessions/other.jsonl; ls {state}/sessions; echo done"},
            consent_granted=True,
        )
    assert result.data is not None and "done" in result.data.get("stdout", ""), result
    assert CANARY not in json.dumps(result.to_wire())


@pytest.mark.parametrize("backend_name", LINUX_BACKENDS)
async def test_a_secret_the_host_rewrites_during_the_run_stays_unread_safe_3(
    backend_name: str, home: Path, workspace: Path
) -> None:
    # SAFE-3: Claude Code rewrites ~/.claude.json, git's credential store ~/.git-credentials, by
    # renaming a new file onto the path; a mount over the old file would drop out of the sandbox
    # then (the attack review's break 5), so nothing denied has a name there at all
    config = config_for(home)
    (home / ".git-credentials").write_text(f"https://bob:{CANARY}-old@example.com\n")
    (home / ".cargo").mkdir()  # credentials.toml does not exist yet: the host makes it during the run
    started, go = workspace / "started", workspace / "go"
    run = asyncio.ensure_future(
        run_(
            backend_name,
            config,
            workspace,
            f"touch {started}; until [ -e {go} ]; do sleep 0.01; done; "
            "cat ~/.claude.json ~/.git-credentials ~/.cargo/credentials.toml",
        )
    )
    await eventually(lambda: started.exists() or run.done(), what="the sandboxed command started")
    for name in (".claude.json", ".git-credentials", ".cargo/credentials.toml"):
        fresh = home / f"{name}.tmp"
        fresh.write_text(f"{CANARY}-rewritten {name}\n")
        os.replace(fresh, home / name)
    go.touch()  # the command reads the secrets only now, after the host rewrote them
    output, _ = await run
    assert CANARY not in output


@pytest.mark.parametrize("backend_name", LINUX_BACKENDS)
async def test_a_workspace_that_is_home_keeps_the_secrets_in_it_unread_safe_3(
    backend_name: str, home: Path
) -> None:
    # SAFE-3: `steerable -w ~` (the attack review's break 4): the deny-read entries inside the
    # workspace are covered after it is bound, so the command works in ~ and reads no secret
    config = config_for(home)
    output, code = await run_(
        backend_name,
        config,
        home,
        "cat ~/.ssh/id_ed25519 ~/.aws/credentials ~/.claude.json ~/.local/state/steerable/sessions/other.jsonl; "
        "cat notes.txt; echo made > made.txt && cat made.txt",
    )
    assert CANARY not in output
    assert "visible-notes" in output and "made" in output
    assert (home / "made.txt").read_text() == "made\n"


async def run_(backend_name: str, config: SandboxConfig, root: Path, script: str) -> tuple[str, int | None]:
    """:func:`run` with ``root`` as the workspace and ``HOME``."""
    return await run(backend_name, config, root, f"export HOME={config.deny_read[0].parent}; {script}")


# -- the folders split around the set are shared: other processes' files come and go in them ----------

# Always one file in the folder, under a new name every millisecond: another steerable's private
# /tmp folder, Claude Code's ~/.claude.json.tmp, an editor's swap file
CHURN = """
import os, sys, time
folder, i = sys.argv[1], 0
while True:
    open(os.path.join(folder, f"churn-{i}.tmp"), "w").close()
    if i:
        os.unlink(os.path.join(folder, f"churn-{i - 1}.tmp"))
    i += 1
    time.sleep(0.001)
"""


@pytest.mark.parametrize("backend_name", LINUX_BACKENDS)
def test_an_entry_gone_or_made_a_link_before_the_launch_fails_nothing_and_leaks_nothing_safe_3(
    backend_name: str, home: Path, workspace: Path, tmp_path: Path
) -> None:
    # SAFE-3: each folder on the way to a denied entry is listed when the plan is made, and each
    # entry granted (Landlock) or bound back (bubblewrap) when the launch applies it. One removed
    # in between failed the command ("cannot open '/tmp/steerable-sbx-...' for a Landlock rule",
    # exit 125, when two runs shared /tmp); one made a link must not lead Landlock to a secret
    (home / "scratch.tmp").write_text("gone soon\n")
    (home / "swap").mkdir()
    policy = SandboxPolicy(
        writable_roots=(workspace,),
        limits=ResourceLimits(max_output_bytes=10_000),
        deny_read=config_for(home).deny_read,
    )
    private = tmp_path / "private"
    private.mkdir()
    script = f"cat {home}/notes.txt {home}/swap/id_ed25519; echo done"
    plan = real_backend(backend_name).plan(["/bin/sh", "-c", script], policy, private_tmp=private)
    (home / "scratch.tmp").unlink()
    (home / "swap").rmdir()
    if backend_name == "landlock":  # bubblewrap follows a link it binds: no option of its own says not to
        (home / "swap").symlink_to(home / ".ssh")
    run = subprocess.run(
        launcher_argv(plan, policy), stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30
    )
    assert run.returncode == 0 and run.stdout.startswith("visible-notes\n"), run.stderr
    assert run.stdout.endswith("done\n") and CANARY not in run.stdout + run.stderr


@pytest.mark.parametrize("backend_name", LINUX_BACKENDS)
async def test_files_coming_and_going_beside_a_secret_fail_no_command_safe_3(
    backend_name: str, home: Path, workspace: Path
) -> None:
    # SAFE-3, and two steerable processes on one machine: a real process churns names in ~ while
    # commands run; every one starts and reads the neighbours, none a secret
    config = config_for(home)
    churn = subprocess.Popen([sys.executable, "-c", CHURN, str(home)], stdin=subprocess.DEVNULL)
    try:
        for _ in range(3):
            script = f"cat {home}/notes.txt; cat {home}/.netrc; echo done"
            output, code = await run(backend_name, config, workspace, script)
            assert code == 0 and output.startswith("visible-notes\n") and "done\n" in output, output
            assert CANARY not in output
    finally:
        churn.kill()
        churn.wait()
