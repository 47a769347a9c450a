"""Which charset a text body is decoded with, and the decoding (WHATWG Encoding Standard labels).

Spec: Web tools (sidecar), Bounds; requirement WEB-9. Everything here works on bytes the fetcher
has already bounded (``fetch_max_bytes``).

The ``Content-Type`` ``charset`` parameter; else, for HTML, a ``<meta charset>`` or ``http-equiv``
declaration in the first 4 KB (XML: the ``<?xml encoding=?>`` declaration); else a byte order mark;
else UTF-8. Only the labels of the WHATWG Encoding Standard (section 4.2, "Names and labels") are
honoured, decoded as browsers decode them (``iso-8859-1`` and ``ascii`` as ``windows-1252``,
``gb2312`` as ``gb18030``...); any other label (``utf-7``, ``punycode``, ``unicode_escape``,
``base64``, the WHATWG "replacement" labels, ``x-user-defined``) falls through to the next source.
Undecodable bytes become U+FFFD; a character cut by the byte cap is dropped. Decoding is linear in
the capped body and runs in a worker thread.
"""

from __future__ import annotations

import codecs
import re
from typing import Final, Literal

__all__ = [
    "ContentKind",
    "CHARSET_PRESCAN_BYTES",
    "UTF16_BOMS",
    "choose_charset",
    "codec_for",
    "decode_body",
    "decode_text",
]

# Bytes of the body searched for a <meta charset> or <?xml encoding?> declaration (WHATWG's
# prescan reads 1024; pages with long <head> preambles put it later, and 4 KB is still cheap).
CHARSET_PRESCAN_BYTES = 4096

ContentKind = Literal["html", "xml", "json", "text"]
"""How a text body is treated: ``html`` is converted to Markdown, the others are returned decoded."""


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
UTF16_BOMS = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)

_META_CHARSET = re.compile(rb"<meta\b[^>]*?charset\s*=\s*[\"']?\s*([A-Za-z0-9._:\-]+)", re.IGNORECASE)
_XML_ENCODING = re.compile(rb"^\s*<\?xml\b[^>]*?\bencoding\s*=\s*[\"']([A-Za-z0-9._\-]+)[\"']", re.IGNORECASE)


def codec_for(label: str) -> str | None:
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
        codec = codec_for(declared)
        if codec is not None:
            return codec
    if kind in ("html", "xml"):
        prefix = body[:CHARSET_PRESCAN_BYTES]
        patterns = (_META_CHARSET, _XML_ENCODING) if kind == "html" else (_XML_ENCODING,)
        for pattern in patterns:
            match = pattern.search(prefix)
            codec = codec_for(match.group(1).decode("ascii")) if match else None
            if codec is not None:
                return "utf-8" if codec.startswith("utf-16") and not body.startswith(UTF16_BOMS) else codec
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
