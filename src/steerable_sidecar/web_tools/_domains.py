"""Domain-list entries and IP literals, normalized as the web tools' configuration and policy compare them.

The rules are :func:`~steerable_sidecar.web_tools.parse_domain_list`'s (docs/web-tools.md,
"Configuration"): an entry is an A-label host name (UTS 46 mapped, IDNA 2008 encoded, a leading ``*.`` or
``.`` dropped) or a canonical IP address.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from typing import Final

from steerable_agent_runtime.errors import ConfigError

__all__ = ["domain_entries", "ip_literal"]

_NUMERIC_TLD: Final = re.compile(r"[0-9]+|0x[0-9a-f]*")
_NOT_IN_NAME: Final = (
    (":", "it has a port"),
    ("*", "* is only accepted as a leading *."),
    (" ", "it has a space"),
)


def domain_entries(entries: Iterable[str], label: str) -> tuple[str, ...]:
    """Normalize each entry (see :func:`parse_domain_list`), dropping repeats; ``label`` names the source."""
    if isinstance(entries, str):
        raise ConfigError(f"{label} must be a sequence of domain names, not a string; use parse_domain_list")
    seen: dict[str, None] = {}
    for entry in entries:
        if not isinstance(entry, str):
            raise ConfigError(f"{label} entry {entry!r} is not a string")
        seen.setdefault(_domain_entry(entry, label))
    return tuple(seen)


def _domain_entry(entry: str, label: str) -> str:
    """One normalized domain-list entry (an A-label name or a canonical IP address)."""
    text = entry.strip()
    if not text:
        raise _not_a_host(label, text, "empty")
    literal = ip_literal(text)
    if literal is not None:
        return literal
    for mark, why in (("://", "it has a scheme"), ("@", "it has userinfo"), ("/", "it has a path")):
        if mark in text:
            raise _not_a_host(label, text, why)
    return _a_label_name(text, label)


def _a_label_name(text: str, label: str) -> str:
    """``text`` (stripped, not an IP address) as an IDNA A-label name, ``*.`` and dots dropped."""
    import idna  # only for a configured domain list

    try:
        mapped = idna.uts46_remap(text, std3_rules=False, transitional=False)
    except idna.IDNAError as exc:
        raise _not_a_host(label, text, str(exc)) from None
    if mapped == "*":
        raise _not_a_host(label, text, f"a bare * is not a domain; leave {label} empty to mean every host")
    mapped = mapped.removeprefix("*.").removeprefix(".").removesuffix(".")
    for mark, why in _NOT_IN_NAME:
        if mark in mapped:
            raise _not_a_host(label, text, why)
    if not mapped:
        raise _not_a_host(label, text, "nothing is left after the dots")
    if mapped.startswith(".") or mapped.endswith("."):
        raise _not_a_host(label, text, "it has an empty label")
    try:
        name = idna.encode(mapped, uts46=False).decode("ascii")
    except idna.IDNAError as exc:
        raise _not_a_host(label, text, str(exc)) from None
    if _NUMERIC_TLD.fullmatch(name.rsplit(".", 1)[-1]):
        raise _not_a_host(label, text, "its last label is a number but the entry is not an IPv4 address")
    return name


def _not_a_host(label: str, text: str, why: str) -> ConfigError:
    return ConfigError(f"{label}: {text!r} is not a host name ({why}); write names like docs.example.com")


def ip_literal(text: str) -> str | None:
    """The canonical form of an IPv4 address or a (bracketed or bare) IPv6 address; else ``None``."""
    candidate = text[1:-1] if text.startswith("[") and text.endswith("]") else text
    try:
        address = ipaddress.ip_address(candidate)
    except ValueError:
        return None
    return None if isinstance(address, ipaddress.IPv6Address) and address.scope_id else str(address)
