"""The plugin runtime (spec: Third-party tools; PLG-1..PLG-9).

Entry points are driven for real: ``tests/fixtures/steerable-fixture-plugin`` is a distribution
installed into the environment (``.ci/run`` does it), declaring ``steerable.tools`` plus a group of
broken plugins that only these tests read. Directory plugins are real files in ``tmp_path``, edited
between reloads.
"""

from __future__ import annotations

import importlib.metadata
import os
import sys
import textwrap
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from steerable_agent_runtime import (
    DirectorySource,
    EntryPointSource,
    MemorySource,
    PluginInfo,
    PluginLoadError,
    PluginRegistry,
    PluginSource,
    PluginSpec,
    PluginState,
    PluginStateError,
    RemoteSource,
    Tool,
    ToolRegistrar,
    ToolRouter,
    UserError,
    default_plugin_sources,
    register_tool_search,
    tool,
)
from steerable_agent_runtime.plugins import ENTRY_POINT_GROUP, PLUGIN_DIR_ENV
from steerable_agent_runtime.types import ToolResult

FIXTURE_DIST = "steerable-fixture-plugin"
FAILURES_GROUP = "steerable.tools.fixture_failures"
FIXTURE_TOOLS = "steerable_fixture_plugin.tools"


def ep_source(attr: str, module: str = "steerable_fixture_plugin.broken") -> str:
    return f"{module}:{attr} in {FIXTURE_DIST} 0.1.0"


FIXTURE_SOURCE = ep_source("register", FIXTURE_TOOLS)

GREETER = """
from steerable_agent_runtime import tool

def register(router):
    @tool(router=router, description="Greet by name")
    async def greet(name: str) -> str:
        return f"hello {name}"
"""


@dataclass
class Only:
    """A PluginSource keeping some plugins of another source (so one broken plugin loads at a time)."""

    inner: PluginSource
    names: tuple[str, ...]

    @property
    def name(self) -> str:
        return self.inner.name

    def discover(self) -> Sequence[PluginSpec]:
        return [spec for spec in self.inner.discover() if spec.name in self.names]


@pytest.fixture(scope="module", autouse=True)
def _fixture_distribution_installed() -> None:
    try:
        importlib.metadata.distribution(FIXTURE_DIST)
    except importlib.metadata.PackageNotFoundError:
        pytest.fail(
            f"the fixture distribution {FIXTURE_DIST} is not installed: run "
            "`pip install ./tests/fixtures/steerable-fixture-plugin` (.ci/run does)",
            pytrace=False,
        )


@pytest.fixture(autouse=True)
def _forget_directory_plugin_modules() -> Iterator[None]:
    yield
    for name in [m for m in sys.modules if m.startswith("steerable_plugin_")]:
        del sys.modules[name]


@pytest.fixture
def plugin_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "plugins"
    folder.mkdir()
    return folder


def write(folder: Path, name: str, code: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(code), encoding="utf-8")
    return path


def module_of(folder: Path, plugin: str) -> str:
    (spec,) = [s for s in DirectorySource(folder).discover() if s.name == plugin]
    assert spec.module is not None
    return spec.module


async def call(router: ToolRouter, name: str, /, **arguments: Any) -> ToolResult:
    return await router.dispatch({"id": "c1", "name": name, "arguments": arguments})


async def value(router: ToolRouter, name: str, /, **arguments: Any) -> Any:
    result = await call(router, name, **arguments)
    assert result.success, result.error
    assert result.data is not None
    return result.data["value"]


def load_error(registry: PluginRegistry) -> PluginLoadError:
    with pytest.raises(PluginLoadError) as caught:
        registry.load_all()
    return caught.value


# -- PLG-1: entry points -------------------------------------------------------------------------


def test_the_entry_point_source_describes_the_installed_plugin_without_importing_it_plg_1():
    sys.modules.pop(FIXTURE_TOOLS, None)
    (spec,) = [s for s in EntryPointSource().discover() if s.name == "steerable_fixture"]
    assert (spec.name, spec.origin, spec.source, spec.module) == (
        "steerable_fixture",
        "entry-point",
        FIXTURE_SOURCE,
        FIXTURE_TOOLS,
    )
    assert FIXTURE_TOOLS not in sys.modules
    assert EntryPointSource().group == ENTRY_POINT_GROUP == "steerable.tools"


async def test_an_installed_package_adds_its_tools_with_no_host_code_plg_1_plg_4():
    router = ToolRouter()
    registry = PluginRegistry(router, [EntryPointSource()])  # every installed plugin: the fixture here
    (info,) = registry.load_all()
    assert info == PluginInfo(
        "steerable_fixture",
        "entry-point",
        FIXTURE_SOURCE,
        PluginState.ENABLED,
        ("steerable_fixture_echo", "steerable_fixture_generation"),
    )
    assert router.names() == ["steerable_fixture_echo", "steerable_fixture_generation"]
    assert await value(router, "steerable_fixture_echo", text="hi") == "hi"
    assert registry.plugins() == [info] and registry.get("steerable_fixture") == info


