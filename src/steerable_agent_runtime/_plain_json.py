"""JSON-ready values without pydantic, for the results most calls return.

A tool's return value becomes a result's ``data`` through ``pydantic_core.to_jsonable_python``
(spec: ToolResult; DESIGN.md: the handler's value is normalised once). Most values are plain JSON
already (dicts keyed by strings, lists, strings, numbers, booleans, ``None``): for those, the copy
:func:`plain_copy` makes is the value ``to_jsonable_python`` gives, and a ``steerable call`` does
not import pydantic at all (start-up: ``benchmarks/startup.py``). Anything else (a ``Path``, an
enum, a model, a key that is not a string or not UTF-8, a large or deep value) raises
:class:`NotPlain`, and stays ``to_jsonable_python``'s, exactly as before.
"""

from __future__ import annotations

import math
from typing import Any, Final

from ._utf8 import is_utf8, utf8_safe

__all__ = ["NotPlain", "plain_copy", "wire_safe"]

MAX_PLAIN_NODES: Final = 4096
"""Values and containers copied here before a value is handed to ``to_jsonable_python`` instead
(its Rust walk is the faster one for large values)."""

MAX_PLAIN_DEPTH: Final = 64
"""Containers nested deeper than this are ``to_jsonable_python``'s (its depth limit applies)."""

_LEAVES: Final = frozenset({str, int, float, bool, type(None)})


class NotPlain(Exception):
    """The value holds something :func:`plain_copy` leaves to ``to_jsonable_python``."""


def plain_copy(value: Any) -> Any:
    """``pydantic_core.to_jsonable_python(value, fallback=str)`` for a plain JSON value.

    Args:
        value: Any value a tool returned (or part of it).

    Returns:
        A copy (new dicts and lists, a tuple as a list, the same leaves): what
        ``to_jsonable_python`` gives for it.

    Raises:
        NotPlain: ``value`` holds another type, a key that is not a string or not UTF-8 (a lone
            surrogate), more than ``MAX_PLAIN_NODES`` values or more than ``MAX_PLAIN_DEPTH``
            levels: ``to_jsonable_python``'s to write (or refuse).
    """
    return _Copy().of(value, 0)


class _Copy:
    """One copy's node budget (``MAX_PLAIN_NODES``)."""

    __slots__ = ("left",)

    def __init__(self) -> None:
        self.left = MAX_PLAIN_NODES

    def of(self, value: Any, depth: int) -> Any:
        kind = type(value)
        if kind in _LEAVES:
            return value
        if kind is not dict and kind is not list and kind is not tuple:
            raise NotPlain
        self.left -= len(value) + 1
        if self.left < 0 or depth >= MAX_PLAIN_DEPTH:
            raise NotPlain
        if kind is dict:
            copied: dict[str, Any] = {}
            for key, item in value.items():
                if type(key) is not str or not is_utf8(key):
                    raise NotPlain
                copied[key] = self.of(item, depth + 1)
            return copied
        return [self.of(item, depth + 1) for item in value]


def wire_safe(value: Any, *, nulls: bool = False) -> Any:
    """``value`` (JSON-ready) as every transport can send it.

    A lone surrogate in a string or key becomes U+FFFD (:func:`~._utf8.utf8_safe`). With ``nulls``,
    a NaN or an infinity becomes ``None``, as ``to_jsonable_python(..., inf_nan_mode="null")``
    writes it (JSON has neither).
    """
    if isinstance(value, str):
        return utf8_safe(value)
    if isinstance(value, dict):
        return {wire_safe(k): wire_safe(v, nulls=nulls) for k, v in value.items()}
    if isinstance(value, list):
        return [wire_safe(v, nulls=nulls) for v in value]
    if nulls and isinstance(value, float) and not math.isfinite(value):
        return None
    return value
