"""URL checks (WEB-12), the domain policy (WEB-11) and the SSRF address check (WEB-12, WEB-13)."""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from steerable_agent_runtime.errors import ConfigError, ToolRetry, WebError
from steerable_sidecar.web_tools import (
    DomainPolicy,
    WebToolsConfig,
    address_refusal,
    check_addresses,
    url_host,
    validate_url,
)
from steerable_sidecar.web_tools._policy import MAX_URL_LENGTH

PUBLIC_ONLY = "only public internet addresses can be fetched (SSRF policy)"

# -- validate_url (WEB-12) ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "parsed", "host"),
    [
        ("https://example.com/a?b=1#c", "https://example.com/a?b=1#c", "example.com"),
        ("HTTP://EXAMPLE.COM/Path", "http://example.com/Path", "example.com"),
        ("  https://example.com/  ", "https://example.com/", "example.com"),
        ("https://example.com/\n", "https://example.com/", "example.com"),
        ("http://example.com./x", "http://example.com/x", "example.com"),  # trailing dot dropped
        ("http://BÜCHER.example/", "http://xn--bcher-kva.example/", "xn--bcher-kva.example"),
        ("http://xn--bcher-kva.example/", "http://xn--bcher-kva.example/", "xn--bcher-kva.example"),
        ("https://example.com:8443/", "https://example.com:8443/", "example.com"),
        ("http://my_host.example.com/", "http://my_host.example.com/", "my_host.example.com"),
        # IP literals parse; the address check refuses the internal ones.
        ("http://[::1]/", "http://[::1]/", "::1"),
        ("http://[FE80:0:0::1]:8080/", "http://[fe80::1]:8080/", "fe80::1"),
        ("http://[::ffff:127.0.0.1]/", "http://[::ffff:7f00:1]/", "::ffff:7f00:1"),
        ("http://127.0.0.1./", "http://127.0.0.1/", "127.0.0.1"),
        # Spellings inet_aton(3) reads as IPv4 (httpx does not) become the address they mean.
        ("http://0x7f000001/", "http://127.0.0.1/", "127.0.0.1"),
        ("http://2130706433/", "http://127.0.0.1/", "127.0.0.1"),
        ("http://127.1/", "http://127.0.0.1/", "127.0.0.1"),
        ("http://0/", "http://0.0.0.0/", "0.0.0.0"),
        ("http://017700000001/", "http://127.0.0.1/", "127.0.0.1"),
        ("http://93.184.55330/x", "http://93.184.216.34/x", "93.184.216.34"),
        ("http://0X5D.0270.55330:8080/", "http://93.184.216.34:8080/", "93.184.216.34"),
        ("http://1572395042./", "http://93.184.216.34/", "93.184.216.34"),
        # Not inet_aton forms: they stay names, for DNS.
        ("http://1.2.3.4.5/", "http://1.2.3.4.5/", "1.2.3.4.5"),
        ("http://08.1/", "http://08.1/", "08.1"),
        ("http://0x/", "http://0x/", "0x"),
        ("http://4294967296/", "http://4294967296/", "4294967296"),
        ("http://1.256.1/", "http://1.256.1/", "1.256.1"),
    ],
)
def test_validate_url_accepts_and_reports_the_connected_host_web_12(url: str, parsed: str, host: str) -> None:
    result = validate_url(url)
    assert isinstance(result, httpx.URL)
    assert str(result) == parsed
    assert url_host(result) == host


def test_validate_url_accepts_exactly_2048_characters_web_12() -> None:
    url = "https://example.com/" + "a" * (MAX_URL_LENGTH - len("https://example.com/"))
    assert len(url) == 2048
    assert str(validate_url(url)) == url


