"""HTML to Markdown (``html-to-markdown``, unbounded: for the converter child) and HTML to plain text.

:func:`text_from_html` is the linear fallback ``web_fetch`` returns when the bounded converter
(:mod:`._converter`) cannot finish a page. Scripts, styles, ``<noscript>`` and ``<template>`` are
dropped, links (made absolute against the page URL) and tables kept, inline ``data:`` images
reduced to their alt text.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from html import unescape
from typing import Final

from html_to_markdown import ConversionError, ConversionOptions, convert

__all__ = ["MARKDOWN_OPTIONS", "markdown_from_html", "text_from_html"]

MARKDOWN_OPTIONS: Final[dict[str, object]] = {
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
    options = ConversionOptions(base_url=base_url, **MARKDOWN_OPTIONS)  # type: ignore[arg-type]
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
