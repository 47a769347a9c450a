"""The OpenAI-compatible provider against a local server speaking the real wire format.

Every HTTP test talks to ``tests/fake_openai.py`` on 127.0.0.1; nothing here reaches the internet.
"""

from __future__ import annotations

import json
import logging
import socket
import subprocess
import sys
import time
from dataclasses import FrozenInstanceError
from pathlib import Path

import httpx
import pytest
from pydantic import SecretStr

from steerable_agent_runtime import ToolCall
from steerable_agent_runtime.errors import ConfigError, ProviderError
from steerable_agent_runtime.llm import (
    ChatRequest,
    InvalidToolCall,
    LLMProvider,
    ReasoningDelta,
    ResponseComplete,
    ScriptedProvider,
    TextDelta,
    ToolCallDelta,
    Usage,
)
from steerable_sidecar.providers._openai import (
    DEFAULT_BASE_URLS,
    DEFAULT_MAX_TOKENS,
    PROVIDER_NAMES,
    LLMConfig,
    OpenAICompatibleProvider,
    default_llm_provider,
)
from steerable_sidecar.providers._vendor_profiles import PROFILE_NAMES
from waiting import eventually

KEY = "sk-test-SECRET-4f9a2c7e1b"
HELLO = ChatRequest(messages=[{"role": "user", "content": "hi"}])
READ_FILE = {
    "type": "function",
    "function": {"name": "read_file", "parameters": {"type": "object", "properties": {}}},
}


@pytest.fixture
async def make_provider(fake_openai):
    made = []

    def make(*, api_key=KEY, provider="openai", request_timeout_ms=5_000, **options):
        config = LLMConfig(
            provider=provider,
            model="gpt-test",
            base_url=fake_openai.base_url,
            api_key=SecretStr(api_key) if api_key else None,
            request_timeout_ms=request_timeout_ms,
        )
        options.setdefault("retry_base_delay_ms", 1)
        made.append(OpenAICompatibleProvider(config, **options))
        return made[-1]

    yield make
    for provider in made:
        await provider.aclose()


@pytest.fixture
def provider(make_provider):
    return make_provider()


async def collect(provider, request=HELLO):
    return [event async for event in provider.stream(request)]


def chunk(delta=None, *, finish=None, **extra):
    """One chat.completion.chunk data payload (a raw_sse item)."""
    choice = {"index": 0, "delta": delta or {}, "finish_reason": finish}
    return {
        "id": "chatcmpl-raw",
        "object": "chat.completion.chunk",
        "model": "raw",
        "choices": [choice],
        **extra,
    }


DONE = ["data: [DONE]", ""]


# -- configuration ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(DEFAULT_BASE_URLS))
def test_each_http_provider_has_its_default_base_url(name):
    config = LLMConfig.from_env(
        {"STEERABLE_PROVIDER": name, "STEERABLE_MODEL": "m", "STEERABLE_API_KEY": KEY}
    )
    assert config.provider == name
    assert config.base_url == DEFAULT_BASE_URLS[name]
    assert config.request_timeout_ms == 600_000


def test_provider_defaults_to_openai_and_names_are_case_insensitive():
    assert LLMConfig.from_env({"STEERABLE_MODEL": "m", "STEERABLE_API_KEY": KEY}).provider == "openai"
    env = {"STEERABLE_PROVIDER": " DeepSeek ", "STEERABLE_MODEL": "m", "STEERABLE_API_KEY": KEY}
    assert LLMConfig.from_env(env).base_url == "https://api.deepseek.com/v1"


def test_default_base_urls_match_the_documented_endpoints():
    assert dict(DEFAULT_BASE_URLS) == {
        "openai": "https://api.openai.com/v1",
        "anthropic": "https://api.anthropic.com/v1",
        "gemini": "https://generativelanguage.googleapis.com/v1beta/openai",
        "mistral": "https://api.mistral.ai/v1",
        "groq": "https://api.groq.com/openai/v1",
        "cerebras": "https://api.cerebras.ai/v1",
        "xai": "https://api.x.ai/v1",
        "together": "https://api.together.xyz/v1",
        "fireworks": "https://api.fireworks.ai/inference/v1",
        "deepseek": "https://api.deepseek.com/v1",
        "moonshot": "https://api.moonshot.ai/v1",
        "qwen": "https://dashscope-intl.aliyuncs.com/compatible-mode/v1",
        "glm": "https://open.bigmodel.cn/api/paas/v4",
        "minimax": "https://api.minimax.io/v1",
        "openrouter": "https://openrouter.ai/api/v1",
        "vllm": "http://localhost:8000/v1",
        "sglang": "http://localhost:30000/v1",
        "llama-cpp": "http://localhost:8080/v1",
        "ollama": "http://localhost:11434/v1",
        "lm-studio": "http://localhost:1234/v1",
    }  # azure has none: each resource has its own host
    assert PROVIDER_NAMES == (*(n for n in PROFILE_NAMES if n != "openai-compatible"), "scripted")


