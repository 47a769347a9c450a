"""``SidecarClient`` raises the ``SteerableError`` an error response's code names (one table,
``rpc.ERROR_CODES``, on both sides), keeping the remote ``code``, ``message`` and ``data``."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from steerable_agent_runtime import RemoteError, ToolResult, errors
from steerable_sidecar.rpc._peer import ERROR_CODES, error_code_for, error_data_for
from steerable_sidecar.sidecar._client import SidecarClient
from steerable_sidecar.sidecar._remote_errors import typed_remote_error


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("STEERABLE_") and "API_KEY" not in k}


async def test_a_refused_method_raises_its_typed_error_with_the_remote_message(tmp_path: Path) -> None:
    async with await SidecarClient.start(
        workspace=tmp_path,
        env=_env(),
        args=["--no-web-tools", "--no-plugins"],
        state_dir=tmp_path.parent / f"{tmp_path.name}-state",
    ) as sidecar:
        with pytest.raises(errors.PluginStateError) as unknown:
            await sidecar.request("plugin.disable", {"name": "nope"})
        assert isinstance(unknown.value, RemoteError) and unknown.value.code == -32033
        assert "no plugin named 'nope'" in unknown.value.message
        assert unknown.value.data == {"type": "PluginStateError", "plugin": "nope"}
        assert unknown.value.plugin == "nope" and unknown.value.state is None

        with pytest.raises(errors.ConfigError) as unconfigured:  # no STEERABLE_PROVIDER in the sidecar's env
            await sidecar.chat("hello")
        assert isinstance(unconfigured.value, RemoteError) and unconfigured.value.code == -32040
        assert unconfigured.value.data == {"type": "ConfigError"}
        assert "STEERABLE_" in unconfigured.value.message  # names the variable to set

        with pytest.raises(RemoteError) as bad_params:  # a standard code: no class to rebuild
            await sidecar.request("tool.invoke", {"arguments": {}})
        assert type(bad_params.value) is RemoteError and bad_params.value.code == -32602


def _example(cls: type[errors.SteerableError]) -> errors.SteerableError:
    examples: dict[type[errors.SteerableError], errors.SteerableError] = {
        errors.DuplicateToolError: errors.DuplicateToolError("greet"),
        errors.PluginLoadError: errors.PluginLoadError("boom", plugin="a", tool="t", other_plugin="b"),
        errors.PluginStateError: errors.PluginStateError("boom", plugin="a", state="disabled"),
        errors.ProviderError: errors.ProviderError("boom", status=429, retryable=True),
        errors.McpServerError: errors.McpServerError("srv", "boom"),
        errors.SandboxUnavailableError: errors.SandboxUnavailableError(
            "boom", tried={"bwrap": "not installed"}
        ),
        RemoteError: RemoteError(-32601, "boom"),
        errors.PeerClosedError: errors.PeerClosedError(),
    }
    if cls in examples:
        return examples[cls]
    if issubclass(cls, (errors.WorkspaceError,)) or cls.__name__ == "WebError":
        return cls("file_not_found", "boom")
    if issubclass(cls, errors.ToolRetry) or cls.__name__ in ("ToolSignal", "ToolFailed"):
        return cls("boom", next_action="retry")  # type: ignore[call-arg]
    return cls("boom")


@pytest.mark.parametrize(
    "cls", [cls for cls, _ in sorted(ERROR_CODES.items(), key=lambda item: item[1])], ids=lambda c: c.__name__
)
def test_every_server_code_comes_back_as_its_class(cls: type[errors.SteerableError]) -> None:
    sent = _example(cls)
    code, data = error_code_for(sent), error_data_for(sent)
    rebuilt = typed_remote_error(RemoteError(code, str(sent), data))
    assert isinstance(rebuilt, RemoteError)
    assert (rebuilt.code, rebuilt.message, rebuilt.data) == (code, str(sent), data)
    if issubclass(cls, RemoteError):  # its own code describes a reverse call: answered as it is
        assert type(rebuilt) is RemoteError
        return
    assert isinstance(rebuilt, cls) and error_code_for(rebuilt) == ERROR_CODES[RemoteError]
    for attribute in ("name", "plugin", "tool", "other_plugin", "state", "status", "retryable", "server"):
        if hasattr(sent, attribute):
            assert getattr(rebuilt, attribute) == getattr(sent, attribute), attribute
    if isinstance(sent, errors.SandboxUnavailableError):
        assert rebuilt.tried == sent.tried  # type: ignore[attr-defined]
    if hasattr(sent, "next_action"):
        assert rebuilt.next_action == sent.next_action  # type: ignore[attr-defined]


FAKE_SIDECAR = """
import json, sys

