"""``steerable acp``'s model selection and token usage, for eval runners (docs/acp.md, "Models", "Token usage").

The model is offered as the ACP session config option ``model`` (category ``model``): advertised
on ``session/new`` and ``session/load``, changed with ``session/set_config_option`` for that
session's later prompts; each ``session/prompt`` answer carries the turn's ``usage``. The model is
the loopback OpenAI-compatible server (``fake_openai``): every test checks what it was sent (the
request's ``model``) or what it reported (its usage chunks) against what the editor was told.
Driven by the official SDK's client in this process (``in_process_acp``), on the raw wire for the
exact JSON, and once as the real command with ``--models``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError, text_block
from acp.client.connection import ClientSideConnection
from acp_client import AGENT_COMMAND, EditorClient, Served, in_process_acp, spawn_acp, start
from pydantic import SecretStr

from fake_openai import FakeOpenAI
from steerable_sidecar.acp._agent import AcpOptions
from steerable_sidecar.providers._openai import LLMConfig, OpenAICompatibleProvider

pytestmark = pytest.mark.slow

READ = {"id": "r1", "name": "read_file", "arguments": '{"path": "notes.txt"}'}


@pytest.fixture
def state(tmp_path: Path) -> Path:
    path = tmp_path / "state"
    path.mkdir()
    return path


@contextlib.asynccontextmanager
async def _agent(
    fake: FakeOpenAI, state: Path, client: EditorClient | None = None, **options: Any
) -> AsyncIterator[ClientSideConnection]:
    """``steerable acp`` in this process, its model ``gpt-4o`` on the loopback server, initialized."""
    config = LLMConfig(provider="openai", model="gpt-4o", base_url=fake.base_url, api_key=SecretStr("sk-t"))
    settings = AcpOptions(state_dir=state, plugins=False, web_tools=False, **options)
    async with (
        OpenAICompatibleProvider(config) as llm,
        in_process_acp(client or EditorClient(), settings, llm) as conn,
    ):
        await start(conn)
        yield conn


async def _prompt(conn: ClientSideConnection, session_id: str, text: str = "go") -> Any:
    return await conn.prompt(session_id=session_id, prompt=[text_block(text)])


def _models_sent(fake: FakeOpenAI) -> list[str]:
    return [request.body["model"] for request in fake.requests]


def _model_options(options: Any) -> list[dict[str, Any]]:
    """The ``model`` config option of an answer's ``configOptions`` (the ``mode`` one is tested apart)."""
    dumped = [o.model_dump(by_alias=True, exclude_none=True) for o in options or []]
    return [o for o in dumped if o["id"] == "model"]


def _option(**current: Any) -> dict[str, Any]:
    """The ``model`` config option as the wire carries it, ``currentValue`` and ``options`` given."""
    return {
        "id": "model",
        "name": "Model",
        "description": "The model this session's prompts are sent to.",
        "category": "model",
        "type": "select",
        **current,
    }


DEFAULT_CHOICE = {
    "value": "gpt-4o",
    "name": "gpt-4o",
    "description": "the configured model (STEERABLE_MODEL)",
}


def _choice(model: str) -> dict[str, str]:
    return {"value": model, "name": model}


def _sse(*, text: str = "", call: dict[str, str] | None = None, usage: Any = None) -> dict[str, Any]:
    """A hand-written streamed answer (``raw_sse``): text or one tool call, then a usage chunk if given."""
    base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0, "model": "gpt-4o"}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    items: list[Any] = [chunk({"role": "assistant", "content": text})]
    if call is not None:
        function = {"name": call["name"], "arguments": call["arguments"]}
        items.append(
            chunk({"tool_calls": [{"index": 0, "id": call["id"], "type": "function", "function": function}]})
        )
    items.append(chunk({}, "tool_calls" if call is not None else "stop"))
    if usage is not None:
        items.append({**base, "choices": [], "usage": usage})
    return {"raw_sse": [*items, "data: [DONE]", ""]}


# -- the model ------------------------------------------------------------------------------------


async def test_session_new_and_load_advertise_the_model_option(
    workspace: Path, state: Path, fake_openai: FakeOpenAI
) -> None:
    """The configured model first and selected, then ``--models``; a load shows the session's pick."""
    fake_openai.script(["hello"])
    async with _agent(fake_openai, state, models=("gpt-4.1", "gpt-4o")) as conn:
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        assert _model_options(session.config_options) == [
            _option(currentValue="gpt-4o", options=[DEFAULT_CHOICE, _choice("gpt-4.1")])
        ]
        await _prompt(conn, session.session_id)  # the record a load needs
        await conn.set_config_option(config_id="model", session_id=session.session_id, value="gpt-4.1")
        loaded = await conn.load_session(cwd=str(workspace), session_id=session.session_id, mcp_servers=[])
    assert _model_options(loaded.config_options) == [
        _option(currentValue="gpt-4.1", options=[DEFAULT_CHOICE, _choice("gpt-4.1")])
    ]


