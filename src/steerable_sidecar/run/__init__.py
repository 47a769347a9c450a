"""``steerable run``: one headless agent run in a jailed workspace (docs/headless.md).

Also its terminal ``ask_user`` handler, and the ATIF export of a session record (docs/harbor.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from steerable_agent_runtime.lazy import lazy_exports

if TYPE_CHECKING:
    from ._atif import ATIF_VERSION, read_record, record_to_atif
    from ._terminal_prompt import terminal_ask_user_handler

_EXPORTS: dict[str, tuple[str, ...]] = {
    "_atif": ("ATIF_VERSION", "read_record", "record_to_atif"),
    "_terminal_prompt": ("terminal_ask_user_handler",),
}
"""Each module and the public names it provides (the block above, for type checkers)."""

__all__ = [
    "ATIF_VERSION",
    "read_record",
    "record_to_atif",
    "terminal_ask_user_handler",
]

if not TYPE_CHECKING:  # hidden from type checkers, so a misspelt import still fails there
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
