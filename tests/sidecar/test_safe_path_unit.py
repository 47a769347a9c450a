"""SAFE-1: how steerable finds the sys.path entries naming its workspace (the launches are in test_launch_paths.py)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from steerable_sidecar import _safe_path


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["-w", "/ws", "call"], "/ws"),
        (["-w/ws"], "/ws"),
        (["--workspace", "/ws"], "/ws"),
        (["--workspace=/ws"], "/ws"),
        (["run", "--cwd", "/a", "--cwd=/b"], "/b"),  # the last wins, as with argparse
        (["call", "--", "-w", "/not"], None),
        (["tools", "--json"], None),
        (["-w"], None),
    ],
)
def test_the_workspace_is_read_off_the_command_line_before_argparse_safe_1(
    argv: list[str], named: str | None
) -> None:
    assert _safe_path.named_workspace(argv) == named


def test_entries_inside_the_workspace_go_but_the_interpreters_own_and_steerables_safe_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lib = tmp_path / "lib"
    lib.mkdir()
    own = os.path.dirname(os.path.dirname(os.path.realpath(_safe_path.__file__)))
    monkeypatch.setattr(sys, "path", [str(lib), str(tmp_path), own, "/usr/lib/python3", str(tmp_path / "x")])
    assert _safe_path.workspace_entries(str(tmp_path)) == [str(lib), str(tmp_path), str(tmp_path / "x")]
    monkeypatch.setattr(sys, "prefix", str(tmp_path))  # a .venv inside the workspace: the interpreter's
    assert _safe_path.workspace_entries(str(tmp_path)) == []


def test_only_steerables_own_process_drops_them_safe_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "path", [str(tmp_path / "lib"), "/usr/lib/python3"])
    monkeypatch.setattr(sys, "argv", ["/usr/bin/embedder"])
    assert not _safe_path.own_process()
    assert _safe_path.drop_entries_inside(str(tmp_path)) == []
    assert sys.path == [str(tmp_path / "lib"), "/usr/lib/python3"]
    monkeypatch.setattr(sys, "argv", ["/x/site-packages/steerable_sidecar/__main__.py", "mcp"])
    assert _safe_path.own_process()
    assert _safe_path.drop_entries_inside(str(tmp_path)) == [str(tmp_path / "lib")]
    assert sys.path == ["/usr/lib/python3"]
    assert "they name the workspace" in capsys.readouterr().err


def test_the_current_directory_and_pythonpath_inside_it_safe_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(["src", "/elsewhere"]))
    monkeypatch.setattr(sys, "path", ["", str(tmp_path / "src"), "/elsewhere"])
    assert _safe_path.workspace_entries() == ["", str(tmp_path / "src")]
