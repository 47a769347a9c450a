"""Regenerate ``spec/*.schema.json`` from the code.

``ToolCall.schema.json`` and ``ToolResult.schema.json`` come from ``steerable_agent_runtime.types``;
``sidecar.schema.json`` (every method's params and result, the events, the error codes) from
``steerable_sidecar.sidecar.protocol``, the request models of ``steerable_sidecar.sidecar._server`` and
``steerable_sidecar.rpc.ERROR_CODES``. Run ``python scripts/generate_spec.py`` after changing any of
them (then ``npm run generate --prefix js`` for the TypeScript types); ``--check`` exits 1 when the
files on disk differ (``tests/test_contract.py`` does the same).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any, Literal, cast

from pydantic import BaseModel, TypeAdapter

from steerable_agent_runtime.types import ToolCall, ToolResult
from steerable_sidecar.rpc import _peer as rpc
from steerable_sidecar.sidecar import _server as sidecar
from steerable_sidecar.sidecar import protocol

SPEC = Path(__file__).resolve().parent.parent / "spec"


DESCRIPTIONS = {
    "ToolCall": "What the assistant asks to run (spec: ToolCall). Extra fields are rejected.",
    "ToolResult": "What the runtime reports back (spec: ToolResult). Extra fields are kept.",
}


def _wire(schema: dict[str, Any]) -> dict[str, Any]:
    """Describe the wire form: optional fields are omitted when unset (``exclude_none``), never null."""
    for prop in schema.get("properties", {}).values():
        if prop.get("default", "") is None and "anyOf" not in prop:  # a null default of a typed field
            prop.pop("default")
        variants = prop.get("anyOf")
        if variants and {"type": "null"} in variants and prop.get("default", "") is None:
            rest = [v for v in variants if v != {"type": "null"}]
            prop.pop("anyOf")
            prop.pop("default")
            if len(rest) == 1:
                prop.update(rest[0])
            else:
                prop["anyOf"] = rest
    return schema


_UNIONS: dict[str, Any] = {
    "ChatEvent": protocol.ChatEvent,
    "AskUserResult": protocol.AskUserResult,
    "HostToolEntry": protocol.HostToolEntry,
}
"""Named unions: a ``$defs`` entry each, and a ``$ref`` wherever a field holds one."""
_REQUEST_MODELS: dict[str, type[BaseModel]] = {
    "InvokeParams": sidecar.InvokeParams,
    "ChatParams": sidecar.ChatParams,
    "CancelParams": sidecar.CancelParams,
    "PluginParams": sidecar.PluginParams,
}
_ENVELOPES = {"ToolResult": {"x-envelope": "ToolResult"}, "any": {}}  # made $refs by _untitled


def _untitled(node: Any, *, top: bool = True) -> Any:
    """Drop pydantic's ``title`` from every nested schema (a definition keeps its name as key).

    A placeholder ``{"type": "object", "x-envelope": NAME}`` (``protocol.ToolResultWire``) becomes
    the ``$ref`` to ``NAME.schema.json``, and ``{"x-def": NAME}`` the ``$ref`` to ``#/$defs/NAME``;
    descriptions lose reST's double backticks (Markdown's single ones, for the TypeScript doc
    comments).
    """
    if isinstance(node, dict) and "x-envelope" in node:
        return {"$ref": f"{node['x-envelope']}.schema.json"}
    if isinstance(node, dict) and "x-def" in node:
        return {"$ref": f"#/$defs/{node['x-def']}"}
    if isinstance(node, dict):
        return {
            k: v.replace("``", "`") if k == "description" and isinstance(v, str) else _untitled(v, top=False)
            for k, v in node.items()
            if not (k == "title" and not top and isinstance(v, str))
        }
    if isinstance(node, list):
        return [_untitled(v, top=False) for v in node]
    return node


def _error_data(cls: type) -> dict[str, Any]:
    """The JSON Schema of ``cls``'s error ``data``: ``type`` and its own and ancestors' attributes."""
    properties: dict[str, Any] = {"type": {"type": "string", "description": "The class name."}}
    for base in reversed(cls.__mro__):
        for key, kind in protocol.ERROR_DATA.get(base.__name__, {}).items():
            properties[key] = TypeAdapter[Any](cast(Any, kind)).json_schema()
    return {"type": "object", "properties": properties, "required": ["type"], "additionalProperties": False}


def _sidecar_schema() -> dict[str, Any]:
    refs: dict[object, str] = {}
    adapters: list[tuple[str, Literal["validation"], TypeAdapter[Any]]] = []

    def ref(kind: object) -> dict[str, Any]:
        if kind is None:
            return {"type": "null"}  # the method takes no params: none, {} or []
        if isinstance(kind, str):
            return dict(_ENVELOPES[kind]) if kind in _ENVELOPES else {"$ref": f"#/$defs/{kind}"}
        union = next((name for name, body in _UNIONS.items() if body == kind), None)
        if union is not None:
            return {"$ref": f"#/$defs/{union}"}
        name = refs.setdefault(kind, getattr(kind, "__name__", ""))
        assert name, f"{kind!r} has no name: add it to _UNIONS"
        adapters.append((name, "validation", TypeAdapter[Any](cast(Any, kind))))
        return {"$ref": f"#/$defs/{name}"}

    methods = {m: {"params": ref(p), "result": ref(r)} for m, (p, r) in protocol.METHODS.items()}
    reverse = {m: {"params": ref(p), "result": ref(r)} for m, (p, r) in protocol.REVERSE.items()}
    notes = {m: {"params": ref(p)} for m, p in protocol.NOTIFICATIONS.items()}
    keyed = [*adapters, *((name, "validation", TypeAdapter[Any](union)) for name, union in _UNIONS.items())]
    tops, defs = TypeAdapter.json_schemas(keyed, ref_template="#/$defs/{model}")
    definitions: dict[str, Any] = dict(defs.get("$defs", {}))
    for (key, _), schema in tops.items():
        definitions.setdefault(key, schema)
    unions = {name: definitions[name] for name in _UNIONS}
    for schema in definitions.values():  # a field holding a named union refers to it
        for name_, prop in schema.get("properties", {}).items():
            for union, body in unions.items():
                if prop == body or prop.get("anyOf") == body.get("anyOf"):
                    schema["properties"][name_] = {"$ref": f"#/$defs/{union}"}
    for name, model in _REQUEST_MODELS.items():
        definitions[name] = _wire(model.model_json_schema(by_alias=True))
    errors = {  # each class's code, its nearest ancestor in the table (the tree a client rebuilds), gist
        cls.__name__: {
            "code": code,
            "parent": next((base.__name__ for base in cls.__mro__[1:] if base in rpc.ERROR_CODES), None),
            "description": re.sub(
                r":\w+:`~?[\w.]*?(\w+)`", r"\1", (cls.__doc__ or "").strip().splitlines()[0]
            ),
            "data": _error_data(cls),
        }
        for cls, code in rpc.ERROR_CODES.items()
    }
    standard = {
        "ParseError": rpc.PARSE_ERROR,
        "InvalidRequest": rpc.INVALID_REQUEST,
        "MethodNotFound": rpc.METHOD_NOT_FOUND,
        "InvalidParams": rpc.INVALID_PARAMS,
        "InternalError": rpc.INTERNAL_ERROR,
    }
    whole: dict[str, Any] = _untitled(
        {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "SidecarProtocol",
            "description": (
                "The sidecar's JSON-RPC 2.0 protocol (docs/sidecar-protocol.md): each method's params"
                " and result, the notifications, and the error codes. Generated by"
                " scripts/generate_spec.py from steerable_sidecar.sidecar.protocol; js/ generates its"
                " TypeScript types from it."
            ),
            "protocolVersion": sidecar.PROTOCOL_VERSION,
            "methods": methods,
            "reverse": reverse,
            "notifications": notes,
            "standardErrorCodes": standard,
            "errors": errors,
            "$defs": dict(sorted(definitions.items())),
        }
    )
    return whole


def schemas() -> dict[str, str]:
    """Return ``{file name: JSON text}`` for every generated schema."""
    out = {}
    for model in (ToolCall, ToolResult):
        schema = _wire(model.model_json_schema(by_alias=True))
        schema["description"] = DESCRIPTIONS[model.__name__]
        schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}
        out[f"{model.__name__}.schema.json"] = json.dumps(schema, indent=2, sort_keys=True) + "\n"
    out["sidecar.schema.json"] = json.dumps(_sidecar_schema(), indent=2) + "\n"
    return out


def main(argv: list[str]) -> int:
    """Write the schemas, or with ``--check`` report drift."""
    stale = []
    for name, text in schemas().items():
        path = SPEC / name
        if "--check" in argv:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(name)
        else:
            path.write_text(text, encoding="utf-8")
    if stale:
        print(f"stale: {', '.join(stale)}; run python scripts/generate_spec.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
