"""``WebToolsConfig``: every bound of ``web_fetch`` / ``web_search``, resolved from ``STEERABLE_WEB_*``.

Spec: Web tools (sidecar), sections Bounds, Provider seam, Domain policy and Egress-proxy
interaction (requirements WEB-7, WEB-11, WEB-14). An invalid value raises :class:`ConfigError` at
resolve time naming the variable; the caller decides what that means (headless fails at load, the
desktop sidecar logs it and serves without the web pair).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final, Literal, get_args

from steerable_agent_runtime.config import (
    EnvInt,
    check_int_fields,
    env_flag,
    env_text,
    int_field,
    int_fields,
    read_int_fields,
)
from steerable_agent_runtime.errors import ConfigError

from ..shared._endpoints import PROXY_ENV_VARS as _PROXY_ENV_VARS
from ..shared._endpoints import checked_base_url, header_safe
from ._domains import domain_entries

__all__ = [
    "ALLOWED_DOMAINS_ENV",
    "BLOCKED_DOMAINS_ENV",
    "EGRESS_CONFINED_ENV",
    "FETCH_TRUSTED_DOMAINS_ENV",
    "PROXY_ENV_VARS",
    "SEARCH_API_KEY_ENV",
    "SEARCH_BASE_URL_ENV",
    "SEARCH_PROVIDERS",
    "SEARCH_PROVIDER_ENV",
    "TAVILY_API_KEY_ENV",
    "WEB_LIMIT_ENV",
    "SearchProviderName",
    "WebToolsConfig",
    "parse_domain_list",
]

SearchProviderName = Literal["tavily", "host", "ddg"]
"""``tavily``: the in-process Tavily backend (needs a key); ``host``: the host runs hosted search;
``ddg``: DuckDuckGo lite HTML (no key). Spec: Provider seam."""

SEARCH_PROVIDERS: Final[tuple[str, ...]] = get_args(SearchProviderName)

ALLOWED_DOMAINS_ENV: Final = "STEERABLE_WEB_ALLOWED_DOMAINS"
"""Comma-separated domains the web tools may reach (empty: every public host)."""
BLOCKED_DOMAINS_ENV: Final = "STEERABLE_WEB_BLOCKED_DOMAINS"
"""Comma-separated domains the web tools never reach; wins over the allow-list."""
FETCH_TRUSTED_DOMAINS_ENV: Final = "STEERABLE_WEB_FETCH_TRUSTED_DOMAINS"
"""Comma-separated domains ``web_fetch`` reaches without asking first where a person is asked (SAFE-4)."""
SEARCH_PROVIDER_ENV: Final = "STEERABLE_WEB_SEARCH_PROVIDER"
"""``tavily`` (default), ``host`` or ``ddg``; case-insensitive."""
SEARCH_API_KEY_ENV: Final = "STEERABLE_WEB_SEARCH_API_KEY"
"""The search backend's own key; never the LLM key (spec: Provider seam)."""
TAVILY_API_KEY_ENV: Final = "TAVILY_API_KEY"
"""Read when ``STEERABLE_WEB_SEARCH_API_KEY`` is unset or empty."""
SEARCH_BASE_URL_ENV: Final = "STEERABLE_WEB_SEARCH_BASE_URL"
"""The search backend's base URL (default ``https://api.tavily.com``)."""
EGRESS_CONFINED_ENV: Final = "STEERABLE_EGRESS_CONFINED"
"""Set to ``1`` by the desktop when the sidecar's outbound traffic is confined to its egress proxy."""
PROXY_ENV_VARS: Final[tuple[str, ...]] = _PROXY_ENV_VARS
"""The proxy variables httpx honours with ``trust_env``, in the order :attr:`WebToolsConfig.egress_proxy`
reports them (lowercase first: ``urllib.request.getproxies``, which httpx uses, lets it win)."""

_DEFAULT_SEARCH_BASE_URL: Final = "https://api.tavily.com"
_PROXY_SCHEMES: Final = frozenset({"http", "https", "socks5", "socks5h"})


