"""Every vendor a user picks finishes its run: profiles, faithful round trips, honest endings (issue 29).

Round 1 streams in the vendor's own shape (``vendor_streams.py``); the loopback server then
enforces that vendor's documented rules on the *next* request (``tests/vendor_rules.py``), refusing
with the vendor's own status and body, exactly where a real run would die. Each case runs the real
:class:`AgentLoop` with the real :class:`OpenAICompatibleProvider`, configured as a user of that
vendor configures steerable (``STEERABLE_PROVIDER=<vendor>``), and checks what the user sees: the
outcome, the tokens, what round 2 carried back. The same cases then run through ``steerable run``,
the sidecar's ``agent.chat.stream`` and ``steerable acp`` (``test_vendor_surfaces.py``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import vendor_streams as streams
from pydantic import SecretStr

from fake_openai import FakeOpenAI
from steerable_agent_runtime import AgentLoop, ToolRouter
from steerable_agent_runtime.loop import RunSummary
from steerable_sidecar.providers._openai import LLMConfig, OpenAICompatibleProvider

# case: (STEERABLE_PROVIDER, model, round-1 turn, the usage the run must count)
ROUND_TRIPS: dict[str, tuple[str, str, dict[str, Any], tuple[int, int]]] = {
    "gemini-thought-signature": ("gemini", "gemini-3-pro-preview", streams.gemini(), (92 + 10, 17 + 5)),
    "moonshot-reasoning-content": ("moonshot", "kimi-k2.5", streams.moonshot(), (212 + 10, 31 + 5)),
    "deepseek-empty-reasoning": (
        "deepseek",
        "deepseek-v4",
        streams.deepseek_empty_reasoning(),
        (80 + 10, 9 + 5),
    ),
    "mistral-stream-options-and-ids": ("mistral", "devstral-small", streams.mistral_without_id(), (60, 12)),
    "groq-no-reasoning-back": ("groq", "openai/gpt-oss-20b", streams.groq(), (140 + 10, 24 + 5)),
    "cerebras-no-reasoning-back": ("cerebras", "gpt-oss-120b", streams.cerebras(), (90 + 10, 12 + 5)),
    "openai-max-completion-tokens": ("openai", "gpt-5", streams.openai_reasoning_model(), (10, 5)),
}
"""The fake adds ``(10, 5)`` for its own round-2 answer when the request asked for usage
(``stream_options``), as OpenAI does; Mistral is never asked, so its count is round 1's alone."""

VENDOR_OF = {"gemini": "gemini", "moonshot": "moonshot", "deepseek": "deepseek", "mistral": "mistral"}


def make_router() -> ToolRouter:
    router = ToolRouter()

    @router.tool()
    def read_file(path: str, limit: int | None = None) -> dict[str, Any]:
        """Read a file."""
        return {"path": path, "content": "alpha\nbeta\n"}

    return router


def config_for(fake: FakeOpenAI, provider: str, model: str, **extra: Any) -> LLMConfig:
    profile = {"openai": "openai"}.get(provider)  # loopback: name OpenAI's profile, as a test of it
    return LLMConfig(
        provider=provider,  # type: ignore[arg-type]
        model=model,
        base_url=fake.base_url,
        api_key=SecretStr("sk-vendor-test-0123456789"),
        profile=profile,
        **extra,
    )


async def run_once(fake: FakeOpenAI, config: LLMConfig, *, max_retries: int = 0) -> RunSummary:
    async with OpenAICompatibleProvider(config, max_retries=max_retries, retry_base_delay_ms=1) as llm:
        return await AgentLoop(llm, make_router()).run([], "what do the notes say?")


def assistant_with_calls(body: dict[str, Any]) -> dict[str, Any]:
    return next(m for m in body["messages"] if m["role"] == "assistant" and m.get("tool_calls"))


