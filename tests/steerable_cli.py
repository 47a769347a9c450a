"""Running ``steerable`` as a real process, the one way every CLI test does."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path


def run_steerable(
    *args: str,
    env: Mapping[str, str],
    cwd: Path | None = None,
    stdin: str | None = None,
    timeout_s: float = 120,
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m steerable_sidecar ARGS`` as a real process (no PATH lookup) and wait for it.

    ``env`` is the child's whole environment and ``stdin`` its input (``None``: this process's own
    stdin); stdout and stderr come back as UTF-8 text. Raises ``subprocess.TimeoutExpired`` after
    ``timeout_s`` seconds.
    """
    return subprocess.run(
        [sys.executable, "-P", "-m", "steerable_sidecar", *args],
        input=stdin,
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=dict(env),
        cwd=cwd,
        timeout=timeout_s,
        check=False,
    )
