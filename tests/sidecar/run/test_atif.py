"""The durable record as an ATIF trajectory (steerable_sidecar.run._atif), from real agent-loop runs.

Harbor validates the same documents against its own models in tests/harbor_adapter/ (Python 3.12+, the
``harbor`` extra); here the mapping itself is checked without Harbor.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from steerable_agent_runtime import AgentLoop, ScriptedProvider, workspace_tools_for_cwd
from steerable_agent_runtime.record import DurableRecord
from steerable_sidecar.run._atif import ATIF_VERSION, read_record, record_to_atif


async def _run(tmp_path: Path, turns: list[Any]) -> Path:
    path = tmp_path / "sessions" / "s.jsonl"
    loop = AgentLoop(ScriptedProvider(turns), workspace_tools_for_cwd(tmp_path), record=DurableRecord(path))
    await loop.run([], "write notes.txt")
    return path


async def test_a_run_becomes_steps_with_calls_observations_and_usage(tmp_path: Path) -> None:
    """Each assistant message is an agent step holding its calls, their answers and its usage."""
    path = await _run(
        tmp_path,
        [
            {
                "text": "Writing it.",
                "tool_calls": [
                    {"id": "c1", "name": "write_file", "arguments": {"path": "notes.txt", "content": "hi"}}
                ],
                "usage": {"prompt_tokens": 100, "completion_tokens": 20},
            },
            {"text": "Done.", "usage": {"prompt_tokens": 130, "completion_tokens": 4}},
        ],
    )
    trajectory = record_to_atif(read_record(path), session_id="s", agent_version="9.9", model_name="m-1")
    assert trajectory["schema_version"] == ATIF_VERSION
    assert trajectory["agent"] == {"name": "steerable", "version": "9.9", "model_name": "m-1"}
    steps = trajectory["steps"]
    assert [s["step_id"] for s in steps] == [1, 2, 3]
    assert [s["source"] for s in steps] == ["user", "agent", "agent"]
    assert steps[0]["message"] == "write notes.txt"
    first = steps[1]
    assert first["message"] == "Writing it."
    assert first["tool_calls"] == [
        {
            "tool_call_id": "c1",
            "function_name": "write_file",
            "arguments": {"path": "notes.txt", "content": "hi"},
        }
    ]
    [result] = first["observation"]["results"]
    assert result["source_call_id"] == "c1"
    assert json.loads(result["content"])["success"] is True
    assert first["metrics"] == {"prompt_tokens": 100, "completion_tokens": 20}
    assert first["timestamp"].endswith("+00:00")
    assert steps[2]["metrics"] == {"prompt_tokens": 130, "completion_tokens": 4}
    final = trajectory["final_metrics"]
    totals = (final["total_prompt_tokens"], final["total_completion_tokens"], final["total_steps"])
    assert totals == (230, 24, 3)
    assert final["extra"] == {"outcome": "completed", "rounds": 2, "toolCalls": 1, "finishReason": "stop"}


async def test_a_malformed_call_keeps_the_models_text(tmp_path: Path) -> None:
    """Arguments that are not a JSON object stay as the model sent them, under ``_raw``."""
    path = await _run(
        tmp_path,
        [{"tool_calls": [{"id": "bad", "name": "read_file", "arguments": "{not json"}]}, "ok"],
    )
    steps = record_to_atif(read_record(path), session_id="s", agent_version="1")["steps"]
    [call] = steps[1]["tool_calls"]
    assert call["arguments"] == {"_raw": "{not json"}
    [result] = steps[1]["observation"]["results"]
    assert result["source_call_id"] == "bad" and '"success": false' in result["content"]
    assert "model_name" not in steps[1]  # no model configured, none answered: left out
    assert "metrics" not in steps[1]  # no usage reported: none invented


def test_reasoning_orphans_older_records_and_torn_lines(tmp_path: Path) -> None:
    """Reasoning is carried; an answer whose call is not on record stays, unlinked; a record
    written before per-response usage takes the run's usage; a torn last line is skipped."""
    lines = [
        {"type": "message", "message": {"role": "user", "content": [{"type": "text", "text": "go"}]}},
        {"type": "message", "message": {"role": "assistant", "content": None, "reasoning_content": "think"}},
        {"type": "message", "message": {"role": "tool", "tool_call_id": "gone", "content": "late"}},
        {"type": "response", "response": {"round": 1, "model": "served-name"}},
        {"type": "run", "run": {"outcome": "completed", "usage": {"promptTokens": 7, "completionTokens": 3}}},
    ]
    path = tmp_path / "old.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines) + '{"type": "mess', encoding="utf-8")
    trajectory = record_to_atif(read_record(path), session_id="old", agent_version="1", model_name="m")
    user, agent = trajectory["steps"]
    assert user == {"step_id": 1, "source": "user", "message": "go"}
    assert agent["reasoning_content"] == "think" and agent["message"] == ""
    assert agent["model_name"] == "served-name"  # what the server answered wins over the configured name
    assert agent["observation"] == {"results": [{"content": "late"}]}
    assert "metrics" not in agent
    final = trajectory["final_metrics"]
    assert (final["total_prompt_tokens"], final["total_completion_tokens"]) == (7, 3)


