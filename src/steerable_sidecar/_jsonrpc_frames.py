"""JSON-RPC 2.0 over newline-delimited frames: reading, decoding, checking and encoding one frame.

Shared by every line-framed peer the package runs: :class:`~steerable_sidecar.rpc.JsonRpcPeer`
(the sidecar, ``steerable mcp``) and ``steerable acp``'s transport under the ACP SDK
(:mod:`steerable_sidecar._acp_wire`). A bad frame is answered the same way everywhere: an
over-long line, bytes that are not UTF-8 and text that is not JSON get ``-32700`` / ``-32600``
with ``id: null`` (JSON-RPC 2.0, section 5.1), and the reader carries on. A request nested too
deeply to decode is answered with the ``id`` its top level holds, read by a shallow scan
(:mod:`steerable_sidecar._shallow_json`), so the peer can pair the error with it (SAFE-6).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Final

from ._rpc_errors import INVALID_REQUEST, PARSE_ERROR
from ._rpc_stdio import READ_CHUNK
from ._shallow_json import NESTED, top_level_scalars

__all__ = [
    "FrameError",
    "FrameValue",
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


async def line_frames(reader: asyncio.StreamReader, limit: int) -> AsyncIterator[bytes | None]:
    """Yield each line without its newline, or ``None`` for a line over ``limit`` bytes.

    An oversized line is reported as soon as it crosses the limit, then skipped up to its
    newline without being kept in memory. A last line without a newline is yielded at EOF.
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
                yield bytes(buffer[start:newline])
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
        chunk = await reader.read(READ_CHUNK)
        if not chunk:
            if buffer and not skipping:
                yield bytes(buffer)  # a last frame without its newline
            return
        buffer += chunk


@dataclass(frozen=True, slots=True)
class FrameValue:
    """A frame that parsed: its JSON ``value`` (any JSON, not yet checked as a message)."""

    value: Any


@dataclass(frozen=True, slots=True)
class FrameError:
    """A frame that did not parse: the error ``response`` to send.

    Attributes:
        response: The answer: ``id: null``, or the request's own ``id`` when a request nested too
            deeply to decode has one at its top level (SAFE-6).
        answers: When the frame is a response nested too deeply to decode, the ``id`` at its top
            level: the request it answers is to fail (the answer is lost), not wait for ever.
    """

    response: dict[str, Any]
    answers: Any = None


def decode_frame(frame: bytes | None, limit: int) -> FrameValue | FrameError | None:
    """Decode one frame from :func:`line_frames`; ``None`` for a blank line (ignored).

    NaN, the infinities and numbers out of a float's range are refused (RFC 8259, section 6),
    and so is nesting too deep for the parser (answered with a request's top-level ``id``).
    """
    if frame is None:
        return FrameError(
            error_response(None, INVALID_REQUEST, f"Invalid Request: frame too large (over {limit} bytes)")
        )
    try:
        text = frame.decode("utf-8")
    except UnicodeDecodeError as exc:
        return FrameError(error_response(None, PARSE_ERROR, f"Parse error: the frame is not UTF-8 ({exc})"))
    if not text.strip():
        return None
    try:
        return FrameValue(json.loads(text, parse_constant=_no_constant, parse_float=_finite_float))
    except RecursionError:
        return _too_deep(text)
    except ValueError as exc:  # JSONDecodeError, a huge integer
        return FrameError(error_response(None, PARSE_ERROR, f"Parse error: {exc}"))


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
    head = top_level_scalars(text, _HEAD) or {}
    found = head.get("id")
    usable = found is not None and found is not NESTED and valid_id(found)
    request = "method" in head
    answers = found if usable and not request and ("result" in head or "error" in head) else None
    request_id = found if usable and request else None
    return FrameError(error_response(request_id, PARSE_ERROR, "Parse error: too deeply nested"), answers)


def _no_constant(name: str) -> Any:
    """``NaN``, ``Infinity`` and ``-Infinity`` are not JSON (RFC 8259 section 6)."""
    raise ValueError(f"{name} is not a JSON value")


def _finite_float(text: str) -> float:
    """A JSON number too large for a float (``1e999``) is refused rather than read as infinity."""
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"the number {text[:40]} is out of range")
    return value
