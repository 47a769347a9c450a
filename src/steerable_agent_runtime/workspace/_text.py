r"""File bytes <-> model text: the version token, binary/encoding checks, BOM and line endings.

The version (spec: File tools, CAS token) is the SHA-256 of the file's full content, lowercase hex.
A file's content *is* its UTF-8 text, so hashing the raw bytes equals hashing the UTF-8 encoding
of the text (a BOM and CRLF line endings are part of the content). Models see text with ``\n``
line endings and no BOM; writes put the file's own BOM and line-ending style back.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Final, Literal

from ..errors import WorkspaceError
from ._codes import FileErrorCode

__all__ = ["DecodedText", "count_lines", "decode_file", "encode_text", "version_of"]

_BOM: Final = b"\xef\xbb\xbf"
_SNIFF_BYTES: Final = 8192


def version_of(content: bytes | str) -> str:
    """Return the version token of a file's content.

    Args:
        content: The raw bytes, or the full text (hashed as UTF-8).

    Returns:
        The SHA-256 digest as 64 lowercase hex characters (see ``spec/tool_contract.json``).
    """
    raw = content.encode("utf-8") if isinstance(content, str) else content
    return hashlib.sha256(raw).hexdigest()


@dataclass(frozen=True, slots=True)
class DecodedText:
    r"""A text file as the model sees it, plus what is needed to write it back byte-faithfully.

    Attributes:
        text: Content without BOM and with ``\n`` line endings.
        newline: ``"\r\n"`` when every line ending is CRLF, else ``"\n"``. A file mixing
            both keeps its ``\r`` characters in ``text`` so nothing is rewritten behind the model.
        bom: Whether the file starts with a UTF-8 BOM.
        version: SHA-256 hex of the raw bytes.
    """

    text: str
    newline: Literal["\n", "\r\n"]
    bom: bool
    version: str


def decode_file(raw: bytes, *, path: str, version: str | None = None) -> DecodedText:
    """Decode a file's bytes for the model.

    Args:
        raw: The whole file.
        path: The display path, for error messages.
        version: The content's version when the caller already has it (hashed elsewhere).

    Returns:
        The decoded text and its write-back facts.

    Raises:
        WorkspaceError: ``binary_file`` when the content has a NUL byte in its first 8 KiB;
            ``not_utf8`` when it is not valid UTF-8 (the tools never guess an encoding and
            never write a lossy re-encoding).
    """
    if b"\x00" in raw[:_SNIFF_BYTES]:
        raise WorkspaceError(
            FileErrorCode.BINARY_FILE,
            f"{path} is a binary file; the file tools handle UTF-8 text only (use bash for binaries)",
            data={"path": path},
        )
    bom = raw.startswith(_BOM)
    body = raw[len(_BOM) :] if bom else raw
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise WorkspaceError(
            FileErrorCode.NOT_UTF8,
            f"{path} is not valid UTF-8 (byte {exc.start}); the file tools refuse to guess an encoding "
            "or rewrite it lossily (use bash with iconv for other encodings)",
            data={"path": path},
        ) from None
    newline: Literal["\n", "\r\n"] = "\n"
    if "\r" in text:  # the counts below are full scans: only files that have a CR pay for them
        crlf = text.count("\r\n")
        if crlf and crlf == text.count("\n"):
            newline, text = "\r\n", text.replace("\r\n", "\n")
    return DecodedText(text=text, newline=newline, bom=bom, version=version or version_of(raw))


def count_lines(text: str) -> int:
    r"""Return the number of ``\n``-separated lines (a last line without newline counts; ``""`` has 0)."""
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def encode_text(text: str, *, newline: str = "\n", bom: bool = False) -> bytes:
    r"""Encode model text for disk in the file's own style.

    Args:
        text: Text with ``\n`` (or ``\r\n``) line endings.
        newline: The file's line ending; ``"\r\n"`` turns every line ending into CRLF.
        bom: Prefix a UTF-8 BOM (an existing BOM in ``text`` is not doubled).

    Returns:
        The bytes to write.

    Raises:
        WorkspaceError: ``invalid_text`` when ``text`` holds a lone surrogate.
    """
    if text.startswith("\ufeff"):
        text, bom = text[1:], True
    if newline == "\r\n":
        text = text.replace("\r\n", "\n").replace("\n", "\r\n")
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise WorkspaceError(
            FileErrorCode.INVALID_TEXT,
            f"the text has a lone surrogate ({text[exc.start]!r} at index {exc.start}), which is not valid "
            "Unicode and cannot be written as UTF-8; send the character itself",
        ) from None
    return _BOM + data if bom else data
