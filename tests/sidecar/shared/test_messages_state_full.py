"""A full state directory is said with the file, the cause and the settings that move it.

A real 64 KiB tmpfs is the state directory (root mounts it; the tests skip where mounting is not
permitted): ``steerable run`` with the scripted provider fills it mid-run, and the spill store and
the write-journal key meet a disk already full.
"""

from __future__ import annotations

import errno
import json
import logging
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from run_helpers import summary_of

from mounts import tmpfs
from steerable_agent_runtime.record import StateWriteError
from steerable_agent_runtime.spill import SpillHooks
from steerable_agent_runtime.types import ToolCall, ToolResult
from steerable_agent_runtime.workspace._seal import journal_key

FIX = "free space there, or put steerable's state directory on another disk with --state-dir or STEERABLE_STATE_DIR"


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs mounted at ``tmp_path / "state"``, unmounted afterwards."""
    with tmpfs(tmp_path / "state", "size=64k,mode=0700") as mount:
        yield mount


def _fill(directory: Path) -> None:
    """Write ``directory``'s disk full (the filler file stays)."""
    fd = os.open(directory / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError as exc:
        assert exc.errno == errno.ENOSPC
    finally:
        os.close(fd)


def test_a_run_that_fills_the_state_directory_says_which_file_and_what_to_do(
    small_disk: Path, run_cli: Callable[..., Any], workspace: Path, tmp_path: Path
) -> None:
    script = tmp_path / "turns.json"
    answer = "done " + "x" * 200_000  # more than the disk holds: its record line cannot be written
    script.write_text(
        json.dumps([{"tool_calls": [{"name": "list_dir", "arguments": {"path": "."}}]}, answer])
    )
    proc = run_cli(
        "run",
        "-w",
        str(workspace),
        "--instruction",
        "look",
        "--no-web-tools",
        "--quiet",
        "--session-id",
        "full",
        STEERABLE_PROVIDER="scripted",
        STEERABLE_SCRIPT=str(script),
        STEERABLE_STATE_DIR=str(small_disk),
    )
    record = small_disk / "sessions" / "full.jsonl"
    message = f"cannot write the session record {record}: the disk is full (No space left on device); {FIX}"
    assert proc.returncode == 70
    assert summary_of(proc) == {"outcome": "internal_error", "error": message, "exitCode": 70}
    assert proc.stderr.strip().splitlines()[-1] == f"steerable run: {message}"
    assert "Traceback" not in proc.stderr  # a full disk is not a bug
    # what reached the disk before is whole: no torn line for the next run to cut off
    text = record.read_text()
    assert text.endswith("\n") and all(json.loads(line) for line in text.splitlines())


async def test_a_spill_into_a_full_state_directory_names_the_file(small_disk: Path) -> None:
    spills = small_disk / "sessions" / "s.spill"
    spills.mkdir(parents=True)
    _fill(small_disk)
    hooks = SpillHooks(spills, threshold_bytes=10)
    with pytest.raises(StateWriteError) as info:
        await hooks.apply(
            ToolCall(id="c1", name="t", arguments={}), ToolResult.ok(data={"big": "y" * 10_000})
        )
    assert info.value.errno == errno.ENOSPC and info.value.filename.startswith(f"{spills}/c1-")
    assert str(info.value) == (
        f"cannot write a spilled tool result {info.value.filename}: the disk is full (No space left on "
        f"device); {FIX}"
    )
    assert [p.name for p in spills.iterdir()] == []  # the half-written body is gone


def test_a_journal_key_that_cannot_be_written_is_logged_with_the_file(
    small_disk: Path, caplog: pytest.LogCaptureFixture
) -> None:
    keys = small_disk / "keys"
    keys.mkdir()
    _fill(small_disk)
    with caplog.at_level(logging.WARNING):
        assert journal_key(keys) is None
    assert caplog.messages == [
        f"steerable: no write-journal key (cannot write the write-journal key {keys}/journal.key: the disk "
        f"is full (No space left on device); {FIX}): crash recovery is off in this process, and "
        "interrupted writes and commands are left as they are"
    ]
