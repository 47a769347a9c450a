"""Vendor profiles: what each OpenAI-compatible endpoint needs on the wire, as data.

Every vendor speaks "OpenAI chat completions", and every one of them deviates somewhere: which
field its reasoning streams in and whether it must come back on the next request, which extra
fields a tool call carries that must be echoed verbatim (Gemini's thought signatures), which
request fields it refuses (Mistral's ``stream_options``), the tool-call id format it accepts, where
its usage and in-stream errors live, how its thinking is switched on and off. One frozen
:class:`VendorProfile` per vendor family holds those facts; the provider
(:mod:`steerable_sidecar.providers._openai`) reads only the profile, never a vendor's name.

How a profile is chosen (:func:`choose_profile`): ``STEERABLE_PROFILE`` names one; else
``STEERABLE_PROVIDER``, when it names a vendor other than the generic ``openai``; else the base
URL's host (``api.openai.com`` is OpenAI, ``api.groq.com`` Groq, ``*.openai.azure.com`` Azure);
else ``openai-compatible``: OpenAI's rules with the ``max_tokens`` field every compatible server
reads (OpenAI's own reasoning models need ``max_completion_tokens``).
``steerable doctor`` shows the profile chosen and why. The long form, with one table of every
vendor, is docs/providers.md ("Vendor profiles").

Reading a stream is the same for every profile (usage wherever a vendor puts it, every known
error shape, ``abort`` finish reasons, refusals): a gateway may relay any vendor's shapes, and
reading a field no one sent costs nothing. What a profile changes is what is *sent*.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final, Literal

from steerable_agent_runtime.errors import ConfigError

__all__ = [
    "PROFILE_ENV",
    "PROFILE_NAMES",
    "VENDOR_PROFILES",
    "THINKING_CHOICES",
    "ProfileChoice",
    "ReasoningBack",
    "ThinkingStyle",
    "VendorProfile",
    "choose_profile",
]

THINKING_CHOICES: Final = ("on", "off", "low", "medium", "high")
"""``STEERABLE_THINKING``: switch a thinking model's reasoning on or off, or set its effort."""

PROFILE_ENV: Final = "STEERABLE_PROFILE"
"""Names the profile outright (a gateway in front of one vendor, a local server on its own port)."""

ReasoningBack = Literal["never", "always", "with_tool_calls"]
"""When an assistant message's reasoning text goes back: ``never`` (stripped: the vendor refuses or
ignores it), ``always`` (every message that has some), ``with_tool_calls`` (only messages that
called tools, where a thinking model needs its chain across the calls)."""

ThinkingStyle = Literal[
    "none", "reasoning_effort", "openrouter", "thinking_type", "anthropic", "enable_thinking", "template"
]
"""How ``STEERABLE_THINKING`` is sent: ``reasoning_effort`` (``"low"``..., ``"none"`` for off),
``openrouter`` (``reasoning: {"effort"}`` / ``{"enabled": false}``), ``thinking_type``
(``thinking: {"type": "enabled" | "disabled"}``), ``anthropic`` (``thinking: {"type": "enabled",
"budget_tokens"}``), ``enable_thinking`` (a top-level boolean), ``template``
(``chat_template_kwargs: {"enable_thinking"}``), ``none`` (no switch known: the setting is refused)."""


