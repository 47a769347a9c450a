"""What ``web_fetch`` does with a body: which types it reads, how it decodes them, HTML to Markdown.

Spec: Web tools (sidecar), Bounds ("Non-text content types are refused with a pointer at bash +
curl"; "the byte cap bounds what a page can push into the process"); requirement WEB-9.
Everything here works on bytes the fetcher has already bounded (``fetch_max_bytes``); nothing here
does network I/O.

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
  byte order mark; else UTF-8. Only the labels of the WHATWG Encoding Standard (section 4.2, "Names
  and labels") are honoured, decoded as browsers decode them (``iso-8859-1`` and ``ascii`` as
  ``windows-1252``, ``gb2312`` as ``gb18030``...); any other label (``utf-7``, ``punycode``,
  ``unicode_escape``, ``base64``, the WHATWG "replacement" labels, ``x-user-defined``) falls
  through to the next source. Undecodable bytes become U+FFFD; a character cut by the byte cap is
  dropped. Decoding is linear in the capped body and runs in a worker thread.
* **HTML.** Converted to Markdown by ``html-to-markdown`` in a **child process**
  (:class:`HtmlConverter`), not a thread: the converter amplifies some documents far past their
  size (a 1 MB page of table rows under a ``colspan=1000`` cell renders to 375 MB; 100 KB of
  nested ``<blockquote>`` takes 6 GB), and a thread can neither be stopped at the fetch deadline
  nor held to a memory ceiling. The child parses hostile input, so it runs under the layer-2
  sandbox of ``bash`` (``docs/sandbox.md``) with no writable root, no network and the
  allowlisted environment; where no sandbox can run (and the sidecar is not confined) no child
  is started and HTML comes back as text. The child gets an address-space ceiling of
  :data:`CONVERTER_MEMORY_FLOOR` plus :data:`CONVERTER_MEMORY_PER_BYTE` times the page's UTF-8
  size (Linux ``RLIMIT_AS``; other systems get no ceiling, only the deadline) inside its
  sandbox's own limit (:func:`sandbox_memory_bytes`, also its memory cgroup), is killed with its
  sandbox when the fetch deadline passes, and its Markdown is cut at ``max_chars`` (the fetcher
  passes twice ``fetch_max_bytes``) with a marker. A page the converter cannot finish within
  those bounds is returned as its text with the markup removed (:func:`text_from_html`,
  linear), after a line saying so. Scripts, styles, ``<noscript>`` and ``<template>`` are
  dropped, links (made absolute against the page URL) and tables kept, inline ``data:`` images
  reduced to their alt text.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import json
import logging
import os
import re
import struct
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from html import unescape
from pathlib import Path
from typing import Final, Literal

from html_to_markdown import ConversionError, ConversionOptions, convert

from steerable_agent_runtime.errors import SandboxUnavailableError, WebError
from steerable_agent_runtime.sandbox import (
    ResourceLimits,
    SandboxBackend,
    SandboxConfig,
    SandboxedProcess,
    SandboxInfo,
    SandboxPolicy,
    child_environment,
    select_backend,
    spawn_sandboxed,
)

__all__ = [
    "CONVERTER_MEMORY_FLOOR",
    "CONVERTER_MEMORY_PER_BYTE",
    "BINARY_SNIFF_BYTES",
    "ContentKind",
    "HtmlConverter",
    "binary_type",
    "Rendered",
    "choose_charset",
    "decode_body",
    "decode_text",
    "markdown_from_html",
    "parse_content_type",
    "refuse_binary",
    "render_body",
    "require_text",
    "sandbox_memory_bytes",
    "sniff",
    "text_from_html",
    "text_kind",
]

logger = logging.getLogger(__name__)

ContentKind = Literal["html", "xml", "json", "text"]
"""How a text body is treated: ``html`` is converted to Markdown, the others are returned decoded."""

# Bytes of the body searched for a <meta charset> or <?xml encoding?> declaration (WHATWG's
# prescan reads 1024; pages with long <head> preambles put it later, and 4 KB is still cheap).
CHARSET_PRESCAN_BYTES = 4096

# Bytes of an untyped body looked at by the sniffer (WHATWG MIME Sniffing reads up to 1445).
SNIFF_BYTES = 1024

BINARY_SNIFF_BYTES: Final = 4096
"""Bytes of a body served as text looked at by :func:`binary_type` (WEB-17)."""

CONVERTER_MEMORY_FLOOR: Final = 64 << 20
"""Bytes of address space the converter child may add for any page (on Linux)."""

CONVERTER_MEMORY_PER_BYTE: Final = 32
"""Further bytes of address space per byte of the page's UTF-8 text. A benign 1 MB documentation
page takes about 18 MB of converter memory; 64 MB + 32 x 1 MB leaves room for denser pages."""

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


def _labels(codec: str, labels: str) -> dict[str, str]:
    return dict.fromkeys(labels.split(), codec)


# The WHATWG Encoding Standard's labels (section 4.2), each mapped to the Python codec that decodes
# its encoding as the standard does. GBK decodes as gb18030 and Big5 as big5hkscs (the standard's
# decoders are those supersets); ISO-8859-8-I is ISO-8859-8. Left out, so they fall back: the
# "replacement" labels (iso-2022-kr, iso-2022-cn, hz-gb-2312..., which the standard decodes to one
# U+FFFD) and x-user-defined (no Python codec).
_WHATWG_LABELS: Final[dict[str, str]] = {
    **_labels("utf-8", "unicode-1-1-utf-8 unicode11utf8 unicode20utf8 utf-8 utf8 x-unicode20utf8"),
    **_labels("cp866", "866 cp866 csibm866 ibm866"),
    **_labels(
        "iso8859-2",
        "csisolatin2 iso-8859-2 iso-ir-101 iso8859-2 iso88592 iso_8859-2 iso_8859-2:1987 l2 latin2",
    ),
    **_labels(
        "iso8859-3",
        "csisolatin3 iso-8859-3 iso-ir-109 iso8859-3 iso88593 iso_8859-3 iso_8859-3:1988 l3 latin3",
    ),
    **_labels(
        "iso8859-4",
        "csisolatin4 iso-8859-4 iso-ir-110 iso8859-4 iso88594 iso_8859-4 iso_8859-4:1988 l4 latin4",
    ),
    **_labels(
        "iso8859-5",
        "csisolatincyrillic cyrillic iso-8859-5 iso-ir-144 iso8859-5 iso88595 iso_8859-5 iso_8859-5:1988",
    ),
    **_labels(
        "iso8859-6",
        "arabic asmo-708 csiso88596e csiso88596i csisolatinarabic ecma-114 iso-8859-6 iso-8859-6-e "
        "iso-8859-6-i iso-ir-127 iso8859-6 iso88596 iso_8859-6 iso_8859-6:1987",
    ),
    **_labels(
        "iso8859-7",
        "csisolatingreek ecma-118 elot_928 greek greek8 iso-8859-7 iso-ir-126 iso8859-7 iso88597 "
        "iso_8859-7 iso_8859-7:1987 sun_eu_greek",
    ),
    **_labels(
        "iso8859-8",
        "csiso88598e csisolatinhebrew hebrew iso-8859-8 iso-8859-8-e iso-ir-138 iso8859-8 iso88598 "
        "iso_8859-8 iso_8859-8:1988 visual csiso88598i iso-8859-8-i logical",
    ),
    **_labels("iso8859-10", "csisolatin6 iso-8859-10 iso-ir-157 iso8859-10 iso885910 l6 latin6"),
    **_labels("iso8859-13", "iso-8859-13 iso8859-13 iso885913"),
    **_labels("iso8859-14", "iso-8859-14 iso8859-14 iso885914"),
    **_labels("iso8859-15", "csisolatin9 iso-8859-15 iso8859-15 iso885915 iso_8859-15 l9"),
    **_labels("iso8859-16", "iso-8859-16"),
    **_labels("koi8-r", "cskoi8r koi koi8 koi8-r koi8_r"),
    **_labels("koi8-u", "koi8-ru koi8-u"),
    **_labels("mac-roman", "csmacintosh mac macintosh x-mac-roman"),
    **_labels("cp874", "dos-874 iso-8859-11 iso8859-11 iso885911 tis-620 windows-874"),
    **_labels("cp1250", "cp1250 windows-1250 x-cp1250"),
    **_labels("cp1251", "cp1251 windows-1251 x-cp1251"),
    **_labels(
        "cp1252",
        "ansi_x3.4-1968 ascii cp1252 cp819 csisolatin1 ibm819 iso-8859-1 iso-ir-100 iso8859-1 iso88591 "
        "iso_8859-1 iso_8859-1:1987 l1 latin1 us-ascii windows-1252 x-cp1252",
    ),
    **_labels("cp1253", "cp1253 windows-1253 x-cp1253"),
    **_labels(
        "cp1254",
        "cp1254 csisolatin5 iso-8859-9 iso-ir-148 iso8859-9 iso88599 iso_8859-9 iso_8859-9:1989 l5 latin5 "
        "windows-1254 x-cp1254",
    ),
    **_labels("cp1255", "cp1255 windows-1255 x-cp1255"),
    **_labels("cp1256", "cp1256 windows-1256 x-cp1256"),
    **_labels("cp1257", "cp1257 windows-1257 x-cp1257"),
    **_labels("cp1258", "cp1258 windows-1258 x-cp1258"),
    **_labels("mac-cyrillic", "x-mac-cyrillic x-mac-ukrainian"),
    **_labels(
        "gb18030",
        "chinese csgb2312 csiso58gb231280 gb2312 gb_2312 gb_2312-80 gbk iso-ir-58 x-gbk gb18030",
    ),
    **_labels("big5hkscs", "big5 big5-hkscs cn-big5 csbig5 x-x-big5"),
    **_labels("euc_jp", "cseucpkdfmtjapanese euc-jp x-euc-jp"),
    **_labels("iso2022_jp", "csiso2022jp iso-2022-jp"),
    **_labels("cp932", "csshiftjis ms932 ms_kanji shift-jis shift_jis sjis windows-31j x-sjis"),
    **_labels(
        "cp949",
        "cseuckr csksc56011987 euc-kr iso-ir-149 korean ks_c_5601-1987 ks_c_5601-1989 ksc5601 ksc_5601 "
        "windows-949",
    ),
    **_labels("utf-16-be", "unicodefffe utf-16be"),
    **_labels("utf-16-le", "csunicode iso-10646-ucs-2 ucs-2 unicode unicodefeff utf-16 utf-16le"),
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
            "unsupported_content_type",
            f"{url} is {found} (served as {declared}), not text; web_fetch reads text only. To download "
            f"binary content use the bash tool with curl (curl -L -o FILE '{url}').",
            data={"contentType": found, "declaredType": declared},
        )


def _codec_for(label: str) -> str | None:
    """The Python codec for a WHATWG Encoding Standard label, or ``None`` for any other label."""
    codec = _WHATWG_LABELS.get(label.strip("\t\n\f\r ").lower())
    return None if codec is None else codecs.lookup(codec).name


def choose_charset(declared: str | None, body: bytes | bytearray, kind: ContentKind) -> str:
    """Choose the codec a text body is decoded with.

    Order: the ``Content-Type`` charset; else (HTML) a ``<meta charset>`` / ``http-equiv``
    declaration, or (HTML, XML) an ``<?xml encoding?>`` declaration, in the first
    :data:`CHARSET_PRESCAN_BYTES`; else a byte order mark; else UTF-8. A label that is not one of
    the WHATWG Encoding Standard's (``utf-7``, ``punycode``, ``base64``...) is skipped. A
    document-declared UTF-16 without a byte order mark is read as UTF-8 (a declaration readable as
    ASCII cannot be UTF-16; WHATWG HTML, "prescan a byte stream").

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