@pytest.mark.parametrize(
    ("url", "message"),
    [
        (
            "file:///etc/passwd",
            "invalid URL 'file:///etc/passwd': only http:// and https:// URLs can be fetched, not file:",
        ),
        (
            "ftp://example.com/x",
            "invalid URL 'ftp://example.com/x': only http:// and https:// URLs can be fetched, not ftp:",
        ),
        (
            "gopher://example.com:70/_x",
            "invalid URL 'gopher://example.com:70/_x': only http:// and https:// URLs can be fetched, not gopher:",
        ),
        (
            "javascript:alert(1)",
            "invalid URL 'javascript:alert(1)': only http:// and https:// URLs can be fetched, not javascript:",
        ),
        (
            "data:text/html,hi",
            "invalid URL 'data:text/html,hi': only http:// and https:// URLs can be fetched, not data:",
        ),
        (
            "example.com/page",
            "invalid URL 'example.com/page': it has no scheme; write the full URL, e.g. https://example.com/page",
        ),
        (
            "//example.com/",
            "invalid URL '//example.com/': it has no scheme; write the full URL, e.g. https://example.com/page",
        ),
        ("", "invalid URL '': it has no scheme; write the full URL, e.g. https://example.com/page"),
        ("http:///path", "invalid URL 'http:///path': it has no host"),
        ("http:example.com", "invalid URL 'http:example.com': it has no host"),
        ("http://a..b/", "invalid URL 'http://a..b/': 'a..b' is not a valid host name"),
        (
            "http://exa mple.com/",
            "invalid URL 'http://exa mple.com/': 'exa%20mple.com' is not a valid host name",
        ),
        (
            "http://ex%41mple.com/",
            "invalid URL 'http://ex%41mple.com/': 'ex%41mple.com' is not a valid host name",
        ),
        (
            "http://" + "a" * 64 + ".com/",
            f"invalid URL 'http://{'a' * 64}.com/': '{'a' * 64}.com' is not a valid host name",
        ),
        ("http://example.com:0/", "invalid URL 'http://example.com:0/': port 0 is out of range (1 to 65535)"),
        (
            "http://example.com:99999/",
            "invalid URL 'http://example.com:99999/': port 99999 is out of range (1 to 65535)",
        ),
        (
            "http://[fe80::1%25eth0]/",
            f"invalid URL 'http://[fe80::1%25eth0]/': an IPv6 zone id names a local network interface; {PUBLIC_ONLY}",
        ),
        (
            "http://0177.0.0.1/",
            "invalid URL 'http://0177.0.0.1/': it does not parse (Invalid IPv4 address: '0177.0.0.1')",
        ),
        (
            "http://256.0.0.1/",
            "invalid URL 'http://256.0.0.1/': it does not parse (Invalid IPv4 address: '256.0.0.1')",
        ),
        ("http://[::1/", "invalid URL 'http://[::1/': it does not parse (Invalid port: ':1')"),
        (
            "http://0.0.0.08./",  # a name to httpx until the trailing dot goes
            "invalid URL 'http://0.0.0.08./': it does not parse (Invalid IPv4 address: '0.0.0.08')",
        ),
        (
            "http://exa\tmple.com/",
            "invalid URL 'http://exa\\tmple.com/': it does not parse (Invalid non-printable ASCII character in URL, '\\t' at position 10.)",
        ),
    ],
)
def test_validate_url_refusals_web_12(url: str, message: str) -> None:
    with pytest.raises(WebError) as caught:
        validate_url(url)
    assert caught.value.code == "invalid_url"
    assert caught.value.data == {"code": "invalid_url"}
    assert str(caught.value) == message


@pytest.mark.parametrize(
    "url",
    [
        "http://user@host.example/",
        "http://:pw@host.example/",
        "http://a:b@host.example/",
        "https://a:hunter2@host.example:8443/x",
    ],
)
def test_validate_url_refuses_userinfo_without_echoing_it_web_12(url: str) -> None:
    with pytest.raises(WebError) as caught:
        validate_url(url)
    assert caught.value.code == "invalid_url"
    assert (
        str(caught.value)
        == "invalid URL: it carries credentials before '@'; remove them (a user or password is refused)"
    )


