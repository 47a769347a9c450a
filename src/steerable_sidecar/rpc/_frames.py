"""JSON-RPC 2.0 over newline-delimited frames: reading, decoding, checking and encoding one frame.

Shared by every line-framed peer the package runs: :class:`~steerable_sidecar.rpc._peer.JsonRpcPeer`
(the sidecar, ``steerable mcp``) and ``steerable acp``'s transport under the ACP SDK
(:mod:`steerable_sidecar.acp._wire`). A bad frame is answered the same way everywhere: an
over-long line, bytes that are not UTF-8 and text that is not JSON get ``-32700`` / ``-32600``
with ``id: null`` (JSON-RPC 2.0, section 5.1), and the reader carries on. A request nested too
deeply to decode is answered with the ``id`` its top level holds, read by a shallow scan
(:mod:`steerable_sidecar.rpc._shallow_json`), so the peer can pair the error with it (SAFE-6). A frame
the process runs out of memory holding or decoding is answered ``-32600`` under the ``id`` its
first bytes hold, its rest skipped without being kept, and the reader carries on (SAFE-9).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Final

from ._errors import INVALID_REQUEST, PARSE_ERROR
from ._shallow_json import CUT, NESTED, top_level_scalars
from ._stdio import READ_CHUNK

__all__ = [
    "HEAD_BYTES",
    "FrameError",
    "FrameValue",
    "Unread",
    "decode_frame",
    "duplicate_request",
    "encode_frame",
    "error_response",
    "id_key",
    "invalid_request",
    "is_response",
    "line_frames",
    "request_problem",
    "valid_id",
]

_MAX_SHOWN_ID_CHARS: Final = 80
"""An id quoted in an error message is cut to this many characters (the answer carries it whole)."""

HEAD_BYTES: Final = 64 * 1024
"""The first bytes of a frame too large for memory kept to read its ``id`` from (SAFE-9)."""


@dataclass(frozen=True, slots=True)
class Unread:
    """A frame the process ran out of memory reading (SAFE-9): its first bytes, and how many were read.

    Attributes:
        head: Up to :data:`HEAD_BYTES` of the frame's start (where its ``id`` usually is).
        size: Bytes of it read before memory ran out (the frame is at least this long).
    """

    head: bytes
    size: int


def encode_frame(message: Any) -> bytes:
    """One frame: compact JSON plus a newline; ASCII escapes when a string is not valid UTF-8.

    Raises:
        TypeError: ``message`` holds a value JSON cannot represent.
        ValueError: ``message`` holds NaN or an infinity (not JSON), or a reference cycle.
    """
    text = json.dumps(message, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    try:
        return text.encode("utf-8") + b"\n"
    except UnicodeEncodeError:  # a lone surrogate: escape it as \udXXX, which is valid JSON
        return json.dumps(message, separators=(",", ":"), allow_nan=False).encode("ascii") + b"\n"


def error_response(id_: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    """A JSON-RPC error response object (``data`` left out when ``None``)."""
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": id_, "error": error}


def invalid_request(message: Any, problem: str) -> dict[str, Any]:
    """The ``-32600`` answer to ``message``: with its ``id`` when it has a valid one, else ``null``."""
    request_id = message.get("id") if isinstance(message, dict) and valid_id(message.get("id")) else None
    return error_response(request_id, INVALID_REQUEST, f"Invalid Request: {problem}")


def duplicate_request(message: dict[str, Any]) -> dict[str, Any]:
    """The ``-32600`` answer to a request whose ``id`` is that of a request still in flight (SAFE-7).

    The first request is answered once, normally; this one carries the same ``id`` (JSON-RPC 2.0
    answers an Invalid Request with its id when it can be read), and the message names it.
    """
    shown = json.dumps(message.get("id"))
    if len(shown) > _MAX_SHOWN_ID_CHARS:
        shown = shown[: _MAX_SHOWN_ID_CHARS - 3] + "..."
    return invalid_request(
        message,
        f"id {shown} is already in use by a request still in flight; wait for its answer or give "
        "this request another id",
    )


def valid_id(value: Any) -> bool:
    """A request id: a string, a number (not a boolean) or null."""
    return value is None or isinstance(value, str | float) or type(value) is int


def request_problem(message: dict[str, Any]) -> str | None:
    """Why ``message`` is not a valid request or notification, or ``None``."""
    if message.get("jsonrpc") != "2.0":
        return "'jsonrpc' must be \"2.0\""
    if "method" not in message:
        return "'method' is missing"
    if not isinstance(message["method"], str):
        return "'method' must be a string"
    if "id" in message and not valid_id(message["id"]):
        return "'id' must be a string, a number or null"
    if message.get("params") is not None and not isinstance(message["params"], dict | list):
        return "'params' must be an object or an array"
    return None


def id_key(request_id: Any) -> tuple[bool, Any] | None:
    """A request id as a dictionary key (``"1"`` is not ``1``); ``None`` for a null or invalid id."""
    if request_id is None or not valid_id(request_id):
        return None
    return (isinstance(request_id, str), request_id)


def is_response(message: dict[str, Any]) -> bool:
    """Whether ``message`` answers a request (no ``method``; a ``result`` or an ``error``)."""
    return "method" not in message and ("result" in message or "error" in message)


async def line_frames(reader: asyncio.StreamReader, limit: int) -> AsyncIterator[bytes | Unread | None]:
    """Yield each line without its newline, ``None`` for a line over ``limit`` bytes.

    An oversized line is reported as soon as it crosses the limit, then skipped up to its
    newline without being kept in memory. A line the process runs out of memory holding is
    yielded as :class:`Unread` (its head) and skipped the same way (SAFE-9). A last line without a
    newline is yielded at EOF.
    """
    buffer = bytearray()
    start = 0  # where the current frame begins in buffer
    scan = 0  # where the search for its newline resumes
    skipping = False
    while True:
        newline = buffer.find(b"\n", scan)
        if newline >= 0:
            if skipping:
                skipping = False
            elif newline - start > limit:
                yield None
            else:
                yield _copy(buffer, start, newline)
            start = scan = newline + 1
            continue
        if skipping:
            buffer.clear()
        elif len(buffer) - start > limit:
            yield None
            skipping = True
            buffer.clear()
        else:
            del buffer[:start]
        start = 0
        scan = len(buffer)
        try:
            chunk = await reader.read(READ_CHUNK)
        except MemoryError:  # no room for the next chunk: the frame held so far is given up
            if not buffer:
                raise
            unread = Unread(bytes(buffer[:HEAD_BYTES]), len(buffer))
            buffer = bytearray()
            skipping = True
            scan = 0
            yield unread
            continue
        if not chunk:
            if buffer and not skipping:
                yield _copy(buffer, 0, len(buffer))  # a last frame without its newline
            return
        try:
            buffer += chunk
        except MemoryError:  # the frame does not fit: answer it from its head, skip the rest of it
            unread = Unread(bytes(buffer[:HEAD_BYTES]), len(buffer) + len(chunk))
            buffer = bytearray()  # freed first: then its end, and the frames after it, in this chunk
            buffer += chunk
            skipping = True
            yield unread


def _copy(buffer: bytearray, start: int, end: int) -> bytes | Unread:
    """``buffer[start:end]`` as bytes, or its head when there is no memory for the copy (SAFE-9)."""
    try:
        return bytes(buffer[start:end])
    except MemoryError:
        return Unread(bytes(buffer[start : min(end, start + HEAD_BYTES)]), end - start)


@dataclass(frozen=True, slots=True)
class FrameValue:
    """A frame that parsed: its JSON ``value`` (any JSON, not yet checked as a message)."""

    value: Any


@dataclass(frozen=True, slots=True)
class FrameError:
    """A frame that did not parse: the error ``response`` to send.

    Attributes:
        response: The answer: ``id: null``, or the request's own ``id`` when a request nested too
            deeply to decode (SAFE-6), or too large to read in memory (SAFE-9), has one at its top
            level.
        answers: When the frame is a response nested too deeply to decode (or too large), the
            ``id`` at its top level: the request it answers is to fail (the answer is lost), not
            wait for ever.
        lost: The error that request fails with: ``(code, message)``.
    """

    response: dict[str, Any]
    answers: Any = None
    lost: tuple[int, str] = (PARSE_ERROR, "Parse error: the answer was nested too deeply to decode")


def decode_frame(frame: bytes | Unread | None, limit: int) -> FrameValue | FrameError | None:
    """Decode one frame from :func:`line_frames`; ``None`` for a blank line (ignored).

    NaN, the infinities and numbers out of a float's range are refused (RFC 8259, section 6),
    and so is nesting too deep for the parser (answered with a request's top-level ``id``), and a
    frame there is no memory to read or decode (answered with the ``id`` its head holds, SAFE-9).
    """
    if frame is None:
        return FrameError(
            error_response(None, INVALID_REQUEST, f"Invalid Request: frame too large (over {limit} bytes)")
        )
    if isinstance(frame, Unread):
        return _out_of_memory(frame.head, frame.size)
    try:
        try:
            text = frame.decode("utf-8")
        except UnicodeDecodeError as exc:
            return FrameError(
                error_response(None, PARSE_ERROR, f"Parse error: the frame is not UTF-8 ({exc})")
            )
        if not text.strip():
            return None
        try:
            return FrameValue(json.loads(text, parse_constant=_no_constant, parse_float=_finite_float))
        except RecursionError:
            return _too_deep(text)
        except ValueError as exc:  # JSONDecodeError, a huge integer
            return FrameError(error_response(None, PARSE_ERROR, f"Parse error: {exc}"))
    except MemoryError:  # the text or its values do not fit (SAFE-9): what was built is freed
        return _out_of_memory(frame[:HEAD_BYTES], len(frame))


_HEAD: Final = frozenset({"id", "method", "result", "error"})
"""The top-level members a frame too deep to decode is read for."""


def _too_deep(text: str) -> FrameError:
    """The answer to a frame nested deeper than the parser goes, with its ``id`` where it is safe.

    A request (a top-level ``method``) is answered with its top-level ``id`` when that is a string
    or a number; a response (``result`` or ``error``, no ``method``) gets ``id: null`` like any
    frame that did not parse (it is not answered as a request), and its ``id`` is handed back in
    :attr:`FrameError.answers`. An ``id`` found only deeper down, or a frame whose top level is
    not JSON, gives ``null`` (SAFE-6).
    """
    request_id, answers = _head_ids(top_level_scalars(text, _HEAD) or {})
    return FrameError(error_response(request_id, PARSE_ERROR, "Parse error: too deeply nested"), answers)


def _head_ids(head: dict[str, Any]) -> tuple[Any, Any]:
    """``(the id to answer under, the id of the request the frame answers)`` from its top level.

    A request (a top-level ``method``) is answered under its ``id`` when that is a string or a
    number; a response (``result`` or ``error``, no ``method``) is answered ``null``, and its
    ``id`` names the request it answers.
    """
    found = head.get("id")
    usable = found is not None and found is not NESTED and found is not CUT and valid_id(found)
    request = "method" in head
    answers = found if usable and not request and ("result" in head or "error" in head) else None
    return (found if usable and request else None), answers


def _out_of_memory(head: bytes, size: int) -> FrameError:
    """The ``-32600`` answer to a frame too large to read in memory, under the ``id`` its head holds.

    Only the head is scanned (:data:`HEAD_BYTES`, a prefix scan: a member counts once read whole),
    never the frame again; a response's request fails with the same error (SAFE-9).
    """
    message = (
        f"Invalid Request: frame too large to read in memory (at least {size} bytes); the server "
        "ran out of memory holding it: send smaller requests"
    )
    try:
        scanned = top_level_scalars(head.decode("utf-8", errors="replace"), _HEAD, prefix=True)
    except MemoryError:
        scanned = None
    request_id, answers = _head_ids(scanned or {})
    lost = (INVALID_REQUEST, f"Invalid Request: the answer was too large to read in memory ({size}+ bytes)")
    return FrameError(error_response(request_id, INVALID_REQUEST, message), answers, lost)


def _no_constant(name: str) -> Any:
    """``NaN``, ``Infinity`` and ``-Infinity`` are not JSON (RFC 8259 section 6)."""
    raise ValueError(f"{name} is not a JSON value")


def _finite_float(text: str) -> float:
    """A JSON number too large for a float (``1e999``) is refused rather than read as infinity."""
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"the number {text[:40]} is out of range")
    return value
