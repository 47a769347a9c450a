"""A running call's output made fit to show a host: no control sequence, no piece of a known secret.

Both faces of live output (``steerable mcp``'s progress messages, ``steerable acp``'s
``tool_call_update``s: docs/mcp.md and docs/acp.md, "Live output") pass every
``CallContext.send_output`` chunk through one :class:`LiveText` per call. A chunk is redacted
together with what the last one held back, so a secret printed in two chunks (a line written
slowly: ``bash`` sends a line not finished after half a second as far as it goes) is caught whole:
the end of a chunk that may begin a secret waits for the next chunk, and is never sent when the
call ends first (the result has it all). The tool's result is never passed through here.
"""

from __future__ import annotations

import re
from typing import Final
from urllib.parse import unquote

from steerable_agent_runtime.context import output_gap, strip_controls, unfinished_escape

from ._secrets import MIN_SECRET_CHARS, REDACTED, Redactor

__all__ = ["LiveText"]

_MAX_ESCAPE_CHARS: Final = 256  # an unfinished sequence held back longer is kept as its start alone
_PARTIAL_ESCAPE: Final = re.compile(r"%[0-9A-Fa-f]?\Z")  # a percent escape cut short by the end
_UNRESERVED: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


class LiveText:
    """One call's output chunks, each made safe to show (see the module docstring).

    Args:
        redact: The secrets to keep out (each at least :data:`MIN_SECRET_CHARS` long counts).
    """

    def __init__(self, redact: Redactor) -> None:
        self._redact = redact
        self._secrets = tuple(s for s in redact.secrets if len(s) >= MIN_SECRET_CHARS)
        self._reach = 3 * max((len(s) for s in self._secrets), default=0)  # a secret, percent-encoded
        self._escape = ""  # an escape sequence the last chunk's end cut short
        self._held = ""  # the last chunk's end that may begin a secret

    def feed(self, chunk: str) -> tuple[int, str]:
        r"""What of ``chunk`` may be shown now: ``(bytes left out before it, its text)``.

        The text has no escape sequence and no control character but ``\n``, ``\t`` and ``\r``
        (a face resolves a line's overwrites: ``plain_output``), and no secret nor a piece of one:
        an end that may begin a secret is held back for the next chunk. A chunk that starts with
        ``[... N bytes not shown]`` (``output_tail``'s line) follows a gap: ``N`` is returned, what
        was held back is dropped (counted in it), and the text's start is redacted when it is the
        end of a secret cut by the gap.
        """
        gap, chunk = output_gap(chunk)
        if gap:
            gap += len(self._held.encode("utf-8", "replace"))
            self._escape = self._held = ""
        raw = self._escape + chunk
        cut = unfinished_escape(raw)
        escape = raw[cut:]
        self._escape = escape if len(escape) <= _MAX_ESCAPE_CHARS else escape[:2]
        text = strip_controls(raw[:cut])
        if gap:
            text = self._cut_end(text)
        text = self._redact(self._held + text)
        held = self._open_end(text)
        self._held = text[len(text) - held :] if held else ""
        return gap, text[: len(text) - held]

    def _open_end(self, text: str) -> int:
        """How many characters ending ``text`` may begin a secret (as it is, or percent-encoded)."""
        if not self._secrets:
            return 0
        longest = 0
        for secret in self._secrets:
            for n in range(min(len(secret) - 1, len(text)), longest, -1):
                if text.endswith(secret[:n]):
                    longest = n
                    break
        if "%" not in text[-self._reach :]:
            return longest
        for start in range(max(0, len(text) - self._reach), len(text) - longest):
            tail = text[start:]
            if "%" not in tail:
                break
            if self._encoded_start(tail):
                return len(tail)
        return longest

    def _encoded_start(self, tail: str) -> bool:
        """Whether ``tail`` may be a percent-encoded secret's start (its last escape maybe cut short)."""
        whole = _PARTIAL_ESCAPE.sub("", tail)
        plain = unquote(whole)
        if not plain:  # "%" or "%2" alone: a secret that starts with an encoded character
            return whole != tail and any(s[0] not in _UNRESERVED for s in self._secrets)
        return any(len(plain) < len(s) and s.startswith(plain) for s in self._secrets)

    def _cut_end(self, text: str) -> str:
        """``text`` with a secret's end it starts with (a gap cut the secret) redacted."""
        longest = 0
        for secret in self._secrets:
            for n in range(len(secret) - 1, max(longest, MIN_SECRET_CHARS - 1), -1):
                if text.startswith(secret[-n:]):
                    longest = n
                    break
        return REDACTED + text[longest:] if longest else text
