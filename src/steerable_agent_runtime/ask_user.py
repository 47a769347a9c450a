"""The ``ask_user`` tool: structured questions the model asks the user, answered by an injected handler.

Spec: ``ask_user`` (structured user questions). The model calls ``ask_user`` with
``{intro, questions[], outro?}``; the field names mirror the protocol's ``AskUserQuestionsPayload``
so a host renders the arguments unchanged as its question card. Models do not always follow the
schema (gpt-oss via Ollama sends Inquirer-style ``name`` / ``message`` / ``choices``), so
:func:`normalise_ask_user_arguments` maps those aliases onto the canonical fields at the model-JSON
boundary; a handler only ever sees the canonical payload. A question that is still unusable fails
the call with :class:`~steerable_agent_runtime.errors.ToolRetry` naming the fix, and the model
retries within the turn.

The tool blocks: dispatch awaits the handler, and its answers ``{questionId: value}`` become the
result. A cancel, a timeout or a failing handler (an unreachable host) give an empty answers
mapping instead of hanging or failing the turn.

This module does no I/O of its own: the product injects the handler (a host round trip, an ACP
elicitation, or :func:`steerable_sidecar.run._terminal_prompt.terminal_ask_user_handler`).
"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final, Literal, NotRequired

from pydantic_core import to_jsonable_python
from typing_extensions import TypedDict  # pydantic reads it on Python 3.11 (spec/sidecar.schema.json)

from ._codes import ToolErrorCode
from ._utf8 import is_utf8
from .errors import ToolRetry, ToolSignal, UserError
from .modes import ToolMode
from .tools import Tool, ToolExposure
from .types import ToolResult

__all__ = [
    "ASK_USER_TOOL_NAME",
    "MAX_ID_CHARS",
    "MAX_OPTIONS",
    "MAX_QUESTIONS",
    "MAX_TEXT_CHARS",
    "AskUserHandler",
    "AskUserQuestion",
    "AskUserQuestionsPayload",
    "make_ask_user_tool",
    "normalise_ask_user_arguments",
]

logger = logging.getLogger(__name__)

ASK_USER_TOOL_NAME: Final = "ask_user"
"""The name the model calls."""

MAX_QUESTIONS: Final = 20
"""The most questions one ``ask_user`` call may carry."""

MAX_OPTIONS: Final = 50
"""The most options one question may carry."""

MAX_TEXT_CHARS: Final = 4_000
"""The longest question text, in characters."""

MAX_ID_CHARS: Final = 200
"""The longest question id, in characters."""


class AskUserQuestion(TypedDict):
    """One question of the canonical payload (the protocol's question shape).

    Attributes:
        id: Unique within the call; the key of this question's answer.
        text: The question shown to the user.
        type: ``"select"`` (pick from ``options``), ``"text"`` (free text) or ``"password"``
            (masked free text).
        options: The choices of a ``select`` question (at least one).
        multiSelect: For ``select``: the user may pick several; the answer is then a list.
    """

    id: str
    text: str
    type: Literal["select", "text", "password"]
    options: NotRequired[list[str]]
    multiSelect: NotRequired[bool]


class AskUserQuestionsPayload(TypedDict):
    """The canonical ``ask_user`` arguments, as the protocol's ``AskUserQuestionsPayload``.

    Attributes:
        intro: Shown before the questions (may be ``""``).
        questions: One to :data:`MAX_QUESTIONS` questions with unique ids.
        outro: Shown after the questions.
    """

    intro: str
    questions: list[AskUserQuestion]
    outro: NotRequired[str]


AskUserHandler = Callable[[AskUserQuestionsPayload], Awaitable[Mapping[str, Any] | None]]
"""The product-injected handler: shows the payload to the user and returns the answers.

It returns ``{questionId: value}`` (a ``str``, or a ``list[str]`` for a ``multiSelect`` question)
or ``None`` when the user cancelled. Raising means the user could not be reached.
"""

# -- normalisation tables -------------------------------------------------------------------------

_Kind = Literal["select", "text", "password"]

_TYPES: Final[dict[str, tuple[_Kind, bool]]] = {
    # canonical
    "select": ("select", False),
    "text": ("text", False),
    "password": ("password", False),
    # Inquirer.js / PyInquirer
    "list": ("select", False),
    "rawlist": ("select", False),
    "expand": ("select", False),
    "checkbox": ("select", True),
    "input": ("text", False),
    "editor": ("text", False),
    "number": ("text", False),
    "confirm": ("select", False),
    # common spellings of a multi-select
    "multiselect": ("select", True),
    "multi_select": ("select", True),
    "multi-select": ("select", True),
}
"""Lower-cased question ``type`` -> (canonical type, forced ``multiSelect``)."""

_CONFIRM_OPTIONS: Final = ("Yes", "No")
_ID_KEYS: Final = ("id", "name")
_TEXT_KEYS: Final = ("text", "message", "question")
_OPTION_KEYS: Final = ("options", "choices")
_MULTI_KEYS: Final = ("multiSelect", "multi_select", "multiple")
_LABEL_KEYS: Final = ("name", "label", "title")
_TRUE_STRINGS: Final = frozenset({"true", "yes", "1"})

_ID_FIX: Final = 'give every question a unique non-empty "id" and a "text"'
_SHAPE_FIX: Final = (
    'send "questions" as an array of objects {"id", "text", "type": "select"|"text"|"password", '
    '"options"?, "multiSelect"?}'
)


class _Problems:
    """Collects every problem of one call, so a single retry can fix them all."""

    def __init__(self) -> None:
        self.items: list[dict[str, str]] = []

    def add(self, field: str, message: str) -> None:
        self.items.append({"field": field, "message": message})

    def error(self) -> ToolRetry:
        listed = "; ".join(f"{p['field']} {p['message']}" for p in self.items)
        return ToolRetry(
            f"Invalid ask_user arguments: {listed}. Fix and call {ASK_USER_TOOL_NAME} again.",
            data={"code": ToolErrorCode.INVALID_QUESTIONS, "errors": self.items},
        )


def _fail(field: str, message: str) -> ToolRetry:
    problems = _Problems()
    problems.add(field, message)
    return problems.error()


def _first(obj: Mapping[str, Any], keys: tuple[str, ...]) -> Any:
    """The value of the first of ``keys`` present (and not ``None``) in ``obj``."""
    for key in keys:
        value = obj.get(key)
        if value is not None:
            return value
    return None


def _scalar_text(value: Any) -> str | None:
    """``value`` as a string when it is a JSON scalar (not ``null``), else ``None``."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        try:
            return str(value)
        except ValueError:  # an integer beyond the int-to-str digit limit
            return None
    return None


def _json_kind(value: Any) -> str:
    """The JSON type of ``value`` with its article, for error messages ("a string", "null")."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "an array"
    return f"a {type(value).__name__}"


_NOT_JSON: Final = object()


def _decode_json_text(value: str) -> Any:
    """Decode a JSON document sent as a string; :data:`_NOT_JSON` when it is not usable JSON."""
    try:
        return json.loads(value)
    except (ValueError, RecursionError):  # bad JSON, an over-long integer, nesting too deep
        return _NOT_JSON


def _option_label(choice: Any) -> str | None:
    """The display string of one option: a string, a scalar, or an Inquirer choice object."""
    if isinstance(choice, Mapping):
        if (_scalar_text(choice.get("type")) or "").lower() == "separator":
            return None
        label = _first(choice, _LABEL_KEYS)
        text = _scalar_text(label) if label is not None else None
        if text is None or not text.strip():
            text = _scalar_text(choice.get("value"))
        return text
    return _scalar_text(choice)


def _normalise_options(raw: Any, where: str, problems: _Problems) -> list[str] | None:
    """The option strings, without blanks or duplicates; ``None`` when none were given."""
    if raw is None:
        return None
    if isinstance(raw, str):
        decoded = _decode_json_text(raw)
        if not isinstance(decoded, list):
            problems.add(f"{where}.options", "is a string: send options as an array of strings")
            return None
        raw = decoded
    if isinstance(raw, Mapping):  # {"value": "label", ...}: labels are what the user picks from
        raw = list(raw.values())
    if not isinstance(raw, list):
        problems.add(f"{where}.options", f"is {_json_kind(raw)}: send options as an array of strings")
        return None
    options: list[str] = []
    for choice in raw:
        label = _option_label(choice)
        if label is not None and label.strip() and label not in options:
            options.append(label)
    if len(options) > MAX_OPTIONS:
        problems.add(
            f"{where}.options",
            f"has {len(options)} options; at most {MAX_OPTIONS} are allowed: shorten the list "
            'or ask a "text" question instead',
        )
        return None
    return options


def _multi_select(value: Any) -> bool | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return value.strip().lower() in _TRUE_STRINGS
    if isinstance(value, int | float):
        return bool(value)
    return None


def _normalise_question(raw: Any, where: str, problems: _Problems) -> AskUserQuestion | None:
    """One question in canonical form, or ``None`` (with its problems recorded)."""
    if not isinstance(raw, Mapping):
        problems.add(where, f"is {_json_kind(raw)}, not an object: {_SHAPE_FIX}")
        return None
    ident, text = _question_identity(raw, where, problems)
    kind, options, multi = _question_choices(raw, where, problems)
    if not ident or not text:
        return None
    if kind != "select":  # options and multiSelect mean nothing to a text or password question
        options, multi = None, None
    question: AskUserQuestion = {"id": ident, "text": text, "type": kind}
    if options:
        question["options"] = options
    if multi is not None:
        question["multiSelect"] = multi
    return question


def _question_identity(raw: Mapping[str, Any], where: str, problems: _Problems) -> tuple[str, str]:
    """The question's ``id`` and ``text`` (``""`` for one that is missing or unusable, recorded)."""
    ident = _scalar_text(_first(raw, _ID_KEYS))
    text = _scalar_text(_first(raw, _TEXT_KEYS))
    ident = ident.strip() if ident is not None else ""
    text = text if text is not None and text.strip() else ""
    if not ident:
        problems.add(where, f'has no "id": {_ID_FIX}')
    if not text:
        problems.add(where, f'has no "text": {_ID_FIX}')
    for field, value, limit in (("id", ident, MAX_ID_CHARS), ("text", text, MAX_TEXT_CHARS)):
        if not is_utf8(value):
            problems.add(
                where, f'has a "{field}" with an invalid character (a lone surrogate): send plain text'
            )
            ident, text = (ident, "") if field == "text" else ("", text)
        elif len(value) > limit:
            problems.add(where, f'has a "{field}" of {len(value)} characters; keep it under {limit}')
    return ident, text


def _question_choices(
    raw: Mapping[str, Any], where: str, problems: _Problems
) -> tuple[_Kind, list[str] | None, bool | None]:
    """The question's type, its options and ``multiSelect`` (problems recorded)."""
    raw_type = raw.get("type")
    type_key = raw_type.strip().lower() if isinstance(raw_type, str) else ""
    if type_key == "confirm":
        options: list[str] | None = list(_CONFIRM_OPTIONS)
    else:
        options = _normalise_options(_first(raw, _OPTION_KEYS), where, problems)
    default: tuple[_Kind, bool] = ("select", False) if options else ("text", False)
    kind, forced_multi = _TYPES.get(type_key, default)  # a missing or unknown type: by the options
    multi = True if forced_multi else _multi_select(_first(raw, _MULTI_KEYS))
    if kind == "select" and not options:
        problems.add(
            where,
            'is a "select" question without "options": give it a non-empty "options" array of '
            'strings, or make it a "text" question',
        )
    if options and not all(is_utf8(o) for o in options):
        problems.add(where, "has an option with an invalid character (a lone surrogate): send plain text")
    return kind, options, multi


def _raw_questions(raw: Mapping[str, Any]) -> list[Any]:
    """The ``questions`` list, decoded from a JSON string or wrapped when a single object was sent."""
    questions = raw.get("questions")
    if questions is None:
        if _first(raw, _TEXT_KEYS) is not None:  # one question sent as the whole arguments object
            return [raw]
        raise _fail("questions", f"is missing: {_SHAPE_FIX}")
    if isinstance(questions, str):
        decoded = _decode_json_text(questions)
        if decoded is _NOT_JSON:
            raise _fail("questions", f"is a string that is not valid JSON: {_SHAPE_FIX}")
        questions = decoded
    if isinstance(questions, Mapping):
        questions = [questions]
    if not isinstance(questions, list):
        raise _fail("questions", f"is {_json_kind(questions)}, not an array: {_SHAPE_FIX}")
    if not questions:
        raise _fail("questions", f"is empty: ask at least one question; {_SHAPE_FIX}")
    if len(questions) > MAX_QUESTIONS:
        raise _fail(
            "questions",
            f"has {len(questions)} questions; at most {MAX_QUESTIONS} are allowed per call: ask the "
            "most important ones now and the rest in a later call",
        )
    return questions


def normalise_ask_user_arguments(raw: Mapping[str, Any]) -> AskUserQuestionsPayload:
    """Turn the model's ``ask_user`` arguments into the canonical payload (the model-JSON boundary).

    Spec: ``ask_user`` (structured user questions). Inquirer-style and other aliases models send
    are mapped as docs/ask-user.md, "Aliases: what models really send" lists; keys outside the
    canonical payload, blank and duplicate options are dropped.

    Args:
        raw: The model's arguments object.

    Returns:
        The canonical payload: ``{intro, questions: [{id, text, type, options?, multiSelect?}],
        outro?}``.

    Raises:
        ToolRetry: With ``data == {"code": "invalid_questions", "errors": [{field, message}, ...]}``
            and an error naming the fix, for the cases docs/ask-user.md, "Invalid calls" lists
            (limits :data:`MAX_QUESTIONS`, :data:`MAX_OPTIONS`).
    """
    if not isinstance(raw, Mapping):
        raise _fail("(arguments)", f"must be an object {{intro, questions, outro?}}: {_SHAPE_FIX}")
    questions_in = _raw_questions(raw)
    problems = _Problems()
    questions: list[AskUserQuestion] = []
    first_index: dict[str, int] = {}
    for index, item in enumerate(questions_in):
        where = f"questions[{index}]"
        question = _normalise_question(item, where, problems)
        if question is None:
            continue
        earlier = first_index.setdefault(question["id"], index)
        if earlier != index:
            problems.add(
                where,
                f'repeats the "id" {question["id"]!r} of questions[{earlier}]: {_ID_FIX}',
            )
        questions.append(question)
    if problems.items:
        raise problems.error()

    intro = _scalar_text(raw.get("intro"))
    payload: AskUserQuestionsPayload = {"intro": intro or "", "questions": questions}
    outro = _scalar_text(raw.get("outro"))
    if outro is not None:
        payload["outro"] = outro
    return payload


# -- the tool -------------------------------------------------------------------------------------

_DESCRIPTION: Final = (
    "Ask the user one or more structured questions and wait for the answers. Use it when you need "
    "a decision, a preference or a value only the user can give; do not use it for things you can "
    "find out yourself. Arguments: intro (shown first), questions (1 to 20), outro (optional, shown "
    'last). Each question has a unique "id", a "text" and a "type": "select" (pick from '
    '"options"; set "multiSelect": true to allow several), "text" (free text) or "password" '
    "(masked). The result is data.answers: {questionId: answer}, the answer being a string, or a "
    "list of strings for a multiSelect question. If data.cancelled is true the user gave no "
    "answer: continue without it, do not ask the same questions again at once."
)

_PARAMETERS: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "intro": {"type": "string", "description": "Shown before the questions: why you are asking."},
        "questions": {
            "type": "array",
            "minItems": 1,
            "maxItems": MAX_QUESTIONS,
            "items": {
                "type": "object",
                "properties": {
                    "id": {"type": "string", "description": "Unique key of this question's answer."},
                    "text": {"type": "string", "description": "The question shown to the user."},
                    "type": {"type": "string", "enum": ["select", "text", "password"]},
                    "options": {
                        "type": "array",
                        "items": {"type": "string"},
                        "maxItems": MAX_OPTIONS,
                        "description": "The choices of a select question.",
                    },
                    "multiSelect": {
                        "type": "boolean",
                        "description": "select only: the user may pick several options.",
                    },
                },
                "required": ["id", "text", "type"],
                "additionalProperties": False,
            },
        },
        "outro": {"type": "string", "description": "Shown after the questions."},
    },
    "required": ["intro", "questions"],
    "additionalProperties": False,
}

