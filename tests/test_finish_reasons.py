"""``finish_reason`` kinds: which answers are whole, cut off, filtered or a provider failure."""

from __future__ import annotations

import pytest

from steerable_agent_runtime.finish import FINISH_KINDS, finish_kind, finish_problem


@pytest.mark.parametrize(
    ("reason", "kind"),
    [
        ("stop", "stop"),  # OpenAI; Ollama's done_reason "stop" as its OpenAI layer maps it
        ("tool_calls", "stop"),
        ("function_call", "stop"),  # the legacy function-calling answer
        ("length", "cut_off"),  # OpenAI, DeepSeek, GLM, vLLM, llama.cpp; Ollama's done_reason "length"
        ("content_filter", "filtered"),  # OpenAI, Azure, OpenRouter
        ("sensitive", "filtered"),  # GLM
        ("network_error", "error"),  # GLM
        ("insufficient_system_resource", "error"),  # DeepSeek
        ("error", "error"),  # OpenRouter's normalised reason for an upstream failure
        ("LENGTH", "cut_off"),
        ("something_new", "stop"),
        (None, "stop"),
        ("", "stop"),
    ],
)
def test_each_vendor_reason_has_its_kind(reason, kind):
    assert finish_kind(reason) == kind


def test_problems_name_the_reason():
    assert finish_problem("stop") is None
    assert finish_problem(None) is None
    assert (
        finish_problem("length")
        == "the model's answer was cut off at its length limit (finish_reason length)"
    )
    assert finish_problem("content_filter") == (
        "the model's answer was withheld by a content filter (finish_reason content_filter)"
    )
    assert finish_problem("network_error") == (
        "the model stopped on a failure at the provider (finish_reason network_error)"
    )
    assert all(key == key.lower() for key in FINISH_KINDS)
