r"""Server-sent events as OpenAI-compatible servers write them, llama.cpp's ``error:`` lines included.

The parsing follows the HTML living standard's event-stream interpretation: lines end at ``\r\n``,
``\r`` or ``\n`` only (a U+2028 inside a JSON string is not a line break), a blank line dispatches
the event, ``:`` starts a comment (``: OPENROUTER PROCESSING``), ``data`` lines are joined with
``\n``, ``event`` names the event, and other fields are ignored, with one exception:

* llama.cpp's server reports a failure inside a stream as a line ``error: {"code": 400, "message":
  ..., "type": "exceed_context_size_error"}`` (a field the standard does not define), followed by
  ``data: [DONE]``. Such a line is read as an event named ``error`` carrying that data, so the
  failure is reported instead of silently dropped. An ``error`` event still pending when the body
  ends without its blank line is dispatched too.

The body is decoded as UTF-8 incrementally (``httpx``'s ``aiter_text``), so a character split across
two network reads arrives whole.
"""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator
from dataclasses import dataclass

import httpx

__all__ = ["SSEvent", "aiter_sse"]


@dataclass(frozen=True, slots=True)
class SSEvent:
    """One dispatched event: its name (``""`` when none was given) and its data."""

    event: str
    data: str


class _Decoder:
    def __init__(self) -> None:
        self.event = ""
        self.data: list[str] = []
        self.pending = False

    def line(self, line: str) -> SSEvent | None:
        if not line:
            return self.dispatch()
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            self.event, self.pending = value, True
        elif name == "data":
            self.data.append(value)
            self.pending = True
        elif name == "error":  # llama.cpp: "error: {json}" in place of a data line
            self.event = "error"
            self.data.append(value)
            self.pending = True
        return None

    def dispatch(self) -> SSEvent | None:
        if not self.pending:
            return None
        event = SSEvent(self.event, "\n".join(self.data))
        self.event, self.data, self.pending = "", [], False
        return event


async def aiter_sse(response: httpx.Response) -> AsyncGenerator[SSEvent, None]:
    """The events of ``response``'s body, as they arrive."""
    decoder = _Decoder()
    buffer = ""
    first = True
    async for text in response.aiter_text():
        if first and text:
            text = text.removeprefix("\ufeff")  # one leading BOM is ignored (HTML: event streams)
            first = False
        # only the new text is searched for line ends (a 40 MB line must not be rescanned per read);
        # one character back, for a "\r" that ended the previous read
        scan_from = max(len(buffer) - 1, 0)
        buffer += text
        start = 0
        for match in _LINE_END.finditer(buffer, scan_from):
            if match.group() == "\r" and match.end() == len(buffer):
                break  # maybe the first half of "\r\n": wait for the next read
            event = decoder.line(buffer[start : match.start()])
            start = match.end()
            if event is not None:
                yield event
        buffer = buffer[start:]
    if buffer.rstrip("\r"):
        decoder.line(buffer.rstrip("\r"))  # a last line without its line break
    if decoder.event == "error":  # a failure report cut short of its blank line: still a failure
        event = decoder.dispatch()
        if event is not None:
            yield event


_LINE_END = re.compile(r"\r\n|\r|\n")
