"""The plugin runtime: third-party tools from entry points and a plugin directory.

Spec: Third-party tools (plugin runtime); REQUIREMENTS PLG-1..PLG-9. User guide: ``docs/plugins.md``.

A plugin is a ``register(router)`` callable. A :class:`PluginSource` describes plugins
(:class:`PluginSpec`) without loading them: :class:`EntryPointSource` reads the ``steerable.tools``
entry-point group of the installed distributions, :class:`DirectorySource` the ``.py`` files of
``STEERABLE_PLUGIN_DIR``, and :class:`RemoteSource` reserves the slot for a market (discovery only;
loading refuses: there is no download mechanism).

:class:`PluginRegistry` loads them over a :class:`~steerable_agent_runtime.tools.ToolRouter`. Each
``register`` receives a recording proxy, not the router: the proxy registers on the router and
records which tool names the plugin added, which is what gives plugins a lifecycle after boot
(enable / disable / unload / reload). Every change goes through ``router.register`` /
``router.unregister``, so listeners (``tool_search``'s index) see it at once.

Failures fail loud with :class:`~steerable_agent_runtime.errors.PluginLoadError`, naming the
plugin; a ``register`` that fails mid-way has its tools rolled back first. Lifecycle calls on an
unknown plugin or in the wrong state raise :class:`~steerable_agent_runtime.errors.PluginStateError`.

State table (the rows are the current state; a cell is the new state, or the error)::

               enable                 disable     unload      reload
    enabled    PluginStateError       disabled    unloaded    enabled (new module and tools)
    disabled   enabled (register      PSE         unloaded    PluginStateError
               runs again)
    unloaded   enabled (imported      PSE         PSE         PluginStateError
               afresh)

A failed ``enable`` or ``reload`` raises ``PluginLoadError`` and leaves the state as it was (a
failed reload keeps the old tools registered). The registry is not thread-safe: call it from the
thread (event loop) that owns the router.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.machinery
import importlib.metadata
import importlib.util
import inspect
import os
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from functools import partial
from pathlib import Path
from types import CodeType, ModuleType
from typing import Any, Final, Protocol, TypeAlias

from .errors import DuplicateToolError, PluginLoadError, PluginStateError, UserError
from .tools import Tool, ToolDecorator, ToolRegistrar, ToolRouter, check_tool_name

__all__ = [
    "ENTRY_POINT_GROUP",
    "PLUGIN_DIR_ENV",
    "DirectorySource",
    "EntryPointSource",
    "PluginInfo",
    "PluginRegistry",
    "PluginSource",
    "PluginSpec",
    "PluginState",
    "RemoteSource",
    "default_plugin_sources",
]

PLUGIN_DIR_ENV: Final = "STEERABLE_PLUGIN_DIR"
"""The environment variable naming the plugin directory (local development)."""

ENTRY_POINT_GROUP: Final = "steerable.tools"
"""The entry-point group an installed distribution declares its ``register`` functions in."""

_RegisterFunction: TypeAlias = Callable[[ToolRegistrar], object]
"""A plugin's ``register(router)``; what it returns is ignored (a coroutine is refused)."""

_DIRECTORY_MODULE_PREFIX: Final = "steerable_plugin_"
_NOT_IDENTIFIER: Final = re.compile(r"\W", re.ASCII)


class PluginState(StrEnum):
    """Where a plugin is in its lifecycle (see the module docstring for the transitions)."""

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


@dataclass(frozen=True, slots=True)
class PluginSpec:
    """How a source describes one plugin, before anything is imported.

    Attributes:
        name: The plugin name; unique across every source of a registry.
        origin: The source's name (:attr:`PluginInfo.origin`).
        source: Where the plugin lives, for people (:attr:`PluginInfo.source`); error messages use it.
        module: The ``sys.modules`` key of the plugin's module, forgotten on unload and restored
            when a reload fails; ``None`` when nothing is imported (a remote plugin).
        load: Imports the plugin and returns its ``register(router)``. It raises
            :class:`PluginLoadError` for a missing or non-callable ``register``; any other exception
            is reported by the registry as an import failure.
        reload: Re-imports the plugin and returns the new ``register``. ``None``: the registry
            forgets ``module`` from ``sys.modules`` and calls ``load``.
    """

    name: str
    origin: str
    source: str
    module: str | None
    load: Callable[[], _RegisterFunction] = field(repr=False)
    reload: Callable[[], _RegisterFunction] | None = field(default=None, repr=False)


