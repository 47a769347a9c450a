"""What goes out to a vendor: the request body and the conversation rewritten for its profile.

The conversation is kept in one vendor-neutral form (``steerable_agent_runtime.llm``: reasoning
under ``reasoning_content`` / ``reasoning_details``, a vendor's echoed fields as the stream gave
them); :func:`request_body` rewrites it for the :class:`VendorProfile` of the endpoint, so a
record made with one vendor can be replayed to another. The rules are the profile's fields
(docs/providers.md, "Vendor profiles"); nothing here names a vendor.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

from steerable_agent_runtime.llm import ChatRequest, Message

from ._config import LLMConfig
from ._vendor_profiles import VendorProfile

__all__ = ["ALNUM9", "alnum9_id", "encoded", "outgoing_messages", "request_body", "whole_text"]

_CALL_KEYS: Final = frozenset({"id", "type", "function"})
"""The fields of an assistant message's tool call every OpenAI-compatible endpoint accepts."""
_MESSAGE_KEYS: Final = frozenset({"role", "content", "tool_calls", "name", "tool_call_id", "refusal"})
"""The fields of a message every OpenAI-compatible endpoint accepts (others are the profile's)."""
ALNUM9: Final = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_EFFORT_BUDGET: Final = {"low": 2_048, "on": 8_192, "medium": 8_192, "high": 24_576}
"""Anthropic's ``budget_tokens`` per ``STEERABLE_THINKING`` level."""


def request_body(config: LLMConfig, request: ChatRequest, model: str) -> dict[str, Any]:
    """The JSON body of one streamed chat-completions request, shaped by the config's profile.

    ``{"model", "messages", "stream": true}``, then ``stream_options`` (when the profile takes it),
    ``tools`` (when offered), ``temperature`` and the output bound (the request's own, else the
    config's; under the profile's field name, left out at 0), the thinking switch
    (``STEERABLE_THINKING``, in the profile's style), and ``STEERABLE_EXTRA_BODY`` merged last.
    """
    profile = config.choice.profile
    body: dict[str, Any] = {
        "model": model,
        "messages": outgoing_messages(profile, request.messages),
        "stream": True,
    }
    if profile.stream_options:
        body["stream_options"] = {"include_usage": True}
    if request.tools:
        body["tools"] = list(request.tools)
    temperature = request.temperature if request.temperature is not None else config.temperature
    if temperature is not None:
        body["temperature"] = temperature
    max_tokens = request.max_tokens if request.max_tokens is not None else config.max_tokens
    if max_tokens:
        body[profile.max_tokens_field] = max_tokens
    if config.thinking is not None:
        body.update(_thinking_fields(profile, config.thinking))
    body.update(config.extra_body)
    return body


def _thinking_fields(profile: VendorProfile, level: str) -> dict[str, Any]:
    """``STEERABLE_THINKING`` (``on``/``off``/``low``/``medium``/``high``) as the vendor reads it."""
    on = level != "off"
    style = profile.thinking
    if style == "reasoning_effort":
        return {"reasoning_effort": "none" if not on else ("medium" if level == "on" else level)}
    if style == "openrouter":
        return {
            "reasoning": {"enabled": False}
            if not on
            else ({"enabled": True} if level == "on" else {"effort": level})
        }
    if style == "thinking_type":
        return {"thinking": {"type": "enabled" if on else "disabled"}}
    if style == "anthropic":
        return {
            "thinking": {"type": "enabled", "budget_tokens": _EFFORT_BUDGET[level]}
            if on
            else {"type": "disabled"}
        }
    if style == "enable_thinking":
        return {"enable_thinking": on}
    if style == "template":
        return {"chat_template_kwargs": {"enable_thinking": on}}
    return {}  # "none": LLMConfig refuses STEERABLE_THINKING for such a profile