_MARKDOWN_OPTIONS: Final[dict[str, object]] = {
    "extract_metadata": False,
    "hidden_content": "drop",
    "exclude_selectors": ["script", "style", "noscript", "template"],
    "inline_data_media": "alt_text_only",
}


def markdown_from_html(html: str, base_url: str | None = None) -> str:
    """Convert an HTML document to Markdown in the calling thread, with no bound at all.

    For trusted input and measurements only: a hostile page can make this take gigabytes and
    minutes. ``web_fetch`` converts through :class:`HtmlConverter`, which bounds both.

    Args:
        html: The decoded document.
        base_url: The page's URL, to resolve relative ``href`` / ``src`` against.

    Returns:
        The Markdown text; the HTML source itself should the converter fail on the document.
    """
    options = ConversionOptions(base_url=base_url, **_MARKDOWN_OPTIONS)  # type: ignore[arg-type]
    try:
        return convert(html, options).content or ""
    except ConversionError:
        return html


# --- the plain-text fallback ----------------------------------------------------------------------

_HIDDEN_ELEMENTS: Final = ("script", "style", "noscript", "template", "title")
_HIDDEN_OPEN = re.compile(rf"<({'|'.join(_HIDDEN_ELEMENTS)})\b|<!--", re.IGNORECASE)
_HIDDEN_CLOSE = {name: re.compile(rf"</{name}\s*>", re.IGNORECASE) for name in _HIDDEN_ELEMENTS}
_BLOCK_TAG = re.compile(
    r"</?(?:p|div|br|hr|li|dt|dd|tr|td|th|h[1-6]|table|ul|ol|dl|pre|blockquote|section|article|header"
    r"|footer|nav|main|aside|figure|figcaption|details|summary|form)\b[^>]*>?",
    re.IGNORECASE,
)
_ANY_TAG = re.compile(r"<[!/?a-zA-Z][^>]*>?")
_SPACES = re.compile(r"[^\S\n]+")
_SPACED_NEWLINE = re.compile(r" ?\n ?")
_BLANK_LINES = re.compile(r"\n{3,}")
# Characters of the document handled at a time: every pass (and every object a pass makes) is
# bounded by a window, so a page of a million tiny tags costs no more than a window's worth at once.
_TEXT_WINDOW: Final = 16384


