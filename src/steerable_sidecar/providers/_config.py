"""``LLMConfig``: which model endpoint to call and how, resolved from ``STEERABLE_*`` variables.

Spec: Provider seam. The variables are listed in ``docs/configuration.md`` (Model provider); the
provider that uses this configuration is :mod:`steerable_sidecar.providers._openai`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final, Literal, get_args

from pydantic import SecretStr

from steerable_agent_runtime.config import env_text, int_field, int_fields
from steerable_agent_runtime.errors import ConfigError

from ..shared._endpoints import checked_base_url, header_safe
from ._vendor_profiles import PROFILE_ENV, THINKING_CHOICES, VENDOR_PROFILES, ProfileChoice, choose_profile

__all__ = [
    "API_KEY_ENV",
    "BASE_URL_ENV",
    "DEFAULT_BASE_URLS",
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_REQUEST_TIMEOUT_MS",
    "EXTRA_BODY_ENV",
    "EXTRA_HEADERS_ENV",
    "MAX_TOKENS_ENV",
    "PROFILE_ENV",
    "TEMPERATURE_ENV",
    "THINKING_CHOICES",
    "THINKING_ENV",
    "MAX_REQUEST_TIMEOUT_MS",
    "MODEL_ENV",
    "PROVIDER_ENV",
    "PROVIDER_NAMES",
    "REQUEST_TIMEOUT_ENV",
    "SCRIPT_ENV",
    "LLMConfig",
    "ProviderName",
]

ProviderName = Literal[
    "openai",
    "azure",
    "anthropic",
    "gemini",
    "mistral",
    "groq",
    "cerebras",
    "xai",
    "together",
    "fireworks",
    "deepseek",
    "moonshot",
    "qwen",
    "glm",
    "minimax",
    "openrouter",
    "vllm",
    "sglang",
    "llama-cpp",
    "ollama",
    "lm-studio",
    "scripted",
]
"""The accepted values of ``STEERABLE_PROVIDER``: every vendor profile's name, and ``scripted``."""

PROVIDER_NAMES: Final[tuple[ProviderName, ...]] = get_args(ProviderName)
"""Every provider name, in documentation order."""

DEFAULT_BASE_URLS: Final[Mapping[str, str]] = MappingProxyType(
    {name: profile.base_url for name, profile in VENDOR_PROFILES.items() if profile.base_url is not None}
)
"""The base URL each HTTP provider uses when ``STEERABLE_BASE_URL`` is unset (none for ``azure``)."""

PROVIDER_ENV: Final = "STEERABLE_PROVIDER"
MODEL_ENV: Final = "STEERABLE_MODEL"
BASE_URL_ENV: Final = "STEERABLE_BASE_URL"
API_KEY_ENV: Final = "STEERABLE_API_KEY"
SCRIPT_ENV: Final = "STEERABLE_SCRIPT"
REQUEST_TIMEOUT_ENV: Final = "STEERABLE_REQUEST_TIMEOUT_MS"
MAX_TOKENS_ENV: Final = "STEERABLE_MAX_TOKENS"
TEMPERATURE_ENV: Final = "STEERABLE_TEMPERATURE"
THINKING_ENV: Final = "STEERABLE_THINKING"
EXTRA_HEADERS_ENV: Final = "STEERABLE_EXTRA_HEADERS"
EXTRA_BODY_ENV: Final = "STEERABLE_EXTRA_BODY"
"""The variables :meth:`LLMConfig.from_env` reads (``docs/configuration.md``)."""
DEFAULT_REQUEST_TIMEOUT_MS: Final = 600_000
MAX_REQUEST_TIMEOUT_MS: Final = 3_600_000
"""``STEERABLE_REQUEST_TIMEOUT_MS``: the default and the ceiling (the floor is 1), in milliseconds."""
DEFAULT_MAX_TOKENS: Final = 8_192
"""``STEERABLE_MAX_TOKENS``: the output bound of each model call when unset. 8,192 bounds a runaway
answer (a small model repeating itself for minutes) and is within what every current model of the
profiled vendors accepts; 0 sends no bound (the server's own default)."""
MAX_MAX_TOKENS: Final = 1_000_000
RESERVED_BODY_KEYS: Final = frozenset({"model", "messages", "stream", "tools"})
"""Request fields ``STEERABLE_EXTRA_BODY`` may not replace (the run owns them)."""

