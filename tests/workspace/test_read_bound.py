"""``read_file``'s clip as a router is built with it (``steerable mcp``'s, for hosts; FILE-10)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from steerable_agent_runtime import ToolCall, UserError, version_of, workspace_tools_for_cwd
from steerable_agent_runtime.workspace import DEFAULT_MAX_OUTPUT_CHARS, HOST_READ_MAX_CHARS


def _description(router: object, name: str) -> str:
    from steerable_agent_runtime import ToolRouter

    assert isinstance(router, ToolRouter)
    (tool,) = [t for t in router if t.name == name]
    return tool.description


async def test_a_host_bound_clips_the_read_says_so_and_keeps_the_json_under_50000_chars(
    tmp_path: Path,
) -> None:
    """A 120 KB source file read through a router built with ``HOST_READ_MAX_CHARS``: the whole
    result, as a host serialises it, stays under Claude Code's 50,000-character limit."""
    text = "".join(f'    value_{n} = "quoted {n}"\t# note\n' for n in range(3000))
    (tmp_path / "big.py").write_text(text)
    router = workspace_tools_for_cwd(tmp_path, bash=False, read_max_chars=HOST_READ_MAX_CHARS)
    result = await router.dispatch(ToolCall(id="r", name="read_file", arguments={"path": "big.py"}))
    assert result.success and result.data is not None
    assert result.data["partial"] is True and result.data["version"] == version_of(text.encode())
    assert len(result.data["content"]) < HOST_READ_MAX_CHARS + 200  # the clip and its marker line
    assert len(json.dumps(result.to_wire(), ensure_ascii=False, separators=(",", ":"))) < 50_000
    assert "Output over 40,000 characters is clipped" in _description(router, "read_file")
    default = workspace_tools_for_cwd(tmp_path, bash=False)
    assert f"Output over {DEFAULT_MAX_OUTPUT_CHARS:,} characters is clipped" in _description(
        default, "read_file"
    )
    whole = await default.dispatch(ToolCall(id="r", name="read_file", arguments={"path": "big.py"}))
    assert whole.data is not None and len(whole.data["content"]) > 99_000


@pytest.mark.parametrize("bad", [0, -1, True, 1.5])
def test_a_bound_that_is_no_positive_int_is_refused(tmp_path: Path, bad: object) -> None:
    with pytest.raises(UserError, match="read_max_chars must be a positive number of characters"):
        workspace_tools_for_cwd(tmp_path, bash=False, read_max_chars=bad)  # type: ignore[call-overload]
