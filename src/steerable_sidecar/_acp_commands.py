"""``steerable acp``'s slash commands: what an editor offers after ``/`` in the prompt box.

Sent as an ``available_commands_update`` once a session is opened or loaded (docs/acp.md, "Slash
commands"). A prompt that starts with one of them is answered by the agent itself, without a
model call and without a record entry:

* ``/mode [NAME]``: show the session's mode and the others, or switch to ``NAME``;
* ``/model [ID]``: show the session's model and the offered ones, or switch to ``ID``;
* ``/tools``: list the tools the model is offered now, with their modes and what the session's
  mode does with each.

Any other text, ``/`` included, goes to the model as it is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from acp.schema import AvailableCommand, AvailableCommandInput, UnstructuredCommandInput

from steerable_agent_runtime.modes import ConsentPolicy
from steerable_agent_runtime.tools import ToolRouter

__all__ = [
    "COMMANDS",
    "SlashCommand",
    "available_commands",
    "mode_text",
    "model_text",
    "slash_command",
    "tools_text",
]

COMMANDS: Final = {
    "mode": ("Show or switch the session's mode (read-only, ask, default, auto)", "mode name"),
    "model": ("Show or switch the model this session's prompts go to", "model id"),
    "tools": ("List the tools the model is offered and what the mode does with each", None),
}
"""``name -> (description, input hint or None)``."""

_VERDICTS: Final = {"run": "runs", "ask": "asks first", "refuse": "refused"}


@dataclass(frozen=True, slots=True)
class SlashCommand:
    """A prompt that is one of :data:`COMMANDS`: its name and the rest of its text, stripped."""

    name: str
    argument: str


def available_commands() -> list[AvailableCommand]:
    """The ``available_commands_update``'s list."""
    return [
        AvailableCommand(
            name=name,
            description=description,
            input=AvailableCommandInput(root=UnstructuredCommandInput(hint=hint)) if hint else None,
        )
        for name, (description, hint) in COMMANDS.items()
    ]


def slash_command(text: str) -> SlashCommand | None:
    """The command ``text`` is (``/name`` first, then its argument), or ``None`` for a prompt."""
    stripped = text.strip()
    if not stripped.startswith("/"):
        return None
    name, _, argument = stripped[1:].partition(" ")
    if name not in COMMANDS or "\n" in argument.strip():
        return None
    return SlashCommand(name, argument.strip())


def tools_text(router: ToolRouter, offered: Sequence[str], policy: ConsentPolicy) -> str:
    """``/tools``'s answer: one line per offered tool (Markdown), with its mode and the verdict."""
    lines = [f"Tools offered to the model ({policy.name} mode):", ""]
    for name in offered:
        tool = router.get(name)
        if tool is None:
            continue
        lines.append(f"- `{name}` ({tool.mode.value}): {_VERDICTS[policy.verdict(tool.mode, name)]}")
    return "\n".join(lines)


def mode_text(current: ConsentPolicy, offered: Sequence[ConsentPolicy]) -> str:
    """``/mode``'s answer: the session's mode, what it does, the others."""
    others = ", ".join(policy.name for policy in offered if policy != current)
    return f"Mode: {current.name}: {current.summary}\nOther modes: {others}."


def model_text(current: str, offered: Sequence[str]) -> str:
    """``/model``'s answer: the session's model and the offered ones (the current one included)."""
    return f"Model: {current}\nOffered: {', '.join(dict.fromkeys((*offered, current)))}."
