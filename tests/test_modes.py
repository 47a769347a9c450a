"""ToolMode classifier (MODE-*)."""

import pytest

from steerable_agent_runtime import (
    DEFAULT_TOOL_MODE,
    MODE_CONSENT,
    Tool,
    ToolMode,
    ToolRouter,
    decide_tool_mode,
    mode_from_annotations,
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


def _catalogue():
    import json

    from peer_data import peer_dir

    path = peer_dir("mcp-inventories") / "catalogue.jsonl"
    return [
        json.loads(line)["tool"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
    ]


def test_mcp_annotations_inform_the_mode_of_real_mcp_tools_mode_4():
    tools = _catalogue()
    assert len(tools) == 277
    for entry in tools:
        hints = entry.get("annotations") or {}
        mode = mode_from_annotations(entry["name"], hints)
        if hints.get("readOnlyHint") is True:
            assert mode is ToolMode.READ, entry["name"]
        elif hints.get("destructiveHint") is True and hints.get("openWorldHint") is True:
            assert mode is ToolMode.LOCAL, entry["name"]  # may destroy and reach out: consent
        elif hints.get("destructiveHint") is True:
            assert mode is ToolMode.DESTRUCTIVE, entry["name"]
        elif hints.get("destructiveHint") is False:
            assert mode is ToolMode.SAFE_WRITE, entry["name"]
        elif hints.get("openWorldHint") is True:
            assert mode is ToolMode.EXTERNAL, entry["name"]
        else:
            assert mode is decide_tool_mode(entry["name"]), entry["name"]
    # The peer README: every name that matches a prefix rule agrees with the server's own hints,
    # but for two GitHub tools (delete_, remove_) that also say openWorldHint: those ask for consent (local).
    matched = [t for t in tools if decide_tool_mode(t["name"]) is not DEFAULT_TOOL_MODE]
    assert len(matched) == 102
    disagree = {}
    for entry in matched:
        mode = mode_from_annotations(entry["name"], entry.get("annotations"))
        if mode is not decide_tool_mode(entry["name"]):
            disagree[entry["name"]] = (decide_tool_mode(entry["name"]), mode)
    assert len(disagree) == 2
    assert set(disagree.values()) == {(ToolMode.DESTRUCTIVE, ToolMode.LOCAL)}
    # Unannotated tools (the Slack server's) fall back to the name, so unknown names ask for consent.
    bare = [t for t in tools if not {k for k in (t.get("annotations") or {}) if k != "title"}]
    assert bare and all(
        mode_from_annotations(t["name"], t.get("annotations")) is ToolMode.LOCAL for t in bare
    )


@pytest.mark.parametrize(
    ("hints", "mode"),
    [
        (None, "local"),
        ({}, "local"),
        ({"title": "x"}, "local"),
        ({"readOnlyHint": False}, "local"),
        ({"readOnlyHint": False, "idempotentHint": True}, "local"),
        ({"readOnlyHint": True, "destructiveHint": True}, "read"),
        ({"destructiveHint": True}, "destructive"),
        ({"destructiveHint": True, "openWorldHint": False}, "destructive"),
        ({"readOnlyHint": False, "destructiveHint": True, "openWorldHint": True}, "local"),
        ({"readOnlyHint": False, "destructiveHint": False, "openWorldHint": True}, "safe_write"),
        ({"readOnlyHint": False, "openWorldHint": True}, "external"),
        ({"readOnlyHint": "true"}, "local"),  # hints are booleans; a string is no hint
    ],
)
def test_annotation_rules_mode_4(hints, mode):
    assert mode_from_annotations("browser_click", hints) == ToolMode(mode)


def test_schema_tools_take_their_mode_from_annotations_unless_overridden_mode_3_mode_4():
    async def handler(**kwargs):
        return kwargs

    schema = {"type": "object", "properties": {}}
    assert (
        Tool.from_schema("git_status", schema, handler, annotations={"readOnlyHint": True}).mode
        is ToolMode.READ
    )
    assert Tool.from_schema("git_status", schema, handler).mode is ToolMode.LOCAL
    overridden = Tool.from_schema(
        "git_status", schema, handler, mode="external", annotations={"readOnlyHint": True}
    )
    assert overridden.mode is ToolMode.EXTERNAL


def test_our_mcp_annotations_round_trip_mode_4():
    from steerable_sidecar.mcp._server import mode_annotations

    # Issue 15: every hint is stated; a steerable client reading them back gets the mode, except
    # external, read back as safe_write (both run without consent: the hints cannot tell a bounded
    # local write from an outside call that says it destroys nothing)
    for mode in ToolMode:
        hints = mode_annotations(mode)
        assert set(hints) == {"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"}
        back = mode_from_annotations("no_rule_name", hints)
        assert back is (ToolMode.SAFE_WRITE if mode is ToolMode.EXTERNAL else mode), mode
        assert requires_consent(back) is requires_consent(mode)
    assert mode_annotations(ToolMode.READ, title="Read file")["title"] == "Read file"
