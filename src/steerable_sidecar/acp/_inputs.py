"""What ``steerable acp`` takes from the client: the prompt's blocks as text, the MCP servers as configs.

:func:`prompt_text` turns a ``session/prompt``'s content blocks into the user message (embedded
files as tagged context, links by name; images and audio are refused); :func:`mcp_configs` turns
the ``session/new`` MCP servers into steerable's stdio server configurations, their names made
tool-name safe; :func:`session_workspace` checks the folder a session opens (docs/acp.md).
"""

from __future__ import annotations

import html
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from acp import RequestError
from acp.schema import (
    EmbeddedResourceContentBlock,
    HttpMcpServer,
    McpServerStdio,
    ResourceContentBlock,
    SseMcpServer,
    TextContentBlock,
    TextResourceContents,
)

from steerable_agent_runtime.errors import SteerableError

from ..config._file import CONFIG_IN_WORKSPACE_ENV, config_file_inside
from ..shared._workspace_rule import container_posture, refused_folder
from ._updates import clipped

__all__ = ["MAX_EMBEDDED_CHARS", "mcp_configs", "prompt_text", "session_workspace"]

MAX_EMBEDDED_CHARS: Final = 100_000
"""The most characters of one embedded file put in the prompt (``read_file``'s display clip)."""

_SERVER_NAME_CHARS: Final = re.compile(r"[^A-Za-z0-9_-]+")
_UNDERSCORES: Final = re.compile(r"_{2,}")  # "__" separates the parts of an MCP tool's name


def mcp_configs(servers: Sequence[HttpMcpServer | SseMcpServer | McpServerStdio]) -> list[Any]:
    """The client's MCP servers as our stdio server configurations, names made tool-name safe."""
    from ..mcp_sources._config import McpServerConfig

    configs: list[McpServerConfig] = []
    taken: set[str] = set()
    for server in servers:
        if not isinstance(server, McpServerStdio):
            raise RequestError.invalid_params(
                {
                    "mcpServers": server.name,
                    "reason": "only stdio MCP servers are supported (mcpCapabilities)",
                }
            )
        base = _UNDERSCORES.sub("_", _SERVER_NAME_CHARS.sub("_", server.name)).strip("_")[:28] or "server"
        name, n = base, 2
        while name in taken:
            name, n = f"{base}_{n}", n + 1
        taken.add(name)
        env = {variable.name: variable.value for variable in server.env}
        try:
            configs.append(
                McpServerConfig(name=name, command=server.command, args=tuple(server.args), env=env)
            )
        except SteerableError as exc:  # an empty command
            raise RequestError.invalid_params({"mcpServers": server.name, "reason": str(exc)}) from exc
    return configs


def prompt_text(blocks: Sequence[Any]) -> str:
    """The user message of a prompt: its text, embedded files as tagged context, links by name."""
    parts: list[str] = []
    for block in blocks:
        if isinstance(block, TextContentBlock):
            parts.append(block.text)
        elif isinstance(block, ResourceContentBlock):
            parts.append(f"[{block.name}]({block.uri})")
        elif isinstance(block, EmbeddedResourceContentBlock):
            resource = block.resource
            uri = html.escape(resource.uri, quote=True)
            if isinstance(resource, TextResourceContents):
                text = clipped(resource.text, MAX_EMBEDDED_CHARS, "not included: read the file for the rest")
                parts.append(f'<context uri="{uri}">\n{text}\n</context>')
            else:
                parts.append(f"[binary resource {uri} not shown]")
        else:
            raise RequestError.invalid_params(
                {"prompt": block.type, "reason": "images and audio are not supported (promptCapabilities)"}
            )
    return "\n\n".join(parts)


def session_workspace(cwd: str, state_dir: Path) -> Path:
    """The session's workspace: ``cwd`` absolute, a directory, and one the workspace rule allows.

    The rule every command follows (``shared._workspace_rule``): not ``/``, a home folder or a
    folder above one, nor the state directory, a folder inside it or one holding it (the model
    could forge session records there, which a later ``session/load`` would replay as real);
    any folder in the container posture. Nor, unless ``STEERABLE_CONFIG_IN_WORKSPACE=1``, a
    folder holding the configuration file (docs/configuration.md).
    """
    if not isinstance(cwd, str) or not os.path.isabs(cwd):
        raise RequestError.invalid_params({"cwd": cwd, "reason": "cwd must be an absolute path"})
    root = Path(cwd).resolve()
    if not root.is_dir():
        raise RequestError.invalid_params({"cwd": cwd, "reason": "cwd is not a directory"})
    if not container_posture():
        why = refused_folder(root, command="acp", state_dir=state_dir)
        if why is not None:
            raise RequestError.invalid_params({"cwd": cwd, "reason": f"the folder {root} {why}"})
    config = config_file_inside(root)
    if config is not None:  # read at start, not from here: a model could rewrite the next start's
        reason = (
            f"the folder {root} holds steerable's configuration file {config}, where a model could "
            f"change its own provider, key or policy: open a project that does not, or set "
            f"{CONFIG_IN_WORKSPACE_ENV}=1"
        )
        raise RequestError.invalid_params({"cwd": cwd, "reason": reason})
    return root
