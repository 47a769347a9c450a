"""``ScriptedProvider``: an :class:`~steerable_agent_runtime.llm.LLMProvider` that replays given turns.

For tests, demos and offline runs (``STEERABLE_PROVIDER=scripted`` with ``STEERABLE_SCRIPT``;
docs/providers.md, ScriptedProvider). Public as ``steerable_agent_runtime.ScriptedProvider`` and
``steerable_agent_runtime.llm.ScriptedProvider``; here so that the model seam (:mod:`.llm`) holds
the seam alone.
"""

from __future__ import annotations

import functools
import itertools
import json
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Final, TypeAlias

from .errors import ProviderError, UserError
from .llm import (
    ChatRequest,
    ChatResponse,
    InvalidToolCall,
    ReasoningDelta,
    ResponseComplete,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    Usage,
    parse_tool_call,
)

__all__ = ["SCRIPTED_TURNS_SCHEMA", "ScriptedProvider", "ScriptedTurn"]


ScriptedTurn: TypeAlias = "ChatResponse | str | Mapping[str, Any] | Callable[[ChatRequest], ChatResponse]"

SCRIPTED_TURNS_SCHEMA: Final[dict[str, Any]] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "Scripted turns (STEERABLE_SCRIPT)",
    "type": "array",
    "items": {"$ref": "#/$defs/turn"},
    "$defs": {
        "turn": {
            "description": "A plain text answer (a string), or an answer with tool calls.",
            "type": ["string", "object"],
            "properties": {
                "text": {"type": ["string", "null"]},
                "tool_calls": {"type": "array", "items": {"$ref": "#/$defs/tool_call"}},
                "usage": {"$ref": "#/$defs/usage"},
            },
            "additionalProperties": False,
        },
        "tool_call": {
            "type": "object",
            "properties": {
                "id": {"type": "string", "description": "Missing: a fresh id."},
                "name": {"type": "string"},
                "arguments": {
                    "type": ["string", "object"],
                    "description": "A JSON string (an invalid one scripts a model's slip) or an "
                    "object; missing: no arguments.",
                },
            },
            "required": ["name"],
            "additionalProperties": False,
        },
        "usage": {
            "type": "object",
            "properties": {
                "prompt_tokens": {"type": "integer", "minimum": 0},
                "completion_tokens": {"type": "integer", "minimum": 0},
            },
            "additionalProperties": False,
        },
    },
}
"""The JSON Schema (draft 2020-12) of a scripted-turns file: a list of turns, each a string or a
mapping ``{"text"?, "tool_calls"?: [{"id"?, "name", "arguments"?}], "usage"?: {"prompt_tokens"?,
"completion_tokens"?}}``. :class:`ScriptedProvider` checks its string and mapping turns against it."""


class ScriptedProvider:
    """An :class:`LLMProvider` that replays given turns: for tests, demos and offline runs.

    A turn is a :class:`ChatResponse`, a string (a plain text answer), a mapping shaped as
    :data:`SCRIPTED_TURNS_SCHEMA` (``arguments`` may be an object or a JSON string, even an invalid
    one, to script a model's slip), or a callable taking the :class:`ChatRequest` and returning a
    :class:`ChatResponse` (docs/providers.md, ScriptedProvider). String and mapping turns are
    checked up front, so a misspelt key fails here, not halfway through a run.

    Args:
        turns: The turns, in order.
        chunk_chars: ``stream`` yields text in pieces of this many characters.

    Attributes:
        requests: Every request received, in order (for assertions).

    Raises:
        UserError: When a turn does not match the schema, e.g. ``scripted turn 3: unknown key
            'tool_call' (allowed: text, tool_calls, usage)`` (turns count from 1).
    """

    def __init__(self, turns: Iterable[Any], *, chunk_chars: int = 16) -> None:
        self._turns = list(turns)
        problem = _scripted_turns_problem(self._turns)
        if problem is not None:
            raise UserError(problem)
        self._next = 0
        self.chunk_chars = max(1, chunk_chars)
        self.requests: list[ChatRequest] = []

    @classmethod
    def from_file(cls, path: str | Path) -> ScriptedProvider:
        """Load turns from a JSON file holding a list of turns (strings or mappings).

        Raises:
            ProviderError: When the file cannot be read, is not a JSON list, or a turn does not
                match :data:`SCRIPTED_TURNS_SCHEMA` (``{path}: scripted turn 2, tool_calls: 5 is
                not a list``).
        """
        try:
            turns = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError) as exc:
            raise ProviderError(f"cannot load the scripted turns from {path}: {exc}") from exc
        if not isinstance(turns, list):
            raise ProviderError(f"{path}: scripted turns must be a JSON list")
        try:
            return cls(turns)
        except UserError as exc:
            raise ProviderError(f"{path}: {exc}") from None

    @property
    def remaining(self) -> int:
        """Turns not yet played."""
        return len(self._turns) - self._next

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """Return the next scripted turn.

        Raises:
            ProviderError: When every turn has been played.
        """
        self.requests.append(request)
        if self._next >= len(self._turns):
            raise ProviderError(f"the scripted provider has no turn left (it had {len(self._turns)})")
        turn = self._turns[self._next]
        self._next += 1
        return _scripted_response(turn, request)

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        """Yield the next turn's reasoning and text in chunks, one delta per tool call, then the response."""
        response = await self.complete(request)
        for start in range(0, len(response.reasoning), self.chunk_chars):
            yield ReasoningDelta(response.reasoning[start : start + self.chunk_chars])
        for start in range(0, len(response.text), self.chunk_chars):
            yield TextDelta(response.text[start : start + self.chunk_chars])
        for index, call in enumerate(response.tool_calls):
            arguments = call.arguments if isinstance(call, InvalidToolCall) else json.dumps(call.arguments)
            yield ToolCallDelta(index, call.id, call.name, arguments)
        yield ResponseComplete(response)


