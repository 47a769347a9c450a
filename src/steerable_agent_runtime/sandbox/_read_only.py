"""Why a command's write failed with "Read-only file system" (``EROFS``), in words that name the fix.

The OS gives one answer for several causes, and only one of them has a setting that helps:

* a protected entry bound read-only over itself (FILE-15): the user can opt out
  (``STEERABLE_ALLOW_PROTECTED_WRITES`` / ``--allow-protected-writes``);
* steerable's own interpreter or package inside the workspace: read-only whatever the settings;
* a folder holding a deny-read entry (SAFE-3): an empty read-only tmpfs with the rest bound back;
* anything outside the writable roots (the workspace and ``$TMPDIR``): bubblewrap binds ``/``
  read-only;
* a file system mounted read-only on the host (a read-only bind or tmpfs in the workspace): no
  steerable setting changes it.

:func:`read_only_hint` reads the paths the failing programs name in their ``stderr`` (``touch:
cannot touch 'x'``, ``bash: line 1: x``, Python's ``[Errno 30] ...: 'x'``, git's ``could not lock
config file x``), relative ones against the workspace root (where the command starts), and says
for each which of these it is. A path it cannot place (the command ``cd``-ed first) gets the
general rule, never a guess.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Final

from .._protected import PROTECTED_ENV, PROTECTED_FLAG, runtime_roots

__all__ = ["EROFS_TEXT", "read_only_hint", "refused_paths"]

EROFS_TEXT: Final = "Read-only file system"
"""``strerror(EROFS)``: what a program prints for a write the mount refused."""

_QUOTED: Final = re.compile(r"'([^']+)'|‘([^’]+)’|\"([^\"]+)\"|`([^']+)'")
_SHOWN: Final = 4  # the most paths named per sentence


def refused_paths(stderr: str) -> list[str]:
    """The paths named on the ``stderr`` lines that say "Read-only file system", in order, once each."""
    found: list[str] = []
    for line in stderr.splitlines():
        if EROFS_TEXT not in line:
            continue
        quoted = [next(g for g in match.groups() if g) for match in _QUOTED.finditer(line)]
        if quoted:
            candidates = quoted
        else:  # "bash: line 1: x: Read-only..." / "could not lock config file x: Read-only..."
            before = line.split(f": {EROFS_TEXT}", 1)[0].rsplit(": ", 1)[-1].split()
            candidates = before[-1:] if before else []
        found += [c for c in candidates if c not in found and c != EROFS_TEXT]
    return found


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _read_only_on_host(path: str) -> bool:
    """Is the file system holding ``path`` (or its nearest existing folder) mounted read-only here?"""
    probe = path
    while True:
        try:
            return bool(os.statvfs(probe).f_flag & os.ST_RDONLY)
        except (FileNotFoundError, NotADirectoryError):
            parent = os.path.dirname(probe)
            if parent == probe:
                return False
            probe = parent
        except OSError:
            return False


def _listed(paths: Sequence[str]) -> str:
    shown = ", ".join(paths[:_SHOWN])
    return shown + (f" and {len(paths) - _SHOWN} more" if len(paths) > _SHOWN else "")


def _verb(paths: Sequence[str]) -> str:
    return "is" if len(paths) == 1 else "are"


def read_only_hint(
    stderr: str,
    root: Path,
    read_only: Iterable[Path],
    *,
    deny_read: Iterable[Path] = (),
    runtime: Iterable[str] | None = None,
) -> str:
    """Sentences (each starting with a space) saying why the writes ``stderr`` reports were refused.

    Args:
        stderr: The command's standard error (its lines with "Read-only file system" are read).
        root: The workspace root, resolved: where the command started, the writable root.
        read_only: The protected entries bound read-only for the run (``GuardedRun.read_only``).
        deny_read: The run's deny-read set (``SandboxConfig.deny_read``).
        runtime: steerable's runtime roots (default :func:`runtime_roots`).

    Returns:
        ``""`` when ``stderr`` reports no such write; otherwise one sentence per cause found, or
        the general rule when no path could be placed.
    """
    if EROFS_TEXT not in stderr:
        return ""
    base = str(root)
    carved = sorted(str(p) for p in read_only)
    runtime_inside = [r for r in (runtime_roots() if runtime is None else runtime) if _within(r, base)]
    denied = [str(p) for p in deny_read]
    kinds: dict[str, list[str]] = {}
    entries: dict[str, list[str]] = {}

    def note(kind: str, shown: str, entry: str = "") -> None:
        kinds.setdefault(kind, []).append(shown)
        if entry and entry not in entries.setdefault(kind, []):
            entries[kind].append(entry)

    for raw in refused_paths(stderr):
        path = os.path.normpath(os.path.join(base, raw))
        rel = os.path.relpath(path, base)
        if not _within(path, base):
            note("outside", path)
        elif hit := next((r for r in runtime_inside if _within(path, r)), None):
            note("runtime", rel, os.path.relpath(hit, base))
        elif hit := next((c for c in carved if _within(path, c)), None):
            note("protected", rel, os.path.relpath(hit, base))
        elif hit := next((d for d in denied if _within(path, d) or _within(d, os.path.dirname(path))), None):
            note("deny", rel, hit)
        elif _read_only_on_host(path):
            note("mount", rel)
    return "".join(_sentences(kinds, entries, base, [os.path.relpath(c, base) for c in carved]))


def _sentences(
    kinds: dict[str, list[str]], entries: dict[str, list[str]], root: str, carved: list[str]
) -> Iterable[str]:
    if not kinds:  # no path placed: the rule itself, and the opt-out only for what it covers
        yield (
            " Commands may write only in the workspace and $TMPDIR, and not on a file system mounted "
            "read-only"
        )
        if carved:
            yield (
                f"; protected paths in the workspace are read-only to them too ({_listed(carved)}), "
                f"which the user can allow with {PROTECTED_ENV}=1 or {PROTECTED_FLAG}"
            )
        yield "."
        return
    if "protected" in kinds:
        yield (
            f" Protected paths are read-only to commands ({_listed(entries['protected'])}): git, editors "
            "and agent hosts run code from them outside the sandbox; to allow changes, the user can set "
            f"{PROTECTED_ENV}=1 or start steerable with {PROTECTED_FLAG}."
        )
    if paths := kinds.get("runtime"):
        yield (
            f" {_listed(paths)} {_verb(paths)} in the Python environment running steerable "
            f"({_listed(entries['runtime'])}), which commands may never change, whatever the settings."
        )
    if paths := kinds.get("deny"):
        yield (
            f" {_listed(paths)} {_verb(paths)} in or beside the deny-read set ({_listed(entries['deny'])}): "
            "the sandbox keeps the folders holding its entries read-only to commands."
        )
    if paths := kinds.get("outside"):
        yield (
            f" {_listed(paths)} {_verb(paths)} outside the workspace: commands may write only in the "
            f"workspace ({root}) and $TMPDIR, and everything else is read-only to them."
        )
    if paths := kinds.get("mount"):
        one = len(paths) == 1
        yield (
            f" {_listed(paths)} {_verb(paths)} on a file system mounted read-only on the host: no steerable "
            f"setting changes that ({'it is not a protected path' if one else 'they are not protected paths'}"
            "); write elsewhere in the workspace, or have the user remount that file system read-write."
        )
