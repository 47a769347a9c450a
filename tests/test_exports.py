"""The public surface is listed once, sorted, and complete."""

import importlib
import json
import subprocess
import sys
import types
from pathlib import Path

import pytest

SPEC_NAMES = {
    "steerable_agent_runtime": {
        "ToolCall",
        "ToolResult",
        "ToolMode",
        "ToolExposure",
        "ToolRouter",
        "decide_tool_mode",
        "is_terminal_result",
        "tool",
        "workspace_tools_for_cwd",
        "read_file_state_from_messages",
        "SteerableError",
    },
    "steerable_sidecar": {"main"},
}


@pytest.mark.parametrize("module_name", sorted(SPEC_NAMES))
def test_all_is_sorted_and_matches_the_public_namespace(module_name):
    module = importlib.import_module(module_name)
    exported = module.__all__
    for name in exported:  # a lazy package (PEP 562) binds each name on first access
        assert hasattr(module, name), name
    # RUF022 ("isort-style") order: CONSTANTS, then Classes, then functions, each alphabetical.
    assert exported == sorted(exported, key=lambda n: (0 if n.isupper() else 1 if n[0].isupper() else 2, n))
    public = {
        name
        for name, value in vars(module).items()
        if (not name.startswith("_") or name == "__version__") and not isinstance(value, types.ModuleType)
    }
    assert "__version__" in public
    assert public == set(exported)


@pytest.mark.parametrize("module_name", sorted(SPEC_NAMES))
def test_spec_names_are_importable_from_the_top_level(module_name):
    module = importlib.import_module(module_name)
    assert SPEC_NAMES[module_name] <= set(module.__all__)


def test_error_tree_has_one_root():
    from steerable_agent_runtime import errors

    for name in errors.__all__:
        assert issubclass(getattr(errors, name), errors.SteerableError), name


@pytest.mark.parametrize("module_name", sorted(SPEC_NAMES))
def test_the_lazy_table_matches_the_type_checking_imports(module_name):
    """The names type checkers see (the TYPE_CHECKING block) are the ones ``__getattr__`` serves."""
    import ast

    package = importlib.import_module(module_name)
    assert package.__file__ is not None
    tree = ast.parse(Path(package.__file__).read_text(encoding="utf-8"))
    static: dict[str, tuple[str, ...]] = {}
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.If)
            and "TYPE_CHECKING" in ast.unparse(node.test)
            and "not" not in ast.unparse(node.test)
        ):
            for imported in node.body:
                assert isinstance(imported, ast.ImportFrom) and imported.level == 1
                static[imported.module or ""] = tuple(alias.name for alias in imported.names)
    assert static == package._EXPORTS
    assert set(package.__all__) == {"__version__", *(n for names in static.values() for n in names)}
    for module, names in package._EXPORTS.items():
        loaded = importlib.import_module(f"{module_name}.{module}")
        for name in names:
            assert getattr(package, name) is getattr(loaded, name), name


@pytest.mark.parametrize(
    ("module_name", "submodule", "name"),
    [
        ("steerable_agent_runtime", "sandbox", "ToolRouter"),
        ("steerable_sidecar", "doctor", "main"),
    ],
)
def test_unknown_names_and_submodules(module_name, submodule, name):
    package = importlib.import_module(module_name)
    with pytest.raises(AttributeError, match="has no attribute 'NoSuchThing'"):
        package.NoSuchThing  # noqa: B018
    assert getattr(package, submodule) is importlib.import_module(f"{module_name}.{submodule}")
    assert name in dir(package)


def test_importing_the_package_or_its_errors_loads_nothing_heavy():
    """Issue 15: ``import steerable_agent_runtime`` (and its error tree) stays cheap."""
    probe = (
        "import sys, json, steerable_agent_runtime, steerable_agent_runtime.errors, steerable_sidecar;"
        "print(json.dumps(sorted(m for m in ('pydantic', 'asyncio', 'jsonschema', 'httpx', 'mcp') if m in sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == []


def test_the_sidecar_exports_the_error_its_mcp_sources_raise():
    import steerable_sidecar
    from steerable_agent_runtime.errors import McpServerError

    assert "McpServerError" in steerable_sidecar.__all__
    assert steerable_sidecar.McpServerError is McpServerError
