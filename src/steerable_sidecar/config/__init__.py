"""Configuration: every ``STEERABLE_*`` variable, and the file that writes them down once.

The table is :data:`VARIABLES`; the file is read by :func:`read_config_file` (docs/configuration.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from steerable_agent_runtime.lazy import lazy_exports

if TYPE_CHECKING:
    from ._file import ConfigFile, default_config_path, read_config_file
    from ._settings import VARIABLES, EnvVar

_EXPORTS: dict[str, tuple[str, ...]] = {
    "_file": ("ConfigFile", "default_config_path", "read_config_file"),
    "_settings": ("VARIABLES", "EnvVar"),
}
"""Each module and the public names it provides (the block above, for type checkers)."""

__all__ = [
    "VARIABLES",
    "ConfigFile",
    "EnvVar",
    "default_config_path",
    "read_config_file",
]

if not TYPE_CHECKING:  # hidden from type checkers, so a misspelt import still fails there
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