_NO_ANSWER: Final[dict[str, str]] = {
    "cancelled": "The user cancelled the questions",
    "timeout": "The user did not answer in time",
    "error": "The user could not be reached",
}


def _no_answer(reason: Literal["cancelled", "timeout", "error"]) -> ToolResult:
    return ToolResult(
        success=True,
        message=f"{_NO_ANSWER[reason]} and gave no answer; continue without the answers.",
        data={"answers": {}, "cancelled": True, "reason": reason},
    )


def _answers_result(payload: AskUserQuestionsPayload, answers: Mapping[str, Any]) -> ToolResult:
    kept = {q["id"]: answers[q["id"]] for q in payload["questions"] if q["id"] in answers}
    return ToolResult(success=True, data={"answers": to_jsonable_python(kept, fallback=str)})


def make_ask_user_tool(handler: AskUserHandler, *, timeout_ms: int = 600_000) -> Tool:
    """Build the ``ask_user`` tool around a product-injected handler (the framework seam).

    Spec: ``ask_user``. Arguments go through :func:`normalise_ask_user_arguments` first; mode
    ``read``; the tool enforces ``timeout_ms`` itself (docs/ask-user.md, "The result").

    Args:
        handler: Awaited with the canonical payload; returns ``{questionId: value}`` or ``None``
            (the user cancelled). Raising means the user could not be reached; a
            :class:`~steerable_agent_runtime.errors.ToolSignal` passes through.
        timeout_ms: How long to wait for the handler, in milliseconds (default 600 000, ten
            minutes); ``0`` waits forever.

    Returns:
        The tool (not registered). A dispatch gives ``data == {"answers": {questionId: value}}``;
        a cancel, timeout or handler failure a *successful* ``data == {"answers": {},
        "cancelled": True, "reason": "cancelled" | "timeout" | "error"}``; invalid arguments the
        ``invalid_questions`` :class:`~steerable_agent_runtime.errors.ToolRetry`. Cancelling the
        dispatch from outside propagates ``asyncio.CancelledError``.

    Raises:
        UserError: When ``timeout_ms`` is negative.
    """
    if timeout_ms < 0:
        raise UserError(f"ask_user: timeout_ms must be >= 0 (0 waits forever), got {timeout_ms}")
    delay = timeout_ms / 1000 if timeout_ms else None

    def validate(arguments: dict[str, Any]) -> dict[str, Any]:
        return {"payload": normalise_ask_user_arguments(arguments)}

    async def ask_user(payload: AskUserQuestionsPayload) -> ToolResult:
        scope = asyncio.timeout(delay)
        try:
            async with scope:
                answers = await handler(payload)
        except ToolSignal:
            raise
        except TimeoutError as exc:
            if scope.expired():
                logger.warning("ask_user: no answer within %d ms", timeout_ms)
                return _no_answer("timeout")
            logger.warning("ask_user: the handler failed; the user gave no answer", exc_info=exc)
            return _no_answer("error")
        except asyncio.CancelledError as exc:
            task = asyncio.current_task()
            if task is None or task.cancelling():
                raise  # cancelled from outside: not ours to swallow
            # something inside the handler was cancelled (a dropped reverse channel): unreachable
            logger.warning("ask_user: the handler was cancelled; the user gave no answer", exc_info=exc)
            return _no_answer("error")
        except Exception as exc:
            logger.warning("ask_user: the handler failed; the user gave no answer", exc_info=exc)
            return _no_answer("error")
        if answers is None:
            return _no_answer("cancelled")
        if not isinstance(answers, Mapping):
            logger.warning("ask_user: the handler returned %s, not a mapping", type(answers).__name__)
            return _no_answer("error")
        return _answers_result(payload, answers)

    return Tool(
        name=ASK_USER_TOOL_NAME,
        description=_DESCRIPTION,
        parameters=copy.deepcopy(_PARAMETERS),
        handler=ask_user,
        mode=ToolMode.READ,  # no side effects: see the docstring
        exposure=ToolExposure.DIRECT,
        timeout_ms=0,  # the tool's own timeout gives an empty answer, not a failed call
        validate=validate,
    )
