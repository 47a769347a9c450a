"""What the model sees of steerable's long results through a real Claude Code (issue #31).

Same host, fake model and hermetic set-up as ``test_mcp_host_e2e.py`` (whose helpers these tests
use, imported as ``sidecar.test_mcp_host_e2e`` so that mypy finds them): ``claude -p`` launches
``steerable mcp``, the fake model makes scripted tool calls, and each test asserts the tool results
Claude Code sent back to the model (the ``structuredContent``, as compact JSON), not what steerable
answered.

What the pinned Claude Code (2.1.328) does with a long MCP result, measured with these tests:

- up to 50,000 characters, the result goes to the model whole;
- over that, the model gets ``<persisted-output>``: the size, the path of a file holding the whole
  result (not written under ``--no-session-persistence``) and a preview of its first 2 KB.
  The version a later write needs survives only because steerable puts it before the content;
- over ``MAX_MCP_OUTPUT_TOKENS`` (25,000 tokens by default; counted by the API's ``count_tokens``,
  which the fake model answers 404, so Claude Code falls back to its estimate, about a token per
  4 characters), the model gets no preview at all: the saved file's path, the JSON's schema (keys
  and types, no values) and instructions to read the file in chunks.

Claude Code counts a JavaScript string's length (UTF-16 code units: an emoji is 2). So ``steerable
mcp`` clips ``read_file`` at ``HOST_READ_MAX_CHARS`` (40,000 characters of the content as the JSON
holds it, escapes counted in full): a read of any size and content reaches the model whole, its
version and the head and tail of the file included.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fake_anthropic import FakeAnthropic
from sidecar.mcp.test_mcp_host_e2e import (
    CLAUDE,
    PREFIX,
    _host_env,
    _require_host,
    _run_host,
    _server_entry,
    _text_of,
    _tool_results,
)
from steerable_agent_runtime.workspace import HOST_READ_MAX_CHARS

pytestmark = pytest.mark.host

# One scripted call: the tool and its arguments, made from the results the model saw so far.
Call = tuple[str, Callable[[list[str]], dict[str, Any]]]

PERSIST_CHARS = 50_000  # Claude Code 2.1.328 shows a longer result as a 2,000-byte preview


async def _claude_session(tmp_path: Path, ws: Path, calls: list[Call]) -> list[dict[str, Any]]:
    """One ``claude -p`` run whose fake model makes ``calls`` in turn, then answers in text.

    Returns the tool_result of each call, in order, as the request right after the call carried it.
    """
    _require_host()
    home = tmp_path / "home"
    (home / "tmp").mkdir(parents=True)
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"steerable": _server_entry(ws)}}), encoding="utf-8")

    def answer(body: dict[str, Any]) -> list[dict[str, Any]]:
        seen = [_text_of(r) for r in _tool_results(body)]
        if len(seen) == len(calls):
            return [{"type": "text", "text": "Done."}]
        tool, arguments = calls[len(seen)]
        call_id = f"toolu_fake_{len(seen)}"
        return [{"type": "tool_use", "id": call_id, "name": PREFIX + tool, "input": arguments(seen)}]

    allowed = ",".join(sorted({PREFIX + tool for tool, _ in calls}))
    with FakeAnthropic(answer) as fake:
        args = [str(CLAUDE), "-p", "Work on this project.", "--mcp-config", str(config)]
        args += ["--strict-mcp-config", "--tools", "", "--allowedTools", allowed]
        args += ["--no-session-persistence", "--output-format", "stream-json", "--verbose"]
        code, out, err = await _run_host(args, ws, _host_env(home, fake.base_url))
        requests = fake.messages_requests()
        assert not fake.errors, fake.errors
    assert code == 0, (out, err)
    events = [json.loads(line) for line in out.splitlines() if line.strip()]
    (init,) = [e for e in events if e.get("type") == "system" and e.get("subtype") == "init"]
    assert [(s["name"], s["status"]) for s in init["mcp_servers"]] == [("steerable", "connected")], err
    (summary,) = [e for e in events if e.get("type") == "result"]
    assert (summary["is_error"], summary["result"]) == (False, "Done."), summary
    assert len(requests) == len(calls) + 1, [len(r.get("messages", [])) for r in requests]
    results = []
    for index, request in enumerate(requests[1:]):
        (result,) = [r for r in _tool_results(request) if r.get("tool_use_id") == f"toolu_fake_{index}"]
        assert result.get("is_error") is not True, result
        results.append(result)
    return results


def _text_file(size: int, marker: str, line: str = "abcdefghij" * 6) -> str:
    """``size`` characters of numbered lines (``line`` after the number) with ``marker`` on the middle one."""
    lines = [f"line {i:06d} {line}\n" for i in range(size // (len(line) + 13) + 1)]
    middle = len(lines) // 2
    lines[middle] = marker + lines[middle][len(marker) :]
    return "".join(lines)[:size]


def _js_length(text: str) -> int:
    """A string's length as Claude Code (JavaScript) counts it: UTF-16 code units."""
    return len(text.encode("utf-16-le")) // 2


