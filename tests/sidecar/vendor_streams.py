"""Round-1 streams in each vendor's own shape, for the round-trip tests (``test_vendor_round_trips``).

Each function returns a ``raw_sse`` turn for ``tests/fake_openai.py``: the vendor's chunk envelope,
where it puts reasoning, usage and extra fields, as its API reference documents and its servers
send (late 2025 / 2026). Every one calls ``read_file`` on ``notes.txt``, so round 2 carries back
what round 1 streamed, and the fake (``vendor=...``) refuses it the way the vendor does when it
is not carried back right.
"""

from __future__ import annotations

import json
from typing import Any

ARGS = json.dumps({"path": "notes.txt"})
SIGNATURE = "CiQBcsjafBZ3H0QkGR0v8ZJpRP1mGgWQ8qWnKqrJ4Xv/5Ylb0Z0KcAFyyNp8"


def _chunk(delta: dict[str, Any], finish: str | None = None, **envelope: Any) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1764547200,
        **envelope,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def _done(*chunks: Any) -> dict[str, Any]:
    return {"raw_sse": [*chunks, "data: [DONE]", ""]}


def gemini() -> dict[str, Any]:
    """Gemini 3: two parallel calls in one chunk, the first carrying the step's thought signature."""
    calls = [
        {
            "extra_content": {"google": {"thought_signature": SIGNATURE}},
            "function": {"arguments": ARGS, "name": "read_file"},
            "id": "function-call-15818428476208044830",
            "type": "function",
            "index": 0,
        },
        {
            "function": {"arguments": json.dumps({"path": "notes.txt", "limit": 1}), "name": "read_file"},
            "id": "function-call-15818428476208044831",
            "type": "function",
            "index": 1,
        },
    ]
    usage = {"completion_tokens": 17, "prompt_tokens": 92, "total_tokens": 181}
    return _done(
        _chunk(
            {"role": "assistant", "tool_calls": calls},
            "tool_calls",
            model="gemini-3-pro-preview",
            usage=usage,
        )
    )


def moonshot() -> dict[str, Any]:
    """Kimi K2.5 (thinking on by default): reasoning first, the call, usage inside the choice."""
    last = _chunk({}, "tool_calls", model="kimi-k2.5")
    last["choices"][0]["usage"] = {"prompt_tokens": 212, "completion_tokens": 31, "total_tokens": 243}
    return _done(
        _chunk({"role": "assistant", "content": ""}, model="kimi-k2.5"),
        _chunk({"reasoning_content": "The user wants notes. "}, model="kimi-k2.5"),
        _chunk({"reasoning_content": "Read notes.txt."}, model="kimi-k2.5"),
        _chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "functions.read_file:0",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": ""},
                    }
                ]
            },
            model="kimi-k2.5",
        ),
        _chunk({"tool_calls": [{"index": 0, "function": {"arguments": ARGS}}]}, model="kimi-k2.5"),
        last,
    )


def deepseek_empty_reasoning() -> dict[str, Any]:
    """DeepSeek V4 thinking mode calling a tool straight away: no reasoning text at all."""
    envelope = {"model": "deepseek-v4", "system_fingerprint": "fp_ffc7281d48_prod0820_fp8_kvcache"}
    return _done(
        _chunk({"role": "assistant", "content": None, "reasoning_content": None}, **envelope),
        _chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_00_Vb3xkQ9rT2mN7pLs4Wd8Jf1H",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": ARGS},
                    }
                ]
            },
            **envelope,
        ),
        _chunk({}, "tool_calls", **envelope),
        {
            **_chunk({}, None, **envelope),
            "choices": [],
            "usage": {"prompt_tokens": 80, "completion_tokens": 9},
        },
    )


def mistral_without_id() -> dict[str, Any]:
    """A Mistral-format server (vLLM serving Devstral) that sends the call without an id."""
    return _done(
        _chunk({"role": "assistant", "content": ""}, model="devstral-small"),
        _chunk(
            {"tool_calls": [{"index": 0, "function": {"name": "read_file", "arguments": ARGS}}]},
            "tool_calls",
            model="devstral-small",
            usage={"prompt_tokens": 60, "completion_tokens": 12, "total_tokens": 72},  # always, unasked
        ),
    )