@pytest.mark.parametrize(
    ("plugin", "message"),
    [
        (
            "import_fails",
            f"plugin 'import_fails' from {ep_source('register', 'steerable_fixture_plugin.import_fails')}: "
            "import failed: ModuleNotFoundError: No module named 'steerable_fixture_missing_dependency'",
        ),
        (
            "missing_register",
            f"plugin 'missing_register' from {ep_source('no_such_register')}: steerable_fixture_plugin.broken "
            "has no attribute 'no_such_register'; the entry point must name a function register(router)",
        ),
        (
            "not_callable",
            f"plugin 'not_callable' from {ep_source('NOT_CALLABLE')}: steerable_fixture_plugin.broken:NOT_CALLABLE "
            "is not callable (it is str); a plugin needs a function register(router)",
        ),
        (
            "names_a_module",
            "plugin 'names_a_module' from steerable_fixture_plugin.broken in steerable-fixture-plugin 0.1.0: "
            "the entry point names the module 'steerable_fixture_plugin.broken', not its register function; "
            "write 'steerable_fixture_plugin.broken:register'",
        ),
        (
            "half_way",
            f"plugin 'half_way' from {ep_source('register_half_way')}: register(router) raised RuntimeError: "
            "the fixture fails half way (rolled back: steerable_fixture_half_a, steerable_fixture_half_b)",
        ),
    ],
)
def test_a_broken_entry_point_fails_loud_naming_it_plg_7_plg_8(plugin, message):
    router = ToolRouter()
    registry = PluginRegistry(router, [Only(EntryPointSource(FAILURES_GROUP), (plugin,))])
    error = load_error(registry)
    assert str(error) == message
    assert (error.plugin, isinstance(error, UserError)) == (plugin, True)
    assert router.names() == []  # PLG-8: nothing left behind
    assert registry.get(plugin).state is PluginState.UNLOADED
    (spec,) = Only(EntryPointSource(FAILURES_GROUP), (plugin,)).discover()
    assert spec.module not in sys.modules  # nor a module


def test_an_entry_point_tool_conflict_names_both_plugins_and_the_tool_plg_7_plg_8():
    router = ToolRouter()
    registry = PluginRegistry(
        router,
        [
            Only(EntryPointSource(), ("steerable_fixture",)),
            Only(EntryPointSource(FAILURES_GROUP), ("conflicting",)),
        ],
    )
    error = load_error(registry)
    assert str(error) == (
        f"plugin 'conflicting' from {ep_source('register_conflicting')}: the tool 'steerable_fixture_echo' is "
        f"already registered by plugin 'steerable_fixture' from {FIXTURE_SOURCE}; the first registrant keeps it "
        "(rolled back: steerable_fixture_conflict_first)"
    )
    assert (error.plugin, error.tool, error.other_plugin) == (
        "conflicting",
        "steerable_fixture_echo",
        "steerable_fixture",
    )
    assert router.names() == ["steerable_fixture_echo", "steerable_fixture_generation"]  # the first keeps it
    assert [(p.name, p.state) for p in registry.plugins()] == [
        ("steerable_fixture", PluginState.ENABLED),
        ("conflicting", PluginState.UNLOADED),
    ]


async def test_reloading_an_entry_point_reimports_its_module_in_place_and_swaps_its_tools_plg_5():
    router = ToolRouter()
    registry = PluginRegistry(router, [EntryPointSource()])
    registry.load_all()
    module = sys.modules[FIXTURE_TOOLS]
    before = await value(router, "steerable_fixture_generation")
    old_tool = router.get("steerable_fixture_generation")
    assert old_tool is not None

    info = registry.reload("steerable_fixture")

    assert info.state is PluginState.ENABLED and info.tools == (
        "steerable_fixture_echo",
        "steerable_fixture_generation",
    )
    assert await value(router, "steerable_fixture_generation") == before + 1  # the module ran again
    assert (
        sys.modules[FIXTURE_TOOLS] is module and module.GENERATION == before + 1
    )  # importlib.reload: same object
    # The reload boundary: an object taken before the reload keeps the old behaviour.
    assert router.get("steerable_fixture_generation") is not old_tool
    assert await old_tool.handler() == before


async def test_unloading_an_entry_point_forgets_its_module_and_enable_imports_it_afresh_plg_5():
    router = ToolRouter()
    registry = PluginRegistry(router, [EntryPointSource()])
    registry.load_all()
    before = await value(router, "steerable_fixture_generation")
    old_module = sys.modules[FIXTURE_TOOLS]

    info = registry.unload("steerable_fixture")
    assert (info.state, info.tools) == (
        PluginState.UNLOADED,
        ("steerable_fixture_echo", "steerable_fixture_generation"),
    )
    assert FIXTURE_TOOLS not in sys.modules and router.names() == []

    registry.enable("steerable_fixture")
    assert sys.modules[FIXTURE_TOOLS] is not old_module
    assert await value(router, "steerable_fixture_generation") == before + 1


# -- PLG-2: the plugin directory -----------------------------------------------------------------


