"""``steerable`` drops the ``sys.path`` entries naming its current directory, first thing (SAFE-1).

A host may start ``steerable`` in the workspace with an empty or relative ``PYTHONPATH`` entry
(``PYTHONPATH=$PYTHONPATH:/x`` with the variable unset gives one; ``PYTHONPATH=src``), which Python
turns into the current directory or a folder in it: a ``json.py`` the model wrote there would run
in this process, which holds the API key. Imported first by the package, this drops such entries
(but the one holding steerable itself, in its own checkout) for everything imported after it, and
says so on stderr. What the console script imported before (``re``, ``typing``) cannot be helped:
hosts must not pass such entries. An embedder's process (``sys.argv[0]`` not ``steerable``) is
left alone.
"""

import os
import sys


def workspace_entries() -> list[str]:
    """The ``sys.path`` entries naming the current directory or, from ``PYTHONPATH``, a folder in it."""
    try:
        here = os.path.realpath(os.getcwd())
    except OSError:  # the directory is gone: nothing can be imported from it
        return []
    given = {
        real
        for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep)
        if (real := os.path.realpath(os.path.join(here, entry))) == here or real.startswith(here + os.sep)
    }
    own = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))  # the folder holding steerable
    named = (given | {here}) - {own}
    return [entry for entry in sys.path if os.path.realpath(entry or os.curdir) in named]


if os.path.basename(sys.argv[0] if sys.argv else "") == "steerable" and (dropped := workspace_entries()):
    sys.path[:] = [entry for entry in sys.path if entry not in dropped]
    print(
        f"steerable: ignoring the sys.path entries {dropped!r} (from PYTHONPATH): they name the current "
        "directory, where a file the model wrote would run in this process",
        file=sys.stderr,
    )
