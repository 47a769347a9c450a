"""``steerable doctor``: what the installed tool will do on this machine, and what is wrong.

It resolves the configuration the way the commands do (the same boot, the same validation, so a
problem shows the message a command would print); what it reports is listed in README.md (Check
what it will do here). Nothing a report shows can carry a credential: secrets appear only as set
or unset, URLs lose their userinfo, query and fragment, and MCP server arguments the value of any
key/token/secret option (``--api-key X``, ``--token=X``).

Exit codes: 0 when nothing is wrong, 2 when a check failed (a misconfiguration: the same code the
commands exit with); ``warn`` rows (no sandbox backend, a provider not configured, a
``STEERABLE_*`` name nothing reads) do not fail.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal, TypeVar
from urllib.parse import urlsplit, urlunsplit

from steerable_agent_runtime import SteerableError, __version__
from steerable_agent_runtime.config import env_flag, env_text
from steerable_agent_runtime.errors import ConfigError, SandboxUnavailableError
from steerable_agent_runtime.sandbox import (
    LADDERS,
    PROTECTED_ENV,
    SandboxConfig,
    default_backends,
    select_backend,
)
from steerable_agent_runtime.workspace import (
    CROSS_PROCESS_LOCK_ENV,
    REQUIRE_READ_ENV,
    SearchEngine,
    ripgrep_setting,
)

from .._boot import Booted, boot_tools, offered_tools
from ..config._settings import VARIABLES, variable
from ..exit_codes import ExitCode
from ..shared._secrets import REDACTED

__all__ = [
    "Check",
    "DoctorReport",
    "Status",
    "add_doctor_arguments",
    "diagnose",
    "doctor_config_error",
    "run_doctor",
]

Status = Literal["ok", "off", "warn", "error"]
"""``ok`` works; ``off`` turned off on purpose; ``warn`` works partly or needs setting up for some
commands; ``error`` a misconfiguration the commands would refuse to start with."""

_T = TypeVar("_T")

_STYLE: Final = {"ok": "green", "off": "dim", "warn": "yellow", "error": "bold red"}


@dataclass(frozen=True, slots=True)
class Check:
    """One row of the report.

    Attributes:
        section: ``Configuration file``, ``Environment`` (unknown ``STEERABLE_*`` names), ``Workspace``,
            ``Tools``, ``Sandbox``, ``run_code``, ``Web tools``, ``Model provider``, ``Plugins``, ``MCP
            servers``, ``State and logs``.
        item: What is checked.
        value: What it resolved to.
        status: See :data:`Status`.
        detail: Why, or the message a command would print.
    """

    section: str
    item: str
    value: str
    status: Status = "ok"
    detail: str = ""


@dataclass(frozen=True, slots=True)
class DoctorReport:
    """The whole report: checks, then every variable.

    Attributes:
        checks: The rows, in section order.
        variables: ``{"name", "value", "source"}`` per ``STEERABLE_*`` variable; ``source`` is
            ``env`` or ``default``; a secret's value is ``set`` or ``unset``.
    """

    checks: tuple[Check, ...]
    variables: tuple[dict[str, str], ...] = field(default_factory=tuple)

    @property
    def errors(self) -> tuple[Check, ...]:
        """The checks with status ``error``."""
        return tuple(check for check in self.checks if check.status == "error")

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` form: ``{"version", "ok", "checks": [...], "variables": [...]}``."""
        return {
            "version": __version__,
            "ok": not self.errors,
            "checks": [
                {
                    "section": c.section,
                    "item": c.item,
                    "value": c.value,
                    "status": c.status,
                    "detail": c.detail,
                }
                for c in self.checks
            ],
            "variables": list(self.variables),
        }


@dataclass(slots=True)
class _Rows:
    rows: list[Check] = field(default_factory=list)
    origins: dict[str, str] = field(default_factory=dict)
    """Where the configuration file set each variable it gave: an error naming one says so."""

    def add(self, section: str, item: str, value: object, status: Status = "ok", detail: str = "") -> None:
        if status == "error" and self.origins:
            from ..config._file import with_origins

            detail = with_origins(detail, self.origins)
        self.rows.append(Check(section, item, str(value), status, detail))