@pytest.mark.parametrize("case", list(ROUND_TRIPS))
async def test_each_vendor_finishes_a_tool_using_run(fake_openai: FakeOpenAI, case: str) -> None:
    provider, model, first, (prompt_tokens, completion_tokens) = ROUND_TRIPS[case]
    fake_openai.vendor = provider
    fake_openai.script([first, "The notes say alpha and beta."])
    summary = await run_once(fake_openai, config_for(fake_openai, provider, model))
    assert summary.outcome == "completed", (summary.error, [r.body for r in fake_openai.requests][-1:])
    assert summary.text == "The notes say alpha and beta."
    assert (summary.usage.prompt_tokens, summary.usage.completion_tokens) == (
        prompt_tokens,
        completion_tokens,
    )
    assert len(fake_openai.requests) == 2  # no refusal, no retry


def test_the_vendor_rules_refuse_what_steerable_used_to_send() -> None:
    """The controls: without the profile's handling, each rule refuses round 2 (the fake is not lax)."""
    from vendor_rules import RULES

    stripped_call = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "function-call-1",
                "type": "function",
                "function": {"name": "read_file", "arguments": "{}"},
            }
        ],
    }
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}, stripped_call]}
    status, error = RULES["gemini"]("/v1/chat/completions", "", {}, body)  # type: ignore[misc]
    assert status == 400 and "thought_signature" in json.dumps(error)
    status, error = RULES["moonshot"]("/v1/chat/completions", "", {}, body)  # type: ignore[misc]
    assert status == 400 and "reasoning_content is missing" in error["error"]["message"]
    status, error = RULES["deepseek"]("/v1/chat/completions", "", {}, body)  # type: ignore[misc]
    assert status == 400
    status, error = RULES["mistral"](
        "/v1/chat/completions", "", {}, {**body, "stream_options": {"include_usage": True}}
    )  # type: ignore[misc]
    assert status == 422
    status, error = RULES["mistral"]("/v1/chat/completions", "", {}, body)  # type: ignore[misc]
    assert status == 400 and "length of 9" in error["message"]
    with_reasoning = {**body, "messages": [{**stripped_call, "reasoning_content": "x"}]}
    for vendor in ("groq", "cerebras", "openai"):
        refused = RULES[vendor]("/v1/chat/completions", "", {}, with_reasoning)
        assert refused is not None and refused[0] == 400, vendor
    refused = RULES["openai"](
        "/v1/chat/completions", "", {}, {"model": "gpt-5", "messages": [], "max_tokens": 5}
    )
    assert refused is not None and "max_completion_tokens" in json.dumps(refused[1])


async def test_gemini_signature_goes_back_on_its_own_call_only(fake_openai: FakeOpenAI) -> None:
    fake_openai.vendor = "gemini"
    fake_openai.script([streams.gemini(), "done"])
    await run_once(fake_openai, config_for(fake_openai, "gemini", "gemini-3-pro-preview"))
    calls = assistant_with_calls(fake_openai.requests[1].body)["tool_calls"]
    assert calls[0]["extra_content"] == {"google": {"thought_signature": streams.SIGNATURE}}
    assert "extra_content" not in calls[1]
    assert [c["id"] for c in calls] == [
        "function-call-15818428476208044830",
        "function-call-15818428476208044831",
    ]


async def test_a_gemini_signature_is_not_sent_to_another_vendor(fake_openai: FakeOpenAI) -> None:
    """A record made with Gemini, resumed against OpenAI: the echoed field is stripped (OpenAI refuses it)."""
    fake_openai.vendor = "gemini"
    fake_openai.script([streams.gemini(), "done"])
    await run_once(fake_openai, config_for(fake_openai, "gemini", "gemini-3-pro-preview"))
    history = fake_openai.requests[1].body["messages"]
    fake_openai.reset()
    fake_openai.vendor = "openai"
    fake_openai.script(["continued"])
    async with OpenAICompatibleProvider(config_for(fake_openai, "openai", "gpt-4.1"), max_retries=0) as llm:
        summary = await AgentLoop(llm, make_router()).run(history, "go on")
    assert summary.outcome == "completed", summary.error
    sent = assistant_with_calls(fake_openai.requests[0].body)
    assert all("extra_content" not in call for call in sent["tool_calls"])


