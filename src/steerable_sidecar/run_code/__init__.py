"""``run_code``: the model"s Python program in a sandboxed child interpreter (docs/run-code.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from steerable_agent_runtime.lazy import lazy_exports

if TYPE_CHECKING:
    from ._tool import RunCodeConfig, direct_run_executor, run_code_enabled, run_code_tool

_EXPORTS: dict[str, tuple[str, ...]] = {
    "_tool": ("RunCodeConfig", "direct_run_executor", "run_code_enabled", "run_code_tool"),
}
"""Each module and the public names it provides (the block above, for type checkers)."""

__all__ = [
    "RunCodeConfig",
    "direct_run_executor",
    "run_code_enabled",
    "run_code_tool",
]

if not TYPE_CHECKING:  # hidden from type checkers, so a misspelt import still fails there
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