def diagnose(
    workspace: str | os.PathLike[str] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    harness: str = "full",
    plugins: bool = True,
    web_tools: bool = True,
    allow_outside: bool = False,
    allow_protected_writes: bool | None = None,
    state_dir: str | os.PathLike[str] | None = None,
) -> DoctorReport:
    """Resolve the configuration as the commands do and check each part.

    Args:
        workspace: The workspace root (default: the current directory).
        environ: The environment (default ``os.environ``).
        harness: ``--harness``.
        plugins: Load the plugins (``--no-plugins`` passes ``False``). Loading runs their code,
            as every command does.
        web_tools: ``--no-web-tools`` passes ``False``.
        allow_outside: ``--allow-outside-workspace``.
        allow_protected_writes: ``--allow-protected-writes``; ``None`` reads the variable.
        state_dir: ``--state-dir``; default ``STEERABLE_STATE_DIR``, else the XDG state home.

    Returns:
        The report; nothing raises for a misconfiguration, it becomes an ``error`` row.
    """
    env = dict(os.environ if environ is None else environ)
    rows = _Rows()
    rows.add(
        "steerable", "version", __version__, detail=f"Python {platform.python_version()} ({sys.executable})"
    )
    rows.add("steerable", "platform", f"{platform.system()} {platform.release()} {platform.machine()}")
    root = Path(workspace) if workspace is not None else _current_directory(env)  # as the commands take it
    from_file = _config_file(rows, env, root)  # variable > file > default, as every command reads them
    _guarded(rows, "Environment", lambda: _environment(rows, env))  # the user's names, not the file's
    env.update(from_file)
    booted = _guarded(
        rows,
        "Tools",
        lambda: _boot(rows, root, env, harness, plugins, web_tools, allow_outside, allow_protected_writes),
    )
    try:
        _guarded(rows, "Workspace", lambda: _workspace(rows, root, env, allow_protected_writes))
        _guarded(rows, "Workspace", lambda: _workspace_rule(rows, workspace, env, state_dir))
        _guarded(rows, "Sandbox", lambda: _sandbox(rows, env))
        _guarded(rows, "System packages", lambda: _system_packages(rows, env))
        _guarded(rows, "run_code", lambda: _run_code(rows, env, booted))
        _guarded(rows, "Web tools", lambda: _web(rows, env, booted, web_tools))
        _guarded(rows, "Model provider", lambda: _provider(rows, env))
        _guarded(rows, "Plugins", lambda: _plugins(rows, booted, plugins))
        _guarded(rows, "MCP servers", lambda: _mcp(rows, env))
        _guarded(rows, "State and logs", lambda: _state(rows, env, state_dir))
    finally:
        if booted is not None:
            import asyncio

            asyncio.run(booted.aclose())
    from ..mcp_sources._sources import known_credentials

    scrub = known_credentials(env)
    checks = tuple(Check(c.section, c.item, scrub(c.value), c.status, scrub(c.detail)) for c in rows.rows)
    variables = tuple({**v, "value": scrub(v["value"])} for v in _variables(env, set(from_file)))
    return DoctorReport(checks, variables)


def _guarded(rows: _Rows, section: str, check: Callable[[], _T]) -> _T | None:
    """Run one section's checks; an unexpected exception becomes an ``error`` row, never a crash."""
    try:
        return check()
    except Exception as exc:  # any bug or odd input: a report row, never a traceback
        rows.add(section, "check", "failed", "error", f"{type(exc).__name__}: {exc}")
        return None


def _boot(
    rows: _Rows,
    root: Path,
    env: dict[str, str],
    harness: str,
    plugins: bool,
    web_tools: bool,
    allow_outside: bool,
    allow_protected_writes: bool | None,
) -> Booted | None:
    try:
        with contextlib.redirect_stdout(sys.stderr):  # a plugin's print at import
            booted = boot_tools(
                root,
                allow_outside=allow_outside,
                allow_protected_writes=allow_protected_writes,
                environ=env,
                harness=harness,
                plugins=plugins,
                web_tools=web_tools,
            )
    except SteerableError as exc:
        rows.add("Tools", "boot", "failed", "error", str(exc))
        return None
    offered = [tool.name for tool in offered_tools(booted.router, booted.harness.offered)]
    registered = len(list(booted.router))
    rows.add(
        "Tools",
        f"offered ({harness} harness)",
        f"{len(offered)} of {registered} registered",
        detail=", ".join(offered),
    )
    return booted


def _current_directory(env: dict[str, str]) -> Path:
    """The current directory; one removed under the shell is named as the shell had it (``PWD``).

    The workspace rule's row then says it is gone (a command refuses it the same way).
    """
    try:
        return Path(os.getcwd())
    except FileNotFoundError:
        return Path(env.get("PWD") or "(the current directory, removed)")