async def test_moonshot_and_deepseek_carry_reasoning_back_even_empty(fake_openai: FakeOpenAI) -> None:
    fake_openai.vendor = "moonshot"
    fake_openai.script([streams.moonshot(), "done"])
    await run_once(fake_openai, config_for(fake_openai, "moonshot", "kimi-k2.5"))
    sent = assistant_with_calls(fake_openai.requests[1].body)
    assert sent["reasoning_content"] == "The user wants notes. Read notes.txt."
    fake_openai.reset()
    fake_openai.vendor = "deepseek"
    fake_openai.script([streams.deepseek_empty_reasoning(), "done"])
    await run_once(fake_openai, config_for(fake_openai, "deepseek", "deepseek-v4"))
    assert assistant_with_calls(fake_openai.requests[1].body)["reasoning_content"] == ""


async def test_mistral_gets_no_stream_options_and_nine_character_ids(fake_openai: FakeOpenAI) -> None:
    fake_openai.vendor = "mistral"
    fake_openai.script([streams.mistral_without_id(), "done"])
    summary = await run_once(fake_openai, config_for(fake_openai, "mistral", "devstral-small"))
    assert summary.outcome == "completed", summary.error
    first, second = (r.body for r in fake_openai.requests)
    assert "stream_options" not in first and "stream_options" not in second
    call_id = assistant_with_calls(second)["tool_calls"][0]["id"]
    answer = next(m for m in second["messages"] if m["role"] == "tool")
    assert len(call_id) == 9 and call_id.isalnum() and answer["tool_call_id"] == call_id


async def test_a_history_with_long_ids_reaches_mistral_as_nine_character_ids(fake_openai: FakeOpenAI) -> None:
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "read"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_PTLP8xhu3uwZk4l3nlnrrJha",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": "{}"},
                },
                {
                    "id": "c8x2kq0000abcdefghijklmn",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": "{}"},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_PTLP8xhu3uwZk4l3nlnrrJha", "content": "{}"},
        {"role": "tool", "tool_call_id": "c8x2kq0000abcdefghijklmn", "content": "{}"},
    ]
    fake_openai.vendor = "mistral"
    fake_openai.script(["ok"])
    summary = await run_once_with(
        fake_openai, config_for(fake_openai, "mistral", "mistral-large-latest"), history
    )
    assert summary.outcome == "completed", summary.error
    body = fake_openai.requests[0].body
    ids = [c["id"] for c in assistant_with_calls(body)["tool_calls"]]
    answered = [m["tool_call_id"] for m in body["messages"] if m["role"] == "tool"]
    assert ids == answered and len(set(ids)) == 2 and all(len(i) == 9 and i.isalnum() for i in ids)


async def run_once_with(fake: FakeOpenAI, config: LLMConfig, history: list[dict[str, Any]]) -> RunSummary:
    async with OpenAICompatibleProvider(config, max_retries=0) as llm:
        return await AgentLoop(llm, make_router()).run(history, "go on")


# -- honest endings -----------------------------------------------------------------------------------


async def test_vllm_abort_ends_as_a_provider_error_not_a_partial_success(fake_openai: FakeOpenAI) -> None:
    fake_openai.script([streams.vllm_abort()])
    summary = await run_once(fake_openai, config_for(fake_openai, "vllm", "Qwen/Qwen3-8B"))
    assert summary.outcome == "error"
    assert summary.error is not None and "finish_reason abort" in summary.error


async def test_minimax_in_stream_error_ends_as_a_provider_error(fake_openai: FakeOpenAI) -> None:
    fake_openai.script([streams.minimax_stream_error()])
    summary = await run_once(fake_openai, config_for(fake_openai, "minimax", "MiniMax-M2"))
    assert summary.outcome == "error"
    assert summary.error is not None and "output new_sensitive (status_code 1027)" in summary.error


async def test_minimax_rate_limit_with_status_200_is_retried(fake_openai: FakeOpenAI) -> None:
    fake_openai.script([streams.MINIMAX_RATE_LIMIT_200, "Fine."])
    summary = await run_once(fake_openai, config_for(fake_openai, "minimax", "MiniMax-M2"), max_retries=2)
    assert summary.outcome == "completed" and summary.text == "Fine."
    assert len(fake_openai.requests) == 2


