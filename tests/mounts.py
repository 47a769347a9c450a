"""A real small tmpfs for the tests of full and read-only disks (root only; skipped elsewhere)."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def tmpfs(mount: Path, options: str) -> Iterator[Path]:
    """Mount a tmpfs at ``mount`` (made if missing) with ``options`` (``size=64k``...), unmount after.

    Skips the test when this process may not mount (not root, no mount namespace rights).
    """
    mount.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(mount)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)
