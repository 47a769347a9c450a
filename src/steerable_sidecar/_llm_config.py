"""``LLMConfig``: which model endpoint to call and how, resolved from ``STEERABLE_*`` variables.

Spec: Provider seam. The variables are listed in ``docs/configuration.md`` (Model provider); the
provider that uses this configuration is :mod:`steerable_sidecar.providers`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Final, Literal, get_args

from pydantic import SecretStr

from steerable_agent_runtime.config import env_text, int_field, int_fields
from steerable_agent_runtime.errors import ConfigError

from ._endpoints import checked_base_url, header_safe

__all__ = [
    "API_KEY_ENV",
    "BASE_URL_ENV",
    "DEFAULT_BASE_URLS",
    "DEFAULT_REQUEST_TIMEOUT_MS",
    "MAX_REQUEST_TIMEOUT_MS",
    "MODEL_ENV",
    "PROVIDER_ENV",
    "PROVIDER_NAMES",
    "REQUEST_TIMEOUT_ENV",
    "SCRIPT_ENV",
    "LLMConfig",
    "ProviderName",
]

ProviderName = Literal["openai", "openrouter", "deepseek", "glm", "ollama", "scripted"]
"""The accepted values of ``STEERABLE_PROVIDER``."""

PROVIDER_NAMES: Final[tuple[ProviderName, ...]] = get_args(ProviderName)
"""Every provider name, in documentation order."""

DEFAULT_BASE_URLS: Final[Mapping[str, str]] = MappingProxyType(
    {
        "openai": "https://api.openai.com/v1",
        "openrouter": "https://openrouter.ai/api/v1",
        "deepseek": "https://api.deepseek.com/v1",
        "glm": "https://open.bigmodel.cn/api/paas/v4",
        "ollama": "http://localhost:11434/v1",
    }
)
"""The base URL each HTTP provider uses when ``STEERABLE_BASE_URL`` is unset."""

PROVIDER_ENV: Final = "STEERABLE_PROVIDER"
MODEL_ENV: Final = "STEERABLE_MODEL"
BASE_URL_ENV: Final = "STEERABLE_BASE_URL"
API_KEY_ENV: Final = "STEERABLE_API_KEY"
SCRIPT_ENV: Final = "STEERABLE_SCRIPT"
REQUEST_TIMEOUT_ENV: Final = "STEERABLE_REQUEST_TIMEOUT_MS"
"""The variables :meth:`LLMConfig.from_env` reads (``docs/configuration.md``)."""
DEFAULT_REQUEST_TIMEOUT_MS: Final = 600_000
MAX_REQUEST_TIMEOUT_MS: Final = 3_600_000
"""``STEERABLE_REQUEST_TIMEOUT_MS``: the default and the ceiling (the floor is 1), in milliseconds."""

_KEYLESS: Final = frozenset({"ollama", "scripted"})


@dataclass(frozen=True, slots=True)
class LLMConfig:
    """Which model endpoint to call and how: validated once, immutable, safe to print.

    Every field is checked when the object is built (by :meth:`from_env` or directly); the long
    form of each variable is in docs/providers.md and docs/configuration.md.

    Attributes:
        provider: ``STEERABLE_PROVIDER``: openai (default), openrouter, deepseek, glm, ollama or
            scripted. Case-insensitive in the environment.
        model: ``STEERABLE_MODEL``: the model name sent in each request. Required, except for
            scripted.
        base_url: ``STEERABLE_BASE_URL``: an http(s) URL without credentials, query or fragment,
            trailing ``/`` dropped; requests go to ``{base_url}/chat/completions``. ``None``: the
            provider's default (:data:`DEFAULT_BASE_URLS`; still ``None`` for scripted).
        api_key: ``STEERABLE_API_KEY``: sent as ``Authorization: Bearer <key>``. Required, except
            for ollama and scripted. Masked in ``repr``/``str``; read it with
            ``get_secret_value()``.
        script: ``STEERABLE_SCRIPT``: a JSON file holding a list of turns for
            :meth:`ScriptedProvider.from_file`. Required for (and only used by) scripted.
        request_timeout_ms: ``STEERABLE_REQUEST_TIMEOUT_MS``: the longest wait, in milliseconds,
            for any single network step (connect, send, each read of the stream), 1 to 3 600 000
            (default 600 000).

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

    def __post_init__(self) -> None:
        if self.provider not in PROVIDER_NAMES:
            raise ConfigError(_unknown_provider(self.provider))
        if self.provider != "scripted" and not (self.model and self.model.strip()):
            raise ConfigError(
                f"{MODEL_ENV} is required for {PROVIDER_ENV}={self.provider}: "
                "set it to the model name the endpoint serves"
            )
        object.__setattr__(self, "base_url", self._checked_base_url())
        if self.api_key is not None and not self.api_key.get_secret_value():
            object.__setattr__(self, "api_key", None)
        self._check_key()
        self._check_script()
        _REQUEST_TIMEOUT.check(self.request_timeout_ms, REQUEST_TIMEOUT_ENV)

    def _checked_base_url(self) -> str | None:
        base_url = self.base_url or DEFAULT_BASE_URLS.get(self.provider)
        if base_url is None:
            return None
        return checked_base_url(
            base_url.strip(), variable=BASE_URL_ENV, key_variable=API_KEY_ENV, appends="/chat/completions"
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
        provider = (env_text(PROVIDER_ENV, environ) or "openai").lower()
        if provider not in PROVIDER_NAMES:
            raise ConfigError(_unknown_provider(provider))
        key = env_text(API_KEY_ENV, environ)
        script = env_text(SCRIPT_ENV, environ)
        return cls(
            provider=provider,
            model=env_text(MODEL_ENV, environ),
            base_url=env_text(BASE_URL_ENV, environ),
            api_key=SecretStr(key) if key else None,
            script=Path(script) if script else None,
            request_timeout_ms=_REQUEST_TIMEOUT.read(environ),
        )


_REQUEST_TIMEOUT: Final = int_fields(LLMConfig)["request_timeout_ms"]


def _unknown_provider(name: object) -> str:
    return f"{PROVIDER_ENV}={name!r} is not a known provider; use one of: {', '.join(PROVIDER_NAMES)}"
