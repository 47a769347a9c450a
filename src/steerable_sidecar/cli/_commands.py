"""The ``steerable`` command table: every command, its help, its options and the code that runs it.

One row per command (:class:`Command`); the parser (``_parser.build_parser``) and the dispatch
(``_main``) read it, and nothing else branches on the command's name. A row names its code as
``"module:function"`` under ``steerable_sidecar``, imported only when that command is parsed or
run (start-up: benchmarks/startup.py), and each command's code is in the module named for it:
``cli/_NAME.py`` for the commands that end with their work, the ``NAME/`` subpackage for
``run``, ``sidecar``, ``mcp`` and ``acp``.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final, Literal

from ..exit_codes import exit_codes_help

__all__ = ["COMMANDS", "Command", "resolve"]


@dataclass(frozen=True, slots=True)
class Command:
    """One ``steerable`` command.

    Attributes:
        name: What the user types (``steerable NAME``).
        summary: Its line in ``steerable --help``.
        description: Its ``steerable NAME --help`` text: what it does and what it is for.
        run: ``"module:function"``. A one-shot command's is ``async (args, booted, shutdown) -> int``,
            run once the tools are booted here; a served command's is ``(args) -> int`` and starts
            its own way (``run``, ``sidecar``, ``mcp``, ``acp``, ``doctor``, ``jobs``).
        arguments: ``"module:function"`` adding its own options to its parser, if it has any.
        one_shot: The tools are booted here, then ``run`` does its work and the command ends.
        shared: It takes the shared options (``--workspace``, ``--harness``...); ``jobs`` does not.
        refused: The shared options it refuses, each with why; they are not listed in its help.
        connects_mcp: A one-shot command connects the ``STEERABLE_MCP_CONFIG`` servers first.
        applies_config_file: The configuration file is applied before it runs (``doctor`` reads
            the file itself, to say where each value came from).
        workspace: How the one workspace rule (``shared._workspace_rule``) applies: ``opened``, the
            folder it opens is checked before it runs; ``per_session``, each session's folder is
            (``acp``: the configuration file is not looked for in a workspace at start);
            ``reported``, it says so in its report (``doctor``); ``none``, it opens no folder.
        on_config_error: ``"module:function"``, ``(args, error) -> int``: how it reports a bad
            setting itself (``doctor`` in its table, ``run`` in its JSON line, ``mcp`` to the
            host); by default the message is printed and the exit code is 2.
        on_usage_error: ``"module:function"``, ``(message) -> None``: what it prints before a usage
            error (``run``: its one-line JSON summary on stdout).
        serves_stdio: It reads requests on stdin and answers on stdout (``session``, ``mcp``,
            ``acp``, ``sidecar``): started with either closed, it says so and exits 2.
        epilog: Text after its ``--help``.
    """

    name: str
    summary: str
    description: str
    run: str
    arguments: str | None = None
    one_shot: bool = False
    shared: bool = True
    refused: Mapping[str, str] = field(default_factory=dict)
    connects_mcp: bool = True
    applies_config_file: bool = True
    workspace: Literal["opened", "per_session", "reported", "none"] = "opened"
    on_config_error: str | None = None
    on_usage_error: str | None = None
    serves_stdio: bool = False
    epilog: str | None = None


def resolve(target: str) -> Any:
    """The function ``"module:function"`` names (``module`` relative to ``steerable_sidecar``)."""
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(f"steerable_sidecar.{module}"), name)


_ACP_OWN_FOLDER: Final = (
    "is not accepted: each session's workspace is the folder the editor opens (session/new's cwd), "
    "confined to it"
)

_RUN_EPILOG: Final = (
    "The model comes from --provider, --model and --base-url, else STEERABLE_PROVIDER (openai, "
    "anthropic, ollama, vllm, openrouter, deepseek... or scripted), STEERABLE_MODEL and "
    "STEERABLE_BASE_URL, else the configuration file (~/.config/steerable/config.toml); the key only "
    "from STEERABLE_API_KEY or the file (STEERABLE_SCRIPT for scripted). `steerable doctor` shows "
    "where each came from. " + exit_codes_help()
)
"""``steerable run --help``'s epilog: where the model comes from, then the exit codes."""

