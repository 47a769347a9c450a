"""A name turned into a member of a string enum, refused with a :class:`~.errors.UserError`."""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import TypeVar

from .errors import UserError

__all__ = ["enum_member"]

_E = TypeVar("_E", bound=StrEnum)


def enum_member(enum: type[_E], value: _E | str, refusal: Callable[[str], str]) -> _E:
    """``enum(value)``; an unknown value raises ``UserError(refusal(choices))``.

    Args:
        enum: The enum class.
        value: A member or its value.
        refusal: Builds the message from ``choices``, every member's value joined by ``", "``.

    Raises:
        UserError: ``value`` names no member.
    """
    try:
        return enum(value)
    except ValueError:
        raise UserError(refusal(", ".join(member.value for member in enum))) from None
