"""Issue 32, item 1: the README's one-line installs give a working ``steerable`` command.

``pipx install .`` and ``uv tool install .`` from this checkout, the same from a built wheel, and
``uvx --from . steerable``: each installs into a venv of its own (no PEP 668
``externally-managed-environment`` error outside a venv), and the command it puts on PATH prints
its version and answers a ``call`` in a project folder. Slow (each install builds steerable and
installs its dependencies) and skipped where pipx or uv is not installed (the dev extras install
both). ``steerable doctor`` checks the system packages the README names before these commands.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from steerable_agent_runtime import __version__

REPO = Path(__file__).resolve().parent.parent
INSTALL_TIMEOUT_S = 600


def _tool(name: str) -> str:
    """The ``pipx`` or ``uv`` program: on PATH, or beside this Python; else the test is skipped."""
    found = shutil.which(name) or shutil.which(name, path=str(Path(sys.executable).parent))
    if found is None:
        pytest.skip(
            f"{name} is not installed (pip install {name}): the README's `{name}` install is not tried"
        )
    return found


def _run(argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        argv, capture_output=True, text=True, env=env, cwd=cwd, timeout=INSTALL_TIMEOUT_S, check=False
    )
    assert done.returncode == 0, f"{argv} exited {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """This environment without steerable's settings and venv, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STEERABLE_", "PIPX_", "UV_"))}
    env.pop("VIRTUAL_ENV", None)
    env["STEERABLE_CONFIG"] = "off"
    env["XDG_STATE_HOME"] = str(tmp_path / "state")
    return {**env, **extra}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project folder with the README in it, where the installed command is run."""
    folder = tmp_path / "project"
    folder.mkdir()
    shutil.copyfile(REPO / "README.md", folder / "README.md")
    return folder


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The wheel ``python -m build --wheel`` makes from this checkout (``build`` is a dev extra)."""
    pytest.importorskip("build")
    out = tmp_path_factory.mktemp("dist")
    _run([sys.executable, "-m", "build", "--wheel", "--outdir", str(out), str(REPO)], dict(os.environ), REPO)
    (found,) = out.glob("steerable-*.whl")
    yield found


def _check_command(steerable: Path, env: dict[str, str], project: Path) -> None:
    """``steerable --version`` and ``steerable call read_file`` work as the README shows them."""
    assert _run([str(steerable), "--version"], env, project).stdout == f"steerable {__version__}\n"
    call = [str(steerable), "call", "read_file", '{"path": "README.md", "limit": 2}', "--no-plugins"]
    data = json.loads(_run(call, env, project).stdout)["data"]
    assert data["content"] == "# steerable\n\n"


@pytest.mark.slow
@pytest.mark.parametrize("source", ["checkout", "wheel"])
def test_pipx_install(source: str, tmp_path: Path, project: Path, request: pytest.FixtureRequest) -> None:
    pipx = _tool("pipx")
    target = str(REPO) if source == "checkout" else str(request.getfixturevalue("wheel"))
    env = _env(
        tmp_path,
        PIPX_HOME=str(tmp_path / "pipx"),
        PIPX_BIN_DIR=str(tmp_path / "bin"),
        PIPX_MAN_DIR=str(tmp_path / "man"),
        PIPX_DEFAULT_PYTHON=sys.executable,
    )
    _run([pipx, "install", target], env, project)
    _check_command(tmp_path / "bin" / "steerable", env, project)


@pytest.mark.slow
@pytest.mark.parametrize("source", ["checkout", "wheel"])
def test_uv_tool_install(source: str, tmp_path: Path, project: Path, request: pytest.FixtureRequest) -> None:
    uv = _tool("uv")
    target = str(REPO) if source == "checkout" else str(request.getfixturevalue("wheel"))
    env = _env(tmp_path, UV_TOOL_DIR=str(tmp_path / "tools"), UV_TOOL_BIN_DIR=str(tmp_path / "bin"))
    _run([uv, "tool", "install", "--python", sys.executable, target], env, project)
    _check_command(tmp_path / "bin" / "steerable", env, project)


@pytest.mark.slow
def test_uvx_from_the_checkout(tmp_path: Path, project: Path) -> None:
    uv = _tool("uv")
    env = _env(tmp_path)
    run = [uv, "tool", "run", "--refresh-package", "steerable", "--python", sys.executable]
    run += ["--from", str(REPO), "steerable"]
    assert _run([*run, "--version"], env, project).stdout == f"steerable {__version__}\n"
    call = [*run, "call", "read_file", '{"path": "README.md", "limit": 2}', "--no-plugins"]
    assert json.loads(_run(call, env, project).stdout)["data"]["content"] == "# steerable\n\n"


def _doctor_rows(env: dict[str, str], cwd: Path) -> dict[str, dict[str, str]]:
    done = subprocess.run(
        [sys.executable, "-P", "-m", "steerable_sidecar", "doctor", "--json", "--no-plugins"],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
        check=False,
    )
    checks = json.loads(done.stdout)["checks"]
    return {c["item"]: c for c in checks if c["section"] == "System packages"}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="bubblewrap is the Linux sandbox")
def test_doctor_names_each_missing_system_package_and_how_to_install_it(
    tmp_path: Path, project: Path
) -> None:
    empty = tmp_path / "empty-path"
    empty.mkdir()
    src = str(Path(__file__).resolve().parent.parent / "src")
    env = _env(tmp_path, PATH=str(empty), PYTHONPATH=src)
    rows = _doctor_rows(env, project)
    assert {item: (row["value"], row["status"], row["detail"]) for item, row in rows.items()} == {
        "bubblewrap": (
            "not installed",
            "warn",
            "the sandbox of bash and run_code (without it: Landlock, when the kernel has it); install it: "
            "sudo apt-get install bubblewrap (Debian, Ubuntu), sudo dnf install bubblewrap (Fedora)",
        ),
        "git": (
            "not installed",
            "warn",
            "the model's bash commands that run git fail; install it: sudo apt-get install git (Debian, "
            "Ubuntu), sudo dnf install git (Fedora), brew install git (macOS)",
        ),
    }
    bwrap, git = shutil.which("bwrap"), shutil.which("git")
    if bwrap is None or git is None:
        pytest.skip("bubblewrap or git is not installed here: the rows of present packages are not checked")
    rows = _doctor_rows(_env(tmp_path, PYTHONPATH=src), project)
    assert (rows["git"]["value"], rows["git"]["status"], rows["git"]["detail"]) == ("found", "ok", git)
    assert rows["bubblewrap"]["value"] in ("works", "installed, does not run")
    assert rows["bubblewrap"]["detail"].startswith(bwrap)
