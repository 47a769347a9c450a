"""MCP tool sources without a server: config files, the result mapping, and the 277 real definitions.

The catalogue tests load ``tests/data/peer/mcp-inventories`` (11 real servers' ``tools/list``) as
schema-only deferred tools and check modes (MODE-4), tiers (TIER-1) and ``tool_search`` (TS-1).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

import mcp_types
import pytest

from peer_data import peer_dir
from steerable_agent_runtime.errors import ConfigError
from steerable_agent_runtime.modes import DEFAULT_TOOL_MODE, ToolMode, decide_tool_mode, mode_from_annotations
from steerable_agent_runtime.tool_search import register_tool_search
from steerable_agent_runtime.tools import ToolExposure, ToolRouter
from steerable_sidecar.mcp_sources._sources import (
    MCP_CONFIG_ENV,
    McpServerConfig,
    call_tool_result,
    load_mcp_catalogue,
    load_mcp_config,
    load_mcp_config_from_env,
    mcp_tool_name,
)

INVENTORIES = peer_dir("mcp-inventories")
CATALOGUE = INVENTORIES / "catalogue.jsonl"


def write(tmp_path: Path, document: Any, name: str = "mcp.json") -> Path:
    path = tmp_path / name
    path.write_text(document if isinstance(document, str) else json.dumps(document), encoding="utf-8")
    return path


# -- config files -------------------------------------------------------------------------------


def test_a_list_of_servers_loads_in_order(tmp_path):
    path = write(
        tmp_path,
        [
            {
                "name": "github",
                "command": "github-mcp-server",
                "args": ["stdio"],
                "env": {"GITHUB_TOKEN": "x"},
            },
            {"name": "time_2", "command": "uvx", "args": ["mcp-server-time"], "type": "stdio"},
            {"name": "bare-one", "command": "./server"},
        ],
    )
    assert load_mcp_config(path) == [
        McpServerConfig("github", "github-mcp-server", ("stdio",), {"GITHUB_TOKEN": "x"}),
        McpServerConfig("time_2", "uvx", ("mcp-server-time",)),
        McpServerConfig("bare-one", "./server"),
    ]


def test_the_claude_desktop_mcp_servers_object_loads(tmp_path):
    path = write(
        tmp_path,
        {
            "mcpServers": {
                "filesystem": {
                    "command": "npx",
                    "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"],
                },
                "memory": {
                    "command": "npx",
                    "args": ["-y", "@modelcontextprotocol/server-memory"],
                    "env": {},
                },
            }
        },
    )
    configs = load_mcp_config(str(path))
    assert [(c.name, c.command, c.args) for c in configs] == [
        ("filesystem", "npx", ("-y", "@modelcontextprotocol/server-filesystem", "/tmp")),
        ("memory", "npx", ("-y", "@modelcontextprotocol/server-memory")),
    ]
    assert configs[1].env is not None and dict(configs[1].env) == {}


def test_other_top_level_keys_of_a_host_config_file_are_left_alone(tmp_path):
    path = write(tmp_path, {"globalShortcut": "Ctrl+Space", "mcpServers": {"t": {"command": "x"}}})
    assert load_mcp_config(path) == [McpServerConfig("t", "x")]


def test_an_empty_list_means_no_servers(tmp_path):
    assert load_mcp_config(write(tmp_path, [])) == []


@pytest.mark.parametrize(
    ("document", "where", "problem"),
    [
        ("[{", "not valid JSON", "line 1, column 3"),
        ({"servers": []}, "expected a list", "mcpServers"),
        ("42", "expected a list", "mcpServers"),
        ([["github"]], "entry 0", "expected an object, got list"),
        ([{"command": "x"}], "entry 0", "name None is invalid"),
        ([{"name": "a b", "command": "x"}], "entry 0", "name 'a b' is invalid"),
        ([{"name": "a.b", "command": "x"}], "entry 0", "use 1-32 letters, digits"),
        ([{"name": "a__b", "command": "x"}], "entry 0", "without '__'"),
        ([{"name": "ok", "command": "x"}, {"name": "ok", "command": "y"}], "entry 1", "'ok' is used twice"),
        ([{"name": "ok"}], "entry 0", "command must be a non-empty string"),
        ([{"name": "ok", "command": "  "}], "entry 0", "command must be a non-empty string"),
        ([{"name": "ok", "command": "x", "args": "--flag"}], "entry 0", "args must be a list of strings"),
        ([{"name": "ok", "command": "x", "args": ["--n", 3]}], "entry 0", "args must be a list of strings"),
        (
            [{"name": "ok", "command": "x", "env": {"N": 3}}],
            "entry 0",
            "env must be an object of string values",
        ),
        ([{"name": "ok", "command": "x", "arg": ["y"]}], "entry 0", "unknown key(s) 'arg'"),
        ([{"name": "ok", "url": "https://example.com/mcp"}], "entry 0", "only stdio servers"),
        ([{"name": "ok", "command": "x", "type": "http"}], "entry 0", "type 'http' is not supported"),
        ({"mcpServers": {"gh": {"command": "x", "name": "gh"}}}, "server 'gh'", "unknown key(s) 'name'"),
        ({"mcpServers": {"bad name": {"command": "x"}}}, "server 'bad name'", "is invalid"),
        ({"mcpServers": {"gh": "github-mcp-server"}}, "server 'gh'", "expected an object, got str"),
    ],
)
def test_a_bad_config_names_the_file_and_the_entry(tmp_path, document, where, problem):
    path = write(tmp_path, document)
    with pytest.raises(ConfigError) as caught:
        load_mcp_config(path)
    message = str(caught.value)
    assert message.startswith(f"MCP config {path}: "), message
    assert where in message, message
    assert problem in message, message


def test_a_missing_file_names_the_file(tmp_path):
    with pytest.raises(ConfigError, match="nope.json: cannot read it"):
        load_mcp_config(tmp_path / "nope.json")


def test_the_config_env_variable_names_the_file(tmp_path):
    path = write(tmp_path, [{"name": "t", "command": "x"}])
    assert MCP_CONFIG_ENV == "STEERABLE_MCP_CONFIG"
    assert load_mcp_config_from_env({}) == []
    assert load_mcp_config_from_env({MCP_CONFIG_ENV: "  "}) == []
    assert load_mcp_config_from_env({MCP_CONFIG_ENV: str(path)}) == [McpServerConfig("t", "x")]
    with pytest.raises(ConfigError) as caught:
        load_mcp_config_from_env({MCP_CONFIG_ENV: str(tmp_path / "gone.json")})
    assert str(caught.value).startswith(f"{MCP_CONFIG_ENV}: MCP config {tmp_path / 'gone.json'}")


def test_a_config_built_in_code_is_checked_and_frozen():
    with pytest.raises(ConfigError):
        McpServerConfig("no spaces", "x")
    with pytest.raises(ConfigError):
        McpServerConfig("ok", "")
    env = {"A": "1"}
    config = McpServerConfig("ok", "x", ["--a"], env)  # type: ignore[arg-type]  # a list is accepted
    env["A"] = "changed"
    assert config.args == ("--a",)
    assert dict(config.env or {}) == {"A": "1"}


def test_tool_names_are_namespaced_and_model_safe():
    assert mcp_tool_name("github", "create_issue") == "mcp__github__create_issue"
    assert mcp_tool_name("notion", "API-get-user") == "mcp__notion__API-get-user"
    assert mcp_tool_name("x", "files.read/all") == "mcp__x__files_read_all"


# -- the result mapping -------------------------------------------------------------------------


def mapped(**fields: Any) -> dict[str, Any]:
    result = mcp_types.CallToolResult.model_validate(fields)
    return call_tool_result(result, server="s", tool="t").to_wire()


def test_structured_content_is_data_and_its_text_twin_is_dropped():
    assert mapped(
        content=[{"type": "text", "text": '{"n": 1}'}], structuredContent={"n": 1}, isError=False
    ) == {"success": True, "data": {"n": 1}}
    assert mapped(content=[], structuredContent=[1, 2]) == {"success": True, "data": {"value": [1, 2]}}


def test_text_blocks_join_into_data_text_and_other_blocks_lose_their_payload():
    png = "iVBORw0KGgo="  # 8 bytes
    body = mapped(
        content=[
            {"type": "text", "text": "line one"},
            {"type": "image", "data": png, "mimeType": "image/png"},
            {"type": "text", "text": "line two"},
            {"type": "resource", "resource": {"uri": "file:///a.bin", "blob": "AAAA", "mimeType": "x/y"}},
            {"type": "resource_link", "uri": "file:///b.txt", "name": "b.txt"},
        ]
    )
    assert body == {
        "success": True,
        "data": {
            "text": "line one\nline two",
            "content": [
                {"type": "image", "mimeType": "image/png", "bytes": 8},
                {"type": "resource", "resource": {"uri": "file:///a.bin", "mimeType": "x/y", "bytes": 3}},
                {"type": "resource_link", "uri": "file:///b.txt", "name": "b.txt"},
            ],
        },
    }


def test_no_content_is_a_bare_success():
    assert mapped(content=[]) == {"success": True}


def test_is_error_needs_followup_with_the_text_env_7():
    assert mapped(content=[{"type": "text", "text": "bad id"}], isError=True) == {
        "success": False,
        "needsFollowup": True,
        "error": "bad id",
        "data": {"code": "mcp_tool_error", "server": "s", "tool": "t"},
    }
    silent = mapped(content=[], isError=True, structuredContent={"reason": 7})
    assert silent["error"] == "MCP tool 't' of server 's' reported an error without a message"
    assert silent["data"]["structured"] == {"reason": 7}


# -- the 277 real tool definitions --------------------------------------------------------------


@pytest.fixture(scope="module")
def catalogue() -> list[Any]:
    return load_mcp_catalogue(CATALOGUE)


@pytest.fixture(scope="module")
def definitions() -> dict[str, dict[str, Any]]:
    rows = [json.loads(line) for line in CATALOGUE.read_text(encoding="utf-8").splitlines() if line.strip()]
    return {mcp_tool_name(r["server"], r["tool"]["name"]): r["tool"] for r in rows}


def test_all_277_real_definitions_register_deferred_tier_1(catalogue, definitions):
    assert len(catalogue) == 277
    router = ToolRouter()
    for tool in catalogue:
        router.register(tool)
    assert set(router.names()) == set(definitions)
    assert all(t.exposure is ToolExposure.DEFERRED for t in router)
    assert router.describe_model() == []
    assert Counter(name.split("__")[1] for name in router.names()) == {
        "github": 117,
        "playwright": 72,
        "notion": 24,
        "slack": 8,
        "filesystem": 14,
        "memory": 9,
        "everything": 17,
        "sequential-thinking": 1,
        "git": 12,
        "fetch": 1,
        "time": 2,
    }
    for tool in catalogue:
        assert tool.parameters == definitions[tool.name]["inputSchema"]


def test_each_inventory_file_gives_the_same_tools_as_the_flat_catalogue(catalogue):
    by_name = {t.name: t for t in catalogue}
    seen = 0
    for path in sorted(INVENTORIES.glob("*.json")):
        for tool in load_mcp_catalogue(path):
            assert tool.describe() == by_name[tool.name].describe()
            seen += 1
    assert seen == 277


def test_real_modes_follow_annotations_then_the_original_name_mode_4(catalogue, definitions):
    for tool in catalogue:
        definition = definitions[tool.name]
        assert tool.mode is mode_from_annotations(definition["name"], definition.get("annotations")), (
            tool.name
        )
    # the 102 names a spec rule matches keep that mode (the servers' hints agree with them), but for
    # two GitHub tools (delete_, remove_) whose hints also say openWorldHint: true, which ask for consent ...
    by_rule = [t for t in catalogue if decide_tool_mode(definitions[t.name]["name"]) is not DEFAULT_TOOL_MODE]
    assert len(by_rule) == 102
    moved = [t for t in by_rule if t.mode is not decide_tool_mode(definitions[t.name]["name"])]
    assert len(moved) == 2
    assert {definitions[t.name]["name"] for t in moved} == {
        "delete_pending_pull_request_review",
        "remove_sub_issue",
    }
    assert all(t.mode is ToolMode.LOCAL for t in moved)
    # ... though the registered mcp__ names match none: the original name is what is classified
    assert all(decide_tool_mode(t.name) is DEFAULT_TOOL_MODE for t in catalogue)
    # the unannotated Slack tools match no rule either: they ask for consent
    slack = [t for t in catalogue if t.name.startswith("mcp__slack__")]
    assert len(slack) == 8 and all(t.mode is ToolMode.LOCAL for t in slack)
    # 40 tools say destructiveHint and openWorldHint (GitHub's merges, pushes, deletes): local, consent
    assert Counter(t.mode for t in catalogue) == {
        ToolMode.READ: 138,
        ToolMode.DESTRUCTIVE: 27,
        ToolMode.SAFE_WRITE: 50,
        ToolMode.LOCAL: 62,
    }


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("create github issue", "mcp__github__create_issue"),
        ("merge pull request", "mcp__github__merge_pull_request"),
        ("take a screenshot of the page", "mcp__playwright__browser_take_screenshot"),
        ("click a button on the web page", "mcp__playwright__browser_click"),
        ("post a message to slack channel", "mcp__slack__slack_post_message"),
        ("search notion pages", "mcp__notion__API-post-search"),
        ("git commit", "mcp__git__git_commit"),
        ("current time in a timezone", "mcp__time__get_current_time"),
        ("add an observation to the knowledge graph entity", "mcp__memory__add_observations"),
    ],
)
async def test_tool_search_finds_real_mcp_tools_ts_1(catalogue, query, expected):
    router = ToolRouter()
    for tool in catalogue:
        router.register(tool)
    register_tool_search(router)
    body = (
        await router.dispatch({"id": "c", "name": "tool_search", "arguments": {"query": query}})
    ).to_wire()
    hits = body["data"]["tools"]
    assert hits[0]["name"] == expected, [h["name"] for h in hits]
    assert len(hits) == 8  # TS-2 default
    spec = router.get(expected)
    assert spec is not None and hits[0]["parameters"] == spec.parameters


async def test_catalogue_tools_are_not_connected(catalogue):
    router = ToolRouter()
    for tool in catalogue:
        router.register(tool)
    arguments = {"owner": "o", "repo": "r", "title": "t"}
    body = (
        await router.dispatch({"id": "c", "name": "mcp__github__create_issue", "arguments": arguments})
    ).to_wire()
    assert body == {
        "success": False,
        "needsFollowup": True,
        "error": "MCP tool 'create_issue' of server 'github' is catalogue only: not connected. Use another tool.",
        "data": {"code": "mcp_server_unavailable", "server": "github", "tool": "create_issue"},
    }


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("{}", "not an MCP inventory"),
        (
            '{"servers": [{"server": "bad name", "tools": [{"name": "t", "inputSchema": {}}]}]}',
            "invalid server name",
        ),
        ('{"servers": [{"server": "s", "tools": [{"name": "t"}]}]}', "inputSchema is not an object"),
        ('{"servers": [{"server": "s", "tools": [{"inputSchema": {}}]}]}', "has no name"),
        (
            '{"servers": [{"server": "s", "tools": [{"name": "t", "inputSchema": {"type": 5}}]}]}',
            "invalid JSON Schema",
        ),
    ],
)
def test_a_bad_catalogue_names_the_file(tmp_path, content, problem):
    path = write(tmp_path, content, "inventory.json")
    with pytest.raises(ConfigError) as caught:
        load_mcp_catalogue(path)
    assert str(caught.value).startswith(f"MCP catalogue {path}: ")
    assert problem in str(caught.value)


def test_a_catalogue_can_be_loaded_at_another_tier():
    tools = load_mcp_catalogue(INVENTORIES / "slack-mcp-server.json", exposure="hidden")
    assert len(tools) == 8 and {t.exposure for t in tools} == {ToolExposure.HIDDEN}


def test_long_tool_names_are_shortened_to_64_with_a_stable_hash():
    from steerable_sidecar.mcp_sources._sources import mcp_tool_name

    long = mcp_tool_name("srv", "x" * 200)
    assert len(long) == 64 and long.startswith("mcp__srv__xxx") and long == mcp_tool_name("srv", "x" * 200)
    assert mcp_tool_name("srv", "x" * 200) != mcp_tool_name("srv", "x" * 201)
    assert mcp_tool_name("srv", "send.file") == "mcp__srv__send_file"


@pytest.mark.parametrize("kind", ["fifo", "device", "directory"])
def test_a_config_that_is_not_a_regular_file_is_refused_without_reading_it(tmp_path, kind):
    if kind == "fifo":
        path = tmp_path / "fifo"
        os.mkfifo(path)  # reading it would block the start for ever
    elif kind == "device":
        path = Path("/dev/zero")  # reading it would fill the memory
    else:
        path = tmp_path
    with pytest.raises(ConfigError) as caught:
        load_mcp_config(path)
    assert str(caught.value) == f"MCP config {path}: not a regular file"


def test_a_config_too_large_or_nested_too_deeply_is_a_config_error(tmp_path):
    from steerable_sidecar.mcp_sources._sources import MAX_MCP_CONFIG_BYTES

    big = tmp_path / "big.json"
    big.write_text(" " * (MAX_MCP_CONFIG_BYTES + 1))
    with pytest.raises(ConfigError, match=f"larger than {MAX_MCP_CONFIG_BYTES} bytes"):
        load_mcp_config(big)
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ConfigError, match="not usable JSON"):
        load_mcp_config(deep)