async def test_each_visible_py_file_of_the_directory_is_one_plugin_named_after_its_stem_plg_2(plugin_dir):
    write(plugin_dir, "greeter.py", GREETER)
    write(plugin_dir, "_helpers.py", "raise RuntimeError('a _-prefixed file is never imported')")
    write(plugin_dir, ".greeter.py", "raise RuntimeError('a hidden file (editor backup) is never imported')")
    write(plugin_dir, "notes.txt", "not python")
    (plugin_dir / "package.py").mkdir()  # a directory, whatever its name
    router = ToolRouter()
    registry = PluginRegistry(router, [DirectorySource(plugin_dir)])

    (info,) = registry.load_all()

    path = plugin_dir / "greeter.py"
    assert info == PluginInfo("greeter", "directory", str(path), PluginState.ENABLED, ("greet",))
    assert await value(router, "greet", name="Ada") == "hello Ada"
    module = module_of(plugin_dir, "greeter")
    assert module.startswith("steerable_plugin_greeter_") and sys.modules[module].__file__ == str(path)
    assert not (plugin_dir / "__pycache__").exists()  # compiled from source, nothing written


def test_directory_plugins_get_unique_module_names_and_load_in_file_order_plg_2(tmp_path):
    first, second = tmp_path / "one", tmp_path / "two"
    first.mkdir()
    second.mkdir()
    for folder in (first, second):
        write(folder, "b-tools.py", "def register(router):\n    pass\n")
    write(first, "a.py", "def register(router):\n    pass\n")
    modules = {module_of(first, "b-tools"), module_of(second, "b-tools")}
    assert len(modules) == 2 and all(m.isidentifier() for m in modules)
    assert [s.name for s in DirectorySource(first).discover()] == ["a", "b-tools"]


@pytest.mark.parametrize(
    ("code", "problem"),
    [
        (
            "import not_a_module_anywhere\n",
            "import failed: ModuleNotFoundError: No module named 'not_a_module_anywhere'",
        ),
        ("raise ValueError('bad config')\n", "import failed: ValueError: bad config"),
        ("import sys\nsys.exit(3)\n", "import failed: SystemExit: 3"),
        ("def setup(router):\n    pass\n", "no top-level register(router) function"),
        (
            "register = 42\n",
            "register is not callable (it is int); a plugin needs a function register(router)",
        ),
        (
            "def register(router):\n    raise RuntimeError('boom at register')\n",
            "register(router) raised RuntimeError: boom at register",
        ),
        ("def register(router):\n    raise SystemExit(4)\n", "register(router) raised SystemExit: 4"),
        (
            "async def register(router):\n    pass\n",
            "register(router) returned an awaitable; it must be a plain function (def register, not async def); "
            "the tools themselves may be async",
        ),
        (
            "def register(router):\n    router.register(lambda: 1)\n",
            "register(router) raised TypeError: register() takes a Tool, not function; "
            "decorate a function with @tool(router=router) instead",
        ),
    ],
)
def test_a_broken_directory_plugin_fails_loud_naming_it_plg_7(plugin_dir, code, problem):
    path = write(plugin_dir, "broken.py", code)
    router = ToolRouter()
    registry = PluginRegistry(router, [DirectorySource(plugin_dir)])
    error = load_error(registry)
    assert str(error) == f"plugin 'broken' from {path}: {problem}"
    assert error.plugin == "broken" and router.names() == []
    assert module_of(plugin_dir, "broken") not in sys.modules  # a failed plugin leaves no module behind


def test_a_syntax_error_names_the_plugin_file_and_line_plg_7(plugin_dir):
    source = "def register(router)\n    pass\n"
    path = write(plugin_dir, "broken.py", source)
    with pytest.raises(SyntaxError) as syntax:
        compile(source, str(path), "exec")
    error = load_error(PluginRegistry(ToolRouter(), [DirectorySource(plugin_dir)]))
    assert str(error) == f"plugin 'broken' from {path}: import failed: SyntaxError: {syntax.value}"
    assert "line 1" in str(error)


# -- PLG-3: sources and boot ---------------------------------------------------------------------


def test_default_sources_are_entry_points_then_the_plugin_directory_when_set_plg_3(plugin_dir):
    (only,) = default_plugin_sources({})
    assert isinstance(only, EntryPointSource) and only.group == "steerable.tools"
    assert len(default_plugin_sources({PLUGIN_DIR_ENV: "  "})) == 1  # empty counts as unset
    entry_points, directory = default_plugin_sources({PLUGIN_DIR_ENV: str(plugin_dir)})
    assert isinstance(entry_points, EntryPointSource)
    assert isinstance(directory, DirectorySource) and directory.path == plugin_dir
    assert DirectorySource.from_env({}) is None
    assert PLUGIN_DIR_ENV == "STEERABLE_PLUGIN_DIR"


def test_boot_loads_every_source_in_order_plg_3(plugin_dir, monkeypatch):
    write(plugin_dir, "greeter.py", GREETER)
    monkeypatch.setenv(PLUGIN_DIR_ENV, str(plugin_dir))
    router = ToolRouter()
    registry = PluginRegistry(router, default_plugin_sources())
    loaded = registry.load_all()
    assert [(p.name, p.origin) for p in loaded] == [
        ("steerable_fixture", "entry-point"),
        ("greeter", "directory"),
    ]
    assert router.names() == ["steerable_fixture_echo", "steerable_fixture_generation", "greet"]
    assert registry.plugins() == loaded