@dataclass(frozen=True, slots=True, kw_only=True)
class WebToolsConfig:
    """The bounds and backends of the web tools; an immutable value, validated when built.

    Every field is checked on construction (directly or by :meth:`from_env`); a bad value raises
    :class:`ConfigError` naming the field (from :meth:`from_env`: naming the variable). Integer
    ranges are ``floor..ceiling`` inclusive; ceilings come from the spec's Bounds table.

    Attributes:
        fetch_timeout_ms: ``STEERABLE_WEB_FETCH_TIMEOUT_MS``: the whole fetch, in milliseconds
            (default 30 000, from 1 to 600 000).
        fetch_max_bytes: ``STEERABLE_WEB_FETCH_MAX_BYTES``: the most body bytes a page may push
            into the process (default 1 000 000, from 1 to 100 000 000).
        fetch_max_redirects: ``STEERABLE_WEB_FETCH_MAX_REDIRECTS``: same-origin redirects followed
            (default 5, from 0 to 20; 0 follows none).
        search_timeout_ms: ``STEERABLE_WEB_SEARCH_TIMEOUT_MS``: one search request, in milliseconds
            (default 30 000, from 1 to 600 000).
        search_max_results: ``STEERABLE_WEB_SEARCH_MAX_RESULTS``: hits per search (default 8,
            from 1 to 20).
        session_search_cap: ``STEERABLE_WEB_SESSION_SEARCH_CAP``: searches per sidecar process
            (default 200, Claude Code's per-session limit; 0 = no cap; at most 1 000 000).
        session_fetch_cap: ``STEERABLE_WEB_SESSION_FETCH_CAP``: fetches per sidecar process
            (default 0 = no cap; at most 1 000 000).
        allowed_domains: ``STEERABLE_WEB_ALLOWED_DOMAINS``: normalized entries (see
            :func:`parse_domain_list`); empty allows every public host.
        blocked_domains: ``STEERABLE_WEB_BLOCKED_DOMAINS``: normalized entries; blocked wins.
        fetch_trusted_domains: ``STEERABLE_WEB_FETCH_TRUSTED_DOMAINS``: normalized entries whose
            hosts (and subdomains) ``web_fetch`` reaches without the first-fetch question of an
            interactive session (SAFE-4); it widens nothing the two lists above refuse.
        search_provider: ``STEERABLE_WEB_SEARCH_PROVIDER``: one of :data:`SEARCH_PROVIDERS`
            (the environment is case-insensitive; a direct value must be exact).
        search_api_key: ``STEERABLE_WEB_SEARCH_API_KEY``, else ``TAVILY_API_KEY``; ``""`` when
            neither is set. Never the LLM key. Left out of ``repr``/``str`` and every message.
        search_base_url: ``STEERABLE_WEB_SEARCH_BASE_URL``: an http(s) URL with a host and no
            credentials, query or fragment; a trailing ``/`` is dropped.
        egress_confined: ``STEERABLE_EGRESS_CONFINED``: outbound traffic is confined to the egress
            proxy (spec: Egress-proxy interaction). Requires ``egress_proxy``.
        egress_proxy: The proxy URL found in :data:`PROXY_ENV_VARS` when confined, with any
            credentials removed (diagnostics only: the requests go through httpx's ``trust_env``);
            ``None`` when not confined.

    Raises:
        ConfigError: On construction, naming the field, when a value is invalid.
    """

    fetch_timeout_ms: int = int_field("STEERABLE_WEB_FETCH_TIMEOUT_MS", 30_000, floor=1, ceiling=600_000)
    fetch_max_bytes: int = int_field("STEERABLE_WEB_FETCH_MAX_BYTES", 1_000_000, floor=1, ceiling=100_000_000)
    fetch_max_redirects: int = int_field("STEERABLE_WEB_FETCH_MAX_REDIRECTS", 5, floor=0, ceiling=20)
    search_timeout_ms: int = int_field("STEERABLE_WEB_SEARCH_TIMEOUT_MS", 30_000, floor=1, ceiling=600_000)
    search_max_results: int = int_field("STEERABLE_WEB_SEARCH_MAX_RESULTS", 8, floor=1, ceiling=20)
    session_search_cap: int = int_field("STEERABLE_WEB_SESSION_SEARCH_CAP", 200, floor=0, ceiling=1_000_000)
    session_fetch_cap: int = int_field("STEERABLE_WEB_SESSION_FETCH_CAP", 0, floor=0, ceiling=1_000_000)
    allowed_domains: tuple[str, ...] = ()
    blocked_domains: tuple[str, ...] = ()
    fetch_trusted_domains: tuple[str, ...] = ()
    search_provider: SearchProviderName = "tavily"
    search_api_key: str = field(default="", repr=False)
    search_base_url: str = _DEFAULT_SEARCH_BASE_URL
    egress_confined: bool = False
    egress_proxy: str | None = None

    def __post_init__(self) -> None:
        check_int_fields(self)
        for name in ("allowed_domains", "blocked_domains", "fetch_trusted_domains"):
            entries = domain_entries(getattr(self, name), f"WebToolsConfig.{name}")
            object.__setattr__(self, name, entries)
        if self.search_provider not in SEARCH_PROVIDERS:
            raise ConfigError(_unknown_provider(f"WebToolsConfig.search_provider={self.search_provider!r}"))
        if not isinstance(self.search_api_key, str):
            raise ConfigError("WebToolsConfig.search_api_key must be a string")
        _check_key(self.search_api_key, "WebToolsConfig.search_api_key")
        object.__setattr__(
            self, "search_base_url", _checked_base_url(self.search_base_url, "WebToolsConfig.search_base_url")
        )
        if type(self.egress_confined) is not bool:
            raise ConfigError(f"WebToolsConfig.egress_confined={self.egress_confined!r} must be a bool")
        if self.egress_proxy is not None:
            proxy = _checked_proxy(self.egress_proxy, "WebToolsConfig.egress_proxy")
            object.__setattr__(self, "egress_proxy", proxy)
        elif self.egress_confined:
            raise ConfigError(_missing_proxy("WebToolsConfig.egress_confined=True"))

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> WebToolsConfig:
        """Resolve the configuration from ``STEERABLE_WEB_*`` variables (see the class attributes).

        Values are trimmed; an empty variable counts as unset. Integers accept ``_`` separators.
        The LLM key variables (``STEERABLE_API_KEY``, ``OPENAI_API_KEY``...) are never read;
        the proxy variables are read only under ``STEERABLE_EGRESS_CONFINED``.

        Args:
            environ: The environment to read (defaults to ``os.environ``).

        Returns:
            The validated configuration.

        Raises:
            ConfigError: Naming the variable: an integer out of its range or not an integer, an
                unknown provider (listing the accepted names), an invalid domain entry, a key an
                HTTP header cannot carry (the key itself is never shown), a base URL that is not
                an http(s) URL without credentials, or ``STEERABLE_EGRESS_CONFINED=1`` with no
                proxy variable set (or an unusable one).
        """
        env = os.environ if environ is None else environ

        def get(name: str) -> str:
            return env_text(name, env) or ""

        limits = read_int_fields(cls, env)
        provider = get(SEARCH_PROVIDER_ENV).lower() or "tavily"
        if provider not in SEARCH_PROVIDERS:
            raise ConfigError(_unknown_provider(f"{SEARCH_PROVIDER_ENV}={env[SEARCH_PROVIDER_ENV]!r}"))
        key_var = SEARCH_API_KEY_ENV if get(SEARCH_API_KEY_ENV) else TAVILY_API_KEY_ENV
        key = get(key_var)
        _check_key(key, key_var)
        base_url = get(SEARCH_BASE_URL_ENV) or _DEFAULTS.search_base_url
        base_url = _checked_base_url(base_url, SEARCH_BASE_URL_ENV)
        confined = env_flag(EGRESS_CONFINED_ENV, False, environ=env)
        proxy: str | None = None
        if confined:
            proxy_var = next((name for name in PROXY_ENV_VARS if get(name)), None)
            if proxy_var is None:
                raise ConfigError(_missing_proxy(f"{EGRESS_CONFINED_ENV}={env[EGRESS_CONFINED_ENV]!r}"))
            proxy = _checked_proxy(get(proxy_var), proxy_var)
        return cls(
            **limits,
            allowed_domains=parse_domain_list(env.get(ALLOWED_DOMAINS_ENV, ""), variable=ALLOWED_DOMAINS_ENV),
            blocked_domains=parse_domain_list(env.get(BLOCKED_DOMAINS_ENV, ""), variable=BLOCKED_DOMAINS_ENV),
            fetch_trusted_domains=parse_domain_list(
                env.get(FETCH_TRUSTED_DOMAINS_ENV, ""), variable=FETCH_TRUSTED_DOMAINS_ENV
            ),
            search_provider=provider,  # type: ignore[arg-type]  # checked against SEARCH_PROVIDERS above
            search_api_key=key,
            search_base_url=base_url,
            egress_confined=confined,
            egress_proxy=proxy,
        )