_KEYLESS: Final = frozenset({name for name, p in VENDOR_PROFILES.items() if p.keyless} | {"scripted"})
_HEADER_NAME: Final = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")  # an RFC 9110 token
_OWN_HEADERS: Final = frozenset({"content-length", "transfer-encoding", "host", "connection", "content-type"})
"""Headers the HTTP exchange itself sets; one from ``STEERABLE_EXTRA_HEADERS`` would break it."""


@dataclass(frozen=True, slots=True)
class LLMConfig:
    """Which model endpoint to call and how: validated once, immutable, safe to print.

    Every field is checked when the object is built (by :meth:`from_env` or directly); the long
    form of each variable is in docs/providers.md and docs/configuration.md.

    Attributes:
        provider: ``STEERABLE_PROVIDER``: a vendor (:data:`PROVIDER_NAMES`; default ``openai``,
            which also stands for any OpenAI-compatible server) or ``scripted``. Case-insensitive
            in the environment.
        model: ``STEERABLE_MODEL``: the model name sent in each request. Required, except for
            scripted.
        base_url: ``STEERABLE_BASE_URL``: an http(s) URL without credentials or fragment, and
            without a query except the keys its profile allows (Azure's ``api-version``),
            trailing ``/`` dropped; requests go to ``{base_url}/chat/completions`` (before the
            query). ``None``: the provider's default (:data:`DEFAULT_BASE_URLS`; required for
            azure; still ``None`` for scripted).
        api_key: ``STEERABLE_API_KEY``: sent as ``Authorization: Bearer <key>`` (Azure:
            ``api-key: <key>``). Required, except for local servers and scripted. Masked in
            ``repr``/``str``; read it with ``get_secret_value()``.
        script: ``STEERABLE_SCRIPT``: a JSON file holding a list of turns for
            :meth:`ScriptedProvider.from_file`. Required for (and only used by) scripted.
        request_timeout_ms: ``STEERABLE_REQUEST_TIMEOUT_MS``: the longest wait, in milliseconds,
            for any single network step (connect, send, each read of the stream), 1 to 3 600 000
            (default 600 000).
        profile: ``STEERABLE_PROFILE``: the vendor profile to use whatever the host
            (:mod:`steerable_sidecar.providers._vendor_profiles`); ``None`` chooses one.
        max_tokens: ``STEERABLE_MAX_TOKENS``: the output bound of each call, 0 to 1 000 000
            (default :data:`DEFAULT_MAX_TOKENS`; 0 sends none). A request's own bound wins.
        temperature: ``STEERABLE_TEMPERATURE``: 0 to 2, or ``None`` for the model's default.
        thinking: ``STEERABLE_THINKING``: one of :data:`THINKING_CHOICES`, or ``None`` for the
            model's default; sent the way the profile's vendor reads it.
        extra_headers: ``STEERABLE_EXTRA_HEADERS``: more HTTP headers (a JSON object of strings),
            e.g. a gateway's routing header. Their values are never shown.
        extra_body: ``STEERABLE_EXTRA_BODY``: more request fields (a JSON object) merged into every
            request last; ``model``, ``messages``, ``stream`` and ``tools`` are refused.

    Raises:
        ConfigError: On construction, naming the variable, when a value is missing or invalid.
    """

    provider: ProviderName = "openai"
    model: str | None = None
    base_url: str | None = None
    api_key: SecretStr | None = None
    script: Path | None = None
    request_timeout_ms: int = int_field(
        REQUEST_TIMEOUT_ENV, DEFAULT_REQUEST_TIMEOUT_MS, floor=1, ceiling=MAX_REQUEST_TIMEOUT_MS
    )
    profile: str | None = None
    max_tokens: int = int_field(MAX_TOKENS_ENV, DEFAULT_MAX_TOKENS, floor=0, ceiling=MAX_MAX_TOKENS)
    temperature: float | None = None
    thinking: str | None = None
    extra_headers: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}), repr=False)
    extra_body: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    choice: ProfileChoice = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.provider not in PROVIDER_NAMES:
            raise ConfigError(_unknown_provider(self.provider))
        if self.provider != "scripted" and not (self.model and self.model.strip()):
            raise ConfigError(
                f"{MODEL_ENV} is required for {PROVIDER_ENV}={self.provider}: "
                "set it to the model name the endpoint serves"
            )
        base_url = self.base_url or DEFAULT_BASE_URLS.get(self.provider)
        host = _loose_host(base_url)
        object.__setattr__(self, "choice", choose_profile(host, profile=self.profile, provider=self.provider))
        object.__setattr__(self, "base_url", self._checked_base_url(base_url))
        if self.api_key is not None and not self.api_key.get_secret_value():
            object.__setattr__(self, "api_key", None)
        self._check_key()
        self._check_script()
        _REQUEST_TIMEOUT.check(self.request_timeout_ms, REQUEST_TIMEOUT_ENV)
        _MAX_TOKENS.check(self.max_tokens, MAX_TOKENS_ENV)
        self._check_sampling()
        object.__setattr__(self, "extra_headers", MappingProxyType(_checked_headers(self.extra_headers)))
        auth = "api-key" if self.choice.profile.auth_header == "api-key" else "authorization"
        if self.api_key is not None and any(name.lower() == auth for name in self.extra_headers):
            raise ConfigError(
                f"{EXTRA_HEADERS_ENV} sets {auth}, and {API_KEY_ENV} is sent there too: keep one of them"
            )
        object.__setattr__(self, "extra_body", MappingProxyType(_checked_body(self.extra_body)))

    def _checked_base_url(self, base_url: str | None) -> str | None:
        if base_url is None:
            if self.provider != "scripted":
                raise ConfigError(
                    f"{BASE_URL_ENV} is required for {PROVIDER_ENV}={self.provider}: "
                    "set it to the endpoint's URL (it has no default)"
                )
            return None
        return checked_base_url(
            base_url.strip(),
            variable=BASE_URL_ENV,
            key_variable=API_KEY_ENV,
            appends="/chat/completions",
            query_keys=self.choice.profile.query_keys,
        )

    def _check_key(self) -> None:
        if self.api_key is None:
            if self.provider not in _KEYLESS:
                raise ConfigError(
                    f"{API_KEY_ENV} is required for {PROVIDER_ENV}={self.provider}: "
                    "set it to the endpoint's API key"
                )
            return
        if not header_safe(self.api_key.get_secret_value()):
            raise ConfigError(
                f"{API_KEY_ENV} contains characters an HTTP header cannot carry "
                "(spaces, control or non-ASCII characters); check how it was pasted"
            )

    def _check_script(self) -> None:
        if self.provider != "scripted":
            return
        if self.script is None:
            raise ConfigError(
                f"{SCRIPT_ENV} is required for {PROVIDER_ENV}=scripted: "
                "set it to a JSON file holding a list of turns"
            )
        if not Path(self.script).is_file():
            raise ConfigError(f"{SCRIPT_ENV}={str(self.script)!r} is not a file")

    def _check_sampling(self) -> None:
        temperature = self.temperature
        if temperature is not None and (
            isinstance(temperature, bool)
            or not isinstance(temperature, int | float)
            or not math.isfinite(temperature)
            or not 0 <= temperature <= 2
        ):
            raise ConfigError(f"{TEMPERATURE_ENV}={temperature!r} must be a number from 0 to 2")
        if self.thinking is None:
            return
        if self.thinking not in THINKING_CHOICES:
            raise ConfigError(
                f"{THINKING_ENV}={self.thinking!r} must be one of: {', '.join(THINKING_CHOICES)}"
            )
        profile = self.choice.profile
        if profile.thinking == "none":
            raise ConfigError(
                f"{THINKING_ENV} is set, but the {profile.name} profile knows no way to switch thinking; "
                f"unset it, or send the vendor's own field with {EXTRA_BODY_ENV}"
            )

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> LLMConfig:
        """Resolve the configuration from ``STEERABLE_*`` variables (see the class attributes).

        Values are stripped; an empty variable counts as unset.

        Args:
            environ: The environment to read (defaults to ``os.environ``).

        Returns:
            The validated configuration.

        Raises:
            ConfigError: Naming the variable, when a value is missing or invalid.
        """
        named = env_text(PROVIDER_ENV, environ)
        provider = (named or "openai").lower()
        if provider not in PROVIDER_NAMES:
            raise ConfigError(_unknown_provider(provider))
        try:
            return cls._read(provider, environ)
        except ConfigError as exc:
            if named is None and f"{PROVIDER_ENV}=openai" in str(exc):  # the user chose no provider
                raise ConfigError(
                    f"{exc} ({PROVIDER_ENV} is not set, so the default, openai, is used: set it, or "
                    "`provider` in the configuration file, to the provider you use)"
                ) from None
            raise

    @classmethod
    def _read(cls, provider: ProviderName, environ: Mapping[str, str] | None) -> LLMConfig:
        """The configuration of ``provider`` from the other variables (:meth:`from_env`)."""
        key = env_text(API_KEY_ENV, environ)
        script = env_text(SCRIPT_ENV, environ)
        profile = env_text(PROFILE_ENV, environ)
        thinking = env_text(THINKING_ENV, environ)
        return cls(
            provider=provider,
            model=env_text(MODEL_ENV, environ),
            base_url=env_text(BASE_URL_ENV, environ),
            api_key=SecretStr(key) if key else None,
            script=Path(script) if script else None,
            request_timeout_ms=_REQUEST_TIMEOUT.read(environ),
            profile=profile.lower() if profile else None,
            max_tokens=_MAX_TOKENS.read(environ),
            temperature=_env_number(TEMPERATURE_ENV, environ),
            thinking=thinking.lower() if thinking else None,
            extra_headers=_env_object(EXTRA_HEADERS_ENV, environ),
            extra_body=_env_object(EXTRA_BODY_ENV, environ),
        )


