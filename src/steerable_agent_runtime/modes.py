"""``ToolMode``, the harness classifier that decides whether a call needs consent.

Spec: ToolMode (harness classifier). The prefix table is the spec's, checked in order; the exact
names ``web_search`` and ``web_fetch`` are reads (exact names, not a ``web_`` prefix, so a future
write-flavoured ``web_*`` tool does not inherit the read posture).

A name that matches no rule gets :data:`DEFAULT_TOOL_MODE`, ``local``: the only mode that requires
consent. An unknown tool may touch the user's machine, so it is treated as if it did until its
author says otherwise with ``@tool(mode=...)``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from enum import StrEnum
from typing import Any, Final

__all__ = [
    "DEFAULT_TOOL_MODE",
    "MODE_CONSENT",
    "OPEN_WORLD_READS",
    "ToolMode",
    "decide_tool_mode",
    "mode_from_annotations",
    "requires_consent",
]


class ToolMode(StrEnum):
    """How risky a tool call is; the value is the wire string."""

    READ = "read"
    """Pure inspection, no side effects. Auto-run, no consent."""
    SAFE_WRITE = "safe_write"
    """Bounded mutation. Auto-run with a diff preview."""
    DESTRUCTIVE = "destructive"
    """Irreversible. Auto-run with an undo affordance."""
    LOCAL = "local"
    """Touches the user's machine. Requires consent."""
    EXTERNAL = "external"
    """Calls outside services. Auto-run, logged."""


DEFAULT_TOOL_MODE: Final = ToolMode.LOCAL
"""The mode of a name that matches no rule: the conservative, consent-requiring one."""

MODE_CONSENT: Final[dict[ToolMode, str]] = {
    ToolMode.READ: "auto-run, no consent",
    ToolMode.SAFE_WRITE: "auto-run with diff preview",
    ToolMode.DESTRUCTIVE: "auto-run, undo affordance",
    ToolMode.LOCAL: "requires consent",
    ToolMode.EXTERNAL: "auto-run, log",
}
"""The spec's default UI treatment per mode."""

OPEN_WORLD_READS: Final = frozenset({"web_search", "web_fetch"})
"""Reads of the open web, by exact name (spec: Web tools): ``read`` mode, and MCP's ``openWorldHint``."""

_EXACT: Final[dict[str, ToolMode]] = dict.fromkeys(OPEN_WORLD_READS, ToolMode.READ)
_RULES: Final[tuple[tuple[re.Pattern[str], ToolMode], ...]] = (
    (re.compile(r"^(?:get_|list_|read_|search_)"), ToolMode.READ),
    (re.compile(r"^(?:create_|update_|add_|set_)"), ToolMode.SAFE_WRITE),
    (re.compile(r"^(?:delete_|remove_|archive_|drop_)"), ToolMode.DESTRUCTIVE),
    (re.compile(r"^(?:local_|shell_|exec_)"), ToolMode.LOCAL),
)


def decide_tool_mode(name: str) -> ToolMode:
    """Classify a tool by name with the spec's pattern rules.

    Args:
        name: The registered tool name (case-sensitive, as the spec's regexes are).

    Returns:
        The matching :class:`ToolMode`; :data:`DEFAULT_TOOL_MODE` (``local``) when no rule matches.
    """
    exact = _EXACT.get(name)
    if exact is not None:
        return exact
    for pattern, mode in _RULES:
        if pattern.match(name):
            return mode
    return DEFAULT_TOOL_MODE


def mode_from_annotations(name: str, annotations: Mapping[str, Any] | None) -> ToolMode:
    """Classify an MCP (or host) tool from its MCP tool annotations, falling back to its name.

    The server's hints decide when they say something (MCP spec: ToolAnnotations; all hints are
    advisory), first match wins: ``readOnlyHint: true`` -> ``read``; ``destructiveHint`` and
    ``openWorldHint`` both true -> ``local``; ``destructiveHint: true`` -> ``destructive``;
    ``destructiveHint: false`` -> ``safe_write``; ``openWorldHint: true`` -> ``external``; else
    :func:`decide_tool_mode` on the name. Why: docs/runtime.md, "ToolMode".

    Args:
        name: The tool name.
        annotations: The tool's ``annotations`` object (camelCase keys), or ``None``.

    Returns:
        The tool's :class:`ToolMode`.
    """
    hints = annotations or {}
    if hints.get("readOnlyHint") is True:
        return ToolMode.READ
    destructive = hints.get("destructiveHint")
    if destructive is True:
        return ToolMode.LOCAL if hints.get("openWorldHint") is True else ToolMode.DESTRUCTIVE
    if destructive is False:
        return ToolMode.SAFE_WRITE
    if hints.get("openWorldHint") is True:
        return ToolMode.EXTERNAL
    return decide_tool_mode(name)


def requires_consent(mode: ToolMode | str) -> bool:
    """Tell whether the spec's default UI treatment for ``mode`` asks the user first.

    Args:
        mode: A :class:`ToolMode` or its wire string.

    Returns:
        ``True`` only for ``local``.
    """
    return ToolMode(mode) is ToolMode.LOCAL
