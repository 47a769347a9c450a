"""Checks shared by the configuration of every HTTP backend (the LLM provider, the search backend)."""

from __future__ import annotations

import httpx

from steerable_agent_runtime.errors import ConfigError

__all__ = ["checked_base_url", "header_safe"]


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
        ConfigError: Naming ``variable``, and never showing credentials.
    """
    if not isinstance(raw, str):
        raise ConfigError(f"{variable}={raw!r} must be a string URL")
    shown = raw
    try:
        url = httpx.URL(raw)
    except httpx.InvalidURL:
        problem: str | None = "is not a URL"
    else:
        problem = None
        if url.scheme not in ("http", "https") or not url.host:
            problem = "must be an http:// or https:// URL with a host"
        elif url.userinfo:
            shown = f"{url.scheme}://...@{url.host}"
            problem = f"must not contain credentials; put the key in {key_variable}"
        elif url.query or url.fragment:
            problem = f"must not have a query or fragment (the provider appends {appends})"
    if problem:
        raise ConfigError(f"{variable}={shown!r} {problem}")
    return raw.rstrip("/")
