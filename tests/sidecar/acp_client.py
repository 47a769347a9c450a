"""An editor's side of ACP for the ``steerable acp`` tests: the official SDK's client, recording.

:class:`EditorClient` is what Zed would be: it records every ``session/update``, answers
``session/request_permission`` from a script of choices, answers ``elicitation/create`` with
canned answers, and may serve ``fs/read_text_file`` from an in-memory buffer. :func:`spawn_acp`
starts ``python -m steerable_sidecar acp`` as a real process and connects the SDK's
``ClientSideConnection`` to it; :func:`in_process_acp` serves the same agent in this process (the
same start-up path, over real pipes), where coverage sees it and a turn costs no interpreter start.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from collections import deque
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from acp import PROTOCOL_VERSION, RequestError, connect_to_agent, spawn_agent_process
from acp.client.connection import ClientSideConnection
from acp.interfaces import Client
from acp.schema import (
    AcceptElicitationResponse,
    AllowedOutcome,
    ClientCapabilities,
    DeclineElicitationResponse,
    DeniedOutcome,
    ElicitationCapabilities,
    ElicitationFormCapabilities,
    FileSystemCapabilities,
    PermissionOption,
    ReadTextFileResponse,
    RequestPermissionResponse,
    ToolCallUpdate,
)

from steerable_agent_runtime.llm import LLMProvider
from steerable_sidecar.acp._agent import AcpOptions
from steerable_sidecar.acp._command import AcpSetup, serve_streams
from steerable_sidecar.rpc._peer import open_fd_streams

WHOLE_TURN: list[Any] = [
    {
        "text": "Reading.",
        "tool_calls": [{"id": "c1", "name": "read_file", "arguments": {"path": "notes.txt"}}],
    },
    {
        "tool_calls": [
            {
                "id": "c2",
                "name": "edit_file",
                "arguments": {"path": "notes.txt", "edits": [{"oldText": "beta", "newText": "gamma"}]},
            }
        ]
    },
    {"tool_calls": [{"id": "c3", "name": "bash", "arguments": {"command": "cat notes.txt"}}]},
    "Done: beta is gamma now.",
]
"""A scripted turn over the seeded ``notes.txt``: read it (c1), edit beta to gamma (c2), bash (c3)."""

SLEEPING: list[Any] = [
    {"tool_calls": [{"id": "s1", "name": "bash", "arguments": {"command": "sleep 60"}}]},
    "never",
]
"""A scripted turn whose one call (s1) is a bash ``sleep 60``: for cancels and disappearing clients."""


AGENT_COMMAND: tuple[str, ...] = (
    sys.executable,
    "-P",
    "-m",
    "steerable_sidecar",
    "acp",
    "--no-plugins",
    "--no-web-tools",
)
"""The agent as the tests start it: this interpreter's ``steerable acp``, offline, no plugins."""


class EditorClient:
    """The ACP client (see the module docstring).

    Args:
        permissions: Option ids to pick, one per permission request, in order (``"cancelled"``
            answers the cancelled outcome); when they run out, ``reject_once``.
        answers: ``elicitation/create`` answers, in order (``None`` declines).
        hold_permission: When set, a permission request waits on it before answering.
        buffers: Open editor buffers, by absolute path, served to ``fs/read_text_file`` (a path
            not in it is answered "resource not found").
        hold_reads: When set, ``fs/read_text_file`` waits on it before answering.
    """

    def __init__(
        self,
        *,
        permissions: list[str] | None = None,
        answers: list[Mapping[str, Any] | None] | None = None,
        hold_permission: asyncio.Event | None = None,
        buffers: Mapping[str, str] | None = None,
        hold_reads: asyncio.Event | None = None,
    ) -> None:
        self.updates: list[Any] = []
        self.asked: list[tuple[ToolCallUpdate, list[PermissionOption]]] = []
        self.elicitations: list[tuple[str, Any]] = []
        self._permissions = deque(permissions or [])
        self._answers = deque(answers or [])
        self._hold = hold_permission
        self.buffers = dict(buffers or {})
        self._hold_reads = hold_reads
        self.reads: list[str] = []
        self.changed = asyncio.Event()

    async def request_permission(
        self, options: list[PermissionOption], session_id: str, tool_call: ToolCallUpdate, **kwargs: Any
    ) -> RequestPermissionResponse:
        self.asked.append((tool_call, options))
        self.changed.set()
        if self._hold is not None:
            await self._hold.wait()
        choice = self._permissions.popleft() if self._permissions else "reject_once"
        if choice == "cancelled":
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=choice))

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)
        self.changed.set()

    async def create_elicitation(self, message: str, mode: Any, **kwargs: Any) -> Any:
        self.elicitations.append((message, mode))
        answer = self._answers.popleft() if self._answers else None
        if answer is None:
            return DeclineElicitationResponse(action="decline")
        return AcceptElicitationResponse(action="accept", content=dict(answer))

    async def read_text_file(
        self, path: str, session_id: str, line: int | None = None, limit: int | None = None, **kwargs: Any
    ) -> ReadTextFileResponse:
        self.reads.append(path)
        if self._hold_reads is not None:
            await self._hold_reads.wait()
        if path not in self.buffers:
            raise RequestError.resource_not_found(path)
        return ReadTextFileResponse(content=self.buffers[path])

    def on_connect(self, conn: Any) -> None:
        pass

    # -- reading what was shown ----------------------------------------------------------------
    def of_kind(self, kind: str) -> list[Any]:
        """The updates whose ``sessionUpdate`` is ``kind`` (``tool_call``, ``agent_message_chunk``...)."""
        return [u for u in self.updates if u.session_update == kind]

    def text(self, kind: str = "agent_message_chunk") -> str:
        """The text of every ``kind`` chunk, joined."""
        return "".join(u.content.text for u in self.of_kind(kind))

    def call_updates(self, call_id: str) -> list[Any]:
        """Every ``tool_call`` / ``tool_call_update`` of one call, in order."""
        return [
            u
            for u in self.updates
            if u.session_update in ("tool_call", "tool_call_update") and u.tool_call_id == call_id
        ]

    async def wait_for(self, predicate: Any, timeout_s: float = 30) -> None:
        """Wait until ``predicate(self)`` holds."""
        async with asyncio.timeout(timeout_s):
            while not predicate(self):
                self.changed.clear()
                await self.changed.wait()