answers = json.loads(sys.argv[1])  # method -> the results to answer it with, in turn

def out(message):
    sys.stdout.write(json.dumps(message) + "\\n")
    sys.stdout.flush()

out({"jsonrpc": "2.0", "method": "lifecycle.ready", "params": {"version": "0", "protocolVersion": 1}})
for line in sys.stdin:
    request = json.loads(line)
    if "id" not in request:
        continue
    if request["method"] == "system.shutdown":
        out({"jsonrpc": "2.0", "id": request["id"], "result": {"ok": True}})
        break
    out({"jsonrpc": "2.0", "id": request["id"], "result": answers[request["method"]].pop(0)})
"""

NOT_OBJECTS: list[Any] = [None, [], "str", 5, 1.5, True, [["a", 1]]]  # [["a", 1]] once passed dict()
GOOD: dict[str, dict[str, Any]] = {
    "system.ping": {"ok": True},
    "tool.list": {"tools": [{"name": "read_file"}]},
    "tool.invoke": {"success": True, "data": {"n": 1}},
    "agent.chat.stream": {"chatId": "c", "sessionId": "s", "outcome": "completed"},
}
BAD_OBJECTS: dict[str, list[Any]] = {  # objects missing a field, or with one of the wrong type
    "system.ping": [],
    "tool.list": [{}, {"tools": "x"}, {"tools": [1, 2]}, {"tools": [{"description": "no name"}]}],
    "tool.invoke": [{}, {"success": "maybe"}, {"success": True, "data": "not an object"}],
    "agent.chat.stream": [{}, {"chatId": "c"}, {"outcome": 3}],
}


async def test_a_garbage_result_raises_a_remote_error_naming_the_method(tmp_path: Path) -> None:
    script = tmp_path / "fake_sidecar.py"
    script.write_text(FAKE_SIDECAR, encoding="utf-8")
    answers = {method: [*NOT_OBJECTS, *bad, GOOD[method]] for method, bad in BAD_OBJECTS.items()}
    sidecar = await SidecarClient.start(
        command=[sys.executable, str(script), json.dumps(answers)], env=_env()
    )
    methods: dict[str, Callable[[], Awaitable[Any]]] = {
        "system.ping": sidecar.ping,
        "tool.list": sidecar.list_tools,
        "tool.invoke": lambda: sidecar.invoke("read_file", {}),
        "agent.chat.stream": lambda: sidecar.chat("hi"),
    }
    async with sidecar:
        for method, call in methods.items():
            for garbage in answers[method][:-1]:
                with pytest.raises(RemoteError) as raised:  # never a TypeError or a ValidationError
                    await call()
                assert raised.value.code == -32603 and raised.value.data == {"method": method}, garbage
                assert raised.value.message.startswith(f"the sidecar answered {method} with {garbage!r}")
        # a well-formed answer still comes back as before
        assert await sidecar.ping() == GOOD["system.ping"]
        assert await sidecar.list_tools() == GOOD["tool.list"]["tools"]
        assert await sidecar.invoke("read_file", {}) == ToolResult(success=True, data={"n": 1})
        assert await sidecar.chat("hi") == GOOD["agent.chat.stream"]


async def test_a_huge_garbage_result_is_clipped_in_the_message(tmp_path: Path) -> None:
    script = tmp_path / "fake_sidecar.py"
    script.write_text(FAKE_SIDECAR, encoding="utf-8")
    answers = {"system.ping": ["x" * 100_000]}
    sidecar = await SidecarClient.start(
        command=[sys.executable, str(script), json.dumps(answers)], env=_env()
    )
    async with sidecar:
        with pytest.raises(RemoteError) as raised:
            await sidecar.ping()
    assert len(raised.value.message) < 400 and "(100002 characters)" in raised.value.message
