"""Where the shared peer data lives: ``shared/`` beside the checkout (developers and CI alike).

``STEERABLE_SHARED_DIR`` overrides it. A missing folder fails loudly: the conformance suites are
part of the test run, never silently skipped.
"""

import os
from pathlib import Path

_CHECKOUT = Path(__file__).resolve().parent.parent


def shared_dir() -> Path:
    """Return the ``shared/`` folder, or raise naming where it was looked for."""
    candidates = [Path(os.environ["STEERABLE_SHARED_DIR"])] if os.environ.get("STEERABLE_SHARED_DIR") else []
    candidates.append(_CHECKOUT.parent / "shared")
    for candidate in candidates:
        if (candidate / "peer").is_dir():
            return candidate
    tried = ", ".join(str(c) for c in candidates)
    raise FileNotFoundError(f"shared/peer not found (tried {tried}); set STEERABLE_SHARED_DIR")


def peer_dir(name: str) -> Path:
    """Return ``shared/peer/<name>``."""
    return shared_dir() / "peer" / name
