"""Where the public peer data lives: ``tests/data/peer/`` in the checkout.

The data sets (Codex ``apply_patch`` scenarios, labelled tool-retrieval sets, real MCP inventories)
are committed with the tests, each with a ``SOURCE.md`` naming its upstream repository, commit and
licence, so a plain clone runs the conformance suites. A missing folder fails loudly: they are part
of the test run, never silently skipped.
"""

from pathlib import Path

PEER = Path(__file__).resolve().parent / "data" / "peer"


def peer_dir(name: str) -> Path:
    """Return ``tests/data/peer/<name>``, or raise naming the folder that is missing."""
    path = PEER / name
    if not path.is_dir():
        raise FileNotFoundError(f"peer data {name!r} not found at {path}")
    return path
