"""Turn a Python function signature into a JSON Schema and a fast argument validator.

Each parameter becomes a key of a closed ``TypedDict`` (``extra="forbid"``) validated by a
pydantic ``TypeAdapter``: validation returns a plain dict that is splatted into the function, so
Python's own defaults apply to keys the model left out. Parameter descriptions come from
``Annotated[..., Field(description=...)]`` or from the Google-style ``Args:`` section of the
docstring.

Only :func:`function_schema` (and a :func:`validator_at_first_call` when first called) imports
pydantic: a tool registered with its schema computed ahead of time costs none of it, and the
annotations evaluated are the parameters' alone (the ones that name ``CallContext`` while
registering), never the return annotation, so a tool module may import its result type and its
``Field`` lazily (start-up: ``benchmarks/startup.py``).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass
from types import SimpleNamespace, UnionType
from typing import (
    TYPE_CHECKING,
    Annotated,
    Any,
    NotRequired,
    Required,
    Union,
    get_args,
    get_origin,
    get_type_hints,
)

from .errors import UserError

if TYPE_CHECKING:
    from pydantic import TypeAdapter

__all__ = [
    "FunctionSchema",
    "context_parameter",
    "describe_function",
    "function_schema",
    "validator_at_first_call",
]

_ARGS_HEADER = re.compile(r"^\s*(Args|Arguments|Parameters):\s*$")
_SECTION_HEADER = re.compile(r"^\s*[A-Z][A-Za-z ]*:\s*$")
_ARG_LINE = re.compile(r"^\s*(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


@dataclass(frozen=True, slots=True)
class FunctionSchema:
    """The JSON Schema of a function's parameters and the validator that enforces it."""

    parameters: dict[str, Any]
    adapter: TypeAdapter[Any]


def describe_function(fn: Callable[..., Any]) -> str:
    """Return the summary part of ``fn``'s docstring (everything before the first section)."""
    doc = inspect.getdoc(fn) or ""
    lines: list[str] = []
    for line in doc.splitlines():
        if _SECTION_HEADER.match(line):
            break
        lines.append(line)
    return "\n".join(lines).strip()


def _docstring_args(fn: Callable[..., Any]) -> dict[str, str]:
    doc = inspect.getdoc(fn) or ""
    out: dict[str, str] = {}
    in_args = False
    current: str | None = None
    base_indent = 0
    for line in doc.splitlines():
        if _ARGS_HEADER.match(line):
            in_args, current = True, None
            continue
        if not in_args:
            continue
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        if _SECTION_HEADER.match(line) and indent == 0:
            break
        match = _ARG_LINE.match(line)
        if match and (current is None or indent <= base_indent):
            current, base_indent = match.group(1).lstrip("*"), indent
            out[current] = match.group(2).strip()
        elif current is not None:
            out[current] = f"{out[current]} {line.strip()}".strip()
    return out


def context_parameter(fn: Callable[..., Any], *, name: str | None = None) -> str | None:
    """The name of ``fn``'s parameter that receives the call's context, or ``None``.

    Such a parameter is annotated :class:`~steerable_agent_runtime.context.CallContext`,
    ``CallContext | None`` (``Optional``) or either inside ``Annotated[...]``. Dispatch passes the
    call's context there; :func:`function_schema` leaves it out of the schema. Cheap for the common
    case: the hints are resolved only when an annotation names the class.

    Args:
        fn: The tool's function.
        name: The tool's name, for error messages (default ``fn.__name__``).

    Raises:
        UserError: Naming the tool and the parameter: the annotations naming it cannot be
            resolved; two parameters ask for the context; one names ``CallContext`` in another
            form (``list[CallContext]``, ``CallContext | int``); it is positional-only or ``*args``.
    """
    raw = inspect.get_annotations(fn)
    named = [
        k for k, v in raw.items() if k != "return" and "CallContext" in (v if isinstance(v, str) else repr(v))
    ]
    if not named:
        return None
    tool = name if name is not None else fn.__name__
    hints = _parameter_hints(fn, tool, named)
    found = [k for k in named if _is_context(hints.get(k), tool, k)]
    if len(found) > 1:
        raise UserError(
            f"tool {tool!r}: parameters {', '.join(map(repr, found))} both ask for the call context; "
            "declare one CallContext parameter"
        )
    if not found:
        return None
    param = inspect.signature(fn).parameters.get(found[0])
    if param is None or param.kind not in (param.POSITIONAL_OR_KEYWORD, param.KEYWORD_ONLY):
        raise UserError(
            f"tool {tool!r}: the CallContext parameter {found[0]!r} must be a plain named parameter "
            "(dispatch passes it by keyword)"
        )
    return found[0]


