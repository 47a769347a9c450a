"""The tool descriptor a model is offered: the same schema with what only validation needs taken out.

A tool's ``parameters`` is the JSON Schema its arguments are validated with (pydantic writes it:
``title`` on every property, optional arguments as ``anyOf: [T, {"type": "null"}]`` with
``default: null``). A model reads that schema as prompt, every round, so
:func:`model_parameters` drops what tells it nothing: ``title`` keywords, and the ``null`` branch
of an optional argument that defaults to ``null`` (leaving it out says the same). Validation still
uses the full schema, so a model that sends ``null`` is accepted as before. docs/harness.md, "What
the model is offered", has the sizes (``benchmarks/tool_prompt.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["first_paragraph", "model_parameters"]

_NULL = {"type": "null"}


def model_parameters(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` without ``title`` keywords and with optional-null arguments as their plain type.

    Args:
        schema: A JSON Schema object (a tool's ``parameters``); never changed.

    Returns:
        A new schema; property *names* (``title`` included) are kept, only the keyword goes.
    """
    compacted: dict[str, Any] = _compact(schema)
    return compacted


def _compact(node: Any, *, in_properties: bool = False) -> Any:
    if isinstance(node, list):
        return [_compact(item) for item in node]
    if not isinstance(node, Mapping):
        return node
    if in_properties:  # names -> schemas: every key is a property name, kept as is
        return {name: _compact(value) for name, value in node.items()}
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title" and isinstance(value, str):
            continue
        out[key] = _compact(value, in_properties=key in ("properties", "$defs", "definitions"))
    branches = out.get("anyOf")
    optional = out.get("default", 0) is None
    if optional and isinstance(branches, list) and len(branches) == 2 and _NULL in branches:
        (kept,) = [b for b in branches if b != _NULL]
        del out["anyOf"], out["default"]
        if isinstance(kept, Mapping):
            out = {**kept, **out}
    return out


def first_paragraph(description: str) -> str:
    """The description up to its first blank line (its summary), for the compact descriptors."""
    return description.strip().split("\n\n", 1)[0].strip()
