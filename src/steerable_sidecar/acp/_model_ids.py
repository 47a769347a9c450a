"""What a model id may be: ``--models``' ids, ``session/set_config_option``'s, Harbor's (docs/acp.md)."""

from __future__ import annotations

from typing import Final

__all__ = ["MAX_MODEL_ID_CHARS", "model_id_problem"]

MAX_MODEL_ID_CHARS: Final = 256
"""The longest model id a session takes (``--models``, ``session/set_config_option``)."""


def model_id_problem(model: str) -> str | None:
    """Why ``model`` is no model id (empty, too long, whitespace or control characters), or ``None``."""
    if not model:
        return "the model id is empty"
    if len(model) > MAX_MODEL_ID_CHARS:
        return f"the model id is longer than {MAX_MODEL_ID_CHARS} characters ({len(model)})"
    if any(c.isspace() or not c.isprintable() for c in model):
        return "the model id holds whitespace or control characters"
    return None