async def test_minimax_rate_limit_message_reaches_the_user_when_retries_run_out(
    fake_openai: FakeOpenAI,
) -> None:
    fake_openai.script([streams.MINIMAX_RATE_LIMIT_200])
    summary = await run_once(fake_openai, config_for(fake_openai, "minimax", "MiniMax-M2"))
    assert summary.outcome == "error"
    assert summary.error is not None and "rate limit exceeded(RPM) (status_code 1002)" in summary.error


async def test_a_refusal_ends_the_run_refused_with_the_vendors_words(fake_openai: FakeOpenAI) -> None:
    fake_openai.script([streams.refusal()])
    summary = await run_once(fake_openai, config_for(fake_openai, "openai", "gpt-4o"))
    assert summary.outcome == "refused"
    assert summary.error == "the model refused: I'm sorry, I can't help with that."
    assert len(fake_openai.requests) == 1  # a refusal is an answer: never asked again as an empty one


async def test_an_unparsed_tool_call_goes_back_to_the_model_once(fake_openai: FakeOpenAI) -> None:
    fake_openai.script([streams.LLAMA_CPP_UNPARSED_500, "The notes say alpha."])
    summary = await run_once(fake_openai, config_for(fake_openai, "llama-cpp", "smollm2"), max_retries=2)
    assert summary.outcome == "completed" and summary.text == "The notes say alpha."
    assert len(fake_openai.requests) == 2  # the failed request was not sent again as it was
    told = fake_openai.requests[1].body["messages"][-1]
    result = json.loads(told["content"])
    assert told["role"] == "user" and result["needsFollowup"] is True and result["success"] is False
    assert result["data"]["code"] == "unparsed_tool_call" and "Failed to parse input" in result["error"]


async def test_an_unparsed_tool_call_twice_in_a_row_ends_the_run(fake_openai: FakeOpenAI) -> None:
    fake_openai.script([streams.LLAMA_CPP_UNPARSED_500, streams.LLAMA_CPP_UNPARSED_500])
    summary = await run_once(fake_openai, config_for(fake_openai, "llama-cpp", "smollm2"), max_retries=2)
    assert summary.outcome == "error" and len(fake_openai.requests) == 2
    assert summary.error is not None and "Failed to parse input" in summary.error


# -- request settings and URLs ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("base", "path", "query"),
    [
        (
            "/openai/deployments/gpt-4o?api-version=2024-10-21",
            "/openai/deployments/gpt-4o/chat/completions",
            "api-version=2024-10-21",
        ),
        ("/openai/v1", "/openai/v1/chat/completions", ""),
    ],
)
async def test_azure_both_url_forms_with_the_api_key_header(
    fake_openai: FakeOpenAI, base: str, path: str, query: str
) -> None:
    fake_openai.vendor = "azure"
    fake_openai.script(["hi"])
    config = LLMConfig(
        provider="azure",
        model="gpt-4o",
        base_url=f"http://127.0.0.1:{fake_openai.port}{base}",
        api_key=SecretStr("azure-key-0123456789"),
    )
    async with OpenAICompatibleProvider(config, max_retries=0) as llm:
        summary = await AgentLoop(llm, make_router()).run([], "hi")
    assert summary.outcome == "completed", summary.error
    (received,) = fake_openai.requests
    assert (received.path, received.query) == (path, query)
    assert received.headers["api-key"] == "azure-key-0123456789" and "authorization" not in received.headers
    assert received.body["max_completion_tokens"] == 8192