def parse_domain_list(raw: str, *, variable: str) -> tuple[str, ...]:
    """Parse a comma-separated domain list such as ``STEERABLE_WEB_ALLOWED_DOMAINS``.

    The rules (UTS-46 mapping, IDNA A-labels, ``*.`` dropped, IP entries canonical, repeats and empty
    entries dropped, RFC 3696's all-numeric top-level label refused) are in docs/web-tools.md,
    "Configuration"; entries compare equal to hosts ``validate_url`` returns.

    Args:
        raw: The variable's text.
        variable: The variable's name, for error messages.

    Returns:
        The normalized entries, in order; ``()`` for an empty or all-whitespace value.

    Raises:
        ConfigError: Naming the variable, for a value whose entries are all empty (``" , "``, WEB-18),
            or naming the variable and the entry, for an entry that is not a host name or IP address.
    """
    entries = [part for part in raw.split(",") if part.strip()]
    if not entries and raw.strip():
        meaning = {
            ALLOWED_DOMAINS_ENV: "every public host is allowed",
            FETCH_TRUSTED_DOMAINS_ENV: "every host's first fetch is asked about",
        }.get(variable, "nothing is blocked")
        raise ConfigError(
            f"{variable}={raw!r} lists no domain (every entry is empty); write names like "
            f"docs.example.com, or unset it (then {meaning})"
        )
    return domain_entries(entries, variable)