def groq() -> dict[str, Any]:
    """Groq serving gpt-oss: ``reasoning`` deltas, usage under ``x_groq``."""
    return _done(
        _chunk(
            {"role": "assistant", "content": None, "reasoning": "Need the notes."}, model="openai/gpt-oss-20b"
        ),
        _chunk(
            {
                "tool_calls": [
                    {
                        "id": "fc_7f1a2b3c",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": ARGS},
                        "index": 0,
                    }
                ]
            },
            model="openai/gpt-oss-20b",
        ),
        {
            **_chunk({}, "tool_calls", model="openai/gpt-oss-20b"),
            "x_groq": {
                "id": "req_01jt0xby4ffanamrs6m40mv0fy",
                "usage": {"prompt_tokens": 140, "completion_tokens": 24, "total_tokens": 164},
            },
        },
    )


def cerebras() -> dict[str, Any]:
    """Cerebras serving a reasoning model: ``reasoning`` deltas, usage in the last chunk."""
    return _done(
        _chunk({"role": "assistant", "reasoning": "Read it."}, model="gpt-oss-120b"),
        _chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "7c4e9a1b2",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": ARGS},
                    }
                ]
            },
            "tool_calls",
            model="gpt-oss-120b",
            usage={"prompt_tokens": 90, "completion_tokens": 12, "total_tokens": 102},
        ),
    )


def openai_reasoning_model() -> dict[str, Any]:
    """OpenAI's gpt-5 in chat completions: a plain call (its reasoning is never returned here)."""
    return _done(
        _chunk(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_abc123",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": ""},
                    }
                ],
            },
            model="gpt-5",
        ),
        _chunk({"tool_calls": [{"index": 0, "function": {"arguments": ARGS}}]}, model="gpt-5"),
        _chunk({}, "tool_calls", model="gpt-5"),
    )


def refusal() -> dict[str, Any]:
    """OpenAI declining: the words arrive in ``refusal`` deltas, ``content`` stays null."""
    return _done(
        _chunk({"role": "assistant", "content": None, "refusal": ""}, model="gpt-4o"),
        _chunk({"refusal": "I'm sorry, "}, model="gpt-4o"),
        _chunk({"refusal": "I can't help with that."}, model="gpt-4o"),
        _chunk({}, "stop", model="gpt-4o"),
    )


def vllm_abort() -> dict[str, Any]:
    """vLLM aborting a request mid-answer (preempted, or the engine shutting down)."""
    return _done(
        _chunk({"role": "assistant", "content": "The notes say"}, model="Qwen/Qwen3-8B"),
        _chunk({"content": " alpha and"}, model="Qwen/Qwen3-8B"),
        _chunk({}, "abort", model="Qwen/Qwen3-8B"),
    )


def minimax_stream_error() -> dict[str, Any]:
    """MiniMax reporting a failure inside the stream through ``base_resp``."""
    return _done(
        _chunk({"role": "assistant", "content": "Sure, "}, model="MiniMax-M2"),
        {
            **_chunk({"content": ""}, "stop", model="MiniMax-M2"),
            "base_resp": {"status_code": 1027, "status_msg": "output new_sensitive"},
        },
    )


MINIMAX_RATE_LIMIT_200: dict[str, Any] = {
    "status": 200,
    "body": {
        "id": "",
        "choices": None,
        "base_resp": {"status_code": 1002, "status_msg": "rate limit exceeded(RPM)"},
    },
}
"""MiniMax's rate limit: HTTP 200, a JSON body with no choices and ``base_resp`` 1002."""

LLAMA_CPP_UNPARSED_500: dict[str, Any] = {
    "status": 500,
    "body": {
        "error": {
            "code": 500,
            "message": 'Failed to parse input at pos 14: <tool_call>\n{"name": "read_file", "arguments": {"path": notes',
            "type": "server_error",
        }
    },
}
"""llama.cpp's server when it cannot parse the model's tool call (it answers 500)."""