def test_validate_url_refuses_2049_characters_web_12() -> None:
    url = "https://example.com/" + "a" * (MAX_URL_LENGTH + 1 - len("https://example.com/"))
    assert len(url) == 2049
    with pytest.raises(WebError) as caught:
        validate_url(url)
    assert caught.value.code == "invalid_url"
    assert caught.value.data == {"code": "invalid_url", "maxLength": 2048, "length": 2049}
    assert str(caught.value) == (
        f"invalid URL {('https://example.com/' + 'a' * 80 + '...')!r}: it is 2049 characters long; "
        "at most 2048 are accepted"
    )


def test_validate_url_refuses_a_non_string_web_12() -> None:
    with pytest.raises(WebError) as caught:
        validate_url(b"http://example.com/")  # type: ignore[arg-type]
    assert str(caught.value) == "invalid URL: the URL must be a string, not bytes"


@given(st.text(max_size=300))
def test_validate_url_raises_only_web_error_and_returns_only_safe_urls_web_12(text: str) -> None:
    try:
        url = validate_url(text)
    except WebError as exc:
        assert exc.code == "invalid_url"
        return
    assert url.scheme in ("http", "https")
    assert url_host(url)
    assert not url.userinfo


@pytest.mark.parametrize(
    ("host", "address", "reason"),
    [
        ("0x7f000001", "127.0.0.1", "loopback"),
        ("2130706433", "127.0.0.1", "loopback"),
        ("127.1", "127.0.0.1", "loopback"),
        ("017700000001", "127.0.0.1", "loopback"),
        ("0", "0.0.0.0", "unspecified"),
        ("0xa9.0xfe.0xa9fe", "169.254.169.254", "link-local"),
    ],
)
async def test_alternate_ipv4_spellings_become_the_address_the_resolver_reads_web_12(
    host: str, address: str, reason: str
) -> None:
    """validate_url rewrites the spellings httpx keeps as names to the address getaddrinfo reads.

    AI_NUMERICHOST keeps the lookup local (no DNS query); the SSRF check then names the address.
    """
    url = validate_url(f"http://{host}/")
    infos = await asyncio.get_running_loop().getaddrinfo(
        host, 80, type=socket.SOCK_STREAM, flags=socket.AI_NUMERICHOST
    )
    assert sorted({str(info[4][0]) for info in infos}) == [address] == [url_host(url)]
    with pytest.raises(WebError) as caught:
        check_addresses(url_host(url), [address], url=str(url))
    assert caught.value.code == "ssrf_blocked"
    assert (
        str(caught.value)
        == f"web_fetch refused http://{address}/: {address} is not publicly reachable ({reason}); {PUBLIC_ONLY}"
    )


def _c_library_ipv4(host: str) -> str | None:
    try:
        infos = socket.getaddrinfo(host, 80, socket.AF_INET, socket.SOCK_STREAM, 0, socket.AI_NUMERICHOST)
    except socket.gaierror:
        return None
    return str(infos[0][4][0])


_numeric_part = st.one_of(
    st.integers(0, 2**32).map(str),
    st.integers(0, 2**32).map(lambda n: f"0{n:o}"),
    st.integers(0, 2**32).map(lambda n: f"0x{n:x}"),
    st.sampled_from(["0", "00", "08", "0x", "09", "1e", ""]),
)


@given(st.lists(_numeric_part, min_size=1, max_size=5).map(".".join))
def test_numeric_hosts_agree_with_the_c_library_web_12(host: str) -> None:
    """A host getaddrinfo reads as IPv4 is checked as that address; any other stays a name (or is refused)."""
    try:
        url = validate_url(f"http://{host}/")
    except WebError:
        return  # refused outright (httpx reads a dotted quad it cannot parse as invalid)
    name = host.removesuffix(".")  # validate_url drops one trailing dot before anything else
    expected = _c_library_ipv4(name)
    assert url_host(url) == (expected if expected is not None else name)


