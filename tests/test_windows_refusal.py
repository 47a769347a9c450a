"""Issue 32, item 7: on Windows steerable refuses at start, in one sentence (README, "Install").

Windows is played by a child process that sets ``sys.platform = "win32"`` and makes ``import fcntl``
fail (``sys.modules["fcntl"] = None``, as there) before steerable is imported: from its own code, or
from a ``sitecustomize`` module for the command's real entry points. The ``steerable`` command
prints the sentence and exits 2, without a traceback; ``import steerable_agent_runtime`` (and
``import steerable_sidecar`` in a program of one's own) raises :class:`ImportError` with it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import steerable_sidecar

SENTENCE = (
    "steerable: Windows is not supported yet: the file tools need POSIX file locks and bash needs a "
    "Linux or macOS sandbox; use WSL"
)
WINDOWS = 'import sys\nsys.platform = "win32"\nsys.modules["fcntl"] = None\n'
"""What makes this process look like Windows to steerable."""
SRC = str(Path(steerable_sidecar.__file__).resolve().parents[1])


def _env(*path: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STEERABLE_")}
    env["PYTHONPATH"] = os.pathsep.join([*path, SRC])
    return env


def _run(argv: list[str], tmp_path: Path, *path: str) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` in a folder of its own (a path entry naming it would be dropped, with a warning)."""
    cwd = tmp_path / "work"
    cwd.mkdir(exist_ok=True)
    return subprocess.run(
        argv, capture_output=True, text=True, env=_env(*path), cwd=cwd, timeout=60, check=False
    )


@pytest.mark.parametrize("package", ["steerable_agent_runtime", "steerable_sidecar"])
def test_importing_steerable_on_windows_raises_import_error_with_the_sentence(
    tmp_path: Path, package: str
) -> None:
    code = WINDOWS + f"try:\n    import {package}\nexcept ImportError as exc:\n    print(exc)\n"
    done = _run([sys.executable, "-P", "-c", code], tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (0, SENTENCE + "\n", "")


def test_the_console_script_on_windows_says_why_and_exits_2(tmp_path: Path) -> None:
    """What pip's ``steerable`` script does (``from steerable_sidecar.cli._main import main``), as ``steerable tools``."""
    code = WINDOWS + (
        "sys.argv = ['/home/me/.local/bin/steerable', 'tools']\n"
        "from steerable_sidecar.cli._main import main\n"
        "sys.exit(main())\n"
    )
    done = _run([sys.executable, "-P", "-c", code], tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (2, "", SENTENCE + "\n")


def test_the_command_entry_points_on_windows_say_why_and_exit_2(tmp_path: Path) -> None:
    """``python -m steerable_sidecar tools`` and, when installed, the ``steerable`` script itself."""
    windows = tmp_path / "windows"
    windows.mkdir()
    (windows / "sitecustomize.py").write_text(WINDOWS, encoding="utf-8")
    done = _run([sys.executable, "-P", "-m", "steerable_sidecar", "tools"], tmp_path, str(windows))
    assert (done.returncode, done.stdout, done.stderr) == (2, "", SENTENCE + "\n")
    script = shutil.which("steerable", path=str(Path(sys.executable).parent))
    if script is not None:  # the venv's console script (the README's install gives one)
        done = _run([script, "call", "read_file", '{"path": "x"}'], tmp_path, str(windows))
        assert (done.returncode, done.stdout, done.stderr) == (2, "", SENTENCE + "\n")