def text_from_html(html: str) -> str:
    """The text of an HTML document with the markup removed, in time and memory linear in its length.

    The fallback when the Markdown converter cannot finish a page within its bounds. Scripts,
    styles, ``<noscript>``, ``<template>``, ``<title>`` and comments are dropped (an unclosed one
    drops the rest of the document), block-level tags end a line, other tags vanish, character
    references are decoded (HTML5 rules: a surrogate becomes U+FFFD), runs of spaces become one
    and runs of blank lines one blank line. The document is handled a window of
    :data:`_TEXT_WINDOW` characters at a time (cut before a tag), so the peak beyond the input and
    the output is about one window; no regular expression here can backtrack.

    Args:
        html: The decoded document.

    Returns:
        The text.
    """
    joined: list[str] = []  # pieces of about a window or more
    pieces: list[str] = []  # the latest small pieces, joined every 256 (bounds the objects alive)
    pending = ""  # whitespace between the text so far and the next text
    for start, end in _visible_spans(html):
        for left, right in _windows(html, start, end):
            lead, core, trail = _window_text(html[left:right])
            if not core:
                pending = _join_space(pending, lead + trail)
                continue
            if joined or pieces:
                pieces.append(_join_space(pending, lead))
            pieces.append(core)
            pending = trail
            if len(pieces) >= 256:
                joined.append("".join(pieces))
                pieces.clear()
    joined.append("".join(pieces))
    return "".join(joined)


