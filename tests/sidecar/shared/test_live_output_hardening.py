"""Live output made fit to show a host (docs/mcp.md and docs/acp.md, "Live output").

A running call's output chunks (``CallContext.send_output``) reach ``steerable mcp``'s progress
messages and ``steerable acp``'s ``tool_call_update``s: no piece of a known secret goes out even
when the secret is printed across two chunks, no terminal control sequence reaches the host (a
line's ``\\r`` overwrites are resolved the way a terminal shows them), and the ``[... N bytes not
shown]`` count stays every byte not shown. The unit tests pin the pieces; the slow ones drive a
real ``steerable mcp`` and a real ``steerable acp`` with real ``bash`` commands.
"""

from __future__ import annotations

import asyncio
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from acp import text_block
from acp.schema import EnvVariable, McpServerStdio, ToolCallProgress
from acp_client import EditorClient, in_process_acp, spawn_acp, start, write_script
from mcp import Client, StdioServerParameters

from steerable_agent_runtime.context import output_gap, output_tail, plain_output, unfinished_escape
from steerable_agent_runtime.llm import ScriptedProvider
from steerable_sidecar.acp._agent import AcpOptions
from steerable_sidecar.acp._updates import LiveOutput
from steerable_sidecar.shared._live_text import LiveText
from steerable_sidecar.shared._secrets import Redactor

SECRET = "sk-hardening-secret-9876543210"
CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # what a live view never shows (\t, \n aside)


def _pieces(secret: str, size: int = 8) -> list[str]:
    """Every run of ``size`` characters of ``secret``: none may be shown."""
    return [secret[i : i + size] for i in range(len(secret) - size + 1)]


def _leaks(texts: list[str], secret: str = SECRET) -> list[str]:
    return [text for text in texts if any(piece in text for piece in _pieces(secret))]


# -- the cleaning (steerable_agent_runtime.context) ---------------------------------------------


def test_plain_output_drops_escape_sequences_and_controls_and_resolves_overwrites() -> None:
    assert plain_output("\x1b[1;31mred\x1b[0m \x1b[2A\x1b[Kup\n") == "red up\n"  # colours, cursor moves
    link = "\x1b]8;;https://evil.test\x1b\\click\x1b]8;;\x1b\\\n"
    assert plain_output(link) == "click\n"  # an OSC 8 hyperlink: its text alone
    assert plain_output("a\x1b]52;c;aGVsbG8=\x07b\n") == "ab\n"  # an OSC 52 clipboard write
    assert plain_output("x\x00y\x07z\x08\x0c\x7f\x9b31m\tq\n") == "xyz\tq\n"  # C0, DEL, C1 (8-bit CSI)
    assert plain_output("\x1b(B\x1b7\x1b8done\n") == "done\n"  # other escape sequences
    assert plain_output("title \x1b]0;never ended\nnext\n") == "title \nnext\n"  # ends at the line's end
    assert plain_output("10%\r20%\r30%\r\nok\r\n") == "30%\nok\n"  # a progress bar; \r\n ends a line
    assert plain_output("old\rnew") == "new" and plain_output("half\r") == "half"
    assert plain_output("half\r", more=True) == "half\r"  # a stream's end: the next piece overwrites it
    assert plain_output("tabs\tand\nlines\n") == "tabs\tand\nlines\n"


def test_unfinished_escapes_and_gap_lines_are_found() -> None:
    assert unfinished_escape("ok \x1b[3") == 3 and unfinished_escape("ok \x1b") == 3
    assert unfinished_escape("ok \x1b]52;c;aGVs") == 3
    assert unfinished_escape("ok \x1b[31m") == len("ok \x1b[31m") and unfinished_escape("ok\n") == 3
    assert output_gap(output_tail("a\nb\nc\n", max_lines=1)) == (4, "c\n")
    assert output_gap("[... 12 bytes not shown] inline\n") == (0, "[... 12 bytes not shown] inline\n")


# -- one chunk after another (LiveText) ---------------------------------------------------------


def _fed(live: LiveText, *chunks: str) -> list[tuple[int, str]]:
    return [live.feed(chunk) for chunk in chunks]


def test_a_secret_split_across_chunks_is_held_back_then_redacted_whole() -> None:
    live = LiveText(Redactor.of([SECRET]))
    assert _fed(live, f"key={SECRET[:5]}", f"{SECRET[5:]} end\n") == [(0, "key="), (0, "[redacted] end\n")]
    assert _fed(live, "s", "k-hardening-se", f"{SECRET[15:]}\n") == [(0, ""), (0, ""), (0, "[redacted]\n")]
    assert _fed(live, "sk-hard", "ly any\n") == [(0, ""), (0, "sk-hardly any\n")]  # not the secret: shown
    password = "pa55/word+secret=xyz"
    encoded = quote(password, safe="")  # a percent-encoded copy (in a URL), cut inside an escape
    cut = encoded.index("%") + 2
    live = LiveText(Redactor.of([password]))
    assert _fed(live, f"u={encoded[:cut]}", f"{encoded[cut:]}\n") == [(0, "u="), (0, "[redacted]\n")]


