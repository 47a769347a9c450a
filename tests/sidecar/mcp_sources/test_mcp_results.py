"""An MCP tool result past the cap reaches neither the model nor the record whole (SAFE-5).

Every result comes from the real fixture server (``tests/fixtures/mcp_tool_server.py``, its
``sized`` tool) over the real stdio connection. Where the call has the run's ``SpillHooks`` (the
agent loop's ``CallContext``) the whole goes to the spill store and the model gets a preview and a
``spill://`` locator; where it has none (a host's ``tool.invoke``, ``steerable call`` and
``mcp``) the data is cut to the cap with a note. The whole path, model to record, is
``steerable run --mcp`` against the local OpenAI-compatible server, with a 50 MB result.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from subprocess import CompletedProcess
from typing import Any

import pytest
import pytest_asyncio
from run_helpers import summary_of

from fake_openai import FakeOpenAI
from loop_script import call, tool_results, turn
from steerable_agent_runtime.context import CallContext
from steerable_agent_runtime.errors import ConfigError
from steerable_agent_runtime.llm import ScriptedProvider
from steerable_agent_runtime.loop import AgentLoop
from steerable_agent_runtime.spill import SpillHooks
from steerable_agent_runtime.tools import ToolRouter
from steerable_agent_runtime.trace import TraceSpan
from steerable_agent_runtime.types import ToolCall, ToolResult
from steerable_sidecar.mcp_sources._sources import MAX_RESULT_BYTES, McpServerConfig, McpToolSources

SERVER_SCRIPT = str(Path(__file__).resolve().parents[2] / "fixtures" / "mcp_tool_server.py")
BOUND_S = 60
CAP = MAX_RESULT_BYTES.default  # 100,000 bytes

shared_loop = pytest.mark.asyncio(loop_scope="module")


def sized_text(size: int) -> str:
    """What the fixture's ``sized`` tool sends: ``size`` characters of ``000000000\\n000000001\\n``..."""
    return "".join(f"{i:09d}\n" for i in range(size // 10 + 1))[:size]


def server(name: str = "fx") -> McpServerConfig:
    return McpServerConfig(name=name, command=sys.executable, args=(SERVER_SCRIPT,))


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def router() -> AsyncIterator[ToolRouter]:
    """One fixture server with the default cap, for the module."""
    tools = ToolRouter()
    sources = McpToolSources(tools, [server()])
    async with asyncio.timeout(BOUND_S):
        await sources.__aenter__()
    yield tools
    async with asyncio.timeout(BOUND_S):
        await sources.aclose()


async def sized(router: ToolRouter, size: int, shape: str, context_of: Any = None) -> ToolResult:
    call = ToolCall(id="call_1", name="mcp__fx__sized", arguments={"size": size, "shape": shape})
    context = context_of(call) if context_of is not None else None
    async with asyncio.timeout(BOUND_S):
        return await router.dispatch(call, context)


def cut_note(size: int, shown: int, cap: int = CAP) -> str:
    return (
        f"The result data was {size} bytes, more than the {cap} bytes an MCP result may bring into the "
        "conversation (STEERABLE_MCP_MAX_RESULT_BYTES), and nothing here stores the rest: "
        f"data.cut.preview holds the first {shown} characters of its JSON text; the rest is dropped. If "
        "what you need is not in the preview, call the tool again asking for less (a narrower query, a "
        "filter, a smaller page or limit)."
    )


def utf8_json_size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False).encode())