def test_unknown_provider_lists_the_accepted_names():
    with pytest.raises(ConfigError) as info:
        LLMConfig.from_env({"STEERABLE_PROVIDER": "bedrock", "STEERABLE_MODEL": "m"})
    message = str(info.value)
    assert "STEERABLE_PROVIDER" in message and "'bedrock'" in message
    for name in PROVIDER_NAMES:
        assert name in message


@pytest.mark.parametrize(
    ("env", "variable"),
    [
        ({"STEERABLE_API_KEY": KEY}, "STEERABLE_MODEL"),
        ({"STEERABLE_MODEL": "  ", "STEERABLE_API_KEY": KEY}, "STEERABLE_MODEL"),
        ({"STEERABLE_MODEL": "m"}, "STEERABLE_API_KEY"),
        (
            {"STEERABLE_MODEL": "m", "STEERABLE_PROVIDER": "openrouter", "STEERABLE_API_KEY": ""},
            "STEERABLE_API_KEY",
        ),
        ({"STEERABLE_PROVIDER": "scripted"}, "STEERABLE_SCRIPT"),
        (
            {"STEERABLE_PROVIDER": "scripted", "STEERABLE_SCRIPT": "/nonexistent/turns.json"},
            "STEERABLE_SCRIPT",
        ),
        (
            {"STEERABLE_MODEL": "m", "STEERABLE_API_KEY": KEY, "STEERABLE_BASE_URL": "ftp://x/v1"},
            "STEERABLE_BASE_URL",
        ),
        (
            {"STEERABLE_MODEL": "m", "STEERABLE_API_KEY": KEY, "STEERABLE_BASE_URL": "localhost:11434"},
            "STEERABLE_BASE_URL",
        ),
        (
            {"STEERABLE_MODEL": "m", "STEERABLE_API_KEY": KEY, "STEERABLE_BASE_URL": "http://h/v1?x=1"},
            "STEERABLE_BASE_URL",
        ),
        (
            {"STEERABLE_MODEL": "m", "STEERABLE_API_KEY": KEY, "STEERABLE_REQUEST_TIMEOUT_MS": "10s"},
            "STEERABLE_REQUEST_TIMEOUT_MS",
        ),
        (
            {"STEERABLE_MODEL": "m", "STEERABLE_API_KEY": KEY, "STEERABLE_REQUEST_TIMEOUT_MS": "0"},
            "STEERABLE_REQUEST_TIMEOUT_MS",
        ),
        (
            {"STEERABLE_MODEL": "m", "STEERABLE_API_KEY": KEY, "STEERABLE_REQUEST_TIMEOUT_MS": "3600001"},
            "STEERABLE_REQUEST_TIMEOUT_MS",
        ),
    ],
)
def test_each_missing_or_invalid_variable_is_named(env, variable):
    with pytest.raises(ConfigError) as info:
        LLMConfig.from_env(env)
    assert variable in str(info.value)
    assert KEY not in str(info.value)


def test_ollama_needs_no_key_and_scripted_needs_no_model(tmp_path):
    assert LLMConfig.from_env({"STEERABLE_PROVIDER": "ollama", "STEERABLE_MODEL": "qwen3"}).api_key is None
    script = tmp_path / "turns.json"
    script.write_text('["hello"]', encoding="utf-8")
    config = LLMConfig.from_env({"STEERABLE_PROVIDER": "scripted", "STEERABLE_SCRIPT": str(script)})
    assert (config.model, config.base_url, config.script) == (None, None, script)


def test_base_url_is_kept_without_its_trailing_slash():
    env = {"STEERABLE_MODEL": "m", "STEERABLE_API_KEY": KEY, "STEERABLE_BASE_URL": "http://gw.local:8080/v1/"}
    assert LLMConfig.from_env(env).base_url == "http://gw.local:8080/v1"


def test_credentials_in_the_base_url_are_refused_without_echoing_them():
    env = {"STEERABLE_MODEL": "m", "STEERABLE_API_KEY": KEY, "STEERABLE_BASE_URL": "https://u:hunter2@h/v1"}
    with pytest.raises(ConfigError, match="STEERABLE_BASE_URL") as info:
        LLMConfig.from_env(env)
    assert "hunter2" not in str(info.value)


def test_a_key_an_http_header_cannot_carry_is_refused_without_echoing_it():
    with pytest.raises(ConfigError, match="STEERABLE_API_KEY") as info:
        LLMConfig.from_env({"STEERABLE_MODEL": "m", "STEERABLE_API_KEY": "sk-abc def-SECRET"})
    assert "SECRET" not in str(info.value)