@pytest.mark.parametrize(
    ("provider", "thinking", "sent"),
    [
        ("openai", "high", {"reasoning_effort": "high"}),
        ("openai", "off", {"reasoning_effort": "none"}),
        ("deepseek", "on", {"thinking": {"type": "enabled"}}),
        ("moonshot", "off", {"thinking": {"type": "disabled"}}),
        ("qwen", "on", {"enable_thinking": True}),
        ("vllm", "off", {"chat_template_kwargs": {"enable_thinking": False}}),
        ("llama-cpp", "on", {"chat_template_kwargs": {"enable_thinking": True}}),
        ("anthropic", "low", {"thinking": {"type": "enabled", "budget_tokens": 2048}}),
        ("openrouter", "medium", {"reasoning": {"effort": "medium"}}),
        ("openrouter", "off", {"reasoning": {"enabled": False}}),
    ],
)
async def test_thinking_is_sent_the_way_each_vendor_reads_it(
    fake_openai: FakeOpenAI, provider: str, thinking: str, sent: dict[str, Any]
) -> None:
    fake_openai.script(["ok"])
    await run_once(fake_openai, config_for(fake_openai, provider, "m", thinking=thinking))
    body = fake_openai.requests[0].body
    assert {key: body[key] for key in sent} == sent


