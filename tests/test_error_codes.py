"""Each tool family's ``data.code`` registry checked against its documentation, both ways.

A code in a registry that no doc table lists fails, and so does a documented code the registry
lacks (the way tests/sidecar/rpc/test_rpc.py checks the JSON-RPC codes against docs/sidecar-protocol.md).
"""

import ast
import json
import re
from enum import StrEnum
from pathlib import Path
from typing import cast

import pytest

from steerable_agent_runtime import ToolErrorCode
from steerable_agent_runtime.sandbox import SandboxErrorCode
from steerable_agent_runtime.workspace import FileErrorCode
from steerable_sidecar import McpErrorCode, RunCodeErrorCode
from steerable_sidecar.web_tools import WebErrorCode

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
CODE = re.compile(r"`([a-z][a-z0-9_]*)`")


def documented_codes(doc: str, heading: str) -> list[str]:
    """The codes in the first column of the table rows under ``heading`` (up to the next heading)."""
    text = (DOCS / doc).read_text(encoding="utf-8")
    start = text.index(f"\n{heading}\n")
    ends = [at for at in (text.find("\n## ", start + 1), text.find("\n### ", start + 1)) if at != -1]
    end = min(ends, default=-1)
    codes: list[str] = []
    for line in text[start : end if end != -1 else len(text)].splitlines():
        if line.startswith("| `"):
            codes += CODE.findall(line.split("|")[1])
    return codes


def registry_codes_used_as_literals(package: Path, registry: type[StrEnum]) -> list[str]:
    """Every ``"code"`` written as a literal where a registry member belongs (``Error("x", ...)``)."""
    values = set(registry)
    found = []
    for path in sorted(package.rglob("*.py")):
        if path.name == "_codes.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        exported = {
            id(name)
            for node in tree.body
            if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "__all__"
            for name in ast.walk(node.value)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and node.value in values and id(node) not in exported:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value!r}")
    return found


REGISTRIES = [
    (FileErrorCode, "file-tools.md", "## All error codes"),
    (WebErrorCode, "web-tools.md", "## Error codes"),
    (ToolErrorCode, "runtime.md", "### Error codes"),
    (SandboxErrorCode, "sandbox.md", "### Error codes"),
    (RunCodeErrorCode, "run-code.md", "### Result"),
    (McpErrorCode, "mcp-sources.md", "### Error codes"),
]


@pytest.mark.parametrize(("registry", "doc", "heading"), REGISTRIES, ids=lambda v: getattr(v, "__name__", v))
def test_every_registered_code_is_documented_and_every_documented_code_registered(registry, doc, heading):
    documented = documented_codes(doc, heading)
    assert len(documented) == len(set(documented)), f"a code is listed twice in docs/{doc}"
    assert sorted(documented) == sorted(registry), f"docs/{doc} ({heading}) and {registry.__name__} differ"


def test_file_error_codes_are_the_contracts_groups_con_1():
    contract = json.loads((ROOT / "spec" / "tool_contract.json").read_text(encoding="utf-8"))
    groups = ("fileErrorCodes", "gateErrorCodes", "editErrorCodes", "patchErrorCodes")
    assert {code for group in groups for code in contract[group]} == set(FileErrorCode)


def test_file_error_codes_are_plain_strings_in_results_and_json():
    from steerable_agent_runtime.errors import WriteConflictError

    error = WriteConflictError(FileErrorCode.NOT_READ, "read it first")
    assert error.data is not None
    assert type(error.code) is str and type(error.data["code"]) is str
    assert json.dumps(error.data) == '{"code": "not_read"}'
    assert cast(str, FileErrorCode.NOT_READ) == "not_read"  # a StrEnum member is its text


def test_the_workspace_raises_codes_only_through_its_registry():
    package = ROOT / "src" / "steerable_agent_runtime" / "workspace"
    assert registry_codes_used_as_literals(package, FileErrorCode) == []


def test_the_web_tools_raise_codes_only_through_their_registry():
    package = ROOT / "src" / "steerable_sidecar" / "web_tools"
    assert registry_codes_used_as_literals(package, WebErrorCode) == []


