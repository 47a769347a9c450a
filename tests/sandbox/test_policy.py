"""The allowlisted child environment (RUN-7), resource limits and ``SandboxConfig`` from the environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from steerable_agent_runtime import ConfigError
from steerable_agent_runtime.sandbox import (
    CHILD_ENV_ALLOWLIST,
    ResourceLimits,
    SandboxConfig,
    SandboxPolicy,
    child_environment,
)

PARENT = {
    "PATH": "/usr/bin:/bin",
    "HOME": "/home/u",
    "TMPDIR": "/tmp/u",
    "TEMP": "/tmp/u",
    "TMP": "/tmp/u",
    "LANG": "en_GB.UTF-8",
    "LC_ALL": "C.UTF-8",
    "LC_CTYPE": "UTF-8",
    "PYTHONPATH": "/src",
    "STEERABLE_API_KEY": "canary-XYZ",
    "OPENAI_API_KEY": "canary-openai",
    "FOO_TOKEN": "canary-token",
    "GITHUB_TOKEN": "canary-gh",
    "AWS_SECRET_ACCESS_KEY": "canary-aws",
    "SSH_AUTH_SOCK": "/run/agent.sock",
    "LD_PRELOAD": "/evil.so",
    "PYTHONSTARTUP": "/evil.py",
    "BASH_ENV": "/evil.sh",
    "SYSTEMROOT": "C:\\Windows",
    "SYSTEMDRIVE": "C:",
}


def test_child_environment_keeps_only_the_allowlist_run_7():
    env = child_environment(PARENT, platform="linux")
    assert env == {
        "PATH": "/usr/bin:/bin",
        "HOME": "/home/u",
        "TMPDIR": "/tmp/u",
        "TEMP": "/tmp/u",
        "TMP": "/tmp/u",
        "LANG": "en_GB.UTF-8",
        "LC_ALL": "C.UTF-8",
        "LC_CTYPE": "UTF-8",
        "PYTHONPATH": "/src",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    assert not any("canary" in value for value in env.values())


def test_windows_keeps_systemroot_and_systemdrive_run_7():
    env = child_environment(
        {"SystemRoot": "C:\\Windows", "SYSTEMDRIVE": "C:", "Path": "C:\\bin", "X_TOKEN": "t"},
        platform="win32",
    )
    assert env == {
        "SystemRoot": "C:\\Windows",
        "SYSTEMDRIVE": "C:",
        "Path": "C:\\bin",
        "PYTHONDONTWRITEBYTECODE": "1",
    }


def test_child_environment_always_has_a_path_and_reads_os_environ_by_default(monkeypatch):
    assert child_environment({}, platform="linux") == {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    monkeypatch.setenv("STEERABLE_API_KEY", "canary-XYZ")
    monkeypatch.setenv("LC_MESSAGES", "C")
    env = child_environment()
    assert "STEERABLE_API_KEY" not in env and env["LC_MESSAGES"] == "C"
    assert set(env) <= CHILD_ENV_ALLOWLIST | {"PYTHONDONTWRITEBYTECODE"} | {
        n for n in env if n.startswith("LC_")
    }


def test_config_defaults_and_every_variable(monkeypatch):
    monkeypatch.delenv("STEERABLE_STATE_DIR")  # the default deny-read set names the default state folder
    assert SandboxConfig.from_env({}) == SandboxConfig()
    assert SandboxConfig() == SandboxConfig(
        backend="auto", confined=False, network=False, limits=ResourceLimits()
    )
    config = SandboxConfig.from_env(
        {
            "STEERABLE_SANDBOX": " Landlock ",
            "STEERABLE_SIDECAR_CONFINED": "1",
            "STEERABLE_SANDBOX_NETWORK": "yes",
            "STEERABLE_SANDBOX_CPU_SECONDS": "0",
            "STEERABLE_SANDBOX_MEMORY_BYTES": "1_073_741_824",
            "STEERABLE_SANDBOX_MAX_PROCESSES": "64",
            "STEERABLE_SANDBOX_MAX_OUTPUT_BYTES": "100",
        }
    )
    assert config == SandboxConfig(
        backend="landlock",
        confined=True,
        network=True,
        limits=ResourceLimits(cpu_seconds=0, memory_bytes=2**30, max_processes=64, max_output_bytes=100),
    )


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("STEERABLE_SANDBOX", "docker"),
        ("STEERABLE_SIDECAR_CONFINED", "maybe"),
        ("STEERABLE_SANDBOX_NETWORK", "2"),
        ("STEERABLE_SANDBOX_CPU_SECONDS", "-1"),
        ("STEERABLE_SANDBOX_MEMORY_BYTES", "8G"),
        ("STEERABLE_SANDBOX_MAX_PROCESSES", "99999999"),
        ("STEERABLE_SANDBOX_MAX_OUTPUT_BYTES", "0"),
    ],
)
def test_invalid_values_fail_loud_naming_the_variable(name, value):
    with pytest.raises(ConfigError) as caught:
        SandboxConfig.from_env({name: value})
    assert name in str(caught.value)


def test_values_built_in_code_are_validated_too(workspace: Path):
    with pytest.raises(ConfigError):
        SandboxConfig(backend="docker")  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        ResourceLimits(memory_bytes=True)  # a bool is not a byte count
    with pytest.raises(ConfigError):
        SandboxPolicy(writable_roots=())
    assert SandboxPolicy(writable_roots=(workspace,)).workdir == workspace
    assert SandboxPolicy(writable_roots=(workspace,), cwd=workspace / "sub").workdir == workspace / "sub"


def test_a_policy_without_writable_roots_needs_a_cwd(tmp_path: Path) -> None:
    """The HTML converter's child writes nothing but its private temporary directory."""
    with pytest.raises(ConfigError, match="needs a writable root"):
        SandboxPolicy(writable_roots=())
    policy = SandboxPolicy(writable_roots=(), cwd=tmp_path)
    assert policy.workdir == tmp_path and policy.writable_roots == ()
