"""Which bodies ``web_fetch`` reads as text: media types, sniffing, binary bodies served as text.

Spec: Web tools (sidecar), Bounds ("Non-text content types are refused with a pointer at bash +
curl"); requirements WEB-9 and WEB-17. Nothing here does network I/O.

* **Text types.** ``text/*``, ``application/json`` and every ``+json`` suffix,
  ``application/xml`` and every ``+xml`` suffix (so RSS, Atom and SVG sources too),
  ``application/xhtml+xml`` (converted like HTML), and a few source formats a model reads as text:
  JavaScript (``application/javascript``, ``application/ecmascript`` and their ``x-`` forms;
  ``text/javascript`` is ``text/*`` anyway), YAML, TOML and NDJSON. Anything else is refused.
* **No Content-Type.** The first bytes are sniffed, minimally, after the style of the WHATWG MIME
  Sniffing standard (section 7.1): a known binary signature (PDF, PNG, ZIP, gzip...) or a binary
  control byte refuses the body; an HTML tag at the start makes it HTML; anything else is plain
  text. So a refusal of an untyped body costs at most one read chunk.
"""

from __future__ import annotations

import codecs
import re
from typing import Final

from steerable_agent_runtime.errors import WebError

from ._charsets import UTF16_BOMS, ContentKind, choose_charset
from ._codes import WebErrorCode

__all__ = [
    "BINARY_SNIFF_BYTES",
    "SNIFF_BYTES",
    "ContentKind",
    "binary_type",
    "parse_content_type",
    "refuse_binary",
    "require_text",
    "sniff",
    "text_kind",
]

# Bytes of an untyped body looked at by the sniffer (WHATWG MIME Sniffing reads up to 1445).
SNIFF_BYTES = 1024

BINARY_SNIFF_BYTES: Final = 4096
"""Bytes of a body served as text looked at by :func:`binary_type` (WEB-17)."""

_JSON_TYPES = frozenset({"application/json", "application/x-ndjson", "application/jsonl"})
_XML_TYPES = frozenset({"application/xml", "text/xml"})
_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_OTHER_TEXT_TYPES = frozenset(
    {
        "application/javascript",
        "application/x-javascript",
        "application/ecmascript",
        "application/x-ecmascript",
        "application/yaml",
        "application/x-yaml",
        "application/toml",
    }
)


# Signatures of common binary formats (WHATWG MIME Sniffing, sections 6.1-6.3, plus PDF and ELF).
_SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"%PDF-", "application/pdf"),
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"PK\x03\x04", "application/zip"),
    (b"\x1f\x8b\x08", "application/gzip"),
    (b"BM", "image/bmp"),
    (b"OggS\x00", "application/ogg"),
    (b"ID3", "audio/mpeg"),
    (b"\x00asm", "application/wasm"),
    (b"\x7fELF", "application/x-elf"),
    (b"Rar!\x1a\x07", "application/x-rar-compressed"),
    (b"7z\xbc\xaf\x27\x1c", "application/x-7z-compressed"),
)
# The WHATWG "binary data byte": a control byte no text format uses.
_BINARY_BYTE = re.compile(rb"[\x00-\x08\x0b\x0e-\x1a\x1c-\x1f]")
# A tag a browser would take as the start of an HTML document (WHATWG MIME Sniffing, section 7.1).
_HTML_START = re.compile(
    rb"\s*<(?:!doctype\s+html|html|head|script|iframe|h1|div|font|table|a|style|title|b|body|br|p|!--)[\s>]",
    re.IGNORECASE,
)
_XML_START = re.compile(rb"\s*<\?xml\b")


def parse_content_type(value: str | None) -> tuple[str | None, dict[str, str]]:
    """Split a ``Content-Type`` header value into its media type and parameters (RFC 9110, 8.3.1).

    Args:
        value: The header value, e.g. ``'text/html; charset="UTF-8"'``, or ``None`` when absent.

    Returns:
        ``(media_type, params)``: the media type lowercased (``None`` for a missing or empty
        header) and the parameters with lowercased names and unquoted values.
    """
    if value is None:
        return None, {}
    head, _, rest = value.partition(";")
    media_type = head.strip().lower() or None
    params: dict[str, str] = {}
    for part in rest.split(";"):
        name, eq, raw = part.partition("=")
        if eq:
            params[name.strip().lower()] = raw.strip().strip('"').strip()
    return media_type, params


def text_kind(media_type: str) -> ContentKind | None:
    """How ``web_fetch`` treats a media type: ``None`` means it is not text and is refused (WEB-9).

    Args:
        media_type: A lowercased media type without parameters, e.g. ``"application/rss+xml"``.

    Returns:
        ``"html"`` (HTML and XHTML), ``"json"`` (JSON, ``+json``, NDJSON), ``"xml"`` (XML and
        ``+xml``), ``"text"`` (any other text type) or ``None``.
    """
    if media_type in _HTML_TYPES:
        return "html"
    if media_type in _JSON_TYPES or media_type.endswith("+json"):
        return "json"
    if media_type in _XML_TYPES or media_type.endswith("+xml"):
        return "xml"
    if media_type.startswith("text/") or media_type in _OTHER_TEXT_TYPES:
        return "text"
    return None