def test_load_all_again_loads_only_plugins_added_since_plg_3(plugin_dir):
    write(plugin_dir, "greeter.py", GREETER)
    registry = PluginRegistry(ToolRouter(), [DirectorySource(plugin_dir)])
    assert [p.name for p in registry.load_all()] == ["greeter"]
    registry.disable("greeter")
    assert registry.load_all() == []  # known plugins are left as they are, whatever their state
    assert registry.get("greeter").state is PluginState.DISABLED
    write(
        plugin_dir,
        "waver.py",
        "from steerable_agent_runtime import tool\n\ndef register(router):\n    @tool(router=router)\n    async def wave() -> str:\n        return 'o/'\n",
    )
    assert [p.name for p in registry.load_all()] == ["waver"]


def test_a_registry_without_sources_has_no_plugins_plg_3():
    registry = PluginRegistry(ToolRouter())
    assert registry.load_all() == [] and registry.plugins() == [] and registry.sources == ()


def test_the_first_failure_aborts_the_boot_and_later_plugins_do_not_load_plg_3_plg_7(plugin_dir):
    write(plugin_dir, "a_first.py", GREETER)
    write(plugin_dir, "b_broken.py", "import not_a_module_anywhere\n")
    write(plugin_dir, "c_last.py", GREETER.replace("greet", "salute"))
    router = ToolRouter()
    registry = PluginRegistry(router, [DirectorySource(plugin_dir)])
    error = load_error(registry)
    assert error.plugin == "b_broken"
    assert [(p.name, p.state) for p in registry.plugins()] == [
        ("a_first", PluginState.ENABLED),
        ("b_broken", PluginState.UNLOADED),
    ]
    assert router.names() == ["greet"]
    # a host that does not abort can go on: the failed plugin is known, so the next call loads the rest
    assert [p.name for p in registry.load_all()] == ["c_last"]


# -- PLG-4: the recording proxy ------------------------------------------------------------------


async def test_the_proxy_records_every_registration_form_per_plugin_plg_4(plugin_dir):
    write(
        plugin_dir,
        "forms.py",
        """
        from steerable_agent_runtime import Tool, tool

        def register(router):
            @tool(router=router)
            async def by_decorator() -> str:
                return "decorator"

            @router.tool
            async def by_method_bare() -> str:
                return "bare"

            @router.tool(exposure="deferred", description="options")
            async def by_method_options() -> str:
                return "options"

            async def handler() -> str:
                return "tool object"

            router.register(Tool.from_schema("by_tool_object", {"type": "object"}, handler))
        """,
    )
    write(plugin_dir, "greeter.py", GREETER)
    router = ToolRouter()
    router.register(Tool.from_schema("host_tool", {"type": "object"}, _host_handler))
    registry = PluginRegistry(router, [DirectorySource(plugin_dir)])
    registry.load_all()
    assert registry.get("forms").tools == (
        "by_decorator",
        "by_method_bare",
        "by_method_options",
        "by_tool_object",
    )
    assert registry.get("greeter").tools == ("greet",)
    deferred = router.get("by_method_options")
    assert (
        deferred is not None and deferred.exposure.value == "deferred" and deferred.description == "options"
    )
    assert await value(router, "by_method_bare") == "bare"
    registry.disable("forms")
    assert router.names() == ["host_tool", "greet"]  # only the plugin's own tools go


async def _host_handler() -> str:
    return "host"


def test_a_proxy_kept_past_register_refuses_late_registrations_plg_4(plugin_dir):
    write(plugin_dir, "sneaky.py", "KEPT = []\n\ndef register(router):\n    KEPT.append(router)\n")
    router = ToolRouter()
    registry = PluginRegistry(router, [DirectorySource(plugin_dir)])
    registry.load_all()
    (proxy,) = sys.modules[module_of(plugin_dir, "sneaky")].KEPT
    late = Tool.from_schema("late", {"type": "object"}, _host_handler)
    with pytest.raises(PluginStateError) as caught:
        proxy.register(late)
    assert str(caught.value) == (
        "plugin 'sneaky' registered the tool 'late' after its register(router) returned; "
        "register every tool inside register(router)"
    )
    assert "late" not in router and registry.get("sneaky").tools == ()


# -- PLG-5: lifecycle ----------------------------------------------------------------------------


async def test_disable_removes_the_tools_and_enable_runs_register_again_plg_5(plugin_dir):
    write(
        plugin_dir,
        "counted.py",
        GREETER.replace(
            "def register(router):", "CALLS = []\n\ndef register(router):\n    CALLS.append(router)"
        ),
    )
    router = ToolRouter()
    registry = PluginRegistry(router, [DirectorySource(plugin_dir)])
    registry.load_all()
    module = sys.modules[module_of(plugin_dir, "counted")]

    info = registry.disable("counted")
    assert (info.state, info.tools) == (PluginState.DISABLED, ("greet",))
    assert "greet" not in router
    unknown = await call(router, "greet", name="x")
    assert unknown.data is not None and unknown.data["code"] == "unknown_tool"

    info = registry.enable("counted")
    assert (info.state, info.tools) == (PluginState.ENABLED, ("greet",))
    assert await value(router, "greet", name="Bo") == "hello Bo"
    assert len(module.CALLS) == 2  # register ran again...
    assert sys.modules[module_of(plugin_dir, "counted")] is module  # ...without a re-import


