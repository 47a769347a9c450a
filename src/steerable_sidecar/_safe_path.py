"""``steerable`` drops the ``sys.path`` entries naming its current directory, first thing (SAFE-1).

A host may start ``steerable`` in the workspace with an empty or relative ``PYTHONPATH`` entry
(``PYTHONPATH=$PYTHONPATH:/x`` with the variable unset gives one), which Python turns into the
current directory: a ``json.py`` the model wrote there would run in this process, which holds the
API key. Imported first by the package, this drops such entries for everything imported after it
and says so on stderr. What the console script imported before (``re``, ``typing``) cannot be
helped: hosts must not pass such entries. An embedder's own process (``sys.argv[0]`` not
``steerable``) is left alone.
"""

import os
import sys


def workspace_entries() -> list[str]:
    """The ``sys.path`` entries naming the current directory."""
    try:
        here = os.path.realpath(os.getcwd())
    except OSError:  # the directory is gone: nothing can be imported from it
        return []
    return [entry for entry in sys.path if os.path.realpath(entry or os.curdir) == here]


if os.path.basename(sys.argv[0] if sys.argv else "") == "steerable" and (dropped := workspace_entries()):
    sys.path[:] = [entry for entry in sys.path if entry not in dropped]
    print(
        f"steerable: ignoring the sys.path entries {dropped!r} (from PYTHONPATH): they name the current "
        "directory, where a file the model wrote would run in this process",
        file=sys.stderr,
    )