@dataclass(frozen=True, slots=True)
class VendorProfile:
    """One vendor family's wire rules (docs/providers.md, "Vendor profiles").

    Attributes:
        name: The profile's name (``STEERABLE_PROFILE`` / ``STEERABLE_PROVIDER`` value).
        vendor: Who serves it, for people.
        base_url: The default base URL; ``None`` when there is none to assume (Azure).
        hosts: Host names that choose this profile; one starting with ``.`` or ``-`` is a suffix
            (``.openai.azure.com``: any resource; ``-aiplatform.googleapis.com``: any Vertex region).
        keyless: Whether it is served without an API key (local servers).
        reasoning_back: When reasoning text goes back (:data:`ReasoningBack`).
        reasoning_key: The assistant-message key it goes back under.
        reasoning_empty: Whether a message with tool calls carries the key even when the model
            reasoned nothing (``""``): DeepSeek's and Moonshot's thinking modes refuse it missing.
        reasoning_details_back: Whether OpenRouter's ``reasoning_details`` blocks go back whole.
        echo_call_fields: Fields of a streamed tool call kept and sent back verbatim on it
            (Gemini's ``extra_content`` with its ``thought_signature``).
        echo_message_fields: Fields of the streamed message kept and sent back verbatim.
        stream_options: Whether ``stream_options: {"include_usage": true}`` is sent.
        max_tokens_field: The request field the output bound goes in.
        call_id_format: ``any``, or ``alnum9``: every id sent is exactly 9 letters and digits
            (Mistral), others mapped to one deterministically.
        auth_header: ``bearer`` (``Authorization: Bearer``) or ``api-key`` (Azure).
        query_keys: Query keys the base URL may carry (Azure's ``api-version``).
        thinking: How ``STEERABLE_THINKING`` is sent (:data:`ThinkingStyle`).
        tools_probe: How to ask the server, before the first round, whether the offered tools
            reach the model (``llama-cpp``: ``/apply-template`` then ``/props``; ``ollama``:
            ``/api/show``; ``none``).
        streams_reasoning: Where it streams reasoning, for people (``reasoning_content``...).
        usage_at: Where its usage arrives, for people.
        errors_at: How it reports an error after the 200, for people.
        limits: What is known not to work, for people.
    """

    name: str
    vendor: str
    base_url: str | None
    hosts: tuple[str, ...] = ()
    keyless: bool = False
    reasoning_back: ReasoningBack = "never"
    reasoning_key: str = "reasoning_content"
    reasoning_empty: bool = False
    reasoning_details_back: bool = False
    echo_call_fields: tuple[str, ...] = ()
    echo_message_fields: tuple[str, ...] = ()
    stream_options: bool = True
    max_tokens_field: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    call_id_format: Literal["any", "alnum9"] = "any"
    auth_header: Literal["bearer", "api-key"] = "bearer"
    query_keys: tuple[str, ...] = ()
    thinking: ThinkingStyle = "none"
    tools_probe: Literal["none", "llama-cpp", "ollama"] = "none"
    streams_reasoning: str = "none"
    usage_at: str = "last chunk `usage`"
    errors_at: str = "`error` object"
    limits: str = ""

    def round_trips(self) -> str:
        """What goes back on the next request, for the docs table (one short phrase)."""
        parts: list[str] = []
        if self.reasoning_details_back:
            parts.append("`reasoning_details` whole, else `reasoning`")
        elif self.reasoning_back != "never":
            when = "on tool-call messages" if self.reasoning_back == "with_tool_calls" else "always"
            empty = ", even empty" if self.reasoning_empty else ""
            parts.append(f"`{self.reasoning_key}` {when}{empty}")
        else:
            parts.append("no reasoning (stripped)")
        parts.extend(f"`{field}` on tool calls" for field in self.echo_call_fields)
        parts.extend(f"`{field}` on messages" for field in self.echo_message_fields)
        if self.call_id_format == "alnum9":
            parts.append("ids as 9 letters/digits")
        return "; ".join(parts)


def _profiles(*profiles: VendorProfile) -> Mapping[str, VendorProfile]:
    return MappingProxyType({profile.name: profile for profile in profiles})


_STRICT_OPENAI: Final = "rejects unknown message fields, so reasoning is never sent back"

