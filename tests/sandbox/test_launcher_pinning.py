"""What runs OUTSIDE the sandbox can never be planted from inside it (RUN-9).

The launcher applies the limits and starts the backend, unsandboxed. A workspace may hold the
project's ``.venv`` (the interpreter running steerable) or an editable install of steerable, and
a sandboxed command can write the workspace. So the launcher's interpreter and code are pinned at
import, bubblewrap carves those paths (and ``.git``) read-only out of the writable roots, and an
interpreter inside a writable root is refused.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from sbx_helpers import real_backend

from steerable_agent_runtime.errors import SandboxUnavailableError
from steerable_agent_runtime.sandbox import ResourceLimits, SandboxPolicy, _pinning, run_sandboxed


def test_the_launcher_runs_a_pinned_interpreter_and_a_private_copy_of_its_code_run_9() -> None:
    assert _pinning.PINNED_PYTHON == os.path.realpath(sys.executable)
    code = _pinning.launcher_code()
    assert code.endswith(".pyc") and "__pycache__" not in code and "steerable-launch-" in code
    assert (os.stat(os.path.dirname(code)).st_mode & 0o777) == 0o700


async def test_an_interpreter_inside_a_writable_root_is_refused_run_9(tmp_path: Path) -> None:
    prefix = os.path.dirname(_pinning.PINNED_PYTHON)
    policy = SandboxPolicy(writable_roots=(Path(prefix),), limits=ResourceLimits(max_output_bytes=4096))
    with pytest.raises(SandboxUnavailableError) as info:
        await run_sandboxed(["true"], policy, backend=real_backend("bwrap"), timeout_s=10)
    assert "run steerable with a Python installed outside the workspace" in (info.value.message or "")


async def test_bwrap_keeps_a_workspace_venv_and_git_read_only_run_9(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = tmp_path / "ws"
    venv_bin = workspace / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    (venv_bin / "python").write_text("#!/bin/sh\n")
    (workspace / ".git" / "hooks").mkdir(parents=True)
    (workspace / "src.txt").write_text("x\n")
    # as if steerable ran from that venv: its prefix is a runtime root inside the workspace
    monkeypatch.setattr(sys, "prefix", str(workspace / ".venv"))  # the sys the launcher reads
    policy = SandboxPolicy(writable_roots=(workspace,), limits=ResourceLimits(max_output_bytes=4096))
    script = (
        "echo planted > .venv/bin/python; echo hook > .git/hooks/pre-commit; "
        "git_ok=$?; echo edited > src.txt; echo done"
    )
    result = await run_sandboxed(
        ["/bin/sh", "-c", script], policy, backend=real_backend("bwrap"), timeout_s=20
    )
    assert "done" in result.stdout.text
    assert (venv_bin / "python").read_text() == "#!/bin/sh\n"  # the interpreter stayed
    assert not (workspace / ".git" / "hooks" / "pre-commit").exists()  # git's hooks stayed
    assert (workspace / "src.txt").read_text() == "edited\n"  # the workspace itself is writable


@pytest.mark.parametrize("target", ["/proc", "/tmp", "/etc/hostname"])
async def test_a_git_symlink_planted_by_one_command_reaches_nothing_in_the_next_run_9(
    tmp_path: Path, target: str
) -> None:
    """A ``.git -> <host path>`` is not bound: the next run neither sees the host path nor fails."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (tmp_path / "host-only").write_text("host\n")  # under the host's /tmp, hidden by the private /tmp
    policy = SandboxPolicy(writable_roots=(workspace,), limits=ResourceLimits(max_output_bytes=65536))
    backend = real_backend("bwrap")
    depth = "../" * len(workspace.parts)
    plant = await run_sandboxed(
        ["/bin/sh", "-c", f"ln -s {depth}{target.lstrip('/')} .git && echo planted"],
        policy,
        backend=backend,
        timeout_s=20,
    )
    assert plant.stdout.text == "planted\n", plant.stderr.text
    probe = "ls .git/ 2>&1 | head -200; echo; ls /proc | grep -c '^[0-9]'; find /tmp -name host-only"
    after = await run_sandboxed(["/bin/sh", "-c", probe], policy, backend=backend, timeout_s=20)
    assert after.exit_code == 0, after.stderr.text
    if target == "/proc":  # the sandbox's own /proc: its few processes, not the host's
        pids = [line for line in after.stdout.text.splitlines()[:-1] if line.isdigit()]
        assert int(after.stdout.text.splitlines()[-1]) < 10 and len(pids) < 10, after.stdout.text
    assert "host-only" not in after.stdout.text


@pytest.mark.parametrize("name", ["landlock", "bwrap"])
async def test_a_pinned_copy_inside_a_writable_root_is_refused_run_9(tmp_path: Path, name: str) -> None:
    """TMPDIR inside the workspace puts the launcher's private copy there: a command could rewrite
    ``_launch.pyc`` and the next call would run it unsandboxed (Landlock leaves it writable)."""
    pinned_folder = os.path.dirname(_pinning.launcher_code())
    policy = SandboxPolicy(
        writable_roots=(Path(os.path.dirname(pinned_folder)),), limits=ResourceLimits(max_output_bytes=4096)
    )
    with pytest.raises(SandboxUnavailableError) as info:
        await run_sandboxed(["true"], policy, backend=real_backend(name), timeout_s=10)
    assert "the sandbox launcher's private copy" in (info.value.message or "")
    assert "set TMPDIR to a folder outside the workspace" in (info.value.message or "")


def test_steerable_call_with_tmpdir_inside_the_workspace_refuses_bash_and_says_why_run_9(
    tmp_path: Path,
) -> None:
    import subprocess

    workspace = tmp_path / "ws"
    (workspace / ".tmp").mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("STEERABLE_")}
    env |= {"TMPDIR": str(workspace / ".tmp"), "STEERABLE_CONFIG": "off"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "steerable_sidecar",
            "call",
            "bash",
            '{"command": "echo ran > ran.txt"}',
            "--workspace",
            str(workspace),
            "--no-plugins",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=tmp_path,
    )
    assert done.returncode == 1 and '"code": "sandbox_unavailable"' in done.stdout
    assert "set TMPDIR to a folder outside the workspace" in done.stdout
    assert not (workspace / "ran.txt").exists()