# -- address_refusal (WEB-12, WEB-13) ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        # IPv4 special-purpose ranges
        ("0.0.0.0", "unspecified"),
        ("0.1.2.3", "this network"),
        ("127.0.0.1", "loopback"),
        ("127.255.255.254", "loopback"),
        ("10.0.0.5", "private"),
        ("172.16.0.1", "private"),
        ("172.31.255.255", "private"),
        ("192.168.1.1", "private"),
        ("169.254.169.254", "link-local"),  # AWS/GCP/Azure metadata
        ("169.254.0.1", "link-local"),
        ("100.64.0.1", "shared address space (CGNAT)"),
        ("100.127.255.255", "shared address space (CGNAT)"),
        ("192.0.0.1", "IETF protocol assignments"),
        ("192.0.0.9", "IETF protocol assignments"),
        ("192.0.0.170", "IETF protocol assignments"),
        ("192.0.2.1", "documentation"),
        ("198.51.100.1", "documentation"),
        ("203.0.113.1", "documentation"),
        ("192.88.99.1", "6to4 relay anycast"),
        ("198.18.0.1", "benchmarking"),
        ("198.19.255.255", "benchmarking"),
        ("224.0.0.1", "multicast"),
        ("239.255.255.250", "multicast"),
        ("240.0.0.1", "reserved"),
        ("255.255.255.255", "broadcast"),
        # IPv6
        ("::", "unspecified"),
        ("::1", "loopback"),
        ("fe80::1", "link-local"),
        ("fd00:ec2::254", "private (unique local)"),  # AWS metadata over IPv6
        ("fc00::1", "private (unique local)"),
        ("fec0::1", "site-local"),
        ("ff02::1", "multicast"),
        ("ff0e::1", "multicast"),
        ("2001:db8::1", "documentation"),
        ("3fff::1", "documentation"),
        ("5f00::1", "SRv6 segment identifiers"),
        ("2001:2::1", "not globally reachable"),  # benchmarking 2001:2::/48
        ("4000::1", "reserved"),
        ("100::1", "reserved"),  # discard-only
        ("::ffff:0:808:808", "reserved"),  # IPv4-translated (SIIT)
        # IPv4-mapped: unwrapped
        ("::ffff:127.0.0.1", "IPv4-mapped 127.0.0.1: loopback"),
        ("::ffff:169.254.169.254", "IPv4-mapped 169.254.169.254: link-local"),
        ("::ffff:10.0.0.1", "IPv4-mapped 10.0.0.1: private"),
        ("::ffff:0.0.0.0", "IPv4-mapped 0.0.0.0: unspecified"),
        # NAT64 well-known prefix: unwrapped; the local-use prefix is refused outright
        ("64:ff9b::7f00:1", "NAT64 127.0.0.1: loopback"),
        ("64:ff9b::a9fe:a9fe", "NAT64 169.254.169.254: link-local"),
        ("64:ff9b::c0a8:101", "NAT64 192.168.1.1: private"),
        ("64:ff9b:1::808:808", "NAT64 local-use"),
        ("64:ff9b:1:ffff::1", "NAT64 local-use"),
        # forms Python 3.11 calls global
        ("::127.0.0.1", "IPv4-compatible"),
        ("::8.8.8.8", "IPv4-compatible"),
        ("2002:7f00:1::", "6to4 embeds 127.0.0.1: loopback"),
        ("2002:a9fe:a9fe::1", "6to4 embeds 169.254.169.254: link-local"),
        ("2002:808:808::1", "6to4 embeds 8.8.8.8"),  # refused even with a public embedded address
        ("2001::1", "Teredo"),
        ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo"),
        # zone ids
        ("fe80::1%eth0", "link-local"),
        ("fe80::1%1", "link-local"),
        ("2606:4700:4700::1111%eth0", "zone id"),
        # not addresses
        ("", "not an IP address"),
        ("localhost", "not an IP address"),
        ("1.2.3", "not an IP address"),
        ("127.1", "not an IP address"),
        ("0x7f000001", "not an IP address"),
        ("2130706433", "not an IP address"),
        ("8.8.8.8 ", "not an IP address"),
        ("[::1]", "not an IP address"),
        ("::1::", "not an IP address"),
        ("1.2.3.4%eth0", "not an IP address"),
        ("010.0.0.1", "not an IP address"),
    ],
)
def test_address_refusal_attack_table_web_12_web_13(address: str, reason: str) -> None:
    assert address_refusal(address) == reason


