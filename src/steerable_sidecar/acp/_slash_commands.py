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

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from acp.schema import AvailableCommand, AvailableCommandInput, UnstructuredCommandInput

from steerable_agent_runtime.modes import ConsentPolicy, ToolMode, policy_mode
from steerable_agent_runtime.tools import ToolRouter

from ..web_tools import WEB_FETCH_TOOL_NAME, FetchConsent

if TYPE_CHECKING:
    from ._session import AcpSession

__all__ = [
    "COMMANDS",
    "SlashCommand",
    "available_commands",
    "mode_text",
    "model_text",
    "slash_command",
    "tools_list",
    "tools_text",
]

COMMANDS: Final = {
    "mode": ("Show or switch the session's mode (read-only, ask, default, auto)", "mode name"),
    "model": ("Show or switch the model this session's prompts go to", "model id"),
    "tools": ("List the tools the model is offered and what the mode does with each", None),
}
"""``name -> (description, input hint or None)``."""


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
    name = name.lower()  # /MODE ask is /mode ask
    if name not in COMMANDS or "\n" in argument.strip():
        return None
    return SlashCommand(name, argument.strip())


def tools_list(
    router: ToolRouter,
    offered: Sequence[str],
    policy: ConsentPolicy,
    *,
    fetch: FetchConsent | None = None,
    always: Collection[str] = (),
) -> str:
    """``/tools``'s list: one line per offered tool (Markdown), with its mode and what a call gets.

    The mode is the one ``policy`` judges the tool by (an open-web read is ``external``:
    :func:`~steerable_agent_runtime.modes.policy_mode`), the verdict ``policy.verdict``'s, as the
    consent gate asks it before each call; a tool the user allowed always (``always``, where the
    policy remembers such answers) runs, and ``web_fetch`` asks first for a host ``fetch`` has
    not been allowed (SAFE-4).
    """
    lines = [f"Tools offered to the model ({policy.name} mode):", ""]
    for name in offered:
        tool = router.get(name)
        if tool is None:
            continue
        judged = policy_mode(tool.mode, name)
        mode = judged.value if judged is tool.mode else f"{judged.value}: reads the open web"
        lines.append(f"- `{name}` ({mode}): {_verdict(name, tool.mode, policy, fetch, always)}")
    return "\n".join(lines)


def _verdict(
    name: str, mode: ToolMode, policy: ConsentPolicy, fetch: FetchConsent | None, always: Collection[str]
) -> str:
    verdict = policy.verdict(mode, name)
    if verdict == "refuse":
        return "refused"
    if verdict == "ask":
        return "runs (allowed always in this session)" if name in always else "asks first"
    if fetch is not None and name == WEB_FETCH_TOOL_NAME:
        hosts = sorted(fetch.allowed)
        allowed = f": {', '.join(hosts)}" if hosts else ""
        return f"asks first for a new host; runs for a trusted one or one allowed in this session{allowed}"
    return "runs"


def tools_text(session: AcpSession) -> str:
    """``/tools``'s answer for ``session``: its offered tools, judged as its next call of each would be."""
    names = [tool["function"]["name"] for tool in session.booted.harness.offered()]
    always = session.always if session.policy.remembers else ()
    return tools_list(
        session.booted.router, names, session.policy, fetch=session.fetch_consent, always=always
    )


def mode_text(current: ConsentPolicy, offered: Sequence[ConsentPolicy]) -> str:
    """``/mode``'s answer: the session's mode, what it does, the others."""
    others = ", ".join(policy.name for policy in offered if policy != current)
    return f"Mode: {current.name}: {current.summary}\nOther modes: {others}."


def model_text(current: str, offered: Sequence[str]) -> str:
    """``/model``'s answer: the session's model and the offered ones (the current one included)."""
    return f"Model: {current}\nOffered: {', '.join(dict.fromkeys((*offered, current)))}."
