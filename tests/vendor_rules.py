"""Each vendor's documented request rules, enforced by ``tests/fake_openai.py`` on every request.

``FakeOpenAI(vendor="gemini")`` (or ``python tests/fake_openai.py --vendor gemini``) refuses a
request the way that vendor does: the same HTTP status and the same error body shape, so a test
sees what a user of that vendor would. Round 1 of a run usually passes; the rules bite on round 2,
where the conversation carries what round 1 streamed (reasoning, thought signatures, call ids).

Sources (each vendor's API reference and the error texts users report, late 2025 / 2026):

* ``openai``: unknown message fields are refused ("Additional properties are not allowed"); its
  reasoning models refuse ``max_tokens`` ("Use 'max_completion_tokens' instead").
* ``azure``: the key in ``api-key`` (401 otherwise); classic deployment URLs need ``api-version``.
* ``gemini``: Gemini 3 refuses a function call without its ``thought_signature`` (400
  ``INVALID_ARGUMENT``), as a JSON list holding the error (its compatibility layer's shape).
* ``mistral``: ``stream_options`` is an extra input (422); every tool-call id must be 9 letters or
  digits (400 "Tool call id was ... but must be a-z, A-Z, 0-9, with a length of 9.").
* ``groq`` / ``cerebras``: reasoning fields on input messages are refused (400).
* ``moonshot``: Kimi's thinking models refuse a tool-call message without ``reasoning_content``.
* ``deepseek``: thinking mode refuses a tool-call message without ``reasoning_content`` (the key
  must be there, even empty).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

Refusal = tuple[int, Any]
Rule = Callable[[str, str, Mapping[str, str], Any], Refusal | None]

_ALNUM9 = re.compile(r"^[A-Za-z0-9]{9}$")
_STANDARD_MESSAGE_KEYS = frozenset({"role", "content", "tool_calls", "name", "tool_call_id", "refusal"})
_STANDARD_CALL_KEYS = frozenset({"id", "type", "function"})


def _assistants(body: Any) -> list[tuple[int, dict[str, Any]]]:
    messages = body.get("messages") if isinstance(body, dict) else None
    return [
        (i, m)
        for i, m in enumerate(messages if isinstance(messages, list) else ())
        if isinstance(m, dict) and m.get("role") == "assistant"
    ]


def _tool_calling(body: Any) -> list[tuple[int, dict[str, Any]]]:
    return [(i, m) for i, m in _assistants(body) if isinstance(m.get("tool_calls"), list) and m["tool_calls"]]


def _openai_error(message: str, kind: str = "invalid_request_error", param: str | None = None) -> Any:
    return {"error": {"message": message, "type": kind, "param": param, "code": None}}


def openai(path: str, query: str, headers: Mapping[str, str], body: Any) -> Refusal | None:
    for index, message in _assistants(body):
        extra = sorted(set(message) - _STANDARD_MESSAGE_KEYS)
        if extra:
            return 400, _openai_error(
                f"Additional properties are not allowed ('{extra[0]}' was unexpected) - 'messages.{index}'"
            )
        for call in message.get("tool_calls") or ():
            extra = sorted(set(call) - _STANDARD_CALL_KEYS) if isinstance(call, dict) else []
            if extra:
                return 400, _openai_error(
                    f"Additional properties are not allowed ('{extra[0]}' was unexpected) - "
                    f"'messages.{index}.tool_calls.0'"
                )
    model = body.get("model", "") if isinstance(body, dict) else ""
    if "max_tokens" in body and re.match(r"^(o\d|gpt-5)", str(model)):
        return 400, _openai_error(
            "Unsupported parameter: 'max_tokens' is not supported with this model. "
            "Use 'max_completion_tokens' instead.",
            param="max_tokens",
        )
    return None


def azure(path: str, query: str, headers: Mapping[str, str], body: Any) -> Refusal | None:
    if "api-key" not in headers:
        return 401, {
            "error": {
                "code": "401",
                "message": "Access denied due to invalid subscription key or wrong API endpoint.",
            }
        }
    if path.startswith("/openai/deployments/") and "api-version=" not in query:
        return 404, {"error": {"code": "404", "message": "Resource not found"}}
    return openai(path, query, headers, body)


def gemini(path: str, query: str, headers: Mapping[str, str], body: Any) -> Refusal | None:
    for index, message in _tool_calling(body):
        first = message["tool_calls"][0]
        signature = (first.get("extra_content") or {}).get("google", {}).get("thought_signature")
        if not signature:
            return 400, [
                {
                    "error": {
                        "code": 400,
                        "message": f"Function call is missing a thought_signature in functionCall parts. "
                        f"This is required for tools to work correctly (messages[{index}]).",
                        "status": "INVALID_ARGUMENT",
                    }
                }
            ]
    return None


def mistral(path: str, query: str, headers: Mapping[str, str], body: Any) -> Refusal | None:
    if isinstance(body, dict) and "stream_options" in body:
        return 422, {
            "object": "error",
            "message": {
                "detail": [
                    {
                        "type": "extra_forbidden",
                        "loc": ["body", "stream_options"],
                        "msg": "Extra inputs are not permitted",
                        "input": body["stream_options"],
                    }
                ]
            },
            "type": "invalid_request_message_error",
            "param": None,
            "code": None,
        }
    ids = [c.get("id") for _, m in _tool_calling(body) for c in m["tool_calls"] if isinstance(c, dict)]
    messages = (body.get("messages") if isinstance(body, dict) else None) or []
    ids += [m.get("tool_call_id") for m in messages if isinstance(m, dict) and m.get("role") == "tool"]
    for call_id in ids:
        if not isinstance(call_id, str) or not _ALNUM9.match(call_id):
            return 400, {
                "object": "error",
                "message": f"Tool call id was {call_id} but must be a-z, A-Z, 0-9, with a length of 9.",
                "type": "invalid_request_error",
                "param": None,
                "code": None,
            }
    return None


def _no_reasoning_on_input(style: str) -> Rule:
    def rule(path: str, query: str, headers: Mapping[str, str], body: Any) -> Refusal | None:
        for index, message in _assistants(body):
            for key in ("reasoning_content", "reasoning", "reasoning_details"):
                if key in message:
                    if style == "groq":
                        return 400, _openai_error(
                            f"'messages.{index}' : for 'role:assistant' the following must be satisfied"
                            f"[('messages.{index}' : property '{key}' is unsupported)]"
                        )
                    return 400, {
                        "message": f"messages.{index}.assistant.{key}: Extra inputs are not permitted",
                        "type": "invalid_request_error",
                        "param": "validation_error",
                        "code": "wrong_api_format",
                    }
        return None

    return rule


def _reasoning_required(message: str) -> Rule:
    """A thinking mode that refuses a tool-call message without ``reasoning_content`` (``{index}``)."""

    def rule(path: str, query: str, headers: Mapping[str, str], body: Any) -> Refusal | None:
        for index, assistant in _tool_calling(body):
            if "reasoning_content" not in assistant:
                return 400, _openai_error(message.format(index=index))
        return None

    return rule


moonshot = _reasoning_required(
    "thinking is enabled but reasoning_content is missing in assistant tool call message at index {index}"
)
deepseek = _reasoning_required("The reasoning_content in the thinking mode must be passed back to the API.")


RULES: dict[str, Rule] = {
    "openai": openai,
    "azure": azure,
    "gemini": gemini,
    "mistral": mistral,
    "groq": _no_reasoning_on_input("groq"),
    "cerebras": _no_reasoning_on_input("cerebras"),
    "moonshot": moonshot,
    "deepseek": deepseek,
}
"""The vendors whose rules the fake enforces, by profile name."""