@pytest.mark.parametrize(
    "address",
    [
        "8.8.8.8",
        "1.1.1.1",
        "93.184.215.14",
        "100.63.255.255",  # just below CGNAT
        "100.128.0.0",  # just above CGNAT
        "172.32.0.1",  # just above 172.16/12
        "198.20.0.1",  # just above benchmarking
        "2606:4700:4700::1111",
        "2a00:1450:4001:81b::200e",
        "::ffff:8.8.8.8",  # IPv4-mapped public
        "64:ff9b::808:808",  # NAT64 of a public address
    ],
)
def test_public_addresses_are_accepted_web_12(address: str) -> None:
    assert address_refusal(address) is None


def test_address_refusal_of_a_non_string_web_12() -> None:
    assert address_refusal(2130706433) == "not an IP address"  # type: ignore[arg-type]
    assert address_refusal(None) == "not an IP address"  # type: ignore[arg-type]


@given(st.text(max_size=60))
def test_address_refusal_never_raises_web_12(text: str) -> None:
    result = address_refusal(text)
    assert result is None or (isinstance(result, str) and result)


# Ranges refused although Python 3.11 calls them global (the rest must agree with is_global).
_V4_EXTRA = [ipaddress.IPv4Network(n) for n in ("192.0.0.0/24", "192.88.99.0/24", "224.0.0.0/4")]
_v4 = st.integers(min_value=0, max_value=2**32 - 1).map(ipaddress.IPv4Address)


@given(_v4)
def test_ipv4_verdict_agrees_with_is_global_outside_the_special_forms_web_12(
    ip: ipaddress.IPv4Address,
) -> None:
    if any(ip in network for network in _V4_EXTRA):
        assert address_refusal(str(ip)) is not None
    else:
        assert (address_refusal(str(ip)) is None) == ip.is_global


@given(_v4)
def test_ipv4_mapped_and_nat64_take_the_embedded_verdict_web_12(ip: ipaddress.IPv4Address) -> None:
    allowed = address_refusal(str(ip)) is None
    mapped = ipaddress.IPv6Address(0xFFFF_0000_0000 | int(ip))
    nat64 = ipaddress.IPv6Address((0x64FF9B << 96) | int(ip))
    assert (address_refusal(str(mapped)) is None) == allowed
    assert (address_refusal(str(nat64)) is None) == allowed


def _in(network: str) -> st.SearchStrategy[str]:
    net = ipaddress.IPv6Network(network)
    first = int(net.network_address)
    return st.integers(min_value=first, max_value=first + net.num_addresses - 1).map(
        lambda n: str(ipaddress.IPv6Address(n))
    )


@given(
    st.one_of(
        _in("2002::/16"),
        _in("2001::/32"),
        _in("fec0::/10"),
        _in("64:ff9b:1::/48"),
        _in("::/96"),
        _in("fe80::/10"),
    )
)
def test_internal_forms_python_calls_global_are_always_refused_web_13(address: str) -> None:
    assert address_refusal(address) is not None


_V6_EXTRA = [
    ipaddress.IPv6Network(n) for n in ("2002::/16", "2001::/32", "2001:db8::/32", "3fff::/20", "5f00::/16")
]


@given(_in("2000::/3"))
def test_ipv6_global_unicast_agrees_with_is_global_outside_the_special_forms_web_13(address: str) -> None:
    ip = ipaddress.IPv6Address(address)
    if any(ip in network for network in _V6_EXTRA):
        assert address_refusal(address) is not None
    else:
        assert (address_refusal(address) is None) == ip.is_global


