"""A bidirectional JSON-RPC 2.0 peer over line-delimited byte streams.

The sidecar and its host each hold one :class:`JsonRpcPeer` over the other's stdio. Both sides
send requests, and a handler may call back into the other side while its request is still open,
so every incoming request runs in its own task and writes are serialised by a lock (framing,
concurrency and error mapping: docs/sidecar-protocol.md, Transport and Errors).

The peer is the one place where exceptions become wire errors: :data:`ERROR_CODES` and
:func:`error_code_for` (in ``_errors``) pick a ``SteerableError``'s code; any other exception
is ``-32603``, its traceback logged, never written to the protocol stream. The stdio transport is
in ``_stdio``; this module re-exports both modules' public names.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from types import TracebackType
from typing import Any, Final, TypeAlias

from steerable_agent_runtime.errors import PeerClosedError, RemoteError, SteerableError, UserError

from ._errors import (
    ERROR_CODES,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    InvalidParams,
    error_code_for,
    error_data_for,
    validation_error,
)
from ._frames import (
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
from ._stdio import LineWriter, isolate_stdio, open_fd_streams, open_stdio_streams

__all__ = [
    "DEFAULT_MAX_FRAME_BYTES",
    "ERROR_CODES",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "InvalidParams",
    "JsonRpcPeer",
    "LineWriter",
    "MethodHandler",
    "NotificationHandler",
    "Params",
    "SentParams",
    "error_code_for",
    "error_data_for",
    "isolate_stdio",
    "open_fd_streams",
    "open_stdio_streams",
]

logger = logging.getLogger(__name__)

DEFAULT_MAX_FRAME_BYTES: Final = 64 * 1024 * 1024
"""Longest accepted incoming frame, in bytes, without its newline (64 MiB)."""

Params: TypeAlias = dict[str, Any] | list[Any] | None
SentParams: TypeAlias = Mapping[str, Any] | list[Any] | None
"""What :meth:`JsonRpcPeer.request` and :meth:`~JsonRpcPeer.notify` send: a dict (a typed dict of
:mod:`steerable_sidecar.sidecar.protocol` included), a list, or ``None`` for no ``params``."""
"""A request's ``params``: an object, an array, or ``None`` when absent."""
MethodHandler: TypeAlias = Callable[[Params], Awaitable[Any]]
"""``async (params) -> result``; the result must be JSON-serialisable."""
NotificationHandler: TypeAlias = Callable[[Params], Awaitable[None]]
"""``async (params) -> None``; notifications are never answered."""


def _being_cancelled() -> bool:
    task = asyncio.current_task()
    return task is None or task.cancelling() > 0


