"""Issue 15 (start-up): what ``steerable call`` and ``boot_tools`` import, and the lazy packages.

``benchmarks/startup.py`` measures the time; these tests hold the structure that makes it cheap:
a one-shot ``call`` (and the boot every command runs) imports none of the heavy dependencies, and
the tool implementations behind the registered descriptors load at their first call.
"""

from __future__ import annotations

import ast
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
HEAVY = ("httpx", "html_to_markdown", "jsonschema", "mcp")


def _env() -> dict[str, str]:
    """No plugins, and no proxy setting (with one, the web_search client is built at load)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("STEERABLE_")}
    return {
        k: v
        for k, v in env.items()
        if k.lower() not in {"http_proxy", "https_proxy", "all_proxy", "no_proxy"}
    }


def _loaded(code: str, cwd: Path) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, env=_env(), capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_steerable_call_imports_no_heavy_dependency(tmp_path: Path):
    """``python -m steerable_sidecar call read_file ...`` leaves httpx, the converter, jsonschema and mcp out."""
    (tmp_path / "notes.txt").write_text("hello\n", encoding="utf-8")
    code = (
        "import contextlib, io, json, sys\n"
        "from steerable_sidecar.cli import main\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        "    code = main(['call', 'read_file', '{\"path\": \"notes.txt\"}', '--no-plugins'])\n"
        f"print(json.dumps({{'exit': code, 'content': json.loads(out.getvalue())['data']['content'], "
        f"'heavy': [m for m in {HEAVY!r} if m in sys.modules]}}))\n"
    )
    assert _loaded(code, tmp_path) == {"exit": 0, "content": "hello\n", "heavy": []}


def test_the_cli_parser_imports_neither_pydantic_nor_the_agent_loop(tmp_path: Path):
    """Every command builds the parser, ``steerable run``'s and ``acp``'s options included
    (``steerable --version``): asyncio (~35 ms), the RPC peer and the ACP SDK wait for a command."""
    code = (
        "import json, sys\n"
        "from steerable_sidecar.cli import build_parser\n"
        "build_parser()\n"
        "print(json.dumps({'loaded': [m for m in "
        "('pydantic', 'steerable_agent_runtime.loop', 'steerable_sidecar.sidecar', 'asyncio', "
        "'steerable_sidecar.rpc', 'acp') if m in sys.modules]}))\n"
    )
    assert _loaded(code, tmp_path) == {"loaded": []}


def test_run_outcome_is_the_loops_own():
    """``RunOutcome`` is defined in ``_outcome`` (cheap to import) and public in ``loop``, unchanged."""
    import pickle

    from steerable_agent_runtime import loop
    from steerable_sidecar.headless import EXIT_CODES

    assert loop.RunOutcome.__module__ == "steerable_agent_runtime.loop" and loop.DEFAULT_MAX_ROUNDS == 50
    assert pickle.loads(pickle.dumps(loop.RunOutcome.ERROR)) is loop.RunOutcome.ERROR
    assert EXIT_CODES[loop.RunOutcome.MAX_ROUNDS] == 3


def test_boot_tools_registers_every_tool_without_loading_their_engines(tmp_path: Path):
    """The descriptors are registered; the file tools' engines, bash's runner, the web engines wait."""
    engines = (
        "steerable_agent_runtime.sandbox._runner",
        "steerable_agent_runtime.sandbox._handshake",
        "steerable_agent_runtime.sandbox._pinning",
        "steerable_agent_runtime.sandbox._process",
        "steerable_agent_runtime.sandbox._protect",
        "steerable_agent_runtime.sandbox._audit",
        "steerable_agent_runtime.sandbox._guard",
        "steerable_agent_runtime.sandbox._select",
        "steerable_agent_runtime.workspace._edit",
        "steerable_agent_runtime.workspace._apply",
        "steerable_agent_runtime.workspace._patch",
        "steerable_agent_runtime.workspace._search",
        "steerable_sidecar.web_tools._fetch",
        "steerable_sidecar.web_tools._search",
        "steerable_sidecar.web_tools._search_http",
        "steerable_sidecar.web_tools._ddg",
        "steerable_sidecar.web_tools._content",
        "steerable_sidecar.web_tools._converter",
        "steerable_sidecar.web_tools._html",
        "cuid2",  # the id generator: made at the first new_call_id
        *HEAVY,
    )
    code = (
        "import json, sys\n"
        "from steerable_sidecar.boot import boot_tools\n"
        "booted = boot_tools('.', plugins=False, environ={'STEERABLE_RUN_CODE': '1', "
        "'STEERABLE_WEB_SEARCH_PROVIDER': 'ddg'})\n"
        f"print(json.dumps({{'tools': booted.router.names(), "
        f"'loaded': [m for m in {engines!r} if m in sys.modules]}}))\n"
    )
    result = _loaded(code, tmp_path)
    assert {"read_file", "bash", "run_code", "web_search", "web_fetch"} <= set(result["tools"])
    assert result["loaded"] == []


def test_the_lazily_registered_tools_work_at_their_first_call(tmp_path: Path):
    """Each tool runs its deferred imports inside its first call, in a fresh process."""
    (tmp_path / "notes.txt").write_text("fix teh typo\n", encoding="utf-8")
    code = (
        "import asyncio, json\n"
        "from steerable_agent_runtime import ToolCall\n"
        "from steerable_sidecar.boot import boot_tools\n"
        "booted = boot_tools('.', plugins=False)\n"
        "async def call(name, **arguments):\n"
        "    return await booted.router.dispatch(ToolCall(id=name, name=name, arguments=arguments))\n"
        "async def main():\n"
        "    out = {}\n"
        "    out['list_dir'] = [e['name'] for e in (await call('list_dir')).data['entries']]\n"
        "    out['glob'] = (await call('glob', pattern='*.txt')).data['files']\n"
        "    out['grep'] = [m['text'] for m in (await call('grep', pattern='teh')).data['matches']]\n"
        "    version = (await call('read_file', path='notes.txt')).data['version']\n"
        "    edited = await call('edit_file', path='notes.txt', expectedVersion=version,\n"
        "                        edits=[{'oldText': 'teh', 'newText': 'the'}])\n"
        "    out['edit_file'] = edited.success\n"
        "    patch = '*** Begin Patch\\n*** Add File: new.txt\\n+added\\n*** End Patch'\n"
        "    out['apply_patch'] = (await call('apply_patch', patch=patch)).success\n"
        "    out['web_fetch'] = (await call('web_fetch', url='http://127.0.0.1/')).data['code']\n"
        "    bash = await call('bash', command='echo hi')\n"
        "    out['bash'] = bash.data['stdout'] if bash.success else bash.data['code']\n"
        "    await booted.aclose()\n"
        "    return out\n"
        "print(json.dumps(asyncio.run(main())))\n"
    )
    out = _loaded(code, tmp_path)
    assert out.pop("bash") in ("hi\n", "sandbox_unavailable")  # no backend: refused, never a crash
    assert out == {
        "list_dir": ["notes.txt"],
        "glob": ["notes.txt"],
        "grep": ["fix teh typo"],
        "edit_file": True,
        "apply_patch": True,
        "web_fetch": "ssrf_blocked",
    }
    assert (tmp_path / "notes.txt").read_text(encoding="utf-8") == "fix the typo\n"
    assert (tmp_path / "new.txt").read_text(encoding="utf-8") == "added\n"


@pytest.mark.parametrize(
    "package_name",
    ["steerable_agent_runtime.sandbox", "steerable_agent_runtime.workspace", "steerable_sidecar.web_tools"],
)
def test_lazy_packages_serve_every_public_name_from_its_module(package_name: str):
    """The TYPE_CHECKING block (what type checkers see) is the table ``__getattr__`` serves."""
    package = importlib.import_module(package_name)
    assert package.__file__ is not None
    tree = ast.parse(Path(package.__file__).read_text(encoding="utf-8"))
    static: dict[str, tuple[str, ...]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) == "_typing.TYPE_CHECKING":
            for imported in node.body:
                assert isinstance(imported, ast.ImportFrom)
                static["." * imported.level + (imported.module or "")] = tuple(a.name for a in imported.names)
    table = {
        module if module.startswith(".") else f".{module}": names
        for module, names in package._EXPORTS.items()
    }
    assert static == table
    assert sorted(package.__all__) == sorted(name for names in static.values() for name in names)
    for module, names in static.items():
        loaded = importlib.import_module(module, package_name)
        for name in names:
            assert getattr(package, name) is getattr(loaded, name), name
    with pytest.raises(AttributeError, match="has no attribute 'NoSuchThing'"):
        package.NoSuchThing  # noqa: B018
    assert set(package.__all__) <= set(dir(package))


def test_the_kept_tool_schemas_are_what_the_signatures_give():
    """``_tool_schemas`` is generated from the signatures: a changed signature or docstring fails here."""
    import importlib.util

    from steerable_agent_runtime._tool_schemas import TOOL_PARAMETERS
    from steerable_sidecar.web_tools._schemas import TOOL_PARAMETERS as WEB_TOOL_PARAMETERS

    spec = importlib.util.spec_from_file_location(
        "generate_tool_schemas", REPO / "scripts" / "generate_tool_schemas.py"
    )
    assert spec is not None and spec.loader is not None
    generate_tool_schemas = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generate_tool_schemas)

    # the same keys in the same order (tools/list is byte-identical), not only equal dicts
    fresh = generate_tool_schemas.current(generate_tool_schemas.TOOLS)
    assert json.dumps(TOOL_PARAMETERS) == json.dumps(fresh), "run: python scripts/generate_tool_schemas.py"
    fresh = generate_tool_schemas.current(generate_tool_schemas.WEB_TOOLS)
    assert json.dumps(WEB_TOOL_PARAMETERS) == json.dumps(fresh), (
        "run: python scripts/generate_tool_schemas.py"
    )


async def test_a_prebuilt_tool_is_the_tool_from_function_builds(tmp_path: Path):
    """Same descriptor, same validation and messages; only the validator is built at the first call."""
    from steerable_agent_runtime import Tool, ToolCall, ToolRouter, workspace_tools_for_cwd

    (tmp_path / "notes.txt").write_text("one\ntwo\n", encoding="utf-8")
    from steerable_sidecar.web_tools import install_web_tools

    prebuilt = workspace_tools_for_cwd(
        tmp_path, environ={}, web_tools=lambda r: install_web_tools(r, environ={})
    )
    rebuilt = ToolRouter()
    for tool in prebuilt:
        rebuilt.register(
            Tool.from_function(
                tool.handler,
                timeout_ms=tool.timeout_ms,
                name=tool.name,
                description=tool.description,
                mode=tool.mode,
            )
        )
    assert json.dumps(prebuilt.describe()) == json.dumps(rebuilt.describe())
    assert [t.timeout_ms for t in prebuilt] == [t.timeout_ms for t in rebuilt]
    calls: list[tuple[str, dict[str, Any]]] = [
        ("read_file", {"path": "notes.txt", "limit": "1"}),  # an exact literal, coerced
        ("read_file", {"path": "notes.txt", "limit": 0}),
        ("read_file", {"path": "notes.txt", "limit": "yes"}),
        ("read_file", {"path": 3, "extra": True}),
        ("grep", {"pattern": "one", "maxResults": 5000}),
        ("edit_file", {"path": "notes.txt", "edits": [{"oldText": "one"}]}),
        ("bash", {"command": "true", "timeout_ms": 1.5}),
        ("web_fetch", {"url": ""}),
        ("web_fetch", {"url": "http://127.0.0.1/"}),  # refused before any network work
    ]
    for name, arguments in calls:
        got = await prebuilt.dispatch(ToolCall(id="1", name=name, arguments=arguments))
        want = await rebuilt.dispatch(ToolCall(id="1", name=name, arguments=arguments))
        assert got.to_wire() == want.to_wire(), (name, arguments)
