"""On Windows, the ``steerable`` command says in one sentence that it does not run there, and exits 2.

``import steerable_agent_runtime`` raises :class:`ImportError` with that sentence on Windows
(``steerable_agent_runtime._platform``); :func:`refuse_windows` runs first thing in
``steerable_sidecar`` there. When this process is the ``steerable`` command (its console script, or
``python -m steerable_sidecar``) the sentence goes to stderr, without a traceback, and the exit
code is 2 (a usage error: the command cannot run here); a program importing the package gets the
:class:`ImportError`. It imports nothing of steerable's: this module is what runs before the
runtime's import fails.
"""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["refuse_windows"]

_USAGE_EXIT = 2  # ExitCode.USAGE (exit_codes.py), without importing the package that refuses


def refuse_windows() -> None:
    """End the ``steerable`` command on Windows with the sentence and exit 2; raise it to an importer.

    Raises:
        ImportError: From ``import steerable_agent_runtime``, when this process is not the command.
        SystemExit: Exit code 2, when it is (the sentence is on stderr).
    """
    try:
        import steerable_agent_runtime  # noqa: F401  (raises the ImportError that says why)
    except ImportError as exc:
        if not _is_the_command():
            raise
        print(exc, file=sys.stderr)
        raise SystemExit(_USAGE_EXIT) from None


def _is_the_command() -> bool:
    """Whether this process is the ``steerable`` program: its console script, or ``-m steerable_sidecar``.

    While ``python -m`` imports the package, ``sys.argv[0]`` is ``-m``; ``sys.orig_argv`` names it.
    """
    if Path(sys.argv[0] if sys.argv else "").stem.lower() in ("steerable", "steerable-script"):
        return True
    argv = list(sys.orig_argv)
    return any(
        arg == "-msteerable_sidecar" or (arg == "-m" and following == "steerable_sidecar")
        for arg, following in zip(argv, [*argv[1:], ""], strict=True)
    )
