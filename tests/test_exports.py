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
    assert set(package.__all__) - {"__version__"} == {n for names in static.values() for n in names}
    for module, names in package._EXPORTS.items():
        loaded = importlib.import_module(f"{module_name}.{module}")
        for name in names:
            assert getattr(package, name) is getattr(loaded, name), name


@pytest.mark.parametrize(
    ("module_name", "submodule", "name"),
    [
        ("steerable_agent_runtime", "sandbox", "ToolRouter"),
        ("steerable_sidecar", "cli", "main"),
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


# -- steerable_sidecar's decided public surface (issue 33, item 3) ----------------------------------

SIDECAR_SRC = Path(__file__).resolve().parents[1] / "src" / "steerable_sidecar"
SIDECAR_PUBLIC_MODULES = {
    "steerable_sidecar": "the package: the names most embedders need, lazily",
    "steerable_sidecar.cli": "main (the steerable command's entry point) and build_parser",
    "steerable_sidecar.exit_codes": "ExitCode: the command's exit codes",
    "steerable_sidecar.harbor": "SteerableAgent: the import path Harbor is given",
    "steerable_sidecar.acp": "steerable acp's agent, for an embedder serving its own streams",
    "steerable_sidecar.config": "the STEERABLE_* variable table and the configuration file reader",
    "steerable_sidecar.mcp": "steerable mcp's server",
    "steerable_sidecar.mcp_sources": "MCP servers as tool sources",
    "steerable_sidecar.providers": "the OpenAI-compatible provider, its configuration, vendor profiles",
    "steerable_sidecar.rpc": "the JSON-RPC peer every server and client here uses",
    "steerable_sidecar.run": "steerable run's ask_user handler and the ATIF export",
    "steerable_sidecar.run_code": "the run_code tool",
    "steerable_sidecar.shared": "nothing: what the front ends share is private",
    "steerable_sidecar.sidecar": "steerable sidecar's server and SidecarClient",
    "steerable_sidecar.sidecar.protocol": "the sidecar protocol's wire shapes (typed dicts)",
    "steerable_sidecar.web_tools": "web_search and web_fetch, their policy and backends",
}
"""Every public module of ``steerable_sidecar`` and what it is public for; every other is ``_private``."""


def _dotted(path: Path) -> str:
    parts = path.relative_to(SIDECAR_SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _declared_all(path: Path) -> list[str] | None:
    import ast

    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        if isinstance(target, ast.Name) and target.id == "__all__":
            assert isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None
            return list(ast.literal_eval(node.value))
    return None


SIDECAR_MODULES = {_dotted(p): p for p in sorted(SIDECAR_SRC.rglob("*.py")) if "__pycache__" not in p.parts}


def test_the_sidecars_public_modules_are_the_decided_ones():
    public = {name for name in SIDECAR_MODULES if not any(part.startswith("_") for part in name.split("."))}
    assert public == set(SIDECAR_PUBLIC_MODULES)


@pytest.mark.parametrize("module_name", sorted(SIDECAR_PUBLIC_MODULES))
def test_every_public_module_lists_its_names(module_name):
    names = _declared_all(SIDECAR_MODULES[module_name])
    assert names is not None, f"{module_name} has no __all__"
    assert names == sorted(names, key=lambda n: (0 if n.isupper() else 1 if n[0].isupper() else 2, n))


LAZY_PACKAGES = sorted(
    name
    for name, path in SIDECAR_MODULES.items()
    if path.name == "__init__.py" and "_EXPORTS" in path.read_text(encoding="utf-8")
)


@pytest.mark.parametrize("module_name", LAZY_PACKAGES)
def test_each_sidecar_package_serves_what_its_type_checking_block_imports(module_name):
    test_the_lazy_table_matches_the_type_checking_imports(module_name)


def test_the_public_surface_stays_decided():
    """Public names per public module, counted from each ``__all__``: a new one is a decision."""
    counts = {name: len(_declared_all(SIDECAR_MODULES[name]) or ()) for name in SIDECAR_PUBLIC_MODULES}
    assert counts["steerable_sidecar.shared"] == 0
    # the wire's typed dicts are one name per message shape; the rest is the API an embedder uses
    assert sum(counts.values()) - counts["steerable_sidecar.sidecar.protocol"] <= 110, counts


def _docs() -> list[Path]:
    root = SIDECAR_SRC.parents[1]
    pages = [p for p in sorted((root / "docs").glob("*.md")) if p.name != "development.md"]
    return [*pages, root / "README.md", root / "js" / "README.md"]


@pytest.mark.parametrize("page", _docs(), ids=lambda p: p.name)
def test_the_docs_cite_only_public_names_that_exist(page):
    """A user's page names a public module, or a name its ``__all__`` lists (development.md: the tree)."""
    import re

    cited = set(
        re.findall(r"steerable_sidecar(?:\.[A-Za-z_]+)*(?::[A-Za-z_]+)?", page.read_text(encoding="utf-8"))
    )
    wrong = []
    for reference in sorted(cited):
        dotted = reference.replace(":", ".").rstrip(".")
        if dotted in SIDECAR_PUBLIC_MODULES:
            continue
        module, _, name = dotted.rpartition(".")
        names = _declared_all(SIDECAR_MODULES[module]) if module in SIDECAR_PUBLIC_MODULES else None
        if names is None or name not in [*names, "__version__"]:
            wrong.append(reference)
    assert wrong == []
