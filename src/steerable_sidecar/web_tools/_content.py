"""What ``web_fetch`` does with a body: which types it reads, how it decodes them, HTML to Markdown.

Spec: Web tools (sidecar), Bounds ("Non-text content types are refused with a pointer at bash +
curl"); requirement WEB-9. Everything here works on bytes the fetcher has already bounded
(``fetch_max_bytes``); nothing here does network I/O.

Decisions this module owns:

* **Text types.** ``text/*``, ``application/json`` and every ``+json`` suffix,
  ``application/xml`` and every ``+xml`` suffix (so RSS, Atom and SVG sources too),
  ``application/xhtml+xml`` (converted like HTML), and a few source formats a model reads as text:
  JavaScript (``application/javascript``, ``application/ecmascript`` and their ``x-`` forms;
  ``text/javascript`` is ``text/*`` anyway), YAML, TOML and NDJSON. Anything else is refused.
* **No Content-Type.** The first bytes are sniffed, minimally, after the style of the WHATWG MIME
  Sniffing standard (section 7.1): a known binary signature (PDF, PNG, ZIP, gzip...) or a binary
  control byte refuses the body; an HTML tag at the start makes it HTML; anything else is plain
  text. So a refusal of an untyped body costs at most one read chunk.
* **Charset.** The Content-Type ``charset`` parameter; else, for HTML, a ``<meta charset>`` or
  ``http-equiv`` declaration in the first 4 KB (XML: the ``<?xml encoding=?>`` declaration); else a
  byte order mark; else UTF-8. Labels map the way browsers map them (WHATWG Encoding standard:
  ``iso-8859-1`` and ``ascii`` decode as ``windows-1252``); an unknown label falls through to the
  next source. Undecodable bytes become U+FFFD; a character cut by the byte cap is dropped.
* **HTML.** Converted to Markdown by ``html-to-markdown`` in a worker thread (a 1 MB page takes
  about 30-70 ms): scripts, styles, ``<noscript>`` and ``<template>`` dropped, links (made absolute
  against the page URL) and tables kept, inline ``data:`` images reduced to their alt text.
"""

from __future__ import annotations

import asyncio
import codecs
import re
from typing import Literal

from html_to_markdown import ConversionError, ConversionOptions, convert

from steerable_agent_runtime.errors import WebError

__all__ = [
    "ContentKind",
    "choose_charset",
    "decode_text",
    "html_to_markdown",
    "markdown_from_html",
    "parse_content_type",
    "render_text",
    "require_text",
    "sniff",
    "text_kind",
]

ContentKind = Literal["html", "xml", "json", "text"]
"""How a text body is treated: ``html`` is converted to Markdown, the others are returned decoded."""

# Bytes of the body searched for a <meta charset> or <?xml encoding?> declaration (WHATWG's
# prescan reads 1024; pages with long <head> preambles put it later, and 4 KB is still cheap).
CHARSET_PRESCAN_BYTES = 4096

# Bytes of an untyped body looked at by the sniffer (WHATWG MIME Sniffing reads up to 1445).
SNIFF_BYTES = 1024

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

# Browsers decode these labels as another encoding (WHATWG Encoding standard, section 4.2 "Names and
# labels"); the rest go through Python's own codec lookup.
_LABEL_ALIASES = {
    "ascii": "cp1252",
    "us-ascii": "cp1252",
    "iso-8859-1": "cp1252",
    "iso8859-1": "cp1252",
    "latin1": "cp1252",
    "latin-1": "cp1252",
    "l1": "cp1252",
    "iso-8859-9": "cp1254",
    "latin5": "cp1254",
    "tis-620": "cp874",
    "iso-8859-11": "cp874",
    "shift_jis": "cp932",
    "sjis": "cp932",
    "x-sjis": "cp932",
    "windows-31j": "cp932",
    "euc-kr": "cp949",
    "ks_c_5601-1987": "cp949",
    "gb2312": "gb18030",
    "gbk": "gb18030",
    "x-gbk": "gb18030",
    "utf-16": "utf-16-le",
    "unicode": "utf-16-le",
}

_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_UTF16_BOMS = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)

_META_CHARSET = re.compile(rb"<meta\b[^>]*?charset\s*=\s*[\"']?\s*([A-Za-z0-9._:\-]+)", re.IGNORECASE)
_XML_ENCODING = re.compile(rb"^\s*<\?xml\b[^>]*?\bencoding\s*=\s*[\"']([A-Za-z0-9._\-]+)[\"']", re.IGNORECASE)

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
            "unsupported_content_type",
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
    if head.startswith(_UTF16_BOMS):
        return "text/plain"
    if _BINARY_BYTE.search(head):
        return "application/octet-stream"
    body = head.removeprefix(codecs.BOM_UTF8)
    if _HTML_START.match(body):
        return "text/html"
    if _XML_START.match(body):
        return "text/xml"
    return "text/plain"


def _codec_for(label: str) -> str | None:
    """Map a charset label to a Python text codec name, or ``None`` when it names no text codec."""
    name = label.strip().lower()
    name = _LABEL_ALIASES.get(name, name)
    try:
        b"a".decode(name, "ignore")  # LookupError for unknown labels and bytes-to-bytes codecs (base64)
    except (LookupError, ValueError):
        return None
    return codecs.lookup(name).name