# -- check_addresses (WEB-12) ------------------------------------------------------------------------


def test_check_addresses_accepts_all_public_answers_web_12() -> None:
    check_addresses(
        "example.com", ["93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"]
    )  # raises on a refusal


def test_check_addresses_refuses_when_any_answer_is_internal_web_12() -> None:
    with pytest.raises(WebError) as caught:
        check_addresses("x.example", ["93.184.215.14", "10.0.0.5", "127.0.0.1"], url="http://x.example/")
    assert caught.value.code == "ssrf_blocked"
    assert caught.value.data == {
        "code": "ssrf_blocked",
        "host": "x.example",
        "address": "10.0.0.5",
        "reason": "private",
    }
    assert (
        str(caught.value)
        == f"web_fetch refused http://x.example/: x.example resolves to 10.0.0.5 (private); {PUBLIC_ONLY}"
    )


def test_check_addresses_names_the_host_without_a_url_web_13() -> None:
    with pytest.raises(WebError) as caught:
        check_addresses("rebind.example", ["2002:a00:1::"])
    assert str(caught.value) == (
        f"web_fetch refused rebind.example: rebind.example resolves to 2002:a00:1:: (6to4 embeds 10.0.0.1: private); {PUBLIC_ONLY}"
    )


@pytest.mark.parametrize(
    ("host", "address", "reason"),
    [
        ("169.254.169.254", "169.254.169.254", "link-local"),
        ("::1", "::1", "loopback"),
        ("[::1]", "::1", "loopback"),
        ("fd00:ec2::254", "fd00:ec2::254", "private (unique local)"),
    ],
)
def test_check_addresses_on_an_ip_literal_host_web_12(host: str, address: str, reason: str) -> None:
    with pytest.raises(WebError) as caught:
        check_addresses(host, [address], url=f"http://{host}/")
    assert (
        str(caught.value)
        == f"web_fetch refused http://{host}/: {address} is not publicly reachable ({reason}); {PUBLIC_ONLY}"
    )


def test_check_addresses_with_no_answers_is_dns_failed_web_12() -> None:
    with pytest.raises(WebError) as caught:
        check_addresses("nowhere.example", [], url="https://nowhere.example/x")
    assert caught.value.code == "dns_failed"
    assert caught.value.data == {"code": "dns_failed", "host": "nowhere.example"}
    assert (
        str(caught.value)
        == "web_fetch could not reach https://nowhere.example/x: nowhere.example has no DNS answers; check the host name"
    )


def test_check_addresses_refuses_one_string_instead_of_a_list() -> None:
    with pytest.raises(TypeError, match="not one string"):
        check_addresses("example.com", "8.8.8.8")


def test_web_errors_ask_the_model_to_follow_up_web_12() -> None:
    with pytest.raises(WebError) as caught:
        check_addresses("x", ["10.0.0.1"])
    assert isinstance(caught.value, ToolRetry)


# -- DomainPolicy (WEB-11) ---------------------------------------------------------------------------

POLICY = DomainPolicy(allowed=["example.com", "BÜCHER.example", "1.2.3.4"], blocked=["ads.example.com"])


@pytest.mark.parametrize(
    ("host", "allowed"),
    [
        ("example.com", True),
        ("docs.example.com", True),  # subdomain
        ("a.b.docs.example.com", True),
        ("EXAMPLE.COM.", True),
        ("badexample.com", False),  # label boundary
        ("example.com.evil.net", False),
        ("com", False),
        ("example.org", False),
        ("ads.example.com", False),  # blocked wins over the allowed parent
        ("x.ads.example.com", False),
        ("xn--bcher-kva.example", True),  # IDN entry vs A-label host
        ("shop.xn--bcher-kva.example", True),
        ("bücher.example", True),  # a Unicode host is matched by its A-labels
        ("xn--bcher-kva.example.evil", False),
        ("1.2.3.4", True),  # IP entries match exactly
        ("5.1.2.3.4", False),
        ("4.5.6.1.2.3.4", False),
    ],
)
def test_domain_policy_table_web_11(host: str, allowed: bool) -> None:
    assert POLICY.allows(host) is allowed


