"""The ``data.code`` of every ``web_fetch`` / ``web_search`` refusal, in one registry.

docs/web-tools.md ("Error codes") documents each one; tests/test_error_codes.py checks the two
against each other.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["WebErrorCode"]


class WebErrorCode(StrEnum):
    """A web tool's ``data.code`` (a ``str``: compare it with ``result.data["code"]``).

    The raising sites pass a member; :class:`~steerable_agent_runtime.errors.WebError` stores its
    plain string value, so results and JSON carry the same text as before.
    """

    # The URL and the policy.
    INVALID_URL = "invalid_url"
    DOMAIN_BLOCKED = "domain_blocked"
    DOMAIN_NOT_ALLOWED = "domain_not_allowed"
    SESSION_CAP = "session_cap"
    DNS_FAILED = "dns_failed"
    SSRF_BLOCKED = "ssrf_blocked"
    # The fetch.
    TOO_MANY_REDIRECTS = "too_many_redirects"
    INVALID_REDIRECT = "invalid_redirect"
    TIMEOUT = "timeout"
    HTTP_STATUS = "http_status"
    UNSUPPORTED_CONTENT_TYPE = "unsupported_content_type"
    UNSUPPORTED_CONTENT_ENCODING = "unsupported_content_encoding"
    DECODING_FAILED = "decoding_failed"
    CONNECT_FAILED = "connect_failed"
    TLS_FAILED = "tls_failed"
    NETWORK_ERROR = "network_error"
    PROTOCOL_ERROR = "protocol_error"
    PROXY_REFUSED = "proxy_refused"
    PROXY_UNREACHABLE = "proxy_unreachable"
    # The search.
    INVALID_QUERY = "invalid_query"
    SEARCH_UNAVAILABLE = "search_unavailable"
    SEARCH_AUTH = "search_auth"
    SEARCH_RATE_LIMITED = "search_rate_limited"
    SEARCH_FAILED = "search_failed"
    SEARCH_TIMEOUT = "search_timeout"
