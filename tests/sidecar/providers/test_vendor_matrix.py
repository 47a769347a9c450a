"""The vendor table of docs/providers.md: one test per (vendor, feature) cell.

Each case replays one vendor's stream shape (its envelope: ids, ``system_fingerprint``,
``native_finish_reason``, ``timings``, comment lines; its deltas; where its usage and errors
arrive) over the real loopback server of ``tests/fake_openai.py`` into the real
:class:`OpenAICompatibleProvider`, configured the way a user of that vendor configures steerable
(vLLM, llama.cpp and LM Studio with ``STEERABLE_PROVIDER`` set to their own profiles). A case asserts
what the user sees: the assembled :class:`ChatResponse`, the :class:`ProviderError` message, the
finish-reason kind, and for the reasoning round trip what the next request carried back (the fake
records every request; for DeepSeek it refuses, with DeepSeek's own 400, a request that lost the
reasoning).

The shapes come from each vendor's API reference and server sources as of late 2025; where a vendor
has two (vLLM's bare and wrapped error objects, OpenRouter's error object and bare ``finish_reason:
"error"``) the case replays both.

:func:`test_the_docs_table_matches_the_cases` parses the table from docs/providers.md: every ``yes``
cell needs a case here (id ``<vendor>-<feature>``, e.g. ``deepseek-reasoning``) and every case a
``yes`` cell, so the docs cannot drift from the tests.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from fake_openai import DEEPSEEK_REASONING_400, FakeOpenAI
from steerable_agent_runtime import ToolCall
from steerable_agent_runtime.errors import ProviderError
from steerable_agent_runtime.finish import finish_kind
from steerable_agent_runtime.llm import ChatRequest, ChatResponse, Usage
from steerable_sidecar.providers._openai import LLMConfig, OpenAICompatibleProvider, ProviderName

DOCS = Path(__file__).resolve().parents[3] / "docs" / "providers.md"

# vendor slug: (the name in the docs table, STEERABLE_PROVIDER, the model name a user would set)
VENDORS: dict[str, tuple[str, ProviderName, str]] = {
    "openai": ("OpenAI", "openai", "gpt-4.1"),
    "openrouter": ("OpenRouter", "openrouter", "anthropic/claude-sonnet-4"),
    "deepseek": ("DeepSeek", "deepseek", "deepseek-reasoner"),
    "glm": ("GLM", "glm", "glm-4.6"),
    "ollama": ("Ollama", "ollama", "qwen3:8b"),
    "vllm": ("vLLM", "vllm", "Qwen/Qwen3-8B"),
    "llama-cpp": ("llama.cpp", "llama-cpp", "qwen3-8b-q4_k_m.gguf"),
    "lm-studio": ("LM Studio", "lm-studio", "qwen/qwen3-8b"),
}
# feature slug: the column header in the docs table
FEATURES: dict[str, str] = {
    "tool-calls": "Tool calls",
    "parallel-calls": "Parallel calls",
    "reasoning": "Reasoning round trip",
    "usage": "Usage",
    "stream-errors": "In-stream errors",
    "finish-reasons": "Finish reasons",
}

Check = Callable[[FakeOpenAI, OpenAICompatibleProvider], Awaitable[None]]
CASES: dict[str, Check] = {}


def cell(vendor: str, feature: str) -> Callable[[Check], Check]:
    """Register ``check`` as the test of the docs table's (vendor, feature) cell."""
    assert vendor in VENDORS and feature in FEATURES, (vendor, feature)

    def register(check: Check) -> Check:
        case_id = f"{vendor}-{feature}"
        assert case_id not in CASES, case_id
        CASES[case_id] = check
        return check

    return register


ASK = ChatRequest(
    messages=[{"role": "user", "content": "What is on my todo list?"}],
    tools=(
        {
            "type": "function",
            "function": {
                "name": "read_file",
                "description": "Read a file.",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
            },
        },
    ),
)
DONE = "data: [DONE]"
CREATED = 1764547200


# -- each vendor's chunk envelope -------------------------------------------------------------------


def openai_chunk(delta: dict[str, Any] | None, finish: str | None = None, **top: Any) -> dict[str, Any]:
    """OpenAI: with ``include_usage`` every chunk has ``usage: null``; the usage chunk has no choices."""
    choices = (
        [] if delta is None else [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
    )
    return {
        "id": "chatcmpl-CgYVx3KqTn9bW2rLm8pE5sHd1Fa7Z",
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": "gpt-4.1-2025-04-14",
        "service_tier": "default",
        "system_fingerprint": "fp_b3f1157249",
        "choices": choices,
        "usage": None,
        **top,
    }


def openrouter_chunk(
    delta: dict[str, Any], finish: str | None = None, native: str | None = None, **top: Any
) -> dict[str, Any]:
    """OpenRouter: a ``gen-`` id, the upstream ``provider``, ``native_finish_reason`` beside the normalised one."""
    choice = {
        "index": 0,
        "delta": delta,
        "finish_reason": finish,
        "native_finish_reason": native,
        "logprobs": None,
    }
    return {
        "id": "gen-1764547200-Qm3vXo8RkTzL2yWn5PbA",
        "provider": "Anthropic",
        "model": "anthropic/claude-sonnet-4",
        "object": "chat.completion.chunk",
        "created": CREATED,
        "choices": [choice],
        **top,
    }


def deepseek_chunk(delta: dict[str, Any], finish: str | None = None, **top: Any) -> dict[str, Any]:
    """DeepSeek: a UUID id, ``system_fingerprint``; usage rides on the chunk carrying ``finish_reason``."""
    return {
        "id": "5b8c7e2a-0d3f-4a51-9e1c-7f6a2b9d4c10",
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": "deepseek-reasoner",
        "system_fingerprint": "fp_ffc7281d48_prod0820_fp8_kvcache",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        **top,
    }


def glm_chunk(delta: dict[str, Any], finish: str | None = None, **top: Any) -> dict[str, Any]:
    """GLM (Zhipu / Z.ai): no ``object`` field; the last chunk carries ``finish_reason`` and ``usage``."""
    choice: dict[str, Any] = {"index": 0, "delta": {"role": "assistant", **delta}}
    if finish is not None:
        choice["finish_reason"] = finish
    return {
        "id": "20251201170000a1b2c3d4e5f64a7b",
        "created": CREATED,
        "model": "glm-4.6",
        "choices": [choice],
        **top,
    }


def ollama_chunk(delta: dict[str, Any] | None, finish: str | None = None, **top: Any) -> dict[str, Any]:
    """Ollama's OpenAI layer: ``fp_ollama``; usage in a last chunk with empty ``choices``."""
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return {
        "id": "chatcmpl-417",
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": "qwen3:8b",
        "system_fingerprint": "fp_ollama",
        "choices": choices,
        **top,
    }


def vllm_chunk(delta: dict[str, Any] | None, finish: str | None = None, **top: Any) -> dict[str, Any]:
    """vLLM: ``stop_reason`` beside ``finish_reason``; usage in a last chunk with empty ``choices``."""
    choices = (
        []
        if delta is None
        else [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish, "stop_reason": None}]
    )
    return {
        "id": "chatcmpl-9f4c2b7e1d8a4e3f",
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": "Qwen/Qwen3-8B",
        "choices": choices,
        **top,
    }


