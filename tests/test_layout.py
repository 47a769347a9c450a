"""The source tree keeps the shape docs/development.md describes (Layout, Code rules)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
MODULES = sorted(p for p in SRC.rglob("*.py") if "__pycache__" not in p.parts)
MAX_MODULE_LINES = 800


def _name(path: Path) -> str:
    return str(path.relative_to(SRC))


def _private(dotted: str) -> bool:
    return any(part.startswith("_") and not part.startswith("__") for part in dotted.split("."))


def test_the_tree_is_read() -> None:
    assert len(MODULES) > 100
    assert {p.parent.name for p in MODULES} >= {"steerable_agent_runtime", "steerable_sidecar", "web_tools"}


@pytest.mark.parametrize("path", MODULES, ids=_name)
def test_no_module_passes_800_lines(path: Path) -> None:
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_MODULE_LINES, f"{_name(path)} has {lines} lines: split it by what it holds"


@pytest.mark.parametrize("path", MODULES, ids=_name)
def test_private_names_do_not_cross_modules(path: Path) -> None:
    """A shared piece is public inside its (private) module: ``from ._disk import DIR_FLAGS``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    crossing = [
        f"line {node.lineno}: from {'.' * node.level}{node.module or ''} import {alias.name}"
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
        if alias.name.startswith("_")
        and not alias.name.startswith("__")
        and not (node.module is None and node.level)  # `from . import _module` names a module
    ]
    assert crossing == []


@pytest.mark.parametrize("path", [p for p in MODULES if "steerable_sidecar" in p.parts], ids=_name)
def test_the_sidecar_imports_only_the_runtimes_public_modules(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    imported = [node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module]
    imported += [a.name for node in ast.walk(tree) if isinstance(node, ast.Import) for a in node.names]
    private = [m for m in imported if m.startswith("steerable_agent_runtime") and _private(m)]
    assert private == []


def test_the_runtime_never_imports_the_sidecar() -> None:
    offenders = [
        _name(p)
        for p in MODULES
        if "steerable_agent_runtime" in p.parts
        and re.search(r"^\s*(from|import) steerable_sidecar", p.read_text(), re.M)
    ]
    assert offenders == []


def test_the_development_guide_names_every_package() -> None:
    layout = (ROOT / "docs" / "development.md").read_text(encoding="utf-8").split("## Layout", 1)[1]
    layout = layout.split("\n## ", 1)[0]
    packages = sorted(p.parent for p in MODULES if p.name == "__init__.py")
    missing = [
        str(package.relative_to(SRC))
        for package in packages
        if not re.search(rf"(^|[\s/]){package.name}/\s", layout, re.M)
    ]
    assert missing == []


# -- the sidecar's shape: subpackages by concern, no import cycle, one command table (issue 33) ------

SIDECAR = SRC / "steerable_sidecar"


def _dotted(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _sidecar_imports() -> dict[str, set[str]]:
    """Each sidecar module and the sidecar modules it imports anywhere (in a function, for type checkers)."""
    modules = {_dotted(p): p for p in MODULES if SIDECAR in p.parents}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom):
                base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
                module = ".".join([*base, *([node.module] if node.module else [])])
                targets = [module, *(f"{module}.{alias.name}" for alias in node.names)]
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            found |= {target for target in targets if target in modules and target != name}
        graph[name] = found
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    found: list[list[str]] = []
    done: set[str] = set()

    def visit(node: str, path: list[str]) -> None:
        for nxt in sorted(graph.get(node, ())):
            if nxt in path:
                found.append([*path[path.index(nxt) :], nxt])
            elif nxt not in done:
                visit(nxt, [*path, nxt])
        done.add(node)

    for start in sorted(graph):
        if start not in done:
            visit(start, [start])
    return found


def test_no_import_cycle_among_the_sidecars_modules() -> None:
    graph = _sidecar_imports()
    assert len(graph) > 90
    assert _cycles(graph) == []


def test_the_sidecars_subpackages_import_each_other_without_a_cycle() -> None:
    """``steerable_sidecar.X.*`` as one node per subpackage (a top-level module is its own): a layering."""
    graph: dict[str, set[str]] = {}
    for name, imported in _sidecar_imports().items():
        unit = name.split(".")[1] if "." in name else name
        graph.setdefault(unit, set()).update(
            other.split(".")[1] for other in imported if "." in other and other.split(".")[1] != unit
        )
    assert {"cli", "run", "sidecar", "mcp", "acp", "rpc", "providers", "run_code", "shared"} <= set(graph)
    assert _cycles(graph) == []
    assert graph["shared"] <= {"exit_codes", "_safe_path"}  # the bottom layer imports no front end


def test_every_command_runs_from_the_code_named_for_it() -> None:
    """``steerable NAME`` is one row of the command table; its code is ``cli/_NAME.py`` or ``NAME/``."""
    from steerable_sidecar.cli._commands import COMMANDS, resolve

    assert list(COMMANDS) == [
        "tools",
        "call",
        "session",
        "mcp",
        "acp",
        "plugins",
        "doctor",
        "jobs",
        "run",
        "sidecar",
    ]
    for name, command in COMMANDS.items():
        module = command.run.partition(":")[0]
        assert module == f"cli._{name}" or module.startswith(f"{name}."), (name, module)
        hooks = (command.run, command.arguments, command.on_config_error, command.on_usage_error)
        for target in filter(None, hooks):
            assert callable(resolve(target)), target


def test_no_code_branches_on_the_command_name() -> None:
    """What a command does is its row in the table: ``args.command`` is compared once, in ``_parse``."""
    compared = [
        f"{_name(path)}:{node.lineno}"
        for path in MODULES
        if SIDECAR in path.parents
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Compare)
        and any(ast.unparse(side) == "args.command" for side in (node.left, *node.comparators))
        and "None" not in ast.unparse(node)  # no command given: the top-level help
    ]
    # `steerable call NAME --harness X '{...}'`: argparse leaves call's JSON among the extras
    assert compared == ["steerable_sidecar/cli/_main.py:" + compared[0].rpartition(":")[2]]


