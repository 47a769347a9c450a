"""``read_file``'s clip (FILE-10): its shape, and the bound a router is built with (``steerable mcp``'s,
for hosts, counts the content as its JSON takes it)."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pytest

from steerable_agent_runtime import ToolCall, UserError, version_of, workspace_tools_for_cwd
from steerable_agent_runtime.workspace import DEFAULT_MAX_OUTPUT_CHARS, HOST_READ_MAX_CHARS, Workspace
from steerable_agent_runtime.workspace._clip import clip_text, json_size

_MARKER = re.compile(
    r"\[\.\.\. (\d+) characters omitted (?:within line (\d+)|from (inside )?line (\d+)"
    r"(?: to (inside )?line (\d+))?) \(display clipped at (\d+) characters(?: of JSON)?\); "
    r"read with offset/limit to see them \.\.\.\]\n"
)


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


@pytest.mark.parametrize("bad", [0, -1, True, 1.5, 100_001, 99_999_999_999])
def test_a_bound_outside_1_to_100000_is_refused(tmp_path: Path, bad: object) -> None:
    """Past the spec's 100,000 a bound would turn the clip off (``--read-max-chars`` says the same)."""
    with pytest.raises(UserError, match="read_max_chars must be a number of characters from 1 to 100,000"):
        workspace_tools_for_cwd(tmp_path, bash=False, read_max_chars=bad)  # type: ignore[call-overload]