def test_a_gap_drops_what_was_held_back_and_a_secrets_cut_end() -> None:
    live = LiveText(Redactor.of([SECRET]))
    assert live.feed(f"a\n{SECRET[:10]}") == (0, "a\n")
    held = len(SECRET[:10])  # dropped with the gap, counted in it
    assert live.feed(f"[... 100 bytes not shown]\n{SECRET[10:]} tail\n") == (100 + held, "[redacted] tail\n")
    assert live.feed("[... 7 bytes not shown]\n" + SECRET[-5:] + "\n") == (7, SECRET[-5:] + "\n")  # < 8: kept


def test_an_escape_sequence_split_across_chunks_is_dropped_whole() -> None:
    live = LiveText(Redactor())
    assert _fed(live, "a\x1b]52;c;aGVs", "bG8=\x07b\x1b[3", "1mred\n") == [(0, "a"), (0, "b"), (0, "red\n")]
    assert live.feed("x\x1b]" + "A" * 5000) == (0, "x")  # a long one is never kept whole
    assert live.feed("A" * 10 + "\x07y\n") == (0, "y\n")


# -- the MCP face: _CallProgress -----------------------------------------------------------------


async def _mcp_messages(chunks: list[str], secrets: list[str]) -> list[str]:
    """The progress messages ``steerable mcp`` sends for one call sending ``chunks``."""
    from steerable_sidecar.mcp._server import _CallProgress

    sent: list[str] = []

    async def notify(method: str, params: Any) -> None:
        sent.append(params["message"])

    progress = _CallProgress("t", "bash", notify, Redactor.of(secrets))
    for chunk in chunks:
        await progress.output(chunk)
    return sent


async def test_mcp_messages_never_hold_a_piece_of_a_secret_or_a_control_sequence() -> None:
    chunks = [f"key={SECRET[:9]}", f"{SECRET[9:]}\n\x1b[32mok\x1b[0m 50%\r", "99%\r\n"]
    assert await _mcp_messages(chunks, [SECRET]) == ["key=", "[redacted]\nok 50%", "99%\n"]
    gap = ["a\n", "[... 4000 bytes not shown]\n" + "x\n" * 60]  # the server's own clip adds to the count
    assert await _mcp_messages(gap, []) == ["a\n", "[... 4040 bytes not shown]\n" + "x\n" * 40]


# -- the ACP face: LiveOutput --------------------------------------------------------------------


async def _acp_shown(chunks: list[str], secrets: Sequence[str] = ()) -> str:
    """What the editor is shown last of a call that sent ``chunks`` (no fence)."""
    sent: list[ToolCallProgress] = []

    async def send(update: ToolCallProgress) -> None:
        sent.append(update)

    live = LiveOutput("c1", send, redact=Redactor.of(secrets), interval_s=0.0)
    for chunk in chunks:
        live.output(chunk)
        await asyncio.sleep(0)
    for _ in range(20):
        await asyncio.sleep(0)
    await live.close()
    assert sent
    content = sent[-1].content
    assert content is not None
    text: str = content[0].content.text
    return text.removeprefix("```\n").removesuffix("```")


async def test_acp_counts_every_byte_not_shown_once() -> None:
    lines = "x\n" * 50  # 100 bytes: 40 lines shown
    assert await _acp_shown([lines]) == "[... 20 bytes not shown]\n" + "x\n" * 40
    # a gap in the chunks (bash's own clip): what came before is no longer the output's end, and its
    # count adds to the gap's, not to the length of the gap's line
    gapped = [lines, "[... 1000 bytes not shown]\ny\n"]
    assert await _acp_shown(gapped) == "[... 1100 bytes not shown]\ny\n"
    many = [f"{n:05d}\n" for n in range(5000)]  # 30000 bytes, trimmed as they come
    shown = await _acp_shown(many)
    dropped, tail = output_gap(shown)
    assert tail == "".join(many[-40:]) and dropped + len(tail.encode()) == 30000


async def test_acp_live_output_is_redacted_across_chunks_and_plain() -> None:
    colours = "\x1b[31mred\x1b[0m \x1b]52;c;aGk=\x07ok\n"
    chunks = [f"key={SECRET[:12]}", f"{SECRET[12:]}\n", colours, "10%\r", "55%\r", "done\n"]
    shown = await _acp_shown(chunks, [SECRET])
    assert shown == "key=[redacted]\nred ok\ndone\n", shown  # the progress line as a terminal ends it


# -- real processes: steerable mcp and steerable acp running bash ------------------------------

SPLIT = f"printf 'key={SECRET[:13]}'; sleep 1.2; printf '{SECRET[13:]} end\\n'; sleep 0.8"
"""A secret printed slowly: bash sends the line's start after half a second, then its rest."""
FANCY = (
    r"printf '\033[1;31mred\033[0m \033]8;;https://evil.test\033\\link\033]8;;\033\\ "
    r"\033]52;c;aGVsbG8=\007clip\n10%%\r20%%\r\n'; sleep 1.5"
)
"""Colours, a hyperlink, a clipboard write and a progress bar's overwrites (bash's printf flushes
its first line on its own: the second comes in the next chunk, half a second later)."""


