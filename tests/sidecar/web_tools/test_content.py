"""web_fetch's body handling: text types (WEB-9), sniffing, charsets, HTML to Markdown in a bounded child."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from html_to_markdown import ConversionError, ConversionOptions
from hypothesis import given, settings
from hypothesis import strategies as st

from steerable_agent_runtime.errors import WebError
from steerable_agent_runtime.sandbox import (
    CHILD_ENV_ALLOWLIST,
    INHERITED,
    BubblewrapBackend,
    LandlockBackend,
    ResourceLimits,
    SandboxBackend,
    SandboxConfig,
    SandboxInfo,
)
from steerable_sidecar.web_tools import _charsets, _converter, _html, _media_types
from steerable_sidecar.web_tools._charsets import choose_charset, decode_text
from steerable_sidecar.web_tools._content import render_body
from steerable_sidecar.web_tools._converter import HtmlConverter, Rendered, sandbox_memory_bytes
from steerable_sidecar.web_tools._html import markdown_from_html, text_from_html
from steerable_sidecar.web_tools._media_types import parse_content_type, require_text, sniff, text_kind
from waiting import eventually


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
        # Only WHATWG Encoding Standard labels: Python-only codecs fall through to the next source.
        ("punycode", b"caf\xc3\xa9", "text", "utf-8"),
        ("utf-7", b"hi +2AA- there", "html", "utf-8"),
        ("unicode_escape", b'{"a": "\\ud800"}', "json", "utf-8"),
        ("raw_unicode_escape", b"abc", "text", "utf-8"),
        ("idna", b"abc", "text", "utf-8"),
        ("utf-32", b"abc", "text", "utf-8"),
        ("iso-2022-kr", b"abc", "text", "utf-8"),  # a WHATWG "replacement" label
        ("x-user-defined", b"abc", "text", "utf-8"),
        ("punycode", b"\xff\xfeh\x00", "text", "utf-16-le"),  # falls through to the BOM
        # WHATWG labels, as browsers decode them.
        ("  Latin2\t", b"abc", "text", "iso8859-2"),
        ("x-mac-cyrillic", b"abc", "text", "mac-cyrillic"),
        ("big5", b"abc", "text", "big5hkscs"),
        ("ks_c_5601-1987", b"abc", "text", "cp949"),
        ("utf-16be", b"abc", "text", "utf-16-be"),
        ("iso-8859-8-i", b"abc", "text", "iso8859-8"),
        ("unicode-1-1-utf-8", b"abc", "text", "utf-8"),
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
        (None, b"<html><meta charset=punycode><p>caf\xc3\xa9", "html", "utf-8"),
        (None, b'<?xml version="1.0" encoding="utf-7"?><x/>', "xml", "utf-8"),
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
def test_choose_charset(
    declared: str | None, body: bytes, kind: _media_types.ContentKind, codec: str
) -> None:
    assert choose_charset(declared, body, kind) == codec


@settings(max_examples=300)
@given(st.sampled_from(sorted(_charsets._WHATWG_LABELS)), st.binary(max_size=64), st.booleans())
def test_every_whatwg_label_decodes_any_bytes_to_valid_text(label: str, body: bytes, truncated: bool) -> None:
    """No label a server may send makes decoding raise or yield text JSON cannot carry as UTF-8."""
    codec = choose_charset(label, body, "text")
    text = decode_text(body, codec, truncated=truncated)
    text.encode("utf-8")  # no lone surrogate


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


def bwrap_or_fail(name: str = "bwrap") -> SandboxBackend:
    """The real backend called ``name``; the test fails, naming the fix, when it cannot run here."""
    backend: SandboxBackend = BubblewrapBackend() if name == "bwrap" else LandlockBackend()
    reason = backend.unavailable_reason()
    if reason is not None:
        pytest.fail(f"the {name} backend cannot run here ({reason}); .ci/run installs bubblewrap")
    return backend


@pytest.fixture
async def converter() -> AsyncIterator[HtmlConverter]:
    made = HtmlConverter(sandbox=SandboxConfig())  # auto: bubblewrap here, whatever the environment says
    try:
        yield made
    finally:
        await made.aclose()


def later(seconds: float = 30.0) -> float:
    return asyncio.get_running_loop().time() + seconds


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def running_with(marker: str) -> list[int]:
    """Pids of the processes (anywhere on the host) whose command line holds ``marker``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in cmdline:
                found.append(int(entry))
    return found