class JsonRpcPeer:
    """One end of a JSON-RPC 2.0 connection: serves requests and makes them, concurrently.

    The same class runs in the sidecar (over its stdio, see :func:`open_stdio_streams`) and in
    the host (over the child's pipes). Register handlers, then run :meth:`serve` or use the peer
    as an async context manager, which serves in a background task (an example:
    docs/sidecar-protocol.md, The Python peer).

    EOF fails every pending :meth:`request` with :class:`PeerClosedError` and gives running
    handlers ``drain_timeout_s`` to answer; :meth:`aclose` cancels them at once; :meth:`interrupt`
    (the process is ending on a signal) cancels them and answers each request as interrupted;
    the streams are never closed (docs/sidecar-protocol.md, End of input and shutdown). An
    incoming request that reuses the id of one still in flight is answered ``-32600`` and never
    run (SAFE-7). A frame too large to read in memory is answered ``-32600`` and reading goes on
    (SAFE-9).

    Args:
        reader: The stream frames arrive on (any :class:`asyncio.StreamReader`).
        writer: Where frames go (:class:`asyncio.StreamWriter` or any :class:`LineWriter`).
        name: A label for log lines (``"sidecar"``, ``"host"``).
        max_frame_bytes: Longest accepted incoming frame in bytes; a longer one is answered with
            ``-32600`` and skipped, and serving goes on.
        drain_timeout_s: Seconds in-flight handlers get after EOF before they are cancelled.
        scrub: Applied to every error message this peer sends (e.g. redacting credentials that a
            handler's exception quotes).
        strict_ids: MCP's rules (2025-06-18, basic): a request's ``id`` must not be ``null``
            (answered ``-32600``), and a notification never runs a method's handler (a
            ``tools/call`` without an ``id`` is ignored). Off, as the sidecar protocol has it.
    """

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: LineWriter,
        *,
        name: str = "peer",
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        drain_timeout_s: float = 5.0,
        scrub: Callable[[str], str] | None = None,
        strict_ids: bool = False,
    ) -> None:
        if max_frame_bytes < 1:
            raise UserError(f"max_frame_bytes must be at least 1, got {max_frame_bytes}")
        self.name = name
        self._reader = reader
        self._writer = writer
        self._max_frame_bytes = max_frame_bytes
        self._drain_timeout_s = drain_timeout_s
        self._methods: dict[str, MethodHandler] = {}
        self._notifications: dict[str, NotificationHandler] = {}
        self._pending: dict[int, tuple[str, asyncio.Future[Any]]] = {}
        self._next_id = 0
        self._write_lock = asyncio.Lock()
        self._tasks: set[asyncio.Task[None]] = set()
        # every incoming request in flight, by id: its task, or None inside a batch (not cancellable);
        # a second request with one of these ids is refused (SAFE-7)
        self._incoming: dict[tuple[bool, Any], asyncio.Task[Any] | None] = {}
        self._cancelled: set[asyncio.Task[Any]] = set()  # cancelled by cancel_request: never answered
        self._scrub = scrub
        self._strict_ids = strict_ids
        self._read_task: asyncio.Task[None] | None = None
        self._background: asyncio.Task[None] | None = None
        self._serving = False
        self._closing = False  # aclose() was called: stop reading, cancel handlers at once
        self._interrupted: tuple[str, Any] | None = None  # interrupt()'s (message, data): answers them all
        self._closed = False  # no more requests in either direction
        self._done = asyncio.Event()
        self.on_eof: Callable[[], None] | None = None
        """Called once when the input ends (EOF), before in-flight handlers get their drain time."""
        self.not_found_hint: Callable[[str, Params], str | None] | None = None
        """Given a request's ``method`` and ``params`` that no handler serves, a sentence to add to
        its ``-32601`` (``Method not found: initialize: <hint>``), or ``None`` for none."""

    # -- registration -------------------------------------------------------------------------

    def add_method(self, name: str, handler: MethodHandler) -> None:
        """Serve requests for ``name`` with ``handler`` (a notification to it runs it too).

        Raises:
            UserError: ``name`` is already registered, or starts with the reserved ``rpc.``.
        """
        self._check_name(name)
        self._methods[name] = handler

    def add_notification(self, name: str, handler: NotificationHandler) -> None:
        """Run ``handler`` for notifications to ``name``; a request to it is ``-32601``.

        Raises:
            UserError: ``name`` is already registered, or starts with the reserved ``rpc.``.
        """
        self._check_name(name)
        self._notifications[name] = handler

    def _check_name(self, name: str) -> None:
        if name.startswith("rpc."):
            raise UserError(f"method names starting with 'rpc.' are reserved by JSON-RPC: {name!r}")
        if name in self._methods or name in self._notifications:
            raise UserError(f"{self.name}: a handler for {name!r} is already registered")

    # -- outgoing -----------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        """``True`` once the peer reached EOF or was closed: requests fail fast."""
        return self._closed

    async def request(self, method: str, params: SentParams = None, *, timeout_s: float | None = None) -> Any:
        """Call ``method`` on the other peer and return its result.

        Args:
            method: The remote method name.
            params: An object or an array, or ``None`` to send no ``params``.
            timeout_s: Seconds to wait for the answer (``None``: no limit). On timeout the request
                is forgotten; a late answer is logged and dropped.

        Returns:
            The response's ``result``.

        Raises:
            RemoteError: The peer answered with an error object (``code``, ``message``, ``data``).
            PeerClosedError: The connection closed before the answer arrived (or was closed).
            TimeoutError: No answer within ``timeout_s``.
            TypeError: ``params`` holds a value JSON cannot represent (nothing was sent).
            ValueError: ``params`` holds NaN, an infinity or a reference cycle (nothing was sent).
        """
        if self._closed:
            raise PeerClosedError(f"{self.name}: the connection is closed; cannot call {method}")
        self._next_id += 1
        request_id = self._next_id
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        frame = encode_frame(message)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = (method, future)
        try:
            async with asyncio.timeout(timeout_s):
                await self._write(frame, method)
                return await future
        except TimeoutError:
            raise TimeoutError(f"{self.name}: no answer to {method} within {timeout_s} s") from None
        finally:
            self._pending.pop(request_id, None)

    async def notify(self, method: str, params: SentParams = None) -> None:
        """Send a notification (no answer, and no error even if the peer fails to handle it).

        Raises:
            PeerClosedError: The connection is closed.
        """
        if self._closed:
            raise PeerClosedError(f"{self.name}: the connection is closed; cannot notify {method}")
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self._write(encode_frame(message), method)

    async def _write(self, frame: bytes, method: str) -> None:
        try:
            async with self._write_lock:
                self._writer.write(frame)
                await self._writer.drain()
        except (OSError, RuntimeError) as exc:
            raise PeerClosedError(f"{self.name}: cannot send {method}: {exc}") from exc

    async def _send(self, message: dict[str, Any] | list[dict[str, Any]]) -> None:
        """Write a response (or a batch of them); a failed write is logged, not raised."""
        try:
            frame = encode_frame(message)
        except (TypeError, ValueError, RecursionError) as exc:
            items = message if isinstance(message, list) else [message]
            fixed = [self._jsonable_response(item) for item in items]
            frame = encode_frame(fixed if isinstance(message, list) else fixed[0])
            logger.error("%s: a response was not JSON (%s: %s)", self.name, type(exc).__name__, exc)
        try:
            async with self._write_lock:
                self._writer.write(frame)
                await self._writer.drain()
        except (OSError, RuntimeError) as exc:
            logger.info("%s: could not write a response: %s", self.name, exc)

    @staticmethod
    def _jsonable_response(response: dict[str, Any]) -> dict[str, Any]:
        """``response`` if it encodes, else an error that does (a result that is not JSON)."""
        try:
            encode_frame(response)
        except (TypeError, ValueError, RecursionError) as exc:
            if "error" in response:  # keep code and message, drop the data that would not encode
                error = response["error"]
                data = error.get("data")
                kept = {"type": data["type"]} if isinstance(data, dict) and "type" in data else None
                return error_response(response["id"], error["code"], str(error["message"]), kept)
            message = f"Internal error: the result is not JSON ({type(exc).__name__}: {exc})"
            return error_response(response["id"], INTERNAL_ERROR, message, {"type": type(exc).__name__})
        return response

    # -- serving ------------------------------------------------------------------------------

    async def serve(self) -> None:
        """Read and dispatch frames until EOF or :meth:`aclose`, then shut down.

        Shutting down fails pending outgoing requests with :class:`PeerClosedError`, waits up to
        ``drain_timeout_s`` seconds (after EOF; not after :meth:`aclose`) for in-flight handlers,
        cancels those still running and awaits them. A read error (a reset pipe) counts as EOF.

        Raises:
            UserError: ``serve()`` was already called on this peer.
        """
        if self._serving:
            raise UserError(f"{self.name}: serve() was already called")
        if self._closing:  # closed before serving began
            return
        self._serving = True
        read_task = asyncio.create_task(self._read_loop(), name=f"{self.name}-reader")
        self._read_task = read_task
        try:
            await asyncio.wait({read_task})
        except asyncio.CancelledError:  # cancelled from outside: shut down without a grace period
            await self._shut_down(grace=0)
            raise
        if self.on_eof is not None and not self._closing:
            try:
                self.on_eof()
            except Exception:
                logger.exception("%s: the on_eof callback failed", self.name)
        await self._shut_down(grace=0 if self._closing or self._interrupted else self._drain_timeout_s)

    async def interrupt(self, message: str, data: Any = None, *, grace_s: float) -> None:
        """End serving because the process is ending (a signal): answer every request as interrupted.

        The handlers in flight are cancelled (a tool call's sandbox is killed, a chat records the
        calls it had running and its end) and each request they were running is answered
        ``-32603`` with ``message`` and ``data`` once its handler has wound down; a request that
        arrives meanwhile is answered the same way without running. After ``grace_s`` seconds
        the peer is closed (:meth:`aclose`): what still runs is cancelled and, when it ends,
        answered all the same.

        Args:
            message: The error's message (``interrupted: steerable is shutting down (SIGTERM) ...``).
            data: The error's ``data`` (``{"type": "Interrupted", "code": "interrupted", ...}``).
            grace_s: How long the handlers get to wind down and the answers to be written.
        """
        if self._interrupted is not None:
            return
        self._interrupted = (message, data)
        current = asyncio.current_task()
        tasks = {task for task in self._tasks if task is not current}
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=grace_s)
        await self.aclose()

    def _interrupted_response(self, request_id: Any) -> dict[str, Any]:
        assert self._interrupted is not None
        message, data = self._interrupted
        return error_response(request_id, INTERNAL_ERROR, message, data)

    async def drain(self, timeout_s: float) -> None:
        """Wait up to ``timeout_s`` seconds for the handlers in flight (other than the caller) to answer.

        A graceful stop: ``system.shutdown`` lets calls already running write their answers
        before the connection closes, as end of input does.
        """
        current = asyncio.current_task()
        tasks = {task for task in self._tasks if task is not current}
        if tasks:
            await asyncio.wait(tasks, timeout=timeout_s)

    async def aclose(self) -> None:
        """Stop serving: fail pending requests, cancel in-flight handlers, and wait for both.

        Called from inside a handler, it starts the shutdown and returns at once; that handler is
        cancelled at its next ``await`` like the others.
        """
        self._closing = True
        self._closed = True
        if self._read_task is not None and not self._read_task.done():
            self._read_task.cancel()
        if not self._serving:
            self._fail_pending()
            self._done.set()
        elif asyncio.current_task() not in self._tasks:
            await self._done.wait()
        if self._background is not None and self._background is not asyncio.current_task():
            await asyncio.wait({self._background})

    async def __aenter__(self) -> JsonRpcPeer:
        """Start :meth:`serve` in a background task."""
        self._background = asyncio.create_task(self.serve(), name=f"{self.name}-serve")
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        """Close the peer (see :meth:`aclose`)."""
        await self.aclose()

    async def _shut_down(self, grace: float) -> None:
        """Fail pending requests, give handlers ``grace`` seconds, cancel the rest; cancel-safe."""
        self._closed = True
        self._fail_pending()
        try:
            if self._tasks and grace > 0:
                await asyncio.wait(set(self._tasks), timeout=grace)
        finally:
            tasks = set(self._tasks)
            if self._read_task is not None:
                self._read_task.cancel()
                tasks.add(self._read_task)
            if self._tasks:
                logger.info("%s: cancelling %d in-flight handler(s)", self.name, len(self._tasks))
            for task in tasks:
                task.cancel()
            try:
                await asyncio.gather(*tasks, return_exceptions=True)
            finally:
                self._done.set()

    def _fail_pending(self) -> None:
        for method, future in self._pending.values():
            if not future.done():
                future.set_exception(
                    PeerClosedError(f"{self.name}: the peer closed the connection before answering {method}")
                )

    async def _read_loop(self) -> None:
        try:
            async for frame in line_frames(self._reader, self._max_frame_bytes):
                try:
                    self._dispatch(frame)
                except MemoryError:  # past what decode_frame guards: still an answer, not an exit
                    del frame
                    message = "Invalid Request: frame too large to read in memory; send smaller requests"
                    self._spawn(self._send(error_response(None, INVALID_REQUEST, message)))
        except OSError as exc:  # a reset pipe or socket: the same as EOF
            logger.warning("%s: reading stopped: %s", self.name, exc)
        except Exception:
            logger.exception("%s: reading stopped by an unexpected error", self.name)

    def _spawn(self, coroutine: Awaitable[None]) -> asyncio.Task[None]:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            logger.error("%s: a frame task failed", self.name, exc_info=task.exception())

    def _dispatch(self, frame: bytes | Unread | None) -> None:
        """Handle one frame: answer it from a task, never from the reader itself."""
        decoded = decode_frame(frame, self._max_frame_bytes)
        if isinstance(decoded, FrameError):
            if decoded.answers is not None:  # an answer too deep (or too large) to decode: its request fails
                self._resolve(error_response(decoded.answers, *decoded.lost))  # (SAFE-6, SAFE-9)
            self._spawn(self._send(decoded.response))
            return
        if decoded is None:
            return  # blank lines are ignored
        value = decoded.value
        if isinstance(value, list):
            if not value:
                self._spawn(self._send(error_response(None, INVALID_REQUEST, "Invalid Request: empty batch")))
            else:
                self._spawn(self._batch(value, [self._claim(item) for item in value]))
        elif isinstance(value, dict) and is_response(value):
            self._resolve(value)  # inline: cheap, and keeps answers in arrival order
        else:
            key, refusal = self._claim(value)
            if refusal is not None:
                self._spawn(self._send(refusal))
                return
            task = self._spawn(self._single(value, key))
            if key is not None:
                self._incoming[key] = task

    def _claim(self, value: Any) -> tuple[tuple[bool, Any] | None, dict[str, Any] | None]:
        """Mark a request's id in flight, from the reader (before any handler runs): ``(key, None)``.

        A request reusing the id of one still in flight gets ``(None, its -32600 answer)``; the
        first is answered once, normally (SAFE-7). Notifications, responses and null ids claim
        nothing: ``(None, None)``.
        """
        if not isinstance(value, dict) or "method" not in value:
            return None, None
        key = id_key(value.get("id"))
        if key is None:
            return None, None
        if key in self._incoming:
            return None, duplicate_request(value)
        self._incoming[key] = None
        return key, None

    async def _single(self, value: Any, key: tuple[bool, Any] | None) -> None:
        task = asyncio.current_task()
        try:
            response = await self._handle(value)
        finally:
            if key is not None:  # released before the answer is written: the host may reuse it then
                self._incoming.pop(key, None)
        if task in self._cancelled:  # the handler swallowed the cancellation: still no answer
            return
        if response is not None:
            await self._send(response)

    def cancel_request(self, request_id: Any) -> bool:
        """Cancel the handler of the incoming request ``request_id`` if it is still running.

        The cancelled request gets no response (MCP's ``notifications/cancelled`` asks for none;
        JSON-RPC has no cancellation of its own). A request inside a batch cannot be cancelled.

        Args:
            request_id: The ``id`` the other peer gave the request (a string or a number).

        Returns:
            ``True`` when a running handler was cancelled; ``False`` for an unknown or finished id.
        """
        key = id_key(request_id)
        task = self._incoming.get(key) if key is not None else None
        if task is None or task.done():  # unknown, finished, or inside a batch
            return False
        self._cancelled.add(task)
        task.add_done_callback(self._cancelled.discard)
        task.cancel()
        return True

    async def _batch(
        self, values: list[Any], claims: list[tuple[tuple[bool, Any] | None, dict[str, Any] | None]]
    ) -> None:
        """Run a batch; ``claims`` are :meth:`_claim`'s, one per value (a refusal is its answer)."""

        async def one(value: Any, refusal: dict[str, Any] | None) -> dict[str, Any] | None:
            return refusal if refusal is not None else await self._handle(value)

        tasks = [
            asyncio.ensure_future(one(v, refusal)) for v, (_, refusal) in zip(values, claims, strict=True)
        ]
        try:
            try:
                await asyncio.wait(tasks)
            except asyncio.CancelledError:
                for task in tasks:
                    task.cancel()
                await asyncio.wait(tasks)  # each element stopped by interrupt() is answered so
                current = asyncio.current_task()
                if self._interrupted is None or current is None:
                    raise
                while current.uncancel():
                    pass
            responses = [None if task.cancelled() else task.result() for task in tasks]
        finally:  # the batch is answered as one array: its ids are free once that is on its way
            for key, _ in claims:
                if key is not None:
                    self._incoming.pop(key, None)
        answered = [response for response in responses if response is not None]
        if answered:
            await self._send(answered)

    async def _handle(self, value: Any) -> dict[str, Any] | None:
        """Run one request, notification or response; return the response to send, if any."""
        if not isinstance(value, dict):
            return error_response(None, INVALID_REQUEST, "Invalid Request: a message must be a JSON object")
        if is_response(value):
            self._resolve(value)
            return None
        problem = request_problem(value)
        if problem is not None:
            return invalid_request(value, problem)
        method: str = value["method"]
        params: Params = value.get("params")
        if "id" not in value:
            await self._notification(method, params)
            return None
        if self._strict_ids and value["id"] is None:
            return error_response(None, INVALID_REQUEST, "Invalid Request: 'id' must be a string or a number")
        return await self._request(value["id"], method, params)

    async def _request(self, request_id: Any, method: str, params: Params) -> dict[str, Any]:
        handler = self._methods.get(method)
        if handler is None:
            hint = self.not_found_hint(method, params) if self.not_found_hint is not None else None
            detail = f"{method}: {hint}" if hint else method
            return error_response(request_id, METHOD_NOT_FOUND, f"Method not found: {detail}")
        if self._interrupted is not None:  # came during the shutdown: not run
            return self._interrupted_response(request_id)
        try:
            result = await handler(params)
        except asyncio.CancelledError as exc:
            if _being_cancelled():
                task = asyncio.current_task()
                if self._interrupted is None or task is None or task in self._cancelled:
                    raise
                while task.uncancel():  # stopped by interrupt(): answered as interrupted
                    pass
                return self._interrupted_response(request_id)
            return self._error_response(request_id, method, exc)
        except Exception as exc:
            return self._error_response(request_id, method, exc)
        return {"jsonrpc": "2.0", "id": request_id, "result": result}

    async def _notification(self, method: str, params: Params) -> None:
        handler = self._notifications.get(method)
        if handler is None and not self._strict_ids:
            handler = self._methods.get(method)
        if handler is None:
            logger.debug("%s: no handler for the notification %s", self.name, method)
            return
        try:
            await handler(params)
        except asyncio.CancelledError:
            if _being_cancelled():
                raise
            logger.warning("%s: the notification %s was cancelled from inside", self.name, method)
        except Exception as exc:
            self._log_failure(method, exc)

    def _error_response(self, request_id: Any, method: str, exc: BaseException) -> dict[str, Any]:
        """Turn a handler's exception into an error response (the single translation point)."""
        response = self._unscrubbed_error(request_id, method, exc)
        scrub = self._scrub
        if scrub is not None:
            error = response["error"]
            error["message"] = scrub(error["message"])
            data = error.get("data")
            if isinstance(data, dict) and isinstance(data.get("message"), str):
                data["message"] = scrub(data["message"])
        return response

    def _unscrubbed_error(self, request_id: Any, method: str, exc: BaseException) -> dict[str, Any]:
        code = error_code_for(exc)
        self._log_failure(method, exc)
        if isinstance(exc, InvalidParams):
            return error_response(request_id, code, f"Invalid params: {exc}", exc.data)
        invalid = validation_error(exc)
        if invalid is not None:
            # loc, msg and type only: the rejected input may be huge, or a secret
            errors = [
                {"loc": list(e["loc"]), "msg": e["msg"], "type": e["type"]}
                for e in invalid.errors(include_url=False, include_input=False, include_context=False)
            ]
            summary = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'params'}: {e['msg']}" for e in errors
            )
            return error_response(
                request_id, code, f"Invalid params: {summary}", {"type": "ValidationError", "errors": errors}
            )
        if isinstance(exc, SteerableError):
            return error_response(request_id, code, str(exc) or type(exc).__name__, error_data_for(exc))
        message = (
            f"Internal error: {type(exc).__name__}: {exc}"
            if str(exc)
            else f"Internal error: {type(exc).__name__}"
        )
        return error_response(request_id, code, message, {"type": type(exc).__name__})

    def _log_failure(self, method: str, exc: BaseException) -> None:
        if isinstance(exc, SteerableError | InvalidParams) or validation_error(exc) is not None:
            logger.info("%s: %s failed: %s: %s", self.name, method, type(exc).__name__, exc)
        else:
            logger.error("%s: %s raised an unexpected exception", self.name, method, exc_info=exc)

    def _resolve(self, response: dict[str, Any]) -> None:
        """Complete the pending request a response answers; log and drop it if there is none."""
        response_id = response.get("id")
        entry = self._pending.get(response_id) if type(response_id) is int else None
        if entry is None:
            # never the content: a late answer may carry a password the user typed
            kind = "error" if "error" in response else "result"
            logger.warning("%s: dropped a late or unknown %s for request id %r", self.name, kind, response_id)
            return
        _, future = entry
        if future.done():
            return
        if "error" in response:
            error = response["error"]
            if (
                isinstance(error, dict)
                and type(error.get("code")) is int
                and isinstance(error.get("message"), str)
            ):
                future.set_exception(RemoteError(error["code"], error["message"], error.get("data")))
            else:
                future.set_exception(RemoteError(INTERNAL_ERROR, f"malformed error object: {error!r:.300}"))
        else:
            future.set_result(response.get("result"))
