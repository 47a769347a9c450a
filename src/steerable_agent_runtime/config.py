"""Reading ``STEERABLE_*`` variables: validated values, failing loud with the variable's name.

The one reader behind every configuration object (``SandboxConfig``, ``ResourceLimits``,
``RunCodeConfig``, ``WebToolsConfig``, ``LLMConfig``), and the way an embedding host reads
steerable's variables by the same rules (docs/configuration.md, "How values are read"): a value is
trimmed and an empty one counts as unset; a flag is 1/true/yes/on or 0/false/no/off; a whole
number lies within inclusive bounds and may use ``_`` separators.

A config's integer fields are declared with :func:`int_field`: one :class:`EnvInt`
``(variable, default, floor, ceiling)`` gives the default, the environment reading
(:func:`read_int_fields`), the construction check (:func:`check_int_fields`) and the docs table.
Importing this module is cheap (no third-party imports).
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from .errors import ConfigError, UserError

__all__ = [
    "CREDENTIAL_NAME",
    "STATE_DIR_ENV",
    "EnvInt",
    "check_int_fields",
    "credential_name",
    "default_state_dir",
    "env_flag",
    "env_text",
    "int_field",
    "int_fields",
    "read_int_fields",
    "tilde_problem",
    "url_password",
]

STATE_DIR_ENV: Final = "STEERABLE_STATE_DIR"
"""Where durable records and spilled data go (default ``$XDG_STATE_HOME/steerable``)."""

CREDENTIAL_NAME: Final = re.compile(
    r"(?:(?:^|_)(?:(?:KEY|TOKEN|SECRET)(?:S|_?[0-9]+)?|PASS|PWD|PAT|CREDENTIALS?|AUTH|AUTHORIZATION"
    r"|SECRET_KEY_BASE)|PASSWORD|PASSWD|APIKEY)$",
    re.IGNORECASE,
)
"""A name whose last word is a credential word (``GITHUB_TOKEN``, ``PGPASSWORD``): :func:`credential_name`."""
_WORKING_DIRECTORY: Final = frozenset({"PWD", "OLDPWD"})
"""The shell's working directories: ``PWD`` ends in a credential word but names a folder."""

_TRUE: Final = frozenset({"1", "true", "yes", "on"})
_FALSE: Final = frozenset({"0", "false", "no", "off"})
_METADATA_KEY: Final = "steerable_env_int"


def _whole_number(raw: str) -> bool:
    """ASCII digits, an optional sign, ``_`` only between digits (what ``int`` takes, minus the rest)."""
    body = raw[1:] if raw.startswith(("+", "-")) else raw
    return all(part.isascii() and part.isdigit() for part in body.split("_"))


def env_text(name: str, environ: Mapping[str, str] | None = None) -> str | None:
    """Read a text variable, trimmed.

    Args:
        name: The variable, e.g. ``STEERABLE_MCP_CONFIG``.
        environ: The environment to read (defaults to ``os.environ``).

    Returns:
        The trimmed value, or ``None`` when the variable is unset, empty or only whitespace.
    """
    return (os.environ if environ is None else environ).get(name, "").strip() or None


def env_flag(name: str, default: bool, *, environ: Mapping[str, str] | None = None) -> bool:
    """Read a boolean variable.

    Args:
        name: The variable, e.g. ``STEERABLE_REQUIRE_READ_BEFORE_WRITE``.
        default: The value when the variable is unset or blank.
        environ: The environment to read (defaults to ``os.environ``).

    Returns:
        ``True`` for 1/true/yes/on, ``False`` for 0/false/no/off (case-insensitive).

    Raises:
        ConfigError: For any other value, naming the variable and the accepted values.
    """
    raw = (env_text(name, environ) or "").lower()
    if not raw:
        return default
    if raw in _TRUE:
        return True
    if raw in _FALSE:
        return False
    raise ConfigError(f"{name}={raw!r} is not a boolean; use 1/true/yes/on or 0/false/no/off")


@dataclasses.dataclass(frozen=True, slots=True)
class EnvInt:
    """A whole-number variable: its name, its default and its inclusive bounds.

    Attributes:
        variable: The variable, e.g. ``STEERABLE_RUN_CODE_TIMEOUT_MS``.
        default: The value when the variable is unset or blank.
        floor: The smallest accepted value.
        ceiling: The largest accepted value.

    Raises:
        UserError: When ``default`` lies outside ``floor..ceiling`` (a programming error).
    """

    variable: str
    default: int
    floor: int
    ceiling: int

    def __post_init__(self) -> None:
        if not self.floor <= self.default <= self.ceiling:
            raise UserError(
                f"{self.variable}: default {self.default} is outside {self.floor}..{self.ceiling}"
            )

    def read(self, environ: Mapping[str, str] | None = None) -> int:
        """The variable's value, or :attr:`default` when unset or blank.

        A value is ASCII digits with an optional sign, ``_`` allowed between digits (``1_000_000``):
        ``_``, ``1__0``, ``1e3``, ``0x10`` and other scripts' digits (``１２``) are refused.

        Raises:
            ConfigError: For a value that is not an integer in range, naming the variable and the range.
        """
        env = os.environ if environ is None else environ
        raw = env_text(self.variable, env)
        if raw is None:
            return self.default
        value = int(raw) if _whole_number(raw) else self.floor - 1
        if not self.floor <= value <= self.ceiling:
            raise self._refusal(self.variable, env[self.variable])
        return value

    def check(self, value: object, label: str) -> int:
        """Check a value given directly (a bool is not an integer here).

        Args:
            value: The value.
            label: What names it in the error, e.g. ``RunCodeConfig.timeout_ms``.

        Returns:
            ``value``.

        Raises:
            ConfigError: For a value that is not an integer in range, naming ``label`` and the range.
        """
        if type(value) is not int or not self.floor <= value <= self.ceiling:
            raise self._refusal(label, value)
        return value

    def _refusal(self, label: str, value: object) -> ConfigError:
        return ConfigError(f"{label}={value!r} must be an integer from {self.floor} to {self.ceiling}")