async def test_unload_forgets_the_module_and_enable_imports_the_file_afresh_plg_5(plugin_dir):
    path = write(plugin_dir, "greeter.py", GREETER)
    router = ToolRouter()
    registry = PluginRegistry(router, [DirectorySource(plugin_dir)])
    registry.load_all()
    module_name = module_of(plugin_dir, "greeter")
    old_module = sys.modules[module_name]

    info = registry.unload("greeter")
    assert (info.state, info.tools) == (PluginState.UNLOADED, ("greet",))
    assert module_name not in sys.modules and "greet" not in router

    path.write_text(textwrap.dedent(GREETER).replace("hello", "salut"), encoding="utf-8")
    registry.enable("greeter")
    assert sys.modules[module_name] is not old_module
    assert await value(router, "greet", name="Cy") == "salut Cy"


def test_enabling_an_unloaded_plugin_whose_file_is_gone_fails_and_stays_unloaded_plg_5_plg_7(plugin_dir):
    path = write(plugin_dir, "greeter.py", GREETER)
    registry = PluginRegistry(ToolRouter(), [DirectorySource(plugin_dir)])
    registry.load_all()
    registry.unload("greeter")
    path.unlink()
    with pytest.raises(PluginLoadError) as caught:
        registry.enable("greeter")
    assert str(caught.value) == (
        f"plugin 'greeter' from {path}: import failed: FileNotFoundError: "
        f"[Errno 2] No such file or directory: '{path}'"
    )
    assert registry.get("greeter").state is PluginState.UNLOADED


async def test_reload_picks_up_an_edit_made_in_the_same_second_with_the_same_size_plg_5(plugin_dir):
    path = write(plugin_dir, "greeter.py", GREETER)
    router = ToolRouter()
    registry = PluginRegistry(router, [DirectorySource(plugin_dir)])
    registry.load_all()
    assert await value(router, "greet", name="Di") == "hello Di"
    stat = path.stat()

    path.write_text(textwrap.dedent(GREETER).replace("hello", "howdy"), encoding="utf-8")  # same size
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # and the same mtime: a .pyc would look fresh
    assert path.stat().st_size == stat.st_size

    registry.reload("greeter")
    assert await value(router, "greet", name="Di") == "howdy Di"
    assert not (plugin_dir / "__pycache__").exists()


async def test_reload_swaps_the_registrations_and_old_references_keep_the_old_objects_plg_5(plugin_dir):
    two_tools = """
    from steerable_agent_runtime import tool

    VERSION = 1

    def register(router):
        @tool(router=router)
        async def greet(name: str) -> str:
            return f"v{VERSION} hello {name}"

        @tool(router=router)
        async def wave() -> str:
            return "o/"
    """
    path = write(plugin_dir, "greeter.py", two_tools)
    router = ToolRouter()
    registry = PluginRegistry(router, [DirectorySource(plugin_dir)])
    registry.load_all()
    module_name = module_of(plugin_dir, "greeter")
    old_module, old_greet = sys.modules[module_name], router.get("greet")
    assert old_greet is not None

    path.write_text(
        textwrap.dedent(two_tools).replace("VERSION = 1", "VERSION = 2").replace("wave", "nod"),
        encoding="utf-8",
    )
    info = registry.reload("greeter")

    assert info.tools == ("greet", "nod") and router.names() == ["greet", "nod"]  # wave is gone
    assert await value(router, "greet", name="Ed") == "v2 hello Ed"
    # Reload boundaries: the file ran into a new module; what was taken from the old one stays old.
    assert sys.modules[module_name] is not old_module and old_module.VERSION == 1
    assert await old_greet.handler(name="Ed") == "v1 hello Ed"


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (
            "import not_a_module_anywhere\n",
            "import failed: ModuleNotFoundError: No module named 'not_a_module_anywhere'",
        ),
        (
            "register = None\n",
            "register is not callable (it is NoneType); a plugin needs a function register(router)",
        ),
        (
            "from steerable_agent_runtime import tool\n\ndef register(router):\n    @tool(router=router)\n"
            "    async def greet(name: str) -> str:\n        return 'new'\n    raise RuntimeError('v2 is broken')\n",
            "register(router) raised RuntimeError: v2 is broken (rolled back: greet)",
        ),
    ],
)
async def test_a_failed_reload_keeps_the_old_tools_and_module_plg_5_plg_8(plugin_dir, edit, problem):
    path = write(plugin_dir, "greeter.py", GREETER)
    router = ToolRouter()
    registry = PluginRegistry(router, [DirectorySource(plugin_dir)])
    registry.load_all()
    router.set_exposure("greet", "deferred")  # the host moved it: the kept tool is the one it holds now
    kept, module = router.get("greet"), sys.modules[module_of(plugin_dir, "greeter")]

    path.write_text(edit, encoding="utf-8")
    with pytest.raises(PluginLoadError) as caught:
        registry.reload("greeter")

    assert str(caught.value) == (
        f"plugin 'greeter' from {path}: {problem}; reload abandoned, the previous version stays enabled"
    )
    assert router.get("greet") is kept and await value(router, "greet", name="Fe") == "hello Fe"
    assert sys.modules[module_of(plugin_dir, "greeter")] is module
    info = registry.get("greeter")
    assert (info.state, info.tools) == (PluginState.ENABLED, ("greet",))
    registry.disable("greeter")  # and it is still tracked as the plugin's tool
    assert "greet" not in router