def _workspace(rows: _Rows, root: Path, env: dict[str, str], allow_protected: bool | None) -> None:
    section = "Workspace"
    try:
        resolved = root.resolve()
        is_dir = resolved.is_dir()
    except (OSError, RuntimeError) as exc:  # a symlink loop
        rows.add(section, "root", root, "error", f"the workspace {root} cannot be resolved: {exc}")
        return
    if not is_dir:
        rows.add(section, "root", resolved, "error", f"the workspace {resolved} is not a directory")
        return
    writable = os.access(resolved, os.W_OK)
    rows.add(section, "root", resolved, "ok" if writable else "warn", "" if writable else "not writable")
    for item, name, on, off in (
        ("read before write", REQUIRE_READ_ENV, "required", "not required"),
        ("cross-process lock", CROSS_PROCESS_LOCK_ENV, "on", "off"),
    ):
        try:
            value = env_flag(name, variable(name).default == "1", environ=env)
        except ConfigError as exc:
            rows.add(section, item, "invalid", "error", str(exc))
            continue
        rows.add(section, item, on if value else off, "ok" if value else "warn", name if not value else "")
    _search_engine(rows, env)
    try:
        protected = (
            allow_protected
            if allow_protected is not None
            else env_flag(PROTECTED_ENV, variable(PROTECTED_ENV).default == "1", environ=env)
        )
    except ConfigError as exc:
        rows.add(section, "protected paths", "invalid", "error", str(exc))
        return
    rows.add(
        section,
        "protected paths",
        "writable" if protected else "refused",
        "warn" if protected else "ok",
        ".git, shell start-up files, editor, agent and MCP configuration",
    )


# -- the workspace rule and the system packages (issue 32: their own modules hold the logic) -----


def _workspace_rule(
    rows: _Rows,
    workspace: str | os.PathLike[str] | None,
    env: dict[str, str],
    state_dir: str | os.PathLike[str] | None,
) -> None:
    """The one workspace rule (``shared._workspace_rule``): refused is an ``error``, the commands' message."""
    from ..shared._workspace_rule import container_posture, workspace_refusal

    given = None if workspace is None else os.fspath(workspace)
    refusal = workspace_refusal(given, command="doctor", state_dir=state_dir, environ=env)
    if refusal is not None:
        rows.add("Workspace", "workspace rule", "refused", "error", refusal)
        return
    allowed = (
        "STEERABLE_SANDBOX=container: any folder (the container is the boundary)"
        if container_posture(env)
        else "not /, a home folder or above one, nor holding the state directory"
    )
    rows.add("Workspace", "workspace rule", "allowed", detail=allowed)


def _system_packages(rows: _Rows, env: dict[str, str]) -> None:
    """One row per system package (bubblewrap, git): found and working, or how to install it."""
    from ._system_packages import system_package_checks

    for item, value, status, detail in system_package_checks(env):
        rows.add("System packages", item, value, status, detail)


def _search_engine(rows: _Rows, env: dict[str, str]) -> None:
    """Which engine ``grep`` and ``glob`` run on here: ripgrep (probed with ``--version``) or Python."""
    import asyncio

    try:
        engine = SearchEngine(ripgrep_setting(env), environ=env)
    except ConfigError as exc:
        rows.add("Workspace", "search engine", "invalid", "error", str(exc))
        return
    found = asyncio.run(engine.ripgrep())
    if found is not None:
        rows.add(
            "Workspace", "search engine", f"ripgrep {'.'.join(map(str, found.version))}", detail=found.path
        )
    else:
        rows.add(
            "Workspace", "search engine", "Python (no ignore files)", "warn", engine.fallback_reason or ""
        )


