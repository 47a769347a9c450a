"""Harbor's generic ACP route (``harbor run -a acp -m MODEL``) against ``steerable acp`` (issue 30 item 3).

Harbor's own ACP runner (``harbor.agents.installed.acp_runner``, the program it starts in the task
container) drives a real ``steerable acp``. It sets a model only through an advertised mechanism,
and only to an offered value: the model it asks for (``HARBOR_ACP_REQUESTED_MODEL``) must be
offered and then reach the server. The trial's tokens come from the prompt response's ``usage``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fake_openai import FakeOpenAI


@pytest.mark.parametrize(
    ("requested", "more", "resolved"),
    [
        ("openai/gpt-4.1", "gpt-4.1", "gpt-4.1"),  # offered with --models
        ("openai/gpt-4o", None, "gpt-4o"),  # STEERABLE_MODEL
        ("openai/requested-model", None, "requested-model"),  # offered as Harbor asked for it
        ("openrouter/acme/coder", None, "acme/coder"),  # LiteLLM's provider part dropped
    ],
)
def test_harbors_acp_runner_selects_the_model_and_reads_usage(
    tmp_path: Path, fake_openai: FakeOpenAI, requested: str, more: str | None, resolved: str
) -> None:
    fake_openai.script(
        [
            {
                "tool_calls": [{"id": "c1", "name": "bash", "arguments": {"command": "echo hi > hi.txt"}}],
                "usage": {"prompt_tokens": 210, "completion_tokens": 12},
            },
            {"text": "Done.", "usage": {"prompt_tokens": 260, "completion_tokens": 3}},
        ]
    )
    workspace, logs = tmp_path / "app", tmp_path / "logs"
    workspace.mkdir()
    launcher = tmp_path / "steerable-acp"
    steerable = Path(sys.prefix) / "bin" / "steerable"
    models = f" --models {more}" if more else ""
    launcher.write_text(
        f"#!/bin/sh\nexec {steerable} acp --no-plugins --state-dir {tmp_path / 'state'}{models}\n"
    )
    launcher.chmod(0o755)
    env = {
        **os.environ,
        "HARBOR_ACP_REQUESTED_MODEL": requested,
        "STEERABLE_PROVIDER": "openai",
        "STEERABLE_BASE_URL": fake_openai.base_url,
        "STEERABLE_API_KEY": "sk-acp",
        "STEERABLE_MODEL": "gpt-4o",
        "STEERABLE_CONFIG": "off",
    }
    done = subprocess.run(
        [sys.executable, "-m", "harbor.agents.installed.acp_runner", "--instruction", "write hi.txt",
         "--logs-dir", str(logs), "--launcher", str(launcher)],
        cwd=workspace, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    summary = json.loads((logs / "acp-summary.json").read_text())
    assert done.returncode == 0, (summary.get("error"), done.stderr[-2000:])
    assert summary["set_model_mechanism"] == "session_config_option"
    assert (summary["resolved_session_model_id"], summary.get("set_model_error")) == (resolved, None)
    assert [r.body["model"] for r in fake_openai.requests] == [resolved] * 2
    assert summary["prompt_response"] == {
        "stopReason": "end_turn",
        "usage": {"inputTokens": 470, "outputTokens": 15, "totalTokens": 485},
    }
    assert (workspace / "hi.txt").read_text() == "hi\n"
