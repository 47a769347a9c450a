"""steerable_agent_runtime: the framework half of steerable (no network, no process of its own).

A model asks for a :class:`ToolCall`; a :class:`ToolRouter` validates and runs it and answers with a
:class:`ToolResult`; :func:`is_terminal_result` tells the agent loop whether to stop. Spec: the
tools spec, whose rules are numbered in ``docs/requirements.md``.

Importing the package is cheap: each public name is imported from its module on first use
(PEP 562 ``__getattr__``), so ``from steerable_agent_runtime.errors import UserError`` or
``import steerable_agent_runtime`` does not pay for the workspace tools, pydantic or asyncio.
"""

import typing as _typing

from ._platform import refuse_unsupported_platform as _refuse_unsupported_platform

_refuse_unsupported_platform()  # Windows: one clear ImportError, before a module's `import fcntl` fails

from ._version import __version__  # noqa: E402  (after the platform check)
from .lazy import lazy_exports as _lazy_exports  # noqa: E402

if _typing.TYPE_CHECKING:
    from ._call_id import (
        new_call_id,
    )
    from ._codes import (
        ToolErrorCode,
    )
    from ._outcome import (
        DEFAULT_MAX_ROUNDS,
        RunOutcome,
    )
    from .ask_user import (
        AskUserHandler,
        AskUserQuestionsPayload,
        make_ask_user_tool,
    )
    from .context import (
        CallContext,
        OutputSink,
    )
    from .errors import (
        ConfigError,
        DuplicateToolError,
        EditError,
        PatchError,
        PathEscapeError,
        PeerClosedError,
        PluginLoadError,
        PluginStateError,
        ProviderError,
        RemoteError,
        SandboxUnavailableError,
        SidecarStartError,
        SteerableError,
        ToolFailed,
        ToolRetry,
        ToolSignal,
        UserError,
        WebError,
        WorkspaceError,
        WriteConflictError,
    )
    from .executor import (
        ApprovalGate,
        ApprovalHandler,
        ConsentQuestion,
        ConsentQuestions,
        ToolExecutor,
        approve_all,
    )
    from .harness import (
        AssembledHarness,
        HarnessStrategy,
        assemble_harness,
    )
    from .llm import (
        ChatRequest,
        ChatResponse,
        InvalidToolCall,
        LLMProvider,
        Usage,
    )
    from .loop import (
        AgentLoop,
        RunSummary,
    )
    from .modes import (
        CONSENT_POLICIES,
        DEFAULT_CONSENT_POLICY,
        DEFAULT_TOOL_MODE,
        MODE_CONSENT,
        ConsentPolicy,
        ToolMode,
        consent_policy,
        decide_tool_mode,
        mode_from_annotations,
        requires_consent,
    )
    from .plugins import (
        DirectorySource,
        EntryPointSource,
        MemorySource,
        PluginInfo,
        PluginRegistry,
        PluginSource,
        PluginSpec,
        PluginState,
        RemoteSource,
        default_plugin_sources,
    )
    from .record import (
        DurableRecord,
    )
    from .scripted import (
        ScriptedProvider,
    )
    from .spill import (
        SpillHooks,
    )
    from .tool_search import (
        ToolSearchHit,
        ToolSearchIndex,
        register_tool_search,
    )
    from .tools import (
        Tool,
        ToolExposure,
        ToolHandler,
        ToolListener,
        ToolRegistrar,
        ToolRouter,
        tool,
    )
    from .trace import (
        TraceSink,
        TraceSpan,
    )
    from .types import (
        ToolCall,
        ToolResult,
        is_terminal_result,
    )
    from .workspace import (
        FileView,
        ReadFileState,
        Workspace,
        WorkspaceRouter,
        read_file_state_from_messages,
        version_of,
        workspace_tools_for_cwd,
    )