async def test_set_config_option_changes_the_model_of_that_sessions_next_requests(
    workspace: Path, state: Path, fake_openai: FakeOpenAI
) -> None:
    """An offered id, one with a ``provider/`` prefix, any other id (the server decides), the default
    again; another session keeps its own model."""
    fake_openai.script([{"tool_calls": [READ]}, "one", "two", "three", "four", "five"])
    async with _agent(fake_openai, state, models=("gpt-4.1",)) as conn:
        first = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        other = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        await _prompt(conn, first)  # two requests: the read, then the answer
        picked = await conn.set_config_option(config_id="model", session_id=first, value="openai/gpt-4.1")
        assert picked.config_options[0].current_value == "gpt-4.1"
        await _prompt(conn, first)
        await _prompt(conn, other)
        free = await conn.set_config_option(config_id="model", session_id=first, value="acme/coder-7b")
        option = free.config_options[0]
        assert (option.current_value, [c.value for c in option.options]) == (
            "acme/coder-7b",
            ["gpt-4o", "gpt-4.1", "acme/coder-7b"],
        )
        await _prompt(conn, first)
        back = await conn.set_config_option(config_id="model", session_id=first, value="openai/gpt-4o")
        assert back.config_options[0].current_value == "gpt-4o"
        await _prompt(conn, first)
    assert _models_sent(fake_openai) == ["gpt-4o", "gpt-4o", "gpt-4.1", "gpt-4o", "acme/coder-7b", "gpt-4o"]


async def test_a_closed_idle_session_keeps_its_model_and_takes_a_new_pick(
    workspace: Path, state: Path, fake_openai: FakeOpenAI
) -> None:
    """Past ``max_live_sessions`` a session is closed while idle; its pick holds when it boots again."""
    fake_openai.script(["one", "two", "three"])
    async with _agent(fake_openai, state, models=("gpt-4.1",), max_live_sessions=1) as conn:
        first = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        await conn.set_config_option(config_id="model", session_id=first, value="gpt-4.1")
        second = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id  # closes first
        await _prompt(conn, first)  # booted again, second closed
        await _prompt(conn, second)
        await conn.set_config_option(config_id="model", session_id=first, value="small-model")  # closed now
        await _prompt(conn, first)
    assert _models_sent(fake_openai) == ["gpt-4.1", "gpt-4o", "small-model"]


async def test_a_pick_during_a_turn_holds_from_the_next_prompt(
    workspace: Path, state: Path, fake_openai: FakeOpenAI
) -> None:
    """The turn running when the pick comes keeps its model for its remaining requests."""
    bash = {"id": "b1", "name": "bash", "arguments": '{"command": "true"}'}
    fake_openai.script([{"tool_calls": [bash]}, "ran it", "next"])
    hold = asyncio.Event()
    client = EditorClient(permissions=["allow_once"], hold_permission=hold)
    async with _agent(fake_openai, state, client) as conn:
        session = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        turn = asyncio.ensure_future(_prompt(conn, session))
        await client.wait_for(lambda c: bool(c.asked))  # the turn waits on the bash consent
        await conn.set_config_option(config_id="model", session_id=session, value="gpt-4.1")
        hold.set()
        assert (await turn).stop_reason == "end_turn"
        await _prompt(conn, session)
    assert _models_sent(fake_openai) == ["gpt-4o", "gpt-4o", "gpt-4.1"]


@pytest.mark.parametrize(
    ("config_id", "value", "data"),
    [
        ("model", "", {"configId": "model", "value": "", "reason": "the model id is empty"}),
        ("model", "   ", {"configId": "model", "value": "", "reason": "the model id is empty"}),
        (
            "model",
            "m" * 300,
            {
                "configId": "model",
                "value": "m" * 256 + "...",
                "reason": "the model id is longer than 256 characters (300)",
            },
        ),
        (
            "model",
            "gpt 4o",
            {
                "configId": "model",
                "value": "gpt 4o",
                "reason": "the model id holds whitespace or control characters",
            },
        ),
        (
            "model",
            "gpt\x1b4o",
            {
                "configId": "model",
                "value": "gpt\x1b4o",
                "reason": "the model id holds whitespace or control characters",
            },
        ),
        ("model", True, {"configId": "model", "reason": "the model option takes a model id (a string)"}),
        (
            "effort",
            "high",
            {"configId": "effort", "reason": "unknown config option: the session has 'model' and 'mode'"},
        ),
    ],
)
async def test_a_bad_model_id_or_option_is_invalid_params_and_changes_nothing(
    workspace: Path,
    state: Path,
    fake_openai: FakeOpenAI,
    config_id: str,
    value: str | bool,
    data: dict[str, Any],
) -> None:
    fake_openai.script(["fine"])
    async with _agent(fake_openai, state) as conn:
        session = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        with pytest.raises(RequestError) as refused:
            await conn.set_config_option(config_id=config_id, session_id=session, value=value)
        await _prompt(conn, session)
    assert (refused.value.code, str(refused.value), refused.value.data) == (-32602, "Invalid params", data)
    assert _models_sent(fake_openai) == ["gpt-4o"]