def choose_charset(declared: str | None, body: bytes | bytearray, kind: ContentKind) -> str:
    """Choose the codec a text body is decoded with.

    Order: the ``Content-Type`` charset; else (HTML) a ``<meta charset>`` / ``http-equiv``
    declaration, or (HTML, XML) an ``<?xml encoding?>`` declaration, in the first
    :data:`CHARSET_PRESCAN_BYTES`; else a byte order mark; else UTF-8. A label no codec knows is
    skipped. A document-declared UTF-16 without a byte order mark is read as UTF-8 (a declaration
    readable as ASCII cannot be UTF-16; WHATWG HTML, "prescan a byte stream").

    Args:
        declared: The ``charset`` parameter of the ``Content-Type`` header, if any.
        body: The body bytes (only the first 4 KB are examined).
        kind: The body's :data:`ContentKind`.

    Returns:
        A Python codec name, e.g. ``"utf-8"``, ``"cp1252"``, ``"cp932"`` (Shift_JIS).
    """
    if declared:
        codec = _codec_for(declared)
        if codec is not None:
            return codec
    if kind in ("html", "xml"):
        prefix = body[:CHARSET_PRESCAN_BYTES]
        patterns = (_META_CHARSET, _XML_ENCODING) if kind == "html" else (_XML_ENCODING,)
        for pattern in patterns:
            match = pattern.search(prefix)
            codec = _codec_for(match.group(1).decode("ascii")) if match else None
            if codec is not None:
                return "utf-8" if codec.startswith("utf-16") and not body.startswith(_UTF16_BOMS) else codec
    for bom, codec in _BOMS:
        if body.startswith(bom):
            return codec
    return "utf-8"


def decode_text(body: bytes | bytearray, codec: str, *, truncated: bool) -> str:
    """Decode a body, replacing undecodable bytes with U+FFFD and dropping a leading BOM of ``codec``.

    Args:
        body: The (content-decoded, capped) body bytes.
        codec: A codec name from :func:`choose_charset`.
        truncated: ``True`` when the byte cap cut the body: a multi-byte character split by the
            cut is dropped instead of becoming U+FFFD.

    Returns:
        The text.
    """
    skip = next((len(bom) for bom, name in _BOMS if codec == name and body.startswith(bom)), 0)
    with memoryview(body) as view:  # no copy of a body that may be up to 100 MB
        text = str(codecs.decode(view[skip:], codec, "replace"))
    # A character cut by the cap decodes as one U+FFFD at the very end (Python decodes the maximal
    # incomplete subpart as a single replacement, as WHATWG and Unicode 3.9 recommend).
    return text[:-1] if truncated and text.endswith("\ufffd") else text


def markdown_from_html(html: str, base_url: str | None = None) -> str:
    """Convert an HTML document to Markdown, in the calling thread (see :func:`html_to_markdown`).

    Args:
        html: The decoded document.
        base_url: The page's URL, to resolve relative ``href`` / ``src`` against.

    Returns:
        The Markdown text; the HTML source itself should the converter fail on the document.
    """
    options = ConversionOptions(
        extract_metadata=False,
        hidden_content="drop",
        exclude_selectors=["script", "style", "noscript", "template"],
        inline_data_media="alt_text_only",
        base_url=base_url,
    )
    try:
        return convert(html, options).content or ""
    except ConversionError:
        # The converter gave up on this document; the HTML source still carries the text.
        return html


async def html_to_markdown(html: str, *, base_url: str | None = None) -> str:
    """Convert an HTML document to Markdown in a worker thread (the event loop stays free).

    Scripts, styles, ``<noscript>`` and ``<template>`` contents are dropped; links and tables are
    kept, relative links made absolute against ``base_url``; inline ``data:`` images become their
    alt text. A 1 MB page takes about 30-70 ms (``benchmarks/web_fetch.py``). Should the converter
    fail on a document, the HTML source is returned as is.

    Args:
        html: The decoded document.
        base_url: The page's URL, to resolve relative ``href`` / ``src`` against.

    Returns:
        The Markdown text.
    """
    return await asyncio.to_thread(markdown_from_html, html, base_url)


def render_text(
    body: bytes | bytearray,
    *,
    kind: ContentKind,
    declared_charset: str | None,
    truncated: bool,
    base_url: str | None,
) -> str:
    """Turn a bounded text body into what the model reads: decoded text, or Markdown for HTML.

    CPU-bound (a 1 MB HTML page takes about 30-70 ms): call it through ``asyncio.to_thread``.

    Args:
        body: The content-decoded body, at most ``fetch_max_bytes`` bytes.
        kind: Its :data:`ContentKind`.
        declared_charset: The ``Content-Type`` charset parameter, if any.
        truncated: Whether the byte cap cut the body (see :func:`decode_text`).
        base_url: The page's URL, for relative links in HTML.

    Returns:
        The text.
    """
    text = decode_text(body, choose_charset(declared_charset, body, kind), truncated=truncated)
    return markdown_from_html(text, base_url) if kind == "html" else text