def test_the_key_never_appears_in_repr_or_str():
    config = LLMConfig.from_env({"STEERABLE_MODEL": "m", "STEERABLE_API_KEY": KEY})
    assert config.api_key is not None and config.api_key.get_secret_value() == KEY
    for text in (
        repr(config),
        str(config),
        repr(OpenAICompatibleProvider(config, client=httpx.AsyncClient())),
    ):
        assert KEY not in text
        assert "**" in text


def test_direct_construction_is_validated_and_frozen():
    with pytest.raises(ConfigError, match="STEERABLE_PROVIDER"):
        LLMConfig(provider="nope", model="m")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="STEERABLE_REQUEST_TIMEOUT_MS"):
        LLMConfig(provider="ollama", model="m", request_timeout_ms=True)
    config = LLMConfig(provider="ollama", model="m", api_key=SecretStr(""))
    assert config.api_key is None and config.base_url == "http://localhost:11434/v1"
    with pytest.raises(FrozenInstanceError):
        config.model = "other"  # type: ignore[misc]


async def test_default_factory_builds_the_configured_provider(tmp_path):
    provider = default_llm_provider(environ={"STEERABLE_MODEL": "m", "STEERABLE_API_KEY": KEY})
    assert isinstance(provider, OpenAICompatibleProvider)
    assert isinstance(provider, LLMProvider)
    await provider.aclose()

    script = tmp_path / "turns.json"
    script.write_text(json.dumps(["hello", {"tool_calls": [{"name": "read_file", "arguments": "{}"}]}]))
    scripted = default_llm_provider(LLMConfig(provider="scripted", script=script))
    assert isinstance(scripted, ScriptedProvider) and scripted.remaining == 2
    assert (await scripted.complete(HELLO)).text == "hello"

    script.write_text('{"not": "a list"}')
    with pytest.raises(ConfigError, match="STEERABLE_SCRIPT"):
        default_llm_provider(environ={"STEERABLE_PROVIDER": "scripted", "STEERABLE_SCRIPT": str(script)})


def test_the_http_provider_refuses_a_scripted_config(tmp_path):
    script = tmp_path / "t.json"
    script.write_text("[]")
    with pytest.raises(ConfigError, match="default_llm_provider"):
        OpenAICompatibleProvider(LLMConfig(provider="scripted", script=script))


# -- streaming --------------------------------------------------------------------------------------


async def test_text_streams_in_deltas_and_ends_with_one_complete_response(fake_openai, provider):
    fake_openai.script(
        [{"text": "Hello there, general Kenobi.", "usage": {"prompt_tokens": 12, "completion_tokens": 7}}]
    )
    events = await collect(provider)
    deltas = [e for e in events if isinstance(e, TextDelta)]
    assert len(deltas) > 2
    assert "".join(d.text for d in deltas) == "Hello there, general Kenobi."
    assert [type(e) for e in events].count(ResponseComplete) == 1
    assert isinstance(events[-1], ResponseComplete)
    response = events[-1].response
    assert response.text == "Hello there, general Kenobi."
    assert response.usage == Usage(12, 7)
    assert response.finish_reason == "stop"
    assert response.model == "gpt-test"
    assert response.tool_calls == ()


async def test_two_parallel_tool_calls_are_assembled_from_fragments(fake_openai, provider):
    first = json.dumps({"path": "docs/café.md", "offset": 10})
    second = json.dumps({"pattern": "def \\w+\\(", "glob": "**/*.py"})
    fake_openai.script(
        [
            {
                "text": "Looking.",
                "tool_calls": [
                    {"id": "call_a", "name": "read_file", "arguments": first},
                    {"id": "call_b", "name": "grep", "arguments": second},
                ],
            }
        ]
    )
    events = await collect(provider)
    fragments = [e for e in events if isinstance(e, ToolCallDelta)]
    assert len(fragments) > 4  # the arguments really arrived in pieces
    for index, text in ((0, first), (1, second)):
        assert "".join(f.arguments for f in fragments if f.index == index) == text
    assert {(f.index, f.id, f.name) for f in fragments} == {(0, "call_a", "read_file"), (1, "call_b", "grep")}
    response = events[-1].response
    assert response.tool_calls == (
        ToolCall(id="call_a", name="read_file", arguments=json.loads(first)),
        ToolCall(id="call_b", name="grep", arguments=json.loads(second)),
    )
    assert response.finish_reason == "tool_calls"
    assert response.text == "Looking."


async def test_invalid_argument_json_becomes_an_invalid_tool_call(fake_openai, provider):
    fake_openai.script(
        [{"tool_calls": [{"id": "call_x", "name": "read_file", "arguments": '{"path": "a.txt"'}]}]
    )
    response = await provider.complete(HELLO)
    (call,) = response.tool_calls
    assert isinstance(call, InvalidToolCall)
    assert (call.id, call.name, call.arguments) == ("call_x", "read_file", '{"path": "a.txt"')
    assert "not valid JSON" in call.error


