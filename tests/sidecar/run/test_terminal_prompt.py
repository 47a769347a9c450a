"""The terminal ask_user handler, driven by key presses through a prompt_toolkit pipe (ASK-8)."""

import asyncio
import io
import subprocess
import sys

import pytest
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput
from prompt_toolkit.output.plain_text import PlainTextOutput

from steerable_agent_runtime import ToolCall, ToolRouter
from steerable_agent_runtime.ask_user import AskUserQuestion, AskUserQuestionsPayload, make_ask_user_tool
from steerable_sidecar.run._terminal_prompt import terminal_ask_user_handler

DOWN, ENTER, SPACE, CTRL_C = "\x1b[B", "\r", " ", "\x03"

SELECT: AskUserQuestion = {
    "id": "lang",
    "text": "Which language?",
    "type": "select",
    "options": ["Python", "Go", "Rust"],
}
CHECKBOX: AskUserQuestion = {**SELECT, "id": "langs", "multiSelect": True}
TEXT: AskUserQuestion = {"id": "name", "text": "Project name?", "type": "text"}
PASSWORD: AskUserQuestion = {"id": "token", "text": "API token?", "type": "password"}


async def answer(questions, keys, *, intro="", outro=None, output=None):
    """Run the handler on ``questions`` with ``keys`` already typed; bounded, never hangs."""
    payload: AskUserQuestionsPayload = {"intro": intro, "questions": questions}
    if outro is not None:
        payload["outro"] = outro
    with create_pipe_input() as pipe:
        pipe.send_text(keys)
        handler = terminal_ask_user_handler(input=pipe, output=output or DummyOutput())
        async with asyncio.timeout(5):
            return await handler(payload)


@pytest.mark.parametrize(
    ("question", "keys", "expected"),
    [
        (SELECT, ENTER, "Python"),
        (SELECT, DOWN + ENTER, "Go"),
        (SELECT, DOWN + DOWN + ENTER, "Rust"),
        (CHECKBOX, SPACE + DOWN + DOWN + SPACE + ENTER, ["Python", "Rust"]),
        (CHECKBOX, ENTER, []),
        (TEXT, "demo app" + ENTER, "demo app"),
        (PASSWORD, "s3cret" + ENTER, "s3cret"),
        # a select without options (an unnormalised payload) falls back to a text prompt
        ({"id": "q", "text": "Pick", "type": "select"}, "free" + ENTER, "free"),
    ],
)
async def test_each_question_type_is_answered_ask_8(question, keys, expected):
    assert await answer([question], keys) == {question["id"]: expected}


async def test_questions_are_asked_in_order_with_typeahead():
    keys = DOWN + ENTER + SPACE + ENTER + "demo" + ENTER + "pw" + ENTER
    answers = await answer([SELECT, CHECKBOX, TEXT, PASSWORD], keys)
    assert answers == {"lang": "Go", "langs": ["Python"], "name": "demo", "token": "pw"}


@pytest.mark.parametrize("keys", [CTRL_C, DOWN + ENTER + CTRL_C])
async def test_ctrl_c_cancels_all_questions(keys):
    assert await answer([SELECT, TEXT], keys) is None


async def test_end_of_input_cancels():
    with create_pipe_input() as pipe:
        pipe.close()
        handler = terminal_ask_user_handler(input=pipe, output=DummyOutput())
        async with asyncio.timeout(5):
            assert await handler({"intro": "", "questions": [TEXT]}) is None


async def test_intro_and_outro_go_to_the_output_not_stdout(capsys):
    buffer = io.StringIO()
    answers = await answer(
        [TEXT], "x" + ENTER, intro="Before we start", outro="All set", output=PlainTextOutput(buffer)
    )
    assert answers == {"name": "x"}
    text = buffer.getvalue()
    assert text.index("Before we start") < text.index("Project name?") < text.index("All set")
    assert capsys.readouterr().out == ""


async def test_default_output_is_stderr(capsys):
    with create_pipe_input() as pipe:
        pipe.send_text("x" + ENTER)
        handler = terminal_ask_user_handler(input=pipe)
        async with asyncio.timeout(5):
            assert await handler({"intro": "Hello there", "questions": [TEXT]}) == {"name": "x"}
    captured = capsys.readouterr()
    assert captured.out == ""  # stdout may carry JSON
    assert "Hello there" in captured.err


async def test_control_characters_in_model_text_are_neutralised():
    buffer = io.StringIO()
    question = {"id": "q", "text": "\x1b[2JPick", "type": "select", "options": ["\x1b]0;pwned\x07a", "b"]}
    answers = await answer([question], ENTER, intro="\x1b]0;title\x07hi\r", output=PlainTextOutput(buffer))
    assert answers == {"q": "\x1b]0;pwned\x07a"}  # the answer is the option as given
    shown = buffer.getvalue()
    assert "\x1b" not in shown and "\x07" not in shown
    assert "?]0;title?hi?" in shown and "?[2JPick" in shown


async def test_plugged_into_the_ask_user_tool_ask_8():
    with create_pipe_input() as pipe:
        pipe.send_text(DOWN + ENTER)
        router = ToolRouter()
        router.register(make_ask_user_tool(terminal_ask_user_handler(input=pipe, output=DummyOutput())))
        arguments = {
            "questions": [{"name": "lang", "message": "Which?", "type": "list", "choices": ["Py", "Go"]}]
        }
        async with asyncio.timeout(5):
            result = await router.dispatch(ToolCall(id="c1", name="ask_user", arguments=arguments))
    assert result.to_wire() == {"success": True, "data": {"answers": {"lang": "Go"}}}


def test_importing_the_module_does_not_import_questionary():
    code = (
        "import sys, steerable_sidecar.cli._main, steerable_sidecar.run._terminal_prompt\n"
        "assert 'questionary' not in sys.modules, 'questionary imported at startup'\n"
        "assert 'prompt_toolkit' not in sys.modules, 'prompt_toolkit imported at startup'\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert run.returncode == 0, run.stderr