_JSON_TYPE_NAMES: Final = {
    "array": "a list",
    "object": "an object",
    "string": "a string",
    "integer": "an integer",
    "null": "null",
}
_MAX_REPORTED: Final = 3


@functools.cache
def _turns_validator() -> Any:
    """The validator of :data:`SCRIPTED_TURNS_SCHEMA`; in-process turns may use tuples and mappings."""
    import jsonschema  # heavy (~70 ms): only a scripted run pays for it

    def is_array(_checker: Any, instance: Any) -> bool:
        return isinstance(instance, (list, tuple))

    def is_object(_checker: Any, instance: Any) -> bool:
        return isinstance(instance, Mapping)

    base = jsonschema.Draft202012Validator
    checker = base.TYPE_CHECKER.redefine_many({"array": is_array, "object": is_object})
    extended = jsonschema.validators.extend(base, type_checker=checker)  # type: ignore[no-untyped-call]
    return extended(SCRIPTED_TURNS_SCHEMA)


def _scripted_turns_problem(turns: list[Any]) -> str | None:
    """Check the string and mapping turns against :data:`SCRIPTED_TURNS_SCHEMA`; ``None`` if fine.

    ``ChatResponse`` and callable turns are not checked (a blank stands in, keeping the numbering).
    """
    validator = _turns_validator()
    checkable = [
        "" if isinstance(turn, ChatResponse) or (callable(turn) and not isinstance(turn, Mapping)) else turn
        for turn in turns
    ]
    # the validator walks the turns in order: stop past the few that are shown (a 500,000-turn
    # file of bad turns would otherwise take most of a minute to report)
    errors = list(itertools.islice(validator.iter_errors(checkable), _MAX_REPORTED + 1))
    if not errors:
        return None
    errors.sort(key=lambda e: e.absolute_path[0] if e.absolute_path else -1)
    shown = "; ".join(_describe_turn_error(e) for e in errors[:_MAX_REPORTED])
    return f"{shown}; and more problems" if len(errors) > _MAX_REPORTED else shown


def _describe_turn_error(error: Any) -> str:
    """``scripted turn 2, tool_calls[0]: 'name' is required`` for one ``jsonschema`` error."""
    path = list(error.absolute_path)
    where = f"scripted turn {path[0] + 1}" if path else "scripted turns"
    inner = ""
    for step in path[1:]:
        inner += f"[{step}]" if isinstance(step, int) else (f".{step}" if inner else str(step))
    if inner:
        where += f", {inner}"
    instance, expected = error.instance, error.validator_value
    if error.validator == "additionalProperties":
        allowed = list(error.schema.get("properties", {}))
        unknown = [key for key in instance if key not in allowed]
        clipped = [repr(k if len(k) <= 40 else k[:37] + "...") for k in map(str, unknown[:5])]
        keys = ", ".join(clipped) + (", ..." if len(unknown) > 5 else "")
        what = f"unknown key{'s' if len(unknown) > 1 else ''} {keys} (allowed: {', '.join(allowed)})"
    elif error.validator == "required":
        missing = [key for key in expected if key not in instance]
        what = ", ".join(repr(key) for key in missing) + (" are" if len(missing) > 1 else " is") + " required"
    elif error.validator == "type":
        names = [expected] if isinstance(expected, str) else list(expected)
        what = f"{_shown(instance)} is not {' or '.join(_JSON_TYPE_NAMES.get(n, n) for n in names)}"
    elif error.validator == "minimum":
        what = f"{_shown(instance)} is less than {expected}"
    else:  # not reached with this schema; jsonschema's own words
        what = str(error.message)
    return f"{where}: {what}"


def _shown(value: Any, limit: int = 60) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, default=repr)
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _scripted_response(turn: Any, request: ChatRequest) -> ChatResponse:
    if isinstance(turn, ChatResponse):
        return turn
    if isinstance(turn, str):
        return ChatResponse(text=turn, finish_reason="stop")
    if callable(turn):
        result = turn(request)
        if not isinstance(result, ChatResponse):
            raise ProviderError(
                f"a scripted turn callable returned {type(result).__name__}, not ChatResponse"
            )
        return result
    if isinstance(turn, Mapping):
        calls = tuple(
            parse_tool_call(c.get("id"), c.get("name"), c.get("arguments", {}))
            for c in turn.get("tool_calls", ())
            if isinstance(c, Mapping)
        )
        usage = turn.get("usage") or {}
        try:
            counted = Usage(int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0)))
        except (AttributeError, TypeError, ValueError):
            raise ProviderError(f"a scripted turn has an invalid usage {usage!r}") from None
        return ChatResponse(
            text=str(turn.get("text") or ""),
            tool_calls=calls,
            usage=counted,
            finish_reason="tool_calls" if calls else "stop",
        )
    raise ProviderError(f"unsupported scripted turn {type(turn).__name__}")