def _visible_spans(html: str) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of each stretch of ``html`` outside scripts, styles, comments..."""
    position = 0
    while (opened := _HIDDEN_OPEN.search(html, position)) is not None:
        yield position, opened.start()
        name = opened.group(1)
        if name is None:
            end = html.find("-->", opened.end())
            if end < 0:
                return
            position = end + 3
        else:
            closed = _HIDDEN_CLOSE[name.lower()].search(html, opened.end())
            if closed is None:
                return
            position = closed.end()
    yield position, len(html)


def _windows(html: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    """Cut ``html[start:end]`` into windows of about :data:`_TEXT_WINDOW`, each ending before a tag."""
    left = start
    while left < end:
        right = min(left + _TEXT_WINDOW, end)
        if right < end:
            tag = html.rfind("<", left + 1, right)
            if tag > left:
                right = tag
            elif html.startswith("<", left):  # one tag longer than a window: take it whole
                close = html.find(">", left, end)
                right = end if close < 0 else close + 1
            else:  # a long run of text: cut after a space (a character reference holds none)
                right = max(html.rfind(" ", left, right), html.rfind("\n", left, right)) + 1 or right
                right = right if right > left else min(left + _TEXT_WINDOW, end)
        yield left, right
        left = right


def _window_text(chunk: str) -> tuple[str, str, str]:
    """The text of a window as ``(leading space, text, trailing space)``, the spaces normalized."""
    text = unescape(_ANY_TAG.sub("", _BLOCK_TAG.sub("\n", chunk)))
    text = _BLANK_LINES.sub("\n\n", _SPACED_NEWLINE.sub("\n", _SPACES.sub(" ", text)))
    core = text.strip()
    if not core:
        return _join_space(text, ""), "", ""
    lead = text[: len(text) - len(text.lstrip())]
    trail = text[len(text.rstrip()) :]
    return _join_space(lead, ""), core, _join_space(trail, "")


def _join_space(first: str, second: str) -> str:
    """Two runs of whitespace as one: a blank line, a line break, a space or nothing."""
    breaks = first.count("\n") + second.count("\n")
    if breaks >= 2:
        return "\n\n"
    if breaks == 1:
        return "\n"
    return " " if first or second else ""


# --- the converter child process --------------------------------------------------------------

# The child: reads requests from stdin, answers on stdout, imports nothing but html_to_markdown and
# the standard library. Once its imports are done it writes one byte (_READY): a child that never
# does could not start (no interpreter, no package, a sandbox that failed to set up). Request: 4
# little-endian u64 (HTML bytes, base URL bytes, max_chars, memory allowance), the base URL, the
# HTML (UTF-8). Answer: a status byte (0 converted, 1 the converter refused the document, 2
# converted and cut at max_chars), a u64 size, the UTF-8 text. Before converting, it lowers its own
# soft RLIMIT_AS to its current size plus the allowance (never above the hard limit the sandbox
# set): a page that needs more makes the allocation fail, and the child dies (Rust aborts) or exits.
_CHILD_SOURCE: Final = r"""
import json, os, struct, sys
from html_to_markdown import ConversionError, ConversionOptions, convert
try:
    import resource