def test_no_usage_anywhere_leaves_the_token_fields_out(tmp_path: Path) -> None:
    """A server that reported no usage gives no token totals: absent, never a guessed 0."""
    path = tmp_path / "r.jsonl"
    line = {"type": "message", "message": {"role": "assistant", "content": "hi"}}
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    final = record_to_atif(read_record(path), session_id="r", agent_version="1")["final_metrics"]
    assert final == {"total_steps": 1}


def test_cached_prompt_tokens_are_carried(tmp_path: Path) -> None:
    """Prompt tokens the server's cache served (``cachedTokens``) reach the step and the totals."""
    lines = [
        {"type": "message", "message": {"role": "assistant", "content": "a"}},
        {
            "type": "response",
            "response": {"usage": {"promptTokens": 50, "completionTokens": 5, "cachedTokens": 40}},
        },
        {"type": "message", "message": {"role": "assistant", "content": "b"}},
        {"type": "response", "response": {"usage": {"promptTokens": 60, "completionTokens": 2}}},
    ]
    path = tmp_path / "c.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    trajectory = record_to_atif(read_record(path), session_id="c", agent_version="1")
    assert trajectory["steps"][0]["metrics"] == {
        "prompt_tokens": 50,
        "completion_tokens": 5,
        "cached_tokens": 40,
    }
    assert trajectory["final_metrics"]["total_cached_tokens"] == 40


def test_token_totals_count_every_model_call_of_every_run(tmp_path: Path) -> None:
    """A run's own summary counts the calls that left no answer (an empty-answer retry, a refusal);
    an older run without per-answer usage still counts; a run cut off before its summary adds the
    answers it got."""

    def answer(prompt: int, completion: int) -> list[dict[str, Any]]:
        return [
            {"type": "message", "message": {"role": "assistant", "content": "x"}},
            {
                "type": "response",
                "response": {"usage": {"promptTokens": prompt, "completionTokens": completion}},
            },
        ]

    lines = [
        {
            "type": "run",
            "run": {"outcome": "completed", "usage": {"promptTokens": 100, "completionTokens": 10}},
        },
        *answer(5, 1),
        {
            "type": "run",
            "run": {"outcome": "completed", "usage": {"promptTokens": 50, "completionTokens": 9}},
        },
        *answer(7, 2),  # then the process was killed: no summary
    ]
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    final = record_to_atif(read_record(path), session_id="t", agent_version="1")["final_metrics"]
    assert (final["total_prompt_tokens"], final["total_completion_tokens"]) == (157, 21)
