"""web_fetch's body handling: text types (WEB-9), sniffing, charsets, HTML to Markdown."""

from __future__ import annotations

import threading

import pytest
from html_to_markdown import ConversionError, ConversionOptions, convert

from steerable_agent_runtime.errors import WebError
from steerable_sidecar.web_tools import _content
from steerable_sidecar.web_tools._content import (
    choose_charset,
    decode_text,
    html_to_markdown,
    parse_content_type,
    require_text,
    sniff,
    text_kind,
)


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (None, (None, {})),
        ("", (None, {})),
        ("text/html", ("text/html", {})),
        ("Text/HTML; Charset=UTF-8", ("text/html", {"charset": "UTF-8"})),
        (
            'text/plain; charset="iso-8859-1"; format=flowed',
            ("text/plain", {"charset": "iso-8859-1", "format": "flowed"}),
        ),
        ("application/json;charset=utf-8", ("application/json", {"charset": "utf-8"})),
    ],
)
def test_parse_content_type(header: str | None, expected: tuple[str | None, dict[str, str]]) -> None:
    assert parse_content_type(header) == expected


@pytest.mark.parametrize(
    ("media_type", "kind"),
    [
        ("text/html", "html"),
        ("application/xhtml+xml", "html"),
        ("text/plain", "text"),
        ("text/markdown", "text"),
        ("text/css", "text"),
        ("text/javascript", "text"),
        ("text/csv", "text"),
        ("application/json", "json"),
        ("application/ld+json", "json"),
        ("application/problem+json", "json"),
        ("application/x-ndjson", "json"),
        ("application/xml", "xml"),
        ("text/xml", "xml"),
        ("application/rss+xml", "xml"),
        ("application/atom+xml", "xml"),
        ("image/svg+xml", "xml"),
        ("application/javascript", "text"),
        ("application/x-javascript", "text"),
        ("application/ecmascript", "text"),
        ("application/yaml", "text"),
        ("application/toml", "text"),
        ("application/pdf", None),
        ("application/octet-stream", None),
        ("image/png", None),
        ("application/zip", None),
        ("video/mp4", None),
        ("application/x-www-form-urlencoded", None),
        ("multipart/form-data", None),
        ("application/vnd.ms-excel", None),
    ],
)
def test_text_kind_table_WEB_9(media_type: str, kind: str | None) -> None:
    assert text_kind(media_type) == kind


def test_require_text_refuses_binary_with_a_pointer_at_bash_and_curl_WEB_9() -> None:
    with pytest.raises(WebError) as caught:
        require_text("application/pdf", "https://docs.example.com/manual.pdf")
    assert caught.value.code == "unsupported_content_type"
    assert caught.value.error == (
        "https://docs.example.com/manual.pdf is application/pdf, not text; web_fetch reads text only. "
        "To download binary content use the bash tool with curl (curl -L -o FILE 'https://docs.example.com/manual.pdf')."
    )
    assert caught.value.data == {"code": "unsupported_content_type", "contentType": "application/pdf"}


def test_require_text_returns_the_kind() -> None:
    assert require_text("application/xhtml+xml", "https://x.example/") == "html"


@pytest.mark.parametrize(
    ("prefix", "media_type"),
    [
        (b"%PDF-1.7\n%\xe2\xe3", "application/pdf"),
        (b"\x89PNG\r\n\x1a\n\x00\x00", "image/png"),
        (b"GIF89a\x01\x00", "image/gif"),
        (b"\xff\xd8\xff\xe0\x00\x10JFIF", "image/jpeg"),
        (b"PK\x03\x04\x14\x00", "application/zip"),
        (b"\x1f\x8b\x08\x00\x00\x00", "application/gzip"),
        (b"\x7fELF\x02\x01", "application/x-elf"),
        (b"hello\x00world", "application/octet-stream"),
        (b"abc\x01def", "application/octet-stream"),
        (b"<!DOCTYPE html><html><p>x</p></html>", "text/html"),
        (b"\n  <html lang=en>", "text/html"),
        (b"<!-- comment --><p>x", "text/html"),
        (b"\xef\xbb\xbf<html>", "text/html"),
        (b"<?xml version='1.0'?><feed/>", "text/xml"),
        (b"# README\n\nplain text, tabs\tand form feeds\x0c are text", "text/plain"),
        (b"\xff\xfeh\x00i\x00", "text/plain"),
        (b"<htmlish>not a tag a browser knows", "text/plain"),
        (b"", "text/plain"),
    ],
)
def test_sniff_an_untyped_body(prefix: bytes, media_type: str) -> None:
    assert sniff(prefix) == media_type