@pytest.mark.parametrize(("levels", "depth"), [(300, 300), (1_000, None)])
async def test_argument_text_nested_too_deeply_becomes_an_invalid_call_with_the_routers_answer(
    fake_openai, provider, levels, depth
):  # SAFE-6
    text = '{"path": ' + "[" * (levels - 1) + "]" * (levels - 1) + "}"
    fake_openai.script([{"tool_calls": [{"id": "call_d", "name": "read_file", "arguments": text}]}] * 2)
    how = f"nested {depth} levels deep" if depth else "nested too deeply to decode"
    for response in (await provider.complete(HELLO), await _streamed(provider)):
        (call,) = response.tool_calls
        assert isinstance(call, InvalidToolCall)
        assert (call.id, call.name, call.arguments) == ("call_d", "read_file", text)
        assert call.error == (
            f"Invalid arguments for read_file: {how}; at most 64 levels are accepted. Send flatter arguments."
        )
        assert call.data == {
            "code": "arguments_too_deep",
            "maxDepth": 64,
            **({"depth": depth} if depth else {}),
        }


async def _streamed(provider):
    async for event in provider.stream(HELLO):
        if isinstance(event, ResponseComplete):
            return event.response
    raise AssertionError("no response")


async def test_complete_equals_the_assembled_stream(fake_openai, provider):
    turn = {
        "text": "Two calls.",
        "tool_calls": [
            {"id": "c1", "name": "read_file", "arguments": '{"path": "x"}'},
            {"id": "c2", "name": "bad", "arguments": "{nope"},
        ],
        "usage": {"prompt_tokens": 3, "completion_tokens": 4},
    }
    fake_openai.script([turn, turn])
    streamed = (await collect(provider))[-1].response
    assert await provider.complete(HELLO) == streamed


async def test_a_server_that_ignores_stream_true_still_works(fake_openai, provider):
    fake_openai.script(
        [
            {
                "text": "whole",
                "tool_calls": [{"id": "c1", "name": "ls", "arguments": "{}"}],
                "non_streaming": True,
            }
        ]
    )
    events = await collect(provider)
    assert events[0] == TextDelta("whole")
    assert events[1] == ToolCallDelta(0, "c1", "ls", "{}")
    assert events[-1].response.tool_calls == (ToolCall(id="c1", name="ls", arguments={}),)
    assert events[-1].response.usage == Usage(10, 5)


# -- request shape ----------------------------------------------------------------------------------


async def test_request_body_and_headers(fake_openai, provider):
    fake_openai.script([{"text": "a"}, {"text": "b"}])
    await provider.complete(HELLO)
    request = ChatRequest(
        messages=[{"role": "user", "content": "hi"}],
        tools=[READ_FILE],
        model="override-model",
        temperature=0.2,
        max_tokens=64,
    )
    await provider.complete(request)
    plain, full = fake_openai.requests
    assert plain.path == "/v1/chat/completions"
    assert plain.body == {
        "model": "gpt-test",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_tokens": DEFAULT_MAX_TOKENS,  # a loopback server: the openai-compatible profile
    }
    assert full.body == {
        **plain.body,
        "model": "override-model",
        "tools": [READ_FILE],
        "temperature": 0.2,
        "max_tokens": 64,
    }
    assert plain.headers["authorization"] == f"Bearer {KEY}"
    assert plain.headers["content-type"] == "application/json"
    assert plain.headers["accept"] == "text/event-stream"


async def test_no_authorization_header_without_a_key(fake_openai, make_provider):
    provider = make_provider(provider="ollama", api_key=None)
    fake_openai.script([{"text": "local"}])
    assert (await provider.complete(HELLO)).text == "local"
    assert "authorization" not in fake_openai.requests[0].headers


async def test_one_client_serves_every_call_and_an_injected_client_stays_open(fake_openai):
    async with httpx.AsyncClient() as client:
        config = LLMConfig(
            model="m", base_url=fake_openai.base_url, api_key=SecretStr(KEY), request_timeout_ms=2000
        )
        async with OpenAICompatibleProvider(config, client=client) as provider:
            fake_openai.script([{"text": "1"}, {"text": "2"}])
            await provider.complete(HELLO)
            await provider.complete(HELLO)
        assert not client.is_closed
    first, second = fake_openai.requests
    assert first.client_port == second.client_port  # the body was read to its end: the connection was reused


# -- wire quirks ------------------------------------------------------------------------------------


async def test_a_whole_tool_call_in_one_delta(fake_openai, provider):
    # Ollama sends each tool call fully assembled in a single delta.
    call = {
        "index": 0,
        "id": "call_1",
        "type": "function",
        "function": {"name": "ls", "arguments": '{"path": "."}'},
    }
    fake_openai.script(
        [{"raw_sse": [chunk({"role": "assistant", "tool_calls": [call]}), chunk(finish="tool_calls"), *DONE]}]
    )
    events = await collect(provider)
    assert events[0] == ToolCallDelta(0, "call_1", "ls", '{"path": "."}')
    assert events[-1].response.tool_calls == (ToolCall(id="call_1", name="ls", arguments={"path": "."}),)