except ImportError:
    resource = None


def ceiling(allowance):
    if resource is None:
        return
    try:
        with open("/proc/self/statm", "rb") as statm:
            size = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        hard = resource.getrlimit(resource.RLIMIT_AS)[1]
        soft = size + allowance
        if hard != resource.RLIM_INFINITY:
            soft = min(soft, hard)
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    except (OSError, ValueError):
        pass


def main():
    options = json.loads(sys.argv[1])
    source, sink = sys.stdin.buffer, sys.stdout.buffer
    sink.write(b"R")
    sink.flush()
    while True:
        head = source.read(32)
        if len(head) < 32:
            return
        html_size, base_size, max_chars, allowance = struct.unpack("<4Q", head)
        base = source.read(base_size).decode("utf-8", "replace") if base_size else None
        html = source.read(html_size).decode("utf-8", "replace")
        ceiling(allowance)
        try:
            text, status = convert(html, ConversionOptions(base_url=base, **options)).content or "", 0
        except ConversionError:
            text, status = "", 1
        del html
        if len(text) > max_chars:
            text, status = text[:max_chars], 2
        data = text.encode("utf-8", "replace")
        del text
        sink.write(struct.pack("<BQ", status, len(data)))
        sink.write(data)
        sink.flush()


main()
"""

_READY: Final = b"R"
# Bytes written to the child per drain (bounds the copy the pipe transport buffers).
_PIPE_CHUNK: Final = 65536
# A child that converted a page larger than this (UTF-8 bytes) is not kept: its heap may stay large.
# Every kept child's sandbox is sized for a page this large; a larger page gets a child of its own.
_REUSE_MAX_BYTES: Final = 2 << 20
# Processes in a converter's sandbox (bubblewrap's two and the child, or the launcher and the
# child); the child itself is single-threaded, so it can start nothing of its own.
_CHILD_PROCESSES: Final = 4
# Bytes of the child's stderr kept (head and tail), shown when it cannot start.
_CHILD_STDERR_BYTES: Final = 4096
# Address space for the interpreter, html_to_markdown and what a warm child's heap keeps.
_CHILD_BASE_BYTES: Final = 128 << 20
_UNAVAILABLE: Final = "no layer-2 sandbox can run the converter here"


class _CannotStart(Exception):
    """A converter child did not start (already logged)."""


@dataclass(eq=False, slots=True)
class _Child:
    """One sandboxed converter child, the page size its memory limit allows, its time so far."""

    process: SandboxedProcess
    pages_up_to: int
    busy_s: float = 0.0  # wall-clock seconds spent converting: a bound on a one-thread child's CPU time

    @property
    def pid(self) -> int:
        """The pid of the process spawned for it (bubblewrap, or the launcher)."""
        return self.process.pid


def sandbox_memory_bytes(page_bytes: int, configured: int = 0) -> int:
    """The memory limit of a converter child's sandbox that serves pages up to ``page_bytes``.

    ``RLIMIT_AS`` of every process in the sandbox (the hard limit under which the child sets its
    per-page ceiling), the memory cgroup of the whole sandbox where one is writable, and the size
    of bubblewrap's ``/tmp`` and ``/dev/shm``: 128 MiB for the interpreter, five bytes per byte of
    the page (its UTF-8 and its ``str`` in the child), plus the page's converter allowance
    (:data:`CONVERTER_MEMORY_FLOOR` + :data:`CONVERTER_MEMORY_PER_BYTE` per byte).

    Args:
        page_bytes: The largest page, in UTF-8 bytes.
        configured: ``STEERABLE_SANDBOX_MEMORY_BYTES`` (0: no limit); the result never exceeds it.

    Returns:
        Bytes.
    """
    need = (
        _CHILD_BASE_BYTES + 5 * page_bytes + CONVERTER_MEMORY_FLOOR + CONVERTER_MEMORY_PER_BYTE * page_bytes
    )
    return min(need, configured) if configured else need


@dataclass(frozen=True)
class Rendered:
    """What the model reads of a body, and whether the rendering shortened or changed it.

    Attributes:
        text: The decoded text or Markdown (or, when ``fallback`` is set, the page's text), at
            most ``max_chars`` characters.
        cut: The rendered text went past ``max_chars`` and was cut there.
        fallback: Why an HTML page is not Markdown (it fell back to :func:`text_from_html`), or
            ``None``.
        max_chars: The cut point, named in the marker.
    """

    text: str
    cut: bool = False
    fallback: str | None = None
    max_chars: int = 0

    @property
    def content(self) -> str:
        """``text``, after a line saying why it is not Markdown, before a line saying where it was cut."""
        content = self.text
        if self.fallback is not None:
            content = (
                f"[web_fetch: this page could not be converted to Markdown ({self.fallback}); "
                f"its text follows]\n\n{content}"
            )
        if self.cut:
            content += f"\n\n[web_fetch: cut at {self.max_chars} characters]"
        return content


def _capped(text: str, max_chars: int, fallback: str | None = None) -> Rendered:
    if len(text) > max_chars:
        return Rendered(text[:max_chars], cut=True, fallback=fallback, max_chars=max_chars)
    return Rendered(text, fallback=fallback, max_chars=max_chars)


class HtmlConverter:
    """HTML to Markdown in a sandboxed child process held to a memory ceiling and the fetch deadline.

    The child parses hostile HTML, so it runs under the same layer-2 sandbox as ``bash`` and
    ``run_code`` (``docs/sandbox.md``): the backend is chosen once, off the event loop, by
    :func:`~steerable_agent_runtime.sandbox.select_backend` (bubblewrap, else Landlock; Seatbelt
    on macOS; the inherited layer-1 boundary under ``STEERABLE_SIDECAR_CONFINED=1``), and the
    policy has no writable root (only the run's private temporary directory), the network off
    whatever ``STEERABLE_SANDBOX_NETWORK`` says, the allowlisted environment
    (:func:`~steerable_agent_runtime.sandbox.child_environment`: no key reaches it), at most 4
    processes, ``STEERABLE_SANDBOX_CPU_SECONDS`` of CPU, and :func:`sandbox_memory_bytes` of
    memory. Under bubblewrap it cannot see the sidecar's ``/proc/<pid>/environ`` (its own PID
    namespace), write outside its ``/tmp`` tmpfs, or open a socket. **No backend** (and not
    confined): no child is started and every HTML page comes back as its text, with the fallback
    line saying so and one warning logged: the sandbox's rule is that nothing runs unconfined,
    and the converter is the part of the sidecar that parses the most hostile input.

    One child serves one conversion at a time. A conversion takes an idle child or starts one
    (``sys.executable -P -c ...`` from ``/``, importing only ``html_to_markdown``), and a child
    that finished cleanly is kept for the next one (at most ``keep_idle``, only after pages under
    2 MB, and only while its conversions took under half its CPU limit, so that a kept child never
    meets ``RLIMIT_CPU``). Before each page the child lowers its address-space ceiling to its size
    plus the page's allowance. A child that overran its ceiling, crashed or outlived the deadline
    is killed with its whole sandbox before :meth:`convert` returns. The child reads stdin until
    EOF, so it also ends when this process dies. Call :meth:`aclose` when done.

    Args:
        keep_idle: How many finished children to keep for later conversions.
        sandbox: The sandbox settings (default: :meth:`SandboxConfig.from_env` of ``environ``).
        backend: Use this backend instead of selecting one (tests, embedders with their own).
        environ: Where the settings and the child's allowlisted environment come from (default
            ``os.environ``, read at each start).

    Raises:
        ConfigError: An invalid ``STEERABLE_SANDBOX*`` or ``STEERABLE_SIDECAR_CONFINED`` value (the
            message names it), when ``sandbox`` is not given.
    """

    def __init__(
        self,
        *,
        keep_idle: int = 1,
        sandbox: SandboxConfig | None = None,
        backend: SandboxBackend | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self._config = SandboxConfig.from_env(environ) if sandbox is None else sandbox
        self._backend = backend
        self._environ = environ
        self._unavailable = False
        self._selecting = asyncio.Lock()
        self._idle: list[_Child] = []
        self._keep_idle = keep_idle
        self._closed = False
        self._warned = False

    @property
    def sandbox(self) -> SandboxInfo | None:
        """The sandbox the children run under (``bwrap``, ``full``...).

        ``None`` until the first conversion chose it, and when none can run.
        """
        return self._backend.info if self._backend is not None else None

    async def convert(self, html: str, *, base_url: str | None, max_chars: int, deadline: float) -> Rendered:
        """Convert ``html`` to Markdown within the bounds, or fall back to its text.

        Args:
            html: The decoded document (at most ``fetch_max_bytes`` characters from the fetcher).
            base_url: The page's URL, for relative links.
            max_chars: The most characters of Markdown kept; past it the text is cut (``cut``).
            deadline: ``loop.time()`` by which the conversion must end; the child is killed then.

        Returns:
            The Markdown (``cut`` when it went past ``max_chars``), or, when the converter refused
            the page, ran out of its memory ceiling, crashed, could not start, passed the deadline
            or has no sandbox to run in, :func:`text_from_html` of the page with ``fallback``
            saying why.
        """
        data = html.encode("utf-8", "replace")
        size = len(data)
        allowance = CONVERTER_MEMORY_FLOOR + CONVERTER_MEMORY_PER_BYTE * size
        child: _Child | None = None
        busy = 0.0
        try:
            async with asyncio.timeout_at(deadline):
                backend = await self._select()
                if backend is not None:
                    child = await self._take(backend, size)
                    busy = time.monotonic()
                    await _send(child.process, data, (base_url or "").encode(), max_chars, allowance)
                    del data  # only the page's text and the answer are held while the child works
                    status, answer = await _receive(child.process)
        except TimeoutError:
            await _stop(child)
            return await _fallback(html, "the conversion ran past the fetch deadline", max_chars)
        except _CannotStart:
            return await _fallback(html, "the converter could not start", max_chars)
        except (OSError, asyncio.IncompleteReadError):
            if child is None:  # failed before a child was there to take the page
                return await _fallback(html, "the converter could not start", max_chars)
            return await _fallback(html, await _died(child, size, allowance), max_chars)
        except BaseException:
            await _stop(child)
            raise
        if child is None:
            return await _fallback(html, _UNAVAILABLE, max_chars)
        child.busy_s += time.monotonic() - busy
        await self._give_back(child, reusable=size <= _REUSE_MAX_BYTES)
        if status == 1:
            return await _fallback(html, "the converter could not parse it", max_chars)
        return Rendered(answer.decode("utf-8", "replace"), cut=status == 2, max_chars=max_chars)

    async def aclose(self) -> None:
        """Stop the idle children (a conversion still running stops its child when it ends)."""
        self._closed = True
        idle, self._idle = self._idle, []
        for child in idle:
            await _stop(child)

    async def _select(self) -> SandboxBackend | None:
        """The backend, chosen on first use in a worker thread (its probes block); ``None``: none."""
        if self._backend is None and not self._unavailable:
            async with self._selecting:
                if self._backend is None and not self._unavailable:
                    try:
                        self._backend = await asyncio.to_thread(select_backend, self._config)
                    except SandboxUnavailableError as exc:
                        self._unavailable = True
                        logger.warning(
                            "web_fetch's HTML converter runs only in a layer-2 sandbox, and none can run "
                            "here: HTML pages are returned as plain text. %s",
                            exc.message,
                        )
        return self._backend

    async def _take(self, backend: SandboxBackend, size: int) -> _Child:
        if size <= _REUSE_MAX_BYTES:
            while self._idle:
                child = self._idle.pop()
                if child.process.returncode is None:
                    return child
                await _stop(child)
        pages_up_to = max(size, _REUSE_MAX_BYTES)
        limits = ResourceLimits(
            cpu_seconds=self._config.limits.cpu_seconds,
            memory_bytes=sandbox_memory_bytes(pages_up_to, self._config.limits.memory_bytes),
            max_processes=_CHILD_PROCESSES,
            max_output_bytes=_CHILD_STDERR_BYTES,
        )
        # no writable root: the child may write only the run's private temporary directory
        policy = SandboxPolicy(writable_roots=(), cwd=Path(os.path.abspath(os.sep)), limits=limits)
        argv = [sys.executable, "-P", "-c", _CHILD_SOURCE, json.dumps(_MARKDOWN_OPTIONS)]
        try:
            process = await spawn_sandboxed(
                argv,
                policy,
                backend=backend,
                env=child_environment(self._environ),
                stdin=True,
                stdout="pipe",
            )
        except (OSError, SandboxUnavailableError) as exc:
            self._warn(backend, str(exc))
            raise _CannotStart from exc
        try:
            assert process.stdout is not None
            ready = await process.stdout.readexactly(len(_READY))
        except asyncio.IncompleteReadError:
            ready = b""
        except BaseException:
            await process.close()
            raise
        if ready != _READY:
            self._warn(backend, await _why_not_started(process))
            raise _CannotStart
        return _Child(process, pages_up_to)

    async def _give_back(self, child: _Child, *, reusable: bool) -> None:
        cpu = self._config.limits.cpu_seconds
        if (
            reusable
            and not self._closed
            and len(self._idle) < self._keep_idle
            and (not cpu or child.busy_s < cpu / 2)
        ):
            self._idle.append(child)
        else:
            await _stop(child)

    def _warn(self, backend: SandboxBackend, why: str) -> None:
        if not self._warned:
            self._warned = True
            logger.warning(
                "web_fetch cannot start its HTML converter (%s -P -c ... under %s): %s; HTML pages are "
                "returned as plain text",
                sys.executable,
                backend.info.backend,
                why,
            )


async def _why_not_started(process: SandboxedProcess) -> str:
    """Reap a child that ended (or answered wrongly) before it was ready; its exit status and stderr."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(process.wait(), 1.0)
    process.kill()
    run = await process.finish()
    await process.close()
    said = run.stderr.text.strip().replace("\n", " | ")
    return f"exit status {run.exit_code}" + (f", stderr: {said}" if said else "")


