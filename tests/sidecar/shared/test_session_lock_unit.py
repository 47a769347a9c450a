"""REC-3 pieces in this process: one opener per session (the processes' tests: test_session_lock.py)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest

from steerable_agent_runtime.errors import ConfigError
from steerable_sidecar.shared._session_lock import SessionLocks


def test_a_second_opener_is_refused_naming_the_first_rec_3(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "argv", ["/venv/bin/steerable", "run", "--session-id", "s1", "x" * 300])
    first, second = SessionLocks(tmp_path / "sessions"), SessionLocks(tmp_path / "sessions")
    assert first.hold("s1") is None and first.holds("s1")
    assert first.hold("s1") is None  # already held here: nothing to do
    holder = second.hold("s1")
    assert holder is not None and holder.pid == os.getpid()
    assert holder.command.startswith("steerable run --session-id s1 xxx") and holder.command.endswith("…")
    assert holder.message().startswith(
        f"session 's1' is open in another steerable process (pid {os.getpid()}: "
    )
    first.release_all()
    assert not first.holds("s1") and second.hold("s1") is None
    second.release("s1")


def test_a_lock_file_naming_a_dead_or_no_process_names_nobody_rec_3(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("steerable_sidecar.shared._session_lock._HOLDER_WAIT_S", 0.05)
    first, second = SessionLocks(tmp_path / "sessions"), SessionLocks(tmp_path / "sessions")
    assert first.hold("s2") is None
    lock = next((tmp_path / "sessions").glob("*.lock"))
    for written in (json.dumps({"pid": 2**22 + 7, "command": "gone"}), "not json", "[1]"):
        lock.write_text(written)
        holder = second.hold("s2")
        assert holder is not None and holder.pid is None
        assert holder.message() == (
            "session 's2' is open in another steerable process; wait for it to end, or use another session id"
        )
    first.release("s2")


async def test_taking_it_from_the_loop_and_a_state_folder_in_the_way_rec_3(tmp_path: Path) -> None:
    locks = SessionLocks(tmp_path / "sessions")
    assert await locks.take("s3") is None and locks.holds("s3")
    locks.release_all()
    (tmp_path / "file").write_text("")
    with pytest.raises(ConfigError) as refused:
        await asyncio.wait_for(SessionLocks(tmp_path / "file" / "sessions").take("s4"), 5)
    assert "cannot be opened" in str(refused.value) and "--state-dir" in str(refused.value)
