"""Pieces every front end shares: no public API here.

Secrets redaction, signals, logging, the state directory, the workspace rule, session locks,
the session assembly and the bounded HTTP reading the providers and web tools use; each front end
imports the private module it needs.
"""

from __future__ import annotations

__all__: list[str] = []