class PluginSource(Protocol):
    """Where plugins come from. Spec: Third-party tools (remote sources plug in here).

    ``discover`` only describes plugins; the registry imports them through each spec's ``load``.
    A source that cannot be read (a missing directory) raises :class:`PluginLoadError`.
    """

    @property
    def name(self) -> str:
        """The origin written into each plugin's :attr:`PluginInfo.origin`."""
        ...

    def discover(self) -> Sequence[PluginSpec]:
        """Return the plugins this source offers now, in load order."""
        ...


# -- sources ------------------------------------------------------------------------------------


class EntryPointSource:
    """The installed distributions' entry points in one group (default ``steerable.tools``).

    Each entry point is one plugin named after the entry point, whose value names its
    ``register`` (``my_package.tools:register``). Plugins load sorted by name, so which of two
    conflicting plugins wins does not depend on install order. Reload is ``importlib.reload`` of
    the entry point's module, after discarding its cached bytecode so that an edit made within the
    same second is not missed. Spec: Third-party tools; PLG-1.

    Args:
        group: The entry-point group to read.
    """

    def __init__(self, group: str = ENTRY_POINT_GROUP) -> None:
        self.group = group
        self.name = "entry-point"

    def discover(self) -> list[PluginSpec]:
        """Return one spec per entry point in the group, sorted by name (nothing is imported)."""
        found = importlib.metadata.entry_points(group=self.group)
        return [self._spec(ep) for ep in sorted(found, key=lambda ep: (ep.name, ep.value))]

    def _spec(self, ep: importlib.metadata.EntryPoint) -> PluginSpec:
        dist = ep.dist
        where = f"{ep.value} in {dist.name} {dist.version}" if dist is not None else ep.value
        label = _label(ep.name, where)
        return PluginSpec(
            name=ep.name,
            origin=self.name,
            source=where,
            module=ep.module,
            load=partial(_load_entry_point, ep, label),
            reload=partial(_reload_entry_point, ep, label),
        )

    def __repr__(self) -> str:
        return f"EntryPointSource(group={self.group!r})"