# As JSON, a quote, backslash, tab or newline takes 2 characters, another control character 6 and
# an emoji 2 UTF-16 units: a 40,000-character clip of these took 80,000 or more, and reached the
# model as a 2 KB preview, until the bound counted the content as the JSON holds it.
_ESCAPES = '"q\\\\"\t\t\t\x01\x1b[0m \\"' * 3
_EMOJI = "\U0001f600\U0001f680 " * 20


@pytest.mark.parametrize(
    ("size", "line"),
    [
        pytest.param(80_000, "abcdefghij" * 6, id="80KB"),
        pytest.param(300 * 1024, "abcdefghij" * 6, id="300KB"),
        pytest.param(300 * 1024, _ESCAPES, id="300KB-escapes"),
        pytest.param(300 * 1024, _EMOJI, id="300KB-emoji"),
    ],
)
async def test_a_long_read_reaches_the_model_whole_with_its_version(
    tmp_path: Path, size: int, line: str
) -> None:
    """``steerable mcp`` clips ``read_file`` at ``HOST_READ_MAX_CHARS``: the result stays under the
    50,000 characters Claude Code hands its model whole (no 2 KB preview, no schema-only notice),
    so the model sees the version, that the read was partial, and the head and tail of the file."""
    marker = "MIDDLE-OF-THE-FILE"
    ws = tmp_path / "ws"
    ws.mkdir()
    text = _text_file(size, marker, line)
    (ws / "big.txt").write_text(text, encoding="utf-8", newline="")
    version = hashlib.sha256((ws / "big.txt").read_bytes()).hexdigest()  # as steerable computes it

    (result,) = await _claude_session(tmp_path, ws, [("read_file", lambda seen: {"path": "big.txt"})])
    shown = _text_of(result)
    assert _js_length(shown) < PERSIST_CHARS and "persisted-output" not in shown, shown[:3000]
    data = json.loads(shown)["data"]  # the whole result: it parses
    assert (data["path"], data["version"], data["partial"]) == ("big.txt", version, True)
    assert data["totalLines"] == text.count("\n") + (not text.endswith("\n"))
    assert marker not in data["content"]  # the middle is clipped, the ends are kept
    assert data["content"].startswith(text[:1000]) and data["content"].endswith(text[-1000:])
    # the content as the JSON holds it: within the bound, to whole lines, and the marker line
    assert HOST_READ_MAX_CHARS - 1000 < _js_length(json.dumps(data["content"], ensure_ascii=False)) - 2
    assert _js_length(json.dumps(data["content"], ensure_ascii=False)) - 2 < HOST_READ_MAX_CHARS + 200
    assert list(data).index("version") < list(data).index("content")  # a cut result keeps it too


async def test_a_created_file_comes_back_as_a_short_summary(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    # 250 lines of 40 bytes: 10,000 bytes, with a tab and a non-ASCII letter on each line.
    content = "".join(f"line {i:04d}: é\t{'x' * 25}\n" for i in range(250))
    assert len(content.encode("utf-8")) == 10_000

    write = ("write_file", lambda seen: {"path": "new_module.py", "content": content})
    (result,) = await _claude_session(tmp_path, ws, [write])
    text = _text_of(result)
    assert len(text) < 400, text  # the model wrote the content: it is not echoed back
    assert "line 0001" not in text
    body = json.loads(text)
    assert body["success"] is True
    assert body["data"]["path"] == "new_module.py"
    assert body["data"]["version"] == hashlib.sha256(content.encode("utf-8")).hexdigest()
    assert body["data"]["created"] is True
    assert (body["data"]["bytes"], body["data"]["lines"]) == (10_000, 250)
    assert (ws / "new_module.py").read_bytes() == content.encode("utf-8")


async def test_the_model_pages_through_a_big_directory(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    many = ws / "many"
    many.mkdir(parents=True)
    dirs = [f"d{i:03d}" for i in range(100)]
    files = [f"f{i:04d}.txt" for i in range(1400)]
    for name in dirs:
        (many / name).mkdir()
    for name in files:
        (many / name).touch()

    def next_page(seen: list[str]) -> dict[str, Any]:
        # The model follows the cursor the first page showed it.
        return {"path": "many", "offset": json.loads(seen[0])["data"]["nextOffset"], "limit": 800}

    first_page = ("list_dir", lambda seen: {"path": "many", "offset": 0, "limit": 800})
    pages = await _claude_session(tmp_path, ws, [first_page, ("list_dir", next_page)])
    texts = [_text_of(page) for page in pages]
    assert all(len(text) < PERSIST_CHARS for text in texts)  # each page reaches the model whole
    first, second = (json.loads(text)["data"] for text in texts)
    assert (first["total"], first["truncated"], first["nextOffset"]) == (1500, True, 800)
    assert (second["total"], second["truncated"]) == (1500, False)
    assert "nextOffset" not in second
    entries = first["entries"] + second["entries"]
    names = [entry["name"] for entry in entries]
    assert names == dirs + files  # every entry exactly once: directories first, each group by name
    assert [entry["type"] for entry in entries] == ["dir"] * 100 + ["file"] * 1400
