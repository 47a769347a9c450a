"""What ``web_fetch`` does with a body: which types it reads, how it decodes them, HTML to Markdown.

Spec: Web tools (sidecar), Bounds ("Non-text content types are refused with a pointer at bash +
curl"; "the byte cap bounds what a page can push into the process"); requirement WEB-9.
Everything here works on bytes the fetcher has already bounded (``fetch_max_bytes``); nothing here
does network I/O.

Where each decision lives:

* **Text types** and sniffing an untyped or mislabelled body: :mod:`._media_types`.
* **Charset** and decoding: :mod:`._charsets`.
* **HTML** to Markdown in a bounded, sandboxed child process: :mod:`._converter` (the conversion
  itself and the plain-text fallback: :mod:`._html`).
"""

from __future__ import annotations

import asyncio

from ._charsets import decode_body
from ._converter import HtmlConverter, Rendered, capped
from ._media_types import ContentKind

__all__ = ["render_body"]


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
    return capped(text, max_chars)