_EXPORTS: dict[str, tuple[str, ...]] = {
    "_call_id": ("new_call_id",),
    "_codes": ("ToolErrorCode",),
    "_outcome": (
        "DEFAULT_MAX_ROUNDS",
        "RunOutcome",
    ),
    "ask_user": (
        "AskUserHandler",
        "AskUserQuestionsPayload",
        "make_ask_user_tool",
    ),
    "errors": (
        "ConfigError",
        "DuplicateToolError",
        "EditError",
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
    ),
    "context": (
        "CallContext",
        "OutputSink",
    ),
    "executor": (
        "ApprovalGate",
        "ApprovalHandler",
        "ConsentQuestion",
        "ConsentQuestions",
        "ToolExecutor",
        "approve_all",
    ),
    "harness": (
        "AssembledHarness",
        "HarnessStrategy",
        "assemble_harness",
    ),
    "llm": (
        "ChatRequest",
        "ChatResponse",
        "InvalidToolCall",
        "LLMProvider",
        "Usage",
    ),
    "loop": (
        "AgentLoop",
        "RunSummary",
    ),
    "modes": (
        "CONSENT_POLICIES",
        "DEFAULT_CONSENT_POLICY",
        "DEFAULT_TOOL_MODE",
        "MODE_CONSENT",
        "ConsentPolicy",
        "ToolMode",
        "consent_policy",
        "decide_tool_mode",
        "mode_from_annotations",
        "requires_consent",
    ),
    "plugins": (
        "DirectorySource",
        "EntryPointSource",
        "MemorySource",
        "PluginInfo",
        "PluginRegistry",
        "PluginSource",
        "PluginSpec",
        "PluginState",
        "RemoteSource",
        "default_plugin_sources",
    ),
    "record": ("DurableRecord",),
    "scripted": ("ScriptedProvider",),
    "spill": ("SpillHooks",),
    "tool_search": (
        "ToolSearchHit",
        "ToolSearchIndex",
        "register_tool_search",
    ),
    "tools": (
        "Tool",
        "ToolExposure",
        "ToolHandler",
        "ToolListener",
        "ToolRegistrar",
        "ToolRouter",
        "tool",
    ),
    "trace": (
        "TraceSink",
        "TraceSpan",
    ),
    "types": (
        "ToolCall",
        "ToolResult",
        "is_terminal_result",
    ),
    "workspace": (
        "FileView",
        "ReadFileState",
        "Workspace",
        "WorkspaceRouter",
        "read_file_state_from_messages",
        "version_of",
        "workspace_tools_for_cwd",
    ),
}
"""Each submodule and the public names it provides (the block above, for type checkers)."""


__all__ = [
    "CONSENT_POLICIES",
    "DEFAULT_CONSENT_POLICY",
    "DEFAULT_MAX_ROUNDS",
    "DEFAULT_TOOL_MODE",
    "MODE_CONSENT",
    "AgentLoop",
    "ApprovalGate",
    "ApprovalHandler",
    "AskUserHandler",
    "AskUserQuestionsPayload",
    "AssembledHarness",
    "CallContext",
    "ChatRequest",
    "ChatResponse",
    "ConfigError",
    "ConsentPolicy",
    "ConsentQuestion",
    "ConsentQuestions",
    "DirectorySource",
    "DuplicateToolError",
    "DurableRecord",
    "EditError",
    "EntryPointSource",
    "FileView",
    "HarnessStrategy",
    "InvalidToolCall",
    "LLMProvider",
    "MemorySource",
    "OutputSink",
    "PatchError",
    "PathEscapeError",
    "PeerClosedError",
    "PluginInfo",
    "PluginLoadError",
    "PluginRegistry",
    "PluginSource",
    "PluginSpec",
    "PluginState",
    "PluginStateError",
    "ProviderError",
    "ReadFileState",
    "RemoteError",
    "RemoteSource",
    "RunOutcome",
    "RunSummary",
    "SandboxUnavailableError",
    "ScriptedProvider",
    "SidecarStartError",
    "SpillHooks",
    "SteerableError",
    "Tool",
    "ToolCall",
    "ToolErrorCode",
    "ToolExecutor",
    "ToolExposure",
    "ToolFailed",
    "ToolHandler",
    "ToolListener",
    "ToolMode",
    "ToolRegistrar",
    "ToolResult",
    "ToolRetry",
    "ToolRouter",
    "ToolSearchHit",
    "ToolSearchIndex",
    "ToolSignal",
    "TraceSink",
    "TraceSpan",
    "Usage",
    "UserError",
    "WebError",
    "Workspace",
    "WorkspaceError",
    "WorkspaceRouter",
    "WriteConflictError",
    "__version__",
    "approve_all",
    "assemble_harness",
    "consent_policy",
    "decide_tool_mode",
    "default_plugin_sources",
    "is_terminal_result",
    "make_ask_user_tool",
    "mode_from_annotations",
    "new_call_id",
    "read_file_state_from_messages",
    "register_tool_search",
    "requires_consent",
    "tool",
    "version_of",
    "workspace_tools_for_cwd",
]


if not _typing.TYPE_CHECKING:  # hidden from type checkers, so a misspelt import still fails there
    __getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS, globals(), submodules=True)