async def test_settings_and_extras_reach_the_request(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(["ok"])
    config = config_for(
        fake_openai,
        "groq",
        "llama-3.3-70b-versatile",
        max_tokens=512,
        temperature=0.3,
        extra_headers={"X-Title": "steerable tests"},
        extra_body={"service_tier": "flex", "top_p": 0.9},
    )
    await run_once(fake_openai, config)
    (received,) = fake_openai.requests
    body = received.body
    assert body["max_completion_tokens"] == 512 and "max_tokens" not in body
    assert body["temperature"] == 0.3 and body["service_tier"] == "flex" and body["top_p"] == 0.9
    assert received.headers["x-title"] == "steerable tests"


async def test_max_tokens_zero_sends_no_bound(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(["ok"])
    await run_once(fake_openai, config_for(fake_openai, "vllm", "m", max_tokens=0))
    body = fake_openai.requests[0].body
    assert "max_tokens" not in body and "max_completion_tokens" not in body


async def test_a_refused_bound_names_the_variable(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(
        [
            {
                "status": 400,
                "body": {
                    "error": {
                        "message": "max_tokens must be less than or equal to `8192`",
                        "type": "invalid_request_error",
                    }
                },
            }
        ]
    )
    summary = await run_once(fake_openai, config_for(fake_openai, "vllm", "m", max_tokens=100_000))
    assert (
        summary.error is not None and "(set STEERABLE_MAX_TOKENS to what the model accepts" in summary.error
    )


def test_the_record_keeps_what_goes_back(tmp_path: Path) -> None:
    """Echoed fields live in the assistant message, so a resumed session sends them again."""
    from steerable_agent_runtime.llm import ChatResponse, parse_tool_call

    call = parse_tool_call("fc1", "read_file", "{}")
    response = ChatResponse(
        tool_calls=(call,), call_fields={"fc1": {"extra_content": {"google": {"thought_signature": "s"}}}}
    )
    message = response.assistant_message()
    assert message["tool_calls"][0]["extra_content"] == {"google": {"thought_signature": "s"}}
    assert message["tool_calls"][0]["id"] == "fc1"


# -- tools the model actually sees --------------------------------------------------------------------

CHATML_WITHOUT_TOOLS = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"


async def test_a_llama_cpp_template_that_drops_the_tools_fails_before_the_first_round(
    fake_openai: FakeOpenAI,
) -> None:
    fake_openai.canned["/apply-template"] = {"prompt": CHATML_WITHOUT_TOOLS}
    fake_openai.script(["I made this answer up."])
    summary = await run_once(fake_openai, config_for(fake_openai, "llama-cpp", "smollm2"))
    assert summary.outcome == "error" and fake_openai.requests == []  # the model was never called
    assert summary.error is not None
    assert "renders no tools into the prompt: its chat template has no place for them" in summary.error
    (probe,) = fake_openai.probes
    assert probe.path == "/apply-template"
    assert [t["function"]["name"] for t in probe.body["tools"]] == ["read_file"]


async def test_a_llama_cpp_template_that_renders_the_tools_passes_once(fake_openai: FakeOpenAI) -> None:
    def render(body: dict[str, Any]) -> dict[str, Any]:
        return {"prompt": "<tools>" + json.dumps(body["tools"]) + "</tools>" + CHATML_WITHOUT_TOOLS}

    fake_openai.canned["/apply-template"] = render
    fake_openai.script([streams.gemini(), "The notes say alpha."])
    summary = await run_once(fake_openai, config_for(fake_openai, "llama-cpp", "smollm2"))
    assert summary.outcome == "completed", summary.error
    assert len(fake_openai.probes) == 1 and len(fake_openai.requests) == 2  # asked once, not per round


async def test_without_apply_template_the_props_caps_decide(fake_openai: FakeOpenAI) -> None:
    fake_openai.canned["/props"] = {
        "chat_template_caps": {"supports_tools": False, "supports_tool_calls": False}
    }
    summary = await run_once(fake_openai, config_for(fake_openai, "llama-cpp", "smollm2"))
    assert summary.outcome == "error" and summary.error is not None
    assert "chat_template_caps.supports_tools is false" in summary.error
    assert [p.path for p in fake_openai.probes] == ["/apply-template", "/props"]


async def test_a_server_that_cannot_say_gets_the_benefit_of_the_doubt(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(["ok"])  # no /apply-template, no /props: 404s, as on another server
    summary = await run_once(fake_openai, config_for(fake_openai, "llama-cpp", "smollm2"))
    assert summary.outcome == "completed", summary.error


async def test_an_ollama_model_without_the_tools_capability_fails_before_the_first_round(
    fake_openai: FakeOpenAI,
) -> None:
    fake_openai.canned["/api/show"] = {"capabilities": ["completion"], "details": {"family": "gemma"}}
    summary = await run_once(fake_openai, config_for(fake_openai, "ollama", "gemma:2b"))
    assert summary.outcome == "error" and fake_openai.requests == []
    assert summary.error is not None
    assert "Ollama's model gemma:2b has no tools capability (capabilities: completion)" in summary.error
    assert fake_openai.probes[0].body == {"model": "gemma:2b"}
    fake_openai.reset()
    fake_openai.canned["/api/show"] = {"capabilities": ["completion", "tools"]}
    fake_openai.script(["ok"])
    assert (await run_once(fake_openai, config_for(fake_openai, "ollama", "qwen3:8b"))).outcome == "completed"


async def test_an_unparsed_tool_call_mid_stream_goes_back_to_the_model_too(fake_openai: FakeOpenAI) -> None:
    """llama.cpp streaming: the text went out, then the parser fails at the end with an ``error:`` line."""
    chunk = {"choices": [{"index": 0, "delta": {"content": '<tool_call>\n{"name": "read_file"'}}]}
    error = {
        "code": 500,
        "message": 'Failed to parse input at pos 12: <tool_call>\n{"name"',
        "type": "server_error",
    }
    fake_openai.script(
        [
            {"raw_sse": [chunk, f"error: {json.dumps(error)}", "", "data: [DONE]", ""]},
            "The notes say alpha.",
        ]
    )
    summary = await run_once(fake_openai, config_for(fake_openai, "llama-cpp", "smollm2"), max_retries=2)
    assert summary.outcome == "completed" and len(fake_openai.requests) == 2
    told = json.loads(fake_openai.requests[1].body["messages"][-1]["content"])
    assert told["data"]["code"] == "unparsed_tool_call"


# -- what an attack round found (hostile servers, settings that leak) --------------------------------


@pytest.mark.parametrize(
    "body",
    [b"[" * 100_000 + b"]" * 100_000, b'{"prompt": "' + b"x" * (5 * 1024 * 1024) + b'"}', b"not json"],
    ids=["nested-past-the-decoder", "over-4-MiB", "not-json"],
)
async def test_a_probe_answer_that_cannot_be_read_gives_the_benefit_of_the_doubt(
    fake_openai: FakeOpenAI, body: bytes
) -> None:
    fake_openai.canned["/apply-template"] = body
    fake_openai.script(["ok"])
    summary = await run_once(fake_openai, config_for(fake_openai, "llama-cpp", "smollm2"))
    assert summary.outcome == "completed", summary.error


async def test_usage_past_what_json_counts_exactly_reads_as_zero(fake_openai: FakeOpenAI) -> None:
    huge = int("9" * 4300)
    chunk = {"choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": "stop"}]}
    fake_openai.script(
        [
            {
                "raw_sse": [
                    {**chunk, "usage": {"prompt_tokens": huge, "completion_tokens": 7}},
                    "data: [DONE]",
                    "",
                ]
            }
        ]
    )
    summary = await run_once(fake_openai, config_for(fake_openai, "vllm", "m"))
    assert summary.outcome == "completed" and (
        summary.usage.prompt_tokens,
        summary.usage.completion_tokens,
    ) == (0, 7)


async def test_fragments_of_echoed_fields_and_reasoning_blocks_join_in_order(fake_openai: FakeOpenAI) -> None:
    pieces = [f"p{i};" for i in range(2_000)]
    chunks: list[Any] = [
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "reasoning_details": [{"type": "reasoning.text", "index": 0, "text": piece}],
                        "tool_calls": [
                            {"index": 0, "extra_content": {"google": {"thought_signature": piece}}}
                        ],
                    },
                }
            ]
        }
        for piece in pieces
    ]
    chunks[0]["choices"][0]["delta"]["tool_calls"][0] |= {
        "id": "c1",
        "function": {"name": "read_file", "arguments": ARGS_JSON},
    }
    chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    fake_openai.script([{"raw_sse": [*chunks, "data: [DONE]", ""]}, "done"])
    await run_once(fake_openai, config_for(fake_openai, "gemini", "g"))
    sent = assistant_with_calls(fake_openai.requests[1].body)
    assert sent["tool_calls"][0]["extra_content"]["google"]["thought_signature"] == "".join(pieces)