async def _send(process: SandboxedProcess, data: bytes, base: bytes, max_chars: int, allowance: int) -> None:
    """Send one request to a converter child, :data:`_PIPE_CHUNK` bytes at a time."""
    stdin = process.stdin
    assert stdin is not None
    stdin.write(struct.pack("<4Q", len(data), len(base), max_chars, allowance) + base)
    with memoryview(data) as view:
        for start in range(0, len(view), _PIPE_CHUNK):
            stdin.write(view[start : start + _PIPE_CHUNK])
            await stdin.drain()
    await stdin.drain()


async def _receive(process: SandboxedProcess) -> tuple[int, bytearray]:
    """Read a converter child's answer: ``(status, UTF-8 text)``, into one buffer."""
    stdout = process.stdout
    assert stdout is not None
    status, size = struct.unpack("<BQ", await stdout.readexactly(9))
    answer = bytearray()
    while len(answer) < size:
        chunk = await stdout.read(min(size - len(answer), _PIPE_CHUNK))
        if not chunk:
            raise asyncio.IncompleteReadError(bytes(answer), size)
        answer += chunk
    return int(status), answer


async def _stop(child: _Child | None) -> None:
    """Kill a converter child's sandbox (if it still runs), reap it and clean up after it."""
    if child is not None:
        await child.process.close()