def outgoing_messages(profile: VendorProfile, messages: Sequence[Message]) -> list[Message]:
    """The conversation as ``profile``'s endpoint should receive it.

    * Reasoning goes back on assistant messages under the profile's key, when its
      ``reasoning_back`` says so (with ``""`` on a tool-calling message that had none, when
      ``reasoning_empty``), OpenRouter's ``reasoning_details`` whole; otherwise it is stripped.
    * Fields a vendor asked to have echoed (``echo_call_fields`` / ``echo_message_fields``) go back
      to that vendor's profile and are stripped for every other.
    * Tool-call ids become 9 letters and digits for an ``alnum9`` profile, the same way in the
      assistant message and in the ``tool`` message that answers it.
    * An assistant message with ``content: null`` and no tool calls is sent with ``content: ""``
      (Ollama answers 400 "invalid message content type: <nil>" otherwise).

    Messages needing none of this pass unchanged (the same objects); the caller's are never changed.
    """
    out: list[Message] = []
    for message in messages:
        if not isinstance(message, dict):
            out.append(message)
            continue
        role = message.get("role")
        if role == "assistant":
            out.append(_assistant(profile, message))
        elif (
            role == "tool"
            and profile.call_id_format == "alnum9"
            and isinstance(message.get("tool_call_id"), str)
        ):
            out.append({**message, "tool_call_id": alnum9_id(message["tool_call_id"])})
        else:
            out.append(message)
    return out


def _assistant(profile: VendorProfile, message: Message) -> Message:
    calls = message.get("tool_calls")
    has_calls = isinstance(calls, list) and bool(calls)
    sent = {k: v for k, v in message.items() if k in _MESSAGE_KEYS or k in profile.echo_message_fields}
    if message.get("content") is None and not has_calls:
        sent["content"] = ""
    if has_calls:
        assert isinstance(calls, list)
        sent["tool_calls"] = [_call(profile, call) for call in calls]
    sent.update(_reasoning(profile, message, has_calls))
    if sent == message:
        return message
    return sent


def _call(profile: VendorProfile, call: Any) -> Any:
    if not isinstance(call, dict):
        return call
    kept = {k: v for k, v in call.items() if k in _CALL_KEYS or k in profile.echo_call_fields}
    if profile.call_id_format == "alnum9" and isinstance(kept.get("id"), str):
        kept["id"] = alnum9_id(kept["id"])
    return kept


def _reasoning(profile: VendorProfile, message: Message, has_calls: bool) -> dict[str, Any]:
    text = message.get("reasoning_content") or message.get("reasoning")
    blocks = message.get("reasoning_details")
    if profile.reasoning_details_back and isinstance(blocks, list) and blocks:
        return {"reasoning_details": blocks}
    wanted = profile.reasoning_back == "always" or (profile.reasoning_back == "with_tool_calls" and has_calls)
    if not wanted:
        return {}
    if isinstance(text, str) and text:
        return {profile.reasoning_key: text}
    if profile.reasoning_empty and has_calls:
        return {profile.reasoning_key: ""}
    return {}


def alnum9_id(call_id: str) -> str:
    """``call_id`` itself when it is 9 letters and digits, else 9 derived from its SHA-256.

    The same id always maps to the same 9 characters, so an assistant message's call and the
    ``tool`` message answering it still match; two ids colliding needs ~10^8 calls in one chat.
    """
    if len(call_id) == 9 and call_id.isascii() and call_id.isalnum():
        return call_id
    number = int.from_bytes(hashlib.sha256(call_id.encode("utf-8", "surrogatepass")).digest()[:8], "big")
    chars = []
    for _ in range(9):
        number, digit = divmod(number, len(ALNUM9))
        chars.append(ALNUM9[digit])
    return "".join(chars)


def encoded(body: Mapping[str, Any]) -> bytes:
    """``body`` as UTF-8 JSON; a lone surrogate anywhere in it is repaired, never a failure."""
    try:  # no spaces after separators: the same JSON, ~10% fewer bytes every round
        return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(_wire_safe(body), ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def whole_text(text: str) -> str:
    """Join surrogate halves that arrived in different chunks; a lone one becomes U+FFFD.

    A server may split an emoji's UTF-16 surrogate pair across two SSE chunks as JSON escapes
    (the high half in one chunk, the low half in the next); each chunk decodes to a lone
    surrogate, which no UTF-8 encoder accepts, so the joined text is repaired once here.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def _wire_safe(value: Any) -> Any:
    """``value`` with every string passed through :func:`whole_text` (for a request body)."""
    if isinstance(value, str):
        return whole_text(value)
    if isinstance(value, dict):
        return {whole_text(k) if isinstance(k, str) else k: _wire_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_wire_safe(v) for v in value]
    return value
