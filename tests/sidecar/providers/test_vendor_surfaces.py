"""The vendor round trips and honest endings through every surface a user drives (issue 29).

``steerable run`` (a real process; exit codes and the summary line), the sidecar's
``agent.chat.stream`` (a real sidecar process through :class:`SidecarClient`), ``steerable acp``
(a real process under the ACP SDK's client: the stop reason an editor shows) and ``steerable
doctor`` (the profile it names). The model is the loopback server of ``tests/fake_openai.py``
enforcing each vendor's rules (``tests/vendor_rules.py``); round-1 streams come from
``vendor_streams.py``.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import vendor_streams as streams
from acp_client import EditorClient, spawn_acp, start
from run_helpers import summary_of

from fake_openai import FakeOpenAI
from steerable_sidecar.sidecar._client import SidecarClient

Run = Callable[..., subprocess.CompletedProcess[str]]
Env = Callable[..., dict[str, str]]
KEY = "sk-vendor-surface-0123456789"


def vendor_env(fake: FakeOpenAI, child_env: Env, provider: str, model: str, **extra: str) -> dict[str, str]:
    return child_env(
        STEERABLE_PROVIDER=provider,
        STEERABLE_MODEL=model,
        STEERABLE_BASE_URL=fake.base_url,
        STEERABLE_API_KEY=KEY,
        **extra,
    )


def run_in(
    workspace: Path, run_cli: Run, env: dict[str, str], *flags: str
) -> subprocess.CompletedProcess[str]:
    return run_cli(
        "run", "--workspace", str(workspace), "--quiet", "--no-plugins", "--no-web-tools",
        "--state-dir", str(workspace.parent / "state"), "--instruction", "what do the notes say?", *flags,
        **env,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("provider", "model", "first"),
    [
        ("gemini", "gemini-3-pro-preview", streams.gemini()),
        ("moonshot", "kimi-k2.5", streams.moonshot()),
        ("deepseek", "deepseek-v4", streams.deepseek_empty_reasoning()),
        ("mistral", "devstral-small", streams.mistral_without_id()),
        ("groq", "openai/gpt-oss-20b", streams.groq()),
    ],
)
def test_steerable_run_finishes_with_each_vendor(
    fake_openai: FakeOpenAI,
    workspace: Path,
    run_cli: Run,
    child_env: Env,
    provider: str,
    model: str,
    first: Any,
) -> None:
    fake_openai.vendor = provider
    fake_openai.script([first, "alpha and beta."])
    proc = run_in(workspace, run_cli, vendor_env(fake_openai, child_env, provider, model))
    summary = summary_of(proc)
    assert (proc.returncode, summary["outcome"], summary["text"]) == (0, "completed", "alpha and beta."), (
        proc.stderr
    )
    assert len(fake_openai.requests) == 2
    tool = next(m for m in fake_openai.requests[1].body["messages"] if m["role"] == "tool")
    assert json.loads(tool["content"])["success"] is True  # read_file really ran on notes.txt


@pytest.mark.parametrize(
    ("provider", "first", "code", "outcome", "error"),
    [
        ("openai", streams.refusal(), 7, "refused", "the model refused: I'm sorry, I can't help with that."),
        ("vllm", streams.vllm_abort(), 4, "error", "finish_reason abort"),
        ("minimax", streams.minimax_stream_error(), 4, "error", "output new_sensitive (status_code 1027)"),
    ],
)
def test_steerable_run_ends_honestly(
    fake_openai: FakeOpenAI,
    workspace: Path,
    run_cli: Run,
    child_env: Env,
    provider: str,
    first: Any,
    code: int,
    outcome: str,
    error: str,
) -> None:
    fake_openai.script([first])
    proc = run_in(workspace, run_cli, vendor_env(fake_openai, child_env, provider, "m"))
    summary = summary_of(proc)
    assert (proc.returncode, summary["outcome"], summary["exitCode"]) == (code, outcome, code), proc.stderr
    assert error in summary["error"]


def test_steerable_run_flags_set_the_request(
    fake_openai: FakeOpenAI, workspace: Path, run_cli: Run, child_env: Env
) -> None:
    fake_openai.script(["ok"])
    env = vendor_env(fake_openai, child_env, "openai", "qwen3", STEERABLE_MAX_TOKENS="4096")
    proc = run_in(
        workspace,
        run_cli,
        env,
        "--max-tokens",
        "300",
        "--temperature",
        "0.1",
        "--thinking",
        "off",
        "--profile",
        "vllm",
    )
    assert proc.returncode == 0, proc.stderr
    body = fake_openai.requests[0].body
    assert body["max_tokens"] == 300 and body["temperature"] == 0.1  # the flag wins over the variable
    assert body["chat_template_kwargs"] == {"enable_thinking": False}  # --profile vllm's switch


def test_steerable_run_names_a_bad_setting(workspace: Path, run_cli: Run, child_env: Env) -> None:
    env = child_env(STEERABLE_PROVIDER="lm-studio", STEERABLE_MODEL="m")
    proc = run_in(workspace, run_cli, env, "--thinking", "high")
    assert proc.returncode == 2
    assert (
        "STEERABLE_THINKING is set, but the lm-studio profile knows no way to switch thinking" in proc.stderr
    )
    proc = run_in(workspace, run_cli, env, "--temperature", "hot")
    assert proc.returncode == 2 and "STEERABLE_TEMPERATURE='hot' is not a number" in proc.stderr


async def test_sidecar_chat_round_trips_gemini(
    fake_openai: FakeOpenAI, tmp_path: Path, child_env: Env
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("alpha\nbeta\n")
    fake_openai.vendor = "gemini"
    fake_openai.script([streams.gemini(), "alpha and beta."])
    env = vendor_env(fake_openai, child_env, "gemini", "gemini-3-pro-preview")
    async with await SidecarClient.start(workspace=ws, state_dir=tmp_path / "state", env=env) as sidecar:
        handle = sidecar.start_chat("what do the notes say?", session_id="gem")
        _ = [event async for event in handle.events()]
        summary = await handle.result()
    assert summary["outcome"] == "completed" and summary["text"] == "alpha and beta."
    record = (tmp_path / "state" / "sessions" / "gem.jsonl").read_text()
    assert streams.SIGNATURE in record  # kept in the durable record, so a resume sends it again


async def test_sidecar_chat_reports_a_refusal(
    fake_openai: FakeOpenAI, tmp_path: Path, child_env: Env
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    fake_openai.script([streams.refusal()])
    env = vendor_env(fake_openai, child_env, "openai", "gpt-4o")
    async with await SidecarClient.start(workspace=ws, state_dir=tmp_path / "state", env=env) as sidecar:
        handle = sidecar.start_chat("do something bad")
        _ = [event async for event in handle.events()]
        summary = await handle.result()
    assert summary["outcome"] == "refused"
    assert summary["error"] == "the model refused: I'm sorry, I can't help with that."


@pytest.mark.slow
@pytest.mark.parametrize(
    ("provider", "turns", "stop"),
    [
        ("openai", [streams.refusal()], "refusal"),
        ("gemini", [streams.gemini(), "alpha and beta."], "end_turn"),
    ],
)
async def test_acp_stop_reasons(
    fake_openai: FakeOpenAI,
    workspace: Path,
    tmp_path: Path,
    child_env: Env,
    provider: str,
    turns: list[Any],
    stop: str,
) -> None:
    from acp.schema import TextContentBlock

    fake_openai.vendor = provider if provider != "openai" else None
    fake_openai.script(turns)
    env = vendor_env(fake_openai, child_env, provider, "m")
    client = EditorClient()
    async with spawn_acp(client, env, "--no-plugins", "--state-dir", str(tmp_path / "state")) as (conn, _):
        await start(conn)
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        answer = await conn.prompt(
            session_id=session.session_id, prompt=[TextContentBlock(type="text", text="notes?")]
        )
    assert answer.stop_reason == stop


def test_doctor_names_the_profile_and_why(run_cli: Run, child_env: Env, workspace: Path) -> None:
    env = child_env(
        STEERABLE_MODEL="llama-3.3-70b-versatile",
        STEERABLE_BASE_URL="https://api.groq.com/openai/v1",
        STEERABLE_API_KEY=KEY,
        STEERABLE_EXTRA_HEADERS='{"X-Gateway-Key": "secret-value-123"}',
    )
    proc = run_cli("doctor", "--json", "--no-plugins", "--workspace", str(workspace), **env)
    rows = {(r["section"], r["item"]): r for r in json.loads(proc.stdout)["checks"]}
    profile = rows[("Model provider", "profile")]
    assert (profile["value"], profile["detail"]) == ("groq", "chosen by host api.groq.com")
    assert rows[("Model provider", "max tokens")]["value"] == "8192"
    assert rows[("Model provider", "extra headers")]["value"] == "X-Gateway-Key"
    assert "secret-value-123" not in proc.stdout
