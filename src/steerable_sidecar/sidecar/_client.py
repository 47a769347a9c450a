"""``SidecarClient``: drive a ``steerable sidecar`` subprocess from a host (a desktop app, a test).

Spec: the host side of the sidecar protocol (``docs/sidecar-protocol.md``). The client spawns the
sidecar, waits for ``lifecycle.ready``, calls its methods, and answers its reverse calls through
handlers you set::

    async with await SidecarClient.start(workspace="/path/to/project") as sidecar:
        tools = await sidecar.list_tools()
        result = await sidecar.invoke("read_file", {"path": "README.md"})
        sidecar.on_ask_user = my_question_card          # answers ask_user.request
        summary = await sidecar.chat("Fix the failing test", ask_user=True)

Reverse calls are answered by the optional async handlers ``on_ask_user``, ``on_approval``,
``on_tool_invoke``, ``on_read_state_seed`` and ``on_web_search`` (signatures and what an unset
one answers: docs/sidecar-protocol.md, SidecarClient's handlers). A method the sidecar refuses
raises the :class:`SteerableError` its code names, which is also a :class:`RemoteError`
(``steerable_sidecar.rpc.ERROR_CODES``; docs/sidecar-protocol.md, Errors); an answer that is not
the shape its method answers raises a plain :class:`RemoteError` with code ``-32603``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, cast

from pydantic import ValidationError

from steerable_agent_runtime import RemoteError, SidecarStartError, SteerableError, ToolResult, new_call_id
from steerable_agent_runtime.executor import takes_question
from steerable_agent_runtime.sandbox import absolute_python_path

from ..rpc._peer import INTERNAL_ERROR, InvalidParams, JsonRpcPeer, Params
from ._remote_errors import typed_remote_error

if TYPE_CHECKING:  # the wire's typed dicts (pydantic builds their schemas: spec/sidecar.schema.json)
    from .protocol import (
        AskUserRequestParams,
        ChatEvent,
        ChatSummary,
        HostInvokeParams,
        PingResult,
        ReadStateSeedParams,
        ReadyParams,
        ToolDescriptor,
        WebSearchRequestParams,
        WebSearchResult,
    )

__all__ = ["ChatHandle", "SidecarClient", "SidecarStartError"]

_STDERR_TAIL_BYTES = 64 * 1024
_SHOWN_CHARS = 200  # of a malformed result, in its error's message


def _malformed_result(method: str, result: Any, expected: str) -> RemoteError:
    """The error for an answer to ``method`` that is not the shape it answers (a broken sidecar).

    A :class:`RemoteError` with the JSON-RPC internal-error code ``-32603``, its message naming
    the method, what was expected and the result's ``repr`` (at most 200 characters), and
    ``data == {"method": method}``: ``except RemoteError`` catches it like any failed method
    (docs/sidecar-protocol.md, Errors).
    """
    shown = repr(result)
    if len(shown) > _SHOWN_CHARS:
        shown = f"{shown[:_SHOWN_CHARS]}... ({len(shown)} characters)"
    message = f"the sidecar answered {method} with {shown}, not {expected}"
    return RemoteError(INTERNAL_ERROR, message, {"method": method})


class ChatHandle:
    """One running ``agent.chat.stream``: its events as they arrive, and its final summary.

    Attributes:
        chat_id: The chat's id (for ``agent.chat.cancel``).
    """

    def __init__(self, client: SidecarClient, chat_id: str, request: asyncio.Task[Any]) -> None:
        self.chat_id = chat_id
        self._client = client
        self._request = request
        self._queue: asyncio.Queue[ChatEvent | None] = asyncio.Queue()
        self.events_seen: list[ChatEvent] = []
        request.add_done_callback(lambda _: self._queue.put_nowait(None))

    def _event(self, event: ChatEvent) -> None:
        self.events_seen.append(event)
        self._queue.put_nowait(event)

    async def events(self) -> AsyncIterator[ChatEvent]:
        """Yield each ``agent.chat.event`` payload's ``event`` until the chat ends."""
        while True:
            event = await self._queue.get()
            if event is None:
                return
            yield event

    async def result(self) -> ChatSummary:
        """Wait for the chat to end; return ``{"chatId", "sessionId", "outcome", ...}``.

        Raises:
            RemoteError: The sidecar refused the chat: bad params (-32602), ``ConfigError`` (no model
                provider), ``UserError`` (the chat or session is already running); or answered
                something that is no summary (-32603).
        """
        try:
            answer = await self._request
        finally:
            self._client._chats.pop(self.chat_id, None)
        if not isinstance(answer, Mapping) or not isinstance(answer.get("outcome"), str):
            raise _malformed_result("agent.chat.stream", answer, "a summary with a string 'outcome'")
        return cast("ChatSummary", dict(answer))

    async def cancel(self) -> bool:
        """Ask the sidecar to cancel this chat; ``True`` when it was running."""
        answer = await self._client.request("agent.chat.cancel", {"chatId": self.chat_id})
        return bool(answer.get("cancelled")) if isinstance(answer, Mapping) else False


