"""Call ids the runtime makes itself (public as :func:`steerable_agent_runtime.types.new_call_id`).

Here, not in :mod:`~steerable_agent_runtime.types`, so that what only needs an id (``steerable
call``, an ACP session) does not import pydantic with the wire types.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cuid2 import Cuid

__all__ = ["new_call_id"]


def new_call_id() -> str:
    """Return a fresh cuid2 string for a ``ToolCall.id`` the runtime makes itself.

    Returns:
        A 24-character lowercase cuid2 (collision-resistant, not guessable). Spec: ToolCall.id.
    """
    return _cuid().generate()


@functools.cache
def _cuid() -> Cuid:
    """The process's id generator, made at the first id (importing cuid2 costs ~3 ms at start-up)."""
    from cuid2 import Cuid

    return Cuid()