async def test_tool_call_deltas_without_an_index_are_sequential(fake_openai, provider):
    # Older Ollama builds omit "index": a new id starts the next call, fragments continue the last.
    def tc(fields):
        return chunk({"tool_calls": [fields]})

    lines = [
        tc({"id": "a", "function": {"name": "ls", "arguments": '{"pa'}}),
        tc({"function": {"arguments": 'th": "x"}'}}),
        tc({"id": "b", "function": {"name": "cat", "arguments": "{}"}}),
        tc({"function": {"name": "echo", "arguments": '{"t": 1}'}}),  # no id, new name: a third call
        chunk(finish="tool_calls"),
        *DONE,
    ]
    fake_openai.script([{"raw_sse": lines}])
    calls = (await provider.complete(HELLO)).tool_calls
    assert [(c.id, c.name, c.arguments) for c in calls[:2]] == [("a", "ls", {"path": "x"}), ("b", "cat", {})]
    assert (calls[2].name, calls[2].arguments) == ("echo", {"t": 1})
    assert calls[2].id  # generated, since the model sent none


async def test_an_index_reused_for_a_different_call_id_starts_a_new_call(fake_openai, provider):
    # Ollama sends index 0 for every parallel call (ollama/ollama#15457); ids tell them apart.
    def tc(**fields):
        return chunk({"tool_calls": [{"index": 0, **fields}]})

    lines = [
        tc(id="a", function={"name": "ls", "arguments": '{"path":'}),
        tc(function={"arguments": ' "a"}'}),
        tc(id="b", function={"name": "ls", "arguments": '{"path":'}),
        tc(function={"arguments": ' "b"}'}),
        chunk(finish="tool_calls"),
        *DONE,
    ]
    fake_openai.script([{"raw_sse": lines}])
    events = await collect(provider)
    assert [e.index for e in events if isinstance(e, ToolCallDelta)] == [0, 0, 1, 1]
    assert events[-1].response.tool_calls == (
        ToolCall(id="a", name="ls", arguments={"path": "a"}),
        ToolCall(id="b", name="ls", arguments={"path": "b"}),
    )


async def test_arguments_sent_as_an_object(fake_openai, provider):
    call = {"index": 0, "id": "c", "function": {"name": "ls", "arguments": {"path": "é", "n": [1, 2]}}}
    fake_openai.script([{"raw_sse": [chunk({"tool_calls": [call]}), chunk(finish="tool_calls"), *DONE]}])
    events = await collect(provider)
    assert json.loads(events[0].arguments) == {"path": "é", "n": [1, 2]}
    assert events[-1].response.tool_calls == (
        ToolCall(id="c", name="ls", arguments={"path": "é", "n": [1, 2]}),
    )


async def test_reasoning_deltas_are_kept_apart_from_the_text(fake_openai, provider):  # LOOP-2
    # DeepSeek streams reasoning_content before content; OpenRouter and Ollama use "reasoning".
    lines = [
        chunk({"role": "assistant", "content": None, "reasoning_content": "Let me think"}),
        chunk({"content": None, "reasoning": " more."}),
        chunk({"content": "Answer."}),
        chunk(finish="stop"),
        *DONE,
    ]
    fake_openai.script([{"raw_sse": lines}])
    events = await collect(provider)
    assert events[:-1] == [ReasoningDelta("Let me think"), ReasoningDelta(" more."), TextDelta("Answer.")]
    assert events[-1].response.text == "Answer."
    assert events[-1].response.reasoning == "Let me think more."


