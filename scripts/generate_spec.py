"""Regenerate ``spec/ToolCall.schema.json`` and ``spec/ToolResult.schema.json`` from the models.

Run ``python scripts/generate_spec.py`` after changing ``steerable_agent_runtime.types``;
``--check`` exits 1 when the files on disk differ (``tests/test_contract.py`` does the same).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from steerable_agent_runtime.types import ToolCall, ToolResult

SPEC = Path(__file__).resolve().parent.parent / "spec"


DESCRIPTIONS = {
    "ToolCall": "What the assistant asks to run (spec: ToolCall). Extra fields are rejected.",
    "ToolResult": "What the runtime reports back (spec: ToolResult). Extra fields are kept.",
}


def _wire(schema: dict[str, Any]) -> dict[str, Any]:
    """Describe the wire form: optional fields are omitted when unset (``exclude_none``), never null."""
    for prop in schema.get("properties", {}).values():
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


def schemas() -> dict[str, str]:
    """Return ``{file name: JSON text}`` for every generated schema."""
    out = {}
    for model in (ToolCall, ToolResult):
        schema = _wire(model.model_json_schema(by_alias=True))
        schema["description"] = DESCRIPTIONS[model.__name__]
        schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}
        out[f"{model.__name__}.schema.json"] = json.dumps(schema, indent=2, sort_keys=True) + "\n"
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