class DirectorySource:
    """A directory of plugin files: each ``.py`` file not starting with ``_`` (or ``.``) is one plugin.

    The plugin is named after the file stem and needs a top-level ``register(router)``. Files are
    imported under a unique module name (``steerable_plugin_<stem>_<hash of the path>``), never on
    ``sys.path``, and compiled from source every time: no ``__pycache__`` is read or written, so an
    edit is seen by the next reload however soon it comes. Plugins load sorted by file name.
    Spec: Third-party tools; PLG-2.

    Args:
        path: The directory. Checked at :meth:`discover`.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path).absolute()
        self.name = "directory"

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> DirectorySource | None:
        """The source on ``STEERABLE_PLUGIN_DIR``, or ``None`` when the variable is unset or empty.

        Args:
            environ: The environment to read (defaults to ``os.environ``).

        Raises:
            PluginLoadError: The variable names a missing directory or something else than a
                directory; the message names the variable and its value.
        """
        raw = (os.environ if environ is None else environ).get(PLUGIN_DIR_ENV, "")
        if not raw.strip():
            return None
        _check_directory(Path(raw), f"{PLUGIN_DIR_ENV}={raw}")
        return cls(raw)

    def discover(self) -> list[PluginSpec]:
        """Return one spec per plugin file, sorted by file name (nothing is imported).

        Raises:
            PluginLoadError: The directory is missing, not a directory, or cannot be listed.
        """
        _check_directory(self.path, f"plugin directory {self.path}")
        try:
            names = sorted(entry.name for entry in os.scandir(self.path) if entry.is_file())
        except OSError as exc:
            raise PluginLoadError(f"plugin directory {self.path}: cannot list it: {_describe(exc)}") from exc
        return [
            self._spec(name) for name in names if name.endswith(".py") and not name.startswith(("_", "."))
        ]

    def _spec(self, filename: str) -> PluginSpec:
        path = self.path / filename
        stem = filename[: -len(".py")]
        digest = hashlib.sha256(os.fsencode(path)).hexdigest()[:12]
        module = f"{_DIRECTORY_MODULE_PREFIX}{_NOT_IDENTIFIER.sub('_', stem)}_{digest}"
        load = partial(_load_file, module, path, _label(stem, str(path)), stem)
        return PluginSpec(
            name=stem, origin=self.name, source=str(path), module=module, load=load, reload=load
        )

    def __repr__(self) -> str:
        return f"DirectorySource({str(self.path)!r})"


class RemoteSource:
    """A market of plugins: discovery only (spec: remote sources; only discovery is reserved).

    ``discover`` lists what ``catalogue`` returns; nothing can be loaded from here, because there
    is no download mechanism: each spec's ``load`` raises :class:`PluginLoadError` saying so. Do
    not give a remote source to a :class:`PluginRegistry` (its :meth:`~PluginRegistry.load_all`
    would fail on the first plugin); call :meth:`discover` to show what a market offers, and
    install the chosen plugin as a package. Fetching the listing is the caller's job (the runtime
    does no network I/O). PLG-6.

    Args:
        location: Where the market is (a URL, for people and messages).
        catalogue: Returns the plugin names the market offers now.
        name: The origin of its plugins.
    """

    def __init__(
        self, location: str, catalogue: Callable[[], Iterable[str]], *, name: str = "remote"
    ) -> None:
        self.location = location
        self.name = name
        self._catalogue = catalogue

    def discover(self) -> list[PluginSpec]:
        """Return one spec per plugin the catalogue lists, in its order; their ``load`` refuses."""
        return [
            PluginSpec(
                name=plugin,
                origin=self.name,
                source=self.location,
                module=None,
                load=partial(_refuse_download, plugin, _label(plugin, self.location)),
            )
            for plugin in self._catalogue()
        ]

    def __repr__(self) -> str:
        return f"RemoteSource({self.location!r}, name={self.name!r})"


def default_plugin_sources(environ: Mapping[str, str] | None = None) -> list[PluginSource]:
    """The sources every entry point boots with: entry points, then ``STEERABLE_PLUGIN_DIR`` when set.

    Args:
        environ: The environment to read (defaults to ``os.environ``).

    Returns:
        ``[EntryPointSource()]``, plus a :class:`DirectorySource` when the variable is set.

    Raises:
        PluginLoadError: ``STEERABLE_PLUGIN_DIR`` names a missing directory.
    """
    sources: list[PluginSource] = [EntryPointSource()]
    directory = DirectorySource.from_env(environ)
    if directory is not None:
        sources.append(directory)
    return sources


# -- loading helpers ----------------------------------------------------------------------------


def _label(plugin: str, source: str) -> str:
    return f"plugin {plugin!r} from {source}"


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _check_directory(path: Path, what: str) -> None:
    if not path.exists():
        raise PluginLoadError(f"{what}: no such directory")
    if not path.is_dir():
        raise PluginLoadError(f"{what}: not a directory")


def _checked_register(target: object, what: str, label: str, plugin: str) -> _RegisterFunction:
    if not callable(target):
        raise PluginLoadError(
            f"{label}: {what} is not callable (it is {type(target).__name__}); "
            "a plugin needs a function register(router)",
            plugin=plugin,
        )
    return target


def _load_entry_point(ep: importlib.metadata.EntryPoint, label: str) -> _RegisterFunction:
    module = importlib.import_module(ep.module)
    if ep.attr is None:
        raise PluginLoadError(
            f"{label}: the entry point names the module {ep.module!r}, not its register function; "
            f"write '{ep.module}:register'",
            plugin=ep.name,
        )
    target: Any = module
    for part in ep.attr.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise PluginLoadError(
                f"{label}: {ep.module} has no attribute {ep.attr!r}; "
                "the entry point must name a function register(router)",
                plugin=ep.name,
            ) from None
    return _checked_register(target, f"{ep.module}:{ep.attr}", label, ep.name)


def _reload_entry_point(ep: importlib.metadata.EntryPoint, label: str) -> _RegisterFunction:
    importlib.invalidate_caches()
    module = sys.modules.get(ep.module)
    if module is not None:
        _discard_bytecode(module)
        importlib.reload(module)
    return _load_entry_point(ep, label)


def _discard_bytecode(module: ModuleType) -> None:
    """Remove the module's cached ``.pyc``: its check (mtime in whole seconds, size) misses quick edits."""
    cached = getattr(module, "__cached__", None)
    if isinstance(cached, str) and isinstance(getattr(module, "__file__", None), str):
        try:
            os.remove(cached)
        except OSError:
            pass  # absent or read-only: Python's own freshness check still applies


