"""A host that started the wrong subcommand is told which one to run, under the usual error code.

``steerable sidecar``, ``steerable mcp`` and ``steerable acp`` all speak JSON-RPC on stdio: the
official MCP client pointed at ``steerable sidecar``, and hand-written ACP and sidecar requests sent
to the wrong process, get the standard error with the command that would answer them.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from steerable_sidecar.rpc._peer import INVALID_PARAMS, METHOD_NOT_FOUND

ACP_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 2,
    "method": "initialize",
    "params": {"protocolVersion": 1, "clientCapabilities": {}},
}


def _answers(
    run_cli: Callable[..., Any], command: str, workspace: Path, *requests: dict[str, Any]
) -> list[Any]:
    """The error objects ``steerable COMMAND`` answers ``requests`` with (their stdin then ends)."""
    proc = run_cli(command, "-w", str(workspace), stdin="".join(json.dumps(r) + "\n" for r in requests))
    assert proc.returncode == 0, proc.stderr
    frames = [json.loads(line) for line in proc.stdout.splitlines()]
    return [frame["error"] for frame in frames if "id" in frame]


async def test_the_mcp_client_pointed_at_the_sidecar_is_told_to_run_steerable_mcp(
    workspace: Path, child_env: Callable[..., dict[str, str]]
) -> None:
    from mcp import Client, MCPError, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "steerable_sidecar", "sidecar", "-w", str(workspace)],
        env=child_env(),
    )
    caught: list[MCPError] = []
    with open(os.devnull, "w") as errlog:
        try:
            async with Client(stdio_client(params, errlog=errlog)):
                pass
        except BaseException as exc:  # the SDK raises from its task groups
            pending: list[BaseException] = [exc]
            while pending:
                leaf = pending.pop()
                if isinstance(leaf, BaseExceptionGroup):
                    pending += leaf.exceptions
                elif isinstance(leaf, MCPError):
                    caught.append(leaf)
    assert [(e.error.code, e.error.message) for e in caught] == [
        (
            METHOD_NOT_FOUND,
            "Method not found: initialize: this is steerable's sidecar protocol, not MCP: configure the host "
            "to run `steerable mcp`",
        )
    ]


def test_an_acp_initialize_sent_to_the_sidecar_points_at_steerable_acp(
    run_cli: Callable[..., Any], workspace: Path
) -> None:
    assert _answers(run_cli, "sidecar", workspace, ACP_INITIALIZE) == [
        {
            "code": METHOD_NOT_FOUND,
            "message": "Method not found: initialize: this is steerable's sidecar protocol, not ACP: configure "
            "the editor to run `steerable acp`",
        }
    ]


def test_steerable_mcp_points_acp_and_sidecar_hosts_at_their_commands(
    run_cli: Callable[..., Any], workspace: Path
) -> None:
    tool_list = {"jsonrpc": "2.0", "id": 3, "method": "tool.list"}
    unknown = {"jsonrpc": "2.0", "id": 4, "method": "resources/list"}
    answers = _answers(run_cli, "mcp", workspace, ACP_INITIALIZE, tool_list, unknown)
    assert sorted(answers, key=lambda e: str(e["message"])) == [
        {
            "code": INVALID_PARAMS,
            "message": "Invalid params: 'protocolVersion' must be a string such as \"2025-06-18\": an integer "
            "protocolVersion is ACP's, and this is steerable's MCP server: configure the editor to run "
            "`steerable acp`",
        },
        {
            "code": METHOD_NOT_FOUND,
            "message": "Method not found: resources/list",  # nothing to point at: the standard answer
        },
        {
            "code": METHOD_NOT_FOUND,
            "message": "Method not found: tool.list: a method of steerable's sidecar protocol, and this is its "
            "MCP server: run `steerable sidecar`",
        },
    ]