def _unknown_provider(shown: str) -> str:
    return f"{shown} is not a web search provider; use one of: {', '.join(SEARCH_PROVIDERS)}"


def _check_key(key: str, label: str) -> None:
    """Refuse a key an ``Authorization`` header cannot carry, without ever showing the key."""
    if key and not header_safe(key):
        raise ConfigError(
            f"{label} contains characters an HTTP header cannot carry "
            "(spaces, control or non-ASCII characters); check how the key was pasted"
        )


def _checked_base_url(raw: object, label: str) -> str:
    if raw == _DEFAULT_SEARCH_BASE_URL:  # the default, a constant (tests check it passes): no URL parse
        return _DEFAULT_SEARCH_BASE_URL
    return checked_base_url(raw, variable=label, key_variable=SEARCH_API_KEY_ENV, appends="its endpoint path")


def _checked_proxy(raw: object, label: str) -> str:
    """The proxy URL with credentials removed; a bare ``host:port`` means ``http://host:port`` (as in httpx).

    The value is never echoed in an error: it may hold proxy credentials.
    """
    if not isinstance(raw, str):
        raise ConfigError(f"{label} must be a string URL")
    text = raw.strip() if "://" in raw else f"http://{raw.strip()}"
    import httpx

    try:
        url = httpx.URL(text)
    except httpx.InvalidURL:
        raise ConfigError(f"{label} is not a proxy URL; use e.g. http://127.0.0.1:8080") from None
    if url.scheme not in _PROXY_SCHEMES or not url.host:
        raise ConfigError(
            f"{label} must be a proxy URL with a host and one of the schemes "
            f"{', '.join(sorted(_PROXY_SCHEMES))}, e.g. http://127.0.0.1:8080"
        )
    return str(url.copy_with(username=None, password=None))


def _missing_proxy(marker: str) -> str:
    return (
        f"{marker} says outbound traffic is confined to the egress proxy, but no proxy variable is set "
        f"({', '.join(PROXY_ENV_VARS)}); point HTTPS_PROXY at the proxy, or unset {EGRESS_CONFINED_ENV} "
        "when no proxy runs"
    )


_DEFAULTS: Final = WebToolsConfig()

WEB_LIMIT_ENV: Final[Mapping[str, EnvInt]] = MappingProxyType(int_fields(WebToolsConfig))
"""Each integer field's ``(variable, default, floor, ceiling)``, as declared on the field.
Ceilings from the spec's Bounds table."""