async def _died(child: _Child, size: int, allowance: int) -> str:
    """Reap a child that stopped mid-conversion; the reason shown to the model."""
    await _stop(child)
    logger.info(
        "web_fetch's HTML converter stopped (exit status %s%s) on a %d-byte page; returning the page's text",
        child.process.returncode,
        ", over its sandbox's memory limit" if child.process.memory_exceeded else "",
        size,
    )
    return (
        f"the converter stopped before finishing: a {size}-byte page may use at most "
        f"{allowance >> 20} MB of converter memory"
    )


async def _fallback(html: str, why: str, max_chars: int) -> Rendered:
    """:func:`text_from_html` of the page (in a worker thread), cut at ``max_chars``."""
    return _capped(await asyncio.to_thread(text_from_html, html), max_chars, why)


# --- rendering a body -------------------------------------------------------------------------


def decode_body(
    body: bytes | bytearray, *, kind: ContentKind, declared_charset: str | None, truncated: bool
) -> str:
    """Decode a bounded body with the charset :func:`choose_charset` picks (linear; for a thread).

    Args:
        body: The content-decoded body, at most ``fetch_max_bytes`` bytes.
        kind: Its :data:`ContentKind`.
        declared_charset: The ``Content-Type`` charset parameter, if any.
        truncated: Whether the byte cap cut the body (see :func:`decode_text`).

    Returns:
        The text (at most ``len(body)`` characters).
    """
    return decode_text(body, choose_charset(declared_charset, body, kind), truncated=truncated)


