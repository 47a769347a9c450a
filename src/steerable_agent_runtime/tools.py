"""Tool registration and dispatch: ``ToolExposure``, ``Tool``, ``ToolRouter`` and ``@tool``.

Spec: Exposure tiers, ToolMode. The router is the single place where a tool's return value or
exception becomes a :class:`~steerable_agent_runtime.types.ToolResult`; it knows nothing of
consent (approval is an executor wrapper's job). The body of its dispatch is ``_dispatch``, loaded
at the first call: registering and listing tools import no pydantic (start-up).
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import re
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Final, Protocol, TypedDict, TypeVar, Unpack, overload

from ._choice import enum_member
from ._codes import ToolErrorCode
from ._coerce import exact_scalars
from ._deadlines import Deadlines
from ._depth import MAX_ARGUMENT_DEPTH, arguments_too_deep
from ._model_schema import first_paragraph, model_parameters
from ._problems import invalid_text
from ._signature import context_parameter, describe_function, function_schema, validator_at_first_call
from .errors import DuplicateToolError, ToolRetry, UserError
from .modes import ToolMode, decide_tool_mode, mode_from_annotations

if TYPE_CHECKING:  # dispatch's half (pydantic, the wire types) loads at the first call: _dispatcher
    from ._dispatch import Dispatcher
    from .context import CallContext
    from .trace import TraceSink
    from .types import ToolCall, ToolResult

__all__ = [
    "MAX_ARGUMENT_DEPTH",
    "Tool",
    "ToolDecorator",
    "ToolExposure",
    "ToolHandler",
    "ToolListener",
    "ToolOptions",
    "ToolRegistrar",
    "ToolRouter",
    "arguments_too_deep",
    "tool",
]


ToolHandler = Callable[..., Awaitable[Any]]
"""An async callable taking the validated arguments as keyword arguments."""

F = TypeVar("F", bound=Callable[..., Any])

DEFAULT_TIMEOUT_MS: Final = 300_000
"""Default per-call handler timeout in milliseconds (5 minutes)."""


class ToolExposure(StrEnum):
    """Where a tool is offered. Dispatch never gates on it (spec: Exposure tiers)."""

    DIRECT = "direct"
    """In ``describe_model()``; dispatchable."""
    DEFERRED = "deferred"
    """Not offered; dispatchable; discoverable through ``tool_search``."""
    HIDDEN = "hidden"
    """Not offered; dispatchable; never searched nor suggested."""


class ToolOptions(TypedDict, total=False):
    """The options of a tool built from a function (``@tool``, ``router.tool``, ``router.add``).

    Written once here for ``@tool``, :meth:`ToolDecorator.tool`, :meth:`ToolRouter.add` and
    :meth:`Tool.from_function`.

    Attributes:
        name: Tool name; defaults to the function's name.
        description: Defaults to the docstring's summary.
        mode: Overrides :func:`decide_tool_mode` (spec: ``@tool`` ``mode=`` kwarg).
        exposure: ``ToolExposure`` or its string; ``"direct"`` unless given.
        timeout_ms: Handler timeout in milliseconds; ``None`` uses the router's default.
    """

    name: str | None
    description: str | None
    mode: ToolMode | str | None
    exposure: ToolExposure | str
    timeout_ms: int | None


@dataclass(frozen=True, slots=True)
class Tool:
    """One registered tool.

    Attributes:
        name: The name the model calls.
        description: What the tool does, as shown to the model.
        parameters: The JSON Schema of the arguments (an ``object`` schema).
        handler: Async callable receiving the validated arguments as keyword arguments.
        mode: The consent classifier (inferred from the name unless overridden).
        exposure: The exposure tier.
        timeout_ms: Handler timeout in milliseconds; ``None`` uses the router's default.
        validate: Turns raw model arguments into handler kwargs; raises ``ValidationError`` or
            :class:`ToolRetry`.
        annotations: The MCP tool annotations the tool came with (an MCP server's own hints and
            ``title``), or ``None``; ``steerable mcp`` serves them again instead of hints made
            from ``mode`` alone.
        context_param: The handler's keyword that receives the call's
            :class:`~steerable_agent_runtime.context.CallContext` (not in ``parameters``), or ``None``.
    """

    name: str
    description: str
    parameters: dict[str, Any]
    handler: ToolHandler
    mode: ToolMode
    exposure: ToolExposure = ToolExposure.DIRECT
    timeout_ms: int | None = None
    validate: Callable[[dict[str, Any]], dict[str, Any]] = field(default=dict, repr=False)
    annotations: Mapping[str, Any] | None = field(default=None, repr=False)
    context_param: str | None = field(default=None, repr=False)

    @classmethod
    def from_function(
        cls,
        fn: Callable[..., Any],
        *,
        parameters: Mapping[str, Any] | None = None,
        **options: Unpack[ToolOptions],
    ) -> Tool:
        """Build a tool from a plain or async function; the schema comes from its signature.

        Args:
            fn: The implementation. Sync functions run in a worker thread. A parameter annotated
                :class:`~steerable_agent_runtime.context.CallContext` (or ``CallContext | None``,
                either in ``Annotated``) receives the call's context and is left out of the schema.
            parameters: The JSON Schema ``fn``'s signature gives, computed ahead of time (copied):
                the validator is then built at the first call, not now (start-up cost:
                ``benchmarks/startup.py``; the runtime's own tools use ``_tool_schemas``).
            options: :class:`ToolOptions`.

        Returns:
            The tool, not yet registered anywhere.

        Raises:
            UserError: When the signature cannot be turned into a schema, asks for the context
                twice or in a form dispatch cannot fill (naming the parameter), or a value is
                invalid.
        """
        tool_name = options.get("name") or fn.__name__
        validate_python: Callable[[dict[str, Any]], dict[str, Any]]
        if parameters is None:
            schema = function_schema(fn, name=tool_name)
            shape = schema.parameters
            # the pydantic-core validator itself: TypeAdapter.validate_python adds a Python-level
            # wrapper; exact_scalars turns "1" into 1 first and refuses what pydantic's lax mode
            # would take ("yes")
            validate_python = schema.adapter.validator.validate_python
        else:
            shape = copy.deepcopy(dict(parameters))
            validate_python = validator_at_first_call(fn, tool_name)
        if inspect.iscoroutinefunction(fn):
            handler: ToolHandler = fn
        else:

            async def handler(**kwargs: Any) -> Any:
                return await asyncio.to_thread(fn, **kwargs)

        description = options.get("description")
        return cls(
            name=tool_name,
            description=description if description is not None else describe_function(fn),
            parameters=shape,
            handler=handler,
            mode=_coerce_mode(options.get("mode"), tool_name),
            exposure=_coerce_exposure(options.get("exposure") or ToolExposure.DIRECT),
            timeout_ms=options.get("timeout_ms"),
            validate=exact_scalars(tool_name, shape, validate_python),
            context_param=context_parameter(fn, name=tool_name),
        )

    @classmethod
    def from_schema(
        cls,
        name: str,
        parameters: Mapping[str, Any],
        handler: ToolHandler,
        *,
        description: str = "",
        mode: ToolMode | str | None = None,
        exposure: ToolExposure | str = ToolExposure.DIRECT,
        timeout_ms: int | None = None,
        annotations: Mapping[str, Any] | None = None,
        context_param: str | None = None,
    ) -> Tool:
        """Build a tool whose JSON Schema is given as-is (host tools, MCP tools).

        Arguments are checked with ``jsonschema`` (Draft 2020-12) before the handler runs.

        Args:
            name: Tool name.
            parameters: An ``object`` JSON Schema.
            handler: Async callable receiving the arguments as keyword arguments.
            description: What the tool does.
            mode: Overrides the inferred mode.
            exposure: ``ToolExposure`` or its string.
            timeout_ms: Handler timeout in milliseconds.
            annotations: MCP tool annotations (``readOnlyHint``...); without ``mode`` they decide
                it through :func:`mode_from_annotations`. Kept as :attr:`Tool.annotations`.
            context_param: The keyword ``handler`` receives the call's ``CallContext`` as (a name
                that is not one of the schema's properties).

        Returns:
            The tool, not yet registered anywhere.

        Raises:
            UserError: When ``parameters`` is not a valid JSON Schema, or ``context_param`` names
                one of its properties.
        """
        import jsonschema  # heavy (~70 ms); only schema-given tools need it

        schema = dict(parameters)
        try:
            validator_cls = jsonschema.validators.validator_for(
                schema, default=jsonschema.Draft202012Validator
            )
            validator_cls.check_schema(schema)
        except jsonschema.SchemaError as exc:
            raise UserError(f"tool {name!r}: invalid JSON Schema: {exc.message}") from exc
        validator = validator_cls(schema)
        properties = schema.get("properties")
        if context_param is not None and isinstance(properties, Mapping) and context_param in properties:
            raise UserError(
                f"tool {name!r}: context_param {context_param!r} is a property of its schema, so the "
                "call context would replace the model's argument; name another keyword"
            )

        def check(arguments: dict[str, Any]) -> dict[str, Any]:
            errors = sorted(validator.iter_errors(arguments), key=lambda e: list(e.path))
            if errors:
                problems = [
                    {"field": ".".join(str(p) for p in e.path) or "(arguments)", "message": e.message}
                    for e in errors
                ]
                raise ToolRetry(
                    invalid_text(name, problems),
                    data={"code": ToolErrorCode.INVALID_ARGUMENTS, "errors": problems},
                )
            return arguments

        return cls(
            name=name,
            description=description,
            parameters=schema,
            handler=handler,
            mode=_coerce_mode(mode, name)
            if mode is not None or not annotations
            else mode_from_annotations(name, annotations),
            exposure=_coerce_exposure(exposure),
            timeout_ms=timeout_ms,
            validate=exact_scalars(name, schema, check),
            annotations=dict(annotations) if annotations else None,
            context_param=context_param,
        )

    def describe_model(self) -> dict[str, Any]:
        """Return the OpenAI function-tool descriptor ``{"type": "function", "function": {...}}``.

        Its ``parameters`` are the tool's schema without what only validation needs (``title``
        keywords, the ``null`` branch of optional arguments: ``_model_schema.model_parameters``).
        """
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": model_parameters(self.parameters),
            },
        }

    def describe_compact(self) -> dict[str, Any]:
        """:meth:`describe_model` with the description cut to its first paragraph (``--harness minimal``)."""
        described = self.describe_model()
        described["function"]["description"] = first_paragraph(self.description)
        return described

    def describe(self) -> dict[str, Any]:
        """Return the full inventory entry: name, description, parameters, mode and exposure."""
        return {
            "name": self.name,
            "description": self.description,
            "parameters": self.parameters,
            "mode": self.mode.value,
            "exposure": self.exposure.value,
        }


ToolListener = Callable[[Tool | None, Tool | None], None]
"""Told of every change to a router's inventory, after it happened, as ``(old, new)``:
``(None, tool)`` on register, ``(tool, None)`` on unregister, ``(old, new)`` when a tool is
replaced in place (:meth:`ToolRouter.set_exposure`). Incremental indexes (``tool_search``) use it."""


class ToolRegistrar(Protocol):
    """Anything ``@tool(router=...)`` can register on: a router or a recording proxy over one."""

    def register(self, tool: Tool) -> Tool:
        """Register ``tool``; raise :class:`DuplicateToolError` when the name is taken."""
        ...


class ToolDecorator:
    """Gives a :class:`ToolRegistrar` the ``.tool`` decorator, the same as ``@tool(router=self, ...)``.

    :class:`ToolRouter` has it, and so has the registrar a plugin's ``register(router)`` receives.
    """

    @overload
    def tool(self: ToolRegistrar, fn: F, /) -> F: ...

    @overload
    def tool(self: ToolRegistrar, /, **options: Unpack[ToolOptions]) -> Callable[[F], F]: ...

    def tool(
        self: ToolRegistrar, fn: F | None = None, /, **options: Unpack[ToolOptions]
    ) -> F | Callable[[F], F]:
        """Register ``fn`` here as a tool (``@registrar.tool``), or decorate with options.

        Args:
            fn: The function, when used bare.
            options: :class:`ToolOptions`.

        Returns:
            The function itself (bare use) or a decorator returning it.

        Raises:
            UserError: On a signature that cannot become a schema, an unknown mode or exposure.
            DuplicateToolError: When the name is taken.
        """
        decorator: Callable[[F], F] = tool(router=self, **options)
        return decorator(fn) if fn is not None else decorator


TOOL_NAME: Final = re.compile(r"[A-Za-z0-9_-]{1,64}", re.ASCII)
"""A registrable tool name, what model APIs accept: 1-64 ASCII letters, digits, ``_`` and ``-``."""


def check_tool_name(name: object) -> None:
    """Raise :class:`UserError` unless ``name`` matches :data:`TOOL_NAME` (``^[a-zA-Z0-9_-]{1,64}$``).

    A trailing space, a look-alike letter (Cyrillic ``р``), a zero-width space or a newline would
    make a second ``read_file`` row that no model can tell apart or call.
    """
    if isinstance(name, str) and TOOL_NAME.fullmatch(name):
        return
    if not isinstance(name, str):
        raise UserError(f"a tool name must be a string, not {type(name).__name__} ({name!r})")
    bad = dict.fromkeys(c for c in name if not TOOL_NAME.fullmatch(c))
    if bad:
        why = "contains " + ", ".join(_codepoint(c) for c in bad)
    else:
        why = "is empty" if not name else f"has {len(name)} characters"
    raise UserError(
        f"invalid tool name {name!r}: it {why}; a tool name is 1 to 64 of the ASCII letters, digits, "
        "'_' and '-' (^[a-zA-Z0-9_-]{1,64}$, what model APIs accept)"
    )


def _codepoint(char: str) -> str:
    import unicodedata  # only to name a refused character

    name = unicodedata.name(char, "")
    return f"U+{ord(char):04X} {name}" if name else f"U+{ord(char):04X}"


def _coerce_mode(mode: ToolMode | str | None, name: str) -> ToolMode:
    if mode is None:
        return decide_tool_mode(name)
    return enum_member(
        ToolMode, mode, lambda allowed: f"tool {name!r}: unknown mode {mode!r}; use one of {allowed}"
    )


def _coerce_exposure(exposure: ToolExposure | str) -> ToolExposure:
    return enum_member(
        ToolExposure, exposure, lambda allowed: f"unknown exposure {exposure!r}; use one of {allowed}"
    )


class ToolRouter(ToolDecorator):
    """A set of tools by name; dispatches :class:`ToolCall` s into :class:`ToolResult` s.

    Args:
        default_timeout_ms: Handler timeout for tools that set none, in milliseconds (0 disables it).
        trace: Optional sink called with one :class:`TraceSpan` per dispatched call.
    """

    def __init__(
        self, *, default_timeout_ms: int = DEFAULT_TIMEOUT_MS, trace: TraceSink | None = None
    ) -> None:
        self._tools: dict[str, Tool] = {}
        self._unavailable: dict[str, str] = {}
        self._listeners: list[ToolListener] = []
        self._deadlines = Deadlines()
        self.default_timeout_ms = default_timeout_ms
        self.trace = trace

    # -- registration -------------------------------------------------------------------------
    def register(self, tool: Tool) -> Tool:
        """Add ``tool``.

        Args:
            tool: The tool to add.

        Returns:
            The same tool.

        Raises:
            UserError: When the name is not 1-64 of ``[A-Za-z0-9_-]`` (what model APIs accept).
            DuplicateToolError: When a tool with that name is already registered.
        """
        check_tool_name(tool.name)
        if tool.name in self._tools:
            raise DuplicateToolError(tool.name)
        self._tools[tool.name] = tool
        self._notify(None, tool)
        return tool

    def mark_unavailable(self, name: str, reason: str) -> None:
        """Say why a tool the model may know of is not registered here (it stays unregistered).

        A call to ``name`` then fails with ``data.code == "tool_unavailable"`` and ``reason``
        instead of "Unknown tool": a model that learned of ``web_search`` elsewhere is told the
        run is offline, or which setting turns it on, and can carry on with what it has.

        Args:
            name: The tool's name.
            reason: One sentence: why it is off and what would turn it on.
        """
        self._unavailable[name] = reason

    def unregister(self, name: str) -> Tool:
        """Remove and return the tool called ``name``.

        Raises:
            KeyError: When no such tool is registered.
        """
        tool = self._tools.pop(name)
        self._notify(tool, None)
        return tool

    def set_exposure(self, name: str, exposure: ToolExposure | str) -> Tool:
        """Move the tool called ``name`` to another exposure tier, keeping its place in the order.

        Args:
            name: A registered tool.
            exposure: The new tier (``ToolExposure`` or its string).

        Returns:
            The tool as registered now (a copy with the new tier; unchanged when already there).

        Raises:
            KeyError: When no such tool is registered.
            UserError: On an unknown exposure.
        """
        old = self._tools[name]
        tier = _coerce_exposure(exposure)
        if old.exposure is tier:
            return old
        new = self._tools[name] = replace(old, exposure=tier)
        self._notify(old, new)
        return new

    def _notify(self, old: Tool | None, new: Tool | None) -> None:
        for listener in tuple(self._listeners):  # a listener may unsubscribe itself meanwhile
            listener(old, new)

    def subscribe(self, listener: ToolListener) -> Callable[[], None]:
        """Call ``listener(old, new)`` after every register, unregister and tier change.

        Dispatch is unaffected. The listener runs synchronously inside the change; it must not
        raise nor change the router itself (it may unsubscribe).

        Returns:
            A function that unsubscribes the listener (calling it twice is harmless). It holds
            no reference to the router, so keeping it does not keep the router alive.
        """
        listeners = self._listeners
        listeners.append(listener)

        def unsubscribe() -> None:
            if listener in listeners:
                listeners.remove(listener)

        return unsubscribe

    def add(self, fn: Callable[..., Any], **options: Unpack[ToolOptions]) -> Tool:
        """Register a function as a tool (a function already decorated with ``@tool`` keeps its options).

        Args:
            fn: The implementation.
            options: :class:`ToolOptions`; for a decorated function each one given overrides
                what ``@tool`` set.

        Returns:
            The registered :class:`Tool`.

        Raises:
            DuplicateToolError: When the name is taken.
        """
        spec: Tool | None = getattr(fn, "__steerable_tool__", None)
        if spec is None:
            return self.register(Tool.from_function(fn, **options))
        name, mode = options.get("name"), options.get("mode")
        changes: dict[str, Any] = {}
        if name is not None:
            changes["name"] = name
            changes["mode"] = _coerce_mode(mode, name)
            changes["parameters"] = {**spec.parameters, "title": name}
        if options.get("description") is not None:
            changes["description"] = options["description"]
        if mode is not None:
            changes["mode"] = _coerce_mode(mode, name or spec.name)
        if options.get("exposure") is not None:
            changes["exposure"] = _coerce_exposure(options["exposure"])
        if options.get("timeout_ms") is not None:
            changes["timeout_ms"] = options["timeout_ms"]
        return self.register(replace(spec, **changes) if changes else spec)

    # -- introspection ------------------------------------------------------------------------
    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(list(self._tools.values()))

    def __len__(self) -> int:
        return len(self._tools)

    def get(self, name: str) -> Tool | None:
        """Return the tool called ``name``, or ``None``."""
        return self._tools.get(name)

    def names(self) -> list[str]:
        """Return every registered name, in registration order."""
        return list(self._tools)

    def describe_model(self) -> list[dict[str, Any]]:
        """Return the offered list: direct-tier tools as OpenAI function-tool descriptors."""
        return [t.describe_model() for t in self._tools.values() if t.exposure is ToolExposure.DIRECT]

    def describe(self) -> list[dict[str, Any]]:
        """Return the full inventory (every tier) with mode and exposure, for host introspection."""
        return [t.describe() for t in self._tools.values()]

    def suggest(self, name: str, *, limit: int = 3) -> list[str]:
        """Return up to ``limit`` registered names close to ``name``; hidden tools are never named."""
        import difflib  # an unknown name is rare: not at start-up

        visible = [n for n, t in self._tools.items() if t.exposure is not ToolExposure.HIDDEN]
        close = difflib.get_close_matches(name, visible, n=limit, cutoff=0.6)
        if not close:
            lowered = name.lower()
            close = [n for n in visible if lowered and (lowered in n.lower() or n.lower() in lowered)][:limit]
        return close

    # -- dispatch -----------------------------------------------------------------------------
    async def dispatch(
        self, call: ToolCall | Mapping[str, Any], context: CallContext | None = None
    ) -> ToolResult:
        """Run one tool call and return its result; never raises for bad input or tool failures.

        A mapping is first checked as a ``ToolCall`` envelope; ``arguments`` sent as a JSON string
        (a common model slip) is decoded at this boundary. Dispatch never gates on exposure
        (spec: Exposure tiers).

        Args:
            call: A :class:`ToolCall` or its wire dict.
            context: The call's context (see :mod:`steerable_agent_runtime.context`); a tool that
                asks for one without it gets a fresh ``CallContext(call)``. Its ``attrs`` go into
                this router's ``TraceSpan``.

        Returns:
            The normalised result. Unknown tools and invalid arguments give
            ``success: false, needsFollowup: true`` with an error naming the fix; a tool's
            :class:`ToolRetry` / :class:`ToolFailed` give ``needsFollowup`` / ``terminal``; any
            other exception gives ``success: false`` with its type and message.
        """
        dispatcher = _DISPATCHER or _dispatcher()
        return dispatcher.result_of(await dispatcher.run(self, call, context))

    async def dispatch_wire(
        self, call: ToolCall | Mapping[str, Any], context: CallContext | None = None
    ) -> dict[str, Any]:
        """Run one tool call and return its result's wire dict: ``(await dispatch(call)).to_wire()``.

        For a transport that writes JSON (``steerable call``, ``steerable session``). A call that
        succeeds with plain JSON is written without building a ``ToolResult``, so it imports no
        pydantic (start-up: ``benchmarks/startup.py``); the dict is the one :meth:`dispatch`'s
        result gives in every case.

        Args:
            call: A :class:`ToolCall` or its wire dict (see :meth:`dispatch`).
            context: The call's context (see :meth:`dispatch`).

        Returns:
            The result's camelCase JSON-ready dict, ``None`` fields left out (``ToolResult.to_wire``).
        """
        return (await (_DISPATCHER or _dispatcher()).run(self, call, context)).to_wire()

    def check(self, call: ToolCall) -> ToolResult | None:
        """Return the failed result ``dispatch(call)`` would give without running the tool, or ``None``.

        An unknown name and invalid arguments are answered as :meth:`dispatch` answers them; the
        :class:`~steerable_agent_runtime.executor.ApprovalGate` checks a call this way before it
        asks for consent, so nobody is asked about a call that cannot run.
        """
        return (_DISPATCHER or _dispatcher()).check(self, call)


_DISPATCHER: Dispatcher | None = None
"""The body of the router's ``dispatch``, ``dispatch_wire`` and ``check`` (loaded by :func:`_dispatcher`)."""


