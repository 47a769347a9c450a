"""How invalid arguments are told to the model: one ``{field, message}`` per problem, one sentence.

Shared by dispatch (pydantic's errors), the exact-literal coercion (``_coerce``), ``Tool.from_schema``
and ``tool_search``. It imports nothing: the modules tools are registered through stay free of
pydantic, which loads at the first call (start-up: ``benchmarks/startup.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import ValidationError

__all__ = ["invalid_text", "validation_problems"]


def invalid_text(name: str, problems: list[dict[str, str]]) -> str:
    """The ``error`` of an ``invalid_arguments`` result: every problem, then the fix."""
    listed = "; ".join(f"{p['field']}: {p['message']}" for p in problems)
    return f"Invalid arguments for {name}: {listed}. Fix these fields and call {name} again."


def validation_problems(exc: ValidationError) -> list[dict[str, str]]:
    """Pydantic's errors as ``{field, message}`` (the dotted location; an unexpected key says so)."""
    problems = []
    for err in exc.errors(include_url=False):
        loc = ".".join(str(part) for part in err["loc"]) or "(arguments)"
        message = err["msg"]
        if err["type"] == "extra_forbidden":
            message = "unexpected field"
        problems.append({"field": loc, "message": message})
    return problems
