"""Vendor profiles as data: how one is chosen, what each says goes back, and the settings' checks (issue 29).

Pure and in-process: :func:`choose_profile` on the hosts a user configures (and look-alikes),
every :class:`LLMConfig` setting refused with the variable's name, the docs table generated from
the profiles (``scripts/generate_provider_table.py``), and the ``steerable run`` flags that stand
in for the variables.
"""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from steerable_agent_runtime.errors import ConfigError
from steerable_sidecar.providers._openai import LLMConfig
from steerable_sidecar.providers._vendor_profiles import PROFILE_NAMES, VENDOR_PROFILES, choose_profile
from steerable_sidecar.providers._wire_out import alnum9_id, outgoing_messages

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize(
    ("host", "profile"),
    [
        ("api.openai.com", "openai"),
        ("API.OpenAI.com.", "openai"),  # any case, a trailing dot
        ("myres.openai.azure.com", "azure"),
        ("myres.cognitiveservices.azure.com", "azure"),
        ("openai.azure.com", "openai-compatible"),  # the bare domain is no resource
        ("api.openai.com.evil.example", "openai-compatible"),  # a look-alike gets the generic rules
        ("evilopenai.azure.com.example", "openai-compatible"),
        ("generativelanguage.googleapis.com", "gemini"),
        ("us-central1-aiplatform.googleapis.com", "gemini"),  # Vertex AI's OpenAI endpoint, any region
        ("aiplatform.googleapis.com", "gemini"),
        ("aiplatform.googleapis.com.evil.example", "openai-compatible"),
        ("api.groq.com", "groq"),
        ("api.moonshot.cn", "moonshot"),
        ("dashscope-intl.aliyuncs.com", "qwen"),
        ("api.z.ai", "glm"),
        ("api.minimaxi.com", "minimax"),
        ("127.0.0.1", "openai-compatible"),
        ("::1", "openai-compatible"),
        (None, "openai-compatible"),
    ],
)
def test_the_host_chooses_the_profile(host: str | None, profile: str) -> None:
    chosen = choose_profile(host)
    assert chosen.profile.name == profile
    expected = "default (an unknown server)" if host is None or profile == "openai-compatible" else None
    assert chosen.why == (expected or f"host {host.lower().rstrip('.')}")  # type: ignore[union-attr]


def test_a_named_profile_wins_then_the_provider_then_the_host() -> None:
    assert choose_profile("api.groq.com", profile="mistral").why == "STEERABLE_PROFILE"
    assert choose_profile("api.groq.com", profile="mistral").profile.name == "mistral"
    assert choose_profile("127.0.0.1", provider="vllm").profile.name == "vllm"
    assert (
        choose_profile("api.groq.com", provider="openai").profile.name == "groq"
    )  # openai: the host decides
    assert choose_profile("127.0.0.1", provider="scripted").profile.name == "openai-compatible"
    with pytest.raises(
        ConfigError, match=r"STEERABLE_PROFILE='bedrock' is not a known profile; use one of: openai,"
    ):
        choose_profile(None, profile="bedrock")


def test_every_profile_says_what_goes_back() -> None:
    phrases = {name: profile.round_trips() for name, profile in VENDOR_PROFILES.items()}
    assert phrases["openai"] == "no reasoning (stripped)"
    assert phrases["deepseek"] == "`reasoning_content` always, even empty"
    assert phrases["vllm"] == "`reasoning_content` on tool-call messages"
    assert phrases["openrouter"] == "`reasoning_details` whole, else `reasoning`"
    assert (
        phrases["gemini"]
        == "no reasoning (stripped); `extra_content` on tool calls; `extra_content` on messages"
    )
    assert phrases["mistral"] == "no reasoning (stripped); ids as 9 letters/digits"
    assert set(PROFILE_NAMES) == set(VENDOR_PROFILES)