async def test_a_model_pick_for_an_unknown_session_is_resource_not_found(
    state: Path, fake_openai: FakeOpenAI
) -> None:
    async with _agent(fake_openai, state) as conn:
        with pytest.raises(RequestError) as unknown:
            await conn.set_config_option(config_id="model", session_id="nope", value="gpt-4o")
    assert (unknown.value.code, unknown.value.data) == (-32002, {"uri": "nope"})


# -- token usage ----------------------------------------------------------------------------------


async def test_a_turn_with_a_tool_call_answers_the_usage_of_both_requests(
    workspace: Path, state: Path, fake_openai: FakeOpenAI
) -> None:
    """Two model requests (the read, then the answer): their usage chunks summed into ``usage``."""
    fake_openai.script(
        [
            {"tool_calls": [READ], "usage": {"prompt_tokens": 1200, "completion_tokens": 31}},
            {"text": "alpha and beta", "usage": {"prompt_tokens": 1290, "completion_tokens": 12}},
        ]
    )
    async with _agent(fake_openai, state) as conn:
        session = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        answer = await _prompt(conn, session, "what do the notes say?")
    assert len(fake_openai.requests) == 2
    assert answer.stop_reason == "end_turn"
    assert answer.usage is not None
    assert answer.usage.model_dump(by_alias=True, exclude_none=True) == {
        "inputTokens": 2490,
        "outputTokens": 43,
        "totalTokens": 2533,
    }


async def test_cached_prompt_tokens_are_cached_read_tokens(
    workspace: Path, state: Path, fake_openai: FakeOpenAI
) -> None:
    """OpenAI's ``prompt_tokens_details.cached_tokens`` on one request, DeepSeek's field on the other."""
    fake_openai.script(
        [
            _sse(
                call=READ,
                usage={
                    "prompt_tokens": 800,
                    "completion_tokens": 20,
                    "prompt_tokens_details": {"cached_tokens": 512},
                },
            ),
            _sse(
                text="done",
                usage={"prompt_tokens": 900, "completion_tokens": 5, "prompt_cache_hit_tokens": 768},
            ),
        ]
    )
    async with _agent(fake_openai, state) as conn:
        session = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        answer = await _prompt(conn, session)
    assert answer.usage is not None
    assert answer.usage.model_dump(by_alias=True, exclude_none=True) == {
        "inputTokens": 1700,
        "outputTokens": 25,
        "totalTokens": 1725,
        "cachedReadTokens": 1280,
    }


async def _raw_turn(served: Served, workspace: Path) -> dict[str, Any]:
    """initialize, session/new and one prompt written as raw lines; the prompt's response as sent."""
    await _request(served, 0, "initialize", {"protocolVersion": 1})
    session = await _request(served, 1, "session/new", {"cwd": str(workspace), "mcpServers": []})
    prompt = [{"type": "text", "text": "go"}]
    return await _request(
        served, 2, "session/prompt", {"sessionId": session["result"]["sessionId"], "prompt": prompt}
    )