_ROWS: Final = (
    Command(
        "tools",
        "list the offered tools (name, mode, tier, description)",
        "List the tools offered in the workspace: name, mode (read, safe_write, destructive, local, "
        "external), tier and description; --json prints each one's full descriptor, input schema "
        "included. It is the list `steerable mcp` serves.",
        run="cli._tools:run_tools",
        arguments="cli._tools:add_tools_arguments",
        one_shot=True,
    ),
    Command(
        "call",
        "run one tool call and print its ToolResult JSON",
        "Run one tool call in the workspace and print its ToolResult JSON on stdout; exit 0 when the "
        'result succeeded, 1 when it failed. Example: steerable call read_file \'{"path": "README.md"}\'. '
        "Each call is its own session: for several steps that share read state, use `session` or `mcp`.",
        run="cli._call:run_call",
        arguments="cli._call:add_call_arguments",
        one_shot=True,
    ),
    Command(
        "session",
        "ToolCall JSON lines on stdin -> result lines on stdout",
        "Read one ToolCall JSON object per line on stdin and write one result line per call on "
        "stdout, keeping the read state between calls: the tools for a script or a host of your own "
        '(docs/mcp.md, "The line session").',
        run="cli._session:run_session_command",
        one_shot=True,
        serves_stdio=True,
    ),
    Command(
        "mcp",
        "serve the tools over MCP stdio",
        "Serve the workspace tools to an MCP host (Claude Desktop, Claude Code, Cursor...) over stdio. "
        "In the host's configuration, name the project: a host may start the server in / or a home "
        "directory, and serving those is refused (docs/mcp.md).",
        run="mcp._command:mcp_command",
        arguments="mcp._command:add_mcp_arguments",
        serves_stdio=True,
        on_config_error="mcp._command:mcp_config_error",
    ),
    Command(
        "acp",
        "run the agent for an ACP editor (Agent Client Protocol on stdio)",
        "Run steerable as the agent of an Agent Client Protocol editor (Zed, JetBrains IDEs...) over "
        "stdio: the editor starts it, each session works in the folder the editor opens, confined to "
        "it, and the model comes from the STEERABLE_* settings (docs/acp.md).",
        run="acp._command:run_acp",
        arguments="acp._command:add_acp_arguments",
        serves_stdio=True,
        refused={
            "--workspace": f"--workspace {_ACP_OWN_FOLDER}",
            "--allow-outside-workspace": f"--allow-outside-workspace {_ACP_OWN_FOLDER}",
        },
        workspace="per_session",
    ),
    Command(
        "plugins",
        "list the plugins, their origins and tools",
        "List the plugins found (steerable.tools entry points and STEERABLE_PLUGIN_DIR): where each "
        "came from, whether it loaded, and its tools (docs/plugins.md).",
        run="cli._plugins:run_plugins",
        arguments="cli._plugins:add_plugins_arguments",
        one_shot=True,
        connects_mcp=False,  # listing plugins needs no MCP server started
    ),
    Command(
        "doctor",
        "show the resolved configuration and what each part will do here; exit 2 on a problem",
        "Resolve the configuration the way every command does and show what each part will do "
        "here: the sandbox, the search engine, the web tools, the model provider, plugins, MCP servers, "
        "the state directory and every STEERABLE_* variable. Exit 2 on a misconfiguration, with the "
        "message the failing command would print.",
        run="cli._doctor:run_doctor",
        arguments="cli._doctor:add_doctor_arguments",
        applies_config_file=False,
        workspace="reported",
        on_config_error="cli._doctor:doctor_config_error",
    ),
    Command(
        "jobs",
        "list (or stop) the processes bash commands left running (STEERABLE_SANDBOX=container)",
        "List the background processes that bash commands left running in the container posture "
        "(STEERABLE_SANDBOX=container), or stop them with `steerable jobs stop` (docs/sandbox.md, "
        '"The container posture").',
        run="cli._jobs:run_jobs",
        arguments="cli._jobs:add_jobs_arguments",
        shared=False,  # reads its records alone: none of the shared options is its
        workspace="none",
    ),
    Command(
        "run",
        "one headless agent run in a jailed workspace; prints a JSON summary line on stdout",
        "Run the agent once, headless, on one task in a jailed workspace: progress on stderr, one JSON "
        "summary line on stdout and an exit code per outcome; for evals and CI (docs/headless.md).",
        run="run._headless:run_headless",
        arguments="run._headless:add_run_arguments",
        refused={
            "--allow-outside-workspace": "steerable run jails the workspace: --allow-outside-workspace "
            "is not accepted"
        },
        on_config_error="run._headless:run_config_error",
        on_usage_error="run._headless:usage_line",
        epilog=_RUN_EPILOG,
    ),
    Command(
        "sidecar",
        "serve the tools and the agent loop to a host (JSON-RPC 2.0 on stdio)",
        "Serve the tools and the agent loop to a host application over stdio (JSON-RPC 2.0, one "
        "object per line), sessions recorded in the state directory; SidecarClient starts it "
        "(docs/sidecar-protocol.md).",
        run="sidecar._command:sidecar_command",
        arguments="sidecar._command:add_sidecar_arguments",
        serves_stdio=True,
    ),
)

COMMANDS: Final[Mapping[str, Command]] = MappingProxyType({row.name: row for row in _ROWS})
"""Every ``steerable`` command by name, in the order ``steerable --help`` lists them."""