async def test_tool_search_sees_enable_disable_and_reload_at_once_plg_5(plugin_dir):
    deploy = """
    from steerable_agent_runtime import tool

    def register(router):
        @tool(router=router, exposure="deferred", description="Deploy a service to the cluster")
        async def deploy_service(service: str) -> str:
            return f"deployed {service}"
    """
    path = write(plugin_dir, "deploy.py", deploy)
    router = ToolRouter()
    register_tool_search(router)
    registry = PluginRegistry(router, [DirectorySource(plugin_dir)])
    registry.load_all()

    async def found(query: str) -> list[str]:
        result = await call(router, "tool_search", query=query)
        assert result.success and result.data is not None, result.error
        return [t["name"] for t in result.data["tools"]]

    assert await found("deploy service") == ["deploy_service"]
    registry.disable("deploy")
    assert await found("deploy service") == []
    registry.enable("deploy")
    assert await found("deploy service") == ["deploy_service"]
    path.write_text(
        textwrap.dedent(deploy).replace("to the cluster", "with a canary rollout"), encoding="utf-8"
    )
    registry.reload("deploy")
    assert await found("canary") == ["deploy_service"] and await found("cluster") == []
    registry.unload("deploy")
    assert await found("deploy") == []


# -- PLG-6: remote sources -----------------------------------------------------------------------


def test_a_remote_source_discovers_but_never_downloads_plg_6():
    market: PluginSource = RemoteSource("https://market.example/steerable", lambda: ["weather", "stocks"])
    specs = market.discover()
    assert [(s.name, s.origin, s.source, s.module) for s in specs] == [
        ("weather", "remote", "https://market.example/steerable", None),
        ("stocks", "remote", "https://market.example/steerable", None),
    ]
    refusal = (
        "plugin 'weather' from https://market.example/steerable: downloading plugins from a remote source is not "
        "supported; install the plugin's package (its steerable.tools entry point loads it) or put it in "
        "STEERABLE_PLUGIN_DIR"
    )
    with pytest.raises(PluginLoadError) as caught:
        specs[0].load()
    assert str(caught.value) == refusal
    router = ToolRouter()
    registry = PluginRegistry(
        router, [RemoteSource("https://market.example/steerable", lambda: ["weather"], name="market")]
    )
    error = load_error(registry)
    assert str(error) == refusal and router.names() == []
    assert registry.get("weather").origin == "market"


def test_any_object_with_a_name_and_discover_is_a_source_plg_6():
    async def handler() -> str:
        return "in memory"

    def register(router: Any) -> None:
        router.register(Tool.from_schema("memory_tool", {"type": "object"}, handler))

    router = ToolRouter()
    registry = PluginRegistry(router, [MemorySource({"mem": register}, location="this test")])
    assert registry.load_all() == [
        PluginInfo("mem", "memory", "this test", PluginState.ENABLED, ("memory_tool",))
    ]
    assert registry.reload("mem").tools == ("memory_tool",)  # no module: reload just loads again


async def test_the_in_memory_source_offers_what_it_is_given_and_reloads_to_the_latest_plg_6():
    def register_one(router: ToolRegistrar) -> None:
        @tool(router=router)
        async def one() -> str:
            return "one"

    def register_two(router: ToolRegistrar) -> None:
        @tool(router=router, name="one")
        async def renamed() -> str:
            return "two"

    source = MemorySource({"b": register_one}, name="tests")
    assert [(s.name, s.origin, s.source, s.module) for s in source.discover()] == [
        ("b", "tests", "memory", None)
    ]
    router = ToolRouter()
    registry = PluginRegistry(router, [source])
    assert [p.name for p in registry.load_all()] == ["b"]
    source.put("a", lambda router: None)  # a new plugin: the next load_all loads it, after "b"
    assert [p.name for p in registry.load_all()] == ["a"]
    assert [p.name for p in registry.plugins()] == ["b", "a"]
    source.put("b", register_two)  # a known one: reload swaps its tools to the new register
    assert registry.reload("b").tools == ("one",)
    result = await router.dispatch({"id": "1", "name": "one", "arguments": {}})
    assert result.data == {"value": "two"}
    source.put("c", 3)  # type: ignore[arg-type]
    error = load_error(registry)
    assert str(error) == (
        "plugin 'c' from memory: register is not callable (it is int); "
        "a plugin needs a function register(router)"
    )


# -- PLG-7: failures name their offender ---------------------------------------------------------