@pytest.mark.parametrize(
    ("declared", "body", "kind", "codec"),
    [
        ("utf-8", b"<meta charset=shift_jis>", "html", "utf-8"),
        ("ISO-8859-1", b"abc", "text", "cp1252"),
        ("us-ascii", b"abc", "text", "cp1252"),
        ("shift_jis", b"abc", "text", "cp932"),
        ("gb2312", b"abc", "text", "gb18030"),
        ("koi8-r", b"abc", "text", "koi8-r"),
        ("no-such-charset", b"\xef\xbb\xbfabc", "text", "utf-8"),
        ("base64", b"abc", "text", "utf-8"),
        ("rot13", b"abc", "text", "utf-8"),
        (None, b'<html><head><meta charset="windows-1251"></head>', "html", "cp1251"),
        (None, b"<html><head><meta charset=euc-jp>", "html", "euc_jp"),
        (
            None,
            b'<html><head><meta http-equiv="Content-Type" content="text/html; charset=ISO-8859-2">',
            "html",
            "iso8859-2",
        ),
        (None, b"<html><meta charset='utf-16'><p>x", "html", "utf-8"),
        (None, b"<html><meta charset=bogus><p>x", "html", "utf-8"),
        (None, b'<?xml version="1.0" encoding="ISO-8859-15"?><rss/>', "xml", "iso8859-15"),
        (None, b'<?xml version="1.0" encoding="windows-1250"?><html/>', "html", "cp1250"),
        (None, b'<p>x</p><meta charset="cp1251">', "text", "utf-8"),
        (None, b"\xff\xfe<\x00p\x00>\x00", "html", "utf-16-le"),
        (None, b"\xfe\xff\x00<\x00p", "text", "utf-16-be"),
        (None, b"\xef\xbb\xbfhello", "text", "utf-8"),
        (None, b"plain", "text", "utf-8"),
        (None, b"{}", "json", "utf-8"),
    ],
)
def test_choose_charset(declared: str | None, body: bytes, kind: _content.ContentKind, codec: str) -> None:
    assert choose_charset(declared, body, kind) == codec


def test_meta_charset_is_read_only_in_the_first_4_kb() -> None:
    late = b"<html><head>" + b" " * 4096 + b'<meta charset="windows-1251">'
    assert choose_charset(None, late, "html") == "utf-8"
    early = b"<html><head>" + b" " * 4000 + b'<meta charset="windows-1251">'
    assert choose_charset(None, early, "html") == "cp1251"


def test_decode_replaces_undecodable_bytes_and_strips_the_bom() -> None:
    assert decode_text(b"\xef\xbb\xbfcaf\xc3\xa9 \xff!", "utf-8", truncated=False) == "café \ufffd!"
    assert decode_text(b"\xff\xfeh\x00i\x00", "utf-16-le", truncated=False) == "hi"
    assert decode_text(b"\x93quoted\x94", "cp1252", truncated=False) == "\u201cquoted\u201d"


def test_decode_drops_a_character_cut_by_the_cap_only_when_truncated() -> None:
    cut = "né€".encode()[:-1]  # the euro sign's last byte is past the cap
    assert decode_text(cut, "utf-8", truncated=True) == "né"
    assert decode_text(cut, "utf-8", truncated=False) == "né\ufffd"


PAGE = """<!doctype html><html><head><title>Guide</title>
<style>body { color: STYLETEXT; }</style>
<script>var leaked = "SCRIPTTEXT";</script>
</head><body>
<h1>Install</h1>
<p>Read <a href="/docs/setup">the setup page</a> first.</p>
<noscript>NOSCRIPTTEXT</noscript>
<template><p>TEMPLATETEXT</p></template>
<table><tr><th>Option</th><th>Default</th></tr><tr><td>timeout</td><td>30 s</td></tr></table>
<img src="data:image/png;base64,iVBORw0KGgo=" alt="diagram">
<script type="module">import("SCRIPTTEXT2")</script>
</body></html>"""


async def test_html_to_markdown_keeps_links_and_tables_and_drops_scripts_WEB_9() -> None:
    markdown = await html_to_markdown(PAGE, base_url="https://docs.example.com/guide/")
    assert markdown == (
        "# Install\n\n"
        "Read [the setup page](https://docs.example.com/docs/setup) first.\n\n"
        "| Option  | Default |\n"
        "| ------- | ------- |\n"
        "| timeout | 30 s    |\n\n"
        "diagram\n"
    )
    for hidden in ("SCRIPTTEXT", "STYLETEXT", "NOSCRIPTTEXT", "TEMPLATETEXT", "base64", "<script"):
        assert hidden not in markdown


async def test_html_to_markdown_runs_off_the_event_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    threads: list[threading.Thread] = []

    def recording(html: str, options: ConversionOptions) -> object:
        threads.append(threading.current_thread())
        return convert(html, options)

    monkeypatch.setattr(_content, "convert", recording)
    assert await html_to_markdown("<p>hi</p>") == "hi\n"
    assert threads and threads[0] is not threading.main_thread()


async def test_html_to_markdown_falls_back_to_the_source_when_the_converter_fails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def failing(html: str, options: ConversionOptions) -> object:
        raise ConversionError("parser gave up")

    monkeypatch.setattr(_content, "convert", failing)
    assert await html_to_markdown("<p>kept</p>") == "<p>kept</p>"
