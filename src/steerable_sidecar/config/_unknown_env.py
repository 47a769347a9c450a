"""``STEERABLE_*`` names that nothing reads, reported with the closest known one (issue 32, item 4).

A misspelt variable would otherwise be ignored in silence: ``PROVIDR=ollama`` (after the prefix)
leaves the provider ``openai``, and the user is told the OpenAI key is missing. So every command
prints one line on stderr per unknown name (:func:`warn_unknown_variables`, called by
``steerable_sidecar.cli._main``), ``NAME`` being the name as set::

    steerable: warning: NAME is not a steerable variable; did you mean STEERABLE_PROVIDER?

and ``steerable doctor`` lists each as a ``warn`` row. Neither fails the command (the variable
changes nothing), nor writes to stdout, which carries the protocols (``mcp``, ``acp``,
``sidecar``, ``session``, ``call``'s JSON). A variable's value is never shown: a misspelt key is
still a key.

The known names are those of the variable table, :data:`steerable_sidecar.config._settings.KNOWN_NAMES`
(every variable in docs/configuration.md, and the internal ones). Importing the table loads most
of steerable (some 100 ms), too much for every command, so :data:`KNOWN_NAMES` here is a copy of it
that tests/sidecar/config/test_unknown_env.py holds equal: the check is one set lookup per environment
variable, and ``difflib`` is imported only when there is something to report.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Final, TextIO

__all__ = ["KNOWN_NAMES", "PREFIX", "unknown_message", "unknown_variables", "warn_unknown_variables"]

PREFIX: Final = "STEERABLE_"

KNOWN_NAMES: Final = frozenset(
    {
        "STEERABLE_ALLOW_PLUGINS_IN_WORKSPACE",
        "STEERABLE_ALLOW_PROTECTED_WRITES",
        "STEERABLE_API_KEY",
        "STEERABLE_BASE_URL",
        "STEERABLE_CONFIG",
        "STEERABLE_CONFIG_IN_WORKSPACE",
        "STEERABLE_CONFORMANCE_PYTHON",
        "STEERABLE_CONFORMANCE_SRC",
        "STEERABLE_CONSENT",
        "STEERABLE_CROSS_PROCESS_LOCK",
        "STEERABLE_EGRESS_CONFINED",
        "STEERABLE_EXTRA_BODY",
        "STEERABLE_EXTRA_HEADERS",
        "STEERABLE_LOG_LEVEL",
        "STEERABLE_MAX_TOKENS",
        "STEERABLE_MCP_CONFIG",
        "STEERABLE_MCP_MAX_RESULT_BYTES",
        "STEERABLE_MODEL",
        "STEERABLE_PLUGIN_DIR",
        "STEERABLE_PROFILE",
        "STEERABLE_PROVIDER",
        "STEERABLE_REQUEST_TIMEOUT_MS",
        "STEERABLE_REQUIRE_READ_BEFORE_WRITE",
        "STEERABLE_RIPGREP",
        "STEERABLE_RUN_CODE",
        "STEERABLE_RUN_CODE_MAX_CALLS",
        "STEERABLE_RUN_CODE_MAX_OUTPUT_BYTES",
        "STEERABLE_RUN_CODE_MAX_SOURCE_BYTES",
        "STEERABLE_RUN_CODE_MAX_VALUE_BYTES",
        "STEERABLE_RUN_CODE_TIMEOUT_MS",
        "STEERABLE_SANDBOX",
        "STEERABLE_SANDBOX_CPU_SECONDS",
        "STEERABLE_SANDBOX_DENY_READ",
        "STEERABLE_SANDBOX_MAX_OUTPUT_BYTES",
        "STEERABLE_SANDBOX_MAX_PROCESSES",
        "STEERABLE_SANDBOX_MEMORY_BYTES",
        "STEERABLE_SANDBOX_NETWORK",
        "STEERABLE_SCRIPT",
        "STEERABLE_SIDECAR_CONFINED",
        "STEERABLE_STATE_DIR",
        "STEERABLE_TEMPERATURE",
        "STEERABLE_THINKING",
        "STEERABLE_WEB_ALLOWED_DOMAINS",
        "STEERABLE_WEB_BLOCKED_DOMAINS",
        "STEERABLE_WEB_FETCH_MAX_BYTES",
        "STEERABLE_WEB_FETCH_MAX_REDIRECTS",
        "STEERABLE_WEB_FETCH_TIMEOUT_MS",
        "STEERABLE_WEB_FETCH_TRUSTED_DOMAINS",
        "STEERABLE_WEB_SEARCH_API_KEY",
        "STEERABLE_WEB_SEARCH_BASE_URL",
        "STEERABLE_WEB_SEARCH_MAX_RESULTS",
        "STEERABLE_WEB_SEARCH_PROVIDER",
        "STEERABLE_WEB_SEARCH_TIMEOUT_MS",
        "STEERABLE_WEB_SESSION_FETCH_CAP",
        "STEERABLE_WEB_SESSION_SEARCH_CAP",
    }
)
"""A copy of :data:`steerable_sidecar.config._settings.KNOWN_NAMES`, for start-up (module docstring)."""

_CUTOFF: Final = 0.6
"""``difflib``'s similarity a suggestion needs, on the names without ``STEERABLE_`` (as the
configuration file's ``did you mean`` for its keys); the shared prefix alone would match anything."""


def unknown_variables(environ: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """The ``STEERABLE_*`` names in ``environ`` that steerable does not read, with the closest known.

    The prefix is matched in any case: the name in lower case is not read either (the names are
    case-sensitive), and is answered with the name in upper case.

    Args:
        environ: The environment (default ``os.environ``).

    Returns:
        ``(name, suggestion)`` pairs sorted by name; ``suggestion`` is ``""`` when no known name is
        close. Empty when every name is known (the usual case, where nothing else is imported).
    """
    env = os.environ if environ is None else environ
    unknown = sorted(
        name for name in env if name[: len(PREFIX)].upper() == PREFIX and name not in KNOWN_NAMES
    )
    if not unknown:
        return []
    import difflib  # only when there is something to report (start-up)

    suffixes = sorted(name.removeprefix(PREFIX) for name in KNOWN_NAMES)
    found = []
    for name in unknown:
        close = difflib.get_close_matches(name[len(PREFIX) :].upper(), suffixes, n=1, cutoff=_CUTOFF)
        found.append((name, PREFIX + close[0] if close else ""))
    return found


def unknown_message(suggestion: str) -> str:
    """``not a steerable variable`` and, when there is a suggestion, ``; did you mean STEERABLE_...?``."""
    return "not a steerable variable" + (f"; did you mean {suggestion}?" if suggestion else "")


def warn_unknown_variables(environ: Mapping[str, str] | None = None, stream: TextIO | None = None) -> None:
    """Print ``steerable: warning: ...`` on stderr for each unknown ``STEERABLE_*`` name; never raises.

    Args:
        environ: The environment (default ``os.environ``).
        stream: Where to write (default ``sys.stderr``, never stdout).
    """
    try:
        found = unknown_variables(environ)
        if found:
            out = sys.stderr if stream is None else stream
            for name, suggestion in found:
                print(f"steerable: warning: {name} is {unknown_message(suggestion)}", file=out)
            out.flush()
    except Exception:  # a warning never fails the command (a closed stderr, an odd environment)
        return
