"""The plugin registry: third-party tools over a router, with a lifecycle after boot.

A plugin is a ``register(router)`` callable. The sources that describe plugins
(:class:`PluginSource` and the shipped ones) are defined in ``_plugin_sources.py`` and
re-exported here. :class:`PluginRegistry` hands each ``register`` a recording proxy over the
:class:`~steerable_agent_runtime.tools.ToolRouter`, so it knows which tools each plugin added:
that is what lets it enable, disable, unload and reload a plugin. Every change goes through
``router.register`` / ``router.unregister``, so router listeners see it at once.

Spec: Third-party tools (plugin runtime); ``docs/requirements.md`` PLG-1..PLG-9. The state table,
every message and the reload boundaries: ``docs/plugins.md``.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from functools import partial
from types import ModuleType
from typing import Any, Final

from . import _plugin_sources
from ._plugin_loading import RegisterFunction, checked_register, describe_error, plugin_label, put_module
from ._plugin_sources import *  # noqa: F403  (the sources: re-exported, listed in its __all__)
from ._plugin_sources import PluginSource, PluginSpec
from .errors import DuplicateToolError, PluginLoadError, PluginStateError, UserError
from .tools import Tool, ToolDecorator, ToolRouter, check_tool_name

__all__ = ["PluginInfo", "PluginRegistry", "PluginState"]
__all__ += _plugin_sources.__all__


class PluginState(StrEnum):
    """Where a plugin is in its lifecycle (the transitions: ``docs/plugins.md``, Lifecycle)."""

    ENABLED = "enabled"
    """Imported, and its tools are in the router."""
    DISABLED = "disabled"
    """Imported, its tools removed from the router; ``enable`` runs the same ``register`` again."""
    UNLOADED = "unloaded"
    """No tools, its module forgotten (``sys.modules``); ``enable`` imports it afresh."""


@dataclass(frozen=True, slots=True)
class PluginInfo:
    """What the registry knows of one plugin, as returned by every :class:`PluginRegistry` call.

    Attributes:
        name: The plugin name (the entry point's name; a directory plugin's file stem).
        origin: The name of the source that found it (``"entry-point"``, ``"directory"``, a
            remote source's name).
        source: Where exactly: ``"module:attr in distribution version"`` for an entry point,
            the file path for a directory plugin.
        state: Its lifecycle state.
        tools: The tool names of its last successful registration, in registration order. They are
            in the router only while the plugin is enabled.
    """

    name: str
    origin: str
    source: str
    state: PluginState
    tools: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON form ``{name, origin, source, state, tools}`` (``plugin.*`` RPCs, CLI)."""
        return {
            "name": self.name,
            "origin": self.origin,
            "source": self.source,
            "state": self.state.value,
            "tools": list(self.tools),
        }


# -- the registry -------------------------------------------------------------------------------


@dataclass(slots=True)
class _Entry:
    spec: PluginSpec
    state: PluginState = PluginState.UNLOADED
    register: RegisterFunction | None = None
    tools: tuple[str, ...] = ()
    live: dict[str, Tool] = field(default_factory=dict)  # what it put in the router, while enabled


class _RecordingRegistrar(ToolDecorator):
    """The ``router`` a plugin's ``register(router)`` receives: a recording proxy over the router.

    It implements :class:`~steerable_agent_runtime.tools.ToolRegistrar` (so ``@tool(router=router)``
    works) plus the ``router.tool`` decorator (``tools.ToolDecorator``). A name already in the
    router is refused with :class:`DuplicateToolError`, like the router does, and remembered: the
    plugin's load fails even if ``register`` swallows the error. Closed once ``register`` returns.
    """

    def __init__(self, registry: PluginRegistry, plugin: str) -> None:
        self._registry = registry
        self._plugin = plugin
        self.registered: list[Tool] = []
        self.conflict: str | None = None
        self.invalid: UserError | None = None  # the first bad tool name's error, kept if swallowed
        self.closed = False

    def register(self, tool: Tool) -> Tool:
        """Register ``tool`` on the router and record it as this plugin's.

        Raises:
            DuplicateToolError: The name is taken (the plugin's load will fail, naming the holder).
            PluginStateError: Called after ``register(router)`` returned.
        """
        if self.closed:
            entry = self._registry._entries.get(self._plugin)
            raise PluginStateError(
                f"plugin {self._plugin!r} registered the tool {getattr(tool, 'name', tool)!r} after its "
                "register(router) returned; register every tool inside register(router)",
                plugin=self._plugin,
                state=entry.state.value if entry is not None else None,
            )
        if not isinstance(tool, Tool):
            raise TypeError(
                f"register() takes a Tool, not {type(tool).__name__}; "
                "decorate a function with @tool(router=router) instead"
            )
        try:
            check_tool_name(tool.name)
        except UserError as exc:
            if self.invalid is None:
                self.invalid = exc
            raise
        router = self._registry.router
        if tool.name in router:
            if self.conflict is None:
                self.conflict = tool.name
            raise DuplicateToolError(tool.name)
        try:
            router.register(tool)
        finally:
            if router.get(tool.name) is tool:  # recorded even when a listener raised
                self.registered.append(tool)
        return tool


class PluginRegistry:
    """The plugins of one router, with their lifecycle. Spec: Third-party tools; PLG-3..PLG-5, PLG-7..PLG-9.

    Args:
        router: Where plugin tools are registered. Changes show at once (``router.subscribe``
            listeners such as ``tool_search``'s index follow every one).
        sources: Where plugins come from, in load order (see :func:`default_plugin_sources`).

    Attributes:
        router: The router.
        sources: The sources, as a tuple.
    """

    def __init__(self, router: ToolRouter, sources: Sequence[PluginSource] = ()) -> None:
        self.router = router
        self.sources: tuple[PluginSource, ...] = tuple(sources)
        self._entries: dict[str, _Entry] = {}
        self._owners: dict[str, str] = {}  # tool name -> the enabled plugin that registered it

    # -- boot -----------------------------------------------------------------------------------
    def load_all(self) -> list[PluginInfo]:
        """Discover every source, then load each new plugin in order (boot).

        Discovery comes first, so a missing directory or two plugins of one name fail before any
        plugin runs. A plugin the registry already knows (same name, origin and source) is skipped
        whatever its state, so calling this again picks up only plugins added since (a new file).

        Returns:
            The plugins this call loaded (all enabled).

        Raises:
            PluginLoadError: At the first failure, naming the offender; the caller aborts the boot.
                A plugin whose load failed had its tools rolled back and is listed as unloaded;
                plugins loaded before it stay enabled, those after it are not loaded.
        """
        loaded: list[PluginInfo] = []
        for spec in self._discover():
            entry = self._entries[spec.name] = _Entry(spec)
            self._enable(entry)
            loaded.append(self._info(entry))
        return loaded

    def _discover(self) -> list[PluginSpec]:
        fresh: dict[str, PluginSpec] = {}
        for source in self.sources:
            try:
                specs = source.discover()
            except PluginLoadError:
                raise
            except Exception as exc:
                raise PluginLoadError(f"plugin source {source.name!r} failed: {describe_error(exc)}") from exc
            for spec in specs:
                known = self._entries.get(spec.name)
                if known is not None and (known.spec.origin, known.spec.source) == (spec.origin, spec.source):
                    continue
                first = known.spec if known is not None else fresh.get(spec.name)
                if first is not None:
                    raise PluginLoadError(
                        f"two plugins are named {spec.name!r}: one from {first.source}, one from "
                        f"{spec.source}; rename one of them",
                        plugin=spec.name,
                    )
                fresh[spec.name] = spec
        return list(fresh.values())

    # -- introspection --------------------------------------------------------------------------
    def plugins(self) -> list[PluginInfo]:
        """Return every known plugin, in load order."""
        return [self._info(entry) for entry in self._entries.values()]

    def get(self, name: str) -> PluginInfo:
        """Return the plugin called ``name``.

        Raises:
            PluginStateError: No such plugin.
        """
        return self._info(self._entry(name))

    # -- lifecycle ------------------------------------------------------------------------------
    def enable(self, name: str) -> PluginInfo:
        """Register the plugin's tools again.

        A disabled plugin's ``register`` runs again; an unloaded plugin is imported afresh first.

        Raises:
            PluginStateError: Unknown plugin, or already enabled.
            PluginLoadError: The import or ``register`` failed (its tools rolled back), or a tool
                name is taken; the plugin stays as it was.
        """
        entry = self._entry(name)
        if entry.state is PluginState.ENABLED:
            raise self._state_error(entry, f"plugin {name!r} is already enabled")
        self._enable(entry)
        return self._info(entry)

    def disable(self, name: str) -> PluginInfo:
        """Remove the plugin's tools from the router; its module stays imported.

        Raises:
            PluginStateError: Unknown plugin, or not enabled.
        """
        entry = self._entry(name)
        if entry.state is not PluginState.ENABLED:
            raise self._state_error(
                entry,
                f"plugin {name!r} is already disabled"
                if entry.state is PluginState.DISABLED
                else f"plugin {name!r} is unloaded; there is nothing to disable",
            )
        self._take_tools(entry)
        entry.state = PluginState.DISABLED
        return self._info(entry)

    def unload(self, name: str) -> PluginInfo:
        """Remove the plugin's tools (if enabled) and forget its module from ``sys.modules``.

        The plugin stays listed; :meth:`enable` imports it afresh. Only the plugin's own module is
        forgotten (not its package nor modules it imported), and objects taken from it elsewhere
        keep the old module alive.

        Raises:
            PluginStateError: Unknown plugin, or already unloaded.
        """
        entry = self._entry(name)
        if entry.state is PluginState.UNLOADED:
            raise self._state_error(entry, f"plugin {name!r} is already unloaded")
        if entry.state is PluginState.ENABLED:
            self._take_tools(entry)
        self._forget_module(entry.spec)
        entry.register = None
        entry.state = PluginState.UNLOADED
        return self._info(entry)

    def reload(self, name: str) -> PluginInfo:
        """Re-import an enabled plugin's module and swap its registrations.

        Entry points: ``importlib.reload`` of the entry point's module. Directory plugins: the file
        executed again into a new module. Then the old tools are unregistered and the new
        ``register`` runs. Reload boundaries: references imported from the module elsewhere keep
        the old objects; calls already running finish with the old handler.

        Raises:
            PluginStateError: Unknown plugin, or not enabled.
            PluginLoadError: The re-import or the new ``register`` failed; the old tools (and, for
                a directory plugin, the old module) stay in place.
        """
        entry = self._entry(name)
        if entry.state is not PluginState.ENABLED:
            raise self._state_error(
                entry,
                f"plugin {name!r} is disabled; reload swaps the tools of an enabled plugin: "
                "enable it first (or unload it, then enable it to import it afresh)"
                if entry.state is PluginState.DISABLED
                else f"plugin {name!r} is unloaded; enable it, which imports it afresh",
            )
        spec = entry.spec
        previous = sys.modules.get(spec.module) if spec.module is not None else None
        try:
            register = self._import(spec, spec.reload or partial(self._forget_and_load, spec))
        except BaseException as exc:
            self._restore_module(spec, previous)
            if isinstance(exc, PluginLoadError):
                raise _extended(exc, _RELOAD_ABANDONED) from exc
            raise  # KeyboardInterrupt and the like
        old = self._take_tools(entry)
        try:
            tools = self._run(spec, register)
        except BaseException as exc:
            for kept in old:
                self.router.register(kept)
            self._commit(entry, entry.register, old)
            self._restore_module(spec, previous)
            if isinstance(exc, PluginLoadError):
                raise _extended(exc, _RELOAD_ABANDONED) from exc
            raise
        self._commit(entry, register, tools)
        return self._info(entry)

    # -- internals ------------------------------------------------------------------------------
    def _entry(self, name: str) -> _Entry:
        entry = self._entries.get(name)
        if entry is None:
            known = ", ".join(self._entries) or "none"
            raise PluginStateError(f"no plugin named {name!r}; known plugins: {known}", plugin=name)
        return entry

    @staticmethod
    def _state_error(entry: _Entry, message: str) -> PluginStateError:
        return PluginStateError(message, plugin=entry.spec.name, state=entry.state.value)

    @staticmethod
    def _info(entry: _Entry) -> PluginInfo:
        spec = entry.spec
        return PluginInfo(spec.name, spec.origin, spec.source, entry.state, entry.tools)

    def _enable(self, entry: _Entry) -> None:
        """Run the plugin's ``register`` (importing it first when unloaded); state unchanged on failure."""
        register = entry.register
        if register is not None:
            self._commit(entry, register, self._run(entry.spec, register))
            return
        try:
            register = self._import(entry.spec, entry.spec.load)
            tools = self._run(entry.spec, register)
        except PluginLoadError:
            self._forget_module(entry.spec)  # unloaded means forgotten
            raise
        self._commit(entry, register, tools)

    @staticmethod
    def _import(spec: PluginSpec, load: Callable[[], RegisterFunction]) -> RegisterFunction:
        label = plugin_label(spec.name, spec.source)
        try:
            register = load()
        except PluginLoadError:
            raise
        except (Exception, SystemExit) as exc:
            raise PluginLoadError(f"{label}: import failed: {describe_error(exc)}", plugin=spec.name) from exc
        return checked_register(register, "register", label, spec.name)

    def _forget_and_load(self, spec: PluginSpec) -> RegisterFunction:
        self._forget_module(spec)
        return spec.load()

    def _run(self, spec: PluginSpec, register: RegisterFunction) -> list[Tool]:
        """Run ``register`` through a recording proxy; on any failure roll its tools back and raise."""
        label = plugin_label(spec.name, spec.source)
        recorder = _RecordingRegistrar(self, spec.name)
        try:
            result = register(recorder)
        except BaseException as exc:
            recorder.closed = True
            error = self._conflict_error(spec, recorder)
            rolled = self._roll_back(recorder)
            if not isinstance(exc, Exception | SystemExit):
                raise  # KeyboardInterrupt and the like: rolled back, not ours to convert
            if error is None:
                error = PluginLoadError(
                    f"{label}: register(router) raised {describe_error(exc)}", plugin=spec.name
                )
            raise _extended(error, rolled) from exc
        recorder.closed = True
        error = self._conflict_error(spec, recorder)
        if error is None and inspect.isawaitable(result):
            if inspect.iscoroutine(result):
                result.close()  # never awaited: no "coroutine was never awaited" warning
            error = PluginLoadError(
                f"{label}: register(router) returned an awaitable; it must be a plain function "
                "(def register, not async def); the tools themselves may be async",
                plugin=spec.name,
            )
        if error is not None:
            raise _extended(error, self._roll_back(recorder))
        return recorder.registered

    def _conflict_error(self, spec: PluginSpec, recorder: _RecordingRegistrar) -> PluginLoadError | None:
        label = plugin_label(spec.name, spec.source)
        if recorder.invalid is not None:
            return PluginLoadError(f"{label}: {recorder.invalid}", plugin=spec.name)
        name = recorder.conflict
        if name is None:
            return None
        if any(t.name == name for t in recorder.registered):
            return PluginLoadError(f"{label}: registers the tool {name!r} twice", plugin=spec.name, tool=name)
        owner = self._owners.get(name)
        if owner is None:
            holder = "the host (outside any plugin)"
        else:
            holder = plugin_label(owner, self._entries[owner].spec.source)
        return PluginLoadError(
            f"{label}: the tool {name!r} is already registered by {holder}; the first registrant keeps it",
            plugin=spec.name,
            tool=name,
            other_plugin=owner,
        )

    def _roll_back(self, recorder: _RecordingRegistrar) -> str:
        """Unregister what ``recorder`` registered; return the message suffix naming it."""
        names = [t.name for t in recorder.registered]
        for registered in reversed(recorder.registered):
            if self.router.get(registered.name) is registered:
                self.router.unregister(registered.name)
        recorder.registered.clear()
        return f" (rolled back: {', '.join(names)})" if names else ""

    def _commit(self, entry: _Entry, register: RegisterFunction | None, tools: list[Tool]) -> None:
        entry.register = register
        entry.state = PluginState.ENABLED
        entry.tools = tuple(t.name for t in tools)
        entry.live = {t.name: t for t in tools}
        for t in tools:
            self._owners[t.name] = entry.spec.name

    def _take_tools(self, entry: _Entry) -> list[Tool]:
        """Unregister the plugin's tools; return them as the router held them (tier changes kept)."""
        taken: list[Tool] = []
        for name, registered in entry.live.items():
            if self._owners.get(name) == entry.spec.name:
                del self._owners[name]
            current = self.router.get(name)
            # the same tool, possibly moved to another tier (set_exposure copies it)
            if current is not None and current.handler is registered.handler:
                taken.append(self.router.unregister(name))
        entry.live = {}
        return taken

    @staticmethod
    def _forget_module(spec: PluginSpec) -> None:
        if spec.module is not None:
            sys.modules.pop(spec.module, None)

    @staticmethod
    def _restore_module(spec: PluginSpec, previous: ModuleType | None) -> None:
        if spec.module is not None:
            put_module(spec.module, previous)

    def __repr__(self) -> str:
        return f"PluginRegistry({len(self._entries)} plugins, sources={list(self.sources)!r})"


_RELOAD_ABANDONED: Final = "; reload abandoned, the previous version stays enabled"


def _extended(error: PluginLoadError, suffix: str) -> PluginLoadError:
    """``error`` with ``suffix`` appended to its message (same plugin, tool and other plugin)."""
    if not suffix:
        return error
    return PluginLoadError(
        f"{error}{suffix}", plugin=error.plugin, tool=error.tool, other_plugin=error.other_plugin
    )