async def test_usage_arrives_in_a_final_chunk_with_empty_choices(fake_openai, provider):
    usage = {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
    lines = [
        chunk({"content": "x"}, usage=None),
        chunk(finish="stop", usage=None),
        {"id": "chatcmpl-raw", "object": "chat.completion.chunk", "choices": [], "usage": usage},
        *DONE,
    ]
    fake_openai.script([{"raw_sse": lines}])
    assert (await provider.complete(HELLO)).usage == Usage(100, 20)


async def test_sse_comments_and_blank_data_are_skipped(fake_openai, provider):
    # OpenRouter sends ": OPENROUTER PROCESSING" comments to keep the connection alive.
    lines = [
        ": OPENROUTER PROCESSING",
        "",
        "data:",
        "",
        chunk({"content": "ok"}),
        chunk(finish="stop"),
        *DONE,
    ]
    fake_openai.script([{"raw_sse": lines}])
    assert (await provider.complete(HELLO)).text == "ok"


async def test_a_stream_without_done_completes_once_a_finish_reason_arrived(fake_openai, provider):
    fake_openai.script([{"raw_sse": [chunk({"content": "fine"}), chunk(finish="stop")]}])
    response = await provider.complete(HELLO)
    assert (response.text, response.finish_reason) == ("fine", "stop")


async def test_a_stream_cut_short_after_output_raises_and_is_not_retried(fake_openai, provider):
    fake_openai.script([{"raw_sse": [chunk({"content": "partial"})]}, {"text": "never asked for"}])
    seen = []
    with pytest.raises(ProviderError, match="stream ended early") as info:
        async for event in provider.stream(HELLO):
            seen.append(event)
    assert seen == [TextDelta("partial")]
    assert info.value.retryable is True
    assert len(fake_openai.requests) == 1


async def test_a_dropped_connection_after_output_raises_and_is_not_retried(fake_openai, provider):
    fake_openai.script([{"raw_sse": [chunk({"content": "partial"})], "abort": True}, {"text": "never"}])
    with pytest.raises(ProviderError) as info:
        await collect(provider)
    assert info.value.retryable is True
    assert len(fake_openai.requests) == 1


async def test_a_stream_cut_short_before_output_is_retried(fake_openai, provider):
    fake_openai.script([{"raw_sse": [chunk({"role": "assistant"})]}, {"text": "second try"}])
    assert (await provider.complete(HELLO)).text == "second try"
    assert len(fake_openai.requests) == 2


async def test_an_error_payload_mid_stream_raises(fake_openai, provider):
    # OpenRouter: errors after the 200 arrive as a data event with an "error" member.
    error = {
        "error": {"code": 502, "message": "upstream model crashed"},
        "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}],
    }
    fake_openai.script([{"raw_sse": [chunk({"content": "par"}), error, *DONE]}])
    with pytest.raises(ProviderError, match="upstream model crashed") as info:
        await collect(provider)
    assert info.value.status == 502
    assert len(fake_openai.requests) == 1


async def test_an_sse_error_event_raises(fake_openai, provider):
    lines = ["event: error", 'data: {"message": "overloaded"}', ""]
    fake_openai.script([{"raw_sse": lines}])
    with pytest.raises(ProviderError, match="overloaded") as info:
        await collect(provider)
    assert info.value.retryable is False


async def test_an_unparseable_chunk_raises(fake_openai, provider):
    fake_openai.script([{"raw_sse": ["data: {not json", "", *DONE]}])
    with pytest.raises(ProviderError, match="not JSON"):
        await collect(provider)


# -- HTTP errors, retries, timeouts -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "retryable"),
    [(400, False), (401, False), (404, False), (408, True), (429, True), (500, True), (503, True)],
)
async def test_http_errors_carry_status_retryable_and_the_provider_message(
    fake_openai, make_provider, status, retryable
):
    provider = make_provider(max_retries=0)
    message = f"Incorrect API key provided: {KEY}. You can find your key at ..."  # a server echoing the key
    fake_openai.script(
        [{"status": status, "body": {"error": {"message": message, "type": "invalid_request_error"}}}]
    )
    with pytest.raises(ProviderError) as info:
        await provider.complete(HELLO)
    error = info.value
    assert (error.status, error.retryable) == (status, retryable)
    assert f"HTTP {status}" in str(error)
    assert "Incorrect API key provided" in str(error)
    assert KEY not in str(error)
    assert KEY not in repr(error.args)


async def test_non_retryable_errors_are_not_retried(fake_openai, provider):
    fake_openai.script([{"status": 401, "body": {"error": {"message": "bad key"}}}, {"text": "never"}])
    with pytest.raises(ProviderError, match="STEERABLE_API_KEY"):
        await provider.complete(HELLO)
    assert len(fake_openai.requests) == 1


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"error": "model 'qwen9' not found"}, "model 'qwen9' not found"),  # Ollama's shape
        ({"message": "Bad gateway"}, "Bad gateway"),
        ("<html><h1>502 Bad Gateway</h1></html>", ": 502 Bad Gateway"),  # a web server's page, as words
    ],
)
async def test_error_text_is_read_from_each_body_shape(fake_openai, make_provider, body, expected):
    provider = make_provider(max_retries=0)
    fake_openai.script([{"status": 502, "body": body}])
    with pytest.raises(ProviderError, match="HTTP 502") as info:
        await provider.complete(HELLO)
    assert expected in str(info.value)


async def test_a_long_error_message_is_bounded(fake_openai, make_provider):
    provider = make_provider(max_retries=0)
    fake_openai.script([{"status": 400, "body": {"error": {"message": "x" * 100_000}}}])
    with pytest.raises(ProviderError) as info:
        await provider.complete(HELLO)
    assert len(str(info.value)) < 700