def capabilities(*, elicitation: bool = False, fs: bool = False) -> ClientCapabilities:
    """What the editor offers in ``initialize``."""
    form = ElicitationCapabilities(form=ElicitationFormCapabilities()) if elicitation else None
    return ClientCapabilities(elicitation=form, fs=FileSystemCapabilities(read_text_file=fs))


def write_script(path: Path, turns: list[Any]) -> Path:
    """The scripted model's turns as ``STEERABLE_SCRIPT`` reads them."""
    path.write_text(json.dumps(turns), encoding="utf-8")
    return path


@contextlib.asynccontextmanager
async def spawn_acp(
    client: EditorClient, env: Mapping[str, str], *args: str, stderr: Path | None = None
) -> AsyncIterator[tuple[ClientSideConnection, asyncio.subprocess.Process]]:
    """``python -m steerable_sidecar acp ARGS`` as a real process, with the SDK's client on its stdio."""
    with open(stderr or "/dev/null", "ab") as err:
        async with spawn_agent_process(
            cast("Client", client),
            *AGENT_COMMAND,
            *args,
            env=dict(env),
            transport_kwargs={"stderr": err.fileno()},
            use_unstable_protocol=True,
        ) as (conn, process):
            yield conn, process


async def start(conn: ClientSideConnection, *, elicitation: bool = False, fs: bool = False) -> Any:
    """``initialize`` as an editor sends it."""
    return await conn.initialize(
        protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities(elicitation=elicitation, fs=fs)
    )


@dataclass
class Served:
    """``steerable acp``'s :func:`serve_streams` running in this process over two pipes.

    Attributes:
        serving: The agent (its exit code once the client's side closes).
        reader: What the agent sends, for the client.
        writer: What the client sends to the agent.
        agent_writer: The agent's end of the second pipe (closed by :meth:`close`).
    """

    serving: asyncio.Future[int]
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    agent_writer: Any

    @classmethod
    async def start(cls, options: AcpOptions, provider: LLMProvider) -> Served:
        to_agent_read, to_agent_write = os.pipe()
        to_client_read, to_client_write = os.pipe()
        agent_reader, agent_writer = await open_fd_streams(to_agent_read, to_client_write)
        client_reader, client_writer = await open_fd_streams(to_client_read, to_agent_write)
        assert isinstance(client_writer, asyncio.StreamWriter)
        setup = AcpSetup(options, provider, None)
        serving = asyncio.ensure_future(serve_streams(agent_reader, agent_writer, lambda: setup))
        return cls(serving, client_reader, client_writer, agent_writer)

    async def close(self) -> None:
        """End the agent as an editor that quits does: EOF to it, its exit, both pipes drained."""
        self.writer.close()  # EOF: the agent ends its turns and returns
        assert await asyncio.wait_for(self.serving, 30) == 0
        self.agent_writer.close()
        while await self.reader.read(65536):  # to EOF: the read side's transport closes itself
            pass
        for writer in (self.writer, self.agent_writer):
            await writer.wait_closed()


@contextlib.asynccontextmanager
async def in_process_acp(
    client: EditorClient, options: AcpOptions, provider: LLMProvider
) -> AsyncIterator[ClientSideConnection]:
    """``steerable acp``'s :func:`serve_streams` in this process, the SDK's client over two pipes.

    Leaving closes the client's side; the agent then ends every turn and closes its sessions.
    """
    served = await Served.start(options, provider)
    conn = connect_to_agent(cast("Client", client), served.writer, served.reader, use_unstable_protocol=True)
    try:
        yield conn
    finally:
        await conn.close()
        await served.close()