def test_domain_policy_normalizes_entries_web_11() -> None:
    assert POLICY.allowed == ("example.com", "xn--bcher-kva.example", "1.2.3.4")
    assert POLICY.blocked == ("ads.example.com",)
    assert repr(POLICY) == (
        "DomainPolicy(allowed=('example.com', 'xn--bcher-kva.example', '1.2.3.4'), blocked=('ads.example.com',))"
    )


def test_empty_allow_list_allows_every_host_web_11() -> None:
    assert DomainPolicy().allows("anything.example")
    assert DomainPolicy().allows("93.184.215.14")
    policy = DomainPolicy(blocked=["evil.example"])
    assert policy.allows("good.example")
    assert not policy.allows("www.evil.example")


def test_ip_host_is_not_a_subdomain_of_a_numeric_looking_entry_web_11() -> None:
    policy = DomainPolicy(allowed=["example.com"], blocked=["[::1]"])
    assert not policy.allows("127.0.0.1")
    assert not policy.allows("::1")
    assert not policy.allows("[0:0::1]")
    assert DomainPolicy(blocked=["::1"]).allows("::2")


@pytest.mark.parametrize(
    "host",
    [
        "93.184.216.34",
        "::ffff:93.184.216.34",
        "[::ffff:5db8:d822]",
        "64:ff9b::5db8:d822",
        "[64:ff9b::93.184.216.34]",
    ],
)
def test_a_blocked_ip_entry_refuses_every_form_of_that_address_web_11(host: str) -> None:
    policy = DomainPolicy(blocked=["93.184.216.34"])
    with pytest.raises(WebError) as caught:
        policy.check(host)
    assert caught.value.code == "domain_blocked"
    assert caught.value.data is not None and caught.value.data["entry"] == "93.184.216.34"
    assert policy.allows("93.184.216.35") and policy.allows("::ffff:93.184.216.35")


def test_a_mapped_ip_entry_matches_the_plain_ipv4_address_web_11() -> None:
    policy = DomainPolicy(allowed=["::ffff:93.184.216.34"], blocked=["64:ff9b::a00:1"])
    assert policy.allows("93.184.216.34")
    assert not policy.allows("10.0.0.1")
    assert not policy.allows("93.184.216.35")


def test_allowed_ip_entries_admit_addresses_never_names_web_11() -> None:
    """An allow-list of IP entries admits those addresses written as addresses, and no name at all."""
    policy = DomainPolicy(allowed=["93.184.216.34"])
    assert policy.allows("93.184.216.34") and policy.allows("::ffff:93.184.216.34")
    assert not policy.allows("docs.example.com")
    assert not policy.allows("93.184.216.35")
    policy.check_answers("93.184.216.34", ["93.184.216.34"])  # nothing to refuse


def test_check_answers_refuses_a_name_resolving_to_a_blocked_address_web_11() -> None:
    policy = DomainPolicy(blocked=["93.184.216.34", "example.org"])
    policy.check_answers("docs.example.com", ["93.184.216.35", "2606:2800:220:1::1"])
    for answer in ("93.184.216.34", "::ffff:93.184.216.34", "64:ff9b::5db8:d822"):
        with pytest.raises(WebError) as caught:
            policy.check_answers(
                "Docs.Example.com", ["93.184.216.35", answer], url="http://docs.example.com/x"
            )
        assert caught.value.code == "domain_blocked"
        assert caught.value.data == {
            "code": "domain_blocked",
            "host": "docs.example.com",
            "address": answer,
            "entry": "93.184.216.34",
        }
        assert str(caught.value) == (
            f"web_fetch refused http://docs.example.com/x: docs.example.com resolves to {answer}, which is "
            "blocked by STEERABLE_WEB_BLOCKED_DOMAINS (entry 93.184.216.34); use a source outside it"
        )


