"""Issues 15 and 31 (start-up): what ``steerable call``, ``boot_tools``, ``steerable mcp`` and
``steerable acp`` load before they answer, and the lazy packages.

``benchmarks/startup.py`` measures the time; these tests hold the structure that makes it cheap:
a one-shot ``call`` (and the boot every command runs) imports none of the heavy dependencies nor
another command's modules, the tool implementations behind the registered descriptors load at
their first call, registering and listing the tools imports no pydantic at all (``steerable mcp``
answers ``tools/list`` without it), a plain ``call read_file`` imports no pydantic at all,
``steerable mcp`` boots its tools before it serves, and ``steerable acp`` builds the
ACP SDK's models at their first use.
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

from mcp_frames import MCP_INITIALIZE

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


def _loaded(code: str, cwd: Path, **env: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        env={**_env(), **env},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_steerable_call_imports_no_heavy_dependency(tmp_path: Path):
    """``python -m steerable_sidecar call read_file ...`` leaves httpx, the converter, jsonschema and mcp out."""
    (tmp_path / "notes.txt").write_text("hello\n", encoding="utf-8")
    code = (
        "import contextlib, io, json, sys\n"
        "from steerable_sidecar.cli._main import main\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        "    code = main(['call', 'read_file', '{\"path\": \"notes.txt\"}', '--no-plugins'])\n"
        f"print(json.dumps({{'exit': code, 'content': json.loads(out.getvalue())['data']['content'], "
        f"'heavy': [m for m in {HEAVY!r} if m in sys.modules]}}))\n"
    )
    assert _loaded(code, tmp_path) == {"exit": 0, "content": "hello\n", "heavy": []}


def test_the_cli_parser_imports_neither_pydantic_nor_the_agent_loop(tmp_path: Path):
    """Every command builds the parser (``steerable --version``): asyncio (~35 ms), the RPC peer,
    the ACP SDK, and the modules of ``run``'s, ``acp``'s and ``jobs``' options wait for a command."""
    code = (
        "import json, sys\n"
        "from steerable_sidecar.cli._main import build_parser\n"
        "build_parser()\n"
        "print(json.dumps({'loaded': [m for m in "
        "('pydantic', 'steerable_agent_runtime.loop', 'steerable_sidecar.sidecar._server', 'asyncio', "
        "'steerable_sidecar.rpc._peer', 'acp', 'steerable_sidecar.acp._command', 'steerable_sidecar.run._headless', "
        "'steerable_sidecar.cli._jobs') if m in sys.modules]}))\n"
    )
    assert _loaded(code, tmp_path) == {"loaded": []}


def test_steerable_call_loads_no_other_commands_modules(tmp_path: Path):
    """A ``call`` sets up its own options alone (the parser adds a command's when it is parsed) and,
    with no configuration file, reads no TOML: ``run``'s, ``acp``'s and ``jobs``' modules never load."""
    (tmp_path / "notes.txt").write_text("hello\n", encoding="utf-8")
    others = (
        "steerable_sidecar.acp._command",
        "steerable_sidecar.run._headless",
        "steerable_sidecar.cli._jobs",
        "steerable_sidecar.providers._vendor_profiles",
        "tomllib",
    )
    code = (
        "import contextlib, io, json, sys\n"
        "from steerable_sidecar.cli._main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    code = main(['call', 'read_file', '{\"path\": \"notes.txt\"}', '--no-plugins'])\n"
        f"print(json.dumps({{'exit': code, 'loaded': [m for m in {others!r} if m in sys.modules]}}))\n"
    )
    assert _loaded(code, tmp_path, XDG_CONFIG_HOME=str(tmp_path / "config")) == {"exit": 0, "loaded": []}


def test_the_wire_types_build_their_validators_at_their_first_use(tmp_path: Path):
    """``from steerable_agent_runtime import ToolCall, ToolResult, ToolRouter`` builds no pydantic
    validator, so pydantic's plugin lookup (``importlib.metadata``, every installed distribution's
    entry points) waits for the first call; then they validate as before."""
    code = (
        "import json, sys\n"
        "from steerable_agent_runtime import ToolCall, ToolResult, ToolRouter\n"
        "before = [ToolCall.__pydantic_complete__, ToolResult.__pydantic_complete__,\n"
        "          'pydantic.plugin._loader' in sys.modules]\n"
        "call = ToolCall.model_validate({'id': '1', 'name': 'read_file', 'arguments': {}})\n"
        "try:\n"
        "    ToolCall.model_validate({'id': '1', 'name': 'x', 'arguments': {}, 'extra': 1})\n"
        "    refused = False\n"
        "except ValueError:\n"
        "    refused = True\n"
        "wire = ToolResult.retry('try again', data={'code': 'x'}).to_wire()\n"
        "print(json.dumps({'before': before, 'name': call.name, 'refused': refused, 'wire': wire}))\n"
    )
    assert _loaded(code, tmp_path) == {
        "before": [False, False, False],
        "name": "read_file",
        "refused": True,
        "wire": {"success": False, "needsFollowup": True, "error": "try again", "data": {"code": "x"}},
    }