def _sandbox(rows: _Rows, env: dict[str, str]) -> None:
    section = "Sandbox"
    try:
        config = SandboxConfig.from_env(env)
    except ConfigError as exc:
        rows.add(section, "configuration", "invalid", "error", str(exc))
        return
    key = "linux" if sys.platform.startswith("linux") else sys.platform
    backends = default_backends()
    for name in LADDERS.get(key, ()):
        reason = backends[name].unavailable_reason()
        rows.add(section, f"probe: {name}", "works" if reason is None else "unavailable", "ok", reason or "")
    try:
        backend = select_backend(config)
    except SandboxUnavailableError as exc:
        forced = config.backend not in ("auto", "none")
        rows.add(section, "backend", "none", "error" if forced else "warn", str(exc))
        return
    why = (
        "STEERABLE_SANDBOX=container: the container is the boundary (no layer-2 wrap)"
        if config.container
        else "STEERABLE_SIDECAR_CONFINED=1: the host's sandbox"
        if config.confined
        else f"STEERABLE_SANDBOX={config.backend}"
        if config.backend != "auto"
        else "the first working backend of the platform's ladder"
    )
    info = backend.info
    rows.add(section, "backend", f"{info.backend} ({info.enforcement} enforcement)", detail=why)
    if config.container:
        rows.add(section, "network", "the container's")
    else:
        rows.add(
            section, "network", "allowed" if config.network else "blocked", "warn" if config.network else "ok"
        )
    present = [str(path) for path in config.deny_read if os.path.lexists(path)]
    rows.add(
        section,
        "deny-read",
        f"{len(present)} of {len(config.deny_read)} present",
        detail=", ".join(present) or "none of the default set exists here",
    )


def _run_code(rows: _Rows, env: dict[str, str], booted: Booted | None) -> None:
    from ..run_code._tool import RUN_CODE_ENV

    try:
        on = env_flag(RUN_CODE_ENV, False, environ=env)
    except ConfigError as exc:
        rows.add("run_code", "run_code", "invalid", "error", str(exc))
        return
    if not on:
        rows.add(
            "run_code", "run_code", "off", "off", f"{RUN_CODE_ENV}=1 turns it on (its limits are read then)"
        )
        return
    if booted is None:
        rows.add("run_code", "run_code", "unknown", "warn", "the tools did not boot (see Tools)")
        return
    registered = booted is not None and booted.router.get("run_code") is not None
    rows.add(
        "run_code", "run_code", "on" if registered else "not registered", "ok" if registered else "error"
    )


def _web(rows: _Rows, env: dict[str, str], booted: Booted | None, web_tools: bool) -> None:
    from ..web_tools import WebToolsConfig

    section = "Web tools"
    if not web_tools:
        rows.add(section, "web tools", "off", "off", "--no-web-tools")
        return
    try:
        config = WebToolsConfig.from_env(env)
    except ConfigError as exc:
        rows.add(section, "configuration", "invalid", "error", str(exc))
        return
    if booted is None:
        rows.add(section, "web tools", "unknown", "warn", "the tools did not boot (see Tools)")
        return
    names = {tool.name for tool in booted.router}
    rows.add(section, "web_fetch", "on" if "web_fetch" in names else "not registered")
    key = "set" if config.search_api_key else "unset"
    if "web_search" in names:
        rows.add(section, "web_search", f"on ({config.search_provider})", detail=config.search_base_url)
    else:
        rows.add(
            section,
            "web_search",
            f"off ({config.search_provider}, key {key})",
            "off",
            "tavily needs STEERABLE_WEB_SEARCH_API_KEY; STEERABLE_WEB_SEARCH_PROVIDER=ddg needs none",
        )
    if config.egress_confined:
        rows.add(section, "egress", f"confined to the proxy {_url_shown(config.egress_proxy or '')}")
    else:
        rows.add(
            section, "egress", "direct", detail="public hosts only: private, loopback and metadata refused"
        )
    allowed = ", ".join(config.allowed_domains) or "every public host"
    rows.add(section, "allowed domains", allowed)
    if config.blocked_domains:
        rows.add(section, "blocked domains", ", ".join(config.blocked_domains))


_PROVIDER_VARS: Final = tuple(var.name for var in VARIABLES if var.area == "Model provider")


