"""What the ``steerable run`` tests share: reading the one JSON summary line a run prints."""

from __future__ import annotations

import json
import subprocess
from typing import Any


def summary_of(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """The run's summary: stdout is exactly one line, the JSON summary (docs/headless.md)."""
    lines = proc.stdout.splitlines()
    assert len(lines) == 1, (proc.stdout, proc.stderr)
    return dict(json.loads(lines[0]))
