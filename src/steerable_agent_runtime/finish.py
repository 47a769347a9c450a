"""What a model answer's ``finish_reason`` means for the run.

OpenAI-compatible endpoints end each answer with a ``finish_reason``. Most say the answer is whole;
some say it was cut off, withheld by a filter, or broken by the vendor's own infrastructure, and an
agent must not take those for a finished task (``docs/providers.md``, "Finish reasons"):

* ``stop``: ``stop``, ``tool_calls``, ``function_call`` (legacy), ``eos``, ``end_turn``,
  ``stop_sequence`` (OpenAI and every compatible server; Ollama's OpenAI layer maps its
  ``done_reason: stop`` to ``stop``).
* ``cut_off``: ``length`` (OpenAI, DeepSeek, GLM, vLLM, llama.cpp; Ollama's ``done_reason:
  length``), ``max_tokens``, ``model_length`` (Mistral).
* ``filtered``: ``content_filter`` (OpenAI, Azure, OpenRouter), ``sensitive`` (GLM).
* ``error``: ``network_error`` (GLM: inference failed), ``insufficient_system_resource``
  (DeepSeek: the inference system ran out of resources), ``error`` (OpenRouter: the upstream
  failed), ``abort`` (vLLM and SGLang: the server aborted the request, e.g. preempted or
  shutting down; the text so far is partial).

A reason not listed (or none at all) counts as ``stop``: the run ends as it would have, and the
reason is still reported in the run summary.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final, Literal, TypeAlias

__all__ = ["FINISH_KINDS", "FinishKind", "finish_kind", "finish_problem"]

FinishKind: TypeAlias = Literal["stop", "cut_off", "filtered", "error"]
"""``stop``: a whole answer; ``cut_off``: it hit a length limit; ``filtered``: a content filter
withheld it; ``error``: the vendor failed while answering (a provider error)."""

FINISH_KINDS: Final[Mapping[str, FinishKind]] = MappingProxyType(
    {
        "stop": "stop",
        "tool_calls": "stop",
        "function_call": "stop",
        "eos": "stop",
        "end_turn": "stop",
        "stop_sequence": "stop",
        "length": "cut_off",
        "max_tokens": "cut_off",
        "model_length": "cut_off",
        "model_context_window_exceeded": "cut_off",  # GLM (z.ai): the context ran out
        "content_filter": "filtered",
        "sensitive": "filtered",
        "network_error": "error",
        "insufficient_system_resource": "error",
        "error": "error",
        "abort": "error",
    }
)
"""Each known ``finish_reason`` (lower case) and its kind."""


def finish_kind(reason: str | None) -> FinishKind:
    """The kind of ``reason`` (case-insensitive); unknown reasons and ``None`` are ``stop``."""
    if not reason:
        return "stop"
    return FINISH_KINDS.get(reason.strip().lower(), "stop")


_PROBLEMS: Final[Mapping[FinishKind, str]] = MappingProxyType(
    {
        "cut_off": "the model's answer was cut off at its length limit",
        "filtered": "the model's answer was withheld by a content filter",
        "error": "the model stopped on a failure at the provider",
    }
)


def finish_problem(reason: str | None) -> str | None:
    """Why an answer that ended with ``reason`` is not a whole one, or ``None`` when it is."""
    kind = finish_kind(reason)
    if kind == "stop":
        return None
    return f"{_PROBLEMS[kind]} (finish_reason {reason})"
