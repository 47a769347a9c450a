"""SAFE-1: no module from the workspace runs inside steerable, however steerable was started.

Every test plants modules the model could have written with ``write_file`` (each writes a marker
file and then fails) where Python would look first by accident: the current directory (``python -m``
without ``-P``) and the empty or relative entries of ``PYTHONPATH`` (resolved in the working
directory, even under ``-P``). Then it starts steerable the way a host does and checks that nothing
planted ran and that the tools work.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from steerable_agent_runtime import ToolCall
from steerable_agent_runtime.sandbox import (
    SandboxConfig,
    absolute_python_path,
    child_environment,
    select_backend,
)
from steerable_sidecar.run_code._tool import run_code_tool
from steerable_sidecar.sidecar._client import SidecarClient

# what the sidecar imports (runpy's own, the standard library, its dependencies) and what a child
# interpreter loads before any of its code runs (encodings); a module file or a package of each
PLANTED_MODULES = ("functools", "typing", "json", "asyncio", "argparse", "logging", "pydantic", "httpx")
PLANTED_PACKAGES = ("encodings",)


def plant(folder: Path, markers: Path) -> None:
    """Write modules into ``folder`` that record in ``markers`` that they ran, then break the import."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in PLANTED_MODULES:
        code = f"open({str(markers / name)!r}, 'w').close()\nraise SystemExit('planted {name} ran')\n"
        (folder / f"{name}.py").write_text(code)
    for name in PLANTED_PACKAGES:
        (folder / name).mkdir(exist_ok=True)
        code = f"open({str(markers / name)!r}, 'w').close()\nraise SystemExit('planted {name} ran')\n"
        (folder / name / "__init__.py").write_text(code)


@pytest.fixture
def planted(tmp_path: Path) -> tuple[Path, Path]:
    """A workspace with planted modules at its top and in ``lib/``; and the (empty) marker folder."""
    workspace, markers = tmp_path / "ws", tmp_path / "markers"
    markers.mkdir()
    plant(workspace, markers)
    plant(workspace / "lib", markers)
    (workspace / "notes.txt").write_text("hello\n")
    return workspace, markers


STEERABLE = str(Path(sys.executable).with_name("steerable"))
"""The console script a host runs."""


