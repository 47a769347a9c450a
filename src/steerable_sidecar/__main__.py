"""``python -m steerable_sidecar`` runs the ``steerable`` command.

Launch it as ``python -P -m steerable_sidecar`` (SAFE-1): without ``-P`` Python puts the current
directory, usually the workspace the model writes, first on ``sys.path``, so a ``typing.py`` there
would run inside this process, which holds the API key. What Python imported before this module ran
cannot be undone here; the entry is dropped for everything imported after, with a warning that names
the fix. The ``steerable`` command and :meth:`SidecarClient.start` need no flag.
"""

import os
import sys


def _current_directory_first() -> str | None:
    """The current directory when Python put it first on ``sys.path`` (no ``-P``); ``None`` otherwise."""
    if sys.flags.safe_path or not sys.path:
        return None
    try:
        cwd = os.getcwd()
    except OSError:  # the directory is gone: nothing can be imported from it
        return None
    return cwd if sys.path[0] in ("", cwd) else None


if (_cwd := _current_directory_first()) is not None:
    del sys.path[0]
    print(
        f"steerable: started as `python -m steerable_sidecar` without -P, so Python looked for modules in "
        f"the current directory {_cwd} first (a file the model wrote there would run in this "
        "process); start it as `python -P -m steerable_sidecar`, or run the `steerable` command",
        file=sys.stderr,
    )

from .cli._main import main  # noqa: E402  (after sys.path is made safe)

sys.exit(main())