async def _request(served: Served, request_id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """Send one request line; its response line, as decoded (notifications and requests skipped)."""
    line = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    served.writer.write(json.dumps(line).encode() + b"\n")
    await served.writer.drain()
    while True:
        received = await asyncio.wait_for(served.reader.readline(), 30)
        assert received, "the agent closed its stdout"
        message: dict[str, Any] = json.loads(received)
        if message.get("id") == request_id and "method" not in message:
            return message


@pytest.mark.parametrize("reported", [True, False], ids=["reported", "none-reported"])
async def test_the_wire_carries_usage_only_when_the_server_reported_it(
    workspace: Path, state: Path, fake_openai: FakeOpenAI, reported: bool
) -> None:
    """The exact response: camelCase ``usage``, or no ``usage`` key at all (never zeros made up)."""
    usage = {"prompt_tokens": 60, "completion_tokens": 4, "total_tokens": 64} if reported else None
    fake_openai.script([_sse(call=READ, usage=usage), _sse(text="done", usage=usage)])
    config = LLMConfig(
        provider="openai", model="gpt-4o", base_url=fake_openai.base_url, api_key=SecretStr("k")
    )
    async with OpenAICompatibleProvider(config) as llm:
        served = await Served.start(AcpOptions(state_dir=state, plugins=False, web_tools=False), llm)
        try:
            answer = await _raw_turn(served, workspace)
        finally:
            await served.close()
    expected: dict[str, Any] = {"stopReason": "end_turn"}
    if reported:
        expected["usage"] = {"inputTokens": 120, "outputTokens": 8, "totalTokens": 128}
    assert answer == {"jsonrpc": "2.0", "id": 2, "result": expected}
    assert len(fake_openai.requests) == 2


# -- the real command -----------------------------------------------------------------------------


async def test_the_command_offers_steerable_model_and_its_models_option(
    workspace: Path, state: Path, fake_openai: FakeOpenAI, child_env: Callable[..., dict[str, str]]
) -> None:
    """``STEERABLE_MODEL`` is the default, ``--models`` adds choices, and so does the model Harbor's
    ACP runner asks for (``HARBOR_ACP_REQUESTED_MODEL``, its ``provider/`` part dropped, as Harbor
    matches it); a pick reaches the server."""
    fake_openai.script(
        [{"text": "one", "usage": {"prompt_tokens": 7, "completion_tokens": 2}}, "two", "three"]
    )
    env = child_env(
        STEERABLE_PROVIDER="openai",
        STEERABLE_MODEL="gpt-4o",
        STEERABLE_BASE_URL=fake_openai.base_url,
        STEERABLE_API_KEY="sk-test-acp",
        HARBOR_ACP_REQUESTED_MODEL="openrouter/openai/o4-mini",
    )
    args = ("--state-dir", str(state), "--models", " gpt-4.1 , ,o3")
    async with spawn_acp(EditorClient(), env, *args) as (conn, _):
        await start(conn)
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        option = (session.config_options or [])[0]
        first = await _prompt(conn, session.session_id)
        await conn.set_config_option(config_id="model", session_id=session.session_id, value="o3")
        await _prompt(conn, session.session_id)
        harbors = "openrouter/openai/o4-mini"
        await conn.set_config_option(config_id="model", session_id=session.session_id, value=harbors)
        await _prompt(conn, session.session_id)
    assert (option.current_value, [c.value for c in option.options]) == (
        "gpt-4o",
        ["gpt-4o", "gpt-4.1", "o3", "openai/o4-mini"],
    )
    assert first.usage is not None and first.usage.total_tokens == 9
    assert _models_sent(fake_openai) == ["gpt-4o", "o3", "openai/o4-mini"]


def test_a_bad_models_list_exits_2_before_serving(child_env: Callable[..., dict[str, str]]) -> None:
    proc = subprocess.run(
        [*AGENT_COMMAND, "--models", "gpt-4o,bad model"],
        env=child_env(STEERABLE_PROVIDER="scripted"),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2, proc.stderr
    assert "--models: the model id holds whitespace or control characters: 'bad model'" in proc.stderr
    assert proc.stdout == ""


def test_the_models_list_and_harbors_requested_model_are_read_as_ids() -> None:
    """``--models`` splits on commas; Harbor's requested model loses its LiteLLM provider part;
    a value that is no model id is never offered."""
    from steerable_sidecar.acp._command import HARBOR_MODEL_ENV, harbor_model, model_ids
    from steerable_sidecar.acp._model_ids import model_id_problem

    assert model_ids(" gpt-4.1, ,openai/gpt-4o ,") == ("gpt-4.1", "openai/gpt-4o")
    assert model_ids(None) == ()
    assert harbor_model({HARBOR_MODEL_ENV: "openai/gpt-4.1"}) == ("gpt-4.1",)
    assert harbor_model({HARBOR_MODEL_ENV: "openrouter/openai/gpt-4o"}) == ("openai/gpt-4o",)
    assert harbor_model({HARBOR_MODEL_ENV: "plain"}) == ("plain",)
    assert harbor_model({HARBOR_MODEL_ENV: "openai/bad model"}) == ()
    assert harbor_model({}) == ()
    assert model_id_problem("") == "the model id is empty"
    assert model_id_problem("x" * 300) == "the model id is longer than 256 characters (300)"
    assert model_id_problem("a\tb") == "the model id holds whitespace or control characters"
    assert model_id_problem("gpt-4o") is None