async def test_429_before_output_is_retried_honouring_retry_after(fake_openai, make_provider):
    provider = make_provider(retry_base_delay_ms=5_000)  # the header, not the base delay, decides
    fake_openai.script(
        [
            {"status": 429, "body": {"error": {"message": "slow down"}}, "headers": {"Retry-After": "0.05"}},
            {"status": 503, "body": {"error": {"message": "busy"}}, "headers": {"retry-after-ms": "20"}},
            {"text": "finally"},
        ]
    )
    started = time.monotonic()
    assert (await provider.complete(HELLO)).text == "finally"
    assert 0.07 <= time.monotonic() - started < 2  # the headers' 50 + 20 ms, not the 5 s base delay
    assert len(fake_openai.requests) == 3


async def test_retry_after_is_capped(fake_openai, make_provider):
    provider = make_provider(retry_max_delay_ms=10)
    fake_openai.script([{"status": 429, "headers": {"Retry-After": "3600"}}, {"text": "ok"}])
    started = time.monotonic()
    assert (await provider.complete(HELLO)).text == "ok"
    assert time.monotonic() - started < 2  # the 10 ms cap, not the header's hour


async def test_a_zone_less_retry_after_date_is_no_delay_and_the_backoff_applies(fake_openai, make_provider):
    """``Retry-After: Sun, 06 Nov 1994 08:49:37`` names no instant: ignored (the same reader as web_search)."""
    provider = make_provider(retry_base_delay_ms=300)
    fake_openai.script(
        [{"status": 429, "headers": {"Retry-After": "Sun, 06 Nov 1994 08:49:37"}}, {"text": "ok"}]
    )
    started = time.monotonic()
    assert (await provider.complete(HELLO)).text == "ok"
    assert time.monotonic() - started >= 0.3


async def test_an_asctime_retry_after_in_the_past_is_no_wait(fake_openai, make_provider):
    """asctime is one of RFC 9110's three HTTP-date forms (GMT by definition): a past one means now."""
    provider = make_provider(retry_base_delay_ms=5_000)
    fake_openai.script(
        [{"status": 503, "headers": {"Retry-After": "Sun Nov  6 08:49:37 1994"}}, {"text": "ok"}]
    )
    started = time.monotonic()
    assert (await provider.complete(HELLO)).text == "ok"
    assert time.monotonic() - started < 2  # no wait: the 5 s base delay would apply to a date ignored


@pytest.mark.parametrize("location", ["http://[::1/", "mailto:x@y"])
async def test_a_redirect_to_an_unusable_location_is_one_error_not_retried(
    fake_openai, make_provider, location
):
    provider = make_provider(max_retries=3)
    fake_openai.script([{"status": 302, "headers": {"Location": location}} for _ in range(4)])
    with pytest.raises(ProviderError, match="redirected to a Location that is not") as info:
        await provider.complete(HELLO)
    assert info.value.retryable is False
    assert len(fake_openai.requests) == 1


async def test_a_redirect_is_not_followed_even_by_an_injected_client_that_follows(fake_openai, make_provider):
    """As web_search (``_http.send_unfollowed``), whatever the caller's client was built with."""
    async with httpx.AsyncClient(follow_redirects=True) as following:
        provider = make_provider(client=following, max_retries=0)
        fake_openai.script(
            [{"status": 307, "headers": {"Location": fake_openai.base_url + "/chat/completions"}}]
        )
        fake_openai.script([{"text": "followed"}])
        with pytest.raises(ProviderError, match="answered HTTP 307") as info:
            await provider.complete(HELLO)
    assert info.value.status == 307
    assert len(fake_openai.requests) == 1


async def test_retries_are_bounded(fake_openai, make_provider):
    provider = make_provider(max_retries=2)
    fake_openai.script([{"status": 500, "body": {"error": {"message": f"boom {n}"}}} for n in range(5)])
    with pytest.raises(ProviderError, match="boom 2") as info:
        await provider.complete(HELLO)
    assert info.value.retryable is True
    assert len(fake_openai.requests) == 3


async def test_a_server_that_never_answers_times_out(fake_openai, make_provider):
    provider = make_provider(request_timeout_ms=150, max_retries=0)
    fake_openai.script([{"hang": True}])
    started = time.monotonic()
    with pytest.raises(ProviderError, match="150 ms") as info:
        await provider.complete(HELLO)
    assert info.value.retryable is True
    assert time.monotonic() - started < 2  # at the 150 ms timeout: the server never answers


async def test_a_stream_that_goes_silent_after_output_times_out_without_retry(fake_openai, make_provider):
    provider = make_provider(request_timeout_ms=150)
    fake_openai.script([{"raw_sse": [chunk({"content": "thinking"})], "hang": True}, {"text": "never"}])
    with pytest.raises(ProviderError, match="timed out"):
        await collect(provider)
    assert len(fake_openai.requests) == 1