LLAMA_CPP_TIMINGS = {
    "prompt_n": 31,
    "prompt_ms": 52.3,
    "prompt_per_token_ms": 1.69,
    "prompt_per_second": 592.7,
    "predicted_n": 12,
    "predicted_ms": 240.1,
    "predicted_per_token_ms": 20.0,
    "predicted_per_second": 49.98,
}


def llama_cpp_chunk(delta: dict[str, Any], finish: str | None = None, **top: Any) -> dict[str, Any]:
    """llama.cpp's server: keys in its own order; the last chunk carries ``usage`` and ``timings``."""
    return {
        "choices": [{"finish_reason": finish, "index": 0, "delta": delta}],
        "created": CREATED,
        "id": "chatcmpl-kX2m9Qv7Lr4Tn8Ws1Pb6Yc3Hd5Fj0Ga",
        "model": "qwen3-8b-q4_k_m.gguf",
        "system_fingerprint": "b6423-f3a4b1c2",
        "object": "chat.completion.chunk",
        **top,
    }


def lm_studio_chunk(delta: dict[str, Any] | None, finish: str | None = None, **top: Any) -> dict[str, Any]:
    """LM Studio: ``system_fingerprint`` is the model key; usage in a last chunk with empty ``choices``."""
    choices = (
        [] if delta is None else [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
    )
    return {
        "id": "chatcmpl-f8k2m4n6p8r0t2v4x6z8",
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": "qwen/qwen3-8b",
        "system_fingerprint": "qwen/qwen3-8b",
        "choices": choices,
        **top,
    }


def usage(prompt: int, completion: int, **details: Any) -> dict[str, Any]:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        **details,
    }


