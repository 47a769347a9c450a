"""Backend selection: the ladder (fake backends, another platform), the real probes, Seatbelt's profile.

Selection logic is exercised with fakes and a ``platform=`` argument only; whether a backend
actually works is always the real probe (bwrap runs ``true`` under its options; Landlock asks
the kernel its ABI version).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from steerable_agent_runtime import SandboxUnavailableError, ToolRetry
from steerable_agent_runtime.sandbox import (
    INHERITED,
    LADDERS,
    BubblewrapBackend,
    InheritedBackend,
    LandlockBackend,
    LaunchPlan,
    SandboxBackend,
    SandboxConfig,
    SandboxInfo,
    SandboxPolicy,
    SeatbeltBackend,
    detect_landlock_abi,
    seatbelt_profile,
    select_backend,
)


class Fake:
    """A backend whose availability is given; it never runs anything."""

    def __init__(self, name: str, reason: str | None) -> None:
        self._info = SandboxInfo(name, "full")
        self.reason = reason
        self.asked = 0

    @property
    def info(self) -> SandboxInfo:
        return self._info

    def unavailable_reason(self) -> str | None:
        self.asked += 1
        return self.reason

    def plan(self, argv, policy, *, private_tmp):  # pragma: no cover - never spawned
        return LaunchPlan(argv=tuple(argv))


def fakes(**reasons: str | None) -> dict[str, Fake]:
    return {name: Fake(name, reason) for name, reason in reasons.items()}


def test_linux_ladder_prefers_bwrap_then_landlock():
    assert LADDERS == {"linux": ("bwrap", "landlock"), "darwin": ("seatbelt",)}
    both = fakes(bwrap=None, landlock=None, seatbelt=None)
    assert select_backend(SandboxConfig(), platform="linux", backends=both) is both["bwrap"]
    assert both["landlock"].asked == 0  # the ladder stops at the first that works
    no_bwrap = fakes(bwrap="no user namespaces", landlock=None, seatbelt=None)
    assert select_backend(SandboxConfig(), platform="linux", backends=no_bwrap) is no_bwrap["landlock"]


def test_macos_ladder_is_seatbelt():
    candidates = fakes(bwrap=None, landlock=None, seatbelt=None)
    assert select_backend(SandboxConfig(), platform="darwin", backends=candidates) is candidates["seatbelt"]


def test_no_backend_refuses_with_sandbox_unavailable_and_the_fix_run_6():
    candidates = fakes(bwrap="bwrap is not installed", landlock="the kernel has no Landlock", seatbelt=None)
    with pytest.raises(SandboxUnavailableError) as caught:
        select_backend(SandboxConfig(), platform="linux", backends=candidates)
    error = caught.value
    assert isinstance(error, ToolRetry)  # the model can go on with other tools
    assert error.error == "sandbox_unavailable"
    assert error.tried == {"bwrap": "bwrap is not installed", "landlock": "the kernel has no Landlock"}
    assert error.data == {"code": "sandbox_unavailable", "tried": error.tried}
    assert error.message is not None
    assert "apt-get install bubblewrap" in error.message and "STEERABLE_SIDECAR_CONFINED=1" in error.message
    assert str(error).startswith("sandbox_unavailable: No layer-2 sandbox can run here")


def test_a_platform_without_backends_refuses_run_6():
    with pytest.raises(SandboxUnavailableError) as caught:
        select_backend(SandboxConfig(), platform="win32", backends=fakes(bwrap=None))
    assert caught.value.tried == {"win32": "no layer-2 sandbox backend exists for this platform"}
    assert "STEERABLE_SIDECAR_CONFINED=1" in str(caught.value)


def test_forcing_a_backend_never_falls_back_run_6():
    candidates = fakes(bwrap="probe failed", landlock=None)
    with pytest.raises(SandboxUnavailableError) as caught:
        select_backend(SandboxConfig(backend="bwrap"), platform="linux", backends=candidates)
    assert caught.value.tried == {"bwrap": "probe failed"}
    assert "STEERABLE_SANDBOX=bwrap" in str(caught.value)
    assert (
        select_backend(SandboxConfig(backend="landlock"), platform="linux", backends=candidates)
        is candidates["landlock"]
    )


def test_backend_none_denies_every_backend_run_6():
    with pytest.raises(SandboxUnavailableError) as caught:
        select_backend(SandboxConfig(backend="none"), platform="linux", backends=fakes(bwrap=None))
    assert caught.value.error == "sandbox_unavailable"
    assert "STEERABLE_SANDBOX=none" in str(caught.value)


def test_confined_inherits_layer_1_whatever_else_is_configured_run_8():
    for backend in ("auto", "none", "bwrap"):
        chosen = select_backend(SandboxConfig(backend=backend, confined=True), platform="win32", backends={})
        assert isinstance(chosen, InheritedBackend)
        assert chosen.info == INHERITED
        assert chosen.info.as_data() == {"backend": "inherited", "enforcement": "partial", "via": "layer1"}


def test_select_reads_the_environment_by_default(monkeypatch):
    monkeypatch.setenv("STEERABLE_SANDBOX", "none")
    with pytest.raises(SandboxUnavailableError):
        select_backend()
    monkeypatch.setenv("STEERABLE_SIDECAR_CONFINED", "1")
    assert isinstance(select_backend(), InheritedBackend)


# -- the real backends on this machine ------------------------------------------------------------


def test_bwrap_is_chosen_here_after_its_probe_ran_a_command():
    backend = BubblewrapBackend()
    assert backend.executable is not None, "bubblewrap is not installed: .ci/run installs it"
    assert backend.unavailable_reason() is None
    assert backend.info.as_data() == {"backend": "bwrap", "enforcement": "full"}
    assert isinstance(select_backend(SandboxConfig()), BubblewrapBackend)


def test_an_installed_bwrap_that_cannot_sandbox_is_not_chosen(tmp_path: Path):
    broken = tmp_path / "bwrap"  # stands for a bwrap that exits non-zero (no user namespaces)
    broken.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    broken.chmod(0o755)
    reason = BubblewrapBackend(str(broken)).unavailable_reason()
    assert reason is not None and "No permissions to create new namespace" in reason
    missing = BubblewrapBackend(str(tmp_path / "absent")).unavailable_reason()
    assert missing is not None and "could not be run" in missing


def test_landlock_abi_is_detected_with_the_syscall():
    abi = detect_landlock_abi()
    assert abi >= 4, f"this kernel reports Landlock ABI {abi}; the network rules need 4"
    assert LandlockBackend().unavailable_reason() is None
    assert LandlockBackend().info.as_data() == {"backend": "landlock", "enforcement": "partial"}
    candidates: dict[str, SandboxBackend] = {
        "bwrap": Fake("bwrap", "no user namespaces"),
        "landlock": LandlockBackend(),
    }
    assert isinstance(select_backend(SandboxConfig(), backends=candidates), LandlockBackend)


def test_seatbelt_refuses_off_macos():
    if sys.platform == "darwin":
        pytest.skip("on macOS the real run below applies")
    assert SeatbeltBackend().unavailable_reason() == "Seatbelt (sandbox-exec) exists on macOS only"
    with pytest.raises(SandboxUnavailableError):
        select_backend(SandboxConfig(backend="seatbelt"))


# -- Seatbelt's profile ---------------------------------------------------------------------------


def test_seatbelt_profile_denies_by_default_and_writes_only_the_roots():
    profile = seatbelt_profile(writable_roots=2, network=False)
    lines = profile.splitlines()
    assert lines[:2] == ["(version 1)", "(deny default)"]
    assert "(allow file-read*)" in lines
    assert (
        '(allow file-write*\n  (subpath (param "WRITABLE_ROOT_0"))\n  (subpath (param "WRITABLE_ROOT_1")))'
        in profile
    )
    assert "(allow process-info* (target same-sandbox))" in lines  # no reading the sidecar's environment
    assert "(allow signal (target same-sandbox))" in lines
    assert "network" not in profile.replace("; network: denied (deny default)", "")
    assert profile.count("(") == profile.count(")")
    with_net = seatbelt_profile(writable_roots=1, network=True)
    assert "(allow network*)" in with_net.splitlines()


def test_seatbelt_plan_passes_paths_as_parameters(tmp_path: Path):
    ws = tmp_path / "ws"
    ws.mkdir()
    plan = SeatbeltBackend().plan(["echo", "hi"], SandboxPolicy(writable_roots=(ws,)), private_tmp=tmp_path)
    real = os.path.realpath
    assert plan.argv == (
        "/usr/bin/sandbox-exec",
        "-p",
        seatbelt_profile(writable_roots=2, network=False),
        f"-DWRITABLE_ROOT_0={real(ws)}",
        f"-DWRITABLE_ROOT_1={real(tmp_path)}",
        "--",
        "echo",
        "hi",
    )
    assert plan.env == {"TMPDIR": real(tmp_path), "TEMP": real(tmp_path), "TMP": real(tmp_path)}
    assert not plan.supervised


@pytest.mark.skipif(sys.platform != "darwin", reason="sandbox-exec exists on macOS only")
async def test_seatbelt_runs_on_macos(tmp_path: Path):  # pragma: no cover - macOS
    from steerable_agent_runtime.sandbox import run_sandboxed

    ws = tmp_path / "ws"
    ws.mkdir()
    result = await run_sandboxed(
        ["/bin/sh", "-c", f"echo ok > inside; echo no > {tmp_path}/outside"],
        SandboxPolicy(writable_roots=(ws,)),
        backend=SeatbeltBackend(),
        timeout_s=10,
    )
    assert (ws / "inside").exists() and not (tmp_path / "outside").exists()
    assert result.exit_code != 0