def _provider(rows: _Rows, env: dict[str, str]) -> None:
    from ..providers._openai import LLMConfig, default_llm_provider

    section = "Model provider"
    try:
        config = LLMConfig.from_env(env)
        if config.provider == "scripted":
            default_llm_provider(config)  # loads and checks the script
    except ConfigError as exc:
        if any(env_text(name, env) for name in _PROVIDER_VARS):
            rows.add(section, "configuration", "invalid", "error", str(exc))
        else:
            rows.add(
                section,
                "provider",
                "not configured",
                "warn",
                "steerable run and the sidecar's chat need STEERABLE_MODEL (and STEERABLE_API_KEY)",
            )
        return
    rows.add(section, "provider", config.provider)
    if config.provider == "scripted":
        rows.add(section, "script", config.script)
        return
    rows.add(section, "model", config.model)
    rows.add(section, "base URL", config.base_url)
    rows.add(section, "profile", config.choice.profile.name, detail=f"chosen by {config.choice.why}")
    rows.add(section, "API key", "set" if config.api_key is not None else "unset")
    rows.add(section, "request timeout", f"{config.request_timeout_ms} ms")
    rows.add(section, "max tokens", config.max_tokens or "none sent")
    if config.temperature is not None:
        rows.add(section, "temperature", config.temperature)
    if config.thinking is not None:
        rows.add(section, "thinking", config.thinking)
    if config.extra_headers:  # names only: a value may be a gateway's key
        rows.add(section, "extra headers", ", ".join(sorted(config.extra_headers)))
    if config.extra_body:
        rows.add(section, "extra body", ", ".join(sorted(config.extra_body)))


def _plugins(rows: _Rows, booted: Booted | None, plugins: bool) -> None:
    if not plugins:
        rows.add("Plugins", "plugins", "off", "off", "--no-plugins")
        return
    if booted is None:
        return  # the boot row already says why
    infos = booted.plugins.plugins()
    if not infos:
        rows.add(
            "Plugins", "plugins", "none", "ok", "entry points (steerable.tools) and STEERABLE_PLUGIN_DIR"
        )
    for info in infos:
        rows.add(
            "Plugins",
            info.name,
            f"{info.state} ({info.origin})",
            detail=f"{info.source}: {', '.join(info.tools)}",
        )


def _mcp(rows: _Rows, env: dict[str, str]) -> None:
    from ..mcp_sources._sources import MAX_RESULT_BYTES, load_mcp_config_from_env

    try:
        MAX_RESULT_BYTES.read(env)
    except ConfigError as exc:
        rows.add("MCP servers", "result cap", "invalid", "error", str(exc))
    try:
        servers = load_mcp_config_from_env(env)
    except ConfigError as exc:
        rows.add("MCP servers", "configuration", "invalid", "error", str(exc))
        return
    if not servers:
        rows.add("MCP servers", "servers", "none", "ok", "STEERABLE_MCP_CONFIG names a JSON file of servers")
    for server in servers:
        found = shutil.which(server.command, path=(server.env or {}).get("PATH") or env.get("PATH"))
        where = f"found: {found}" if found else f"command {server.command!r} not found on PATH"
        if server.args:
            where += f"; {len(server.args)} argument(s) not shown (they may hold credentials)"
        rows.add("MCP servers", server.name, server.command, "ok" if found else "error", where)


def _state(rows: _Rows, env: dict[str, str], state_dir: str | os.PathLike[str] | None) -> None:
    import logging

    from ..shared._logging import log_level
    from ..shared._state_dir import STATE_DIR_ENV, checked_state_dir

    section = "State and logs"
    source = (
        "--state-dir"
        if state_dir is not None
        else STATE_DIR_ENV
        if env_text(STATE_DIR_ENV, env)
        else "the default"
    )
    try:  # the check run and sidecar make at start, without creating anything
        path = checked_state_dir(state_dir, environ=env, create=False)
    except ConfigError as exc:
        rows.add(section, "state directory", state_dir or "", "error", str(exc))
    else:
        made = "" if path.is_dir() else "; created at the first run or sidecar start"
        rows.add(section, "state directory", path, detail=f"({source}){made}")
    try:
        rows.add(section, "log level", logging.getLevelName(log_level(0, env)), detail="-v INFO, -vv DEBUG")
    except ConfigError as exc:
        rows.add(section, "log level", "invalid", "error", str(exc))


def _config_file(rows: _Rows, env: dict[str, str], root: Path) -> dict[str, str]:
    """The configuration file's row; returns the values it adds under the environment's.

    ``rows.origins`` gets where it set each, so a later error row naming one says so.
    """
    from ..config._file import read_config_file

    section = "Configuration file"
    try:
        loaded = read_config_file(env, workspace=root)
    except ConfigError as exc:
        rows.add(section, "file", "invalid", "error", str(exc))
        return {}
    if loaded.path is None:
        rows.add(section, "file", "off", "off", "STEERABLE_CONFIG=off")
        return {}
    if not loaded.found:
        rows.add(section, "file", "none", "ok", f"{loaded.path} (optional)")
        return {}
    if loaded.ignored:
        rows.add(section, "file", "ignored", "warn", f"{loaded.path}: {loaded.ignored}")
        return {}
    applied = loaded.applied(env)
    rows.origins = loaded.origins(applied)
    shadowed = sorted(set(loaded.values) - set(applied))
    detail = f"{loaded.path}; {len(applied)} setting(s) used"
    if shadowed:
        detail += f", {len(shadowed)} under a variable of the same name ({', '.join(shadowed)})"
    rows.add(section, "file", "read", "ok", detail)
    return applied