def int_field(variable: str, default: int, *, floor: int, ceiling: int) -> Any:
    """A dataclass field whose default and bounds come from an :class:`EnvInt`.

    Use it as the field's default: ``timeout_ms: int = int_field(TIMEOUT_ENV, 30_000, floor=1,
    ceiling=600_000)``; :func:`int_fields` finds the description again.

    Raises:
        UserError: When ``default`` lies outside ``floor..ceiling``.
    """
    spec = EnvInt(variable, default, floor, ceiling)
    return dataclasses.field(default=default, metadata={_METADATA_KEY: spec})


def int_fields(config: type[Any] | object) -> dict[str, EnvInt]:
    """``{field: EnvInt}`` of a dataclass's :func:`int_field` fields, in declaration order."""
    return {
        item.name: item.metadata[_METADATA_KEY]
        for item in dataclasses.fields(config)  # type: ignore[arg-type]  # a dataclass or an instance
        if _METADATA_KEY in item.metadata
    }


def read_int_fields(config: type[Any], environ: Mapping[str, str] | None = None) -> dict[str, int]:
    """``{field: value}`` of a dataclass's :func:`int_field` fields, read from ``environ``.

    Raises:
        ConfigError: For the first variable that is not an integer in range, naming it.
    """
    return {name: spec.read(environ) for name, spec in int_fields(config).items()}


def check_int_fields(config: object) -> None:
    """Check every :func:`int_field` of a dataclass instance (for its ``__post_init__``).

    Raises:
        ConfigError: For the first field out of range or not an ``int``, naming it as
            ``ClassName.field``.
    """
    owner = type(config).__name__
    for name, spec in int_fields(config).items():
        spec.check(getattr(config, name), f"{owner}.{name}")


def default_state_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Return where sessions are stored (nothing is checked or created).

    ``STEERABLE_STATE_DIR``, else ``$XDG_STATE_HOME/steerable``, else ``~/.local/state/steerable``
    (``~``: the ``HOME`` of ``environ``; ``docs/configuration.md``). ``steerable_sidecar.shared._state_dir``
    checks and creates it; the sandbox keeps commands from reading it (SAFE-3).
    """
    env = os.environ if environ is None else environ
    configured = env_text(STATE_DIR_ENV, env)  # blank: unset (docs/configuration.md)
    if configured is not None:
        return Path(configured).expanduser()
    base = env.get("XDG_STATE_HOME") or os.path.join(env.get("HOME") or Path.home(), ".local", "state")
    return Path(base) / "steerable"


def credential_name(name: str) -> bool:
    """Whether a variable called ``name`` holds a credential, judged by its name (any case).

    Its last word is ``KEY``, ``TOKEN`` or ``SECRET``, alone, plural or numbered (``KEYS``,
    ``KEY1``, ``KEY_1``), or ``PASS``, ``PWD``, ``PAT``, ``CREDENTIAL(S)``, ``AUTH`` or
    ``AUTHORIZATION``; or it ends in ``SECRET_KEY_BASE``, ``PASSWORD``, ``PASSWD`` or ``APIKEY``
    (``STEERABLE_API_KEY``, ``OPENAI_API_KEYS``, ``AZURE_OPENAI_KEY_1``, ``AWS_SECRET_ACCESS_KEY``,
    ``MYSQL_PWD``, ``GH_PAT``). A name that only contains such a word (``XAUTHORITY``,
    ``SSH_AUTH_SOCK``, ``KEY_DIR``, ``KEYBOARD``, ``MONKEY``, ``TOKENIZERS_PARALLELISM``) does not
    count, nor the shell's ``PWD`` and ``OLDPWD``. What log redaction and the ``container`` sandbox
    posture's environment scrub share.
    """
    return CREDENTIAL_NAME.search(name) is not None and name.upper() not in _WORKING_DIRECTORY


def url_password(value: str) -> str | None:
    """The password of a URL with credentials (``postgres://user:PASSWORD@host/db``), else ``None``."""
    if "://" not in value or "@" not in value:
        return None
    from urllib.parse import unquote, urlsplit  # only for a value that may be such a URL

    try:
        password = urlsplit(value.strip()).password
    except ValueError:  # an invalid port or IPv6 literal: not a URL we can read
        return None
    return unquote(password) if password else None


def tilde_problem(given: str) -> str:
    """``": ..."`` saying why ``given`` (a path that was not found) starts with ``~``, else ``""``.

    ``~`` and ``~/...``: nothing expanded it here. ``~user/...``: the same when that user exists,
    else that there is no such user (so no expansion could have found it).
    """
    if not given.startswith("~"):
        return ""
    user = given[1:].split("/", 1)[0]
    if user:
        try:
            import pwd
        except ImportError:  # pragma: no cover - Windows has no user database to ask
            pwd = None  # type: ignore[assignment]
        if pwd is not None:
            try:
                pwd.getpwnam(user)
            except KeyError:
                return f": there is no user {user!r} here for ~{user} to name; write the absolute path"
    return ": ~ is not expanded here (no shell read it); write the absolute path"
