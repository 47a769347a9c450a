"""The stderr log of every ``steerable`` command: ``--verbose/-v`` or ``STEERABLE_LOG_LEVEL``."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from typing import Final

from steerable_agent_runtime.errors import ConfigError

__all__ = ["LOG_LEVELS", "LOG_LEVEL_ENV", "configure_logging", "log_level"]

LOG_LEVEL_ENV: Final = "STEERABLE_LOG_LEVEL"
"""``DEBUG``, ``INFO``, ``WARNING`` (default) or ``ERROR``: the stderr log level of every command."""

LOG_LEVELS: Final = ("DEBUG", "INFO", "WARNING", "ERROR")
"""The accepted values of :data:`LOG_LEVEL_ENV`, most verbose first."""

_FORMAT: Final = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def log_level(verbosity: int = 0, environ: Mapping[str, str] | None = None) -> int:
    """Return the log level: ``-v`` is INFO, ``-vv`` DEBUG; without them ``STEERABLE_LOG_LEVEL``.

    Args:
        verbosity: How many ``-v`` were given.
        environ: The environment (default ``os.environ``).

    Returns:
        A ``logging`` level.

    Raises:
        ConfigError: ``STEERABLE_LOG_LEVEL`` is set to something else than :data:`LOG_LEVELS`.
    """
    if verbosity > 0:
        return logging.DEBUG if verbosity > 1 else logging.INFO
    given = (os.environ if environ is None else environ).get(LOG_LEVEL_ENV, "")
    raw = given.strip().upper()
    if not raw:
        return logging.WARNING
    if raw not in LOG_LEVELS:
        raise ConfigError(f"{LOG_LEVEL_ENV}={given!r} is not a log level; use one of {', '.join(LOG_LEVELS)}")
    return int(getattr(logging, raw))


def configure_logging(level: int) -> None:
    """Send this process's log records at ``level`` and above to stderr (stdout stays for output)."""
    logging.basicConfig(stream=sys.stderr, level=level, format=_FORMAT, force=True)