VENDOR_PROFILES: Final[Mapping[str, VendorProfile]] = _profiles(
    VendorProfile(
        "openai",
        "OpenAI",
        "https://api.openai.com/v1",
        hosts=("api.openai.com",),
        max_tokens_field="max_completion_tokens",
        thinking="reasoning_effort",
        limits=f"chat completions return no reasoning; {_STRICT_OPENAI}",
    ),
    VendorProfile(
        "openai-compatible",
        "Any other OpenAI-compatible server (LiteLLM, a proxy, a server not listed)",
        None,
        limits="OpenAI's rules with `max_tokens`, the bound every compatible server reads; name a "
        "profile with STEERABLE_PROFILE when the server is one of these",
    ),
    VendorProfile(
        "azure",
        "Azure OpenAI (`/openai/v1` and classic `/openai/deployments/<name>?api-version=`)",
        None,
        hosts=(".openai.azure.com", ".cognitiveservices.azure.com", ".services.ai.azure.com"),
        max_tokens_field="max_completion_tokens",
        auth_header="api-key",
        query_keys=("api-version",),
        thinking="reasoning_effort",
        errors_at="`error` object; `content_filter` finish",
        limits="no default URL: set STEERABLE_BASE_URL to the resource's; the key goes in `api-key`",
    ),
    VendorProfile(
        "anthropic",
        "Anthropic (OpenAI SDK compatibility)",
        "https://api.anthropic.com/v1",
        hosts=("api.anthropic.com",),
        thinking="anthropic",
        limits="thinking is not streamed back through this layer; use it for tool runs, not traces",
    ),
    VendorProfile(
        "gemini",
        "Google Gemini (OpenAI-compatible endpoint)",
        "https://generativelanguage.googleapis.com/v1beta/openai",
        hosts=(
            "generativelanguage.googleapis.com",
            "aiplatform.googleapis.com",
            "-aiplatform.googleapis.com",
        ),
        echo_call_fields=("extra_content",),
        echo_message_fields=("extra_content",),
        thinking="reasoning_effort",
        limits="Gemini 3 refuses a round-2 request whose tool call lost its `thought_signature`",
    ),
    VendorProfile(
        "mistral",
        "Mistral",
        "https://api.mistral.ai/v1",
        hosts=("api.mistral.ai", "codestral.mistral.ai"),
        stream_options=False,
        call_id_format="alnum9",
        limits="refuses `stream_options` (422); every tool-call id must be 9 letters or digits",
    ),
    VendorProfile(
        "groq",
        "Groq",
        "https://api.groq.com/openai/v1",
        hosts=("api.groq.com",),
        max_tokens_field="max_completion_tokens",
        thinking="reasoning_effort",
        streams_reasoning="`reasoning`",
        usage_at="`x_groq.usage` on the last chunk",
        limits="refuses reasoning fields on input messages, so none go back",
    ),
    VendorProfile(
        "cerebras",
        "Cerebras",
        "https://api.cerebras.ai/v1",
        hosts=("api.cerebras.ai",),
        max_tokens_field="max_completion_tokens",
        thinking="reasoning_effort",
        streams_reasoning="`reasoning`",
        limits="refuses reasoning fields on input messages, so none go back",
    ),
    VendorProfile(
        "xai",
        "xAI (Grok)",
        "https://api.x.ai/v1",
        hosts=("api.x.ai",),
        max_tokens_field="max_completion_tokens",
        thinking="reasoning_effort",
        streams_reasoning="`reasoning_content`",
        usage_at="`usage` on the chunk before the last",
    ),
    VendorProfile(
        "together",
        "Together AI",
        "https://api.together.xyz/v1",
        hosts=("api.together.xyz", "api.together.ai"),
        thinking="reasoning_effort",
        streams_reasoning="`reasoning`",
    ),
    VendorProfile(
        "fireworks",
        "Fireworks AI",
        "https://api.fireworks.ai/inference/v1",
        hosts=("api.fireworks.ai",),
        reasoning_back="with_tool_calls",
        thinking="reasoning_effort",
        streams_reasoning="`reasoning_content`",
    ),
    VendorProfile(
        "deepseek",
        "DeepSeek",
        "https://api.deepseek.com/v1",
        hosts=("api.deepseek.com",),
        reasoning_back="always",
        reasoning_empty=True,
        thinking="thinking_type",
        streams_reasoning="`reasoning_content`",
        errors_at="`insufficient_system_resource` finish",
        limits="thinking mode refuses a tool-call message without `reasoning_content` (400)",
    ),
    VendorProfile(
        "moonshot",
        "Moonshot (Kimi)",
        "https://api.moonshot.ai/v1",
        hosts=("api.moonshot.ai", "api.moonshot.cn"),
        reasoning_back="always",
        reasoning_empty=True,
        thinking="thinking_type",
        streams_reasoning="`reasoning_content`",
        usage_at="`choices[0].usage` on the last chunk",
        limits='thinking models refuse a tool-call message without it: "reasoning_content is missing"',
    ),
    VendorProfile(
        "qwen",
        "Alibaba Qwen (DashScope compatible mode)",
        "https://dashscope-intl.aliyuncs.com/compatible-mode/v1",
        hosts=("dashscope.aliyuncs.com", "dashscope-intl.aliyuncs.com", "dashscope-us.aliyuncs.com"),
        thinking="enable_thinking",
        streams_reasoning="`reasoning_content`",
        limits="thinking (`enable_thinking`) is served only streamed, which steerable always is",
    ),
    VendorProfile(
        "glm",
        "Zhipu GLM / Z.ai",
        "https://open.bigmodel.cn/api/paas/v4",
        hosts=("open.bigmodel.cn", "api.z.ai"),
        reasoning_back="always",
        thinking="thinking_type",
        streams_reasoning="`reasoning_content`",
        errors_at="`network_error` finish; `sensitive` filter",
    ),
    VendorProfile(
        "minimax",
        "MiniMax",
        "https://api.minimax.io/v1",
        hosts=("api.minimax.io", "api.minimaxi.com", "api.minimax.chat"),
        reasoning_back="with_tool_calls",
        streams_reasoning="`reasoning_content` (or `<think>` in the text)",
        errors_at="`base_resp.status_code` in the stream or a 200 body",
        limits="a rate limit arrives as HTTP 200 with `base_resp` 1002 (retried)",
    ),
    VendorProfile(
        "openrouter",
        "OpenRouter",
        "https://openrouter.ai/api/v1",
        hosts=("openrouter.ai",),
        reasoning_back="always",
        reasoning_key="reasoning",
        reasoning_details_back=True,
        thinking="openrouter",
        streams_reasoning="`reasoning` and `reasoning_details`",
        errors_at="`error` object; `error` finish",
    ),
    VendorProfile(
        "vllm",
        "vLLM",
        "http://localhost:8000/v1",
        keyless=True,
        reasoning_back="with_tool_calls",
        thinking="template",
        streams_reasoning="`reasoning_content` (`reasoning` in newer builds)",
        errors_at="`object: error`; `abort` finish",
    ),
    VendorProfile(
        "sglang",
        "SGLang",
        "http://localhost:30000/v1",
        keyless=True,
        reasoning_back="with_tool_calls",
        thinking="template",
        streams_reasoning="`reasoning_content`",
        errors_at="`object: error`; `abort` finish",
    ),
    VendorProfile(
        "llama-cpp",
        "llama.cpp server",
        "http://localhost:8080/v1",
        keyless=True,
        reasoning_back="with_tool_calls",
        thinking="template",
        tools_probe="llama-cpp",
        streams_reasoning="`reasoning_content`",
        usage_at="`usage` beside `timings`",
        errors_at="`error:` line; a 500 when it cannot parse the model's tool call",
        limits="tools reach the model only when the chat template renders them: checked before the first "
        "round (`/apply-template`, `/props`)",
    ),
    VendorProfile(
        "ollama",
        "Ollama",
        "http://localhost:11434/v1",
        hosts=("ollama.com",),
        keyless=True,
        reasoning_back="always",
        reasoning_key="reasoning",
        thinking="reasoning_effort",
        tools_probe="ollama",
        streams_reasoning="`reasoning`",
        limits="tools reach the model only when it has the `tools` capability: checked before the first "
        "round (`/api/show`)",
    ),
    VendorProfile(
        "lm-studio",
        "LM Studio",
        "http://localhost:1234/v1",
        keyless=True,
        streams_reasoning="`reasoning_content` or `reasoning`",
        limits="no documented way to send reasoning back or switch it",
    ),
)
"""Every profile by name, in documentation order."""