class SidecarClient:
    """A connection to one sidecar subprocess. Create it with :meth:`start`.

    Attributes:
        peer: The JSON-RPC connection.
        process: The child process.
        ready: The ``lifecycle.ready`` params (``version``, ``protocolVersion``, ``pid``, ``workspace``).
        seeds: Every ``read_state.seed`` params received.
        on_ask_user, on_tool_invoke, on_approval, on_read_state_seed, on_web_search: Reverse-call
            handlers (see the module docstring).
    """

    def __init__(self, process: asyncio.subprocess.Process, peer: JsonRpcPeer) -> None:
        self.process = process
        self.peer = peer
        self.ready: ReadyParams = cast("ReadyParams", {})  # set before start() returns
        self.seeds: list[ReadStateSeedParams] = []
        self.on_ask_user: Callable[[AskUserRequestParams], Awaitable[Mapping[str, Any] | None]] | None = None
        self.on_tool_invoke: Callable[[HostInvokeParams], Awaitable[ToolResult | Mapping[str, Any]]] | None
        self.on_tool_invoke = None
        self.on_approval: Callable[..., Awaitable[bool]] | None = None
        """``(call, mode)``, or ``(call, mode, *, question)`` to see a new host's question (SAFE-4)."""
        self.on_read_state_seed: Callable[[ReadStateSeedParams], Awaitable[None]] | None = None
        self.on_web_search: Callable[[WebSearchRequestParams], Awaitable[WebSearchResult]] | None = None
        self._chats: dict[str, ChatHandle] = {}
        self._ready = asyncio.Event()
        self._stderr = bytearray()
        self._stderr_task: asyncio.Task[None] | None = None
        self._serve_task: asyncio.Task[None] | None = None
        peer.add_notification("lifecycle.ready", self._on_ready)
        peer.add_notification("agent.chat.event", self._on_chat_event)
        peer.add_method("ask_user.request", self._ask_user)
        peer.add_method("tool.invoke", self._tool_invoke)
        peer.add_method("approval.request", self._approval)
        peer.add_method("read_state.seed", self._read_state_seed)
        peer.add_method("web_search.request", self._web_search)

    @classmethod
    async def start(
        cls,
        *,
        workspace: str | os.PathLike[str] | None = None,
        state_dir: str | os.PathLike[str] | None = None,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        python: str | None = None,
        cwd: str | os.PathLike[str] | None = None,
        ready_timeout_s: float = 30.0,
        command: Sequence[str] | None = None,
    ) -> SidecarClient:
        """Spawn ``python -P -m steerable_sidecar sidecar`` and wait for ``lifecycle.ready``.

        Args:
            workspace: ``--workspace`` (default: the child's working directory).
            state_dir: ``--state-dir`` for durable records.
            args: Extra command-line arguments for ``steerable sidecar``.
            env: The child's environment (default: this process's).
            python: The interpreter (default ``sys.executable``).
            cwd: The child's working directory.
            ready_timeout_s: Seconds to wait for ``lifecycle.ready``.
            command: The whole command line instead (a bundled sidecar, or one built around a
                custom router); ``workspace``, ``state_dir``, ``args`` and ``python`` are ignored.

        Returns:
            A connected client.

        Raises:
            SidecarStartError: The child exited or stayed silent first (the message carries its
                stderr).
        """
        if command is None:
            command = [python or sys.executable, "-P", "-m", "steerable_sidecar", "sidecar"]
            if workspace is not None:
                command += ["--workspace", str(workspace)]
            if state_dir is not None:
                command += ["--state-dir", str(state_dir)]
            command += list(args)
        child_env = dict(os.environ if env is None else env)
        if python_path := child_env.pop("PYTHONPATH", ""):  # -P keeps its relative entries (SAFE-1)
            child_env["PYTHONPATH"] = absolute_python_path(python_path)
        process = await asyncio.create_subprocess_exec(
            *command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=child_env,
            cwd=cwd,
        )
        assert process.stdin is not None and process.stdout is not None
        peer = JsonRpcPeer(process.stdout, process.stdin, name="host")
        client = cls(process, peer)
        client._stderr_task = asyncio.create_task(client._collect_stderr())
        client._serve_task = asyncio.create_task(peer.serve())
        exited = asyncio.create_task(process.wait())
        ready = asyncio.create_task(client._ready.wait())
        done, _ = await asyncio.wait(
            {exited, ready}, timeout=ready_timeout_s, return_when=asyncio.FIRST_COMPLETED
        )
        if ready not in done:
            ready.cancel()
            exited.cancel()
            await client._abort()
            state = (
                f"exited with {process.returncode}"
                if exited in done
                else f"sent nothing in {ready_timeout_s} s"
            )
            raise SidecarStartError(
                f"the sidecar {state} before lifecycle.ready; stderr:\n{client.stderr_tail}"
            )
        exited.cancel()
        return client

    # -- host -> sidecar ------------------------------------------------------------------------
    async def request(self, method: str, params: Params = None, *, timeout_s: float | None = None) -> Any:
        """Call one sidecar method and return its ``result``; the wrappers below all go through it.

        Args:
            method: The method (``plugin.list``, ``tool.invoke``...; docs/sidecar-protocol.md).
            params: Its params (an object, an array, or ``None``).
            timeout_s: Seconds to wait for the answer (``TimeoutError`` after).

        Raises:
            RemoteError: The error response, rebuilt as the ``SteerableError`` class its code names
                when it names one (see the module docstring); ``PeerClosedError`` when the sidecar
                went away first.
        """
        try:
            return await self.peer.request(method, params, timeout_s=timeout_s)
        except RemoteError as exc:
            typed = typed_remote_error(exc)
            if typed is exc:
                raise
            raise typed from None

    async def ping(self) -> PingResult:
        """``system.ping``: the sidecar's answer (an object).

        Raises:
            RemoteError: As :meth:`request`; -32603 when the answer is not an object
                (a malformed result).
        """
        answer = await self.request("system.ping")
        if not isinstance(answer, Mapping):
            raise _malformed_result("system.ping", answer, "an object")
        return cast("PingResult", dict(answer))

    async def list_tools(self) -> list[ToolDescriptor]:
        """``tool.list``: the full inventory ``[{name, description, parameters, mode, exposure}]``.

        Raises:
            RemoteError: As :meth:`request`; -32603 when the answer has no ``tools`` list of
                objects with a string ``name`` (a malformed result).
        """
        answer = await self.request("tool.list")
        tools = answer.get("tools") if isinstance(answer, Mapping) else None
        if not isinstance(tools, list) or not all(
            isinstance(tool, Mapping) and isinstance(tool.get("name"), str) for tool in tools
        ):
            raise _malformed_result("tool.list", answer, "{'tools': [{'name': str, ...}, ...]}")
        return [cast("ToolDescriptor", dict(tool)) for tool in tools]

    async def invoke(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        id: str | None = None,
        consent_granted: bool = False,
        context: Mapping[str, Any] | None = None,
        timeout_s: float | None = None,
    ) -> ToolResult:
        """``tool.invoke``: run one tool in the sidecar and return its :class:`ToolResult`.

        Args:
            name: The tool name.
            arguments: Its arguments.
            id: The call id (default: a fresh cuid2).
            consent_granted: Set after the user allowed a consent-mode (``local``) tool.
            context: Free-form metadata for the call's trace span.
            timeout_s: Seconds to wait for the answer.

        Raises:
            RemoteError: As :meth:`request` (a tool's failure is a result, not an error); -32603
                when the answer is not a ``ToolResult`` (a malformed result).
        """
        params: dict[str, Any] = {"id": id or new_call_id(), "name": name, "arguments": dict(arguments or {})}
        if consent_granted:
            params["consentGranted"] = True
        if context is not None:
            params["context"] = dict(context)
        answer = await self.request("tool.invoke", params, timeout_s=timeout_s)
        try:
            return ToolResult.model_validate(answer, strict=True)
        except ValidationError:
            raise _malformed_result("tool.invoke", answer, "a ToolResult") from None

    def start_chat(
        self,
        message: str | None = None,
        *,
        messages: Sequence[Mapping[str, Any]] | None = None,
        chat_id: str | None = None,
        session_id: str | None = None,
        system: str | None = None,
        ask_user: bool = False,
        tools_via_host: bool = False,
        tools: Sequence[Mapping[str, Any]] | None = None,
        auto_approve: bool = False,
        consent: str | None = None,
        max_rounds: int | None = None,
        model: str | None = None,
        harness: str | None = None,
    ) -> ChatHandle:
        """Start ``agent.chat.stream``; return at once with a :class:`ChatHandle` (events, result).

        Args:
            message: The user's message (or ``messages``: chat messages).
            messages: Chat messages to add instead of, or before, ``message``.
            chat_id: The chat's id (default: a fresh cuid2).
            session_id: The durable record to write, or resume when it exists.
            system: A system prompt for a new session.
            ask_user: Offer ``ask_user`` (answered by :attr:`on_ask_user`).
            tools_via_host: The host runs the tools (:attr:`on_tool_invoke`); needs ``tools``.
            tools: The host's tool descriptors (as :meth:`list_tools` returns them).
            auto_approve: Run consent-mode calls without ``approval.request``.
            consent: Which calls ask and which are refused: ``read-only``, ``ask``, ``default``,
                ``auto`` or the modes that ask (default: the sidecar's ``STEERABLE_CONSENT``).
            max_rounds: Model calls at most.
            model: Overrides the sidecar's ``STEERABLE_MODEL``.
            harness: ``full`` (default), ``minimal`` or ``progressive``.
        """
        ident = chat_id or new_call_id()
        params: dict[str, Any] = {"chatId": ident}
        for key, value in {
            "message": message,
            "messages": [dict(m) for m in messages] if messages is not None else None,
            "sessionId": session_id,
            "system": system,
            "tools": [dict(t) for t in tools] if tools is not None else None,
            "consent": consent,
            "maxRounds": max_rounds,
            "model": model,
            "harness": harness,
        }.items():
            if value is not None:
                params[key] = value
        for key, flag in {
            "askUser": ask_user,
            "toolsViaHost": tools_via_host,
            "autoApprove": auto_approve,
        }.items():
            if flag:
                params[key] = True
        request = asyncio.create_task(self.request("agent.chat.stream", params))
        handle = ChatHandle(self, ident, request)
        self._chats[ident] = handle
        return handle

    async def chat(
        self,
        message: str | None = None,
        *,
        messages: Sequence[Mapping[str, Any]] | None = None,
        chat_id: str | None = None,
        session_id: str | None = None,
        system: str | None = None,
        ask_user: bool = False,
        tools_via_host: bool = False,
        tools: Sequence[Mapping[str, Any]] | None = None,
        auto_approve: bool = False,
        consent: str | None = None,
        max_rounds: int | None = None,
        model: str | None = None,
        harness: str | None = None,
    ) -> ChatSummary:
        """:meth:`start_chat` with the same arguments, then its summary (``{"chatId", "outcome", ...}``).

        Raises:
            RemoteError: As :meth:`ChatHandle.result`.
        """
        handle = self.start_chat(
            message,
            messages=messages,
            chat_id=chat_id,
            session_id=session_id,
            system=system,
            ask_user=ask_user,
            tools_via_host=tools_via_host,
            tools=tools,
            auto_approve=auto_approve,
            consent=consent,
            max_rounds=max_rounds,
            model=model,
            harness=harness,
        )
        return await handle.result()

    async def shutdown(self, timeout_s: float = 10.0) -> int:
        """Send ``system.shutdown`` and wait for the process to exit; returns its exit code."""
        with contextlib.suppress(SteerableError, TimeoutError, ConnectionError):
            await self.request("system.shutdown", timeout_s=timeout_s)
        return await self._wait(timeout_s)

    async def aclose(self, timeout_s: float = 10.0) -> int:
        """Close stdin (the sidecar exits on EOF), wait, kill if needed; returns the exit code."""
        if self.process.returncode is None and self.process.stdin is not None:
            with contextlib.suppress(ConnectionError, OSError):
                self.process.stdin.close()
        return await self._wait(timeout_s)

    async def __aenter__(self) -> SidecarClient:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    @property
    def stderr_tail(self) -> str:
        """The last 64 KiB the sidecar wrote to stderr (its logs)."""
        return self._stderr.decode("utf-8", "replace")

    # -- sidecar -> host ------------------------------------------------------------------------
    async def _on_ready(self, params: Any) -> None:
        self.ready = cast("ReadyParams", dict(params) if isinstance(params, Mapping) else {})
        self._ready.set()

    async def _on_chat_event(self, params: Any) -> None:
        if not isinstance(params, Mapping):
            return
        handle = self._chats.get(str(params.get("chatId")))
        event = params.get("event")
        if handle is not None and isinstance(event, dict):
            handle._event(cast("ChatEvent", event))

    async def _ask_user(self, params: Any) -> dict[str, Any]:
        if self.on_ask_user is None:
            return {"cancelled": True}
        answers = await self.on_ask_user(cast("AskUserRequestParams", dict(params)))
        return {"cancelled": True} if answers is None else {"answers": dict(answers)}

    async def _tool_invoke(self, params: Any) -> dict[str, Any]:
        if self.on_tool_invoke is None:
            raise InvalidParams("this host runs no tools (no on_tool_invoke handler)")
        result = await self.on_tool_invoke(cast("HostInvokeParams", dict(params)))
        return result.to_wire() if isinstance(result, ToolResult) else dict(result)

    async def _approval(self, params: Any) -> dict[str, Any]:
        handler = self.on_approval
        if handler is None:
            return {"approved": False}
        call, mode = dict(params["call"]), str(params["mode"])
        if takes_question(handler):  # {reason, domain, url} for a new host's first web_fetch, else None
            question = {key: params[key] for key in ("reason", "domain", "url") if key in params} or None
            answer = await handler(call, mode, question=question)
        else:
            answer = await handler(call, mode)
        return {"approved": answer is True}  # consent is never inferred from a truthy value

    async def _read_state_seed(self, params: Any) -> dict[str, Any]:
        seed = cast("ReadStateSeedParams", dict(params))
        self.seeds.append(seed)
        if self.on_read_state_seed is not None:
            await self.on_read_state_seed(cast("ReadStateSeedParams", dict(params)))
        return {"ok": True}

    async def _web_search(self, params: Any) -> dict[str, Any]:
        if self.on_web_search is None:
            raise InvalidParams("this host runs no web search (no on_web_search handler)")
        return dict(await self.on_web_search(cast("WebSearchRequestParams", dict(params))))

    # -- plumbing -------------------------------------------------------------------------------
    async def _collect_stderr(self) -> None:
        stream = self.process.stderr
        assert stream is not None
        while chunk := await stream.read(65536):
            self._stderr += chunk
            if len(self._stderr) > _STDERR_TAIL_BYTES:
                del self._stderr[: len(self._stderr) - _STDERR_TAIL_BYTES]

    async def _wait(self, timeout_s: float) -> int:
        try:
            code = await asyncio.wait_for(self.process.wait(), timeout_s)
        except TimeoutError:
            self.process.kill()
            code = await self.process.wait()
        await self._stop_tasks()
        return code

    async def _abort(self) -> None:
        if self.process.returncode is None:
            self.process.kill()
            await self.process.wait()
        await self._stop_tasks()

    async def _stop_tasks(self) -> None:
        await self.peer.aclose()
        if self._stderr_task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait_for(self._stderr_task, 5)
        if self._serve_task is not None:
            await asyncio.gather(self._serve_task, return_exceptions=True)
