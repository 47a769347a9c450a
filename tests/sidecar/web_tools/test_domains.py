"""Domain-list entries and IP literals (``web_tools._domains``), shared by the configuration and the policy."""

from __future__ import annotations

import pytest

from steerable_agent_runtime.errors import ConfigError
from steerable_sidecar.web_tools._domains import domain_entries, ip_literal


@pytest.mark.parametrize(
    ("text", "literal"),
    [
        ("127.0.0.1", "127.0.0.1"),
        ("[::1]", "::1"),
        ("::FFFF:127.0.0.1", "::ffff:7f00:1"),
        ("[2001:DB8::0001]", "2001:db8::1"),
        ("fe80::1%eth0", None),  # a zone id names a local interface: not a literal a list can hold
        ("[fe80::1%25eth0]", None),
        ("127.1", None),  # inet_aton spellings are the URL check's business
        ("0x7f000001", None),
        ("[::1", None),
        ("::1]", None),
        ("[]", None),
        ("", None),
        ("example.com", None),
        ("\x00" * 50, None),
        ("1" * 10_000, None),
    ],
)
def test_ip_literal(text: str, literal: str | None) -> None:
    assert ip_literal(text) == literal


def test_domain_entries_normalize_and_drop_repeats() -> None:
    entries = ["Docs.Example.COM.", "*.docs.example.com", "BÜCHER.example", "[::1]", "127.0.0.1", "::1"]
    assert domain_entries(entries, "test") == (
        "docs.example.com",
        "xn--bcher-kva.example",
        "::1",
        "127.0.0.1",
    )


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ("docs.example.com", "test must be a sequence of domain names, not a string"),
        ([b"docs.example.com"], "test entry b'docs.example.com' is not a string"),
        ([None], "test entry None is not a string"),
        ([""], "'' is not a host name (empty)"),
        (["https://docs.example.com"], "(it has a scheme)"),
        (["user@docs.example.com"], "(it has userinfo)"),
        (["docs.example.com/path"], "(it has a path)"),
        (["docs.example.com:443"], "(it has a port)"),
        (["*"], "a bare * is not a domain"),
        (["a.*.example.com"], "* is only accepted as a leading *."),
        (["."], "nothing is left after the dots"),
        (["..a"], "it has an empty label"),
        (["a..b"], "(Empty Label)"),  # idna's own words
        (["example.123"], "its last label is a number"),
        (["x" * 64 + ".example"], "is not a host name"),
    ],
)
def test_domain_entries_refuse_what_is_not_a_host_name(entries: object, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        domain_entries(entries, "test")  # type: ignore[arg-type]
    assert message in str(caught.value)