def test_a_missing_plugin_directory_fails_loud_naming_it_plg_7(tmp_path):
    missing = tmp_path / "nope"
    with pytest.raises(PluginLoadError) as from_env:
        default_plugin_sources({PLUGIN_DIR_ENV: str(missing)})
    assert str(from_env.value) == f"STEERABLE_PLUGIN_DIR={missing}: no such directory"
    a_file = tmp_path / "file.py"
    a_file.write_text("")
    with pytest.raises(PluginLoadError) as not_a_dir:
        DirectorySource.from_env({PLUGIN_DIR_ENV: str(a_file)})
    assert str(not_a_dir.value) == f"STEERABLE_PLUGIN_DIR={a_file}: not a directory"
    # a directory that disappears after start-up fails the next discovery
    router = ToolRouter()
    error = load_error(PluginRegistry(router, [DirectorySource(missing)]))
    assert str(error) == f"plugin directory {missing}: no such directory" and error.plugin is None


def test_two_plugins_of_one_name_fail_before_any_plugin_runs_plg_7(plugin_dir, tmp_path):
    write(plugin_dir, "steerable_fixture.py", GREETER)
    router = ToolRouter()
    error = load_error(PluginRegistry(router, [EntryPointSource(), DirectorySource(plugin_dir)]))
    assert str(error) == (
        f"two plugins are named 'steerable_fixture': one from {FIXTURE_SOURCE}, one from "
        f"{plugin_dir / 'steerable_fixture.py'}; rename one of them"
    )
    assert router.names() == []  # discovery comes first


def test_a_failing_source_is_named_plg_7():
    class Flaky:
        name = "flaky"

        def discover(self) -> list[PluginSpec]:
            raise OSError("disk on fire")

    error = load_error(PluginRegistry(ToolRouter(), [Flaky()]))
    assert str(error) == "plugin source 'flaky' failed: OSError: disk on fire"


def test_a_conflict_between_directory_plugins_names_both_and_the_first_keeps_the_tool_plg_7_plg_8(plugin_dir):
    first = write(plugin_dir, "a_greeter.py", GREETER)
    second = write(
        plugin_dir,
        "b_greeter.py",
        """
        from steerable_agent_runtime import tool

        def register(router):
            @tool(router=router)
            async def b_own() -> str:
                return "mine"

            @tool(router=router)
            async def greet(name: str) -> str:
                return "second"
        """,
    )
    router = ToolRouter()
    registry = PluginRegistry(router, [DirectorySource(plugin_dir)])
    error = load_error(registry)
    assert str(error) == (
        f"plugin 'b_greeter' from {second}: the tool 'greet' is already registered by plugin 'a_greeter' "
        f"from {first}; the first registrant keeps it (rolled back: b_own)"
    )
    assert (error.plugin, error.tool, error.other_plugin) == ("b_greeter", "greet", "a_greeter")
    assert router.names() == ["greet"] and registry.get("a_greeter").tools == ("greet",)


def test_a_conflict_with_a_host_tool_and_a_swallowed_conflict_still_fail_plg_7(plugin_dir):
    path = write(
        plugin_dir,
        "polite.py",
        """
        from steerable_agent_runtime import DuplicateToolError, tool

        def register(router):
            try:
                @tool(router=router)
                async def host_tool() -> str:
                    return "mine now"
            except DuplicateToolError:
                pass  # swallowing it does not make the plugin load
        """,
    )
    router = ToolRouter()
    router.register(Tool.from_schema("host_tool", {"type": "object"}, _host_handler))
    error = load_error(PluginRegistry(router, [DirectorySource(plugin_dir)]))
    assert str(error) == (
        f"plugin 'polite' from {path}: the tool 'host_tool' is already registered by the host (outside any "
        "plugin); the first registrant keeps it"
    )
    assert error.other_plugin is None and router.names() == ["host_tool"]


def test_a_plugin_registering_one_name_twice_is_named_plg_7(plugin_dir):
    path = write(
        plugin_dir,
        "twice.py",
        """
        from steerable_agent_runtime import tool

        def register(router):
            for _ in range(2):
                @tool(router=router)
                async def again() -> str:
                    return "again"
        """,
    )
    router = ToolRouter()
    error = load_error(PluginRegistry(router, [DirectorySource(plugin_dir)]))
    assert str(error) == f"plugin 'twice' from {path}: registers the tool 'again' twice (rolled back: again)"
    assert router.names() == []


def test_enabling_into_a_name_taken_meanwhile_fails_and_stays_disabled_plg_7(plugin_dir):
    path = write(plugin_dir, "greeter.py", GREETER)
    router = ToolRouter()
    registry = PluginRegistry(router, [DirectorySource(plugin_dir)])
    registry.load_all()
    registry.disable("greeter")
    router.register(Tool.from_schema("greet", {"type": "object"}, _host_handler))
    with pytest.raises(PluginLoadError) as caught:
        registry.enable("greeter")
    assert str(caught.value) == (
        f"plugin 'greeter' from {path}: the tool 'greet' is already registered by the host (outside any plugin); "
        "the first registrant keeps it"
    )
    assert registry.get("greeter").state is PluginState.DISABLED
    host = router.get("greet")
    assert host is not None and host.handler is _host_handler


# -- PLG-8: rollback -----------------------------------------------------------------------------