def _parameter_hints(
    fn: Callable[..., Any], tool: str, names: Collection[str] | None = None
) -> dict[str, Any]:
    """``get_type_hints(fn, include_extras=True)`` for the parameters ``names`` (default: every one).

    The return annotation, and a parameter not asked for, is never evaluated: what they name need
    not be importable (or imported) yet.

    Raises:
        UserError: An annotation asked for cannot be resolved (naming the tool).
    """
    raw = getattr(fn, "__annotations__", None)
    try:
        if not isinstance(raw, dict):  # not a plain function: typing says what it can
            return get_type_hints(fn, include_extras=True)
        wanted = {k: v for k, v in raw.items() if k != "return" and (names is None or k in names)}
        # evaluated as get_type_hints evaluates fn's own: in the globals of fn (unwrapped)
        return get_type_hints(SimpleNamespace(__annotations__=wanted, __wrapped__=fn), include_extras=True)
    except Exception as exc:  # unresolved forward references and the like
        raise UserError(f"cannot resolve the type hints of tool {tool!r}: {exc}") from exc


def _is_context(hint: Any, tool: str, param: str) -> bool:
    """``True`` for ``CallContext``, ``CallContext | None`` and those in ``Annotated``; ``False`` without it.

    Raises:
        UserError: When ``CallContext`` sits in any other form, which dispatch cannot fill.
    """
    from .context import CallContext

    bare = get_args(hint)[0] if get_origin(hint) is Annotated else hint
    if bare is CallContext:
        return True
    if get_origin(bare) in (Union, UnionType) and set(get_args(bare)) == {CallContext, type(None)}:
        return True
    if _mentions(bare, CallContext):
        raise UserError(
            f"tool {tool!r}: parameter {param!r} names CallContext inside {hint!r}; annotate it "
            "CallContext (or CallContext | None) to receive the call's context"
        )
    return False


def _mentions(hint: Any, target: type) -> bool:
    """``True`` when ``target`` appears anywhere inside the type expression ``hint``."""
    return hint is target or any(_mentions(arg, target) for arg in get_args(hint))


def function_schema(fn: Callable[..., Any], *, name: str) -> FunctionSchema:
    """Build the JSON Schema and validator for ``fn``'s parameters.

    Args:
        fn: A plain or ``async`` function whose parameters are all JSON-representable.
        name: The tool name, used as the schema title.

    Returns:
        A :class:`FunctionSchema` with an ``object`` schema (``additionalProperties: false``);
        the :func:`context_parameter` is not in it (dispatch injects it).

    Raises:
        UserError: When the signature has ``*args``/``**kwargs`` or positional-only parameters,
            an annotation pydantic cannot turn into a schema, or a context parameter
            :func:`context_parameter` refuses.
    """
    from pydantic import ConfigDict, Field, TypeAdapter
    from pydantic_core import to_jsonable_python
    from typing_extensions import TypedDict

    signature = inspect.signature(fn)
    hints = _parameter_hints(fn, name)
    docs = _docstring_args(fn)
    fields: dict[str, Any] = {}
    defaults: dict[str, Any] = {}
    context = context_parameter(fn, name=name)
    for param in signature.parameters.values():
        if param.name == context:
            continue  # injected by dispatch, never sent by the model
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
            raise UserError(
                f"tool {name!r}: parameter {param.name!r} must be a plain named parameter "
                "(no *args, **kwargs or positional-only parameters)"
            )
        annotation: Any = hints.get(param.name, Any)
        if param.name in docs:
            annotation = Annotated[annotation, Field(description=docs[param.name])]
        if param.default is inspect.Parameter.empty:
            fields[param.name] = Required[annotation]
        else:
            fields[param.name] = NotRequired[annotation]
            defaults[param.name] = param.default
    make_typed_dict: Any = TypedDict  # the functional form, with a runtime-built field mapping
    typed_dict: Any = make_typed_dict(name, fields)
    typed_dict.__pydantic_config__ = ConfigDict(extra="forbid")
    try:
        adapter: TypeAdapter[Any] = TypeAdapter(typed_dict)
        schema = adapter.json_schema()
    except Exception as exc:
        raise UserError(f"tool {name!r}: cannot build a JSON Schema from its signature: {exc}") from exc
    properties = schema.setdefault("properties", {})
    for key, value in defaults.items():
        try:
            properties[key]["default"] = to_jsonable_python(value)
        except Exception:  # a default with no JSON form is simply not advertised
            continue
    schema["title"] = name
    schema["additionalProperties"] = False
    return FunctionSchema(parameters=schema, adapter=adapter)


def validator_at_first_call(fn: Callable[..., Any], name: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """``fn``'s pydantic validator, as :func:`function_schema` builds it, built when first called.

    Registering a tool with its schema computed ahead of time thus costs no pydantic at all.
    """
    built: Callable[[dict[str, Any]], dict[str, Any]] | None = None

    def validate_python(arguments: dict[str, Any]) -> dict[str, Any]:
        nonlocal built
        if built is None:
            built = function_schema(fn, name=name).adapter.validator.validate_python
        return built(arguments)

    return validate_python
