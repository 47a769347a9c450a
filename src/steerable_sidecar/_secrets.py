"""Keeping a credential out of text: error messages, log lines, search hits."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final
from urllib.parse import unquote

__all__ = ["MIN_SECRET_CHARS", "REDACTED", "credential_values", "redact"]

REDACTED: Final = "[redacted]"
"""What a secret is replaced with."""

MIN_SECRET_CHARS: Final = 8
"""Shorter keys (``ollama``) are placeholders, not secrets: they are left alone, so text stays readable."""


def redact(text: str, secret: str, *, clipped: bool = True, encoded: bool = False) -> str:
    """``text`` with every occurrence of ``secret`` replaced by :data:`REDACTED`.

    Args:
        text: An error message, a log line, a search hit's field.
        secret: The credential (left in place when shorter than :data:`MIN_SECRET_CHARS`).
        clipped: Also redact the key's first part where a clip cut it short (``sk-ab...``): a detail
            clipped with ``...`` may end inside the key.
        encoded: Also redact a percent-encoded copy (a key echoed inside a URL).

    Returns:
        The text without the secret.
    """
    if len(secret) < MIN_SECRET_CHARS:
        return text
    text = text.replace(secret, REDACTED)
    if encoded and "%" in text and secret in unquote(text):
        text = unquote(text).replace(secret, REDACTED)
    if clipped and "..." in text:
        for n in range(len(secret) - 1, MIN_SECRET_CHARS - 1, -1):
            text = text.replace(secret[:n] + "...", REDACTED + "...")
    return text


_CREDENTIAL_NAME: Final = re.compile(
    r"(?:^|_)(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASS|CREDENTIALS?|AUTH)$", re.IGNORECASE
)


def credential_values(environ: Mapping[str, str]) -> list[str]:
    """The values of the environment's credential-looking variables, longest first.

    A name whose last word is ``KEY``, ``TOKEN``, ``SECRET``, ``PASSWORD``, ``PASSWD``, ``PASS``,
    ``CREDENTIAL(S)`` or ``AUTH`` (any case: ``STEERABLE_API_KEY``, ``TAVILY_API_KEY``,
    ``GITHUB_TOKEN``, ``AWS_SECRET_ACCESS_KEY``) counts, not one that only contains such a word
    (``XAUTHORITY``, ``SSH_AUTH_SOCK``, ``KEY_DIR`` hold paths); values shorter than
    :data:`MIN_SECRET_CHARS` are placeholders and left out (see :func:`redact`).

    Args:
        environ: The environment to read (``os.environ`` or a host's ``env`` block).

    Returns:
        The distinct values, longest first (so a key that contains another is redacted whole).
    """
    found = {value.strip() for name, value in environ.items() if _CREDENTIAL_NAME.search(name)}
    return sorted((value for value in found if len(value) >= MIN_SECRET_CHARS), key=len, reverse=True)