def test_boot_tools_imports_no_pydantic_and_reads_no_distribution(tmp_path: Path):
    """What ``tools/list`` and ``session/new`` wait on (the boot, the offered list) imports no
    pydantic at all: the schemas are computed ahead of time, the validators, the wire types and
    dispatch load at the first call. Without plugins, no installed distribution is read."""
    code = (
        "import json, sys\n"
        "from steerable_sidecar._boot import boot_tools\n"
        "booted = boot_tools('.', plugins=False)\n"
        "offered = booted.harness.offered()\n"
        "print(json.dumps({'tools': len(booted.router.names()), 'offered': len(offered), 'loaded': [m for m in "
        "('pydantic', 'pydantic_core', 'importlib.metadata', 'steerable_agent_runtime.types', "
        "'steerable_agent_runtime._dispatch', 'steerable_agent_runtime.tool_search') if m in sys.modules]}))\n"
    )
    result = _loaded(code, tmp_path)
    assert result["tools"] > 5 and result["offered"] == result["tools"] and result["loaded"] == []


_BLOCK_PYDANTIC = """
import sys

class _NoPydantic:  # as if pydantic were not installed
    def find_spec(self, name, path, target=None):
        if name.partition(".")[0] in ("pydantic", "pydantic_core"):
            raise ImportError(f"{name} is blocked by the test")
        return None

sys.meta_path.insert(0, _NoPydantic())
from steerable_sidecar.cli._main import main
sys.exit(main(["mcp", "--workspace", ".", "--no-plugins"]))
"""


def _answer(proc: subprocess.Popen[bytes], request_id: int, deadline: float) -> dict[str, Any]:
    """Read ``proc``'s stdout until the response to ``request_id`` (notifications are skipped)."""
    import select
    import time

    assert proc.stdout is not None
    while (left := deadline - time.monotonic()) > 0 and select.select([proc.stdout], [], [], left)[0]:
        line = proc.stdout.readline()
        if not line:
            break
        message: dict[str, Any] = json.loads(line)
        if message.get("id") == request_id:
            return message
    raise AssertionError(f"no answer to request {request_id}")


def test_steerable_mcp_lists_its_tools_without_pydantic(tmp_path: Path):
    """``steerable mcp`` answers ``initialize`` and ``tools/list`` with pydantic unimportable: the
    tools it lists (their schemas computed ahead of time) need none of it until they are called."""
    import time

    from steerable_agent_runtime._tool_schemas import TOOL_PARAMETERS

    proc = subprocess.Popen(
        [sys.executable, "-P", "-c", _BLOCK_PYDANTIC],
        cwd=tmp_path,
        env=_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdin is not None
    deadline = time.monotonic() + 30
    try:
        proc.stdin.write(json.dumps(MCP_INITIALIZE).encode() + b"\n")
        proc.stdin.flush()
        assert "result" in _answer(proc, 1, deadline)
        proc.stdin.write(
            b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
            b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}\n'
        )
        proc.stdin.flush()
        listed = {tool["name"]: tool for tool in _answer(proc, 2, deadline)["result"]["tools"]}
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        assert proc.stdout is not None
        proc.stdout.close()
    assert {"read_file", "write_file", "edit_file", "list_dir", "glob", "grep", "bash", "web_fetch"} <= set(
        listed
    )
    assert listed["read_file"]["inputSchema"] == TOOL_PARAMETERS["read_file"]
    assert listed["bash"]["inputSchema"] == TOOL_PARAMETERS["bash"]


