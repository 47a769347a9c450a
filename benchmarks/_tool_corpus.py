"""Shared helpers for the tool_search benchmarks: the peer data sets and synthetic inventories.

The data is ``tests/data/peer/tool-retrieval/`` (Seal-Tools, MetaTool), committed with the
tests and found through ``tests/peer_data.py``.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any, Final

from steerable_agent_runtime.modes import ToolMode
from steerable_agent_runtime.tools import Tool, ToolExposure

_CHECKOUT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(_CHECKOUT / "tests"))  # peer_data: the one place that finds the peer data

from peer_data import peer_dir  # noqa: E402


def retrieval_dir() -> Path:
    """Return ``tests/data/peer/tool-retrieval``."""
    return peer_dir("tool-retrieval")


def load_jsonl(path: Path) -> list[dict[str, Any]]:
    """Read one JSON object per line."""
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def load_dataset(name: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Return ``(tools, queries)`` of ``seal-tools`` or ``metatool``."""
    folder = retrieval_dir() / name
    return load_jsonl(folder / "tools.jsonl"), load_jsonl(folder / "queries.jsonl")


async def _noop(**_: Any) -> dict[str, Any]:
    return {}


def deferred_tool(name: str, description: str, parameters: dict[str, Any] | None = None) -> Tool:
    """A deferred tool with a no-op handler (cheap: no schema check)."""
    return Tool(
        name=name,
        description=description,
        parameters=parameters or {"type": "object", "properties": {}},
        handler=_noop,
        mode=ToolMode.READ,
        exposure=ToolExposure.DEFERRED,
    )


def synthetic_inventory(size: int) -> list[tuple[str, str]]:
    """``size`` distinct ``(name, description)`` pairs grown from the 4,076 Seal-Tools tools.

    The first 4,076 are Seal-Tools as-is, but for a name a router would refuse (about 1 in 80
    holds a space: ``requestFirst Aid Assistance``), which gets ``_`` for each character a tool
    name may not hold, as an MCP server's tool does when it is registered. Each later copy ``r``
    of tool ``i`` is namespaced like an MCP server's tool (``mcp__srv<r>__<name>``) and its
    description gets the first eight words of another Seal-Tools description appended, so the
    vocabulary keeps its natural (Zipf) shape and copies do not tie.
    """
    seal, _ = load_dataset("seal-tools")
    count = len(seal)
    out: list[tuple[str, str]] = []
    for k in range(size):
        base = seal[k % count]
        name = _NOT_NAME_CHAR.sub("_", base["name"])
        copy = k // count
        if copy == 0:
            out.append((name, base["description"]))
            continue
        other = seal[(k * 7919 + copy * 104729) % count]
        extra = " ".join(other["description"].split()[:8])
        out.append((f"mcp__srv{copy}__{name}", f"{base['description']} {extra}"))
    return out


_NOT_NAME_CHAR: Final = re.compile(r"[^A-Za-z0-9_-]")
"""What a tool name may not hold (spec: ENV-10, ``^[a-zA-Z0-9_-]{1,64}$``)."""