async def render_body(
    body: bytes | bytearray,
    *,
    kind: ContentKind,
    declared_charset: str | None,
    truncated: bool,
    base_url: str | None,
    max_chars: int,
    deadline: float,
    converter: HtmlConverter,
) -> Rendered:
    """Turn a bounded body into what the model reads: decoded text, or Markdown for HTML.

    Decoding runs in a worker thread (linear: about 1 ms per MB of UTF-8); HTML then goes to
    ``converter``, which holds the conversion to ``deadline`` and a memory ceiling.

    Args:
        body: The content-decoded body, at most ``fetch_max_bytes`` bytes.
        kind: Its :data:`ContentKind`.
        declared_charset: The ``Content-Type`` charset parameter, if any.
        truncated: Whether the byte cap cut the body.
        base_url: The page's URL, for relative links in HTML.
        max_chars: The most characters of rendered text kept (a marker line is added past it).
        deadline: ``loop.time()`` by which an HTML conversion must end.
        converter: The HTML converter.

    Returns:
        The :class:`Rendered` text.
    """
    text = await asyncio.to_thread(
        decode_body, body, kind=kind, declared_charset=declared_charset, truncated=truncated
    )
    if kind == "html":
        return await converter.convert(text, base_url=base_url, max_chars=max_chars, deadline=deadline)
    return _capped(text, max_chars)
