"""How every entry point builds its tools: the same order everywhere.

Spec: Third-party tools; docs/plugins.md, Sources and boot. ``sidecar``, ``session``, ``call``,
``mcp``, ``run`` and ``tools`` all boot the same way, so a newcomer's plugin shows up everywhere
at once:

1. the workspace tools for the workspace root (``workspace_tools_for_cwd``), the web pair
   (``web_search`` / ``web_fetch``, unless ``--no-web-tools``; ``web_search`` only with a search
   provider configured), and ``run_code`` when ``STEERABLE_RUN_CODE=1``;
2. plugins from every configured source (entry points in the ``steerable.tools`` group, then the
   ``STEERABLE_PLUGIN_DIR`` directory): any load failure aborts the boot, naming the plugin;
3. the harness strategy (``--harness``; ``progressive`` registers ``tool_search``).

MCP servers (``STEERABLE_MCP_CONFIG``, or ``steerable run --mcp FILE``) are connected by the async
entry points after these steps, with :func:`mcp_sources_for`; their tools land in the deferred tier,
where ``tool_search`` finds them.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

from steerable_agent_runtime import ToolRouter, Workspace, workspace_tools_for_cwd
from steerable_agent_runtime.config import env_flag, env_text
from steerable_agent_runtime.errors import ConfigError, PluginLoadError
from steerable_agent_runtime.harness import AssembledHarness, assemble_harness
from steerable_agent_runtime.plugins import PLUGIN_DIR_ENV, PluginRegistry, default_plugin_sources
from steerable_agent_runtime.tools import Tool, ToolExposure

from ._safe_path import drop_entries_inside

if TYPE_CHECKING:
    import argparse

    from .mcp_sources._sources import McpToolSources
    from .web_tools import HostInvoke, WebTools

logger = logging.getLogger(__name__)

_RUN_CODE_OFF: Final = "run_code is off (the user can turn it on with STEERABLE_RUN_CODE=1)."
_WEB_OFF: Final = "this run is offline: the web tools were turned off (--no-web-tools)."

__all__ = [
    "ALLOW_PLUGINS_IN_WORKSPACE_ENV",
    "Booted",
    "boot_from_options",
    "boot_tools",
    "mcp_sources_for",
    "offered_tools",
]

ALLOW_PLUGINS_IN_WORKSPACE_ENV: Final = "STEERABLE_ALLOW_PLUGINS_IN_WORKSPACE"
"""``1`` accepts a ``STEERABLE_PLUGIN_DIR`` inside the workspace (refused by default)."""


@dataclass(slots=True)
class Booted:
    """The tools of one process.

    Attributes:
        router: Every tool: workspace, plugins, and (after :func:`mcp_sources_for`) MCP tools.
        plugins: The plugin registry (its lifecycle calls change ``router`` at once).
        harness: The strategy that decides the offered list (``harness.offered()``).
        workspace: The workspace the file tools act in (its ``state`` is the session's read state).
        web: The web pair's state (HTTP clients, session counters), ``None`` without web tools.
    """

    router: ToolRouter
    plugins: PluginRegistry
    harness: AssembledHarness
    workspace: Workspace
    web: WebTools | None = None

    async def aclose(self) -> None:
        """Release what the tools hold open (the web tools' HTTP clients)."""
        if self.web is not None:
            await self.web.aclose()


def boot_tools(
    workspace: str | os.PathLike[str] | None,
    *,
    allow_outside: bool = False,
    allow_protected_writes: bool | None = None,
    environ: Mapping[str, str] | None = None,
    harness: str = "full",
    plugins: bool = True,
    web_tools: bool = True,
    web_config_errors: Literal["raise", "log"] = "raise",
    host_search: HostInvoke | None = None,
    read_max_chars: int | None = None,
) -> Booted:
    """Build the tools in the documented order.

    Args:
        workspace: The workspace root (default: the current directory).
        allow_outside: Accept file paths outside the workspace.
        allow_protected_writes: Let the tools write protected paths (``--allow-protected-writes``);
            ``None`` reads ``STEERABLE_ALLOW_PROTECTED_WRITES`` (default off).
        environ: The environment (default ``os.environ``).
        harness: ``full``, ``minimal`` or ``progressive``.
        plugins: Load the configured plugins (``False`` for tests and tooling).
        web_tools: Register ``web_search`` / ``web_fetch`` (``--no-web-tools`` passes ``False``).
        web_config_errors: What an invalid ``STEERABLE_WEB_*`` variable does: ``"raise"`` (headless
            and one-shot commands fail at load) or ``"log"`` (the sidecar logs it and serves
            without the web pair, so a typo in an optional feature cannot brick chat; spec: Bounds).
        host_search: The host's search over the reverse channel (the sidecar's
            ``web_search.request``), for ``STEERABLE_WEB_SEARCH_PROVIDER=host``.
        read_max_chars: ``read_file``'s clip in characters (``None``: the spec's 100,000);
            ``steerable mcp`` passes ``HOST_READ_MAX_CHARS``.

    Returns:
        The booted tools.

    Raises:
        PluginLoadError: A plugin failed to load (the message names it); the caller aborts.
        ConfigError: An invalid ``STEERABLE_*`` variable (the message names it).
        WorkspaceError: The workspace is not a directory.
        UserError: An unknown harness name.
    """
    root = Path(workspace) if workspace is not None else Path.cwd()
    drop_entries_inside(str(root))  # SAFE-1: nothing steerable imports from now on comes from it
    web: list[WebTools] = []

    def install_web(router: ToolRouter) -> None:
        from .web_tools import WEB_TOOL_NAMES, WebToolsConfig, install_web_tools

        try:
            config = WebToolsConfig.from_env(environ)
            web.append(install_web_tools(router, config, environ=environ, host_search=host_search))
        except ConfigError as exc:  # a bad STEERABLE_WEB_* value, or a proxy httpx cannot use
            if web_config_errors == "raise":
                raise
            logger.error("web_search and web_fetch are not served: %s", exc)
            for name in WEB_TOOL_NAMES:
                router.mark_unavailable(name, "the web tools are misconfigured here (see the sidecar's log).")

    router = workspace_tools_for_cwd(
        root,
        allow_outside=allow_outside,
        allow_protected_writes=allow_protected_writes,
        environ=environ,
        web_tools=install_web if web_tools else False,
        read_max_chars=read_max_chars,
    )
    from .run_code._switch import run_code_enabled  # spec: run_code, opt-in (STEERABLE_RUN_CODE=1)

    if run_code_enabled(environ):
        from .run_code._tool import run_code_tool

        run_code = run_code_tool(
            root, router=router, environ=environ, allow_protected_writes=allow_protected_writes
        )
        router.register(run_code)
    else:
        router.mark_unavailable("run_code", _RUN_CODE_OFF)
    if not web_tools:
        for name in ("web_search", "web_fetch"):
            router.mark_unavailable(name, _WEB_OFF)
    if plugins:
        _refuse_plugins_the_model_can_write(root, environ)
    registry = PluginRegistry(router, default_plugin_sources(environ) if plugins else ())
    registry.load_all()
    return Booted(
        router, registry, assemble_harness(harness, router), router.workspace, web[0] if web else None
    )


def _refuse_plugins_the_model_can_write(workspace: Path, environ: Mapping[str, str] | None) -> None:
    """A plugin the model can write would let its ``write_file`` run code in this process (SAFE-1).

    Plugins run in this process, which holds the API key (spec: run_code: "the sidecar process
    that holds the API key does not exec model Python"). Refused: a ``STEERABLE_PLUGIN_DIR`` inside
    the workspace, a plugin file in it that is a link resolving into the workspace, and one with
    other hard links (one may be in the workspace; finding it would mean walking the workspace).

    Raises:
        PluginLoadError: Either holds and ``STEERABLE_ALLOW_PLUGINS_IN_WORKSPACE`` is not ``1``.
    """
    env = os.environ if environ is None else environ
    folder = env_text(PLUGIN_DIR_ENV, env)  # blank: unset, as DirectorySource reads it
    if not folder or env_flag(ALLOW_PLUGINS_IN_WORKSPACE_ENV, False, environ=env):
        return
    try:
        plugin_dir, root = Path(folder).expanduser().resolve(), workspace.resolve()
        # the files DirectorySource loads (a missing folder is its error to report)
        files = [
            (entry.name, Path(entry.path).resolve(), entry.stat().st_nlink)
            for entry in (os.scandir(plugin_dir) if plugin_dir.is_dir() else ())
            if entry.name.endswith(".py") and not entry.name.startswith(("_", "."))
        ]
    except (RuntimeError, OSError) as exc:  # a symlink loop, an unknown ~user
        raise PluginLoadError(f"{PLUGIN_DIR_ENV}={folder} cannot be resolved: {exc}") from None
    fix = f"or set {ALLOW_PLUGINS_IN_WORKSPACE_ENV}=1 if you trust every writer of that folder"
    if plugin_dir == root or root in plugin_dir.parents:
        raise PluginLoadError(
            f"{PLUGIN_DIR_ENV}={folder} is inside the workspace {root}: the model can write files there, "
            "and a plugin runs inside this process with its secrets. Move the plugins out of the "
            f"workspace, {fix}"
        )
    for name, target, links in files:
        if links > 1 and not (target == root or root in target.parents):
            raise PluginLoadError(
                f"plugin file {plugin_dir / name} has {links} hard links: one may lie in the workspace "
                f"{root}, where the model can rewrite the file in place, and a plugin runs inside this "
                f"process with its secrets. Keep a plugin file of its own (cp, not ln), {fix}"
            )
        if target == root or root in target.parents:
            raise PluginLoadError(
                f"plugin file {plugin_dir / name} is a link to {target}, inside the workspace {root}: the "
                "model can write that file, and a plugin runs inside this process with its secrets. Copy "
                f"the plugin into {plugin_dir} instead of linking it, {fix}"
            )


def boot_from_options(options: argparse.Namespace, *, read_max_chars: int | None = None) -> Booted:
    """:func:`boot_tools` with a command's shared options (``steerable --help``), as parsed.

    Args:
        options: The parsed command line: ``workspace``, ``allow_outside_workspace``,
            ``allow_protected_writes``, ``harness``, ``no_plugins``, ``no_web_tools``.
        read_max_chars: ``read_file``'s clip (``steerable mcp``'s ``--read-max-chars``).

    Raises:
        SteerableError: What :func:`boot_tools` raises.
    """
    return boot_tools(
        options.workspace or os.getcwd(),
        allow_outside=options.allow_outside_workspace,
        allow_protected_writes=options.allow_protected_writes,
        harness=options.harness,
        plugins=not options.no_plugins,
        web_tools=not options.no_web_tools,
        read_max_chars=read_max_chars,
    )


def mcp_sources_for(
    router: ToolRouter, config: str | os.PathLike[str] | None, environ: Mapping[str, str] | None = None
) -> McpToolSources | None:
    """The MCP servers to connect: ``config`` (a JSON file), else ``STEERABLE_MCP_CONFIG``, else none.

    Returns:
        An unentered :class:`~steerable_sidecar.mcp_sources._sources.McpToolSources` (``async with`` it to
        connect and register the tools), or ``None`` when no configuration is given.

    Raises:
        ConfigError: The configuration file is missing or invalid (the message names it), or
            ``STEERABLE_MCP_MAX_RESULT_BYTES`` is not an integer in range.
    """
    env = os.environ if environ is None else environ
    from .mcp_sources._config import MCP_CONFIG_ENV

    path = config if config is not None else env_text(MCP_CONFIG_ENV, env)  # blank: unset
    if path is None:
        return None
    # the mcp SDK: only when servers are configured
    from .mcp_sources._sources import (
        MAX_RESULT_BYTES,
        McpToolSources,
        load_mcp_config,
        load_mcp_config_from_env,
    )

    servers = load_mcp_config(path) if config is not None else load_mcp_config_from_env(env)
    return McpToolSources(router, servers, max_result_bytes=MAX_RESULT_BYTES.read(env))


def offered_tools(
    router: ToolRouter, offered: Callable[[], Sequence[Mapping[str, Any]]] | None = None
) -> list[Tool]:
    """The tools a model (or an MCP host) is offered, in order: what ``tools/list`` serves.

    Args:
        router: The registered tools.
        offered: A harness's ``offered`` (OpenAI function descriptors); ``None`` means the
            direct tier.

    Returns:
        The offered tools that are registered on ``router``.
    """
    if offered is None:
        return [tool for tool in router if tool.exposure is ToolExposure.DIRECT]
    names = [descriptor.get("function", descriptor).get("name") for descriptor in offered()]
    found = (router.get(name) for name in names if isinstance(name, str))
    return [tool for tool in found if tool is not None]