def whole_structured(size: int) -> dict[str, Any]:
    text = sized_text(size)
    return {
        "count": size // 30,
        "rows": [{"id": i, "line": text[i * 10 : i * 10 + 9]} for i in range(size // 30)],
    }


def whole_blocks(size: int) -> dict[str, Any]:
    text = sized_text(size)
    return {"text": "\n".join(text[i : i + 1_000] for i in range(0, size, 1_000))}


WHOLE: dict[str, Callable[[int], dict[str, Any]]] = {  # what each shape maps to, whole
    "text": lambda size: {"text": sized_text(size)},
    "blocks": whole_blocks,
    "structured": whole_structured,
    "fields": lambda size: {f"f{i:07d}": i for i in range(size // 20)},
    "resource": lambda size: {
        "content": [
            {
                "type": "resource",
                "resource": {"uri": "file:///big.txt", "mimeType": "text/plain", "text": sized_text(size)},
            }
        ]
    },
    "images": lambda size: {
        "text": "blank images",
        "content": [{"type": "image", "mimeType": "image/png", "bytes": 1_000}] * (size // 1_000),
    },
}
SIZES = {"images": 2_000_000}  # 2,000 images of 1,000 bytes: their summaries pass the cap


@shared_loop
@pytest.mark.parametrize("shape", list(WHOLE))
async def test_a_result_past_the_cap_is_spilled_whole_or_cut_to_the_cap_safe_5(
    router: ToolRouter, shape: str, tmp_path: Path
) -> None:
    # SAFE-5: text, many blocks, structuredContent (rows, or 20,000 small fields), an embedded
    # resource, 2,000 image blocks
    size = SIZES.get(shape, 400_000)
    whole = WHOLE[shape](size)
    total = utf8_json_size(whole)
    assert total > CAP

    # with the run's SpillHooks (the agent loop's context): the whole stored, a preview shown
    contexts: list[CallContext] = []

    def with_spill(call: ToolCall) -> CallContext:
        contexts.append(CallContext(call, spill=SpillHooks(tmp_path / "spill")))
        return contexts[-1]

    spilled = (await sized(router, size, shape, with_spill)).to_wire()
    [stored] = (tmp_path / "spill").iterdir()
    text = stored.read_text(encoding="utf-8")
    assert json.loads(text) == whole
    assert contexts[0].spilled is True
    locator = spilled["data"]["spilled"]["locator"]
    assert locator == f"spill://{stored.stem}"
    assert spilled["data"]["spilled"] == {"locator": locator, "bytes": total, "preview": text[:2_000]}
    assert spilled["message"] == (
        f"The result data was {total} bytes, too large for the conversation; it is stored at {locator}. "
        "Call read_spilled with that locator (and offset/limit) to read it."
    )
    assert utf8_json_size(spilled["data"]) <= 8_000  # kept fields are bounded too (20,000 of them here)

    # without one (tool.invoke, steerable call and mcp): cut to the cap, and said so
    cut = (await sized(router, size, shape)).to_wire()
    preview = cut["data"]["cut"]["preview"]
    assert cut["success"] is True
    assert cut["data"]["cut"]["bytes"] == total
    assert text.startswith(preview) and len(preview) > CAP * 3 // 4  # the start of the whole, most of the cap
    assert CAP - 10 <= utf8_json_size(cut["data"]) <= CAP
    assert cut["message"] == cut_note(total, len(preview))


async def test_the_cap_is_exact_and_configurable_an_error_text_is_cut_an_image_summed_up_safe_5() -> None:
    # SAFE-5: at 20,000 bytes, {"text": ...} of 18,171 characters is exactly 20,000 bytes of JSON
    tools = ToolRouter()
    async with asyncio.timeout(BOUND_S), McpToolSources(tools, [server()], max_result_bytes=20_000):
        at_cap = (await sized(tools, 18_171, "text")).to_wire()
        assert at_cap == {"success": True, "data": {"text": sized_text(18_171)}}
        assert utf8_json_size(at_cap["data"]) == 20_000
        past = (await sized(tools, 18_172, "text")).to_wire()
        shown = len(past["data"]["cut"]["preview"])
        assert past["message"] == cut_note(20_001, shown, cap=20_000)
        assert utf8_json_size(past["data"]) <= 20_000

        failed = (await sized(tools, 30_000, "error")).to_wire()  # its last newline is trimmed: 29,999
        note = (
            "\n[cut: the error text was 29999 bytes, more than the 20000 an MCP result may bring into the "
            "conversation (STEERABLE_MCP_MAX_RESULT_BYTES)]"
        )
        assert failed == {
            "success": False,
            "needsFollowup": True,
            "error": sized_text(30_000)[: 20_000 - len(note)] + note,
            "data": {"code": "mcp_tool_error", "server": "fx", "tool": "sized"},
        }
        assert len(failed["error"].encode()) == 20_000

        # 10 MB of base64 (a 7.5 MB image) over the wire: its size, a few bytes, in the conversation
        image = {"type": "image", "mimeType": "image/png", "bytes": 7_500_000}
        result = (await sized(tools, 7_500_000, "image")).to_wire()
        assert result == {"success": True, "data": {"text": "blank images", "content": [image]}}


@shared_loop
async def test_the_agent_loop_spills_at_the_mcp_cap_and_its_span_says_so_safe_5(
    router: ToolRouter, tmp_path: Path
) -> None:
    # SAFE-5: 200,000 characters (220,012 bytes) is past the MCP cap, under the loop's own 256 KiB
    request = call("mcp__fx__sized", {"size": 200_000}, id="m")
    provider = ScriptedProvider([turn(request), "done"])
    spans: list[TraceSpan] = []
    loop = AgentLoop(provider, router, spill=SpillHooks(tmp_path / "spill"), trace=spans.append)
    async with asyncio.timeout(BOUND_S):
        await loop.run([], "go")
    answer = tool_results(list(provider.requests[1].messages))["m"]
    assert answer["data"]["spilled"]["bytes"] == 220_012
    assert [span.attrs["spilled"] for span in spans] == [True]


@shared_loop
async def test_a_spill_store_that_cannot_be_written_gives_the_cut_result_safe_5(
    router: ToolRouter, tmp_path: Path
) -> None:
    # SAFE-5: the store's folder cannot be made (a file is in the way): cut, never the whole
    (tmp_path / "file").write_text("")
    contexts: list[CallContext] = []

    def with_broken_spill(call: ToolCall) -> CallContext:
        contexts.append(CallContext(call, spill=SpillHooks(tmp_path / "file" / "spill")))
        return contexts[-1]

    result = (await sized(router, 400_000, "text", with_broken_spill)).to_wire()
    assert result["message"] == cut_note(440_012, len(result["data"]["cut"]["preview"]))
    assert contexts[0].spilled is False


@pytest.mark.parametrize("value", [19_999, 10_000_001, True])
def test_a_cap_out_of_range_is_refused_naming_it(value: int) -> None:
    with pytest.raises(ConfigError, match=r"McpToolSources.max_result_bytes=.* from 20000 to 10000000"):
        McpToolSources(ToolRouter(), [server()], max_result_bytes=value)


def mcp_config(tmp_path: Path) -> Path:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps([{"name": "fx", "command": sys.executable, "args": [SERVER_SCRIPT]}]))
    return path


def test_steerable_call_cuts_to_the_variables_cap_and_refuses_a_bad_one_safe_5(
    tmp_path: Path, run_cli: Callable[..., CompletedProcess[str]]
) -> None:
    # SAFE-5 on a surface without a spill store, with STEERABLE_MCP_MAX_RESULT_BYTES
    args = ("call", "mcp__fx__sized", '{"size": 1000000}', "-w", str(tmp_path), "--no-plugins")
    config = {
        "STEERABLE_MCP_CONFIG": str(mcp_config(tmp_path)),
        "STEERABLE_STATE_DIR": str(tmp_path.parent / f"{tmp_path.name}-s"),
    }
    proc = run_cli(*args, **config, STEERABLE_MCP_MAX_RESULT_BYTES="30_000")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    shown = len(result["data"]["cut"]["preview"])
    assert result["message"] == cut_note(1_100_012, shown, cap=30_000)
    assert len(proc.stdout) < 40_000
    refused = run_cli(*args, **config, STEERABLE_MCP_MAX_RESULT_BYTES="100")
    assert refused.returncode == 2
    assert "STEERABLE_MCP_MAX_RESULT_BYTES='100' must be an integer from 20000 to 10000000" in refused.stderr


@pytest.mark.slow
def test_a_50_mb_result_reaches_the_model_and_the_record_as_a_preview_the_spill_holds_it_safe_5(
    tmp_path: Path, fake_openai: FakeOpenAI, child_env: Callable[..., dict[str, str]]
) -> None:
    # SAFE-5, the whole path: model -> steerable run -> MCP server -> spill, record, model. 50 MB, and
    # 200 KB: past the MCP cap but under the loop's own spill threshold (256 KiB)
    sizes = {"big": 50_000_000, "mid": 200_000}
    calls = [
        {"id": name, "name": "mcp__fx__sized", "arguments": json.dumps({"size": size})}
        for name, size in sizes.items()
    ]
    fake_openai.script([{"tool_calls": calls[:1]}, {"tool_calls": calls[1:]}, {"text": "Read the start."}])
    env = child_env(
        STEERABLE_PROVIDER="openai",
        STEERABLE_MODEL="m",
        STEERABLE_BASE_URL=fake_openai.base_url,
        STEERABLE_API_KEY="sk-x",
        STEERABLE_STATE_DIR=str(tmp_path / "state"),
    )
    workspace = tmp_path / "ws"
    workspace.mkdir()
    run = ["run", "--cwd", str(workspace), "--instruction", "fetch it", "--session-id", "s1", "--quiet"]
    proc = run_steerable_with(env, *run, "--mcp", str(mcp_config(tmp_path)))
    assert proc.returncode == 0, proc.stderr
    assert summary_of(proc)["outcome"] == "completed"

    sessions = tmp_path / "state" / "sessions"
    record = sessions / "s1.jsonl"
    assert record.stat().st_size < 64 * 1024  # the record holds previews, not 50 MB or 200 KB
    recorded = [json.loads(line) for line in record.read_text().splitlines()]
    contents = [e["message"].get("content") for e in recorded if e.get("type") == "message"]
    stored = {path.stat().st_size: path for path in (sessions / "s1.spill").iterdir()}
    for round_, (name, size) in enumerate(sizes.items(), 1):
        total = size + size // 10 + 12  # {"text": "..."} with a \n escape every 10 characters
        body = stored[total].read_text(encoding="utf-8")
        assert json.loads(body) == {"text": sized_text(size)}  # the spill holds the whole
        # what the model got back is what the record holds: a preview and the locator
        [answer] = [m for m in fake_openai.requests[round_].body["messages"] if m.get("tool_call_id") == name]
        assert answer["content"] in contents
        locator = f"spill://{stored[total].stem}"
        assert json.loads(answer["content"]) == {
            "success": True,
            "message": f"The result data was {total} bytes, too large for the conversation; it is stored at "
            f"{locator}. Call read_spilled with that locator (and offset/limit) to read it.",
            "data": {"spilled": {"locator": locator, "bytes": total, "preview": body[:2_000]}},
        }


def run_steerable_with(env: dict[str, str], *args: str) -> CompletedProcess[str]:
    from steerable_cli import run_steerable

    return run_steerable(*args, env=env, timeout_s=300)