@pytest.mark.slow
async def test_steerable_mcp_sends_no_piece_of_a_secret_and_no_control_sequence(
    workspace: Path, tmp_path: Path, child_env: Callable[..., dict[str, str]]
) -> None:
    full = child_env(STEERABLE_API_KEY=SECRET, STEERABLE_STATE_DIR=str(tmp_path / "state"))
    env = {
        name: full[name]
        for name in ("PYTHONPATH", "STEERABLE_API_KEY", "STEERABLE_STATE_DIR", "STEERABLE_CONFIG")
    }
    params = StdioServerParameters(
        command=sys.executable,
        args=["-P", "-m", "steerable_sidecar", "mcp", "--workspace", str(workspace)],
        env=env,
    )
    messages: dict[str, list[str]] = {"split": [], "fancy": []}
    results: dict[str, Any] = {}
    async with asyncio.timeout(60), Client(params) as client:
        for name, command in (("split", SPLIT), ("fancy", FANCY)):

            async def seen(
                progress: float, total: float | None, message: str | None, name: str = name
            ) -> None:
                messages[name].append(message or "")

            result = await client.call_tool("bash", {"command": command}, progress_callback=seen)
            results[name] = result.structured_content
    split = [m for m in messages["split"] if " running for " not in m]
    assert _leaks(split) == [] and "[redacted] end\n" in split, split
    assert any(m.startswith("key=") for m in split[1:]), split  # its start went at once, the key held back
    fancy = [m for m in messages["fancy"] if " running for " not in m]
    assert "red link clip\n20%\n" in "".join(fancy) and all(not CONTROLS.search(m) for m in fancy), fancy
    assert "\x1b]52;c;aGVsbG8=\x07" in results["fancy"]["data"]["stdout"]


def _live_texts(client: EditorClient, call_id: str) -> list[str]:
    updates = client.call_updates(call_id)
    return [
        u.content[0].content.text
        for u in updates
        if u.session_update == "tool_call_update" and u.status is None
    ]


@pytest.mark.slow
async def test_steerable_acp_shows_no_piece_of_the_model_key_and_no_control_sequence(
    workspace: Path, tmp_path: Path, child_env: Callable[..., dict[str, str]]
) -> None:
    turns = [
        {"tool_calls": [{"id": "s1", "name": "bash", "arguments": {"command": SPLIT}}]},
        {"tool_calls": [{"id": "f1", "name": "bash", "arguments": {"command": FANCY}}]},
        "Ran them.",
    ]
    script = write_script(tmp_path / "turns.json", turns)
    env = child_env(STEERABLE_PROVIDER="scripted", STEERABLE_SCRIPT=str(script), STEERABLE_API_KEY=SECRET)
    client = EditorClient(permissions=["allow_always"])
    async with spawn_acp(
        client, env, "--state-dir", str(tmp_path / "state"), stderr=tmp_path / "err.log"
    ) as (
        conn,
        _,
    ):
        await start(conn)
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        answer = await asyncio.wait_for(
            conn.prompt(session_id=session.session_id, prompt=[text_block("run")]), 60
        )
    assert answer.stop_reason == "end_turn"
    split = _live_texts(client, "s1")
    assert split and _leaks(split) == [], split
    assert any("key=[redacted] end\n" in shown for shown in split), split
    fancy = _live_texts(client, "f1")
    assert any("red link clip\n20%\n" in shown for shown in fancy), fancy
    assert all(not CONTROLS.search(shown) for shown in fancy), fancy
    assert client.call_updates("s1")[-1].raw_output["data"]["stdout"] == f"key={SECRET} end\n"  # unchanged


MCP_SERVER = str(Path(__file__).resolve().parents[2] / "fixtures" / "mcp_tool_server.py")
SERVER_TOKEN = "mcp-server-env-credential-4242"


@pytest.mark.slow
async def test_steerable_acp_hides_its_mcp_servers_credentials_too(workspace: Path, tmp_path: Path) -> None:
    command = f"printf '{SERVER_TOKEN[:11]}'; sleep 1.2; printf '{SERVER_TOKEN[11:]}\\n'; sleep 0.8"
    turns = [{"tool_calls": [{"id": "t1", "name": "bash", "arguments": {"command": command}}]}, "Done."]
    server = McpServerStdio(
        name="fixture",
        command=sys.executable,
        args=[MCP_SERVER],
        env=[EnvVariable(name="X", value=SERVER_TOKEN)],
    )
    options = AcpOptions(state_dir=tmp_path / "state", plugins=False, web_tools=False)
    client = EditorClient(permissions=["allow_once"])
    async with in_process_acp(client, options, ScriptedProvider(turns)) as conn:
        await start(conn)
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[server])
        answer = await conn.prompt(session_id=session.session_id, prompt=[text_block("run")])
    assert answer.stop_reason == "end_turn"
    shown = _live_texts(client, "t1")
    assert shown and _leaks(shown, SERVER_TOKEN) == [], shown
    assert any("[redacted]\n" in text for text in shown), shown
