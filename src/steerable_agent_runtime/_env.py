"""Environment variables resolved into validated values, failing loud with the variable's name."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Final

from .errors import ConfigError

__all__ = ["env_flag"]

_TRUE: Final = frozenset({"1", "true", "yes", "on"})
_FALSE: Final = frozenset({"0", "false", "no", "off"})


def env_flag(name: str, default: bool, *, environ: Mapping[str, str] | None = None) -> bool:
    """Read a boolean environment variable.

    Args:
        name: The variable, e.g. ``STEERABLE_REQUIRE_READ_BEFORE_WRITE``.
        default: The value when the variable is unset or empty.
        environ: The environment to read (defaults to ``os.environ``).

    Returns:
        ``True`` for 1/true/yes/on, ``False`` for 0/false/no/off (case-insensitive).

    Raises:
        ConfigError: For any other value, naming the variable and the accepted values.
    """
    raw = (os.environ if environ is None else environ).get(name, "").strip().lower()
    if not raw:
        return default
    if raw in _TRUE:
        return True
    if raw in _FALSE:
        return False
    raise ConfigError(f"{name}={raw!r} is not a boolean; use 1/true/yes/on or 0/false/no/off")