class _SourceOnlyLoader(importlib.machinery.SourceFileLoader):
    """A source loader that compiles from the file every time: no ``__pycache__`` read or written."""

    def get_code(self, fullname: str) -> CodeType:
        return self.source_to_code(self.get_data(self.path), self.path)


def _load_file(module_name: str, path: Path, label: str, plugin: str) -> _RegisterFunction:
    """Execute ``path`` as a new module under ``module_name`` and return its top-level ``register``.

    The new module replaces any previous one in ``sys.modules`` only once it executed without error
    (it is there during execution, as ``dataclasses`` and the like expect).
    """
    loader = _SourceOnlyLoader(module_name, str(path))
    spec = importlib.util.spec_from_file_location(module_name, path, loader=loader)
    assert spec is not None  # always a spec when a loader is given
    module = importlib.util.module_from_spec(spec)
    previous = sys.modules.get(module_name)
    sys.modules[module_name] = module
    try:
        loader.exec_module(module)
    except BaseException:
        _put_module(module_name, previous)
        raise
    namespace = vars(module)
    if "register" not in namespace:
        _put_module(module_name, previous)
        raise PluginLoadError(f"{label}: no top-level register(router) function", plugin=plugin)
    try:
        return _checked_register(namespace["register"], "register", label, plugin)
    except PluginLoadError:
        _put_module(module_name, previous)
        raise


def _refuse_download(plugin: str, label: str) -> _RegisterFunction:
    raise PluginLoadError(
        f"{label}: downloading plugins from a remote source is not supported; install the plugin's "
        f"package (its {ENTRY_POINT_GROUP} entry point loads it) or put it in {PLUGIN_DIR_ENV}",
        plugin=plugin,
    )


def _put_module(name: str, module: ModuleType | None) -> None:
    if module is None:
        sys.modules.pop(name, None)
    else:
        sys.modules[name] = module


# -- the registry -------------------------------------------------------------------------------


@dataclass(slots=True)
class _Entry:
    spec: PluginSpec
    state: PluginState = PluginState.UNLOADED
    register: _RegisterFunction | None = None
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
                raise PluginLoadError(f"plugin source {source.name!r} failed: {_describe(exc)}") from exc
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
    def _import(spec: PluginSpec, load: Callable[[], _RegisterFunction]) -> _RegisterFunction:
        label = _label(spec.name, spec.source)
        try:
            register = load()
        except PluginLoadError:
            raise
        except (Exception, SystemExit) as exc:
            raise PluginLoadError(f"{label}: import failed: {_describe(exc)}", plugin=spec.name) from exc
        return _checked_register(register, "register", label, spec.name)

    def _forget_and_load(self, spec: PluginSpec) -> _RegisterFunction:
        self._forget_module(spec)
        return spec.load()

    def _run(self, spec: PluginSpec, register: _RegisterFunction) -> list[Tool]:
        """Run ``register`` through a recording proxy; on any failure roll its tools back and raise."""
        label = _label(spec.name, spec.source)
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
                    f"{label}: register(router) raised {_describe(exc)}", plugin=spec.name
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
        label = _label(spec.name, spec.source)
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
            holder = _label(owner, self._entries[owner].spec.source)
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

    def _commit(self, entry: _Entry, register: _RegisterFunction | None, tools: list[Tool]) -> None:
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
            _put_module(spec.module, previous)

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
