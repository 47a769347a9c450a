"""A session's durable record as an ATIF trajectory (Harbor's Agent Trajectory Interchange Format).

Eval runners such as Harbor keep one ``trajectory.json`` per trial: the steps an agent took, the
tool calls and what they returned, the reasoning and the tokens each model call used. This module
turns steerable's durable record (``<state dir>/sessions/<id>.jsonl``, ``record.py``) into that
document, as plain JSON, so it needs no Harbor install; ``steerable_sidecar.harbor`` validates it
against Harbor's own models. docs/harbor.md shows the mapping.

Mapping: the system and user messages become ``system`` / ``user`` steps; each assistant message
becomes an ``agent`` step (text, ``reasoning_content``, tool calls with their arguments parsed,
the model and the usage of the ``response`` entry written with it); the tool messages that answer
a step's calls become that step's observation. The final token totals are each finished run's
own (its ``run`` entry counts every model call, those that left no answer too) plus the answers
of a run that never finished.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final

__all__ = ["ATIF_VERSION", "read_record", "record_to_atif"]

ATIF_VERSION: Final = "ATIF-v1.6"
"""The schema version written: the fields used here are all in v1.6 (Harbor reads v1.0 to v1.8)."""

_REASONING_KEYS: Final = ("reasoning_content", "reasoning")


def read_record(path: Path) -> list[dict[str, Any]]:
    """Read a durable record's entries, skipping a torn or foreign line.

    Args:
        path: The ``.jsonl`` record.

    Returns:
        The entries in order (each a mapping with ``type``).

    Raises:
        OSError: The file cannot be read.
    """
    entries: list[dict[str, Any]] = []
    with path.open(encoding="utf-8", errors="replace") as lines:
        for line in lines:
            try:
                entry = json.loads(line)
            except ValueError:
                continue  # a torn last line (record.py) is never acknowledged
            if isinstance(entry, dict) and isinstance(entry.get("type"), str):
                entries.append(entry)
    return entries


def record_to_atif(
    entries: Iterable[Mapping[str, Any]],
    *,
    session_id: str,
    agent_version: str,
    model_name: str | None = None,
    agent_name: str = "steerable",
) -> dict[str, Any]:
    """Convert record entries to an ATIF trajectory (a JSON-ready mapping).

    Args:
        entries: The record's entries, in order (:func:`read_record`).
        session_id: The trajectory's ``session_id`` (the steerable session id).
        agent_version: steerable's version, for ``agent.version``.
        model_name: The model the run was configured with; a step's own ``model`` (as the server
            answered it) wins for that step.
        agent_name: ``agent.name``.

    Returns:
        ``{"schema_version", "session_id", "agent", "steps", "final_metrics"}``; token fields are
        left out when no model call reported usage, never guessed.
    """
    steps: list[dict[str, Any]] = []
    runs: list[Mapping[str, Any]] = []
    tokens = _Tokens()
    owner: dict[str, dict[str, Any]] = {}  # tool call id -> the agent step that made it
    last_agent: dict[str, Any] | None = None
    for entry in entries:
        kind = entry.get("type")
        payload = entry.get(kind) if isinstance(kind, str) else None
        if not isinstance(payload, Mapping):
            continue
        if kind == "message":
            step = _message_step(payload, model_name, owner, last_agent)
            if step is not None:
                steps.append(step)
                if step["source"] == "agent":
                    last_agent = step
        elif kind == "response":
            tokens.response(payload.get("usage"))
            if last_agent is not None and "metrics" not in last_agent:
                _add_response(last_agent, payload)
        elif kind == "run":
            runs.append(payload)
            tokens.run(payload.get("usage"))
    for number, step in enumerate(steps, start=1):
        step["step_id"] = number
    trajectory: dict[str, Any] = {
        "schema_version": ATIF_VERSION,
        "session_id": session_id,
        "agent": {"name": agent_name, "version": agent_version},
        "steps": steps,
        "final_metrics": _final_metrics(len(steps), runs, tokens),
    }
    if model_name:
        trajectory["agent"]["model_name"] = model_name
    return trajectory


def _message_step(
    message: Mapping[str, Any],
    model_name: str | None,
    owner: dict[str, dict[str, Any]],
    last_agent: dict[str, Any] | None,
) -> dict[str, Any] | None:
    role = message.get("role")
    if role == "tool":
        _add_observation(message, owner, last_agent)
        return None
    if role in ("system", "user"):
        return {"step_id": 0, "source": role, "message": _text(message.get("content"))}
    if role != "assistant":
        return None
    step: dict[str, Any] = {"step_id": 0, "source": "agent", "message": _text(message.get("content"))}
    if model_name:
        step["model_name"] = model_name
    for key in _REASONING_KEYS:
        reasoning = message.get(key)
        if isinstance(reasoning, str) and reasoning:
            step["reasoning_content"] = reasoning
            break
    calls = [_tool_call(call) for call in message.get("tool_calls") or () if isinstance(call, Mapping)]
    if calls:
        step["tool_calls"] = calls
        for call in calls:
            owner[call["tool_call_id"]] = step
    return step


def _tool_call(call: Mapping[str, Any]) -> dict[str, Any]:
    function = call.get("function")
    function = function if isinstance(function, Mapping) else {}
    raw = function.get("arguments")
    arguments: dict[str, Any]
    try:
        parsed = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        arguments = parsed
    else:  # the model's slip, kept as it was sent
        arguments = {"_raw": raw if isinstance(raw, str) else json.dumps(raw)}
    return {
        "tool_call_id": str(call.get("id") or ""),
        "function_name": str(function.get("name") or ""),
        "arguments": arguments,
    }


def _add_observation(
    message: Mapping[str, Any], owner: dict[str, dict[str, Any]], last_agent: dict[str, Any] | None
) -> None:
    call_id = message.get("tool_call_id")
    step = owner.get(call_id) if isinstance(call_id, str) else None
    result: dict[str, Any] = {"content": _text(message.get("content"))}
    if step is not None:
        result["source_call_id"] = call_id
    else:  # an answer whose call is not on record (a resumed session's seam): keep it, unlinked
        step = last_agent
    if step is None:
        return
    step.setdefault("observation", {"results": []})["results"].append(result)


def _add_response(step: dict[str, Any], response: Mapping[str, Any]) -> None:
    model = response.get("model")
    if isinstance(model, str) and model:
        step["model_name"] = model
    at = response.get("at")
    if isinstance(at, str) and at:
        step["timestamp"] = at
    usage = response.get("usage")
    if isinstance(usage, Mapping):
        prompt, completion = usage.get("promptTokens"), usage.get("completionTokens")
        if isinstance(prompt, int) and isinstance(completion, int) and (prompt or completion):
            step["metrics"] = {"prompt_tokens": prompt, "completion_tokens": completion}
            cached = usage.get("cachedTokens")
            if isinstance(cached, int) and cached:
                step["metrics"]["cached_tokens"] = cached


class _Tokens:
    """The session's token totals, summed as the record is read.

    Each finished run's own summary counts every model call (those that left no answer in the
    record too); a run that never finished adds its answers.
    """

    def __init__(self) -> None:
        self.prompt = self.completion = self.cached = 0
        self.pending = [0, 0]  # the answers since the last run summary
        self.known = False

    def response(self, usage: object) -> None:
        if isinstance(usage, Mapping):
            self.pending[0] += _count(usage.get("promptTokens"))
            self.pending[1] += _count(usage.get("completionTokens"))
            self.cached += _count(usage.get("cachedTokens"))

    def run(self, usage: object) -> None:
        if isinstance(usage, Mapping):
            self.prompt += _count(usage.get("promptTokens"))
            self.completion += _count(usage.get("completionTokens"))
        else:  # a summary without usage: its answers are what is known
            self.prompt, self.completion = self.prompt + self.pending[0], self.completion + self.pending[1]
        self.pending = [0, 0]

    def totals(self) -> tuple[int, int, int]:
        return self.prompt + self.pending[0], self.completion + self.pending[1], self.cached


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _final_metrics(step_count: int, runs: list[Mapping[str, Any]], tokens: _Tokens) -> dict[str, Any]:
    metrics: dict[str, Any] = {"total_steps": step_count}
    prompt, completion, cached = tokens.totals()
    if prompt or completion:
        metrics["total_prompt_tokens"] = prompt
        metrics["total_completion_tokens"] = completion
        if cached:
            metrics["total_cached_tokens"] = cached
    if runs:
        last = runs[-1]
        metrics["extra"] = {
            key: last[key] for key in ("outcome", "rounds", "toolCalls", "finishReason") if key in last
        }
    return metrics


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: keep the text ones
        return "".join(
            str(part.get("text", "")) for part in content if isinstance(part, Mapping) and "text" in part
        )
    return ""
