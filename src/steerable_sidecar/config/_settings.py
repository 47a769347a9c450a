"""Every ``STEERABLE_*`` variable the ``steerable`` command reads, in one table.

:data:`VARIABLES` is the runtime's table (``steerable_agent_runtime.settings``) followed by the
process-level variables: provider, web tools, ``run_code``, MCP servers, state and logging. Names,
defaults and bounds come from the constants the code reads. ``steerable doctor`` resolves them;
``scripts/generate_config_docs.py`` writes ``docs/configuration.md`` from them, and a test fails
when the file, or a variable the code reads, is missing from it. :data:`KNOWN_NAMES` adds the
internal names (:data:`INTERNAL_VARIABLES`): a ``STEERABLE_*`` variable of any other name is
reported as unknown by every command and by ``steerable doctor``.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from steerable_agent_runtime.settings import RUNTIME_VARIABLES, EnvVar, int_variables

from .._boot import ALLOW_PLUGINS_IN_WORKSPACE_ENV
from ..mcp_sources._sources import MAX_RESULT_BYTES, MCP_CONFIG_ENV
from ..providers._config import (
    API_KEY_ENV,
    BASE_URL_ENV,
    DEFAULT_MAX_TOKENS,
    DEFAULT_REQUEST_TIMEOUT_MS,
    EXTRA_BODY_ENV,
    EXTRA_HEADERS_ENV,
    MAX_MAX_TOKENS,
    MAX_REQUEST_TIMEOUT_MS,
    MAX_TOKENS_ENV,
    MODEL_ENV,
    PROVIDER_ENV,
    PROVIDER_NAMES,
    REQUEST_TIMEOUT_ENV,
    SCRIPT_ENV,
    TEMPERATURE_ENV,
    THINKING_CHOICES,
    THINKING_ENV,
)
from ..providers._vendor_profiles import PROFILE_ENV, PROFILE_NAMES
from ..run_code._tool import RUN_CODE_ENV, RunCodeConfig
from ..shared._logging import LOG_LEVEL_ENV, LOG_LEVELS
from ..shared._state_dir import STATE_DIR_ENV
from ..web_tools._config import (
    ALLOWED_DOMAINS_ENV,
    BLOCKED_DOMAINS_ENV,
    EGRESS_CONFINED_ENV,
    FETCH_TRUSTED_DOMAINS_ENV,
    SEARCH_API_KEY_ENV,
    SEARCH_BASE_URL_ENV,
    SEARCH_PROVIDER_ENV,
    SEARCH_PROVIDERS,
    WebToolsConfig,
)
from ._names import CONFIG_ENV, CONFIG_IN_WORKSPACE_ENV

__all__ = ["INTERNAL_VARIABLES", "KNOWN_NAMES", "VARIABLES", "EnvVar", "variable"]

_RUN_CODE_DOCS: Final = {
    "timeout_ms": ("Wall-clock time of one `run_code` program, nested calls included.", "ms"),
    "max_calls": ("Nested tool calls one program may make.", "calls"),
    "max_source_bytes": ("Size of the `code` argument in UTF-8 bytes; a bigger one never runs.", "bytes"),
    "max_output_bytes": ("Bytes a program may print, stdout and stderr together.", "bytes"),
    "max_value_bytes": ("Size of the program's return value as JSON.", "bytes"),
}

_WEB_DOCS: Final = {
    "fetch_timeout_ms": ("The whole of one `web_fetch`, redirects included.", "ms"),
    "fetch_max_bytes": ("The most body bytes a fetched page may push into the process.", "bytes"),
    "fetch_max_redirects": ("Same-origin redirects `web_fetch` follows; 0 follows none.", "redirects"),
    "search_timeout_ms": ("One `web_search` request.", "ms"),
    "search_max_results": ("Hits per `web_search`.", "results"),
    "session_search_cap": ("Searches per process; 0 = no cap.", "searches"),
    "session_fetch_cap": ("Fetches per process; 0 = no cap.", "fetches"),
}


_CONFIG_FILE: Final = (
    EnvVar(
        name=CONFIG_ENV,
        area="Configuration file",
        summary="The configuration file to read instead of the platform's (`~/.config/steerable/config.toml` "
        "on Linux); `off` reads none. A variable only.",
        kind="path",
    ),
    EnvVar(
        name=CONFIG_IN_WORKSPACE_ENV,
        area="Configuration file",
        summary="Read the configuration file even when it lies inside the workspace, where a model could "
        "edit it. A variable only.",
        kind="flag",
        default="0",
    ),
)

_PROVIDER: Final = (
    EnvVar(
        name=PROVIDER_ENV,
        area="Model provider",
        summary="The vendor `steerable run` and the sidecar's chat call (its default base URL and wire "
        "profile; `openai` also stands for any OpenAI-compatible server, profiled by its host); "
        "`scripted` replays `STEERABLE_SCRIPT` offline.",
        kind="choice",
        default="openai",
        choices=PROVIDER_NAMES,
        flag="--provider",
    ),
    EnvVar(
        name=MODEL_ENV,
        area="Model provider",
        summary="The model name sent with each request. Required, except for `scripted`.",
        kind="text",
        flag="--model",
    ),
    EnvVar(
        name=BASE_URL_ENV,
        area="Model provider",
        summary="The endpoint's base URL (requests go to `{base}/chat/completions`); default: the "
        "provider's own URL (`azure` has none). No credentials or fragment; no query except Azure's "
        "`api-version`.",
        kind="url",
        flag="--base-url",
    ),
    EnvVar(
        name=API_KEY_ENV,
        area="Model provider",
        summary="Sent as `Authorization: Bearer <key>` (Azure: `api-key: <key>`). Required, except for "
        "local servers (`ollama`, `vllm`, `sglang`, `llama-cpp`, `lm-studio`) and `scripted`. Never "
        "shown: `steerable doctor` says only whether it is set.",
        kind="secret",
    ),
    EnvVar(
        name=SCRIPT_ENV,
        area="Model provider",
        summary="A JSON file of scripted turns, for `STEERABLE_PROVIDER=scripted` (checked at load).",
        kind="path",
    ),
    EnvVar(
        name=REQUEST_TIMEOUT_ENV,
        area="Model provider",
        summary="The longest wait for any single network step of a model call (connect, send, each "
        "read of the stream).",
        kind="int",
        default=str(DEFAULT_REQUEST_TIMEOUT_MS),
        floor=1,
        ceiling=MAX_REQUEST_TIMEOUT_MS,
        unit="ms",
    ),
    EnvVar(
        name=PROFILE_ENV,
        area="Model provider",
        summary="The vendor profile (what is sent and echoed back) whatever the host: for a gateway in "
        "front of one vendor, or a local server. Unset: the provider's, else the host's, else `openai`.",
        kind="choice",
        choices=PROFILE_NAMES,
        flag="--profile",
    ),
    EnvVar(
        name=MAX_TOKENS_ENV,
        area="Model provider",
        summary="The output bound of each model call (sent as the profile's `max_tokens` or "
        "`max_completion_tokens`); 0 sends none. A cut-off answer ends the run `incomplete`.",
        kind="int",
        default=str(DEFAULT_MAX_TOKENS),
        floor=0,
        ceiling=MAX_MAX_TOKENS,
        unit="tokens",
        flag="--max-tokens",
    ),
    EnvVar(
        name=TEMPERATURE_ENV,
        area="Model provider",
        summary="Sampling temperature, 0 to 2. Unset: the model's default.",
        kind="number",
        flag="--temperature",
    ),
    EnvVar(
        name=THINKING_ENV,
        area="Model provider",
        summary="A thinking model's reasoning on or off, or its effort, sent the way the profile's "
        "vendor reads it. Unset: the model's default.",
        kind="choice",
        choices=THINKING_CHOICES,
        flag="--thinking",
    ),
    EnvVar(
        name=EXTRA_HEADERS_ENV,
        area="Model provider",
        summary="More HTTP headers for each model call, a JSON object of strings (a gateway's "
        "routing or attribution headers); not the client's own (`Content-Length`, `Host`...) nor the "
        "key's header when `STEERABLE_API_KEY` is set. Values are never shown and are scrubbed from errors.",
        kind="json",
        masked=True,
    ),
    EnvVar(
        name=EXTRA_BODY_ENV,
        area="Model provider",
        summary="More request fields for each model call, a JSON object merged last (a vendor option "
        "steerable has no setting for); `model`, `messages`, `stream`, `tools` are refused.",
        kind="json",
    ),
)

_WEB: Final = (
    EnvVar(
        name=SEARCH_PROVIDER_ENV,
        area="Web tools",
        summary="The `web_search` backend: `tavily` (needs a key), `ddg` (DuckDuckGo lite, no key) or "
        "`host` (the sidecar's host runs each search).",
        kind="choice",
        default=WebToolsConfig().search_provider,
        choices=SEARCH_PROVIDERS,
        flag="--no-web-tools (omits web_search and web_fetch)",
    ),
    EnvVar(
        name=SEARCH_API_KEY_ENV,
        area="Web tools",
        summary="The search backend's key (else `TAVILY_API_KEY`); never the model's key. Without one, "
        "`tavily` registers no `web_search`.",
        kind="secret",
    ),
    EnvVar(
        name=SEARCH_BASE_URL_ENV,
        area="Web tools",
        summary="The search backend's base URL.",
        kind="url",
        default=WebToolsConfig().search_base_url,
    ),
    EnvVar(
        name=ALLOWED_DOMAINS_ENV,
        area="Web tools",
        summary="When set, the only hosts (and their subdomains) the web tools may reach.",
        kind="list",
    ),
    EnvVar(
        name=BLOCKED_DOMAINS_ENV,
        area="Web tools",
        summary="Hosts (and subdomains) or addresses the web tools never reach; wins over the allow-list.",
        kind="list",
    ),
    EnvVar(
        name=FETCH_TRUSTED_DOMAINS_ENV,
        area="Web tools",
        summary="Hosts (and subdomains) `web_fetch` reaches without asking first in an interactive session "
        "(sidecar chat, ACP, an MCP client that can elicit); restricts nothing.",
        kind="list",
    ),
    EnvVar(
        name=EGRESS_CONFINED_ENV,
        area="Web tools",
        summary="The host confines outbound traffic to its egress proxy (`HTTPS_PROXY`...), which must "
        "be set; the web tools then go through it.",
        kind="flag",
        default="0",
    ),
    *int_variables("Web tools", WebToolsConfig, _WEB_DOCS),
)

_PROCESS: Final = (
    EnvVar(
        name=RUN_CODE_ENV,
        area="run_code",
        summary="Register `run_code`: a Python program in a sandboxed child that calls the tools.",
        kind="flag",
        default="0",
    ),
    *int_variables("run_code", RunCodeConfig, _RUN_CODE_DOCS),
    EnvVar(
        name=ALLOW_PLUGINS_IN_WORKSPACE_ENV,
        area="Plugins",
        summary="Accept a `STEERABLE_PLUGIN_DIR` inside the workspace (refused by default: the model can "
        "write files there).",
        kind="flag",
        default="0",
    ),
    EnvVar(
        name=MCP_CONFIG_ENV,
        area="MCP servers",
        summary="A JSON file (`mcpServers` shape) of MCP servers to connect at start; their tools land "
        "in the deferred tier.",
        kind="path",
        flag="--mcp FILE (steerable run)",
    ),
    EnvVar(
        name=MAX_RESULT_BYTES.variable,
        area="MCP servers",
        summary="The most one MCP tool result brings into the conversation, as UTF-8 JSON: a larger "
        "one is spilled whole (the model gets a preview and a `spill://` locator), or cut with a "
        "note where nothing stores spills (about Claude Code's 25,000-token `MAX_MCP_OUTPUT_TOKENS`).",
        kind="int",
        default=str(MAX_RESULT_BYTES.default),
        floor=MAX_RESULT_BYTES.floor,
        ceiling=MAX_RESULT_BYTES.ceiling,
        unit="bytes",
    ),
    EnvVar(
        name=STATE_DIR_ENV,
        area="State and logs",
        summary="Where durable session records and spilled data go. Default "
        "`$XDG_STATE_HOME/steerable`, else `~/.local/state/steerable`.",
        kind="path",
        flag="--state-dir DIR (run, sidecar)",
    ),
    EnvVar(
        name=LOG_LEVEL_ENV,
        area="State and logs",
        summary="The stderr log level of every command.",
        kind="choice",
        default="WARNING",
        choices=LOG_LEVELS,
        flag="--verbose/-v (INFO), -vv (DEBUG)",
    ),
)

VARIABLES: Final[tuple[EnvVar, ...]] = (*RUNTIME_VARIABLES, *_PROVIDER, *_WEB, *_PROCESS, *_CONFIG_FILE)
"""Every ``STEERABLE_*`` variable, grouped by :attr:`EnvVar.area`."""

INTERNAL_VARIABLES: Final[Mapping[str, str]] = MappingProxyType(
    {
        "STEERABLE_CONFORMANCE_PYTHON": "scripts/mcp_conformance.py: the interpreter of `steerable mcp`.",
        "STEERABLE_CONFORMANCE_SRC": "scripts/mcp_conformance.py: a source tree first on its PYTHONPATH.",
    }
)
"""``STEERABLE_*`` names read outside the commands, by the repository's own tools (which pass them
on to the ``steerable`` they start): known, so never reported as unknown, but not in
docs/configuration.md (``{name: who reads it, and what for}``)."""

KNOWN_NAMES: Final[frozenset[str]] = frozenset({var.name for var in VARIABLES} | set(INTERNAL_VARIABLES))
"""Every name steerable reads: a ``STEERABLE_*`` variable of any other name is reported as unknown,
with the closest of these (``steerable_sidecar.config._unknown_env``, which holds a copy for start-up)."""


def variable(name: str) -> EnvVar:
    """Return the entry of ``name``.

    Raises:
        KeyError: When no variable has that name.
    """
    for entry in VARIABLES:
        if entry.name == name:
            return entry
    raise KeyError(name)