def test_the_docs_table_is_the_profiles() -> None:
    spec = importlib.util.spec_from_file_location(
        "generate_provider_table", ROOT / "scripts" / "generate_provider_table.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    text = (ROOT / "docs" / "providers.md").read_text(encoding="utf-8")
    assert module.rendered(text) == text, "run python scripts/generate_provider_table.py"
    assert text.count("| `") >= len(VENDOR_PROFILES)
    with pytest.raises(SystemExit, match="markers"):
        module.rendered("no table here")


def config(**fields: Any) -> LLMConfig:
    return LLMConfig(**{"provider": "vllm", "model": "m", **fields})


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"STEERABLE_TEMPERATURE": "hot"}, "STEERABLE_TEMPERATURE='hot' is not a number"),
        ({"STEERABLE_TEMPERATURE": "nan"}, "STEERABLE_TEMPERATURE=nan must be a number from 0 to 2"),
        ({"STEERABLE_TEMPERATURE": "2.5"}, "STEERABLE_TEMPERATURE=2.5 must be a number from 0 to 2"),
        (
            {"STEERABLE_THINKING": "max"},
            "STEERABLE_THINKING='max' must be one of: on, off, low, medium, high",
        ),
        ({"STEERABLE_MAX_TOKENS": "-1"}, "STEERABLE_MAX_TOKENS"),
        (
            {"STEERABLE_EXTRA_BODY": "{not json"},
            'STEERABLE_EXTRA_BODY is not JSON: write a JSON object, e.g. {"key": "value"}',
        ),
        ({"STEERABLE_EXTRA_BODY": "[1, 2]"}, "STEERABLE_EXTRA_BODY must be a JSON object, not list"),
        ({"STEERABLE_EXTRA_BODY": "[" * 100_000}, "STEERABLE_EXTRA_BODY is not JSON"),
        (
            {"STEERABLE_EXTRA_BODY": '{"messages": [], "tools": []}'},
            "STEERABLE_EXTRA_BODY must not set messages, tools (the run sends them)",
        ),
        (
            {"STEERABLE_EXTRA_HEADERS": '{"Bad Name": "x"}'},
            "STEERABLE_EXTRA_HEADERS: a header name is not an HTTP header name",
        ),
        (
            {"STEERABLE_EXTRA_HEADERS": '{"Content-Length": "5"}'},
            "STEERABLE_EXTRA_HEADERS must not set Content-Length: the HTTP client sends it",
        ),
        (
            {"STEERABLE_EXTRA_HEADERS": '{"X-A": "1", "x-a": "2"}'},
            "STEERABLE_EXTRA_HEADERS sets x-a twice (header names ignore case)",
        ),
        (
            {"STEERABLE_EXTRA_HEADERS": '{"AUTHORIZATION": "Bearer gw-1"}'},
            "STEERABLE_EXTRA_HEADERS sets authorization, and STEERABLE_API_KEY is sent there too",
        ),
        (
            {"STEERABLE_EXTRA_BODY": '{"top_p": NaN}'},
            "STEERABLE_EXTRA_BODY must be plain JSON (no NaN or Infinity)",
        ),
        (
            {"STEERABLE_BASE_URL": "http://127.0.0.1:8000/v1#"},
            "STEERABLE_BASE_URL must not have a query or fragment (it has #)",
        ),
        (
            {"STEERABLE_EXTRA_HEADERS": '{"X-A": "a\\r\\nX-Injected: 1"}'},
            "STEERABLE_EXTRA_HEADERS: the value of X-A must be a string of printable ASCII characters",
        ),
        ({"STEERABLE_EXTRA_HEADERS": '{"X-A": 5}'}, "the value of X-A must be a string"),
        ({"STEERABLE_PROFILE": "nope"}, "STEERABLE_PROFILE='nope' is not a known profile"),
        (
            {"STEERABLE_PROVIDER": "azure"},
            "STEERABLE_BASE_URL is required for STEERABLE_PROVIDER=azure: set it to the endpoint's URL (it has no default)",
        ),
        (
            {"STEERABLE_BASE_URL": "http://127.0.0.1:8000/v1?api-version=1"},
            "must not have a query or fragment",
        ),
        (
            {
                "STEERABLE_PROVIDER": "azure",
                "STEERABLE_BASE_URL": "https://r.openai.azure.com/openai/deployments/d?api-version=1&x=2",
            },
            "must not have a query other than api-version or fragment",
        ),
    ],
)
def test_every_bad_setting_names_its_variable(env: dict[str, str], message: str) -> None:
    base = {"STEERABLE_PROVIDER": "vllm", "STEERABLE_MODEL": "m", "STEERABLE_API_KEY": "k-0123456789"}
    with pytest.raises(ConfigError) as info:
        LLMConfig.from_env({**base, **env})
    assert message in str(info.value)


def test_good_settings_are_read() -> None:
    built = LLMConfig.from_env(
        {
            "STEERABLE_PROVIDER": "VLLM",
            "STEERABLE_MODEL": "m",
            "STEERABLE_PROFILE": " Llama-CPP ",
            "STEERABLE_TEMPERATURE": "0",
            "STEERABLE_THINKING": "HIGH",
            "STEERABLE_MAX_TOKENS": "0",
            "STEERABLE_EXTRA_HEADERS": '{"X-Title": "t"}',
            "STEERABLE_EXTRA_BODY": '{"top_k": 20}',
        }
    )
    assert (built.choice.profile.name, built.temperature, built.thinking, built.max_tokens) == (
        "llama-cpp",
        0.0,
        "high",
        0,
    )
    assert dict(built.extra_headers) == {"X-Title": "t"} and dict(built.extra_body) == {"top_k": 20}
    assert "X-Title" not in repr(built)  # header values may be keys: not in the repr