def test_steerable_call_read_file_imports_no_pydantic(tmp_path: Path):
    """Issue 31 (start-up): a plain ``call read_file`` imports no pydantic at all. Its arguments pass
    without pydantic's validator (``_plain_arguments``), the call goes as its wire dict and the
    plain result is written as one (``ToolRouter.dispatch_wire``), so no ``ToolCall`` or
    ``ToolResult`` is built; the write path's diff engine, the deny-read guard's bookkeeping and
    ``importlib.metadata`` stay unloaded too. A call that fails still answers with its
    ``ToolResult``'s wire form (pydantic loads then)."""
    (tmp_path / "notes.txt").write_text("hello\n", encoding="utf-8")
    unloaded = (
        "pydantic",
        "pydantic_core",
        "steerable_agent_runtime.types",
        "importlib.metadata",
        "difflib",
        "steerable_agent_runtime.workspace._diff",
        "steerable_agent_runtime.sandbox._deny_moves",
        "steerable_agent_runtime.tool_search",
    )
    code = (
        "import contextlib, io, json, sys\n"
        "from steerable_sidecar.cli._main import main\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        "    code = main(['call', 'read_file', '{\"path\": \"notes.txt\", \"limit\": 5}', '--no-plugins'])\n"
        f"loaded = [m for m in {unloaded!r} if m in sys.modules]\n"
        "failed = io.StringIO()\n"
        "with contextlib.redirect_stdout(failed):\n"
        "    failed_code = main(['call', 'read_file', '{\"path\": \"missing.txt\"}', '--no-plugins'])\n"
        "print(json.dumps({'exit': code, 'content': json.loads(out.getvalue())['data']['content'],\n"
        "                  'loaded': loaded, 'failed': [failed_code, json.loads(failed.getvalue())],\n"
        "                  'pydantic then': 'pydantic' in sys.modules}))\n"
    )
    loaded = _loaded(code, tmp_path)
    failed = loaded.pop("failed")
    assert loaded == {"exit": 0, "content": "hello\n", "loaded": [], "pydantic then": True}
    assert failed[0] == 1
    assert failed[1]["success"] is False and failed[1]["needsFollowup"] is True
    assert failed[1]["data"]["code"] == "file_not_found"


def test_steerable_mcp_boots_its_tools_before_it_serves(tmp_path: Path):
    """The boot starts as soon as the workspace is accepted, before the event loop and the MCP
    modules load, so the tools are ready when the host's ``tools/list`` comes: here the serving
    never starts, and the boot runs all the same."""
    code = (
        "import json, threading\n"
        "from steerable_sidecar.shared import _signals\n"
        "booting = threading.Event()\n"
        "def serve(main):\n"
        "    print(json.dumps({'booting': booting.wait(10)}))\n"
        "    return 0\n"
        "_signals.run_until_signalled = serve  # no loop, no stdio: the serving part never runs\n"
        "from steerable_sidecar.mcp import _command as _mcp_cli\n"
        "from steerable_sidecar.cli._main import build_parser\n"
        "args = build_parser().parse_args(['mcp', '--workspace', '.', '--no-plugins'])\n"
        "_mcp_cli.run_mcp(args, boot=booting.set)\n"
    )
    workspace = tmp_path / "project"
    workspace.mkdir()
    assert _loaded(code, workspace) == {"booting": True}


def test_steerable_acp_loads_the_sdk_and_httpx_lean(tmp_path: Path):
    """``steerable acp``'s loading thread imports the ACP SDK with ``acp.schema``'s ~270 models
    deferred and their field docstrings unread, and httpx without its command-line client
    (``_lean_imports``): a ``session/new`` builds its own models, and click and rich never load."""
    code = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from steerable_sidecar.acp import _command as _acp_cli\n"
        "from steerable_sidecar.cli._main import build_parser\n"
        "args = build_parser().parse_args(['acp', '--no-plugins'])\n"
        "setup = _acp_cli._load(args, Path('state'), None)\n"
        "import httpx\n"
        "from acp import schema\n"
        "request = schema.NewSessionRequest.model_validate({'cwd': '/tmp', 'mcpServers': []})\n"
        "print(json.dumps({'provider': type(setup.provider).__name__,\n"
        "                  'prompt built': schema.PromptRequest.__pydantic_complete__,\n"
        "                  'new session built': schema.NewSessionRequest.__pydantic_complete__,\n"
        "                  'cwd': request.cwd, 'builtins': schema.__builtins__ is __builtins__,\n"
        "                  'httpx main': httpx.main.__module__,\n"
        "                  'loaded': [m for m in ('click', 'rich', 'httpx._main') if m in sys.modules],\n"
        "                  'finders': len(sys.meta_path)}))\n"
    )
    model = {
        "STEERABLE_PROVIDER": "openai",
        "STEERABLE_BASE_URL": "http://127.0.0.1:9/v1",
        "STEERABLE_MODEL": "m",
        "STEERABLE_API_KEY": "sk-test-key",
    }
    result = _loaded(code, tmp_path, **model)
    finders = _loaded("import json, sys; print(json.dumps(len(sys.meta_path)))", tmp_path)
    assert result == {
        "provider": "OpenAICompatibleProvider",
        "prompt built": False,
        "new session built": True,
        "cwd": "/tmp",
        "builtins": True,
        "httpx main": "httpx",  # httpx's own stand-in for the client it was not given
        "loaded": [],
        "finders": finders,  # the import hooks are gone
    }