def test_web_error_codes_are_plain_strings_in_results_and_json():
    from steerable_agent_runtime.errors import WebError

    error = WebError(WebErrorCode.SSRF_BLOCKED, "refused")
    assert error.data is not None
    assert type(error.code) is str and type(error.data["code"]) is str
    assert json.dumps(error.data) == '{"code": "ssrf_blocked"}'


def _is_code_access(node: ast.expr) -> bool:
    """``x["code"]``, ``x.get("code")`` or ``x.code``."""
    if isinstance(node, ast.Attribute):
        return node.attr == "code"
    if isinstance(node, ast.Subscript):
        return isinstance(node.slice, ast.Constant) and node.slice.value == "code"
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "get"
        and bool(node.args)
        and isinstance(node.args[0], ast.Constant)
        and node.args[0].value == "code"
    )


def _code_first_functions(tree: ast.Module) -> set[str]:
    """Functions of the module whose first parameter (after ``self``) is ``code``."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            params = [a.arg for a in node.args.args if a.arg not in ("self", "cls")]
            if params[:1] == ["code"]:
                names.add(node.name)
    return names


def code_literals(path: Path) -> list[str]:
    """String literals in code positions: ``{"code": "x"}``, ``code="x"``, ``data["code"] == "x"``
    (or ``= "x"``), and the first argument of a call to one of the module's ``f(code, ...)``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    takes_code = _code_first_functions(tree)
    found = []
    for node in ast.walk(tree):
        values: list[ast.expr] = []
        if isinstance(node, ast.Dict):
            values = [
                v
                for k, v in zip(node.keys, node.values, strict=True)
                if isinstance(k, ast.Constant) and k.value == "code"
            ]
        elif isinstance(node, ast.keyword) and node.arg == "code":
            values = [node.value]
        elif isinstance(node, ast.Assign) and any(_is_code_access(target) for target in node.targets):
            values = [node.value]
        elif isinstance(node, ast.Compare) and any(
            _is_code_access(side) for side in [node.left, *node.comparators]
        ):
            values = [node.left, *node.comparators]
        elif isinstance(node, ast.Call) and node.args:
            called = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
            values = [node.args[0]] if called in takes_code else []
        for value in values:
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                found.append(f"{path.relative_to(ROOT)}:{value.lineno}: {value.value!r}")
    return found


DISPATCH_MODULES = [
    "steerable_agent_runtime/" + name
    for name in ("tools.py", "executor.py", "_results.py", "_coerce.py", "loop.py", "types.py", "spill.py")
] + ["steerable_agent_runtime/tool_search.py", "steerable_agent_runtime/ask_user.py"]
DISPATCH_MODULES += ["steerable_sidecar/sidecar/_server.py", "steerable_sidecar/mcp/_server.py"]
DISPATCH_MODULES += ["steerable_agent_runtime/sandbox/_bash.py", "steerable_agent_runtime/sandbox/_guard.py"]
DISPATCH_MODULES += ["steerable_sidecar/run_code/_tool.py", "steerable_sidecar/mcp_sources/_connection.py"]
DISPATCH_MODULES += ["steerable_sidecar/mcp_sources/_tools.py"]


@pytest.mark.parametrize("module", DISPATCH_MODULES)
def test_the_dispatch_path_gives_codes_only_through_its_registry(module):
    assert code_literals(ROOT / "src" / module) == []


async def test_a_registry_member_in_result_data_goes_on_the_wire_as_plain_text():
    from steerable_agent_runtime import ToolRouter

    result = await ToolRouter().dispatch({"id": "c1", "name": "nope", "arguments": {}})
    assert result.data is not None
    assert result.data["code"] == cast(str, ToolErrorCode.UNKNOWN_TOOL) == "unknown_tool"
    wire = result.to_wire()
    assert type(wire["data"]["code"]) is str
    assert '"data": {"code": "unknown_tool", "suggestions": []}' in json.dumps(wire)
