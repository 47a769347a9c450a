"""``SidecarClient.on_approval``: only ``True`` approves, as on the sidecar's own side (MODE-5)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from steerable_sidecar.sidecar._client import SidecarClient


async def _scripted_sidecar(tmp_path: Path, turns: list[Any], **env: str) -> SidecarClient:
    """A sidecar on ``tmp_path`` whose scripted model plays ``turns``, ``env`` added to a clean one."""
    script = tmp_path / "turns.json"
    script.write_text(json.dumps(turns))
    clean = {k: v for k, v in os.environ.items() if not k.startswith("STEERABLE_")}
    clean |= {"STEERABLE_PROVIDER": "scripted", "STEERABLE_SCRIPT": str(script), **env}
    return await SidecarClient.start(
        workspace=tmp_path,
        env=clean,
        args=["--no-web-tools", "--no-plugins"],
        state_dir=tmp_path.parent / f"{tmp_path.name}-state",
    )


@pytest.mark.parametrize(("answer", "ran"), [(True, True), ("no", False), (1, False), (None, False)])
async def test_only_true_approves_a_local_call(tmp_path: Path, answer: Any, ran: bool) -> None:
    call = {"id": "b1", "name": "bash", "arguments": {"command": "echo ran > marker.txt"}}
    asked: list[tuple[str, str]] = []
    async with await _scripted_sidecar(tmp_path, [{"tool_calls": [call]}, "done"]) as sidecar:

        async def approve(call: dict[str, Any], mode: str) -> Any:
            asked.append((call["name"], mode))
            return answer

        sidecar.on_approval = approve
        handle = sidecar.start_chat("run it")
        summary = await handle.result()
    assert summary["outcome"] == "completed" and asked == [("bash", "local")]
    result = next(e["result"] for e in handle.events_seen if e["type"] == "tool_result")
    assert (tmp_path / "marker.txt").exists() is ran
    if not ran:
        assert result["data"] == {"code": "consent_denied", "mode": "local"}


async def test_a_chat_in_ask_consent_asks_before_a_write_and_steerable_consent_is_the_default(
    tmp_path: Path,
) -> None:
    """MODE-5: ``consent="ask"`` puts an edit to the host; ``STEERABLE_CONSENT=read-only`` refuses a
    command in a chat that names none, without asking."""
    write = {"id": "w1", "name": "write_file", "arguments": {"path": "new.txt", "content": "x\n"}}
    bash = {"id": "b1", "name": "bash", "arguments": {"command": "echo ran > marker.txt"}}
    turns: list[Any] = [{"tool_calls": [write]}, "done", {"tool_calls": [bash]}, "done"]
    asked: list[tuple[str, str]] = []
    async with await _scripted_sidecar(tmp_path, turns, STEERABLE_CONSENT="read-only") as sidecar:

        async def approve(call: dict[str, Any], mode: str) -> Any:
            asked.append((call["name"], mode))
            return True

        sidecar.on_approval = approve
        await sidecar.chat("write it", consent="ask")
        refused = sidecar.start_chat("run it")
        await refused.result()
    assert asked == [("write_file", "safe_write")]
    assert (tmp_path / "new.txt").read_text() == "x\n"
    result = next(e["result"] for e in refused.events_seen if e["type"] == "tool_result")
    assert result["data"] == {"code": "consent_denied", "mode": "local", "policy": "read-only"}
    assert not (tmp_path / "marker.txt").exists()