def test_check_answers_without_ip_entries_passes_everything_web_11() -> None:
    DomainPolicy(allowed=["example.com"], blocked=["example.org"]).check_answers("x.example.com", ["1.1.1.1"])


def test_blocked_wins_a_tie_web_11() -> None:
    policy = DomainPolicy(allowed=["example.com"], blocked=["example.com"])
    assert not policy.allows("example.com")
    with pytest.raises(WebError) as caught:
        policy.check("docs.example.com")
    assert caught.value.code == "domain_blocked"
    assert caught.value.data == {"code": "domain_blocked", "host": "docs.example.com", "entry": "example.com"}
    assert str(caught.value) == (
        "docs.example.com is blocked by STEERABLE_WEB_BLOCKED_DOMAINS (entry example.com); use a source outside it"
    )


def test_not_allowed_names_the_allow_list_web_11() -> None:
    with pytest.raises(WebError) as caught:
        POLICY.check("Evil.Example.")
    assert caught.value.code == "domain_not_allowed"
    assert caught.value.data == {
        "code": "domain_not_allowed",
        "host": "evil.example",
        "allowedDomains": ["example.com", "xn--bcher-kva.example", "1.2.3.4"],
    }
    assert str(caught.value) == (
        "evil.example is not covered by STEERABLE_WEB_ALLOWED_DOMAINS (example.com, xn--bcher-kva.example, "
        "1.2.3.4); only those domains and their subdomains can be reached"
    )


def test_long_allow_list_is_shortened_in_the_message_web_11() -> None:
    policy = DomainPolicy(allowed=[f"d{n}.example" for n in range(13)])
    with pytest.raises(WebError) as caught:
        policy.check("other.example")
    shown = ", ".join(f"d{n}.example" for n in range(10))
    assert str(caught.value) == (
        f"other.example is not covered by STEERABLE_WEB_ALLOWED_DOMAINS ({shown} and 3 more); "
        "only those domains and their subdomains can be reached"
    )
    assert len(caught.value.data["allowedDomains"]) == 13  # type: ignore[index]


def test_check_passes_an_allowed_host_web_11() -> None:
    POLICY.check("docs.example.com")  # raises on a refusal


def test_domain_policy_from_config_web_11() -> None:
    config = WebToolsConfig.from_env(
        {"STEERABLE_WEB_ALLOWED_DOMAINS": "*.python.org", "STEERABLE_WEB_BLOCKED_DOMAINS": "wiki.python.org"}
    )
    policy = DomainPolicy.from_config(config)
    assert policy.allows("docs.python.org")
    assert not policy.allows("wiki.python.org")
    assert not policy.allows("example.com")


def test_domain_policy_refuses_a_bad_entry() -> None:
    with pytest.raises(ConfigError) as caught:
        DomainPolicy(allowed=["https://example.com"])
    assert str(caught.value) == (
        "DomainPolicy allowed: 'https://example.com' is not a host name (it has a scheme); "
        "write names like docs.example.com"
    )


_label = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=10).filter(
    # a label the URL standard reads as a number (12, 0x1f, 0x) is no last label: the entry is refused
    lambda s: (
        not s.startswith("-")
        and not s.endswith("-")
        and not s.isdigit()
        and s[2:4] != "--"
        and not re.fullmatch(r"0x[0-9a-f]*", s)
    )
)
_domain = st.lists(_label, min_size=2, max_size=3).map(".".join)


@given(_domain, _label, st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=5))
def test_domain_match_is_on_a_label_boundary_web_11(entry: str, sub: str, glued: str) -> None:
    policy = DomainPolicy(allowed=[entry])
    assert policy.allows(entry)
    assert policy.allows(f"{sub}.{entry}")
    assert not policy.allows(f"{glued}{entry}")
    assert not DomainPolicy(allowed=[entry], blocked=[entry]).allows(f"{sub}.{entry}")