def split_call(index: int, call_id: str, name: str, arguments: str, pieces: int = 4) -> list[dict[str, Any]]:
    """OpenAI-style tool-call deltas: index, id, name and empty arguments, then argument fragments."""
    size = max(1, -(-len(arguments) // pieces))
    head = {"index": index, "id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}
    tail = [
        {"index": index, "function": {"arguments": arguments[start : start + size]}}
        for start in range(0, len(arguments), size)
    ]
    return [head, *tail]


def whole_call(index: int, call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {
        "id": call_id,
        "index": index,
        "type": "function",
        "function": {"name": name, "arguments": arguments},
    }


TODO = '{"path": "todo.txt"}'
NOTES = '{"path": "notes/café ☕.md"}'


# -- the fixtures and helpers -----------------------------------------------------------------------


async def provider_for(vendor: str, fake: FakeOpenAI) -> OpenAICompatibleProvider:
    _, provider, model = VENDORS[vendor]
    key = None if provider == "ollama" else SecretStr("sk-vendor-matrix-0123456789")
    config = LLMConfig(
        provider=provider,
        model=model,
        base_url=fake.base_url,
        api_key=key,
        request_timeout_ms=5_000,
    )
    return OpenAICompatibleProvider(config, max_retries=0)


@pytest.fixture
async def vendor_provider(
    request: pytest.FixtureRequest, fake_openai: FakeOpenAI
) -> AsyncIterator[OpenAICompatibleProvider]:
    provider = await provider_for(request.param, fake_openai)
    async with provider:
        yield provider


def where(provider: OpenAICompatibleProvider) -> str:
    return f"{provider.config.provider} at {provider.config.base_url}"


async def answer(
    fake: FakeOpenAI, provider: OpenAICompatibleProvider, stream: list[Any], *, split: int | None = None
) -> ChatResponse:
    """Serve ``stream`` (raw_sse items) and return the provider's assembled response."""
    turn: dict[str, Any] = {"raw_sse": stream}
    if split:
        turn["split_bytes"] = split
    fake.script([turn])
    return await provider.complete(ASK)


async def failure(fake: FakeOpenAI, provider: OpenAICompatibleProvider, stream: list[Any]) -> ProviderError:
    fake.script([{"raw_sse": stream}])
    with pytest.raises(ProviderError) as info:
        await provider.complete(ASK)
    return info.value


def calls_of(response: ChatResponse) -> list[tuple[str, str, dict[str, Any]]]:
    out = []
    for call in response.tool_calls:
        assert isinstance(call, ToolCall), call
        out.append((call.id, call.name, call.arguments))
    return out


async def next_request(
    fake: FakeOpenAI, provider: OpenAICompatibleProvider, response: ChatResponse, **turn: Any
) -> dict[str, Any]:
    """Send the conversation on (with a result for each tool call) and return the assistant message sent."""
    messages = [*ASK.messages, response.assistant_message()]
    messages += [
        {"role": "tool", "tool_call_id": call.id, "content": json.dumps({"ok": True, "data": "buy milk"})}
        for call in response.tool_calls
    ]
    fake.script([{"text": "Your list says: buy milk.", **turn}])
    follow_up = await provider.complete(ChatRequest(messages=messages, tools=ASK.tools))
    assert follow_up.text == "Your list says: buy milk."
    sent = fake.requests[-1].body["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant"] + ["tool"] * len(response.tool_calls)
    return dict(sent[1])


# -- OpenAI -----------------------------------------------------------------------------------------


@cell("openai", "tool-calls")
async def _(fake: FakeOpenAI, provider: OpenAICompatibleProvider) -> None:
    stream: list[Any] = [openai_chunk({"role": "assistant", "content": None, "refusal": None})]
    stream += [
        openai_chunk({"tool_calls": [d]})
        for d in split_call(0, "call_Xq8wZk1LmN3pR5tV7yB9cD2f", "read_file", TODO, 6)
    ]
    stream += [openai_chunk({}, "tool_calls"), openai_chunk(None, usage=usage(82, 17)), DONE, ""]
    response = await answer(fake, provider, stream, split=3)
    assert calls_of(response) == [("call_Xq8wZk1LmN3pR5tV7yB9cD2f", "read_file", {"path": "todo.txt"})]
    assert (response.text, response.finish_reason) == ("", "tool_calls")


@cell("openai", "parallel-calls")
async def _(fake: FakeOpenAI, provider: OpenAICompatibleProvider) -> None:
    first = split_call(0, "call_A1", "read_file", TODO)
    second = split_call(1, "call_B2", "read_file", NOTES)
    stream: list[Any] = [openai_chunk({"role": "assistant", "content": None})]
    stream += [openai_chunk({"tool_calls": [d]}) for d in first + second]
    stream += [openai_chunk({}, "tool_calls"), openai_chunk(None, usage=usage(82, 40)), DONE, ""]
    response = await answer(fake, provider, stream, split=1)
    assert calls_of(response) == [
        ("call_A1", "read_file", {"path": "todo.txt"}),
        ("call_B2", "read_file", {"path": "notes/café ☕.md"}),
    ]
    sent = response.assistant_message()["tool_calls"]
    assert [c["id"] for c in sent] == ["call_A1", "call_B2"]


@cell("openai", "usage")
async def _(fake: FakeOpenAI, provider: OpenAICompatibleProvider) -> None:
    details = {
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
    }
    stream = [
        openai_chunk({"role": "assistant", "content": ""}),
        openai_chunk({"content": "Buy "}),
        openai_chunk({"content": "milk."}),
        openai_chunk({}, "stop"),
        openai_chunk(None, usage=usage(1234, 56, **details)),
        DONE,
        "",
    ]
    response = await answer(fake, provider, stream)
    assert (response.text, response.usage) == ("Buy milk.", Usage(1234, 56, 0))
    assert fake.requests[-1].body["stream_options"] == {"include_usage": True}


@cell("openai", "stream-errors")
async def _(fake: FakeOpenAI, provider: OpenAICompatibleProvider) -> None:
    error = {
        "error": {
            "message": "The server had an error while processing your request. Sorry about that!",
            "type": "server_error",
            "param": None,
            "code": None,
        }
    }
    exc = await failure(fake, provider, [openai_chunk({"role": "assistant", "content": "Buy"}), error])
    assert str(exc) == (
        f"{where(provider)}: the provider reported an error mid-stream: "
        "The server had an error while processing your request. Sorry about that! (server_error)"
    )
    assert (exc.status, exc.retryable) == (None, False)


@cell("openai", "finish-reasons")
async def _(fake: FakeOpenAI, provider: OpenAICompatibleProvider) -> None:
    for reason, kind in [("stop", "stop"), ("length", "cut_off"), ("content_filter", "filtered")]:
        stream = [openai_chunk({"role": "assistant", "content": "Half"}), openai_chunk({}, reason), DONE, ""]
        response = await answer(fake, provider, stream)
        assert (response.text, response.finish_reason, finish_kind(response.finish_reason)) == (
            "Half",
            reason,
            kind,
        )


# -- OpenRouter -------------------------------------------------------------------------------------

PROCESSING = ": OPENROUTER PROCESSING"
SIGNATURE = "EqQBCkgIBhABGAIiQL3pYw8z2Zr4Lm0Vn7Xc1Qb5Tk9Ha3Jd6Fe2Wg8Ys4Ru0Ip7Oq1Ml5Kn9Bj3Hx6Cv2Dz8Ef4Gt0Ah"


@cell("openrouter", "tool-calls")
async def _(fake: FakeOpenAI, provider: OpenAICompatibleProvider) -> None:
    stream: list[Any] = [PROCESSING, "", PROCESSING, ""]
    stream += [openrouter_chunk({"role": "assistant", "content": "I'll read it."})]
    stream += [
        openrouter_chunk({"role": "assistant", "content": None, "tool_calls": [d]})
        for d in split_call(0, "toolu_vrtx_01HQ7cB3mZ8pLx2Wn4Rk6Ty9", "read_file", TODO)
    ]
    stream += [openrouter_chunk({"role": "assistant", "content": ""}, "tool_calls", "tool_use")]
    stream += [
        openrouter_chunk({"role": "assistant", "content": ""}, usage=usage(310, 48, cost=0.00165)),
        DONE,
        "",
    ]
    response = await answer(fake, provider, stream, split=5)
    assert calls_of(response) == [("toolu_vrtx_01HQ7cB3mZ8pLx2Wn4Rk6Ty9", "read_file", {"path": "todo.txt"})]
    assert (response.text, response.finish_reason) == ("I'll read it.", "tool_calls")


@cell("openrouter", "parallel-calls")
async def _(fake: FakeOpenAI, provider: OpenAICompatibleProvider) -> None:
    first = split_call(0, "toolu_01A", "read_file", TODO)
    second = split_call(1, "toolu_01B", "read_file", NOTES)
    stream: list[Any] = [PROCESSING, ""]
    stream += [
        openrouter_chunk({"role": "assistant", "content": None, "tool_calls": [d]}) for d in first + second
    ]
    stream += [openrouter_chunk({"role": "assistant", "content": ""}, "tool_calls", "tool_use"), DONE, ""]
    response = await answer(fake, provider, stream)
    assert calls_of(response) == [
        ("toolu_01A", "read_file", {"path": "todo.txt"}),
        ("toolu_01B", "read_file", {"path": "notes/café ☕.md"}),
    ]


@cell("openrouter", "reasoning")
async def _(fake: FakeOpenAI, provider: OpenAICompatibleProvider) -> None:
    def thought(text: str, **block: Any) -> dict[str, Any]:
        detail = {
            "type": "reasoning.text",
            "text": text,
            "format": "anthropic-claude-v1",
            "index": 0,
            **block,
        }
        return openrouter_chunk(
            {"role": "assistant", "content": "", "reasoning": text or None, "reasoning_details": [detail]}
        )

    stream: list[Any] = [
        PROCESSING,
        "",
        thought("I should "),
        thought("read todo.txt."),
        thought("", signature=SIGNATURE),
    ]
    stream += [
        openrouter_chunk({"role": "assistant", "content": None, "tool_calls": [d]})
        for d in split_call(0, "toolu_01R", "read_file", TODO)
    ]
    stream += [openrouter_chunk({"role": "assistant", "content": ""}, "tool_calls", "tool_use"), DONE, ""]
    response = await answer(fake, provider, stream, split=7)
    assert response.reasoning == "I should read todo.txt."
    block = {
        "type": "reasoning.text",
        "text": "I should read todo.txt.",
        "format": "anthropic-claude-v1",
        "index": 0,
        "signature": SIGNATURE,
    }
    assert response.reasoning_details == (block,)
    sent = await next_request(fake, provider, response)
    assert sent["reasoning_details"] == [block]  # passed back whole: the signature verifies only so
    assert "reasoning" not in sent and "reasoning_content" not in sent

    # a model that sends plain reasoning and no blocks gets its text back under "reasoning"
    plain: list[Any] = [openrouter_chunk({"role": "assistant", "content": "", "reasoning": "Just read it."})]
    plain += [
        openrouter_chunk(
            {"role": "assistant", "content": None, "tool_calls": [whole_call(0, "call_P", "read_file", TODO)]}
        )
    ]
    plain += [openrouter_chunk({"role": "assistant", "content": ""}, "tool_calls", "tool_calls"), DONE, ""]
    response = await answer(fake, provider, plain)
    sent = await next_request(fake, provider, response)
    assert (sent.get("reasoning"), "reasoning_details" in sent) == ("Just read it.", False)


@cell("openrouter", "usage")
async def _(fake: FakeOpenAI, provider: OpenAICompatibleProvider) -> None:
    details = {
        "cost": 0.00165,
        "is_byok": False,
        "prompt_tokens_details": {"cached_tokens": 256},
        "cost_details": {"upstream_inference_cost": None},
        "completion_tokens_details": {"reasoning_tokens": 12},
    }
    stream = [
        PROCESSING,
        "",
        openrouter_chunk({"role": "assistant", "content": "Buy milk."}),
        openrouter_chunk({"role": "assistant", "content": ""}, "stop", "end_turn"),
        openrouter_chunk({"role": "assistant", "content": ""}, usage=usage(310, 48, **details)),
        DONE,
        "",
    ]
    response = await answer(fake, provider, stream)
    assert (response.text, response.usage, response.finish_reason) == (
        "Buy milk.",
        Usage(310, 48, 256),
        "stop",
    )


@cell("openrouter", "stream-errors")
async def _(fake: FakeOpenAI, provider: OpenAICompatibleProvider) -> None:
    # OpenRouter's mid-stream error: the error object beside a choice whose finish_reason is "error"
    broken = openrouter_chunk(
        {"content": ""},
        "error",
        error={"code": "server_error", "message": "Provider disconnected unexpectedly"},
    )
    stream = [PROCESSING, "", openrouter_chunk({"role": "assistant", "content": "Buy"}), broken, DONE, ""]
    exc = await failure(fake, provider, stream)
    assert (
        str(exc)
        == f"{where(provider)}: the provider reported an error mid-stream: Provider disconnected unexpectedly"
    )
    assert (exc.status, exc.retryable) == (None, False)
    # finish_reason "error" without the object is still a failure, not an answer
    exc = await failure(
        fake,
        provider,
        [openrouter_chunk({"content": "Buy"}), openrouter_chunk({"content": ""}, "error"), DONE, ""],
    )
    assert (
        str(exc) == f"{where(provider)}: the model stopped on a failure at the provider (finish_reason error)"
    )
    assert exc.retryable is True


@cell("openrouter", "finish-reasons")
async def _(fake: FakeOpenAI, provider: OpenAICompatibleProvider) -> None:
    for reason, native, kind in [
        ("stop", "end_turn", "stop"),
        ("length", "max_tokens", "cut_off"),
        ("content_filter", "SAFETY", "filtered"),
    ]:
        stream = [
            openrouter_chunk({"role": "assistant", "content": "Half"}),
            openrouter_chunk({"content": ""}, reason, native),
            DONE,
            "",
        ]
        response = await answer(fake, provider, stream)
        assert (response.finish_reason, finish_kind(response.finish_reason)) == (reason, kind)


# -- DeepSeek ---------------------------------------------------------------------------------------

DEEPSEEK_USAGE = usage(
    412,
    96,
    prompt_tokens_details={"cached_tokens": 384},
    completion_tokens_details={"reasoning_tokens": 71},
    prompt_cache_hit_tokens=384,
    prompt_cache_miss_tokens=28,
)


def deepseek_call_stream(calls: list[tuple[str, str]], reasoning: str = "") -> list[Any]:
    """DeepSeek: reasoning_content first (thinking mode), then each call OpenAI-style, usage on the finish."""
    stream: list[Any] = [deepseek_chunk({"role": "assistant", "content": None, "reasoning_content": ""})]
    stream += [
        deepseek_chunk({"content": None, "reasoning_content": w}) for w in re.findall(r"\S+\s*", reasoning)
    ]
    stream += [": keep-alive", ""]
    for index, (call_id, arguments) in enumerate(calls):
        stream += [
            deepseek_chunk({"tool_calls": [d]}) for d in split_call(index, call_id, "read_file", arguments)
        ]
    stream += [deepseek_chunk({"content": ""}, "tool_calls", usage=DEEPSEEK_USAGE), DONE, ""]
    return stream


@cell("deepseek", "tool-calls")
async def _(fake: FakeOpenAI, provider: OpenAICompatibleProvider) -> None:
    response = await answer(
        fake, provider, deepseek_call_stream([("call_00_Vb3xkQ9rT2mN7pLs4Wd8Jf1H", TODO)]), split=4
    )
    assert calls_of(response) == [("call_00_Vb3xkQ9rT2mN7pLs4Wd8Jf1H", "read_file", {"path": "todo.txt"})]
    assert response.finish_reason == "tool_calls"


@cell("deepseek", "parallel-calls")
async def _(fake: FakeOpenAI, provider: OpenAICompatibleProvider) -> None:
    stream = deepseek_call_stream([("call_00_first", TODO), ("call_01_second", NOTES)])
    response = await answer(fake, provider, stream)
    assert calls_of(response) == [
        ("call_00_first", "read_file", {"path": "todo.txt"}),
        ("call_01_second", "read_file", {"path": "notes/café ☕.md"}),
    ]


@cell("deepseek", "reasoning")
async def _(fake: FakeOpenAI, provider: OpenAICompatibleProvider) -> None:
    reasoning = "The user wants the todo list. I should read todo.txt first."
    response = await answer(fake, provider, deepseek_call_stream([("call_00_R", TODO)], reasoning), split=2)
    assert response.reasoning == reasoning
    # round 2: the fake answers DeepSeek's 400 unless the tool-calling message carries reasoning_content
    sent = await next_request(fake, provider, response, require_reasoning="reasoning_content")
    assert sent["reasoning_content"] == reasoning
    assert "reasoning" not in sent and "reasoning_details" not in sent
    assert DEEPSEEK_REASONING_400["error"]["message"].startswith("The reasoning_content")


@cell("deepseek", "usage")
async def _(fake: FakeOpenAI, provider: OpenAICompatibleProvider) -> None:
    stream = [
        deepseek_chunk({"role": "assistant", "content": ""}),
        deepseek_chunk({"content": "Buy milk."}),
        deepseek_chunk({"content": ""}, "stop", usage=DEEPSEEK_USAGE),
        DONE,
        "",
    ]
    response = await answer(fake, provider, stream)
    assert (response.text, response.usage) == ("Buy milk.", Usage(412, 96, 384))


@cell("deepseek", "stream-errors")
async def _(fake: FakeOpenAI, provider: OpenAICompatibleProvider) -> None:
    stream = [
        deepseek_chunk({"role": "assistant", "content": "", "reasoning_content": "Let me"}),
        deepseek_chunk({"content": ""}, "insufficient_system_resource", usage=usage(412, 2)),
        DONE,
        "",
    ]
    exc = await failure(fake, provider, stream)
    assert str(exc) == (
        f"{where(provider)}: the model stopped on a failure at the provider "
        "(finish_reason insufficient_system_resource)"
    )
    assert exc.retryable is True


@cell("deepseek", "finish-reasons")
async def _(fake: FakeOpenAI, provider: OpenAICompatibleProvider) -> None:
    for reason, kind in [("stop", "stop"), ("length", "cut_off"), ("content_filter", "filtered")]:
        stream = [
            deepseek_chunk({"role": "assistant", "content": "Half"}),
            deepseek_chunk({"content": ""}, reason, usage=usage(9, 1)),
            DONE,
            "",
        ]
        response = await answer(fake, provider, stream)
        assert (response.finish_reason, finish_kind(response.finish_reason)) == (reason, kind)


# -- GLM --------------------------------------------------------------------------------------------

GLM_USAGE = usage(520, 88, prompt_tokens_details={"cached_tokens": 448})


@cell("glm", "tool-calls")
async def _(fake: FakeOpenAI, provider: OpenAICompatibleProvider) -> None:
    # GLM sends each call whole in one delta (without tool_stream)
    stream = [
        glm_chunk({"content": "Let me read it."}),
        glm_chunk({"tool_calls": [whole_call(0, "call_-8166232410347302466", "read_file", TODO)]}),
        glm_chunk({"content": ""}, "tool_calls", usage=GLM_USAGE),
        DONE,
        "",
    ]
    response = await answer(fake, provider, stream, split=9)
    assert calls_of(response) == [("call_-8166232410347302466", "read_file", {"path": "todo.txt"})]
    assert (response.text, response.finish_reason) == ("Let me read it.", "tool_calls")


@cell("glm", "parallel-calls")
async def _(fake: FakeOpenAI, provider: OpenAICompatibleProvider) -> None:
    calls = [whole_call(0, "call_-1", "read_file", TODO), whole_call(1, "call_-2", "read_file", NOTES)]
    stream = [
        glm_chunk({"tool_calls": calls}),
        glm_chunk({"content": ""}, "tool_calls", usage=GLM_USAGE),
        DONE,
        "",
    ]
    response = await answer(fake, provider, stream)
    assert calls_of(response) == [
        ("call_-1", "read_file", {"path": "todo.txt"}),
        ("call_-2", "read_file", {"path": "notes/café ☕.md"}),
    ]


@cell("glm", "reasoning")
async def _(fake: FakeOpenAI, provider: OpenAICompatibleProvider) -> None:
    stream: list[Any] = [
        glm_chunk({"reasoning_content": w}) for w in ["用户想看", "待办事项，", "先读 todo.txt。"]
    ]
    stream += [glm_chunk({"tool_calls": [whole_call(0, "call_-7", "read_file", TODO)]})]
    stream += [glm_chunk({"content": ""}, "tool_calls", usage=GLM_USAGE), DONE, ""]
    response = await answer(fake, provider, stream, split=1)  # every CJK character straddles reads
    assert response.reasoning == "用户想看待办事项，先读 todo.txt。"
    sent = await next_request(fake, provider, response, require_reasoning="reasoning_content")
    assert sent["reasoning_content"] == "用户想看待办事项，先读 todo.txt。"
    assert "reasoning" not in sent and "reasoning_details" not in sent


@cell("glm", "usage")
async def _(fake: FakeOpenAI, provider: OpenAICompatibleProvider) -> None:
    stream = [
        glm_chunk({"content": "Buy milk."}),
        glm_chunk({"content": ""}, "stop", usage=GLM_USAGE),
        DONE,
        "",
    ]
    response = await answer(fake, provider, stream)
    assert (response.text, response.usage) == ("Buy milk.", Usage(520, 88, 448))


@cell("glm", "stream-errors")
async def _(fake: FakeOpenAI, provider: OpenAICompatibleProvider) -> None:
    stream = [
        glm_chunk({"content": "Buy"}),
        glm_chunk({"content": ""}, "network_error", usage=GLM_USAGE),
        DONE,
        "",
    ]
    exc = await failure(fake, provider, stream)
    assert (
        str(exc)
        == f"{where(provider)}: the model stopped on a failure at the provider (finish_reason network_error)"
    )
    assert exc.retryable is True


@cell("glm", "finish-reasons")
async def _(fake: FakeOpenAI, provider: OpenAICompatibleProvider) -> None:
    for reason, kind in [("stop", "stop"), ("length", "cut_off"), ("sensitive", "filtered")]:
        stream = [
            glm_chunk({"content": "Half"}),
            glm_chunk({"content": ""}, reason, usage=GLM_USAGE),
            DONE,
            "",
        ]
        response = await answer(fake, provider, stream)
        assert (response.finish_reason, finish_kind(response.finish_reason)) == (reason, kind)


async def test_glm_context_window_exceeded_is_a_cut_off_answer(fake_openai: FakeOpenAI) -> None:
    async with await provider_for("glm", fake_openai) as provider:
        stream = [
            glm_chunk({"content": "Half"}),
            glm_chunk({"content": ""}, "model_context_window_exceeded"),
            DONE,
            "",
        ]
        response = await answer(fake_openai, provider, stream)
    assert response.finish_reason == "model_context_window_exceeded"
    assert finish_kind(response.finish_reason) == "cut_off"


# -- Ollama -----------------------------------------------------------------------------------------


@cell("ollama", "tool-calls")
async def _(fake: FakeOpenAI, provider: OpenAICompatibleProvider) -> None:
    stream = [
        ollama_chunk(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [whole_call(0, "call_rx4mk1sz", "read_file", TODO)],
            }
        ),
        ollama_chunk({"role": "assistant", "content": ""}, "tool_calls"),
        ollama_chunk(None, usage=usage(180, 22)),
        DONE,
        "",
    ]
    response = await answer(fake, provider, stream)
    assert calls_of(response) == [("call_rx4mk1sz", "read_file", {"path": "todo.txt"})]


@cell("ollama", "parallel-calls")
async def _(fake: FakeOpenAI, provider: OpenAICompatibleProvider) -> None:
    # index 0 for every call, told apart by id (ollama/ollama#15457); older builds finish with "stop"
    calls = [
        whole_call(0, "call_a1b2c3d4", "read_file", TODO),
        whole_call(0, "call_e5f6g7h8", "read_file", NOTES),
    ]
    stream = [
        ollama_chunk({"role": "assistant", "content": "", "tool_calls": calls}),
        ollama_chunk({"role": "assistant", "content": ""}, "stop"),
        DONE,
        "",
    ]
    response = await answer(fake, provider, stream)
    assert calls_of(response) == [
        ("call_a1b2c3d4", "read_file", {"path": "todo.txt"}),
        ("call_e5f6g7h8", "read_file", {"path": "notes/café ☕.md"}),
    ]


@cell("ollama", "reasoning")
async def _(fake: FakeOpenAI, provider: OpenAICompatibleProvider) -> None:
    stream: list[Any] = [
        ollama_chunk({"role": "assistant", "content": "", "reasoning": w})
        for w in ["Okay, ", "read todo.txt."]
    ]
    stream += [
        ollama_chunk(
            {"role": "assistant", "content": "", "tool_calls": [whole_call(0, "call_q", "read_file", TODO)]}
        )
    ]
    stream += [ollama_chunk({"role": "assistant", "content": ""}, "tool_calls"), DONE, ""]
    response = await answer(fake, provider, stream)
    assert response.reasoning == "Okay, read todo.txt."
    sent = await next_request(fake, provider, response, require_reasoning="reasoning")
    assert sent["reasoning"] == "Okay, read todo.txt."
    assert "reasoning_content" not in sent and "reasoning_details" not in sent


@cell("ollama", "usage")
async def _(fake: FakeOpenAI, provider: OpenAICompatibleProvider) -> None:
    stream = [
        ollama_chunk({"role": "assistant", "content": "Buy milk."}),
        ollama_chunk({"role": "assistant", "content": ""}, "stop"),
        ollama_chunk(None, usage=usage(180, 22)),
        DONE,
        "",
    ]
    response = await answer(fake, provider, stream)
    assert (response.text, response.usage) == ("Buy milk.", Usage(180, 22))


@cell("ollama", "stream-errors")
async def _(fake: FakeOpenAI, provider: OpenAICompatibleProvider) -> None:
    message = (
        "model runner has unexpectedly stopped, this may be due to resource limitations or an internal "
        "error, check ollama server logs for details"
    )
    error = {"error": {"message": message, "type": "api_error", "param": None, "code": None}}
    exc = await failure(fake, provider, [ollama_chunk({"role": "assistant", "content": "Buy"}), error])
    assert str(exc) == f"{where(provider)}: the provider reported an error mid-stream: {message} (api_error)"
    # the native API's shape, {"error": "text"}, as some builds forward it
    exc = await failure(
        fake, provider, [{"error": "an error was encountered while running the model: unexpected EOF"}]
    )
    assert str(exc) == (
        f"{where(provider)}: the provider reported an error mid-stream: "
        "an error was encountered while running the model: unexpected EOF"
    )


@cell("ollama", "finish-reasons")
async def _(fake: FakeOpenAI, provider: OpenAICompatibleProvider) -> None:
    for reason, kind in [("stop", "stop"), ("length", "cut_off")]:  # its done_reason, mapped
        stream = [
            ollama_chunk({"role": "assistant", "content": "Half"}),
            ollama_chunk({"role": "assistant", "content": ""}, reason),
            DONE,
            "",
        ]
        response = await answer(fake, provider, stream)
        assert (response.finish_reason, finish_kind(response.finish_reason)) == (reason, kind)


# -- vLLM (STEERABLE_PROVIDER=openai with its base URL) ---------------------------------------------


def vllm_call(index: int, call_id: str, arguments: str) -> list[dict[str, Any]]:
    """vLLM's tool parsers: a first delta with id, type, name (no arguments), then argument fragments."""
    head = {"id": call_id, "type": "function", "index": index, "function": {"name": "read_file"}}
    return [head, *split_call(index, call_id, "read_file", arguments)[1:]]


@cell("vllm", "tool-calls")
async def _(fake: FakeOpenAI, provider: OpenAICompatibleProvider) -> None:
    stream: list[Any] = [vllm_chunk({"role": "assistant", "content": ""})]
    stream += [vllm_chunk({"tool_calls": [d]}) for d in vllm_call(0, "chatcmpl-tool-3b7c9e1f2a4d", TODO)]
    stream += [vllm_chunk({"content": ""}, "tool_calls"), vllm_chunk(None, usage=usage(201, 30)), DONE, ""]
    response = await answer(fake, provider, stream, split=6)
    assert calls_of(response) == [("chatcmpl-tool-3b7c9e1f2a4d", "read_file", {"path": "todo.txt"})]


@cell("vllm", "parallel-calls")
async def _(fake: FakeOpenAI, provider: OpenAICompatibleProvider) -> None:
    stream: list[Any] = [vllm_chunk({"role": "assistant", "content": ""})]
    stream += [
        vllm_chunk({"tool_calls": [d]})
        for d in vllm_call(0, "chatcmpl-tool-a", TODO) + vllm_call(1, "chatcmpl-tool-b", NOTES)
    ]
    stream += [vllm_chunk({"content": ""}, "tool_calls"), DONE, ""]
    response = await answer(fake, provider, stream)
    assert calls_of(response) == [
        ("chatcmpl-tool-a", "read_file", {"path": "todo.txt"}),
        ("chatcmpl-tool-b", "read_file", {"path": "notes/café ☕.md"}),
    ]


@cell("vllm", "reasoning")
async def _(fake: FakeOpenAI, provider: OpenAICompatibleProvider) -> None:
    # --reasoning-parser qwen3 / deepseek_r1: reasoning_content deltas; the vllm profile sends it back
    # on the tool-calling message, where Qwen3's chat template renders it between the calls
    stream: list[Any] = [vllm_chunk({"role": "assistant", "content": ""})]
    stream += [vllm_chunk({"reasoning_content": w}) for w in ["Okay, ", "the user ", "wants the list."]]
    stream += [vllm_chunk({"tool_calls": [d]}) for d in vllm_call(0, "chatcmpl-tool-r", TODO)]
    stream += [vllm_chunk({"content": ""}, "tool_calls"), DONE, ""]
    response = await answer(fake, provider, stream)
    assert response.reasoning == "Okay, the user wants the list."
    sent = await next_request(fake, provider, response)
    assert sent["reasoning_content"] == "Okay, the user wants the list."
    assert not {"reasoning", "reasoning_details"} & set(sent)


@cell("vllm", "usage")
async def _(fake: FakeOpenAI, provider: OpenAICompatibleProvider) -> None:
    stream = [
        vllm_chunk({"role": "assistant", "content": ""}),
        vllm_chunk({"content": "Buy milk."}),
        vllm_chunk({"content": ""}, "stop"),
        vllm_chunk(None, usage=usage(201, 30, prompt_tokens_details=None)),
        DONE,
        "",
    ]
    response = await answer(fake, provider, stream)
    assert (response.text, response.usage) == ("Buy milk.", Usage(201, 30))


@cell("vllm", "stream-errors")
async def _(fake: FakeOpenAI, provider: OpenAICompatibleProvider) -> None:
    error = {
        "object": "error",
        "message": "This model's maximum context length is 4096 tokens. However, you requested 4203 tokens.",
        "type": "BadRequestError",
        "param": None,
        "code": 400,
    }
    expected = (
        f"{where(provider)}: the provider reported an error mid-stream: This model's maximum context length "
        "is 4096 tokens. However, you requested 4203 tokens. (BadRequestError)"
    )
    for shape in (error, {"error": error}):  # the bare ErrorResponse, and create_streaming_error_response's
        exc = await failure(
            fake, provider, [vllm_chunk({"role": "assistant", "content": ""}), shape, DONE, ""]
        )
        assert str(exc) == expected
        assert (exc.status, exc.retryable) == (400, False)


@cell("vllm", "finish-reasons")
async def _(fake: FakeOpenAI, provider: OpenAICompatibleProvider) -> None:
    for reason, kind in [("stop", "stop"), ("length", "cut_off")]:
        stream = [vllm_chunk({"content": "Half"}), vllm_chunk({"content": ""}, reason), DONE, ""]
        response = await answer(fake, provider, stream)
        assert (response.finish_reason, finish_kind(response.finish_reason)) == (reason, kind)


# -- llama.cpp's server (STEERABLE_PROVIDER=openai with its base URL) -------------------------------

LLAMA_CPP_USAGE = usage(31, 12)


def llama_cpp_end(reason: str) -> list[Any]:
    return [llama_cpp_chunk({}, reason, usage=LLAMA_CPP_USAGE, timings=LLAMA_CPP_TIMINGS), DONE, ""]


@cell("llama-cpp", "tool-calls")
async def _(fake: FakeOpenAI, provider: OpenAICompatibleProvider) -> None:
    # --jinja: the call's diffs, OpenAI-style, with a random 32-character id
    stream: list[Any] = [llama_cpp_chunk({"role": "assistant", "content": None})]
    stream += [
        llama_cpp_chunk({"tool_calls": [d]})
        for d in split_call(0, "Qx8wZk1LmN3pR5tV7yB9cD2fGh4Jk6Lm", "read_file", TODO)
    ]
    stream += llama_cpp_end("tool_calls")
    response = await answer(fake, provider, stream, split=3)
    assert calls_of(response) == [("Qx8wZk1LmN3pR5tV7yB9cD2fGh4Jk6Lm", "read_file", {"path": "todo.txt"})]


@cell("llama-cpp", "parallel-calls")
async def _(fake: FakeOpenAI, provider: OpenAICompatibleProvider) -> None:
    calls = split_call(0, "id_first", "read_file", TODO) + split_call(1, "id_second", "read_file", NOTES)
    stream: list[Any] = [llama_cpp_chunk({"role": "assistant", "content": None})]
    stream += [llama_cpp_chunk({"tool_calls": [d]}) for d in calls] + llama_cpp_end("tool_calls")
    response = await answer(fake, provider, stream)
    assert calls_of(response) == [
        ("id_first", "read_file", {"path": "todo.txt"}),
        ("id_second", "read_file", {"path": "notes/café ☕.md"}),
    ]


@cell("llama-cpp", "reasoning")
async def _(fake: FakeOpenAI, provider: OpenAICompatibleProvider) -> None:
    # --reasoning-format deepseek: reasoning_content deltas; the llama-cpp profile sends it back on the
    # tool-calling message (the server parses an assistant message's reasoning_content for the template)
    stream: list[Any] = [llama_cpp_chunk({"role": "assistant", "content": None})]
    stream += [llama_cpp_chunk({"reasoning_content": w}) for w in ["I need ", "todo.txt."]]
    stream += [llama_cpp_chunk({"tool_calls": [d]}) for d in split_call(0, "id_r", "read_file", TODO)]
    stream += llama_cpp_end("tool_calls")
    response = await answer(fake, provider, stream)
    assert response.reasoning == "I need todo.txt."
    sent = await next_request(fake, provider, response)
    assert sent["reasoning_content"] == "I need todo.txt."


@cell("llama-cpp", "usage")
async def _(fake: FakeOpenAI, provider: OpenAICompatibleProvider) -> None:
    stream = [
        llama_cpp_chunk({"role": "assistant", "content": None}),
        llama_cpp_chunk({"content": "Buy milk."}),
    ]
    response = await answer(fake, provider, stream + llama_cpp_end("stop"))
    assert (response.text, response.usage) == ("Buy milk.", Usage(31, 12))


@cell("llama-cpp", "stream-errors")
async def _(fake: FakeOpenAI, provider: OpenAICompatibleProvider) -> None:
    line = (
        'error: {"code":400,"message":"the request exceeds the available context size, try increasing it",'
        '"type":"exceed_context_size_error","n_prompt_tokens":5000,"n_ctx":4096}'
    )
    exc = await failure(fake, provider, [line, "", DONE, ""])
    assert str(exc) == (
        f"{where(provider)}: the provider reported an error mid-stream: the request exceeds the available "
        "context size, try increasing it (exceed_context_size_error)"
    )
    assert (exc.status, exc.retryable) == (400, False)


@cell("llama-cpp", "finish-reasons")
async def _(fake: FakeOpenAI, provider: OpenAICompatibleProvider) -> None:
    for reason, kind in [("stop", "stop"), ("length", "cut_off")]:
        response = await answer(
            fake, provider, [llama_cpp_chunk({"content": "Half"}), *llama_cpp_end(reason)]
        )
        assert (response.finish_reason, finish_kind(response.finish_reason)) == (reason, kind)


# -- LM Studio (STEERABLE_PROVIDER=openai with its base URL) ----------------------------------------


@cell("lm-studio", "tool-calls")
async def _(fake: FakeOpenAI, provider: OpenAICompatibleProvider) -> None:
    stream: list[Any] = [lm_studio_chunk({"role": "assistant"})]
    stream += [lm_studio_chunk({"tool_calls": [d]}) for d in split_call(0, "304934553", "read_file", TODO)]
    stream += [lm_studio_chunk({}, "tool_calls"), lm_studio_chunk(None, usage=usage(96, 21)), DONE, ""]
    response = await answer(fake, provider, stream, split=2)
    assert calls_of(response) == [("304934553", "read_file", {"path": "todo.txt"})]


@cell("lm-studio", "parallel-calls")
async def _(fake: FakeOpenAI, provider: OpenAICompatibleProvider) -> None:
    calls = split_call(0, "111111111", "read_file", TODO) + split_call(1, "222222222", "read_file", NOTES)
    stream: list[Any] = [lm_studio_chunk({"role": "assistant"})]
    stream += [lm_studio_chunk({"tool_calls": [d]}) for d in calls] + [
        lm_studio_chunk({}, "tool_calls"),
        DONE,
        "",
    ]
    response = await answer(fake, provider, stream)
    assert calls_of(response) == [
        ("111111111", "read_file", {"path": "todo.txt"}),
        ("222222222", "read_file", {"path": "notes/café ☕.md"}),
    ]


@cell("lm-studio", "reasoning")
async def _(fake: FakeOpenAI, provider: OpenAICompatibleProvider) -> None:
    # "separate reasoning_content" on: reasoning_content deltas; nothing goes back through the openai profile
    stream: list[Any] = [lm_studio_chunk({"role": "assistant"})]
    stream += [lm_studio_chunk({"reasoning_content": w}) for w in ["Read ", "the file."]]
    stream += [lm_studio_chunk({"tool_calls": [d]}) for d in split_call(0, "333333333", "read_file", TODO)]
    stream += [lm_studio_chunk({}, "tool_calls"), DONE, ""]
    response = await answer(fake, provider, stream)
    assert response.reasoning == "Read the file."
    sent = await next_request(fake, provider, response)
    assert not {"reasoning_content", "reasoning", "reasoning_details"} & set(sent)


@cell("lm-studio", "usage")
async def _(fake: FakeOpenAI, provider: OpenAICompatibleProvider) -> None:
    stream = [
        lm_studio_chunk({"role": "assistant"}),
        lm_studio_chunk({"content": "Buy milk."}),
        lm_studio_chunk({}, "stop"),
        lm_studio_chunk(None, usage=usage(96, 21)),
        DONE,
        "",
    ]
    response = await answer(fake, provider, stream)
    assert (response.text, response.usage) == ("Buy milk.", Usage(96, 21))


@cell("lm-studio", "finish-reasons")
async def _(fake: FakeOpenAI, provider: OpenAICompatibleProvider) -> None:
    for reason, kind in [("stop", "stop"), ("length", "cut_off")]:
        stream = [lm_studio_chunk({"content": "Half"}), lm_studio_chunk({}, reason), DONE, ""]
        response = await answer(fake, provider, stream)
        assert (response.finish_reason, finish_kind(response.finish_reason)) == (reason, kind)


# -- the tests --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("case_id", "vendor_provider"),
    [
        pytest.param(case_id, next(v for v in VENDORS if case_id.startswith(f"{v}-")), id=case_id)
        for case_id in CASES
    ],
    indirect=["vendor_provider"],
)
async def test_vendor_cell(
    case_id: str, vendor_provider: OpenAICompatibleProvider, fake_openai: FakeOpenAI
) -> None:
    await CASES[case_id](fake_openai, vendor_provider)
    assert fake_openai.remaining == 0, "a scripted turn was never asked for"
    assert all(r.path == "/v1/chat/completions" for r in fake_openai.requests)


_PROVIDER_IN_CELL = re.compile(r"\(`STEERABLE_PROVIDER=([a-z-]+)`[^)]*\)")


def docs_table() -> dict[tuple[str, str], str]:
    """The vendor table of docs/providers.md: (vendor slug, feature slug) -> cell text."""
    lines = DOCS.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| Vendor | Tool calls |"))
    header = [c.strip() for c in lines[start].strip("|").split("|")]
    assert header[1:] == list(FEATURES.values()), header
    assert set(lines[start + 1]) <= set("|-: "), lines[start + 1]
    by_name = {name: slug for slug, (name, _, _) in VENDORS.items()}
    cells: dict[tuple[str, str], str] = {}
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        row = [c.strip() for c in line.strip().strip("|").split("|")]
        assert len(row) == len(header), line
        match = _PROVIDER_IN_CELL.search(row[0])
        assert match, f"the vendor cell names no STEERABLE_PROVIDER: {row[0]!r}"
        name = row[0][: match.start()].strip()
        assert name in by_name, f"unknown vendor {name!r} in docs/providers.md"
        vendor = by_name[name]
        assert match.group(1) == VENDORS[vendor][1], f"{name}: the tests use {VENDORS[vendor][1]}"
        for feature, text in zip(FEATURES, row[1:], strict=True):
            assert text, f"{name} / {FEATURES[feature]}: an empty cell"
            cells[vendor, feature] = text
    return cells


def test_the_docs_table_matches_the_cases() -> None:
    cells = docs_table()
    assert {vendor for vendor, _ in cells} == set(VENDORS), "a vendor row is missing"
    tested = {f"{vendor}-{feature}" for (vendor, feature), text in cells.items() if text.split()[0] == "yes"}
    assert sorted(tested - set(CASES)) == [], "docs/providers.md says yes without a test"
    assert sorted(set(CASES) - tested) == [], "a test whose cell in docs/providers.md is not yes"
    assert "tests/sidecar/providers/test_vendor_matrix.py" in DOCS.read_text(encoding="utf-8")
