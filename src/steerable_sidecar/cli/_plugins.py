"""``steerable plugins``: the plugins found, where each came from, whether it loaded, and its tools."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from ..exit_codes import ExitCode

if TYPE_CHECKING:
    from .._boot import Booted
    from ..shared._signals import Shutdown

__all__ = ["add_plugins_arguments", "run_plugins"]


def add_plugins_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--json`` to ``steerable plugins``' parser."""
    parser.add_argument("--json", action="store_true", help="print the plugins as JSON")


async def run_plugins(args: argparse.Namespace, booted: Booted, shutdown: Shutdown | None = None) -> int:
    """Print the plugins the boot found (docs/plugins.md), as lines or, ``--json``, as JSON."""
    infos = booted.plugins.plugins()
    if args.json:
        print(json.dumps([info.to_dict() for info in infos], indent=2))
        return ExitCode.OK
    if not infos:
        print(
            "no plugins (install a package with a steerable.tools entry point, or set STEERABLE_PLUGIN_DIR)"
        )
        return ExitCode.OK
    for info in infos:
        print(f"{info.name}  [{info.state}]  {info.origin}: {info.source}")
        print(f"    tools: {', '.join(info.tools) or '(none)'}")
    return ExitCode.OK
