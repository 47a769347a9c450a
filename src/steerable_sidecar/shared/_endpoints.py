"""Checks shared by the configuration of every HTTP backend (the LLM provider, the search backend)."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

from steerable_agent_runtime.errors import ConfigError

if TYPE_CHECKING:  # httpx is imported where a URL is parsed or a client built (start-up cost)
    import httpx

PROXY_ENV_VARS = ("https_proxy", "HTTPS_PROXY", "http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY")
"""The proxy variables httpx honours with ``trust_env`` (lowercase first, as ``urllib`` reads them)."""

__all__ = [
    "PROXY_ENV_VARS",
    "checked_base_url",
    "client_settings_to_check",
    "env_proxy_client",
    "header_safe",
]

_HTTPX_PROXY_SETTINGS = frozenset({"http_proxy", "https_proxy", "all_proxy", "no_proxy"})
"""What ``httpx`` reads (any case) through ``urllib.request.getproxies`` when a client is built."""


def header_safe(text: str) -> bool:
    """Whether an ``Authorization`` header can carry ``text``: printable ASCII, no space or control."""
    return all(33 <= ord(char) <= 126 for char in text)


def checked_base_url(
    raw: object, *, variable: str, key_variable: str, appends: str, query_keys: tuple[str, ...] = ()
) -> str:
    """An http(s) URL with a host and no credentials, query or fragment, without its trailing ``/``.

    Args:
        raw: The configured value.
        variable: What to name in an error (the environment variable, or the field).
        key_variable: Where the key belongs instead (named when the URL carries credentials).
        appends: What the client appends to the URL (named when it has a query or fragment).
        query_keys: Query keys the URL may carry (Azure's ``api-version``); the client puts
            ``appends`` before the query. Any other key is refused.

    Raises:
        ConfigError: Naming ``variable``; the message shows the scheme and host only (never the
            userinfo, query, fragment or an unparsable value, any of which may hold a key).
    """
    if not isinstance(raw, str):
        raise ConfigError(f"{variable} must be a string URL, not {type(raw).__name__}")
    if "#" in raw:  # even an empty fragment: "{base}#/chat/completions" would post to the base
        raise ConfigError(f"{variable} must not have a query or fragment (it has #)")
    import httpx

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
    allowed = query_keys and query and all(key in query_keys for key in url.params)
    if fragment or (query and not allowed):
        shown = f"{scheme}://{host}/...{'?' if query else '#'}..."
        keys = f" other than {', '.join(query_keys)}" if query_keys else ""
        raise ConfigError(
            f"{variable}={shown!r} must not have a query{keys} or fragment (the provider appends {appends})"
        )
    if query:
        path = str(url.copy_with(query=None)).rstrip("/")
        return f"{path}?{url.query.decode('ascii')}"
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
    import httpx

    try:
        return httpx.AsyncClient(**kwargs)  # type: ignore[arg-type]
    except (ImportError, ValueError, httpx.InvalidURL) as exc:
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


def client_settings_to_check(environ: Mapping[str, str] | None = None) -> bool:
    """Whether building an ``httpx`` client now could fail on what it reads from the environment.

    ``httpx`` (``trust_env``) reads the proxy settings and ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` when
    a client is built. With no proxy setting, and the CA variables unset or naming an existing
    file / folder, nothing there can fail, so a caller may build the client at its first use
    instead of at start-up; otherwise it builds it at once, so that an unusable proxy stays a
    configuration error at load (:func:`env_proxy_client`). On macOS and Windows the system's
    proxy settings count too (``urllib.request.getproxies``).

    Args:
        environ: The environment (default ``os.environ``, what ``httpx`` reads).
    """
    env = os.environ if environ is None else environ
    cafile, capath = env.get("SSL_CERT_FILE"), env.get("SSL_CERT_DIR")
    if (cafile and not os.path.isfile(cafile)) or (capath and not os.path.isdir(capath)):
        return True
    if any(value and name.lower() in _HTTPX_PROXY_SETTINGS for name, value in env.items()):
        return True
    if environ is None and sys.platform in ("darwin", "win32"):  # pragma: no cover - system settings
        import urllib.request

        return bool(urllib.request.getproxies())
    return False
