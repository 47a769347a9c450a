"""Where plugins come from: :class:`PluginSource` and the sources the runtime ships.

A source describes plugins (:class:`PluginSpec`) without loading them: :class:`EntryPointSource`
reads the ``steerable.tools`` entry-point group of the installed distributions,
:class:`DirectorySource` the ``.py`` files of ``STEERABLE_PLUGIN_DIR``, :class:`MemorySource`
register functions given in memory (tests, embedders), and :class:`RemoteSource` reserves the
slot for a market (discovery only; loading refuses: there is no download mechanism). The
registry (``plugins.PluginRegistry``) loads them. Spec: Third-party tools (plugin runtime);
user guide: ``docs/plugins.md``.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.machinery
import importlib.util
import os
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from types import CodeType, ModuleType
from typing import TYPE_CHECKING, Any, Final, Protocol

from ._plugin_loading import RegisterFunction, checked_register, describe_error, plugin_label, put_module
from .config import env_text
from .errors import PluginLoadError

if TYPE_CHECKING:  # imported by discover(): --no-plugins never reads the installed distributions
    import importlib.metadata

__all__ = [
    "ENTRY_POINT_GROUP",
    "PLUGIN_DIR_ENV",
    "DirectorySource",
    "EntryPointSource",
    "MemorySource",
    "PluginSource",
    "PluginSpec",
    "RemoteSource",
    "default_plugin_sources",
]

PLUGIN_DIR_ENV: Final = "STEERABLE_PLUGIN_DIR"
"""The environment variable naming the plugin directory (local development)."""

ENTRY_POINT_GROUP: Final = "steerable.tools"
"""The entry-point group an installed distribution declares its ``register`` functions in."""

_DIRECTORY_MODULE_PREFIX: Final = "steerable_plugin_"
_NOT_IDENTIFIER: Final = re.compile(r"\W", re.ASCII)


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
    load: Callable[[], RegisterFunction] = field(repr=False)
    reload: Callable[[], RegisterFunction] | None = field(default=None, repr=False)


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
        import importlib.metadata

        found = importlib.metadata.entry_points(group=self.group)
        return [self._spec(ep) for ep in sorted(found, key=lambda ep: (ep.name, ep.value))]

    def _spec(self, ep: importlib.metadata.EntryPoint) -> PluginSpec:
        dist = ep.dist
        where = f"{ep.value} in {dist.name} {dist.version}" if dist is not None else ep.value
        label = plugin_label(ep.name, where)
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
        raw = env_text(PLUGIN_DIR_ENV, environ)
        if raw is None:
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
            raise PluginLoadError(
                f"plugin directory {self.path}: cannot list it: {describe_error(exc)}"
            ) from exc
        return [
            self._spec(name) for name in names if name.endswith(".py") and not name.startswith(("_", "."))
        ]

    def _spec(self, filename: str) -> PluginSpec:
        path = self.path / filename
        stem = filename[: -len(".py")]
        digest = hashlib.sha256(os.fsencode(path)).hexdigest()[:12]
        module = f"{_DIRECTORY_MODULE_PREFIX}{_NOT_IDENTIFIER.sub('_', stem)}_{digest}"
        load = partial(_load_file, module, path, plugin_label(stem, str(path)), stem)
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
                load=partial(_refuse_download, plugin, plugin_label(plugin, self.location)),
            )
            for plugin in self._catalogue()
        ]

    def __repr__(self) -> str:
        return f"RemoteSource({self.location!r}, name={self.name!r})"


class MemorySource:
    """Plugins given as ``register`` functions in memory: for tests, and embedders that own them.

    ``MemorySource({"greeter": register})`` offers one plugin, ``greeter``, in the mapping's order.
    Nothing is imported: a reload calls ``register`` again (the one :meth:`put` gave last). PLG-6.

    Args:
        plugins: Plugin names to their ``register(router)`` functions (copied).
        name: The origin of its plugins (:attr:`PluginInfo.origin`).
        location: Their :attr:`PluginInfo.source`, for people and messages.
    """

    def __init__(
        self,
        plugins: Mapping[str, RegisterFunction] | None = None,
        *,
        name: str = "memory",
        location: str = "memory",
    ) -> None:
        self.name = name
        self.location = location
        self._plugins: dict[str, RegisterFunction] = dict(plugins or {})

    def put(self, plugin: str, register: RegisterFunction) -> None:
        """Offer ``plugin`` (a new one is loaded by the next ``load_all``; a known one reloads to it)."""
        self._plugins[plugin] = register

    def discover(self) -> list[PluginSpec]:
        """Return one spec per plugin, in the order they were given; their ``load`` returns ``register``."""
        plugins = self._plugins
        return [
            PluginSpec(p, self.name, self.location, None, partial(plugins.__getitem__, p)) for p in plugins
        ]

    def __repr__(self) -> str:
        return f"MemorySource({list(self._plugins)!r}, name={self.name!r})"


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


def _check_directory(path: Path, what: str) -> None:
    if not path.exists():
        raise PluginLoadError(f"{what}: no such directory")
    if not path.is_dir():
        raise PluginLoadError(f"{what}: not a directory")


def _load_entry_point(ep: importlib.metadata.EntryPoint, label: str) -> RegisterFunction:
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
    return checked_register(target, f"{ep.module}:{ep.attr}", label, ep.name)


def _reload_entry_point(ep: importlib.metadata.EntryPoint, label: str) -> RegisterFunction:
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


def _load_file(module_name: str, path: Path, label: str, plugin: str) -> RegisterFunction:
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
        put_module(module_name, previous)
        raise
    namespace = vars(module)
    if "register" not in namespace:
        put_module(module_name, previous)
        raise PluginLoadError(f"{label}: no top-level register(router) function", plugin=plugin)
    try:
        return checked_register(namespace["register"], "register", label, plugin)
    except PluginLoadError:
        put_module(module_name, previous)
        raise


def _refuse_download(plugin: str, label: str) -> RegisterFunction:
    raise PluginLoadError(
        f"{label}: downloading plugins from a remote source is not supported; install the plugin's "
        f"package (its {ENTRY_POINT_GROUP} entry point loads it) or put it in {PLUGIN_DIR_ENV}",
        plugin=plugin,
    )
