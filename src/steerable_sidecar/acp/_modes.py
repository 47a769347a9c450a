"""``steerable acp``'s session modes: the consent policy an editor's mode picker chooses.

Each mode is a named :class:`~steerable_agent_runtime.modes.ConsentPolicy` (docs/acp.md, "Modes"):
``read-only`` refuses every tool that writes, runs or calls out; ``ask`` asks before each of them
(``session/request_permission``); ``default`` is the spec's mode table (only ``local`` tools such
as ``bash`` ask); ``auto`` asks nothing. A session starts in the mode ``STEERABLE_CONSENT`` names
(``steerable acp --consent``), ``default`` when unset. The modes go out twice, for the clients of
either generation: as ``modes`` (``session/set_mode``) and as the ``mode`` session config option
(``category: "mode"``, ``session/set_config_option``); both change the same policy, for the
session's next call, a call of the running turn included.
"""

from __future__ import annotations

from typing import Final

from acp import RequestError
from acp.schema import SessionConfigOptionSelect, SessionConfigSelectOption, SessionMode, SessionModeState

from steerable_agent_runtime.modes import CONSENT_POLICIES, ConsentPolicy

__all__ = ["MODE_NAMES", "MODE_OPTION_ID", "chosen_mode", "mode_option", "mode_state", "offered_modes"]

MODE_OPTION_ID: Final = "mode"
"""The id (and category) of the mode's session config option."""

MODE_NAMES: Final = {"read-only": "Read only", "ask": "Ask", "default": "Default", "auto": "Auto"}
"""What an editor shows for each named policy."""


def offered_modes(start: ConsentPolicy) -> tuple[ConsentPolicy, ...]:
    """The modes a session may pick: the named policies, then ``start`` when it is not one."""
    named = tuple(CONSENT_POLICIES.values())
    return named if start in named else (*named, start)


def mode_state(current: ConsentPolicy, offered: tuple[ConsentPolicy, ...]) -> SessionModeState:
    """The ``modes`` of a ``session/new`` or ``session/load`` answer."""
    return SessionModeState(
        current_mode_id=current.name,
        available_modes=[
            SessionMode(
                id=policy.name, name=MODE_NAMES.get(policy.name, policy.name), description=policy.summary
            )
            for policy in offered
        ],
    )


def mode_option(current: ConsentPolicy, offered: tuple[ConsentPolicy, ...]) -> SessionConfigOptionSelect:
    """The ``mode`` config option: ``current`` selected among ``offered``."""
    return SessionConfigOptionSelect(
        id=MODE_OPTION_ID,
        name="Mode",
        description="Which tool calls run at once, which ask you first, and which are refused.",
        category="mode",
        type="select",
        current_value=current.name,
        options=[
            SessionConfigSelectOption(
                value=policy.name, name=MODE_NAMES.get(policy.name, policy.name), description=policy.summary
            )
            for policy in offered
        ],
    )


def chosen_mode(
    value: str | bool, offered: tuple[ConsentPolicy, ...], *, config_id: str | None = None
) -> ConsentPolicy:
    """The mode a ``session/set_mode``, a ``session/set_config_option`` or ``/mode`` picks.

    A mode's id in any case, blanks around it dropped (``AUTO``, `` read-only``): the command
    line's ``--consent`` takes them so too. The answer names the mode by its own id.

    Args:
        value: The id asked for.
        offered: The session's modes.
        config_id: The config option the value came for (``session/set_config_option``), which the
            error's data names as the ``model`` option's does; ``None``: ``session/set_mode``'s.

    Raises:
        RequestError: ``-32602`` for a value that names no offered mode; ``data.reason`` lists them,
            with ``data.modeId`` the value (``{"configId": ..., "value": ...}`` for a config option).
    """
    wanted = value.strip().lower() if isinstance(value, str) else None
    for policy in offered:
        if wanted == policy.name.lower():
            return policy
    shown = value[:64] if isinstance(value, str) else value
    reason = f"unknown mode: the session's modes are {', '.join(p.name for p in offered)}"
    data = {"modeId": shown} if config_id is None else {"configId": config_id, "value": shown}
    raise RequestError.invalid_params({**data, "reason": reason})
