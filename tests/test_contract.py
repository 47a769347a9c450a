"""spec/ files checked against the code (CON-1, FILE-1)."""

import ast
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from steerable_agent_runtime import (
    ToolMode,
    ToolResult,
    decide_tool_mode,
    is_terminal_result,
    version_of,
    workspace_tools_for_cwd,
)
from steerable_agent_runtime.modes import DEFAULT_TOOL_MODE, OPEN_WORLD_READS
from steerable_agent_runtime.workspace import EDIT_ERROR_CODES, FileErrorCode

ROOT = Path(__file__).resolve().parent.parent
CONTRACT = json.loads((ROOT / "spec" / "tool_contract.json").read_text(encoding="utf-8"))


def test_envelope_schemas_match_the_models():
    # Fails on drift between spec/*.schema.json and steerable_agent_runtime.types.
    run = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "generate_spec.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr


def test_envelope_schemas_describe_the_wire_env_1_env_5():
    call = json.loads((ROOT / "spec" / "ToolCall.schema.json").read_text(encoding="utf-8"))
    result = json.loads((ROOT / "spec" / "ToolResult.schema.json").read_text(encoding="utf-8"))
    assert call["required"] == ["id", "name", "arguments"] and call["additionalProperties"] is False
    assert result["required"] == ["success"] and result["additionalProperties"] is True
    assert sorted(result["properties"]) == sorted(
        ["success", "terminal", "needsFollowup", "nextAction", "message", "error", "data"]
    )
    assert result["properties"]["needsFollowup"]["type"] == "boolean"


@pytest.mark.parametrize("vector", CONTRACT["version"]["vectors"], ids=lambda v: repr(v["text"])[:20])
def test_version_vectors_con_1_file_1(vector):
    assert version_of(vector["text"]) == vector["version"]
    assert version_of(vector["text"].encode("utf-8")) == vector["version"]
    assert hashlib.sha256(vector["text"].encode("utf-8")).hexdigest() == vector["version"]


def test_contract_vectors_cover_the_required_cases():
    texts = [v["text"] for v in CONTRACT["version"]["vectors"]]
    assert "" in texts and "hello world" in texts
    assert any(any(ord(c) > 127 for c in t) for t in texts)


def test_tool_inputs_match_the_contract_con_1(tmp_path):
    router = workspace_tools_for_cwd(tmp_path)
    for name, entry in CONTRACT["tools"].items():
        spec = router.get(name)
        assert spec is not None, name
        params = spec.parameters
        required = set(params.get("required", []))
        assert required == set(entry["input"]["required"]), name
        assert set(params["properties"]) - required == set(entry["input"]["optional"]), name
        assert spec.mode.value == entry["mode"], name
    edit = router.get("edit_file")
    assert edit is not None
    item = edit.parameters["$defs"]["EditSpec"]
    assert set(item["required"]) == set(CONTRACT["tools"]["edit_file"]["editItem"]["required"])
    assert set(item["properties"]) - set(item["required"]) == set(
        CONTRACT["tools"]["edit_file"]["editItem"]["optional"]
    )


async def test_tool_results_carry_the_contract_fields_con_1(tmp_path):
    router = workspace_tools_for_cwd(tmp_path)
    (tmp_path / "a.txt").write_text("one\n", encoding="utf-8")
    calls = {
        "read_file": {"path": "a.txt"},
        "write_file": {"path": "a.txt", "content": "two\n"},
        "edit_file": {"path": "a.txt", "edits": [{"oldText": "two", "newText": "three"}]},
        "apply_patch": {"patch": "*** Begin Patch\n*** Add File: b.txt\n+b\n*** End Patch"},
        "bash": {"command": "cat a.txt"},  # runs under the layer-2 sandbox (bubblewrap in CI)
    }
    for name, arguments in calls.items():
        result = await router.dispatch({"id": name, "name": name, "arguments": arguments})
        assert result.success, result.error
        spec = CONTRACT["tools"][name]["result"]
        assert result.data is not None
        assert set(spec["required"]) <= set(result.data), name
        assert set(result.data) <= set(spec["required"]) | set(spec["optional"]), name


def _raised_codes() -> set[str]:
    """The first argument of every ``...Error(code, ...)``: a literal or a ``FileErrorCode`` member."""
    codes = set()
    for path in (ROOT / "src" / "steerable_agent_runtime" / "workspace").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id.endswith("Error")
            ):
                first = node.args[0] if node.args else None
                if isinstance(first, ast.Constant) and isinstance(first.value, str):
                    codes.add(first.value)
                elif (
                    isinstance(first, ast.Attribute)
                    and isinstance(first.value, ast.Name)
                    and first.value.id == "FileErrorCode"
                ):
                    codes.add(FileErrorCode[first.attr].value)
    return codes


def test_every_error_code_raised_is_in_the_contract_con_1():
    listed = set()
    for key in ("editErrorCodes", "gateErrorCodes", "patchErrorCodes", "fileErrorCodes"):
        listed |= set(CONTRACT[key])
    assert _raised_codes() == listed
    assert tuple(CONTRACT["editErrorCodes"]) == EDIT_ERROR_CODES


def test_clip_limit_matches_the_contract():
    from steerable_agent_runtime.workspace import DEFAULT_MAX_OUTPUT_CHARS

    assert CONTRACT["limits"]["readFileMaxOutputChars"] == DEFAULT_MAX_OUTPUT_CHARS == 100_000


# -- toolMode and completion: the vectors the TypeScript port (js/test/contract.test.ts) checks too


@pytest.mark.parametrize("vector", CONTRACT["toolMode"]["vectors"], ids=lambda v: repr(v["name"]))
def test_tool_mode_vectors_mode_1_mode_4(vector):
    assert decide_tool_mode(vector["name"]).value == vector["mode"]


def test_tool_mode_table_is_the_code_s_mode_1():
    table = CONTRACT["toolMode"]
    assert table["modes"] == [mode.value for mode in ToolMode]
    assert table["default"] == DEFAULT_TOOL_MODE.value
    assert set(table["exact"]) == OPEN_WORLD_READS and set(table["exact"].values()) == {"read"}
    for rule in table["rules"]:  # each prefix alone, and followed by a word, gives its mode
        for prefix in rule["prefixes"]:
            assert decide_tool_mode(prefix).value == rule["mode"]
            assert decide_tool_mode(prefix + "thing").value == rule["mode"]
            assert decide_tool_mode(prefix.upper() + "thing").value == table["default"]
    covered = {prefix for rule in table["rules"] for prefix in rule["prefixes"]}
    assert {v["name"] for v in table["vectors"]} >= set(OPEN_WORLD_READS)
    assert len(covered) == 15


@pytest.mark.parametrize("vector", CONTRACT["completion"]["vectors"], ids=lambda v: json.dumps(v["result"]))
def test_completion_vectors_env_6(vector):
    assert is_terminal_result(vector["result"]) is vector["terminal"]
    if isinstance(vector["result"], dict) and set(vector["result"]) <= {
        "success",
        "terminal",
        "needsFollowup",
    }:
        typed = vector["result"]
        if all(isinstance(typed.get(k, False), bool) for k in typed) and "success" in typed:
            assert is_terminal_result(ToolResult.model_validate(typed)) is vector["terminal"]
