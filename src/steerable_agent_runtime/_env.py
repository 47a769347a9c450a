"""Environment variables resolved into validated values, failing loud with the variable's name."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Final

from .errors import ConfigError

__all__ = ["env_flag", "env_int"]

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


def env_int(
    name: str, default: int, *, floor: int, ceiling: int, environ: Mapping[str, str] | None = None
) -> int:
    """Read an integer environment variable within ``floor..ceiling`` (``_`` separators allowed).

    Args:
        name: The variable, e.g. ``STEERABLE_SANDBOX_MAX_PROCESSES``.
        default: The value when the variable is unset or empty.
        floor: The smallest accepted value.
        ceiling: The largest accepted value.
        environ: The environment to read (defaults to ``os.environ``).

    Returns:
        The value.

    Raises:
        ConfigError: For a value that is not an integer in range, naming the variable and the range.
    """
    env = os.environ if environ is None else environ
    raw = env.get(name, "").strip().replace("_", "")
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = floor - 1
    if not floor <= value <= ceiling:
        raise ConfigError(f"{name}={env[name]!r} must be an integer from {floor} to {ceiling}")
    return value
