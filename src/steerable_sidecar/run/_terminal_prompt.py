"""An interactive terminal handler for ``ask_user``, built on ``questionary``.

Spec: ``ask_user`` (structured user questions): a CLI embedder injects its own handler through
:func:`steerable_agent_runtime.ask_user.make_ask_user_tool`. ``questionary`` (and prompt_toolkit)
take about 80 ms to import, so they are imported on the first question, never when the CLI starts.

Prompts, the intro and the outro go to standard error by default: standard output may carry JSON.
Control characters in model-written text (intro, outro, questions, options) are shown as ``?``,
so the model cannot send escape sequences to the user's terminal.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from typing import Any

from steerable_agent_runtime.ask_user import AskUserHandler, AskUserQuestion, AskUserQuestionsPayload

__all__ = ["terminal_ask_user_handler"]

# C0 and C1 control characters except tab and newline: ESC, CR, BEL... could drive the terminal
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _shown(text: str) -> str:
    """``text`` safe to print on a terminal: control characters become ``?``."""
    return _CONTROL.sub("?", text)


def terminal_ask_user_handler(*, input: Any = None, output: Any = None) -> AskUserHandler:
    """Return an ``ask_user`` handler that asks the questions on the terminal, one after another.

    Each question kind gets its ``questionary`` prompt (docs/ask-user.md, The terminal handler);
    the prompts run on the event loop (``questionary``'s async API), so nothing else is blocked
    while the user thinks.

    Args:
        input: A prompt_toolkit ``Input`` to read keys from; ``None`` reads the terminal (stdin).
            Tests pass ``prompt_toolkit.input.create_pipe_input()``.
        output: A prompt_toolkit ``Output`` to draw on; ``None`` draws on standard error.

    Returns:
        An :data:`~steerable_agent_runtime.ask_user.AskUserHandler`: it returns
        ``{questionId: answer}`` (a ``str``, or a ``list[str]`` for ``multiSelect``), or ``None``
        when the user pressed Ctrl-C or the input ended (Ctrl-D, EOF), which ``ask_user`` records
        as a cancel.
    """

    async def ask(payload: AskUserQuestionsPayload) -> Mapping[str, Any] | None:
        from prompt_toolkit import print_formatted_text
        from prompt_toolkit.output import create_output

        out = output if output is not None else create_output(stdout=sys.stderr)
        answers: dict[str, Any] = {}
        intro, outro = payload.get("intro"), payload.get("outro")
        try:
            if intro:
                print_formatted_text(_shown(intro), output=out)
            for question in payload["questions"]:
                answers[question["id"]] = await _ask_one(question, input, out)
            if outro:
                print_formatted_text(_shown(outro), output=out)
        except (KeyboardInterrupt, EOFError):
            return None
        return answers

    return ask


async def _ask_one(question: AskUserQuestion, input: Any, output: Any) -> Any:
    """Ask one question; raises ``KeyboardInterrupt`` (Ctrl-C) or ``EOFError`` (input ended)."""
    import questionary

    options = question.get("options") or []
    kind = question.get("type")
    message = _shown(question["text"])
    io: dict[str, Any] = {"input": input, "output": output}
    # the answer is the option as given; only its display is made safe
    choices = [questionary.Choice(title=_shown(option), value=option) for option in options]
    if kind == "password":
        prompt = questionary.password(message, **io)
    elif kind == "select" and choices and question.get("multiSelect"):
        prompt = questionary.checkbox(message, choices=choices, **io)
    elif kind == "select" and choices:
        prompt = questionary.select(message, choices=choices, **io)
    else:  # text, or a select nobody normalised that has nothing to pick from
        prompt = questionary.text(message, **io)
    # unsafe_: ask_async would catch Ctrl-C itself and print a notice to stdout
    return await prompt.unsafe_ask_async(patch_stdout=False)
