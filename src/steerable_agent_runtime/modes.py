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
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final, Literal

__all__ = [
    "CONSENT_ENV",
    "CONSENT_POLICIES",
    "DEFAULT_CONSENT_POLICY",
    "DEFAULT_TOOL_MODE",
    "MODE_CONSENT",
    "MODE_META_KEY",
    "OPEN_WORLD_READS",
    "ConsentPolicy",
    "ConsentVerdict",
    "ToolMode",
    "consent_policy",
    "decide_tool_mode",
    "mode_from_annotations",
    "policy_mode",
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

MODE_META_KEY: Final = "steerable/mode"
"""The ``_meta`` key of a ``tools/list`` entry under which ``steerable mcp`` states a tool's mode:
a steerable fronting it takes ``local`` from there even when the hints read otherwise."""

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


ConsentVerdict = Literal["run", "ask", "refuse"]
"""What a :class:`ConsentPolicy` says about one call: run it, ask the user first, or refuse it."""

CONSENT_ENV: Final = "STEERABLE_CONSENT"
"""The variable naming the consent policy of the interactive surfaces (``steerable acp``'s first
mode, the sidecar's chats): a policy's name or a comma-separated list of modes that ask."""


@dataclass(frozen=True, slots=True)
class ConsentPolicy:
    """Which tool modes run, which ask the user first, which are refused (docs/runtime.md, Consent).

    The spec's mode table is :data:`DEFAULT_CONSENT_POLICY` (only ``local`` asks); an interactive
    surface lets its user pick another one (``steerable acp``'s session modes, a sidecar chat's
    ``consent``, :data:`CONSENT_ENV`). ``read`` is never asked about nor refused.

    Attributes:
        name: The policy's name (``default``, ``read-only``, ``ask``, ``auto``, or the modes that
            ask joined by ``,``).
        ask: Modes whose calls wait for the user's consent.
        refuse: Modes whose calls are refused without asking (``consent_denied``).
        summary: One line for a person (an editor's mode picker).
        remembers: Whether a surface's "allow always" answers spare later questions under it;
            ``ask`` does not: it asks before each call, whatever was allowed before.
    """

    name: str
    ask: frozenset[ToolMode]
    refuse: frozenset[ToolMode] = frozenset()
    summary: str = ""
    remembers: bool = True

    def verdict(self, mode: ToolMode, name: str | None = None) -> ConsentVerdict:
        """``refuse``, ``ask`` or ``run`` for a call of ``mode`` (refusal wins over asking).

        A read of the open web (:data:`OPEN_WORLD_READS`, by ``name``) calls out: a policy
        treats it as ``external``, so ``read-only`` refuses it and ``ask`` asks first.
        """
        shown = policy_mode(mode, name)
        if shown in self.refuse:
            return "refuse"
        return "ask" if shown in self.ask else "run"


def policy_mode(mode: ToolMode, name: str | None) -> ToolMode:
    """The mode a :class:`ConsentPolicy` judges a call by: ``external`` for an open-web read."""
    return ToolMode.EXTERNAL if mode is ToolMode.READ and name in OPEN_WORLD_READS else mode


_CHANGES: Final = frozenset({ToolMode.SAFE_WRITE, ToolMode.DESTRUCTIVE, ToolMode.LOCAL, ToolMode.EXTERNAL})

DEFAULT_CONSENT_POLICY: Final = ConsentPolicy(
    "default",
    ask=frozenset({ToolMode.LOCAL}),
    summary="Ask before commands and other local tools; edit files without asking (the spec's mode table).",
)
"""The spec's mode table: only ``local`` requires consent."""

CONSENT_POLICIES: Final[Mapping[str, ConsentPolicy]] = {
    "read-only": ConsentPolicy(
        "read-only",
        ask=frozenset(),
        refuse=_CHANGES,
        summary="Read and search only: every tool that writes, runs or calls out is refused.",
    ),
    "ask": ConsentPolicy(
        "ask",
        ask=_CHANGES,
        summary="Ask before every write, command and outside call.",
        remembers=False,
    ),
    "default": DEFAULT_CONSENT_POLICY,
    "auto": ConsentPolicy(
        "auto",
        ask=frozenset(),
        summary="Run everything without asking (commands stay in the sandbox).",
    ),
}
"""The named policies, strictest first (``steerable acp`` offers them as its session modes)."""


def consent_policy(value: str, *, variable: str = CONSENT_ENV) -> ConsentPolicy:
    """Read a consent policy: a name in :data:`CONSENT_POLICIES` or the modes that ask.

    Args:
        value: ``read-only``, ``ask``, ``default`` or ``auto`` (case-insensitive), or a
            comma-separated list of modes that ask, e.g. ``local,destructive,external``.
        variable: Named in the error (the variable or option the value came from).

    Returns:
        The policy (a list gets ``name`` = its modes in the table's order, joined by ``,``).

    Raises:
        UserError: An unknown name or mode (the message lists the accepted ones).
    """
    from .errors import UserError

    text = value.strip().lower()
    named = CONSENT_POLICIES.get(text)
    if named is not None:
        return named
    parts = [part.strip() for part in text.split(",") if part.strip()]
    known = {mode.value for mode in ToolMode} - {ToolMode.READ.value}  # reads never ask
    wrong = [part for part in parts if part not in known]
    if not parts or wrong:
        raise UserError(
            f"{variable}={value!r} is not a consent policy: use one of {', '.join(CONSENT_POLICIES)}, "
            f"or the modes that ask, comma-separated, from {', '.join(sorted(known))}"
        )
    ask = frozenset(ToolMode(part) for part in parts)
    for policy in CONSENT_POLICIES.values():  # the same modes as a named one: that one
        if not policy.refuse and policy.ask == ask:
            return policy
    name = ",".join(mode.value for mode in ToolMode if mode in ask)
    return ConsentPolicy(name, ask=ask, summary=f"Ask before {name} tools.")