def started_in(workspace: Path, argv: list[str], *, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` with ``workspace`` as its working directory, as a host starts steerable there."""
    return subprocess.run(
        argv, cwd=workspace, env=env, capture_output=True, text=True, timeout=120, check=False
    )


def ran(markers: Path) -> list[str]:
    return sorted(path.name for path in markers.iterdir())


async def test_sidecar_client_starts_the_sidecar_with_no_module_from_its_directory_safe_1(
    planted: tuple[Path, Path], child_env: Callable[..., dict[str, str]]
) -> None:
    # SAFE-1: SidecarClient.start runs `python -P -m steerable_sidecar`, in the workspace, with an
    # inherited PYTHONPATH whose empty and relative entries would be the workspace too
    workspace, markers = planted
    env = child_env(PYTHONPATH=os.pathsep.join(["", "lib", "/nonexistent-lib"]))
    async with await SidecarClient.start(
        workspace=workspace, cwd=workspace, env=env, args=["--no-plugins"]
    ) as client:
        result = await client.invoke("read_file", {"path": "notes.txt"})
    assert result.success is True and result.data is not None and result.data["content"] == "hello\n"
    assert ran(markers) == []


@pytest.mark.parametrize("command", ["steerable", "python -P -m steerable_sidecar"])
def test_the_launch_lines_hosts_are_given_import_nothing_from_the_workspace_safe_1(
    command: str, planted: tuple[Path, Path], child_env: Callable[..., dict[str, str]]
) -> None:
    # SAFE-1: the lines docs/mcp.md and docs/acp.md give hosts, started in the project as hosts do
    workspace, markers = planted
    program = [STEERABLE] if command == "steerable" else [sys.executable, "-P", "-m", "steerable_sidecar"]
    done = started_in(
        workspace, [*program, "call", "read_file", '{"path": "notes.txt"}', "--no-plugins"], env=child_env()
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["data"]["content"] == "hello\n"
    assert ran(markers) == [] and done.stderr == ""


def test_python_m_without_p_drops_the_directory_and_says_how_to_start_safe_1(
    tmp_path: Path, child_env: Callable[..., dict[str, str]]
) -> None:
    # SAFE-1: what Python imported before steerable's own code cannot be helped (runpy's functools);
    # everything steerable imports itself (its command line parser) no longer comes from the directory
    markers = tmp_path / "markers"
    markers.mkdir()
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "argparse.py").write_text(f"open({str(markers / 'argparse')!r}, 'w').close()\n")
    done = started_in(workspace, [sys.executable, "-m", "steerable_sidecar", "--version"], env=child_env())
    assert done.returncode == 0 and done.stdout.startswith("steerable "), done.stderr
    assert ran(markers) == []
    assert done.stderr == (
        "steerable: started as `python -m steerable_sidecar` without -P, so Python looked for modules in "
        f"the current directory {workspace} first (a file the model wrote there would run in this "
        "process); start it as `python -P -m steerable_sidecar`, or run the `steerable` command\n"
    )


async def test_run_code_s_child_imports_nothing_from_the_workspace_safe_1(
    planted: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # SAFE-1: run_code's child runs in the workspace; an inherited PYTHONPATH of ":lib" would load the
    # planted encodings before the child's first line, -P or not
    workspace, markers = planted
    config = SandboxConfig(backend="bwrap")
    try:
        select_backend(config)
    except Exception as exc:  # pragma: no cover - only without bubblewrap
        pytest.skip(f"bubblewrap cannot run here: {exc}")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(["", "lib", "/nonexistent-lib"]))
    from steerable_agent_runtime import ToolRouter

    router = ToolRouter()
    router.register(run_code_tool(workspace, router=router, sandbox=config))
    code = (  # past the import guard (not the boundary), as test_run_code's environment test does
        "for cls in ().__class__.__base__.__subclasses__():\n"
        "    found = getattr(getattr(cls, '__init__', None), '__globals__', {})\n"
        "    if 'sys' in found:\n"
        "        sys = found['sys']\n"
        "        return [p for p in sys.path if not p.startswith(sys.base_prefix)]\n"
    )
    result = await router.dispatch(
        ToolCall(id="c1", name="run_code", arguments={"code": code, "description": "path"})
    )
    assert result.success is True, result.error
    assert result.data is not None and result.data["value"] == ["/nonexistent-lib"]
    assert ran(markers) == []


def test_children_keep_only_the_absolute_entries_of_pythonpath_safe_1() -> None:
    # SAFE-1: the rule every sandboxed child's environment goes through (bash, run_code, the converter)
    sep = os.pathsep
    assert absolute_python_path(sep.join(["", "lib", "/opt/a", "./b", "/opt/c", ""])) == sep.join(
        ["/opt/a", "/opt/c"]
    )
    assert absolute_python_path("") == "" and absolute_python_path("src") == ""
    assert (
        child_environment({"PATH": "/bin", "PYTHONPATH": sep.join(["", "/opt/a"])})["PYTHONPATH"] == "/opt/a"
    )
    assert "PYTHONPATH" not in child_environment({"PATH": "/bin", "PYTHONPATH": sep.join([".", "src"])})


def test_the_steerable_command_drops_an_empty_pythonpath_entry_safe_1(
    tmp_path: Path, child_env: Callable[..., dict[str, str]]
) -> None:
    # SAFE-1: PYTHONPATH=":/x" (an export onto an unset variable) names the current directory, the
    # workspace a host starts steerable in: what steerable imports itself no longer comes from there
    markers = tmp_path / "markers"
    markers.mkdir()
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "json.py").write_text(f"open({str(markers / 'json')!r}, 'w').close()\n")
    done = started_in(
        workspace,
        [STEERABLE, "tools", "--json", "--no-plugins"],
        env=child_env(PYTHONPATH=os.pathsep.join(["", "/nonexistent-lib"])),
    )
    assert done.returncode == 0, done.stderr
    assert ran(markers) == []
    assert done.stderr == (
        f"steerable: ignoring the sys.path entries [{str(workspace)!r}] (from PYTHONPATH or a .pth file): "
        "they name the current directory, where a file the model wrote would run in this process\n"
    )


def test_the_steerable_command_drops_a_pythonpath_entry_inside_its_directory_safe_1(
    tmp_path: Path, child_env: Callable[..., dict[str, str]]
) -> None:
    # SAFE-1: PYTHONPATH=src, started in the workspace, names the workspace's src/ (second attack round)
    markers = tmp_path / "markers"
    markers.mkdir()
    workspace = tmp_path / "ws"
    (workspace / "src").mkdir(parents=True)
    (workspace / "src" / "json.py").write_text(f"open({str(markers / 'json')!r}, 'w').close()\n")
    done = started_in(
        workspace, [STEERABLE, "tools", "--json", "--no-plugins"], env=child_env(PYTHONPATH="src")
    )
    assert done.returncode == 0, done.stderr
    assert ran(markers) == []
    assert f"ignoring the sys.path entries [{str(workspace / 'src')!r}]" in done.stderr


def test_the_steerable_command_drops_an_absolute_entry_into_its_workspace_safe_1(
    tmp_path: Path, child_env: Callable[..., dict[str, str]]
) -> None:
    # SAFE-1: started elsewhere with PYTHONPATH=<workspace>/lib (second attack round's open item): what
    # steerable imports once its package loads (argparse; third round, break 9) and once it knows its
    # workspace (the web tools' HTTP stack) never comes from it
    markers = tmp_path / "markers"
    markers.mkdir()
    workspace, elsewhere = tmp_path / "ws", tmp_path / "elsewhere"
    elsewhere.mkdir()
    for name in ("argparse", "httpx", "markdownify", "charset_normalizer"):  # argparse: before boot
        (workspace / "lib").mkdir(parents=True, exist_ok=True)
        code = f"open({str(markers / name)!r}, 'w').close()\nraise SystemExit('planted {name} ran')\n"
        (workspace / "lib" / f"{name}.py").write_text(code)
    argv = [STEERABLE, "--workspace", str(workspace), "call", "web_fetch", '{"url": "http://127.0.0.1:9/"}']
    done = started_in(elsewhere, argv, env=child_env(PYTHONPATH=str(workspace / "lib")))
    assert ran(markers) == [], done.stderr
    assert json.loads(done.stdout)["data"]["code"] == "ssrf_blocked"  # the web tools ran, unplanted
    assert done.stderr.startswith(
        f"steerable: ignoring the sys.path entries [{str(workspace / 'lib')!r}] (from PYTHONPATH or a .pth "
        "file): they name the workspace, where a file the model wrote would run in this process\n"
    )


def test_a_refused_workspace_is_told_alone_without_the_dropped_entries(
    tmp_path: Path, child_env: Callable[..., dict[str, str]]
) -> None:
    """Issue 32: ``steerable call -w ~`` with a ``PYTHONPATH`` entry in the home folder drops the
    entry (SAFE-1) but says only the refusal: nothing runs in a refused workspace, so the dropped
    entries are told once a workspace is accepted."""
    home = tmp_path / "home"
    (home / "lib").mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = child_env(HOME=str(home), PYTHONPATH=str(home / "lib"))
    done = started_in(elsewhere, [STEERABLE, "call", "read_file", '{"path": "x"}', "-w", "~"], env=env)
    assert done.returncode == 2
    assert done.stderr == (
        f"steerable call: the workspace {home.resolve()} (--workspace) is a home folder; steerable will not "
        "give a model a whole disk or a home folder. Open a project folder instead: cd into it, or pass "
        "--workspace DIR\n"
    )
    doctor = started_in(elsewhere, [STEERABLE, "doctor", "--json", "--no-plugins", "-w", "~"], env=env)
    assert (
        doctor.returncode == 2 and "ignoring the sys.path entries" not in doctor.stderr
    )  # told in its table
    project = home / "project"
    (project / "lib").mkdir(parents=True)
    accepted = started_in(
        elsewhere,
        [STEERABLE, "doctor", "--json", "--no-plugins", "-w", str(project)],
        env={**env, "PYTHONPATH": str(project / "lib")},
    )
    assert f"ignoring the sys.path entries [{str(project / 'lib')!r}]" in accepted.stderr  # an accepted one
