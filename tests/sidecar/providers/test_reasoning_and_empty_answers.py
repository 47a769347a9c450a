"""Thinking models' reasoning round trip and empty answers, over the real loopback server.

The byte streams replay what the vendors send (DeepSeek's thinking mode: ``reasoning_content``
deltas, then the tool call); the fake server rejects a round-2 request that dropped the reasoning
with DeepSeek's own 400, and an assistant message with ``content: null`` as Ollama does.
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
from steerable_agent_runtime import AgentLoop, ScriptedProvider, ToolRouter
from steerable_agent_runtime.llm import ChatRequest, ChatResponse, ReasoningDelta, parse_tool_call
from steerable_sidecar.providers._openai import LLMConfig, OpenAICompatibleProvider, ProviderName

Run = Callable[..., subprocess.CompletedProcess[str]]

REASONING = "The user wants the todo list. I should read todo.txt first."


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    """One chunk as DeepSeek streams it (``system_fingerprint``, ``logprobs: null``)."""
    return {
        "id": "5b8c7e2a-0d3f-4a51-9e1c-7f6a2b9d4c10",
        "object": "chat.completion.chunk",
        "created": 1764547200,
        "model": "deepseek-reasoner",
        "system_fingerprint": "fp_ffc7281d48_prod0820_fp8_kvcache",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }


def deepseek_thinking_tool_call(call_id: str = "call_00_Vb3xkQ9rT2mN7pLs4Wd8Jf1H") -> list[Any]:
    """DeepSeek's thinking-mode stream for a tool call: reasoning first, then the call's pieces."""
    words = REASONING.split(" ")
    reasoning = [_chunk({"content": None, "reasoning_content": w + " "}) for w in words[:-1]]
    arguments = ['{"', "path", '":"', "todo", ".txt", '"}']
    return [
        _chunk({"role": "assistant", "content": None, "reasoning_content": ""}),
        *reasoning,
        ": keep-alive",
        "",
        _chunk({"content": None, "reasoning_content": words[-1]}),
        _chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": call_id,
                        "type": "function",
                        "function": {"name": "read_file", "arguments": ""},
                    }
                ]
            }
        ),
        *[_chunk({"tool_calls": [{"index": 0, "function": {"arguments": a}}]}) for a in arguments],
        _chunk({"content": "", "reasoning_content": None}, "tool_calls"),
        {
            **_chunk({}),
            "choices": [],
            "usage": {
                "prompt_tokens": 412,
                "completion_tokens": 61,
                "total_tokens": 473,
                "prompt_tokens_details": {"cached_tokens": 384},
                "completion_tokens_details": {"reasoning_tokens": 40},
                "prompt_cache_hit_tokens": 384,
                "prompt_cache_miss_tokens": 28,
            },
        },
        "data: [DONE]",
        "",
    ]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "todo.txt").write_text("buy milk\n")
    return root


@pytest.fixture
def run(tmp_path: Path, ws: Path, fake_openai: FakeOpenAI, child_env: Callable[..., dict[str, str]]) -> Run:
    def _run(provider: str, *args: str) -> subprocess.CompletedProcess[str]:
        env = child_env(
            STEERABLE_STATE_DIR=str(tmp_path / "state"),
            STEERABLE_PROVIDER=provider,
            STEERABLE_MODEL="deepseek-reasoner",
            STEERABLE_BASE_URL=fake_openai.base_url,
            STEERABLE_API_KEY="sk-test-reasoning",
        )
        return subprocess.run(
            [
                sys.executable,
                "-P",
                "-m",
                "steerable_sidecar",
                "run",
                "--cwd",
                str(ws),
                "--no-web-tools",
                *args,
            ],
            capture_output=True,
            text=True,
            encoding="utf-8",
            env=env,
            stdin=subprocess.DEVNULL,
            timeout=60,
            check=False,
        )

    return _run


def recorded(tmp_path: Path, session: str) -> list[dict[str, Any]]:
    path = tmp_path / "state" / "sessions" / f"{session}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def assistant_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in body["messages"] if m["role"] == "assistant"]


# -- reasoning ------------------------------------------------------------------------------------


def test_a_deepseek_thinking_run_with_a_tool_call_completes_and_resumes(  # LOOP-2, REC-2
    run: Run, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    fake_openai.script(
        [
            {"raw_sse": deepseek_thinking_tool_call()},
            {"text": "You need to buy milk.", "require_reasoning": "reasoning_content"},
        ]
    )
    proc = run("deepseek", "--instruction", "what is on my list?", "--session-id", "think")
    assert proc.returncode == 0, proc.stderr
    summary = summary_of(proc)
    assert summary["outcome"] == "completed" and summary["toolCalls"] == 1
    assert "should read todo.txt" in proc.stderr  # streamed to the progress display...
    assert "should read todo.txt" not in proc.stdout  # ...never to the summary line
    back = assistant_messages(fake_openai.requests[1].body)
    assert back[0]["reasoning_content"] == REASONING and back[0]["tool_calls"]
    messages = [e["message"] for e in recorded(tmp_path, "think") if e["type"] == "message"]
    assert [m.get("reasoning_content") for m in messages if m["role"] == "assistant"] == [REASONING, None]

    # a later process resumes from the record: the reasoning goes back again
    fake_openai.script([{"text": "Still milk.", "require_reasoning": "reasoning_content"}])
    again = run("deepseek", "--instruction", "and now?", "--session-id", "think", "--quiet")
    assert again.returncode == 0, again.stderr
    assert assistant_messages(fake_openai.requests[2].body)[0]["reasoning_content"] == REASONING


def test_without_the_round_trip_deepseek_answers_400_and_the_run_exits_4(
    run: Run, fake_openai: FakeOpenAI
) -> None:
    # the control: the openai profile strips the reasoning, so the fake's DeepSeek check refuses
    fake_openai.script(
        [{"raw_sse": deepseek_thinking_tool_call()}, {"text": "x", "require_reasoning": "reasoning_content"}]
    )
    proc = run("openai", "--instruction", "what is on my list?", "--quiet")
    assert proc.returncode == 4
    assert "reasoning_content in the thinking mode must be passed back" in summary_of(proc)["error"]
    assert "reasoning_content" not in assistant_messages(fake_openai.requests[1].body)[0]


HISTORY: list[dict[str, Any]] = [
    {"role": "user", "content": "hi"},
    {
        "role": "assistant",
        "content": None,
        "reasoning_content": "Think.",
        "reasoning_details": [{"type": "reasoning.text", "text": "Think.", "index": 0}],
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "{}"},
]


@pytest.mark.parametrize(
    ("provider", "sent"),
    [
        ("openai", {}),
        ("deepseek", {"reasoning_content": "Think."}),
        ("glm", {"reasoning_content": "Think."}),
        ("ollama", {"reasoning": "Think."}),
        ("openrouter", {"reasoning_details": [{"type": "reasoning.text", "text": "Think.", "index": 0}]}),
    ],
)
async def test_each_provider_profile_sends_reasoning_back_its_own_way(  # LOOP-2
    fake_openai: FakeOpenAI, provider: ProviderName, sent: dict[str, Any]
) -> None:
    fake_openai.script(["ok"])
    config = LLMConfig(provider=provider, model="m", base_url=fake_openai.base_url, api_key=SecretStr("sk-t"))
    async with OpenAICompatibleProvider(config) as llm:
        await llm.complete(ChatRequest(messages=HISTORY))
    (message,) = assistant_messages(fake_openai.requests[0].body)
    reasoning = {k: v for k, v in message.items() if k.startswith("reasoning")}
    assert reasoning == sent
    assert HISTORY[1]["reasoning_content"] == "Think."  # the caller's messages are left alone


async def test_openrouter_reasoning_and_its_details_stream_and_are_kept(fake_openai: FakeOpenAI) -> None:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {"id": "gen-1", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    detail = {"type": "reasoning.text", "format": "anthropic-claude-v1", "index": 0}
    fake_openai.script(
        [
            {
                "raw_sse": [
                    ": OPENROUTER PROCESSING",
                    "",
                    chunk(
                        {
                            "role": "assistant",
                            "content": "",
                            "reasoning": "Let me ",
                            "reasoning_details": [{**detail, "text": "Let me "}],
                        }
                    ),
                    chunk(
                        {
                            "content": "",
                            "reasoning": "think.",
                            "reasoning_details": [{**detail, "text": "think."}],
                        }
                    ),
                    chunk(
                        {"content": "", "reasoning_details": [{**detail, "text": "", "signature": "sig=="}]}
                    ),
                    chunk({"content": "Hello"}, "stop"),
                    "data: [DONE]",
                    "",
                ]
            }
        ]
    )
    config = LLMConfig(
        provider="openrouter", model="m", base_url=fake_openai.base_url, api_key=SecretStr("sk-t")
    )
    async with OpenAICompatibleProvider(config) as llm:
        events = [e async for e in llm.stream(ChatRequest(messages=[{"role": "user", "content": "hi"}]))]
    assert [e.text for e in events if isinstance(e, ReasoningDelta)] == ["Let me ", "think."]
    response = events[-1].response  # type: ignore[union-attr]
    assert response.reasoning == "Let me think." and response.text == "Hello"
    assert response.reasoning_details == ({**detail, "text": "Let me think.", "signature": "sig=="},)
    assert response.assistant_message()["reasoning_details"] == [dict(response.reasoning_details[0])]


async def test_the_loop_streams_reasoning_as_events_and_records_it(tmp_path: Path) -> None:  # LOOP-2
    from steerable_agent_runtime import DurableRecord

    call = parse_tool_call("c1", "noop", "{}")
    provider = ScriptedProvider(
        [
            ChatResponse(tool_calls=(call,), reasoning="Call noop."),
            ChatResponse(text="Done.", reasoning="Ok."),
        ]
    )
    router = ToolRouter()

    @router.tool()
    def noop() -> dict[str, Any]:
        """Do nothing."""
        return {}

    events: list[dict[str, Any]] = []
    record = DurableRecord(tmp_path / "r.jsonl")
    summary = await AgentLoop(provider, router, record=record, on_event=events.append).run([], "go")
    assert summary.outcome == "completed"
    assert "".join(e["text"] for e in events if e["type"] == "reasoning") == "Call noop.Ok."
    assert [m.get("reasoning_content") for m in record.messages() if m["role"] == "assistant"] == [
        "Call noop.",
        "Ok.",
    ]
    assert provider.requests[1].messages[1]["reasoning_content"] == "Call noop."


# -- empty answers --------------------------------------------------------------------------------

ONLY_DONE = {"raw_sse": ["data: [DONE]", ""]}
EMPTY_STOP = {
    "raw_sse": [
        {
            "id": "x",
            "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": "stop"}],
        },
        "data: [DONE]",
        "",
    ]
}


def test_an_empty_answer_twice_ends_empty_answer_exit_6_and_is_not_recorded(  # LOOP-1, REC-1
    run: Run, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    fake_openai.script([ONLY_DONE, EMPTY_STOP])
    proc = run("ollama", "--instruction", "hello", "--session-id", "empty", "--quiet")
    assert proc.returncode == 6, proc.stderr
    summary = summary_of(proc)
    assert summary["outcome"] == "empty_answer" and summary["exitCode"] == 6
    assert "empty answer" in summary["error"] and summary["rounds"] == 1
    assert len(fake_openai.requests) == 2  # asked once more, then stopped
    entries = recorded(tmp_path, "empty")
    assert not [e for e in entries if e["type"] == "message" and e["message"]["role"] == "assistant"]
    assert entries[-1]["run"]["outcome"] == "empty_answer"


def test_one_empty_answer_is_asked_again_and_the_run_completes(  # LOOP-1
    run: Run, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script([EMPTY_STOP, {"text": "Hello there.", "reject_null_content": True}])
    proc = run("ollama", "--instruction", "hello", "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert summary_of(proc)["text"] == "Hello there."
    assert fake_openai.requests[0].body["messages"] == fake_openai.requests[1].body["messages"]


def test_resume_repairs_a_record_holding_an_empty_answer(  # REC-1
    run: Run, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    sessions = tmp_path / "state" / "sessions"
    sessions.mkdir(parents=True)
    old = [  # written by a build that recorded an empty answer as content null
        {"v": 1, "type": "message", "message": {"role": "system", "content": "You are an agent."}},
        {"v": 1, "type": "message", "message": {"role": "user", "content": "hello"}},
        {"v": 1, "type": "message", "message": {"role": "assistant", "content": None}},
        {"v": 1, "type": "run", "run": {"outcome": "completed", "rounds": 1, "toolCalls": 0}},
    ]
    (sessions / "old.jsonl").write_text("".join(json.dumps(e) + "\n" for e in old))
    fake_openai.script([{"text": "Hi again.", "reject_null_content": True}] * 2)
    for _ in range(2):  # every later resume works too
        proc = run("ollama", "--instruction", "are you there?", "--session-id", "old", "--quiet")
        assert proc.returncode == 0, (proc.stdout, proc.stderr)
    sent = fake_openai.requests[0].body["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "user"]


async def test_a_null_content_message_from_a_host_is_sent_with_empty_content(fake_openai: FakeOpenAI) -> None:
    fake_openai.script([{"text": "ok", "reject_null_content": True}])
    config = LLMConfig(provider="ollama", model="m", base_url=fake_openai.base_url)
    history: list[dict[str, Any]] = [{"role": "user", "content": "a"}, {"role": "assistant", "content": None}]
    async with OpenAICompatibleProvider(config) as llm:
        assert (
            await llm.complete(ChatRequest(messages=[*history, {"role": "user", "content": "b"}]))
        ).text == "ok"
    assert assistant_messages(fake_openai.requests[0].body) == [{"role": "assistant", "content": ""}]


async def test_the_sidecar_streams_reasoning_events_and_sends_it_back(  # LOOP-2
    fake_openai: FakeOpenAI, ws: Path, tmp_path: Path, child_env: Callable[..., dict[str, str]]
) -> None:
    from steerable_sidecar.sidecar._client import SidecarClient

    fake_openai.script(
        [
            {"raw_sse": deepseek_thinking_tool_call()},
            {"text": "Milk.", "reasoning": "Done reading.", "require_reasoning": "reasoning_content"},
        ]
    )
    env = child_env(
        STEERABLE_PROVIDER="deepseek",
        STEERABLE_MODEL="deepseek-reasoner",
        STEERABLE_BASE_URL=fake_openai.base_url,
        STEERABLE_API_KEY="sk-test-reasoning",
    )
    async with await SidecarClient.start(workspace=ws, state_dir=tmp_path / "state", env=env) as sidecar:
        handle = sidecar.start_chat("what is on my list?", session_id="side")
        events = [event async for event in handle.events()]
        summary = await handle.result()
    assert summary["outcome"] == "completed" and summary["toolCalls"] == 1
    kinds = [e["type"] for e in events]
    assert kinds.index("reasoning") < kinds.index("tool_call")  # thinking streams before the call
    assert "".join(e["text"] for e in events if e["type"] == "reasoning") == REASONING + "Done reading."
    assert assistant_messages(fake_openai.requests[1].body)[0]["reasoning_content"] == REASONING


async def test_reasoning_without_an_answer_is_an_empty_answer() -> None:  # LOOP-1
    provider = ScriptedProvider([ChatResponse(reasoning="Hmm."), ChatResponse(reasoning="Hmm...")])
    summary = await AgentLoop(provider, ToolRouter()).run([], "go")
    assert summary.outcome == "empty_answer" and summary.rounds == 1 and len(provider.requests) == 2


@pytest.mark.parametrize(
    ("provider", "streamed_as", "sent_back_as"),
    [
        ("glm", "reasoning_content", "reasoning_content"),
        ("ollama", "reasoning", "reasoning"),
        ("openrouter", "reasoning", "reasoning"),
    ],
)
def test_reasoning_round_trips_for_each_vendor_in_a_real_run(  # LOOP-2
    run: Run, fake_openai: FakeOpenAI, provider: str, streamed_as: str, sent_back_as: str
) -> None:
    call = {"id": "call_1", "name": "read_file", "arguments": '{"path": "todo.txt"}'}
    fake_openai.script(
        [
            {"reasoning": REASONING, "reasoning_key": streamed_as, "tool_calls": [call]},
            {"text": "Milk.", "require_reasoning": sent_back_as},
        ]
    )
    proc = run(provider, "--instruction", "what is on my list?", "--quiet")
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    (back,) = assistant_messages(fake_openai.requests[1].body)
    assert {k: v for k, v in back.items() if k.startswith("reasoning")} == {sent_back_as: REASONING}