ARGS_JSON = json.dumps({"path": "notes.txt"})


@pytest.mark.parametrize(("status", "retried"), [(429, True), (401, False)])
async def test_a_4xx_that_mentions_a_tool_call_is_never_taken_for_the_models_slip(
    fake_openai: FakeOpenAI, status: int, retried: bool
) -> None:
    error = {"error": {"message": "invalid tool call quota: failed to parse input", "type": "x"}}
    fake_openai.script([{"status": status, "body": error}, "ok"])
    summary = await run_once(fake_openai, config_for(fake_openai, "llama-cpp", "smollm2"), max_retries=1)
    if retried:
        assert summary.outcome == "completed" and len(fake_openai.requests) == 2
        assert all(
            m["role"] != "user" or "unparsed" not in str(m["content"])
            for m in fake_openai.requests[1].body["messages"]
        )
    else:
        assert summary.outcome == "error" and len(fake_openai.requests) == 1


async def test_an_extra_header_value_echoed_by_the_server_is_scrubbed(fake_openai: FakeOpenAI) -> None:
    gateway = "pk-gateway-secret-0123456789"
    fake_openai.script([{"status": 400, "body": {"error": {"message": f"bad key {gateway} for route"}}}])
    summary = await run_once(
        fake_openai, config_for(fake_openai, "vllm", "m", extra_headers={"x-portkey-api-key": gateway})
    )
    assert summary.error is not None and gateway not in summary.error and "[redacted]" in summary.error


async def test_a_huge_refusal_is_clipped_in_the_summary(fake_openai: FakeOpenAI) -> None:
    words = "no " * 1_000_000
    chunk = {"choices": [{"index": 0, "delta": {"refusal": words}, "finish_reason": "stop"}]}
    fake_openai.script([{"raw_sse": [chunk, "data: [DONE]", ""]}])
    summary = await run_once(fake_openai, config_for(fake_openai, "openai", "gpt-4o"))
    assert summary.outcome == "refused" and summary.error is not None and len(summary.error) < 4_100


async def test_a_base_resp_whose_status_is_not_a_number_is_no_error(fake_openai: FakeOpenAI) -> None:
    chunk = {
        "choices": [{"index": 0, "delta": {"content": "fine"}, "finish_reason": "stop"}],
        "base_resp": {"status_code": True},
    }
    fake_openai.script([{"raw_sse": [chunk, "data: [DONE]", ""]}])
    summary = await run_once(fake_openai, config_for(fake_openai, "minimax", "m"))
    assert summary.outcome == "completed" and summary.text == "fine"