async def test_a_registration_failing_half_way_rolls_back_what_it_registered_plg_8(plugin_dir):
    path = write(
        plugin_dir,
        "half.py",
        """
        from steerable_agent_runtime import tool

        def register(router):
            @tool(router=router, exposure="deferred", description="Half way deploy")
            async def half_deploy() -> str:
                return "a"

            raise KeyError("missing setting")
        """,
    )
    router = ToolRouter()
    register_tool_search(router)
    error = load_error(PluginRegistry(router, [DirectorySource(plugin_dir)]))
    assert (
        str(error)
        == f"plugin 'half' from {path}: register(router) raised KeyError: 'missing setting' (rolled back: half_deploy)"
    )
    assert isinstance(error.__cause__, KeyError)
    assert router.names() == ["tool_search"]
    result = await call(router, "tool_search", query="half deploy")
    assert result.data is not None and result.data["tools"] == []  # the index saw the rollback too


def test_an_interrupt_inside_register_is_rolled_back_and_not_converted_plg_8(plugin_dir):
    write(
        plugin_dir,
        "interrupted.py",
        GREETER.replace('return f"hello {name}"', 'return f"hello {name}"\n    raise KeyboardInterrupt'),
    )
    router = ToolRouter()
    with pytest.raises(KeyboardInterrupt):
        PluginRegistry(router, [DirectorySource(plugin_dir)]).load_all()
    assert router.names() == []


# -- PLG-9: the state table ----------------------------------------------------------------------

E, D, U = PluginState.ENABLED, PluginState.DISABLED, PluginState.UNLOADED
STATE_TABLE: dict[tuple[PluginState, str], PluginState | str] = {
    (E, "enable"): "plugin 'greeter' is already enabled",
    (E, "disable"): D,
    (E, "unload"): U,
    (E, "reload"): E,
    (D, "enable"): E,
    (D, "disable"): "plugin 'greeter' is already disabled",
    (D, "unload"): U,
    (
        D,
        "reload",
    ): "plugin 'greeter' is disabled; reload swaps the tools of an enabled plugin: enable it first "
    "(or unload it, then enable it to import it afresh)",
    (U, "enable"): E,
    (U, "disable"): "plugin 'greeter' is unloaded; there is nothing to disable",
    (U, "unload"): "plugin 'greeter' is already unloaded",
    (U, "reload"): "plugin 'greeter' is unloaded; enable it, which imports it afresh",
}


@pytest.mark.parametrize(("start", "action"), list(STATE_TABLE), ids=lambda v: str(v))
def test_the_state_table_plg_5_plg_9(plugin_dir, start, action):
    write(plugin_dir, "greeter.py", GREETER)
    router = ToolRouter()
    registry = PluginRegistry(router, [DirectorySource(plugin_dir)])
    registry.load_all()
    if start is not E:
        registry.disable("greeter") if start is D else registry.unload("greeter")
    expected = STATE_TABLE[start, action]
    if isinstance(expected, PluginState):
        info = getattr(registry, action)("greeter")
        assert info.state is expected and registry.get("greeter") == info
    else:
        with pytest.raises(PluginStateError) as caught:
            getattr(registry, action)("greeter")
        assert str(caught.value) == expected
        assert (caught.value.plugin, caught.value.state) == ("greeter", start.value)
        assert registry.get("greeter").state is start  # unchanged
    assert ("greet" in router) == (registry.get("greeter").state is E)
    assert (module_of(plugin_dir, "greeter") in sys.modules) == (registry.get("greeter").state is not U)


@pytest.mark.parametrize("action", ["get", "enable", "disable", "unload", "reload"])
def test_an_unknown_plugin_is_a_state_error_naming_it_plg_9(plugin_dir, action):
    write(plugin_dir, "greeter.py", GREETER)
    registry = PluginRegistry(ToolRouter(), [DirectorySource(plugin_dir)])
    with pytest.raises(PluginStateError) as empty:
        getattr(registry, action)("nope")
    assert str(empty.value) == "no plugin named 'nope'; known plugins: none"
    registry.load_all()
    with pytest.raises(PluginStateError) as caught:
        getattr(registry, action)("nope")
    assert str(caught.value) == "no plugin named 'nope'; known plugins: greeter"
    assert (caught.value.plugin, caught.value.state, isinstance(caught.value, UserError)) == (
        "nope",
        None,
        True,
    )


# -- the JSON form -------------------------------------------------------------------------------


def test_plugin_info_to_dict_is_plain_json():
    info = PluginInfo("greeter", "directory", "/p/greeter.py", PluginState.DISABLED, ("greet", "wave"))
    assert info.to_dict() == {
        "name": "greeter",
        "origin": "directory",
        "source": "/p/greeter.py",
        "state": "disabled",
        "tools": ["greet", "wave"],
    }


def test_an_interrupt_during_a_reload_puts_the_old_tools_back_plg_5_plg_8(plugin_dir):
    path = write(plugin_dir, "greeter.py", GREETER)
    router = ToolRouter()
    registry = PluginRegistry(router, [DirectorySource(plugin_dir)])
    registry.load_all()
    kept = router.get("greet")
    path.write_text(
        textwrap.dedent(GREETER).replace(
            'return f"hello {name}"', 'return f"hello {name}"\n    raise KeyboardInterrupt'
        )
    )
    with pytest.raises(KeyboardInterrupt):
        registry.reload("greeter")
    assert router.get("greet") is kept and registry.get("greeter").state is PluginState.ENABLED