async def test_html_to_markdown_keeps_links_and_tables_and_drops_scripts_WEB_9(
    converter: HtmlConverter,
) -> None:
    rendered = await converter.convert(
        PAGE, base_url="https://docs.example.com/guide/", max_chars=10_000, deadline=later()
    )
    assert rendered == Rendered(
        "# Install\n\n"
        "Read [the setup page](https://docs.example.com/docs/setup) first.\n\n"
        "| Option  | Default |\n"
        "| ------- | ------- |\n"
        "| timeout | 30 s    |\n\n"
        "diagram\n",
        max_chars=10_000,
    )
    for hidden in ("SCRIPTTEXT", "STYLETEXT", "NOSCRIPTTEXT", "TEMPLATETEXT", "base64", "<script"):
        assert hidden not in rendered.content
    assert rendered.text == markdown_from_html(PAGE, "https://docs.example.com/guide/")


async def test_the_conversion_runs_in_a_child_that_is_kept_and_closed(converter: HtmlConverter) -> None:
    assert (
        await converter.convert("<p>one</p>", base_url=None, max_chars=100, deadline=later())
    ).text == "one\n"
    [child] = converter._idle
    assert child.pid != os.getpid()
    assert (
        await converter.convert("<p>two</p>", base_url=None, max_chars=100, deadline=later())
    ).text == "two\n"
    assert [c.pid for c in converter._idle] == [child.pid]  # the same child served both
    await converter.aclose()
    assert converter._idle == [] and gone(child.pid)


async def test_a_page_over_2_mb_gets_a_child_of_its_own_that_is_not_kept(converter: HtmlConverter) -> None:
    await converter.convert("<p>small</p>", base_url=None, max_chars=100, deadline=later())
    [kept] = converter._idle
    big = "<p>" + "word " * 500_000 + "</p>"  # 2.5 MB
    rendered = await converter.convert(big, base_url=None, max_chars=10, deadline=later())
    assert rendered.cut and rendered.fallback is None
    assert converter._idle == [kept]  # the big page did not take (or replace) the kept child


async def test_a_child_near_its_cpu_limit_is_not_kept() -> None:
    converter = HtmlConverter(sandbox=SandboxConfig(limits=ResourceLimits(cpu_seconds=10)))
    try:
        await converter.convert("<p>one</p>", base_url=None, max_chars=100, deadline=later())
        [child] = converter._idle
        child.busy_s = 5.0  # its conversions so far took half of RLIMIT_CPU
        await converter.convert("<p>two</p>", base_url=None, max_chars=100, deadline=later())
        assert converter._idle == []  # past half: stopped rather than kept until SIGXCPU
        assert gone(child.pid)
    finally:
        await converter.aclose()


async def test_concurrent_conversions_each_get_a_child(converter: HtmlConverter) -> None:
    pages = [f"<h2>page {n}</h2>" for n in range(3)]
    results = await asyncio.gather(
        *(converter.convert(page, base_url=None, max_chars=100, deadline=later()) for page in pages)
    )
    assert [r.text for r in results] == [f"## page {n}\n" for n in range(3)]
    assert len(converter._idle) == 1  # one kept, the others stopped


@pytest.mark.skipif(sys.platform != "linux", reason="the memory ceiling is RLIMIT_AS with /proc (Linux)")
@pytest.mark.parametrize(
    ("name", "page", "base_url"),
    [
        # A colspan=1000 first row pads every later row to 1000 cells: 1 MB renders to 375 MB.
        ("colspan", '<table><tr><td colspan="1000">x</td></tr>' + "<tr><td>" * 124_990 + "</table>", None),
        # Empty relative links against a 2 KB base URL: 126x.
        ("links", '<a href="">x</a>' * 62_500, "http://docs.example.com/" + "a" * 2000),
        # Nested blockquotes: 100 KB of them took 6 GB and 13 s in the converter.
        ("blockquotes", "<blockquote>" * 400 + "x<br>" * 20_000, None),
    ],
)
async def test_an_amplifying_page_falls_back_to_its_text_within_the_memory_ceiling(
    converter: HtmlConverter, name: str, page: str, base_url: str | None
) -> None:
    start = time.monotonic()
    rendered = await converter.convert(page, base_url=base_url, max_chars=2_000_000, deadline=later())
    assert time.monotonic() - start < 6.0  # stopped at the ceiling: the blockquotes took 13 s without it
    size = len(page)
    ceiling = (_converter.CONVERTER_MEMORY_FLOOR + _converter.CONVERTER_MEMORY_PER_BYTE * size) >> 20
    assert rendered.fallback == (
        f"the converter stopped before finishing: a {size}-byte page may use at most {ceiling} MB of converter memory"
    )
    assert rendered.text == text_from_html(page) and not rendered.cut
    assert rendered.content.startswith(
        f"[web_fetch: this page could not be converted to Markdown ({rendered.fallback}); its text follows]\n\n"
    )
    assert converter._idle == []  # the child that ran out was not kept


