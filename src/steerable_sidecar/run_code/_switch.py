"""``run_code``'s switch, apart from the tool: a boot with ``run_code`` off never loads its module."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from steerable_agent_runtime.config import env_flag

__all__ = ["RUN_CODE_ENV", "run_code_enabled"]

RUN_CODE_ENV: Final = "STEERABLE_RUN_CODE"
"""``1`` registers ``run_code`` at boot (default off). Spec: run_code."""


def run_code_enabled(environ: Mapping[str, str] | None = None) -> bool:
    """Whether ``STEERABLE_RUN_CODE`` turns ``run_code`` on (default off).

    Raises:
        ConfigError: For a value that is not a boolean (1/true/yes/on, 0/false/no/off).
    """
    return env_flag(RUN_CODE_ENV, False, environ=environ)