def _environment(rows: _Rows, env: Mapping[str, str]) -> None:
    """A ``warn`` row per ``STEERABLE_*`` name steerable does not read (a typo), else one ``ok`` row.

    ``warn``, not ``error``: such a variable changes nothing, and no command refuses to start for
    it (each prints the same warning on stderr); its value is never shown.
    """
    from ..config._unknown_env import PREFIX, unknown_message, unknown_variables

    section = "Environment"
    unknown = unknown_variables(env)
    for name, suggestion in unknown:
        rows.add(section, name, "ignored", "warn", unknown_message(suggestion))
    if not unknown:
        count = sum(1 for name in env if name.startswith(PREFIX))
        rows.add(section, f"{PREFIX}* variables", f"{count} set", detail="every name is one steerable reads")


def _variables(env: Mapping[str, str], from_file: set[str]) -> tuple[dict[str, str], ...]:
    out = []
    for var in VARIABLES:
        raw = env_text(var.name, env) or ""
        if var.kind == "secret" or var.masked:
            value = "set" if raw else "unset"
        elif var.kind == "url" and raw:
            value = _url_shown(raw)
        else:
            value = raw or var.default or "(unset)"
        source = "file" if var.name in from_file else "env" if raw else "default"
        out.append({"name": var.name, "value": value, "source": source})
    return tuple(out)


def _url_shown(url: str) -> str:
    """``url`` without what may carry a credential: userinfo, query and fragment become ``[redacted]``."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "(not a URL; not shown)"
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{REDACTED}@{netloc.rsplit('@', 1)[1]}"
    shown = urlunsplit((parts.scheme, netloc, parts.path, "", ""))
    return shown + (f"?{REDACTED}" if parts.query else "") + (f"#{REDACTED}" if parts.fragment else "")


def _print(report: DoctorReport) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    class _Console(Console):
        def on_broken_pipe(self) -> None:  # rich exits 1; a Unix filter's reader left: 141 (cli.main)
            raise BrokenPipeError

    console = _Console(highlight=False)
    table = Table(title=f"steerable {__version__} doctor", title_justify="left", expand=False)
    for column in ("section", "item", "value", "status", "detail"):
        table.add_column(column, overflow="fold")
    previous = ""
    for check in report.checks:
        section = check.section if check.section != previous else ""
        previous = check.section
        table.add_row(
            section,
            check.item,
            Text(check.value),
            Text(check.status, style=_STYLE[check.status]),
            Text(check.detail, style="dim"),
        )
    console.print(table)
    variables = Table(title="variables (docs/configuration.md)", title_justify="left")
    for column in ("variable", "value", "source"):
        variables.add_column(column, overflow="fold")
    for row in report.variables:
        variables.add_row(
            row["name"],
            Text(row["value"]),
            Text(row["source"], style="dim" if row["source"] == "default" else "bold"),
        )
    console.print(variables)


def add_doctor_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--json`` and ``--state-dir`` to ``steerable doctor``'s parser."""
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--state-dir", default=None, metavar="DIR", help="the state directory to check")


def doctor_config_error(args: argparse.Namespace, error: SteerableError) -> int:
    """A bad setting is one row of the report, with everything else: run the doctor all the same."""
    return run_doctor(args)


def run_doctor(args: argparse.Namespace) -> int:
    """Run ``steerable doctor`` with the parsed shared options; returns the exit code (0 or 2)."""
    report = diagnose(
        args.workspace,
        harness=args.harness,
        plugins=not args.no_plugins,
        web_tools=not args.no_web_tools,
        allow_outside=args.allow_outside_workspace,
        allow_protected_writes=args.allow_protected_writes,
        state_dir=args.state_dir,
    )
    if args.json:
        print(json.dumps(report.to_json(), indent=2, ensure_ascii=False))
    else:
        _print(report)
    for message in dict.fromkeys(check.detail or check.item for check in report.errors):
        print(f"steerable: {message}", file=sys.stderr)  # once each, as the commands print it
    return ExitCode.USAGE if report.errors else ExitCode.OK
