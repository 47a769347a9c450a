"""Vendor stream shapes replayed byte for byte over loopback HTTP (tests/fake_openai.py).

Errors a stream carries (llama.cpp's ``error:`` line, vLLM's and others' error objects), the legacy
``function_call`` delta, vendors' finish reasons, and error bodies nested too deeply to parse: each
through the provider, and through ``steerable run`` for its exit code, summary and stderr line.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr
from run_helpers import summary_of

from fake_openai import FakeOpenAI
from steerable_agent_runtime import ToolCall
from steerable_agent_runtime.errors import ProviderError
from steerable_agent_runtime.llm import ChatRequest
from steerable_sidecar.providers._openai import LLMConfig, OpenAICompatibleProvider

HELLO = ChatRequest(messages=[{"role": "user", "content": "hi"}])
DONE = b"data: [DONE]\n\n"

# llama.cpp's server (tools/server): a failure after the 200 is an "error:" field, then [DONE]
LLAMA_CPP_CONTEXT = (
    b'error: {"code":400,"message":"the request exceeds the available context size, try increasing it",'
    b'"type":"exceed_context_size_error","n_prompt_tokens":5000,"n_ctx":4096}\n\n' + DONE
)
LLAMA_CPP_MESSAGE = (
    "the provider reported an error mid-stream: the request exceeds the available context size, "
    "try increasing it (exceed_context_size_error)"
)
# vLLM's OpenAI server: an ErrorResponse object as a data event
VLLM_ERROR = (
    b'data: {"object":"error","message":"This model\'s maximum context length is 4096 tokens.",'
    b'"type":"BadRequestError","param":null,"code":400}\n\n' + DONE
)


def sse_chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
    body = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "m", "choices": [choice]}
    return f"data: {json.dumps(body, ensure_ascii=False)}\n\n".encode()


@pytest.fixture
async def ollama(fake_openai: FakeOpenAI):
    config = LLMConfig(provider="ollama", model="m", base_url=fake_openai.base_url, request_timeout_ms=5_000)
    async with OpenAICompatibleProvider(config, max_retries=0) as provider:
        yield provider


def where(fake: FakeOpenAI) -> str:
    return f"ollama at {fake.base_url}"


# -- errors inside the stream ---------------------------------------------------------------------


async def test_a_llama_cpp_error_line_is_a_provider_error_with_its_message(fake_openai, ollama):
    fake_openai.script([{"raw_sse": [LLAMA_CPP_CONTEXT], "split_bytes": 7}])
    with pytest.raises(ProviderError) as info:
        await ollama.complete(HELLO)
    assert str(info.value) == f"{where(fake_openai)}: {LLAMA_CPP_MESSAGE}"
    assert (info.value.status, info.value.retryable) == (400, False)


async def test_a_llama_cpp_error_in_a_slow_drip_is_a_provider_error(fake_openai, ollama):
    fake_openai.script([{"raw_sse": [LLAMA_CPP_CONTEXT], "split_bytes": 16, "drip_ms": 5}])
    with pytest.raises(ProviderError) as info:
        await ollama.complete(HELLO)
    assert str(info.value) == f"{where(fake_openai)}: {LLAMA_CPP_MESSAGE}"


async def test_a_llama_cpp_error_split_inside_utf8_characters_keeps_its_message(fake_openai, ollama):
    line = 'error: {"code":400,"message":"contexte dépassé ☕ 上下文","type":"exceed_context_size_error"}\n\n'
    fake_openai.script([{"raw_sse": [line.encode(), DONE], "split_bytes": 1}])
    with pytest.raises(ProviderError) as info:
        await ollama.complete(HELLO)
    assert str(info.value) == (
        f"{where(fake_openai)}: the provider reported an error mid-stream: "
        "contexte dépassé ☕ 上下文 (exceed_context_size_error)"
    )


@pytest.mark.parametrize(
    ("body", "message", "status", "retryable"),
    [
        pytest.param(
            VLLM_ERROR,
            "This model's maximum context length is 4096 tokens. (BadRequestError)",
            400,
            False,
            id="vllm object error",
        ),
        pytest.param(
            b'data: {"code": 500, "message": "model crashed"}\n\n' + DONE,
            "model crashed",
            500,
            True,
            id="code",
        ),
        pytest.param(
            b'data: {"error": "model not loaded"}\n\n' + DONE, "model not loaded", None, False, id="text"
        ),
        pytest.param(
            sse_chunk({"content": "par"}) + b'data: {"error": {"message": "upstream gone", "code": 502}}\n\n',
            "upstream gone",
            502,
            True,
            id="after output",
        ),
        pytest.param(b"event: error\ndata: overloaded\n\n", "overloaded", None, False, id="text error event"),
    ],
)
async def test_error_objects_in_data_events_are_provider_errors(
    fake_openai, ollama, body, message, status, retryable
):
    fake_openai.script([{"raw_sse": [body]}])
    with pytest.raises(ProviderError) as info:
        await ollama.complete(HELLO)
    assert str(info.value) == f"{where(fake_openai)}: the provider reported an error mid-stream: {message}"
    assert (info.value.status, info.value.retryable) == (status, retryable)


async def test_a_vllm_error_object_answered_as_json_is_a_provider_error(fake_openai, ollama):
    error = {"object": "error", "message": "bad model", "type": "NotFoundError", "param": None, "code": 404}
    fake_openai.script([{"status": 200, "body": error}])
    with pytest.raises(ProviderError) as info:
        await ollama.complete(HELLO)
    assert str(info.value) == (
        f"{where(fake_openai)}: the provider reported an error mid-stream: bad model (NotFoundError)"
    )


async def test_a_chunk_that_is_not_json_names_the_provider_and_base_url(fake_openai, ollama):
    fake_openai.script([{"raw_sse": [b"data: {not json\n\n", DONE]}])
    with pytest.raises(ProviderError) as info:
        await ollama.complete(HELLO)
    assert str(info.value) == f"{where(fake_openai)}: the provider sent a body that is not JSON: {{not json"


# -- error bodies nested too deeply ---------------------------------------------------------------


async def test_an_error_body_nested_too_deeply_is_a_provider_error_not_a_crash(fake_openai, ollama):
    fake_openai.script([{"status": 400, "body": "[" * 100_000}])
    with pytest.raises(ProviderError) as info:
        await ollama.complete(HELLO)
    assert str(info.value) == f"{where(fake_openai)} answered HTTP 400: {'[' * 497}..."
    assert info.value.status == 400


async def test_a_chunk_nested_too_deeply_is_a_provider_error(fake_openai, ollama):
    fake_openai.script([{"raw_sse": [b"data: " + b"[" * 100_000 + b"\n\n", DONE]}])
    with pytest.raises(ProviderError, match=r"the provider sent JSON nested too deeply to read: \[\[\["):
        await ollama.complete(HELLO)


@pytest.mark.parametrize("location", ["mailto:x@y", "javascript:alert(1)", "data:text/plain,hi"])
async def test_a_redirect_to_a_non_http_url_is_a_provider_error(fake_openai, ollama, location):
    fake_openai.script([{"status": 302, "body": "", "headers": {"Location": location}}])
    with pytest.raises(ProviderError) as info:
        await ollama.complete(HELLO)
    assert str(info.value) == (
        f"{where(fake_openai)}: the server redirected to a Location that is not an http(s) URL "
        "(a mailto:, javascript:, data: or other URL without a host)"
    )


# -- the legacy function_call delta ---------------------------------------------------------------


LEGACY_CALL = (
    sse_chunk({"role": "assistant", "content": None, "function_call": {"name": "read_file", "arguments": ""}})
    + sse_chunk({"function_call": {"arguments": '{"path": "'}})
    + sse_chunk({"function_call": {"arguments": 'café ☕.txt"'}})
    + sse_chunk({"function_call": {"arguments": "}"}})
    + sse_chunk({}, "function_call")
    + DONE
)


async def test_a_legacy_function_call_streamed_in_pieces_is_one_tool_call(fake_openai, ollama):
    fake_openai.script([{"raw_sse": [LEGACY_CALL], "split_bytes": 1}])
    response = await ollama.complete(HELLO)
    assert len(response.tool_calls) == 1
    call = response.tool_calls[0]
    assert isinstance(call, ToolCall)
    assert (call.name, call.arguments) == ("read_file", {"path": "café ☕.txt"})
    assert call.id  # given one: the legacy shape has none
    assert response.finish_reason == "function_call"
    assert response.assistant_message()["tool_calls"][0]["id"] == call.id


# -- finish reasons ---------------------------------------------------------------------------------


@pytest.mark.parametrize("reason", ["length", "content_filter", "sensitive", "stop"])
async def test_finish_reasons_are_reported_as_sent(fake_openai, ollama, reason):
    fake_openai.script([{"text": "partial", "finish_reason": reason}])
    assert (await ollama.complete(HELLO)).finish_reason == reason


@pytest.mark.parametrize(
    ("reason", "vendor"), [("network_error", "GLM"), ("insufficient_system_resource", "DeepSeek")]
)
async def test_vendor_failures_reported_as_finish_reasons_are_retryable_provider_errors(
    fake_openai, ollama, reason, vendor
):
    fake_openai.script([{"text": "", "finish_reason": reason}])
    with pytest.raises(ProviderError) as info:
        await ollama.complete(HELLO)
    assert str(info.value) == (
        f"{where(fake_openai)}: the model stopped on a failure at the provider (finish_reason {reason})"
    )
    assert info.value.retryable is True


async def test_a_network_error_finish_before_any_output_is_retried(fake_openai):
    config = LLMConfig(
        provider="glm", model="glm-4", base_url=fake_openai.base_url, api_key=SecretStr("k" * 20)
    )
    fake_openai.script([{"text": "", "finish_reason": "network_error"}, {"text": "fine"}])
    async with OpenAICompatibleProvider(config, retry_base_delay_ms=1) as provider:
        response = await provider.complete(HELLO)
    assert (response.text, response.finish_reason) == ("fine", "stop")


async def test_the_loop_events_carry_the_finish_reason(fake_openai, ollama, tmp_path):
    from steerable_agent_runtime import AgentLoop, DurableRecord, workspace_tools_for_cwd

    events: list[dict[str, Any]] = []
    fake_openai.script([{"text": "cut", "finish_reason": "length"}])
    record = DurableRecord(tmp_path / "s.jsonl")
    loop = AgentLoop(ollama, workspace_tools_for_cwd(tmp_path), record=record, on_event=events.append)
    summary = await loop.run([], "go")
    assert (summary.outcome.value, summary.finish_reason) == ("incomplete", "length")
    assistant = next(e for e in events if e["type"] == "assistant")  # agent.chat.event, as forwarded
    assert assistant["finishReason"] == "length"
    done = events[-1]["summary"]
    assert (done["outcome"], done["finishReason"]) == ("incomplete", "length")
    assert done["error"] == "the model's answer was cut off at its length limit (finish_reason length)"
    entries = record.entries()
    response = next(e["response"] for e in entries if e["type"] == "response")
    assert response.pop("at").endswith("+00:00")  # when it arrived, for trajectories
    assert response == {
        "round": 1,
        "finishReason": "length",
        "model": "m",
        "usage": {"promptTokens": 10, "completionTokens": 5, "totalTokens": 15},
    }
    assert entries[-1]["run"]["finishReason"] == "length"


# -- steerable run: exit codes, summaries, stderr ---------------------------------------------------


@pytest.fixture
def run_against(
    fake_openai: FakeOpenAI, tmp_path: Path, child_env: Callable[..., dict[str, str]]
) -> Callable[..., subprocess.CompletedProcess[str]]:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "café ☕.txt").write_text("hello\n")

    def run(turns: list[Any], provider: str = "ollama", *args: str) -> subprocess.CompletedProcess[str]:
        fake_openai.script(turns)
        env = child_env(
            STEERABLE_PROVIDER=provider,
            STEERABLE_MODEL="m",
            STEERABLE_BASE_URL=fake_openai.base_url,
            STEERABLE_API_KEY="sk-test-0123456789abcdef",
            STEERABLE_STATE_DIR=str(tmp_path / "state"),
        )
        return subprocess.run(
            [
                sys.executable,
                "-P",
                "-m",
                "steerable_sidecar",
                "run",
                "-w",
                str(ws),
                "--no-web-tools",
                "--no-plugins",
            ]
            + ["--instruction", "go", *args],
            capture_output=True,
            text=True,
            encoding="utf-8",
            env=env,
            stdin=subprocess.DEVNULL,
            timeout=60,
            check=False,
        )

    return run


def last_stderr_line(proc: subprocess.CompletedProcess[str]) -> str:
    return proc.stderr.strip().splitlines()[-1]


def test_run_a_llama_cpp_stream_error_exits_4_and_says_why(run_against, fake_openai):
    proc = run_against([{"raw_sse": [LLAMA_CPP_CONTEXT], "split_bytes": 5}])
    summary = summary_of(proc)
    assert (proc.returncode, summary["outcome"]) == (4, "error")
    assert summary["error"] == f"{where(fake_openai)}: {LLAMA_CPP_MESSAGE}"
    assert last_stderr_line(proc) == (
        f"error after 1 round(s), 0 tool call(s), 0 tokens: {where(fake_openai)}: {LLAMA_CPP_MESSAGE}"
    )


def test_run_a_model_endpoint_redirecting_to_mailto_exits_4_not_70(run_against, fake_openai):
    proc = run_against([{"status": 307, "body": "", "headers": {"Location": "mailto:x@y"}}])
    assert (proc.returncode, summary_of(proc)["outcome"]) == (4, "error"), proc.stderr
    assert "Traceback" not in proc.stderr


def test_run_an_error_body_nested_too_deeply_exits_4_not_70(run_against, fake_openai):
    proc = run_against([{"status": 400, "body": "[" * 100_000}])
    assert (proc.returncode, summary_of(proc)["outcome"]) == (4, "error"), proc.stderr
    assert "RecursionError" not in proc.stderr
    assert last_stderr_line(proc).startswith(
        f"error after 1 round(s), 0 tool call(s), 0 tokens: {where(fake_openai)} answered HTTP 400: [[["
    )


@pytest.mark.parametrize(
    ("provider", "reason", "problem"),
    [
        ("openai", "length", "the model's answer was cut off at its length limit"),
        ("ollama", "length", "the model's answer was cut off at its length limit"),  # done_reason length
        ("openai", "content_filter", "the model's answer was withheld by a content filter"),
        ("glm", "sensitive", "the model's answer was withheld by a content filter"),
    ],
)
def test_run_a_cut_off_or_filtered_answer_exits_5_incomplete(run_against, provider, reason, problem):
    proc = run_against([{"text": "Half an ans", "finish_reason": reason}], provider)
    summary = summary_of(proc)
    assert (proc.returncode, summary["outcome"], summary["exitCode"]) == (5, "incomplete", 5)
    assert (summary["finishReason"], summary["text"]) == (reason, "Half an ans")
    assert summary["error"] == f"{problem} (finish_reason {reason})"
    assert (
        last_stderr_line(proc)
        == f"incomplete after 1 round(s), 0 tool call(s), 15 tokens: {problem} (finish_reason {reason})"
    )


def test_run_tool_calls_of_a_cut_off_answer_do_not_run(run_against, fake_openai, tmp_path):
    call = {"id": "w", "name": "write_file", "arguments": '{"path": "new.txt", "content": "x"}'}
    proc = run_against([{"tool_calls": [call], "finish_reason": "length"}])
    summary = summary_of(proc)
    assert (proc.returncode, summary["outcome"], summary["toolCalls"]) == (5, "incomplete", 1)
    assert not (tmp_path / "ws" / "new.txt").exists()
    record = (tmp_path / "state" / "sessions" / f"{summary['sessionId']}.jsonl").read_text()
    tool = [
        json.loads(line)
        for line in record.splitlines()
        if '"role": "tool"' in line or '"role":"tool"' in line
    ]
    result = json.loads(tool[0]["message"]["content"])
    assert result["data"] == {"code": "incomplete_answer", "finishReason": "length"}
    assert result["needsFollowup"] is True


@pytest.mark.parametrize(
    ("provider", "reason"), [("glm", "network_error"), ("deepseek", "insufficient_system_resource")]
)
def test_run_a_vendor_failure_finish_reason_exits_4(run_against, fake_openai, provider, reason):
    proc = run_against([{"text": "", "finish_reason": reason}] * 3, provider)  # retried twice first
    summary = summary_of(proc)
    message = f"{provider} at {fake_openai.base_url}: the model stopped on a failure at the provider (finish_reason {reason})"
    assert (proc.returncode, summary["outcome"], summary["error"]) == (4, "error", message)
    assert last_stderr_line(proc) == f"error after 1 round(s), 0 tool call(s), 0 tokens: {message}"


def test_run_a_legacy_function_call_is_run_as_a_tool_call(run_against, fake_openai):
    proc = run_against([{"raw_sse": [LEGACY_CALL], "split_bytes": 3}, {"text": "Read it."}])
    summary = summary_of(proc)
    assert (proc.returncode, summary["outcome"], summary["toolCalls"]) == (0, "completed", 1), proc.stderr
    assert summary["finishReason"] == "stop"
    sent = fake_openai.requests[1].body["messages"]
    call_id = sent[-2]["tool_calls"][0]["id"]
    assert sent[-1]["tool_call_id"] == call_id
    assert json.loads(sent[-1]["content"])["data"]["content"].startswith("hello")


# -- the sidecar: agent.chat.event and the agent.chat.stream answer -------------------------------


async def test_sidecar_chat_events_carry_the_finish_reason(
    fake_openai: FakeOpenAI, tmp_path: Path, child_env: Callable[..., dict[str, str]]
) -> None:
    from steerable_sidecar.sidecar._client import SidecarClient

    ws = tmp_path / "ws"
    ws.mkdir()
    fake_openai.script(
        [{"text": "Sorry, I can", "finish_reason": "content_filter"}, {"raw_sse": [LLAMA_CPP_CONTEXT]}]
    )
    env = child_env(STEERABLE_PROVIDER="ollama", STEERABLE_MODEL="m", STEERABLE_BASE_URL=fake_openai.base_url)
    async with await SidecarClient.start(workspace=ws, state_dir=tmp_path / "state", env=env) as sidecar:
        handle = sidecar.start_chat("go", session_id="filtered")
        events = [event async for event in handle.events()]
        summary = await handle.result()
        failed = sidecar.start_chat("again", session_id="filtered")
        failed_events = [event async for event in failed.events()]
        failure = await failed.result()
    assistant = next(e for e in events if e["type"] == "assistant")
    assert assistant["finishReason"] == "content_filter"
    done = events[-1]
    assert done["type"] == "done"
    assert (done["summary"]["outcome"], done["summary"]["finishReason"]) == ("incomplete", "content_filter")
    assert (summary["outcome"], summary["finishReason"], summary["text"]) == (
        "incomplete",
        "content_filter",
        "Sorry, I can",
    )
    assert (
        summary["error"]
        == "the model's answer was withheld by a content filter (finish_reason content_filter)"
    )
    assert (failure["outcome"], failure["error"]) == ("error", f"{where(fake_openai)}: {LLAMA_CPP_MESSAGE}")
    failed_done = failed_events[-1]
    assert failed_done["type"] == "done"
    assert failed_done["summary"]["error"] == failure["error"]
