"""Tool names are checked at registration (issue 13, item 7): ENV-10.

A name must match ``^[a-zA-Z0-9_-]{1,64}$`` (what model APIs accept); any other is a developer
error (``UserError``) naming the tool, and a plugin that registers one fails to load (PLG-7).
"""

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from steerable_agent_runtime import PluginLoadError, Tool, ToolRouter, UserError, tool
from steerable_agent_runtime.plugins import DirectorySource, PluginRegistry
from steerable_agent_runtime.tools import TOOL_NAME
from steerable_sidecar.mcp_sources._sources import mcp_tool_name

BAD = {
    "read_file ": "U+0020 SPACE",
    "\u0440ead_file": "U+0440 CYRILLIC SMALL LETTER ER",
    "read_file\u200b": "U+200B ZERO WIDTH SPACE",
    "a\nb": "U+000A",
    "a.b": "U+002E FULL STOP",
    "": "is empty",
    "x" * 65: "has 65 characters",
}


async def _handler(**_: Any) -> None:
    return None


@pytest.mark.parametrize("name", list(BAD))
def test_router_register_refuses_a_bad_name(name: str) -> None:  # ENV-10
    router = ToolRouter()
    spec = Tool.from_schema(name, {"type": "object"}, _handler)
    with pytest.raises(UserError) as caught:
        router.register(spec)
    message = str(caught.value)
    assert message.startswith(f"invalid tool name {name!r}: it ")
    assert BAD[name] in message
    assert message.endswith(
        "a tool name is 1 to 64 of the ASCII letters, digits, '_' and '-' "
        "(^[a-zA-Z0-9_-]{1,64}$, what model APIs accept)"
    )
    assert router.names() == []


def test_the_decorator_refuses_too_and_good_names_pass() -> None:  # ENV-10
    router = ToolRouter()
    with pytest.raises(UserError, match=r"invalid tool name 'read_file '"):

        @tool(router=router, name="read_file ")
        def fake(path: str) -> str:
            return path

    assert router.names() == []  # the refused one left nothing behind
    good = ["read_file", "a", "A-b_9", "x" * 64, "mcp__server__tool"]
    for name in good:
        router.register(Tool.from_schema(name, {"type": "object"}, _handler))
    assert router.names() == good
    with pytest.raises(UserError, match="must be a string"):
        router.register(replace(Tool.from_schema("n", {"type": "object"}, _handler), name=3))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "tool_name",
    ["read_file", "read file", "\u0440ead", "a.b/c", "tool\u200b", "\U0001f600", "x" * 200, "a\nb"],
)
def test_mcp_tool_names_are_sanitized_to_fit(tool_name: str) -> None:  # ENV-10
    name = mcp_tool_name("srv-1", tool_name)
    assert TOOL_NAME.fullmatch(name), name
    assert name.startswith("mcp__srv-1__")
    ToolRouter().register(Tool.from_schema(name, {"type": "object"}, _handler))


def test_a_plugin_registering_a_bad_name_fails_to_load_naming_it(tmp_path: Path) -> None:  # ENV-10, PLG-7
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "sneaky.py").write_text(
        "from steerable_agent_runtime import tool\n"
        "\n"
        "def register(router):\n"
        "    @tool(router=router)\n"
        "    def good_one() -> str:\n"
        "        return 'ok'\n"
        "\n"
        "    try:  # the error is swallowed: the load must still fail\n"
        "        @tool(router=router, name='read_file\\u200b')\n"
        "        def twin(path: str) -> str:\n"
        "            return path\n"
        "    except Exception:\n"
        "        pass\n"
    )
    router = ToolRouter()
    registry = PluginRegistry(router, [DirectorySource(plugins)])
    with pytest.raises(PluginLoadError) as caught:
        registry.load_all()
    message = str(caught.value)
    assert message.startswith(
        f"plugin 'sneaky' from {plugins / 'sneaky.py'}: invalid tool name 'read_file\\u200b'"
    )
    assert "U+200B ZERO WIDTH SPACE" in message
    assert caught.value.plugin == "sneaky"
    assert router.names() == []  # PLG-8: what it registered before is rolled back
