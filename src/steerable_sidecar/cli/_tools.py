"""``steerable tools``: list the tools offered in the workspace (what ``steerable mcp`` serves)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..exit_codes import ExitCode

if TYPE_CHECKING:
    from steerable_agent_runtime.tools import Tool

    from .._boot import Booted
    from ..shared._signals import Shutdown

__all__ = ["add_tools_arguments", "run_tools"]


def add_tools_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--json`` and ``--all`` to ``steerable tools``' parser."""
    parser.add_argument("--json", action="store_true", help="print the tools' full descriptors as JSON")
    parser.add_argument(
        "--all", action="store_true", help="every registered tool, deferred and hidden ones included"
    )


async def run_tools(args: argparse.Namespace, booted: Booted, shutdown: Shutdown | None = None) -> int:
    """Print the offered tools (``--all``: every registered one) as a table or, ``--json``, descriptors."""
    from .._boot import offered_tools

    router = booted.router
    listed = list(router) if args.all else offered_tools(router, booted.harness.offered)
    if args.json:
        print(json.dumps([tool.describe() for tool in listed], indent=2))
    else:
        _print_table(listed)
    return ExitCode.OK


def _print_table(tools: Sequence[Tool]) -> None:
    import shutil
    import textwrap

    rows = [(t.name, t.mode.value, t.exposure.value, " ".join(t.description.split())) for t in tools]
    widths = [max(len(r[i]) for r in rows + [("NAME", "MODE", "TIER", "")]) for i in range(3)]
    width = max(shutil.get_terminal_size((120, 24)).columns - sum(widths) - 6, 30)
    header = ("NAME", "MODE", "TIER", "DESCRIPTION")
    for row in [header, *rows]:
        desc = textwrap.shorten(row[3], width=width, placeholder="...") if row[3] else ""
        print(f"{row[0]:<{widths[0]}}  {row[1]:<{widths[1]}}  {row[2]:<{widths[2]}}  {desc}".rstrip())