async def test_markdown_past_max_chars_is_cut_with_a_marker(converter: HtmlConverter) -> None:
    page = "<pre>" + "`" * 50_000 + "</pre>"  # renders to about 3x its size
    rendered = await converter.convert(page, base_url=None, max_chars=20_000, deadline=later())
    assert rendered.cut and rendered.fallback is None
    assert len(rendered.text) == 20_000 and rendered.text.startswith("````")
    assert rendered.content == rendered.text + "\n\n[web_fetch: cut at 20000 characters]"


SLEEPER = r"""
import sys, time
# slow-converter-marker
sys.stdout.buffer.write(b"R")
sys.stdout.buffer.flush()
sys.stdin.buffer.read(32)
time.sleep(60)
"""


@pytest.mark.skipif(sys.platform != "linux", reason="looks for the child in /proc")
async def test_a_conversion_past_the_deadline_kills_the_child(
    converter: HtmlConverter, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = f"slow-converter-{os.getpid()}-{time.monotonic_ns()}"
    monkeypatch.setattr(_converter, "_CHILD_SOURCE", SLEEPER.replace("slow-converter-marker", marker))
    start = time.monotonic()
    convert = asyncio.ensure_future(
        converter.convert("<p>a <b>slow</b> page</p>", base_url=None, max_chars=100, deadline=later(1.0))
    )
    await eventually(lambda: running_with(marker) or convert.done(), what="the slow converter child running")
    assert running_with(marker) != []  # the child runs (in its sandbox) until the deadline...
    rendered = await convert
    assert 0.9 < time.monotonic() - start < 10.0  # at the 1 s deadline: the child alone sleeps 60 s
    assert rendered == Rendered(
        "a slow page", fallback="the conversion ran past the fetch deadline", max_chars=100
    )
    assert running_with(marker) == []  # ...and is gone, with its sandbox, when convert returns
    assert converter._idle == []


ENV_DUMP = r"""
import json, os, struct, sys
sys.stdout.buffer.write(b"R")
sys.stdout.buffer.flush()
sys.stdin.buffer.read(32)
data = json.dumps(sorted(os.environ)).encode()
sys.stdout.buffer.write(struct.pack("<BQ", 0, len(data)) + data)
sys.stdout.buffer.flush()
"""


async def test_the_child_gets_no_secret_from_the_environment(
    converter: HtmlConverter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STEERABLE_API_KEY", "sk-secret")
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-secret")
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    monkeypatch.setattr(_converter, "_CHILD_SOURCE", ENV_DUMP)
    rendered = await converter.convert("<p>x</p>", base_url=None, max_chars=10_000, deadline=later())
    names = set(json.loads(rendered.text))
    assert "LC_ALL" in names and "PATH" in names
    assert "STEERABLE_API_KEY" not in names and "TAVILY_API_KEY" not in names
    # the sandbox's allowlist (the interpreter may add LC_CTYPE, bubblewrap sets PWD to "/")
    assert names <= {*CHILD_ENV_ALLOWLIST, "PYTHONDONTWRITEBYTECODE", "LC_ALL", "LC_CTYPE", "PWD"}


async def test_a_converter_that_cannot_start_falls_back_and_warns_once(
    converter: HtmlConverter, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(sys, "executable", "/nonexistent/python")
    with caplog.at_level(logging.WARNING, logger=_converter.__name__):
        for _ in range(2):
            rendered = await converter.convert("<p>kept</p>", base_url=None, max_chars=100, deadline=later())
            assert (rendered.text, rendered.fallback) == ("kept", "the converter could not start")
    [record] = caplog.records
    backend = converter.sandbox.backend if converter.sandbox is not None else "?"
    assert record.getMessage().startswith(
        f"web_fetch cannot start its HTML converter (/nonexistent/python -P -c ... under {backend}): exit status "
    )
    assert "/nonexistent/python" in record.getMessage().split("exit status", 1)[1]  # the sandbox's own error
    assert converter._idle == []


REFUSER = r"""
import struct, sys
sys.stdout.buffer.write(b"R")
sys.stdout.buffer.flush()
head = sys.stdin.buffer.read(32)
size, base, _, _ = struct.unpack("<4Q", head)
sys.stdin.buffer.read(size + base)
sys.stdout.buffer.write(struct.pack("<BQ", 1, 0))
sys.stdout.buffer.flush()
"""


async def test_a_document_the_converter_refuses_falls_back_to_its_text(
    converter: HtmlConverter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_converter, "_CHILD_SOURCE", REFUSER)
    rendered = await converter.convert(
        "<p>kept &amp; shown</p>", base_url=None, max_chars=100, deadline=later()
    )
    assert (rendered.text, rendered.fallback) == ("kept & shown", "the converter could not parse it")


# --- the converter's sandbox ------------------------------------------------------------------

# What an exploited converter could try: runs in place of the converter, under the same sandbox,
# and answers with what each attempt gave. The "page" it is sent is a JSON object of targets.
ATTACKER = r"""
import json, os, resource, socket, struct, sys, time
sys.stdout.buffer.write(b"R")
sys.stdout.buffer.flush()
size, base, _, _ = struct.unpack("<4Q", sys.stdin.buffer.read(32))
sys.stdin.buffer.read(base)
ask = json.loads(sys.stdin.buffer.read(size))


def attempt(action):
    try:
        return "done: " + repr(action())[:300]
    except OSError as exc:
        return type(exc).__name__


def fork_many():
    forked = 0
    for _ in range(8):
        if os.fork() == 0:
            time.sleep(30)
            os._exit(0)
        forked += 1
    return forked


out = {
    "sidecar_environ": attempt(lambda: open(f"/proc/{ask['sidecar']}/environ", "rb").read()),
    "canary": os.environ.get(ask["canary"]),
    "write_host_tmp": attempt(lambda: open(ask["host_tmp"], "w").write("planted")),
    "write_beside_tests": attempt(lambda: open(ask["beside_tests"], "w").write("planted")),
    "tcp": attempt(lambda: socket.create_connection(("127.0.0.1", ask["port"]), timeout=2)),
    "udp": attempt(lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM)),
    "unix": attempt(lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)),
    "fork": attempt(fork_many),
    "as_hard": resource.getrlimit(resource.RLIMIT_AS)[1],
    "tmp": attempt(lambda: open(os.path.join(os.environ["TMPDIR"], "scratch"), "w").write("ok")),
}
data = json.dumps(out).encode()
sys.stdout.buffer.write(struct.pack("<BQ", 0, len(data)) + data)
sys.stdout.buffer.flush()
"""


@pytest.mark.skipif(sys.platform != "linux", reason="the Linux backends (bubblewrap, Landlock)")
@pytest.mark.parametrize("backend_name", ["bwrap", "landlock"])
async def test_an_exploited_converter_cannot_read_secrets_write_or_reach_the_network(
    backend_name: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    backend = bwrap_or_fail(backend_name)
    canary = "STEERABLE_CONVERTER_CANARY"
    monkeypatch.setenv(canary, "canary-value-31337")
    monkeypatch.setattr(_converter, "_CHILD_SOURCE", ATTACKER)
    host_tmp = tmp_path / "planted"  # the host's /tmp: hidden by bubblewrap's own, read-only under Landlock
    # beside steerable's own code: bound back read-only even when the checkout is under /tmp
    beside_tests = Path(_converter.__file__).with_name(f"planted-{os.getpid()}")
    listener = socket.create_server(("127.0.0.1", 0))
    converter = HtmlConverter(sandbox=SandboxConfig(network=True), backend=backend)  # network: still off
    try:
        ask = {
            "sidecar": os.getpid(),
            "canary": canary,
            "host_tmp": str(host_tmp),
            "beside_tests": str(beside_tests),
            "port": listener.getsockname()[1],
        }
        rendered = await converter.convert(json.dumps(ask), base_url=None, max_chars=10**6, deadline=later())
        assert rendered.fallback is None, rendered.fallback
        seen = json.loads(rendered.text)
    finally:
        await converter.aclose()
        listener.close()
        planted = [path for path in (host_tmp, beside_tests) if path.exists()]
        beside_tests.unlink(missing_ok=True)  # only there if the sandbox let it through
    assert converter.sandbox == backend.info
    assert seen["sidecar_environ"] in {"FileNotFoundError", "PermissionError"}  # hidden, or refused
    assert seen["canary"] is None
    assert seen["write_host_tmp"] in {"FileNotFoundError", "PermissionError"}  # not there, or refused
    assert seen["write_beside_tests"] in {"OSError", "PermissionError"}  # EROFS, or refused by Landlock
    assert planted == []
    assert (seen["tcp"], seen["udp"], seen["unix"]) == ("PermissionError",) * 3  # the socket filter
    assert seen["fork"] == "BlockingIOError"  # at most 4 processes in the sandbox, this one included
    assert seen["as_hard"] == sandbox_memory_bytes(2 << 20)  # sized for the largest page a kept child serves
    assert seen["tmp"] == "done: 2"  # its private temporary directory is writable


@pytest.mark.skipif(sys.platform != "linux", reason="bubblewrap")
async def test_the_real_converter_child_runs_in_bubblewrap_namespaces_without_the_sidecar_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    backend = bwrap_or_fail()
    monkeypatch.setenv("STEERABLE_API_KEY", "sk-canary-4242")
    converter = HtmlConverter(sandbox=SandboxConfig())
    try:
        rendered = await converter.convert("<h1>real</h1>", base_url=None, max_chars=100, deadline=later())
        assert rendered == Rendered("# real\n", max_chars=100)
        assert converter.sandbox == backend.info == SandboxInfo("bwrap", "full")
        [child] = converter._idle
        [python] = [pid for pid in descendants(child.pid) if cmdline(pid).startswith(sys.executable.encode())]
        for namespace in (
            "pid",
            "net",
            "mnt",
            "user",
        ):  # its own: other processes and the network out of sight
            assert os.readlink(f"/proc/{python}/ns/{namespace}") != os.readlink(f"/proc/self/ns/{namespace}")
        status = Path(f"/proc/{python}/status").read_text()
        assert "\nSeccomp:\t2\n" in status and "\nCapEff:\t0000000000000000\n" in status
        environ = Path(f"/proc/{python}/environ").read_bytes()
        assert b"sk-canary-4242" not in environ and b"STEERABLE_API_KEY" not in environ
        assert Path(f"/proc/{python}/cwd").resolve() == Path("/")
    finally:
        await converter.aclose()


def cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def descendants(root: int) -> list[int]:
    """Every process under ``root`` (host pids), from ``/proc/*/stat``."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            children.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(entry))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


async def test_without_a_sandbox_html_comes_back_as_text_and_no_child_runs(
    caplog: pytest.LogCaptureFixture,
) -> None:
    converter = HtmlConverter(sandbox=SandboxConfig(backend="none"))
    try:
        with caplog.at_level(logging.WARNING, logger=_converter.__name__):
            for _ in range(2):
                rendered = await converter.convert(
                    "<p>plain <b>text</b></p>", base_url=None, max_chars=100, deadline=later()
                )
                assert rendered == Rendered(
                    "plain text", fallback="no layer-2 sandbox can run the converter here", max_chars=100
                )
        assert rendered.content == (
            "[web_fetch: this page could not be converted to Markdown (no layer-2 sandbox can run the "
            "converter here); its text follows]\n\nplain text"
        )
        assert converter.sandbox is None and converter._idle == []
        [record] = caplog.records  # selected once, warned once
        assert record.getMessage().startswith(
            "web_fetch's HTML converter runs only in a layer-2 sandbox, and none can run here: HTML pages "
            "are returned as plain text. STEERABLE_SANDBOX=none allows no sandbox backend"
        )
    finally:
        await converter.aclose()


async def test_a_confined_sidecar_runs_the_converter_inside_its_layer_1_boundary() -> None:
    converter = HtmlConverter(sandbox=SandboxConfig(confined=True, backend="none"))
    try:
        rendered = await converter.convert(
            "<h2>inherited</h2>", base_url=None, max_chars=100, deadline=later()
        )
        assert rendered == Rendered("## inherited\n", max_chars=100)
        assert converter.sandbox == INHERITED == SandboxInfo("inherited", "partial", "layer1")
    finally:
        await converter.aclose()


def test_the_sandbox_memory_limit_covers_the_page_and_its_allowance() -> None:
    page = 2 << 20
    allowance = _converter.CONVERTER_MEMORY_FLOOR + _converter.CONVERTER_MEMORY_PER_BYTE * page
    assert sandbox_memory_bytes(page) == (128 << 20) + 5 * page + allowance == 266 << 20
    assert (
        sandbox_memory_bytes(page, configured=200 << 20) == 200 << 20
    )  # STEERABLE_SANDBOX_MEMORY_BYTES wins


def test_markdown_from_html_falls_back_to_the_source_when_the_converter_fails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def failing(html: str, options: ConversionOptions) -> object:
        raise ConversionError("parser gave up")

    monkeypatch.setattr(_html, "convert", failing)
    assert markdown_from_html("<p>kept</p>") == "<p>kept</p>"


@pytest.mark.parametrize(
    ("html", "text"),
    [
        ("<p>Hi <b>there</b></p><p>next</p>", "Hi there\n\nnext"),
        ("<title>T</title><script>x()</script><style>p{}</style>body<!-- note -->", "body"),
        ("<SCRIPT type=x>a</script >b<noscript>n</NOSCRIPT>c", "bc"),
        ("a<br>b<br/>c<hr>d", "a\nb\nc\nd"),
        ("<ul><li>one<li>two</ul>", "one\ntwo"),
        ("x &lt;y&gt; &amp;&#x41;&#xd800;&nbsp;z", "x <y> &A\ufffd z"),
        ("a\n\n\n\n<div></div>\n\nb", "a\n\nb"),
        ("  spaced   out  ", "spaced out"),
        ("text <script>never closed", "text"),
        ("text <!-- never closed", "text"),
        ("a <b unclosed tag", "a"),
        ("5 < 6 and 7 > 2", "5 < 6 and 7 > 2"),
    ],
)
def test_text_from_html(html: str, text: str) -> None:
    assert text_from_html(html) == text


@pytest.mark.parametrize(
    "page",
    [
        "<script" * 200_000,
        "<!--" * 250_000,
        "<a" * 500_000,
        "<p " + "x" * 1_000_000,
        "</div" * 200_000,
        "&" * 1_000_000,
    ],
    ids=[
        "unclosed-scripts",
        "unclosed-comments",
        "unclosed-tags",
        "one-long-tag",
        "unclosed-end-tags",
        "ampersands",
    ],
)
def test_text_from_html_is_linear_on_hostile_input(page: str) -> None:
    # each is read through; that this is linear (about 50 ms each, where a quadratic pass would take
    # minutes) is a speed goal, measured by benchmarks/web_fetch.py ("hostile pages")
    text_from_html(page)


async def test_render_body_decodes_and_cuts_text_without_the_converter(converter: HtmlConverter) -> None:
    body = "é".encode() * 10
    rendered = await render_body(
        body,
        kind="text",
        declared_charset="utf-8",
        truncated=False,
        base_url=None,
        max_chars=4,
        deadline=later(),
        converter=converter,
    )
    assert rendered == Rendered("éééé", cut=True, max_chars=4)
    assert rendered.content == "éééé\n\n[web_fetch: cut at 4 characters]"
    assert converter._idle == []  # no child for text


async def test_render_body_converts_html_in_the_declared_charset(converter: HtmlConverter) -> None:
    rendered = await render_body(
        "<h1>Привет</h1>".encode("cp1251"),
        kind="html",
        declared_charset="windows-1251",
        truncated=False,
        base_url=None,
        max_chars=100,
        deadline=later(),
        converter=converter,
    )
    assert rendered.content == "# Привет\n"
