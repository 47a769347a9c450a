"""``SidecarClient`` raises the ``SteerableError`` an error response's code names (one table,
``rpc.ERROR_CODES``, on both sides), keeping the remote ``code``, ``message`` and ``data``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from steerable_agent_runtime import RemoteError, errors
from steerable_sidecar._remote_errors import typed_remote_error
from steerable_sidecar.client import SidecarClient
from steerable_sidecar.rpc import ERROR_CODES, error_code_for, error_data_for


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("STEERABLE_") and "API_KEY" not in k}


async def test_a_refused_method_raises_its_typed_error_with_the_remote_message(tmp_path: Path) -> None:
    async with await SidecarClient.start(
        workspace=tmp_path, env=_env(), args=["--no-web-tools", "--no-plugins"], state_dir=tmp_path / "state"
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