async def test_an_unreachable_server_is_a_retryable_provider_error():
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = LLMConfig(model="m", base_url=f"http://127.0.0.1:{port}/v1", api_key=SecretStr(KEY))
    async with OpenAICompatibleProvider(config, max_retries=0) as provider:
        with pytest.raises(ProviderError, match="ConnectError") as info:
            await provider.complete(HELLO)
    assert info.value.retryable is True and info.value.status is None
    assert KEY not in str(info.value)


async def test_the_key_never_reaches_a_log_line(fake_openai, make_provider, caplog):
    caplog.set_level(logging.DEBUG)
    provider = make_provider(max_retries=1)
    echo = {"error": {"message": f"key {KEY} is rate limited"}}
    fake_openai.script([{"status": 429, "body": echo}, {"status": 429, "body": echo}])
    with pytest.raises(ProviderError):
        await provider.complete(HELLO)
    assert any("retrying" in r.getMessage() for r in caplog.records)
    for record in caplog.records:
        assert KEY not in record.getMessage()
    assert KEY not in caplog.text


# -- the fake server as a subprocess ----------------------------------------------------------------


async def test_the_fake_server_runs_as_a_subprocess(tmp_path):
    script = tmp_path / "turns.json"
    script.write_text(json.dumps([{"text": "from a subprocess"}]), encoding="utf-8")
    port_file = tmp_path / "port"
    server = Path(__file__).resolve().parents[2] / "fake_openai.py"
    proc = subprocess.Popen(
        [sys.executable, str(server), "--port-file", str(port_file), "--script", str(script)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        await eventually(port_file.exists, what="the fake server's port file")
        port = int(port_file.read_text())
        assert proc.stdout is not None and proc.stdout.readline().strip() == f"FAKE_OPENAI_PORT={port}"
        config = LLMConfig(model="m", base_url=f"http://127.0.0.1:{port}/v1", api_key=SecretStr(KEY))
        async with OpenAICompatibleProvider(config) as provider:
            assert (await provider.complete(HELLO)).text == "from a subprocess"
        async with httpx.AsyncClient() as client:
            received = (await client.get(f"http://127.0.0.1:{port}/_requests")).json()
        assert received[0]["body"]["stream"] is True
    finally:
        proc.terminate()
        proc.communicate(timeout=10)
    assert proc.returncode == 0


# -- review fixes -----------------------------------------------------------------------------------


async def test_a_key_echoed_at_the_clip_boundary_is_still_redacted(fake_openai, make_provider):
    # the provider's message is clipped at 500 characters; the key straddles that point
    message = "x" * 480 + " key " + KEY + " and more text after it"
    fake_openai.script([{"status": 400, "body": {"error": {"message": message}}}])
    with pytest.raises(ProviderError) as info:
        await make_provider(max_retries=0).complete(HELLO)
    text = str(info.value)
    assert not any(KEY[:n] in text for n in range(9, len(KEY) + 1)) and "[redacted]" in text


async def test_a_lone_surrogate_in_the_conversation_is_repaired_not_fatal(fake_openai, provider):
    fake_openai.script([{"text": "ok"}])
    request = ChatRequest(messages=[{"role": "user", "content": "a\ud800b"}])
    response = await provider.complete(request)
    assert response.text == "ok"
    assert fake_openai.requests[0].body["messages"][0]["content"] == "a\ufffdb"


async def test_an_emoji_split_across_chunks_is_joined(fake_openai, provider):
    # each chunk carries one half of the surrogate pair as a JSON escape
    lines = [
        'data: {"choices": [{"index": 0, "delta": {"content": "hi \\ud83d"}}]}',
        "",
        'data: {"choices": [{"index": 0, "delta": {"content": "\\ude00 there \\ud800"}, "finish_reason": "stop"}]}',
        "",
        *DONE,
    ]
    fake_openai.script([{"raw_sse": lines}])
    response = await provider.complete(HELLO)
    assert response.text == "hi \U0001f600 there \ufffd"
    response.text.encode("utf-8")  # never raises downstream


async def test_the_model_output_is_never_scrubbed(fake_openai, make_provider):
    # a short placeholder key, and a real one the model happens to mention: the answer is untouched
    fake_openai.script(
        [
            {"text": "I used ollama to do it", "usage": {"prompt_tokens": 3, "completion_tokens": 2}},
            {"tool_calls": [{"id": "c", "name": "read_file", "arguments": '{"path": "e.txt"}'}]},
        ]
    )
    ollama = make_provider(api_key="ollama")
    first = await ollama.complete(HELLO)
    assert first.text == "I used ollama to do it" and first.usage.prompt_tokens == 3
    second = await make_provider(api_key="e" * 20).complete(HELLO)
    assert [c.name for c in second.tool_calls] == ["read_file"]
    fake_openai.script([{"text": f"the key is {KEY}"}])
    third = await make_provider().complete(HELLO)
    assert third.text == f"the key is {KEY}"  # only error messages and logs are scrubbed