def _compact(value: object) -> int:
    """A value's compact JSON, in the UTF-16 units a JavaScript host (Claude Code) counts."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-16-le")) // 2


_ESCAPE_HEAVY = {  # each over 100,000 characters; as JSON, each character of most takes 2 or more
    "quotes-backslashes": "".join('"\\' * 30 + "\n" for _ in range(3000)),
    "tabs": "".join("\t" * 48 + "x\n" for _ in range(3000)),
    "control": "".join("\x01\x02\x1b[0m\x7f" * 10 + "\n" for _ in range(3000)),
    "emoji": "".join("\U0001f600" * 40 + "\n" for _ in range(3000)),
    "mixed": "".join(f'\t"k{n}": "v\\\\{n}\u00e9 \U0001f600 \x07",\r\n' for n in range(6000)),
}


@pytest.mark.parametrize("name", list(_ESCAPE_HEAVY))
async def test_a_host_bound_counts_what_the_content_takes_as_json(tmp_path: Path, name: str) -> None:
    """Escapes (``"``, ``\\``, tab, newline: 2; other control characters: 6) and an emoji (2 UTF-16
    units) count in full: the whole result stays under the 50,000 characters Claude Code shows
    whole, where a bound on the characters alone let it reach 80,000 to 139,000."""
    text = _ESCAPE_HEAVY[name]
    (tmp_path / "f.txt").write_text(text, newline="")
    router = workspace_tools_for_cwd(tmp_path, bash=False, read_max_chars=HOST_READ_MAX_CHARS)
    result = await router.dispatch(ToolCall(id="r", name="read_file", arguments={"path": "f.txt"}))
    assert result.success and result.data is not None
    content = result.data["content"]
    assert result.data["partial"] is True and result.data["version"] == version_of(text.encode())
    head, marker, tail = _pieces(content, text.replace("\r\n", "\n"))
    assert marker.group(7) == str(HOST_READ_MAX_CHARS) and "characters of JSON" in marker.group(0)
    assert HOST_READ_MAX_CHARS - 1000 < json_size(head + tail) <= HOST_READ_MAX_CHARS  # whole lines
    assert _compact(result.to_wire()) < 41_000


def test_json_size_is_what_a_javascript_host_measures() -> None:
    rng = random.Random(7)
    alphabet = 'ab "\\\t\n\r\x00\x01\x1f\x7f\u00e9\u2028\uffff\U0001f600\U0010ffff'
    for _ in range(300):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(40)))
        cut = rng.randrange(len(text) + 1)
        assert json_size(text) == _compact(text) - 2 == json_size(text[:cut]) + json_size(text[cut:])


def _pieces(clipped: str, text: str) -> tuple[str, re.Match[str], str]:
    (marker,) = _MARKER.finditer(clipped)
    head, tail = clipped[: marker.start()], clipped[marker.end() :]
    head_inside = marker.group(2) is not None or marker.group(3) is not None
    if head_inside:  # a line cut inside ends the head, and the marker takes a line of its own
        assert head.endswith("\n")
        head = head[:-1]
    assert text.startswith(head) and text.endswith(tail)
    assert head_inside == (head != "" and not head.endswith("\n"))
    assert int(marker.group(1)) == len(text) - len(head) - len(tail)
    return head, marker, tail


def test_the_clip_keeps_its_budget_its_ends_and_says_the_omitted_lines() -> None:
    """Random texts and budgets, in both units: head and tail within the budget, the marker's count
    and line numbers right (1-based, from the ranged read's first line)."""
    rng = random.Random(31)
    for _ in range(3000):
        lines = [
            "".join(rng.choice('xy"\t\U0001f600') for _ in range(rng.choice([0, 3, 30, 300])))
            for _ in range(9)
        ]
        text = "\n".join(lines) + rng.choice(["", "\n"])
        budget = rng.randrange(1, 400)
        first_line = rng.randrange(1, 50)
        size: Any = rng.choice([len, json_size])
        last_line = rng.choice([None, first_line + text.count("\n") - text.endswith("\n")])
        clipped = clip_text(text, budget, first_line=first_line, last_line=last_line, size=size)
        if clipped is None:
            assert size(text) <= budget
            continue
        head, marker, tail = _pieces(clipped, text)
        assert size(head) + size(tail) <= budget < size(text)
        first = first_line + head.count("\n")
        last = first_line + text.count("\n", 0, len(text) - len(tail) - 1)
        assert first >= 1 and last >= first
        if marker.group(2) is not None:
            assert int(marker.group(2)) == first == last
        else:
            assert int(marker.group(4)) == first
            assert int(marker.group(6) or first) == last


def test_an_ordinary_file_keeps_whole_lines_and_names_the_lines_left_out() -> None:
    text = "".join(f"line {n:06d} {'x' * 40}\n" for n in range(1, 4001))  # 53 characters a line
    clipped = clip_text(text, 100_000)
    assert clipped is not None
    head, marker, tail = _pieces(clipped, text)
    assert head.endswith("\n") and tail.startswith("line ")
    assert (len(head), len(tail)) == (1415 * 53, 471 * 53)  # 75,000 and 25,000, to whole lines
    assert marker.group(0) == (
        "[... 112042 characters omitted from line 1416 to line 3529 (display clipped at 100000 "
        "characters); read with offset/limit to see them ...]\n"
    )


async def test_a_long_line_is_cut_inside_so_the_clip_shows_its_budget(tmp_path: Path) -> None:
    """A line too long for the head (or the tail) is cut inside: before, ``HEAD`` + a 100,000-character
    line + ``TAILLINE`` read as 138 characters."""
    ws = Workspace(tmp_path, cross_process_lock=False)
    (tmp_path / "one.txt").write_text("HEAD\n" + "a" * 100_000 + "\nTAILLINE\n")
    data = await ws.read_file("one.txt")
    assert data["partial"] is True and (data["startLine"], data["endLine"], data["totalLines"]) == (1, 3, 3)
    assert data["content"] == (
        "HEAD\n" + "a" * 74_995 + "\n[... 15 characters omitted within line 2 (display clipped at 100000 "
        "characters); read with offset/limit to see them ...]\n" + "a" * 24_990 + "\nTAILLINE\n"
    )
    (tmp_path / "single.txt").write_text("b" * 150_001)
    data = await ws.read_file("single.txt")
    assert data["content"] == (
        "b" * 75_000 + "\n[... 50001 characters omitted within line 1 (display clipped at 100000 "
        "characters); read with offset/limit to see them ...]\n" + "b" * 25_000
    )
    (tmp_path / "end.txt").write_text("".join(f"{n:05d}\n" for n in range(1, 20_001)) + "c" * 100_000)
    data = await ws.read_file("end.txt")
    head, marker, tail = _pieces(data["content"], (tmp_path / "end.txt").read_text())
    assert len(head) == 75_000 and tail == "c" * 25_000  # whole lines, then the last line's end
    assert marker.group(0).startswith("[... 120000 characters omitted from line 12501 to inside line 20001 (")


async def test_a_clipped_ranged_read_numbers_the_files_lines(tmp_path: Path) -> None:
    ws = Workspace(tmp_path, cross_process_lock=False, max_output_chars=1_000)
    text = "".join(f"{n:05d}\n" for n in range(1, 1001))  # line n holds n
    (tmp_path / "n.txt").write_text(text)
    data = await ws.read_file("n.txt", offset=501, limit=300)
    head, marker, tail = _pieces(data["content"], "".join(f"{n:05d}\n" for n in range(501, 801)))
    assert head.splitlines()[-1] == "00625" and tail.splitlines()[0] == "00760"
    assert (marker.group(4), marker.group(6)) == ("626", "759")  # the lines offset/limit would show
    assert data["partial"] is True and (data["startLine"], data["endLine"]) == (501, 800)