def require_text(media_type: str, url: str) -> ContentKind:
    """Return the :data:`ContentKind` of a media type, or refuse a non-text one.

    Args:
        media_type: The lowercased media type (from the header, or sniffed).
        url: The URL the body came from, named in the refusal.

    Returns:
        The kind, as :func:`text_kind` gives it.

    Raises:
        WebError: ``"unsupported_content_type"``, naming the type and pointing at bash + curl for
            binary downloads (spec: Web tools, Bounds; WEB-9). ``data`` has ``contentType``.
    """
    kind = text_kind(media_type)
    if kind is None:
        raise WebError(
            WebErrorCode.UNSUPPORTED_CONTENT_TYPE,
            f"{url} is {media_type}, not text; web_fetch reads text only. To download binary "
            f"content use the bash tool with curl (curl -L -o FILE '{url}').",
            data={"contentType": media_type},
        )
    return kind


def sniff(prefix: bytes | bytearray) -> str:
    """Guess the media type of a body served without a ``Content-Type``, from its first bytes.

    Args:
        prefix: The first bytes of the (content-decoded) body; only :data:`SNIFF_BYTES` are read.

    Returns:
        A binary signature's media type, ``"application/octet-stream"`` when a binary control byte
        appears (and no UTF-16 byte order mark explains it), ``"text/html"`` when the body starts
        with an HTML tag, ``"text/xml"`` for an XML declaration, else ``"text/plain"``.
    """
    head = prefix[:SNIFF_BYTES]
    for signature, media_type in _SIGNATURES:
        if head.startswith(signature):
            return media_type
    if head.startswith(UTF16_BOMS):
        return "text/plain"
    if _BINARY_BYTE.search(head):
        return "application/octet-stream"
    body = head.removeprefix(codecs.BOM_UTF8)
    if _HTML_START.match(body):
        return "text/html"
    if _XML_START.match(body):
        return "text/xml"
    return "text/plain"


# Signatures too short or too textual to overrule a declared text type ("BM..." and "ID3..." start
# ordinary sentences); every other one of _SIGNATURES does.
_WEAK_SIGNATURES: Final = frozenset({b"BM", b"ID3"})
# A prefix is binary when more than 1 byte in 100 is NUL, or more than 1 in 20 a binary data byte
# (text has none; compressed or random bytes about 1 in 10, a UTF-16 body about 1 in 2 NULs).
_NUL_PER_HUNDRED: Final = 1
_CONTROL_PER_TWENTY: Final = 1


def binary_type(prefix: bytes | bytearray, *, declared_charset: str | None, kind: ContentKind) -> str | None:
    """The media type of a binary body served under a text ``Content-Type``, or ``None`` for text.

    WEB-17: a PDF served as ``text/html`` or a PNG as ``application/json`` is refused as its real
    type would be, instead of decoding to thousands of U+FFFD and NUL characters. Checked, in the
    first :data:`BINARY_SNIFF_BYTES`: the magic numbers of :func:`sniff` (``%PDF-``, PNG, GIF, JPEG,
    ZIP and so docx/xlsx/jar, gzip (a body still gzipped after any declared ``Content-Encoding``),
    ELF, WebAssembly, RAR, 7z, Ogg; not the two-byte ``BM`` or ``ID3``, which start ordinary text);
    then, unless the body is UTF-16 (a byte order mark, or a UTF-16 charset: NULs are its text),
    the share of NUL bytes (over 1 %) and of other binary data bytes (over 5 %; tab, newline, form
    feed, carriage return and escape are text).

    Args:
        prefix: The first bytes of the content-decoded body (only :data:`BINARY_SNIFF_BYTES` are read).
        declared_charset: The ``charset`` parameter of the ``Content-Type``, if any.
        kind: The :data:`ContentKind` of the declared type.

    Returns:
        The binary format's media type (``"application/octet-stream"`` when only the byte counts
        say so), or ``None``.
    """
    head = bytes(prefix[:BINARY_SNIFF_BYTES])
    for signature, media_type in _SIGNATURES:
        if signature not in _WEAK_SIGNATURES and head.startswith(signature):
            return media_type
    if not head or choose_charset(declared_charset, head, kind).startswith("utf-16"):
        return None
    if head.count(0) * 100 > len(head) * _NUL_PER_HUNDRED:
        return "application/octet-stream"
    if len(_BINARY_BYTE.findall(head)) * 20 > len(head) * _CONTROL_PER_TWENTY:
        return "application/octet-stream"
    return None


def refuse_binary(
    prefix: bytes | bytearray, *, declared: str, declared_charset: str | None, kind: ContentKind, url: str
) -> None:
    """Refuse a binary body served as text, as :func:`require_text` refuses a binary type (WEB-17).

    Args:
        prefix: The first bytes of the content-decoded body.
        declared: The declared (text) media type, e.g. ``"text/html"``.
        declared_charset: Its ``charset`` parameter, if any.
        kind: Its :data:`ContentKind`.
        url: The URL the body came from, named in the refusal.

    Raises:
        WebError: ``"unsupported_content_type"`` when :func:`binary_type` finds a binary format,
            e.g. ``"<url> is application/pdf (served as text/html), not text; web_fetch reads text
            only. To download binary content use the bash tool with curl (curl -L -o FILE
            '<url>')."``; ``data`` has ``contentType`` (the sniffed type) and ``declaredType``.
    """
    found = binary_type(prefix, declared_charset=declared_charset, kind=kind)
    if found is not None:
        raise WebError(
            WebErrorCode.UNSUPPORTED_CONTENT_TYPE,
            f"{url} is {found} (served as {declared}), not text; web_fetch reads text only. To download "
            f"binary content use the bash tool with curl (curl -L -o FILE '{url}').",
            data={"contentType": found, "declaredType": declared},
        )
