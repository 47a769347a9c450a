r"""Text every transport can send: a lone surrogate becomes U+FFFD.

A lone surrogate comes from a file name or a program's output that was not UTF-8 (the OS layer
decodes such bytes with ``surrogateescape``). JSON can spell it only as a ``\udXXX`` escape, which
strict parsers (serde_json, I-JSON: RFC 7493, 2.1) refuse, and UTF-8 cannot encode it at all.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["is_utf8", "utf8_safe"]

_SURROGATES: Final = re.compile("[\ud800-\udfff]")


def is_utf8(text: str) -> bool:
    """Tell whether ``text`` has no lone surrogate (UTF-8 can encode it)."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def utf8_safe(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD (``text`` itself when it has none)."""
    return text if is_utf8(text) else _SURROGATES.sub("\ufffd", text)