def test_a_httpx_that_needs_its_client_is_imported_the_ordinary_way(tmp_path: Path):
    """Should a release import its client unconditionally, ``import_httpx`` imports it whole."""
    package = tmp_path / "httpx"
    package.mkdir()
    (package / "__init__.py").write_text("from ._main import main\n", encoding="utf-8")
    (package / "_main.py").write_text("def main():\n    return 'the client'\n", encoding="utf-8")
    code = (
        "import json\n"
        "from steerable_sidecar.shared._lean_imports import import_httpx\n"
        "print(json.dumps({'main': import_httpx().main()}))\n"
    )
    assert _loaded(code, tmp_path, PYTHONPATH=str(tmp_path)) == {"main": "the client"}


_ACP_MODELS = """
import json, sys
import pydantic
if sys.argv[1] == "fast":
    from steerable_sidecar.shared._lean_imports import import_acp_sdk
    import_acp_sdk()
from acp import schema

def shape(value):  # the JSON Schema without the descriptions (docstrings)
    if isinstance(value, dict):
        return {k: shape(v) for k, v in value.items() if k != "description"}
    if isinstance(value, list):
        return [shape(v) for v in value]
    return value

models = sorted(
    (name, cls) for name, cls in vars(schema).items()
    if isinstance(cls, type) and issubclass(cls, pydantic.BaseModel) and cls.__module__ == schema.__name__
)
samples = [
    ("PromptRequest", {"sessionId": "s", "prompt": [{"type": "text", "text": "hi"},
        {"type": "resource", "resource": {"uri": "file:///a", "text": "x"}}]}),
    ("NewSessionRequest", {"cwd": "/w", "mcpServers": [{"name": "n", "command": "c", "args": [], "env": []}]}),
    ("SessionNotification", {"sessionId": "s", "update": {"sessionUpdate": "tool_call", "toolCallId": "t",
        "title": "Read", "kind": "read", "status": "pending", "_meta": {"k": 1}}}),
    ("SessionNotification", {"sessionId": "s", "update": {"sessionUpdate": "nope"}}),
    ("RequestPermissionRequest", {"sessionId": "s", "toolCall": {"toolCallId": "t"},
        "options": [{"optionId": "a", "name": "Allow", "kind": "allow_once"}]}),
    ("InitializeRequest", {"protocolVersion": "x"}),
]
checked = []
for name, payload in samples:
    try:
        checked.append(getattr(schema, name).model_validate(payload).model_dump(by_alias=True, mode="json"))
    except pydantic.ValidationError as exc:
        checked.append([e["type"] for e in exc.errors()])
print(json.dumps({"models": {name: shape(cls.model_json_schema()) for name, cls in models}, "checked": checked}))
"""


def test_the_acp_sdks_deferred_models_accept_and_write_what_the_ordinary_import_does(tmp_path: Path):
    """Every model ``_lean_imports`` defers has the JSON Schema the ordinary import gives (descriptions
    aside: they come from the docstrings left unread), and validates and writes messages alike."""
    outputs = []
    for how in ("ordinary", "fast"):
        done = subprocess.run(
            [sys.executable, "-c", _ACP_MODELS, how], cwd=tmp_path, env=_env(), capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        outputs.append(json.loads(done.stdout))
    ordinary, fast = outputs
    assert len(ordinary["models"]) > 200
    assert fast == ordinary


def test_run_outcome_is_the_loops_own():
    """``RunOutcome`` is defined in ``_outcome`` (cheap to import) and public in ``loop``, unchanged."""
    import pickle

    from steerable_agent_runtime import loop
    from steerable_sidecar.run._headless import EXIT_CODES

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
        "from steerable_sidecar._boot import boot_tools\n"
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
        "from steerable_sidecar._boot import boot_tools\n"
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