# -- timing in tests (docs/development.md, "Timing in tests"; issue 33, item 6) ---------------------

TESTS = ROOT / "tests"
TEST_MODULES = sorted(
    p for p in TESTS.rglob("*.py") if not {"data", "fixtures", "hosts", "__pycache__"} & set(p.parts)
)
_SLEEPS = {"time.sleep", "asyncio.sleep"}


def _fixed_sleeps(path: Path) -> list[str]:
    """Sleeps of a constant time in a test's own body: not in a polling loop, not in a helper it defines."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for test in (n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)):
        if not test.name.startswith("test"):
            continue
        pending: list[ast.AST] = list(test.body)
        while pending:
            node = pending.pop()
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.While | ast.For):
                continue  # a helper's own pace, or a poll
            if (
                isinstance(node, ast.Call)
                and ast.unparse(node.func) in _SLEEPS
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and node.args[0].value
            ):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}")
            pending.extend(ast.iter_child_nodes(node))
    return found


def test_tests_wait_on_events_not_for_fixed_times() -> None:
    """A test waits on what happens (``tests/waiting.py``); a wrong behaviour's window is ``grace(...)``."""
    found = [line for path in TEST_MODULES for line in _fixed_sleeps(path)]
    assert found == []


def _clock_bounds(path: Path) -> list[str]:
    """``assert`` upper bounds under 1 s on a clock reading or a duration (``took``, ``elapsed``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    tight = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare) or not any(isinstance(op, ast.Lt | ast.LtE) for op in node.ops):
            continue
        text = ast.unparse(node)
        if not re.search(r"monotonic\(\)|perf_counter\(\)|\btook\b|\belapsed\b", text):
            continue
        sides = [node.left, *node.comparators]
        for op, right in zip(node.ops, sides[1:], strict=True):
            if isinstance(op, ast.Lt | ast.LtE) and isinstance(right, ast.Constant):
                if isinstance(right.value, int | float) and right.value < 1.0:
                    tight.append(f"{path.relative_to(ROOT)}:{node.lineno}: {text}")
    return tight


def test_no_test_bounds_a_duration_under_a_second() -> None:
    """A speed goal is a benchmark's; a deadline's bound leaves a loaded 2-core machine its time."""
    found = [line for path in TEST_MODULES for line in _clock_bounds(path)]
    assert found == []
