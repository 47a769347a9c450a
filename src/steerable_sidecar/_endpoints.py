"""Checks shared by the configuration of every HTTP backend (the LLM provider, the search backend)."""

from __future__ import annotations

import httpx

from steerable_agent_runtime.errors import ConfigError

PROXY_ENV_VARS = ("https_proxy", "HTTPS_PROXY", "http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY")
"""The proxy variables httpx honours with ``trust_env`` (lowercase first, as ``urllib`` reads them)."""

__all__ = ["PROXY_ENV_VARS", "checked_base_url", "env_proxy_client", "header_safe"]


def header_safe(text: str) -> bool:
    """Whether an ``Authorization`` header can carry ``text``: printable ASCII, no space or control."""
    return all(33 <= ord(char) <= 126 for char in text)


def checked_base_url(raw: object, *, variable: str, key_variable: str, appends: str) -> str:
    """An http(s) URL with a host and no credentials, query or fragment, without its trailing ``/``.

    Args:
        raw: The configured value.
        variable: What to name in an error (the environment variable, or the field).
        key_variable: Where the key belongs instead (named when the URL carries credentials).
        appends: What the client appends to the URL (named when it has a query or fragment).

    Raises:
        ConfigError: Naming ``variable``; the message shows the scheme and host only (never the
            userinfo, query, fragment or an unparsable value, any of which may hold a key).
    """
    if not isinstance(raw, str):
        raise ConfigError(f"{variable} must be a string URL, not {type(raw).__name__}")
    try:
        url = httpx.URL(raw)
        scheme, host, userinfo, query, fragment = url.scheme, url.host, url.userinfo, url.query, url.fragment
    except (httpx.InvalidURL, ValueError):  # an IDNA error (a ValueError) can come from .host
        raise ConfigError(f"{variable} is not a URL") from None
    if scheme not in ("http", "https") or not host:
        got = f" (it has {scheme}://)" if scheme and scheme not in ("http", "https") else ""
        raise ConfigError(f"{variable} must be an http:// or https:// URL with a host{got}")
    if userinfo:
        shown = f"{scheme}://...@{host}"
        raise ConfigError(f"{variable}={shown!r} must not contain credentials; put the key in {key_variable}")
    if query or fragment:
        shown = f"{scheme}://{host}/...{'?' if query else '#'}..."
        raise ConfigError(
            f"{variable}={shown!r} must not have a query or fragment (the provider appends {appends})"
        )
    return raw.rstrip("/")


def env_proxy_client(what: str, **kwargs: object) -> httpx.AsyncClient:
    """An ``httpx.AsyncClient`` that honours the proxy variables, or a clear configuration error.

    httpx reads ``HTTPS_PROXY``/``ALL_PROXY``... when the client is built; a SOCKS proxy without the
    ``socksio`` package, an unknown scheme or a bad port raise there, which would crash every
    command at start.

    Args:
        what: Who needs the client, for the message (``"the model provider"``).
        **kwargs: Passed to ``httpx.AsyncClient``.

    Raises:
        ConfigError: Naming the proxy variables that are set (never their values, which may hold
            credentials) and what httpx said.
    """
    try:
        return httpx.AsyncClient(**kwargs)  # type: ignore[arg-type]
    except (ImportError, ValueError, httpx.InvalidURL) as exc:
        import os

        named = ", ".join(name for name in PROXY_ENV_VARS if os.environ.get(name)) or "a proxy variable"
        # httpx's own message quotes the URL (maybe with credentials): only the import error is shown
        why = (
            str(exc).split(". ")[0]
            if isinstance(exc, ImportError)
            else "it is not a proxy URL httpx can use (http, https, socks5 or socks5h, a host, a port)"
        )
        raise ConfigError(
            f"{what} cannot use the proxy set in {named}: {why}. Fix or unset it"
            + (" (or start with --no-web-tools)" if "search" in what else "")
        ) from None
