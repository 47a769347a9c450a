"""The two variables about the configuration file itself, apart from it (``_settings`` lists them)."""

from __future__ import annotations

from typing import Final

__all__ = ["CONFIG_ENV", "CONFIG_IN_WORKSPACE_ENV"]

CONFIG_ENV: Final = "STEERABLE_CONFIG"
"""The configuration file to read instead of the default one; ``off`` reads none."""
CONFIG_IN_WORKSPACE_ENV: Final = "STEERABLE_CONFIG_IN_WORKSPACE"
"""``1``: read the configuration file even when it lies inside the workspace."""
