"""``SidecarClient.on_approval``: only ``True`` approves, as on the sidecar's own side (MODE-5)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from steerable_sidecar.client import SidecarClient


@pytest.mark.parametrize(("answer", "ran"), [(True, True), ("no", False), (1, False), (None, False)])
async def test_only_true_approves_a_local_call(tmp_path: Path, answer: Any, ran: bool) -> None:
    script = tmp_path / "turns.json"
    call = {"id": "b1", "name": "bash", "arguments": {"command": "echo ran > marker.txt"}}
    script.write_text(json.dumps([{"tool_calls": [call]}, "done"]))
    env = {k: v for k, v in os.environ.items() if not k.startswith("STEERABLE_")}
    env |= {"STEERABLE_PROVIDER": "scripted", "STEERABLE_SCRIPT": str(script)}
    asked: list[tuple[str, str]] = []
    async with await SidecarClient.start(
        workspace=tmp_path, env=env, args=["--no-web-tools", "--no-plugins"], state_dir=tmp_path / "state"
    ) as sidecar:

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
