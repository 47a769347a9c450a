"""ToolMode classifier (MODE-*)."""

import pytest

from steerable_agent_runtime import (
    DEFAULT_TOOL_MODE,
    MODE_CONSENT,
    ToolMode,
    ToolRouter,
    decide_tool_mode,
    requires_consent,
    tool,
)


@pytest.mark.parametrize(
    ("name", "mode"),
    [
        ("get_user", "read"),
        ("list_events", "read"),
        ("read_file", "read"),
        ("search_docs", "read"),
        ("create_event", "safe_write"),
        ("update_event", "safe_write"),
        ("add_label", "safe_write"),
        ("set_title", "safe_write"),
        ("delete_event", "destructive"),
        ("remove_user", "destructive"),
        ("archive_chat", "destructive"),
        ("drop_table", "destructive"),
        ("local_open", "local"),
        ("shell_run", "local"),
        ("exec_command", "local"),
        ("web_search", "read"),
        ("web_fetch", "read"),
    ],
)
def test_prefix_table_mode_1(name, mode):
    assert decide_tool_mode(name) == ToolMode(mode)


@pytest.mark.parametrize(
    "name",
    [
        "web_post",
        "web_",
        "websearch",
        "Get_user",
        "getuser",
        "read",
        "bash",
        "browser_click",
        "git_commit",
        "_get_x",
        "",
    ],
)
def test_unmatched_names_get_the_conservative_default_mode_4(name):
    # MODE-1: web_* is exact-name only; prefixes are case-sensitive and need the underscore.
    assert decide_tool_mode(name) is DEFAULT_TOOL_MODE is ToolMode.LOCAL
    assert requires_consent(decide_tool_mode(name))


def test_default_ui_treatment_mode_2():
    assert MODE_CONSENT == {
        ToolMode.READ: "auto-run, no consent",
        ToolMode.SAFE_WRITE: "auto-run with diff preview",
        ToolMode.DESTRUCTIVE: "auto-run, undo affordance",
        ToolMode.LOCAL: "requires consent",
        ToolMode.EXTERNAL: "auto-run, log",
    }
    assert [m for m in ToolMode if requires_consent(m)] == [ToolMode.LOCAL]


def test_registration_mode_overrides_inference_mode_3():
    router = ToolRouter()

    @tool(router=router, mode="read")
    def delete_cache_entry(key: str) -> None:
        """Pretend to delete."""

    @tool(router=router, mode=ToolMode.EXTERNAL)
    def get_weather(city: str) -> str:
        return city

    modes = {entry["name"]: entry["mode"] for entry in router.describe()}
    assert modes == {"delete_cache_entry": "read", "get_weather": "external"}
