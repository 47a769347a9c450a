"""Keeping a credential out of text: error messages, log lines, search hits."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final
from urllib.parse import unquote

from steerable_agent_runtime.config import CREDENTIAL_NAME, credential_name, url_password

__all__ = [
    "MIN_SECRET_CHARS",
    "REDACTED",
    "credential_arguments",
    "credential_values",
    "Redactor",
    "redact",
    "url_password",
]

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


def credential_values(environ: Mapping[str, str]) -> list[str]:
    """The values of the environment's credential-looking variables, longest first.

    A variable counts by its name (:func:`~steerable_agent_runtime.config.credential_name`:
    ``STEERABLE_API_KEY``, ``GITHUB_TOKEN``, ``PGPASSWORD``; not ``XAUTHORITY`` or the shell's
    ``PWD``, which name paths); so does the password of a URL in any variable. Values shorter than
    :data:`MIN_SECRET_CHARS` are placeholders and left out (see :func:`redact`).

    Args:
        environ: The environment to read (``os.environ`` or a host's ``env`` block).

    Returns:
        The distinct values, longest first (so a key that contains another is redacted whole).
    """
    found = {value.strip() for name, value in environ.items() if credential_name(name)}
    found.update(password for value in environ.values() if (password := url_password(value)))
    return sorted((value for value in found if len(value) >= MIN_SECRET_CHARS), key=len, reverse=True)


_CREDENTIAL_FLAG: Final = re.compile(
    r"^--?[a-z0-9-]*(?:key|token|secret|password|passwd|pass|credentials?|auth)$", re.IGNORECASE
)


_CREDENTIAL_HEADER: Final = re.compile(
    r"^\s*(?:authorization|proxy-authorization|[\w-]*(?:key|token|secret|auth)[\w-]*)\s*:\s*"
    r"(?:(?:bearer|basic|token)\s+)?(?P<value>\S.*?)\s*$",
    re.IGNORECASE,
)


def credential_arguments(args: Sequence[str]) -> list[str]:
    """The credentials a command line carries.

    ``--token VALUE`` and ``--api-key=VALUE`` (a flag whose last word is a credential word), a
    header (``--header "Authorization: Bearer VALUE"``, ``X-Api-Key: VALUE``), ``NAME=VALUE``
    with a credential-named ``NAME`` (``-e GITHUB_TOKEN=VALUE``), and URL passwords.

    Args:
        args: A command's arguments (an MCP server's ``args``).

    Returns:
        The values, in order (unfiltered by length: :func:`redact` skips short ones).
    """
    found: list[str] = []
    for i, arg in enumerate(args):
        flag, eq, value = arg.partition("=")
        if eq and _CREDENTIAL_FLAG.match(flag):
            found.append(value)
        elif eq and CREDENTIAL_NAME.search(flag) and not flag.startswith("-"):
            found.append(value)
        elif _CREDENTIAL_FLAG.match(arg) and i + 1 < len(args):
            found.append(args[i + 1])
        elif header := _CREDENTIAL_HEADER.match(arg):
            found.append(header["value"])
        elif password := url_password(arg):
            found.append(password)
    return found


@dataclass(frozen=True, slots=True)
class Redactor:
    """A set of secrets to keep out of text; call it on a text to get the text without them.

    Build it with :meth:`of`, which orders the secrets longest first (a key that contains another
    is redacted whole) once, not at every call: it runs on every log record and stderr line.

    Attributes:
        secrets: The distinct non-empty secrets, longest first.
    """

    secrets: tuple[str, ...] = ()

    @classmethod
    def of(cls, secrets: Iterable[str]) -> Redactor:
        """A redactor for ``secrets`` (any order; empty strings and repeats are dropped)."""
        return cls(tuple(sorted({s for s in secrets if s}, key=len, reverse=True)))

    def adding(self, secrets: Iterable[str]) -> Redactor:
        """This redactor with ``secrets`` too."""
        return Redactor.of((*self.secrets, *secrets))

    def __call__(self, text: str) -> str:
        """``text`` with every secret replaced by :data:`REDACTED` (see :func:`redact`)."""
        for secret in self.secrets:
            text = redact(text, secret, encoded=True)
        return text