def test_a_config_built_in_code_is_checked_the_same_way() -> None:
    with pytest.raises(ConfigError, match="STEERABLE_TEMPERATURE=True must be a number from 0 to 2"):
        config(temperature=True)
    with pytest.raises(ConfigError, match="STEERABLE_EXTRA_BODY must be plain JSON"):
        config(extra_body={"x": {1, 2}})
    with pytest.raises(ConfigError, match="the lm-studio profile knows no way to switch thinking"):
        config(provider="lm-studio", thinking="on")
    azure = LLMConfig(
        provider="azure",
        model="m",
        base_url="https://r.openai.azure.com/openai/v1",
        api_key=SecretStr("k" * 12),
    )
    assert (
        azure.choice.profile.auth_header == "api-key"
        and azure.base_url == "https://r.openai.azure.com/openai/v1"
    )


def test_alnum9_ids_map_the_same_way_everywhere() -> None:
    mistral = VENDOR_PROFILES["mistral"]
    assert alnum9_id("D681PevKs") == "D681PevKs"  # Mistral's own ids pass
    mapped = alnum9_id("call_PTLP8xhu3uwZk4l3nlnrrJha")
    assert (
        len(mapped) == 9
        and mapped.isalnum()
        and mapped.isascii()
        and mapped == alnum9_id("call_PTLP8xhu3uwZk4l3nlnrrJha")
    )
    assert alnum9_id("\udcff-lone-surrogate") != alnum9_id("other")  # any string maps, none crashes
    messages = [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "x1",
                    "type": "function",
                    "function": {"name": "f", "arguments": "{}"},
                    "extra_content": {},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "x1", "content": "{}"},
        {"role": "tool", "content": "no id"},
        "not a message",
    ]
    sent = outgoing_messages(mistral, messages)  # type: ignore[arg-type]
    assert sent[0]["tool_calls"][0] == {
        "id": alnum9_id("x1"),
        "type": "function",
        "function": {"name": "f", "arguments": "{}"},
    }
    assert sent[1]["tool_call_id"] == alnum9_id("x1") and sent[2] is messages[2] and sent[3] is messages[3]
    assert messages[0]["tool_calls"][0]["id"] == "x1"  # type: ignore[index]


def test_run_flags_stand_in_for_the_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    from steerable_sidecar.run import _headless as headless

    monkeypatch.setenv("STEERABLE_MAX_TOKENS", "4096")
    monkeypatch.setenv("STEERABLE_TEMPERATURE", "0.5")
    given = {"max_tokens": "300", "temperature": None, "thinking": "off", "profile": "vllm"}
    args = argparse.Namespace(provider=None, model=None, base_url=None, **given)  # as run's parser leaves it
    environ = headless._model_settings(args)
    assert environ["STEERABLE_MAX_TOKENS"] == "300" and environ["STEERABLE_TEMPERATURE"] == "0.5"
    assert environ["STEERABLE_THINKING"] == "off" and environ["STEERABLE_PROFILE"] == "vllm"
    from steerable_sidecar.providers._config import (
        BASE_URL_ENV,
        MAX_TOKENS_ENV,
        MODEL_ENV,
        PROVIDER_ENV,
        TEMPERATURE_ENV,
        THINKING_ENV,
    )
    from steerable_sidecar.providers._vendor_profiles import PROFILE_ENV

    # written out in headless (its parser must not import the config); the same names as the config's
    assert headless._SETTING_FLAGS == {
        "provider": PROVIDER_ENV,
        "model": MODEL_ENV,
        "base_url": BASE_URL_ENV,
        "max_tokens": MAX_TOKENS_ENV,
        "temperature": TEMPERATURE_ENV,
        "thinking": THINKING_ENV,
        "profile": PROFILE_ENV,
    }


def test_a_pasted_header_line_never_reaches_the_message() -> None:
    token = "gw-TOKEN-0123456789abcdef"
    with pytest.raises(ConfigError) as info:
        LLMConfig.from_env(
            {
                "STEERABLE_PROVIDER": "vllm",
                "STEERABLE_MODEL": "m",
                "STEERABLE_EXTRA_HEADERS": f'{{"Authorization: Bearer {token}": ""}}',
            }
        )
    assert token not in str(info.value)


def test_a_gateway_header_without_a_key_is_the_credential() -> None:
    built = config(extra_headers={"Authorization": "Bearer gw-1"})  # vllm: keyless, so no clash
    assert dict(built.extra_headers) == {"Authorization": "Bearer gw-1"}


def test_the_host_is_read_as_the_client_reads_it() -> None:
    built = config(
        provider="openai", base_url="https://api\u3002mistral\u3002ai/v1", api_key=SecretStr("k" * 12)
    )
    assert built.choice.profile.name == "mistral"
