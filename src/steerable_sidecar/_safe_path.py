"""``steerable`` drops the ``sys.path`` entries naming its workspace, first thing (SAFE-1).

A host may start ``steerable`` in the workspace with an empty or relative ``PYTHONPATH`` entry
(``PYTHONPATH=$PYTHONPATH:/x`` with the variable unset gives one; ``PYTHONPATH=src``), which Python
turns into the current directory or a folder in it: a ``json.py`` the model wrote there would run
in this process, which holds the API key. Imported first by the package, this drops such entries
(but the one holding steerable itself, in its own checkout) for everything imported after it, and
says so on stderr. Those naming the workspace the command line gives (``-w``, ``--workspace``,
``--cwd``: :func:`named_workspace`) go too, before ``argparse`` loads; once the workspace is known
(``boot_tools``), :func:`drop_entries_inside` drops every entry naming it or a folder in it (an
absolute ``PYTHONPATH`` entry or a ``.pth`` file, steerable started elsewhere). The entries dropped
at import are said once the workspace is accepted (:func:`tell_dropped`): a command that refuses
its workspace (``-w ~``) says that alone, as nothing runs there. What the console
script imported before (``re``, ``typing``) cannot be helped: hosts must not pass such entries. An
embedder's process (not the ``steerable`` command nor ``python -m steerable_sidecar``) is left
alone.
"""

import os
import sys


def own_process() -> bool:
    """Is this process the ``steerable`` command or ``python -m steerable_sidecar`` (not an embedder's)?"""
    first = sys.argv[0] if sys.argv else ""
    name = os.path.basename(first)
    return name == "steerable" or (
        name == "__main__.py" and os.path.basename(os.path.dirname(first)) == "steerable_sidecar"
    )


def workspace_entries(root: str | None = None) -> list[str]:
    """The ``sys.path`` entries naming ``root`` (default: the current directory) or a folder in it.

    Without ``root``, only those ``PYTHONPATH`` gave (besides the current directory itself); with
    it, any but the interpreter's own (inside ``sys.prefix``, ``sys.base_prefix``). The one holding
    steerable itself (its own checkout) is never named.
    """
    try:
        here = os.path.realpath(os.getcwd() if root is None else root)
    except OSError:  # the directory is gone: nothing can be imported from it
        return []

    def inside(real: str) -> bool:
        return real == here or real.startswith(here.rstrip(os.sep) + os.sep)

    if root is None:
        named = {
            real
            for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep)
            if inside(real := os.path.realpath(os.path.join(here, entry)))
        } | {here}
    else:  # any entry in it but the interpreter's own (a project .venv, a uv-managed Python in ~)
        interpreter = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
        named = {
            real
            for entry in sys.path
            if inside(real := os.path.realpath(entry or os.curdir))
            and not any(real == p or real.startswith(p.rstrip(os.sep) + os.sep) for p in interpreter)
        }
    own = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))  # the folder holding steerable
    named.discard(own)
    return [entry for entry in sys.path if os.path.realpath(entry or os.curdir) in named]


def drop_entries_inside(root: str) -> list[str]:
    """In steerable's own process, drop the ``sys.path`` entries naming ``root`` or a folder in it.

    Args:
        root: The workspace root.

    Returns:
        The entries dropped (said on stderr), ``[]`` in an embedder's process.
    """
    if not own_process():
        return []
    dropped = workspace_entries(root)
    _drop(dropped, "name the workspace")
    return dropped


_UNTOLD: list[str] = []
"""What the drops made at import have to say, until :func:`tell_dropped` says it (one process)."""


def tell_dropped() -> None:
    """Say on stderr which ``sys.path`` entries were dropped at import (once the workspace is accepted)."""
    while _UNTOLD:
        print(_UNTOLD.pop(0), file=sys.stderr)


def _drop(dropped: list[str], why: str, *, now: bool = True) -> None:
    if not dropped:
        return
    sys.path[:] = [entry for entry in sys.path if entry not in dropped]
    notice = (
        f"steerable: ignoring the sys.path entries {dropped!r} (from PYTHONPATH or a .pth file): they "
        f"{why}, where a file the model wrote would run in this process"
    )
    if now:
        print(notice, file=sys.stderr)
    else:
        _UNTOLD.append(notice)


def named_workspace(argv: list[str]) -> str | None:
    """The workspace the command line names (``-w X``, ``-wX``, ``--workspace[=]X``, ``--cwd[=]X``).

    Read before ``argparse`` runs (it is one of the modules a planted file would replace); the last
    one wins, as with ``argparse``, and a leading ``~`` is expanded as ``argparse`` does for
    ``--workspace`` (a host passes its args without a shell). ``None`` when none is given.
    """
    found = None
    for at, word in enumerate(argv):
        if word == "--":
            break
        for flag in ("--workspace", "--cwd"):
            if word.startswith(flag + "="):
                found = word[len(flag) + 1 :]
        if word in ("-w", "--workspace", "--cwd") and at + 1 < len(argv):
            found = argv[at + 1]
        elif word.startswith("-w") and not word.startswith("--") and len(word) > 2:
            found = word[2:]
    return None if found is None else os.path.expanduser(found)


_first = sys.argv[0] if sys.argv else ""
if os.path.basename(_first) == "steerable":
    _drop(workspace_entries(), "name the current directory", now=False)
if (os.path.basename(_first) == "steerable" or _first == "-m") and (
    _named := named_workspace(sys.argv[1:])
) is not None:  # python -m steerable_sidecar: its __main__ drops the current directory itself
    _drop(workspace_entries(_named), "name the workspace", now=False)  # before argparse and the rest load
