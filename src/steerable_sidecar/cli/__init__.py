"""The ``steerable`` command: its parser, its command table and its one-shot commands.

Every command is one row of ``_commands.COMMANDS``, and its code is named for it: ``cli/_tools.py``,
``_call.py``, ``_session.py``, ``_plugins.py``, ``_doctor.py`` and ``_jobs.py`` here; ``run``,
``sidecar``, ``mcp`` and ``acp`` in the subpackage of that name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from steerable_agent_runtime.lazy import lazy_exports

if TYPE_CHECKING:
    from ._main import main
    from ._parser import build_parser

_EXPORTS: dict[str, tuple[str, ...]] = {
    "_main": ("main",),
    "_parser": ("build_parser",),
}
"""Each module and the public names it provides (the block above, for type checkers)."""

__all__ = [
    "build_parser",
    "main",
]

if not TYPE_CHECKING:  # hidden from type checkers, so a misspelt import still fails there
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