_REQUEST_TIMEOUT: Final = int_fields(LLMConfig)["request_timeout_ms"]
_MAX_TOKENS: Final = int_fields(LLMConfig)["max_tokens"]


def _loose_host(base_url: str | None) -> str | None:
    """The host of a URL not checked yet (for choosing its profile; the check comes next).

    Read as the HTTP client reads it (IDNA: ``api。mistral。ai`` is ``api.mistral.ai``), so the
    profile is the one of the host the requests go to.
    """
    if not base_url:
        return None
    import httpx

    try:
        return httpx.URL(base_url.strip()).host or None
    except (httpx.InvalidURL, ValueError):
        return None


def _env_number(name: str, environ: Mapping[str, str] | None) -> float | None:
    raw = env_text(name, environ)
    if raw is None:
        return None
    try:
        return float(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not a number") from None


def _env_object(name: str, environ: Mapping[str, str] | None) -> dict[str, Any]:
    raw = env_text(name, environ)
    if raw is None:
        return {}
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        raise ConfigError(f'{name} is not JSON: write a JSON object, e.g. {{"key": "value"}}') from None
    if not isinstance(value, dict):
        raise ConfigError(f"{name} must be a JSON object, not {type(value).__name__}")
    return value


def _checked_headers(headers: Mapping[str, Any]) -> dict[str, str]:
    """The extra headers, each checked.

    A bad name is never echoed: a pasted ``Authorization: Bearer ...`` line would put its key in
    the message.
    """
    out: dict[str, str] = {}
    seen: set[str] = set()
    for name, value in headers.items():
        if not isinstance(name, str) or not _HEADER_NAME.match(name):
            raise ConfigError(
                f"{EXTRA_HEADERS_ENV}: a header name is not an HTTP header name (letters, digits and "
                '-, with no space or ":"); write {"Name": "value"}, one key per header'
            )
        lowered = name.lower()
        if lowered in _OWN_HEADERS:
            raise ConfigError(f"{EXTRA_HEADERS_ENV} must not set {name}: the HTTP client sends it")
        if lowered in seen:
            raise ConfigError(f"{EXTRA_HEADERS_ENV} sets {name} twice (header names ignore case)")
        seen.add(lowered)
        if not isinstance(value, str) or not all(32 <= ord(c) <= 126 for c in value):
            raise ConfigError(
                f"{EXTRA_HEADERS_ENV}: the value of {name} must be a string of printable ASCII characters"
            )
        out[name] = value
    return out


def _checked_body(body: Mapping[str, Any]) -> dict[str, Any]:
    reserved = sorted(RESERVED_BODY_KEYS.intersection(body))
    if reserved:
        raise ConfigError(f"{EXTRA_BODY_ENV} must not set {', '.join(reserved)} (the run sends them)")
    plain = dict(body)
    try:
        json.dumps(plain, allow_nan=False)  # NaN and Infinity are not JSON: a server would refuse the body
    except (TypeError, ValueError, RecursionError):
        raise ConfigError(f"{EXTRA_BODY_ENV} must be plain JSON (no NaN or Infinity)") from None
    return plain


def _unknown_provider(name: object) -> str:
    return f"{PROVIDER_ENV}={name!r} is not a known provider; use one of: {', '.join(PROVIDER_NAMES)}"
