"""Processes the tests look for: what a sandboxed command left running (by a marker in its argv)."""

from __future__ import annotations

from pathlib import Path


def running(marker: str) -> bool:
    """Whether a process whose command line holds ``marker`` is alive (Linux ``/proc``)."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker in (entry / "cmdline").read_bytes().decode(errors="replace"):
                    return True
            except OSError:
                continue
    return False
