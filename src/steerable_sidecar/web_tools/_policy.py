"""What the web tools may reach: URL checks, the domain policy and the SSRF address check.

Spec: Web tools (sidecar), sections Domain policy and SSRF policy (requirements WEB-11, WEB-12,
WEB-13). ``web_fetch`` takes a model-supplied URL, untrusted input crossing into the host's
network position, so every hop goes through three gates, all pure functions of their inputs:

1. :func:`validate_url`: the URL's shape (http(s), a host, no credentials, at most 2048 characters);
2. :meth:`DomainPolicy.check`: the deployment's allow and block lists, before any DNS work;
3. :func:`check_addresses`: every DNS answer for the host must be globally reachable, and
   :meth:`DomainPolicy.check_answers`: no answer may be an address the block-list names.

Alternate IPv4 spellings of a host (``0x7f000001``, ``2130706433``, ``127.1``, ``93.184.55330``),
which httpx keeps as names but the C resolver reads as numbers (``inet_aton``), are rewritten by
:func:`validate_url` to the dotted quad they mean, so gate 2 sees the address. Gate 3 holds for
any spelling that slips past that: it checks the resolver's answers, whatever the host looked like.
IP entries and IP hosts are compared with IPv4-mapped (``::ffff:a.b.c.d``) and NAT64
(``64:ff9b::a.b.c.d``) forms unwrapped to the IPv4 address inside.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Sequence
from typing import Final

import httpx

from steerable_agent_runtime.errors import ConfigError, WebError

from ._codes import WebErrorCode
from ._config import ALLOWED_DOMAINS_ENV, BLOCKED_DOMAINS_ENV, WebToolsConfig
from ._domains import domain_entries, ip_literal

__all__ = [
    "MAX_URL_LENGTH",
    "DomainPolicy",
    "address_refusal",
    "check_addresses",
    "url_host",
    "validate_url",
]

MAX_URL_LENGTH: Final = 2048
"""The longest URL accepted, in characters (spec: SSRF policy)."""

_LABEL: Final = re.compile(r"[a-z0-9_-]{1,63}")
# One part of an inet_aton(3) IPv4 spelling: hex (0x...), octal (a leading 0) or decimal.
_INET_ATON_PART: Final = re.compile(r"0x[0-9a-f]+|0[0-7]*|[1-9][0-9]*")
_MAX_NAME: Final = 253
_SHOWN_URL: Final = 100
_SHOWN_DOMAINS: Final = 10
_PUBLIC_ONLY: Final = "only public internet addresses can be fetched (SSRF policy)"

_V4 = ipaddress.IPv4Network
_V6 = ipaddress.IPv6Network

# The IANA IPv4 special-purpose registry (RFC 6890 and updates), checked before ``is_global`` so
# the verdict does not depend on the Python version: 3.11 still calls multicast, 192.0.0.0/24 and
# the deprecated 6to4 relay anycast prefix global. The whole of 192.0.0.0/24 is refused, even the
# two anycast addresses newer registries call global (192.0.0.9, 192.0.0.10): no web page lives there.
_V4_SPECIAL: Final[tuple[tuple[ipaddress.IPv4Network, str], ...]] = (
    (_V4("0.0.0.0/8"), "this network"),
    (_V4("10.0.0.0/8"), "private"),
    (_V4("100.64.0.0/10"), "shared address space (CGNAT)"),
    (_V4("127.0.0.0/8"), "loopback"),
    (_V4("169.254.0.0/16"), "link-local"),
    (_V4("172.16.0.0/12"), "private"),
    (_V4("192.0.0.0/24"), "IETF protocol assignments"),
    (_V4("192.0.2.0/24"), "documentation"),
    (_V4("192.88.99.0/24"), "6to4 relay anycast"),
    (_V4("192.168.0.0/16"), "private"),
    (_V4("198.18.0.0/15"), "benchmarking"),
    (_V4("198.51.100.0/24"), "documentation"),
    (_V4("203.0.113.0/24"), "documentation"),
    (_V4("224.0.0.0/4"), "multicast"),
    (_V4("240.0.0.0/4"), "reserved"),
)

# IPv6 ranges Python 3.11 calls global although they are not (site-local, multicast, the newer
# documentation and SRv6 prefixes), plus the common ones for a precise reason.
_V6_SPECIAL: Final[tuple[tuple[ipaddress.IPv6Network, str], ...]] = (
    (_V6("fe80::/10"), "link-local"),
    (_V6("fec0::/10"), "site-local"),
    (_V6("fc00::/7"), "private (unique local)"),
    (_V6("ff00::/8"), "multicast"),
    (_V6("2001:db8::/32"), "documentation"),
    (_V6("3fff::/20"), "documentation"),
    (_V6("5f00::/16"), "SRv6 segment identifiers"),
)
_V4_COMPATIBLE: Final = _V6("::/96")
_NAT64: Final = _V6("64:ff9b::/96")
_NAT64_LOCAL: Final = _V6("64:ff9b:1::/48")
_GLOBAL_UNICAST: Final = _V6("2000::/3")
# Named IPv6 ranges, after the unspecified and loopback addresses (none of them overlap).
_V6_NAMED: Final[tuple[tuple[ipaddress.IPv6Network, str], ...]] = (
    (_V4_COMPATIBLE, "IPv4-compatible"),
    (_NAT64_LOCAL, "NAT64 local-use"),
    (_V6("2001::/32"), "Teredo"),  # what ipaddress's .teredo recognises
    *_V6_SPECIAL,
)


def validate_url(url: str) -> httpx.URL:
    """Check the shape of a URL the model asked for (or a redirect target) and parse it.

    Parsed by ``httpx.URL``, the parser that makes the request, so the host checked is the host
    connected to; an ``inet_aton(3)`` IPv4 spelling httpx does not read (``0x7f000001``) is rewritten
    to its address (docs/web-tools.md, ``web_fetch {url}``, URL checks).

    Args:
        url: The URL text; surrounding whitespace is ignored.

    Returns:
        The parsed URL, its host lowercase with no trailing dot, IDN hosts as IDNA A-labels
        (:func:`url_host`), an IPv6 literal in its canonical compressed form, a numeric IPv4
        spelling as a dotted quad.

    Raises:
        WebError: ``invalid_url`` (spec: SSRF policy, WEB-12) unless ``url`` is a string of at most
            :data:`MAX_URL_LENGTH` characters that httpx parses, with scheme http or https, a host
            name or IP literal (no IPv6 zone id), a port from 1 to 65535 when one is given, and no
            userinfo (neither user nor password).
    """
    if not isinstance(url, str):
        raise _invalid(None, f"the URL must be a string, not {type(url).__name__}")
    text = url.strip()
    parsed = _parsed(text)
    host = parsed.raw_host.decode("ascii").lower()
    if not host:
        raise _invalid(text, "it has no host")
    if parsed.port is not None and not 1 <= parsed.port <= 65535:
        raise _invalid(text, f"port {parsed.port} is out of range (1 to 65535)")
    if ":" in host:
        return _with_ipv6_host(parsed, host, text)
    return _with_name_host(parsed, host, text)


def _parsed(text: str) -> httpx.URL:
    """``text`` parsed by httpx, if short enough, with an http(s) scheme and no userinfo."""
    if len(text) > MAX_URL_LENGTH:
        raise WebError(
            WebErrorCode.INVALID_URL,
            f"invalid URL {_shown(text)}: it is {len(text)} characters long; "
            f"at most {MAX_URL_LENGTH} are accepted",
            data={"maxLength": MAX_URL_LENGTH, "length": len(text)},
        )
    try:
        parsed = httpx.URL(text)
    except (httpx.InvalidURL, ValueError, UnicodeError) as exc:
        raise _invalid(text, f"it does not parse ({exc})") from None
    if not parsed.scheme:
        raise _invalid(text, "it has no scheme; write the full URL, e.g. https://example.com/page")
    if parsed.scheme not in ("http", "https"):
        raise _invalid(text, f"only http:// and https:// URLs can be fetched, not {parsed.scheme}:")
    if parsed.userinfo:
        raise _invalid(None, "it carries credentials before '@'; remove them (a user or password is refused)")
    return parsed


def _with_ipv6_host(parsed: httpx.URL, host: str, text: str) -> httpx.URL:
    """``parsed`` with its IPv6 literal ``host`` (lowercase) in canonical form; a zone id is refused."""
    if "%" in host:
        raise _invalid(text, "an IPv6 zone id names a local network interface; " + _PUBLIC_ONLY)
    canonical = str(ipaddress.IPv6Address(host))
    return parsed if canonical == parsed.raw_host.decode("ascii") else parsed.copy_with(host=canonical)


def _with_name_host(parsed: httpx.URL, host: str, text: str) -> httpx.URL:
    """``parsed`` with its name ``host`` (lowercase) checked, without a trailing dot, inet_aton read."""
    name = host.removesuffix(".")
    labels = name.split(".")
    if len(name) > _MAX_NAME or not all(_LABEL.fullmatch(label) for label in labels):
        raise _invalid(text, f"{host!r} is not a valid host name")
    name = _inet_aton(labels) or name
    if name == parsed.raw_host.decode("ascii"):
        return parsed
    try:
        return parsed.copy_with(host=name)
    except (httpx.InvalidURL, ValueError) as exc:  # "0.0.0.08." passes as a name; "0.0.0.08" does not
        raise _invalid(text, f"it does not parse ({exc})") from None


def _inet_aton(labels: Sequence[str]) -> str | None:
    """The dotted quad a numeric host means to ``inet_aton(3)`` (glibc, musl, BSD), or ``None``.

    One to four parts, each decimal, octal (a leading ``0``) or hex (``0x``); every part but the
    last is one byte, the last fills the remaining bytes: ``127.1`` is ``127.0.0.1``,
    ``2130706433`` is ``127.0.0.1``, ``93.184.55330`` is ``93.184.216.34``.
    """
    if not 1 <= len(labels) <= 4 or not all(_INET_ATON_PART.fullmatch(label) for label in labels):
        return None
    values = [
        int(part, 16) if part.startswith("0x") else int(part, 8 if part.startswith("0") else 10)
        for part in labels
    ]
    *head, last = values
    if any(value > 255 for value in head) or last >= 256 ** (4 - len(head)):
        return None
    number = 0
    for value in head:
        number = number << 8 | value
    return str(ipaddress.IPv4Address(number << 8 * (4 - len(head)) | last))


def url_host(url: httpx.URL) -> str:
    """The host a URL connects to: lowercase, IDNA A-labels, no trailing dot, IPv6 without brackets.

    Args:
        url: A URL, usually one returned by :func:`validate_url`.

    Returns:
        The host, e.g. ``"xn--bcher-kva.example"`` or ``"::1"``.
    """
    return url.raw_host.decode("ascii").lower().removesuffix(".")


class DomainPolicy:
    """The deployment's allow and block lists (spec: Domain policy, WEB-11).

    An entry matches its host and every subdomain on a label boundary; an IP entry matches only that
    address, IPv4-mapped and NAT64 forms unwrapped; blocked wins; an empty allow-list allows every
    host. Before DNS, :meth:`check` judges the URL's host; after DNS, :meth:`check_answers` refuses a
    name that resolves to a blocked address. docs/web-tools.md, "Configuration", has the long form.

    Args:
        allowed: Domains that may be reached; empty means every host.
        blocked: Domains that are never reached.

    Raises:
        ConfigError: For an entry that is not a host name.
    """

    __slots__ = ("_allowed", "_blocked", "_blocked_ips")

    def __init__(self, allowed: Iterable[str] = (), blocked: Iterable[str] = ()) -> None:
        self._allowed = domain_entries(allowed, "DomainPolicy allowed")
        self._blocked = domain_entries(blocked, "DomainPolicy blocked")
        self._blocked_ips = {
            address: entry for entry in self._blocked if (address := _policy_address(entry)) is not None
        }

    @classmethod
    def from_config(cls, config: WebToolsConfig) -> DomainPolicy:
        """The policy of ``config.allowed_domains`` and ``config.blocked_domains``."""
        return cls(config.allowed_domains, config.blocked_domains)

    @property
    def allowed(self) -> tuple[str, ...]:
        """The normalized allow-list entries (empty: every host)."""
        return self._allowed

    @property
    def blocked(self) -> tuple[str, ...]:
        """The normalized block-list entries."""
        return self._blocked

    def __repr__(self) -> str:
        return f"DomainPolicy(allowed={self._allowed!r}, blocked={self._blocked!r})"

    def allows(self, host: str) -> bool:
        """Whether ``host`` may be reached.

        Args:
            host: A host as :func:`url_host` returns it (case, one trailing dot and IPv6 brackets
                are tolerated; an IDN host is matched by its A-labels).

        Returns:
            ``False`` when a blocked entry covers the host, or when the allow-list is non-empty and
            no entry covers it; ``True`` otherwise.
        """
        return self._refusal(_normal_host(host)) is None

    def check(self, host: str) -> None:
        """Raise unless :meth:`allows` accepts ``host``.

        Args:
            host: As for :meth:`allows`.

        Raises:
            WebError: ``domain_blocked`` naming the host, the entry and ``STEERABLE_WEB_BLOCKED_DOMAINS``
                (``data``: ``host``, ``entry``); or ``domain_not_allowed`` naming the host and
                ``STEERABLE_WEB_ALLOWED_DOMAINS`` with its entries (``data``: ``host``,
                ``allowed_domains``).
        """
        normal = _normal_host(host)
        refusal = self._refusal(normal)
        if refusal is None:
            return
        code, entry = refusal
        if code == WebErrorCode.DOMAIN_BLOCKED:
            raise WebError(
                code,
                f"{normal} is blocked by {BLOCKED_DOMAINS_ENV} (entry {entry}); use a source outside it",
                data={"host": normal, "entry": entry},
            )
        shown = ", ".join(self._allowed[:_SHOWN_DOMAINS])
        if len(self._allowed) > _SHOWN_DOMAINS:
            shown += f" and {len(self._allowed) - _SHOWN_DOMAINS} more"
        raise WebError(
            code,
            f"{normal} is not covered by {ALLOWED_DOMAINS_ENV} ({shown}); "
            "only those domains and their subdomains can be reached",
            data={"host": normal, "allowedDomains": list(self._allowed)},
        )

    def check_answers(self, host: str, addresses: Sequence[str], *, url: str | None = None) -> None:
        """Refuse a host that resolves to an address the block-list names (after the SSRF check).

        :meth:`check` saw the host's name; this sees where the name leads, so a blocked address
        cannot be reached through a name (or a numeric spelling the resolver decodes) that points
        at it. Answers are compared with IPv4-mapped and NAT64 forms unwrapped. Allow-list IP
        entries are not applied to answers (see the class docstring).

        Args:
            host: The host that was resolved (named in the message).
            addresses: Its DNS answers, as address strings.
            url: The URL being fetched, named in the message when given.

        Raises:
            WebError: ``domain_blocked`` naming the host, the address and the entry of
                ``STEERABLE_WEB_BLOCKED_DOMAINS`` (``data``: ``host``, ``address``, ``entry``).
        """
        if not self._blocked_ips:
            return
        for address in addresses:
            entry = self._blocked_ips.get(_policy_address(address) or "")
            if entry is None:
                continue
            target = f"web_fetch refused {url}: " if url else ""
            raise WebError(
                WebErrorCode.DOMAIN_BLOCKED,
                f"{target}{_normal_host(host)} resolves to {address}, which is blocked by "
                f"{BLOCKED_DOMAINS_ENV} (entry {entry}); use a source outside it",
                data={"host": _normal_host(host), "address": address, "entry": entry},
            )

    def _refusal(self, host: str) -> tuple[WebErrorCode, str] | None:
        address = _policy_address(host)
        if address is not None:
            blocked = self._blocked_ips.get(address)
            if blocked is not None:
                return WebErrorCode.DOMAIN_BLOCKED, blocked
            if self._allowed and not any(_policy_address(entry) == address for entry in self._allowed):
                return WebErrorCode.DOMAIN_NOT_ALLOWED, ""
            return None
        blocked = next((entry for entry in self._blocked if _covers(entry, host)), None)
        if blocked is not None:
            return WebErrorCode.DOMAIN_BLOCKED, blocked
        if self._allowed and not any(_covers(entry, host) for entry in self._allowed):
            return WebErrorCode.DOMAIN_NOT_ALLOWED, ""
        return None


def address_refusal(address: str) -> str | None:
    """Why an address must not be connected to, or ``None`` when it is globally reachable.

    Rules (spec: SSRF policy, WEB-12, WEB-13; the list is in docs/web-tools.md, "SSRF policy"):
    ``is_global`` must hold and the IANA special-purpose ranges are refused; IPv4-mapped and NAT64
    ``64:ff9b::/96`` addresses are judged by their IPv4; refused although Python may call them
    global: IPv4-compatible ``::a.b.c.d`` (RFC 4291), site-local ``fec0::/10`` (RFC 3879), 6to4
    ``2002::/16``, Teredo ``2001::/32``, local-use NAT64 ``64:ff9b:1::/48`` (RFC 8215) and anything
    outside ``2000::/3``. A zone id (``fe80::1%eth0``) or a non-address is refused.

    Args:
        address: An address as the resolver returns it, e.g. ``"10.0.0.5"`` or ``"::1"``.

    Returns:
        ``None`` for a globally reachable address; otherwise a short reason such as
        ``"loopback"``, ``"private"``, ``"IPv4-mapped 127.0.0.1: loopback"`` or
        ``"6to4 embeds 8.8.8.8"``.
    """
    if not isinstance(address, str):
        return "not an IP address"
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return "not an IP address"
    if isinstance(ip, ipaddress.IPv4Address):
        return _v4_refusal(ip)
    if ip.scope_id is not None:
        return _v6_refusal(ipaddress.IPv6Address(int(ip))) or "zone id"
    return _v6_refusal(ip)


def check_addresses(host: str, addresses: Sequence[str], *, url: str | None = None) -> None:
    """Refuse a host unless every one of its DNS answers is globally reachable (see :func:`address_refusal`).

    One bad answer refuses the host: the connection could be made to any of them (spec: SSRF
    policy, "the host's DNS answers must ALL be globally reachable"; WEB-12).

    Args:
        host: The host that was resolved (named in the message).
        addresses: Its answers, as address strings.
        url: The URL being fetched, named in the message instead of the host when given.

    Raises:
        WebError: ``ssrf_blocked`` naming the host, the first refused address and the reason,
            e.g. ``"web_fetch refused http://x/: x resolves to 10.0.0.5 (private); ..."``
            (``data``: ``host``, ``address``, ``reason``); or ``dns_failed`` when there are no
            answers (``data``: ``host``).
        TypeError: When ``addresses`` is a single string instead of a sequence of them.
    """
    if isinstance(addresses, str):
        raise TypeError("addresses must be a sequence of address strings, not one string")
    target = url or host
    if not addresses:
        raise WebError(
            WebErrorCode.DNS_FAILED,
            f"web_fetch could not reach {target}: {host} has no DNS answers; check the host name",
            data={"host": host},
        )
    for address in addresses:
        reason = address_refusal(address)
        if reason is None:
            continue
        literal = ip_literal(host.removeprefix("[").removesuffix("]"))
        if literal is not None and literal == ip_literal(address):
            where = f"{address} is not publicly reachable ({reason})"
        else:
            where = f"{host} resolves to {address} ({reason})"
        raise WebError(
            WebErrorCode.SSRF_BLOCKED,
            f"web_fetch refused {target}: {where}; {_PUBLIC_ONLY}",
            data={"host": host, "address": address, "reason": reason},
        )


def _v4_refusal(ip: ipaddress.IPv4Address) -> str | None:
    if int(ip) == 0:
        return "unspecified"
    if int(ip) == 0xFFFFFFFF:
        return "broadcast"
    for network, reason in _V4_SPECIAL:
        if ip in network:
            return reason
    return None if ip.is_global else "not globally reachable"


def _v6_refusal(ip: ipaddress.IPv6Address) -> str | None:
    carrier = _v4_carrier(ip)
    if carrier is not None:
        return _carried_refusal(*carrier)
    if ip.is_unspecified:
        return "unspecified"
    if ip.is_loopback:
        return "loopback"
    for network, special in _V6_NAMED:
        if ip in network:
            return special
    if ip not in _GLOBAL_UNICAST:
        return "reserved"
    return None if ip.is_global else "not globally reachable"


def _v4_carrier(ip: ipaddress.IPv6Address) -> tuple[str, ipaddress.IPv4Address] | None:
    """How an IPv6 address carries an IPv4 one (IPv4-mapped, NAT64, 6to4) and which, or ``None``."""
    if ip.ipv4_mapped is not None:
        return "IPv4-mapped", ip.ipv4_mapped
    if ip in _NAT64:
        return "NAT64", ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    if ip.sixtofour is not None:
        return "6to4", ip.sixtofour
    return None


def _carried_refusal(how: str, carried: ipaddress.IPv4Address) -> str | None:
    """IPv4-mapped and NAT64 addresses are judged by the address they carry; 6to4 is always refused."""
    reason = _v4_refusal(carried)
    if how == "6to4":
        return f"6to4 embeds {carried}" + ("" if reason is None else f": {reason}")
    return None if reason is None else f"{how} {carried}: {reason}"


def _covers(entry: str, host: str) -> bool:
    """Whether a normalized entry covers a normalized host name (on a label boundary)."""
    if host == entry:
        return True
    return host.endswith("." + entry) and ip_literal(entry) is None


def _policy_address(text: str) -> str | None:
    """An IP literal as the domain policy compares it, or ``None`` for a name.

    The canonical form, with IPv4-mapped ``::ffff:a.b.c.d`` and NAT64 ``64:ff9b::a.b.c.d``
    unwrapped to ``a.b.c.d`` (both reach the IPv4 address inside). A zone id is dropped.
    """
    candidate = text.strip().lower().removesuffix(".")
    candidate = candidate[1:-1] if candidate.startswith("[") and candidate.endswith("]") else candidate
    try:
        ip = ipaddress.ip_address(candidate.partition("%")[0])
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        if ip in _NAT64:
            return str(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    return str(ip)


def _normal_host(host: str) -> str:
    """A host in the form domain entries take: lowercase, A-labels, no trailing dot, canonical IPs."""
    text = host.strip().lower().removesuffix(".")
    literal = ip_literal(text)
    if literal is not None:
        return literal
    if text.isascii():
        return text
    try:
        return domain_entries((text,), "host")[0]
    except ConfigError:  # a name IDNA cannot encode matches no entry; keep it as given
        return text


def _shown(text: str) -> str:
    return repr(text if len(text) <= _SHOWN_URL else text[:_SHOWN_URL] + "...")


def _invalid(text: str | None, why: str) -> WebError:
    prefix = "invalid URL" if text is None else f"invalid URL {_shown(text)}"
    return WebError(WebErrorCode.INVALID_URL, f"{prefix}: {why}")