def _dispatcher() -> Dispatcher:
    """Import the body of :meth:`ToolRouter.dispatch` and :meth:`ToolRouter.check` (at the first call).

    Registering and listing tools never need it (start-up: ``steerable mcp`` answers ``tools/list``
    before it is imported).
    """
    global _DISPATCHER
    from ._dispatch import DISPATCHER

    _DISPATCHER = DISPATCHER
    return DISPATCHER


@overload
def tool(fn: F, /) -> F: ...


@overload
def tool(*, router: ToolRegistrar | None = None, **options: Unpack[ToolOptions]) -> Callable[[F], F]: ...


def tool(
    fn: F | None = None, /, *, router: ToolRegistrar | None = None, **options: Unpack[ToolOptions]
) -> F | Callable[[F], F]:
    """Declare a function as a tool, bare (``@tool``) or with options (``@tool(router=r, ...)``).

    The function is returned unchanged (still callable) with its :class:`Tool` attached as
    ``fn.__steerable_tool__``; with ``router=`` it is also registered there at once. Spec: Third-party
    tools (plugin example).

    Args:
        fn: The function, when used bare.
        router: Where to register (a :class:`ToolRouter` or a plugin's recording proxy).
        options: :class:`ToolOptions` (``name``, ``description``, ``mode``, ``exposure``,
            ``timeout_ms``).

    Returns:
        The function itself (bare use) or a decorator returning it.

    Raises:
        UserError: On a signature that cannot become a schema, an unknown mode or exposure.
        DuplicateToolError: When ``router`` already has a tool of that name.
    """

    def decorate(func: F) -> F:
        spec = Tool.from_function(func, **options)
        func.__steerable_tool__ = spec  # type: ignore[attr-defined]
        if router is not None:
            router.register(spec)
        return func

    if fn is not None:
        return decorate(fn)
    return decorate
