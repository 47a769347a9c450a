"""``steerable acp``'s stdio wire: the line transport under the ACP SDK, and the early ``initialize``.

The ACP SDK (``agent-client-protocol``, imported as ``acp``) costs about 0.35 s to import here
(0.12 s imported lean: :mod:`steerable_sidecar.shared._lean_imports`), more than the handshake of a whole
Node MCP server, so ``steerable acp`` answers the client's ``initialize`` itself while the SDK
loads in a worker thread (docs/acp.md, "Start-up"); every later message goes through the SDK.
:func:`initialize_result` is the one answer both paths give.

:class:`LineTransport` is the SDK's message-level ``Transport`` (``send`` / ``receive`` /
``close``) over our line framing (:mod:`steerable_sidecar.rpc._frames`): the SDK's own stdio
framing drops a line that is not JSON without an answer and stops at a message that is not an
object, where this one answers each bad frame with the JSON-RPC error and reads on, and a request
reusing the id of one not yet answered with ``-32600`` (the SDK would answer both). It also
serves ACP's ``$/cancel_request`` (protocol/v1/cancellation), which the SDK does not know: for a
``session/prompt`` in flight it is that session's ``session/cancel`` (the prompt answers
``cancelled``, a valid response); any other ``$/`` notification is dropped, as ACP allows. When a
signal ends the process, :meth:`LineTransport.interrupt` answers what is still in flight (REC-4).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Mapping
from typing import Any, Final

from steerable_agent_runtime import __version__

from ..rpc._frames import (
    FrameError,
    Unread,
    decode_frame,
    duplicate_request,
    encode_frame,
    error_response,
    id_key,
    invalid_request,
    is_response,
    line_frames,
    request_problem,
)
from ..rpc._stdio import LineWriter

__all__ = [
    "ACP_PROTOCOL_VERSION",
    "MAX_ACP_FRAME_BYTES",
    "LineTransport",
    "early_initialize",
    "initialize_result",
]

ACP_PROTOCOL_VERSION: Final = 1
"""The ACP protocol version spoken (the SDK's ``acp.PROTOCOL_VERSION``; a test holds them equal)."""

MAX_ACP_FRAME_BYTES: Final = 50 * 1024 * 1024
"""Longest accepted message, in bytes: the SDK's own stdio limit (images and embedded files)."""

CANCEL_REQUEST: Final = "$/cancel_request"
"""ACP's protocol-level request cancellation (a notification: ``{"requestId": id}``)."""


def initialize_result(params: Mapping[str, Any]) -> dict[str, Any]:
    """The ``initialize`` answer: ACP version 1 and what this agent supports.

    ACP's negotiation: the agent answers the client's version when it supports it, else the
    latest it supports; both are 1 here. Session loading and listing, embedded context
    (``resource`` blocks) and stdio MCP servers are supported; images, audio and HTTP/SSE MCP servers are not.
    """
    del params  # one version: nothing to negotiate yet
    return {
        "protocolVersion": ACP_PROTOCOL_VERSION,
        "agentCapabilities": {
            "loadSession": True,
            "promptCapabilities": {"image": False, "audio": False, "embeddedContext": True},
            "mcpCapabilities": {"http": False, "sse": False},
            "sessionCapabilities": {"list": {}},
        },
        "agentInfo": {"name": "steerable", "title": "steerable", "version": __version__},
        "authMethods": [],
    }


class LineTransport:
    """JSON-RPC messages over a line-framed byte stream, for the ACP SDK's connection.

    Args:
        reader: The client's messages (our stdin).
        writer: Where the answers go (our stdout); writes are serialised.
        max_frame_bytes: Longest accepted line, in bytes.
    """

    def __init__(
        self, reader: asyncio.StreamReader, writer: LineWriter, *, max_frame_bytes: int = MAX_ACP_FRAME_BYTES
    ) -> None:
        self._frames: AsyncIterator[bytes | Unread | None] = line_frames(reader, max_frame_bytes)
        self._writer = writer
        self._limit = max_frame_bytes
        self._lock = asyncio.Lock()
        self._held: deque[dict[str, Any]] = deque()
        self._closed = False
        self._prompts: dict[tuple[bool, Any], str] = {}  # session/prompt in flight: its id -> session id
        self._in_flight: set[tuple[bool, Any]] = set()  # the client's requests not yet answered (SAFE-7)
        self._answered = asyncio.Event()  # set while no request of the client's is in flight
        self._answered.set()
        self._gone = asyncio.Event()  # close() was called: nothing more is answered
        self._interrupted = False  # interrupt() answered what was left: later messages are dropped

    def hold(self, message: dict[str, Any]) -> None:
        """Give ``message`` back: the next :meth:`receive` returns it first."""
        self._held.appendleft(message)

    async def receive(self) -> dict[str, Any] | None:
        """The next valid message (a request, a notification or a response); ``None`` at EOF.

        A frame that is not one is answered here (``-32700`` / ``-32600``) and skipped; a response
        nested too deeply to decode is also given to the SDK as a ``-32700`` error for its id, so
        the request it answered fails instead of waiting for ever (SAFE-6).
        """
        if self._held:
            return self._held.popleft()
        while not self._closed:
            try:
                frame = await anext(self._frames)
            except (StopAsyncIteration, OSError):  # EOF, or a reset pipe: the client is gone
                return None
            decoded = decode_frame(frame, self._limit)
            if decoded is None:
                continue
            if isinstance(decoded, FrameError):
                await self._answer(decoded.response)
                if decoded.answers is not None:  # an answer too deep to decode: the SDK's request fails
                    return error_response(decoded.answers, *decoded.lost)  # (SAFE-6, SAFE-9)
                continue
            message = decoded.value
            problem = _problem(message)
            if problem is not None:
                await self._answer(invalid_request(message, problem))
                continue
            if not self._claim(message):
                await self._answer(duplicate_request(message))
                continue
            routed = self._route(dict(message))
            if routed is not None:
                return routed
        return None

    def _claim(self, message: dict[str, Any]) -> bool:
        """Mark a request's id in flight until its answer is sent; ``False`` when it already is.

        A request reusing the id of one not yet answered never reaches the SDK: it is answered
        ``-32600`` here, and the first is answered once (SAFE-7).
        """
        key = id_key(message.get("id")) if "method" in message else None
        if key is None:  # a notification, a response, or a null id
            return True
        if key in self._in_flight:
            return False
        self._in_flight.add(key)
        self._answered.clear()
        return True

    def _route(self, message: dict[str, Any]) -> dict[str, Any] | None:
        """What the SDK gets for a valid message: itself, a ``session/cancel``, or ``None`` (dropped).

        A ``$/cancel_request`` naming a ``session/prompt`` in flight becomes that session's
        ``session/cancel``; any other ``$/`` notification is dropped ("free to ignore", and the SDK
        would log each one as an unhandled error).
        """
        method = message.get("method")
        params = message.get("params")
        if not isinstance(method, str):  # a response
            return message
        if "id" in message:  # a request
            session_id = params.get("sessionId") if isinstance(params, dict) else None
            if method == "session/prompt" and isinstance(session_id, str):
                key = id_key(message["id"])
                if key is not None:
                    self._prompts[key] = session_id
            return message
        if not method.startswith("$/"):
            return message
        key = (
            id_key(params.get("requestId")) if method == CANCEL_REQUEST and isinstance(params, dict) else None
        )
        session_id = self._prompts.get(key) if key is not None else None
        if session_id is None:  # not a prompt, or already answered: nothing to stop
            return None
        return {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session_id}}

    async def send(self, message: dict[str, Any]) -> None:
        """Write one message (the SDK's) as a line; an answer frees its request's id.

        Raises:
            ConnectionError: The transport is closed or the client is gone.
        """
        if self._interrupted:  # its request was answered as interrupted already (REC-4)
            return
        if is_response(message):  # that request is no longer in flight: its id may be used again
            key = id_key(message["id"])
            if key is not None:
                self._prompts.pop(key, None)
                self._in_flight.discard(key)
                if not self._in_flight:
                    self._answered.set()
        await self._write(message)

    async def _write(self, message: dict[str, Any]) -> None:
        if self._closed:
            raise ConnectionError("the ACP client is gone")
        frame = encode_frame(message)
        async with self._lock:
            try:
                self._writer.write(frame)
                await self._writer.drain()
            except OSError as exc:  # a broken pipe: the client went away
                raise ConnectionError(f"the ACP client is gone: {exc}") from exc

    async def close(self) -> None:
        """Stop reading; later sends raise :class:`ConnectionError`."""
        self._closed = True
        self._gone.set()

    async def interrupt(self, message: str, data: Any, *, drain_s: float) -> None:
        """The process is ending (a signal, REC-4): answer each request still in flight, then go quiet.

        Waits up to ``drain_s`` seconds for the requests in flight to be answered (a prompt whose
        turn was stopped answers with its own error), answers each one left ``-32603`` with
        ``message`` and ``data``, and drops every later message quietly.
        """
        waits = {asyncio.ensure_future(self._answered.wait()), asyncio.ensure_future(self._gone.wait())}
        try:
            await asyncio.wait(waits, timeout=drain_s, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiting in waits:
                waiting.cancel()
        left, self._in_flight = sorted(self._in_flight, key=repr), set()
        self._interrupted = True  # a late answer of the SDK's to one of them is not sent
        for _, request_id in left:
            await self._answer(error_response(request_id, -32603, message, data))

    async def _answer(self, response: dict[str, Any]) -> None:
        """Refuse a frame; the id it carries, when one is in flight, stays in flight."""
        try:
            await self._write(response)
        except ConnectionError:
            pass  # nobody left to tell


def _problem(message: Any) -> str | None:
    """Why a decoded frame is not an ACP message, or ``None`` (ACP sends no batches)."""
    if isinstance(message, list):
        return "batches are not part of ACP: send one message per line"
    if not isinstance(message, dict):
        return "a message must be a JSON object"
    if is_response(message):
        return None if id_key(message.get("id")) is not None else "a response needs its 'id'"
    return request_problem(message)


async def early_initialize(transport: LineTransport) -> dict[str, Any] | None | bool:
    """Answer the client's first message when it is a well-formed ``initialize``.

    Returns:
        The ``initialize`` params when it was answered here; ``True`` when the first message was
        something else (held for the SDK to answer); ``None`` when the client sent nothing.
    """
    first = await transport.receive()
    if first is None:
        return None
    params = first.get("params")
    version = params.get("protocolVersion") if isinstance(params, dict) else None
    plain = (
        first.get("method") == "initialize"
        and first.get("id") is not None
        and type(version) is int
        and 0 <= version <= 65535
    )
    if not plain or not isinstance(params, dict):
        transport.hold(first)
        return True
    try:
        await transport.send({"jsonrpc": "2.0", "id": first["id"], "result": initialize_result(params)})
    except ConnectionError:
        return None
    return params