PROFILE_NAMES: Final[tuple[str, ...]] = tuple(VENDOR_PROFILES)
"""The names :func:`choose_profile` accepts."""


@dataclass(frozen=True, slots=True)
class ProfileChoice:
    """The profile a configuration gets, and why (what ``steerable doctor`` shows).

    Attributes:
        profile: The chosen profile.
        why: ``"STEERABLE_PROFILE"``, ``"STEERABLE_PROVIDER"``, ``"host <name>"`` or
            ``"default (an unknown server)"`` (the ``openai-compatible`` profile).
    """

    profile: VendorProfile
    why: str


def choose_profile(
    host: str | None, *, profile: str | None = None, provider: str | None = None
) -> ProfileChoice:
    """The profile for an endpoint (module docstring, "How a profile is chosen").

    Args:
        host: The base URL's host name (any case), or ``None``.
        profile: ``STEERABLE_PROFILE``, when set: wins.
        provider: ``STEERABLE_PROVIDER``: a vendor's name chooses its profile; ``openai`` (the
            default, also used for any compatible server) and ``scripted`` leave it to the host.

    Raises:
        ConfigError: When ``profile`` names no profile (the message lists them).
    """
    if profile is not None:
        if profile not in VENDOR_PROFILES:
            raise ConfigError(
                f"{PROFILE_ENV}={profile!r} is not a known profile; use one of: {', '.join(PROFILE_NAMES)}"
            )
        return ProfileChoice(VENDOR_PROFILES[profile], PROFILE_ENV)
    if provider is not None and provider != "openai" and provider in VENDOR_PROFILES:
        return ProfileChoice(VENDOR_PROFILES[provider], "STEERABLE_PROVIDER")
    name = (host or "").lower().rstrip(".")
    for candidate in VENDOR_PROFILES.values():
        if any(_host_matches(name, pattern) for pattern in candidate.hosts):
            return ProfileChoice(candidate, f"host {name}")
    return ProfileChoice(VENDOR_PROFILES["openai-compatible"], "default (an unknown server)")


def _host_matches(host: str, pattern: str) -> bool:
    if pattern.startswith((".", "-")):  # a suffix: "*.openai.azure.com", "*-aiplatform.googleapis.com"
        return host.endswith(pattern) and len(host) > len(pattern)
    return host == pattern
