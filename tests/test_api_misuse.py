"""A public API called wrongly raises ``UserError`` (a developer mistake), not a bare ``ValueError``."""

import pytest

from steerable_agent_runtime import AgentLoop, SpillHooks, ToolRouter
from steerable_agent_runtime.errors import SteerableError, UserError
from steerable_agent_runtime.settings import EnvVar


def test_agent_loop_max_rounds_below_one_is_a_user_error():
    with pytest.raises(UserError, match="max_rounds must be at least 1"):
        AgentLoop(provider=None, router=ToolRouter(), max_rounds=0)  # type: ignore[arg-type]


def test_spill_threshold_below_one_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="threshold_bytes must be positive"):
        SpillHooks(tmp_path, threshold_bytes=0)


def test_mcp_server_heartbeat_not_positive_is_a_user_error():
    from steerable_sidecar.mcp._server import McpServer

    with pytest.raises(UserError, match="heartbeat_s must be positive, got 0"):
        McpServer(heartbeat_s=0)


@pytest.mark.parametrize(
    ("kind", "extra", "words"),
    [
        ("int", {}, "an int variable needs floor and ceiling"),
        ("flag", {"floor": 1, "ceiling": 2}, "an int variable needs floor and ceiling"),
        ("choice", {}, "a choice variable needs choices"),
        ("text", {"choices": ("a",)}, "a choice variable needs choices"),
    ],
)
def test_a_malformed_env_var_declaration_is_a_user_error(kind, extra, words):
    with pytest.raises(UserError, match=words) as caught:
        EnvVar(name="STEERABLE_X", area="Area", summary="summary", kind=kind, **extra)
    assert isinstance(caught.value, SteerableError) and not isinstance(caught.value, ValueError)
