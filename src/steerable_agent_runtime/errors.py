"""The exception tree of steerable: every exception the runtime raises derives from SteerableError.

:class:`ToolSignal` subclasses are the only exceptions the router converts into a ``ToolResult``
on purpose; :class:`UserError` is never converted: it is raised to the developer. The whole tree,
with what each class means: docs/runtime.md, Errors.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ConfigError",
    "DuplicateToolError",
    "EditError",
    "McpServerError",
    "PatchError",
    "PathEscapeError",
    "PeerClosedError",
    "PluginLoadError",
    "PluginStateError",
    "ProviderError",
    "RemoteError",
    "SandboxUnavailableError",
    "SidecarStartError",
    "SteerableError",
    "ToolFailed",
    "ToolRetry",
    "ToolSignal",
    "UserError",
    "WebError",
    "WorkspaceError",
    "WriteConflictError",
]


class SteerableError(Exception):
    """Root of every exception steerable raises."""


class ToolSignal(SteerableError):
    """Raised inside a tool to end the call with a failed ``ToolResult``.

    Args:
        error: The debug-friendly error string (``ToolResult.error``).
        message: Optional user-facing text (``ToolResult.message``).
        next_action: Optional machine-readable hint (``ToolResult.nextAction``).
        data: Optional structured payload (``ToolResult.data``).
    """

    def __init__(
        self,
        error: str,
        *,
        message: str | None = None,
        next_action: str | None = None,
        data: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(error)
        self.error = error
        self.message = message
        self.next_action = next_action
        self.data = data


class ToolRetry(ToolSignal):
    """Raised by a tool when the model can fix the call; the result carries ``needsFollowup``.

    Spec: Completion semantics (a failure with needsFollowup re-prompts the model).
    """


class ToolFailed(ToolSignal):
    """Raised by a tool when the run must stop; the result carries ``terminal: true``."""


class UserError(SteerableError):
    """Raised when a developer uses the API wrongly; never turned into a ToolResult."""


class DuplicateToolError(UserError):
    """Raised when a tool name is registered twice on one router."""

    def __init__(self, name: str) -> None:
        super().__init__(f"a tool named {name!r} is already registered")
        self.name = name


class PluginLoadError(UserError):
    """Raised when a plugin cannot be discovered or loaded; the message names the offender.

    A missing plugin directory, an import failure, a missing or non-callable ``register``, a
    ``register`` that raised (its tools are rolled back first), or a tool-name conflict (the first
    registrant keeps the name). At boot the caller aborts. Spec: Third-party tools.

    Args:
        message: What failed, naming the plugin (and, for a conflict, the other plugin and the tool).
        plugin: The offending plugin's name, when there is one (a missing directory has none).
        tool: The conflicting tool name, for a conflict.
        other_plugin: The plugin that already holds ``tool``, for a conflict with another plugin.
    """

    def __init__(
        self,
        message: str,
        *,
        plugin: str | None = None,
        tool: str | None = None,
        other_plugin: str | None = None,
    ) -> None:
        super().__init__(message)
        self.plugin = plugin
        self.tool = tool
        self.other_plugin = other_plugin


class PluginStateError(UserError):
    """Raised by a plugin lifecycle call on an unknown plugin, or on one in the wrong state.

    Args:
        message: What is wrong and what to call instead.
        plugin: The plugin name the call named.
        state: The plugin's current state (``"enabled"``, ``"disabled"``, ``"unloaded"``), or
            ``None`` for an unknown plugin.
    """

    def __init__(self, message: str, *, plugin: str | None = None, state: str | None = None) -> None:
        super().__init__(message)
        self.plugin = plugin
        self.state = state


class ConfigError(SteerableError):
    """Raised when configuration (usually an environment variable) is invalid.

    The message names the variable and the accepted values.
    """


class WorkspaceError(ToolRetry):
    """Raised by the workspace file tools; ``code`` is machine-readable (see tool_contract.json).

    A workspace refusal is something the model can fix (read first, pick a unique anchor, stay in
    the workspace), so it is a :class:`ToolRetry`: the result has ``needsFollowup: true``,
    ``error`` is the message and ``data.code`` the code.

    Args:
        code: A stable error code such as ``"file_not_found"`` or ``"conflict"``: the file tools
            pass a :class:`~steerable_agent_runtime.workspace.FileErrorCode` (docs/file-tools.md
            lists them); ``code`` and ``data.code`` hold its plain ``str`` value.
        message: Human- and model-readable text naming the fix.
        data: Extra structured detail for the ``ToolResult.data`` payload.
    """

    def __init__(self, code: str, message: str, *, data: dict[str, Any] | None = None) -> None:
        self.code, data = _coded(code, data)
        super().__init__(message, data=data)


class PathEscapeError(WorkspaceError):
    """Raised when a path resolves outside the workspace root (``..``, absolute, or symlink)."""


class WriteConflictError(WorkspaceError):
    """Raised when the read-before-write CAS gate rejects a write.

    Spec: File tools: read-before-write state.
    """


class EditError(WorkspaceError):
    """Raised when ``edit_file`` cannot apply its edits (not found, ambiguous, overlapping...)."""


class PatchError(WorkspaceError):
    """Raised when ``apply_patch`` cannot parse or apply a patch; nothing was written."""


class SandboxUnavailableError(ToolRetry):
    """Raised when no layer-2 sandbox backend can run a command; the command is never run unconfined.

    As a tool result: ``error`` is exactly ``"sandbox_unavailable"`` (spec: run_code, "No backend
    -> error: sandbox_unavailable"), ``message`` says what was tried and how to fix it, and
    ``data`` is ``{"code": "sandbox_unavailable", "tried": {backend: reason}}``. It carries
    ``needsFollowup``: the model cannot fix the machine, but it can carry on with other tools.

    Args:
        message: What was tried and how to fix it (install bubblewrap, set
            ``STEERABLE_SIDECAR_CONFINED=1`` under a host sandbox, ...).
        tried: Each backend considered and why it cannot run.
    """

    def __init__(self, message: str, *, tried: dict[str, str] | None = None) -> None:
        self.tried = dict(tried or {})
        super().__init__(
            "sandbox_unavailable", message=message, data={"code": "sandbox_unavailable", "tried": self.tried}
        )

    def __str__(self) -> str:
        return f"sandbox_unavailable: {self.message}"


class WebError(ToolRetry):
    """Raised by ``web_fetch`` / ``web_search``: a refused URL, a policy or cap hit, a failed request.

    Every web refusal is something the model can act on (another URL, another query, fewer
    calls), so it is a :class:`ToolRetry`: the result has ``needsFollowup: true``, ``error`` is
    the message and ``data.code`` the code (spec: Web tools; ``docs/web-tools.md`` lists the
    codes, e.g. ``"ssrf_blocked"``, ``"domain_blocked"``, ``"session_cap"``).

    Args:
        code: A stable error code: the web tools pass a ``steerable_sidecar.web_tools.WebErrorCode``;
            ``code`` and ``data.code`` hold its plain ``str`` value.
        message: Human- and model-readable text naming the fix (and the env variable, for caps).
        data: Extra structured detail for the ``ToolResult.data`` payload.
    """

    def __init__(self, code: str, message: str, *, data: dict[str, Any] | None = None) -> None:
        self.code, data = _coded(code, data)
        super().__init__(message, data=data)


class ProviderError(SteerableError):
    """Raised by an :class:`~steerable_agent_runtime.llm.LLMProvider` when the model call fails.

    The message never contains the API key.

    Args:
        message: What went wrong (HTTP status and the provider's error text, or the network error).
        status: The HTTP status code, when there was a response.
        retryable: ``True`` for failures a later attempt may not see (429, 5xx, network errors).
        malformed_call: ``True`` when the server says it could not parse the model's own tool
            call (llama.cpp's "Failed to parse input", Ollama's "error parsing tool call"): the
            agent loop tells the model, once, instead of ending the run.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retryable: bool = False,
        malformed_call: bool = False,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable
        self.malformed_call = malformed_call


class RemoteError(SteerableError):
    """Raised when a JSON-RPC 2.0 peer answers a request with an error object.

    Args:
        code: The JSON-RPC error code (``-32601`` method not found, ...).
        message: The error object's ``message``.
        data: The error object's ``data`` member, when present.
    """

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{message} (JSON-RPC error {code})")
        self.code = code
        self.message = message
        self.data = data


class PeerClosedError(RemoteError):
    """Raised for a request still pending when its peer closed the connection (EOF, crash)."""

    def __init__(self, message: str = "the peer closed the connection before answering") -> None:
        super().__init__(-32099, message)


class McpServerError(SteerableError):
    """Raised when a configured MCP tool server cannot be started, listed or registered.

    The message names the server (and the tool, when one tool is the problem) and carries the tail
    of the server's stderr when it said something. A server that dies *after* start-up is not an
    exception: its calls return failed results (see ``docs/mcp-sources.md``).

    Args:
        server: The configured server name.
        message: What went wrong, naming the server.
    """

    def __init__(self, server: str, message: str) -> None:
        super().__init__(message)
        self.server = server


class SidecarStartError(SteerableError):
    """Raised by the host client when the sidecar process exits or stays silent before ``lifecycle.ready``.

    The message carries the tail of the sidecar's stderr (its own explanation, e.g. a configuration
    error naming the variable).
    """


def _coded(code: str, data: dict[str, Any] | None) -> tuple[str, dict[str, Any]]:
    """A coded refusal's ``code`` as plain text (a registry member is a ``StrEnum``) and its ``data``.

    Returns:
        ``(code, {"code": code, **data})``: :class:`WorkspaceError` and :class:`WebError` carry both.
    """
    code = str(code)
    return code, {"code": code, **(data or {})}
