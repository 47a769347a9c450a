"""A clone with nothing beside it is complete: no tracked file reaches outside the checkout.

The tests once read their peer data and requirement index from a ``shared/`` folder next to the
checkout, which a plain ``git clone`` does not have. Both now live in the repository
(``tests/data/peer/``, ``docs/requirements.md``); this keeps it so.
"""

import shutil
import subprocess
from pathlib import Path

import pytest

CHECKOUT = Path(__file__).resolve().parent.parent
SCOPE = ("README.md", "docs", "src", "tests", "benchmarks", "scripts")
# spelled in pieces so that this file does not match itself
FORBIDDEN = ("../" + "shared", "STEERABLE_" + "SHARED_DIR")


def _tracked_files() -> list[str]:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    run = subprocess.run(
        ["git", "-C", str(CHECKOUT), "ls-files", "-z", "--", *SCOPE],
        capture_output=True,
        text=True,
        check=False,
    )
    if run.returncode != 0:
        pytest.skip(f"not a git checkout: {run.stderr.strip()}")
    return [name for name in run.stdout.split("\0") if name]


def test_no_tracked_file_points_outside_the_checkout():
    this = Path(__file__).resolve()
    offenders = []
    for name in _tracked_files():
        path = CHECKOUT / name
        if path.resolve() == this or not path.is_file():
            continue
        text = path.read_bytes().decode("utf-8", errors="replace")
        offenders += [f"{name}: {word}" for word in FORBIDDEN if word in text]
    assert offenders == []


def test_the_peer_data_and_the_requirement_index_are_in_the_checkout():
    from peer_data import peer_dir

    for name in ("codex-apply-patch", "tool-retrieval", "mcp-inventories"):
        assert (peer_dir(name) / "SOURCE.md").is_file()
    assert peer_dir("codex-apply-patch").is_relative_to(CHECKOUT)
    assert (CHECKOUT / "docs" / "requirements.md").is_file()
