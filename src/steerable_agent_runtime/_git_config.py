"""Workspace paths that git configuration makes code: what git runs or reads because a config names it.

A protected ``.git/config`` is not enough when the config itself points at ordinary files: git runs
``core.fsmonitor = ./mon.sh`` on every ``git status``, reads ``[include] path = ../team.gitconfig``
as more configuration, and runs the hooks in a ``core.hooksPath`` folder, which a user's *global*
config may give as a relative path (``.githooks``, resolved in each repository). So the targets
are protected like the config (SAFE-2, FILE-15): the file tools refuse them, ``bash`` sees them
read-only (bubblewrap) or has them put back (the audit).

Read here: the workspace repository's ``.git/config``, the user's global config
(``GIT_CONFIG_GLOBAL``, else ``~/.gitconfig`` and ``$XDG_CONFIG_HOME/git/config``), the system
config (``GIT_CONFIG_SYSTEM``, else ``/etc/gitconfig``) and, recursively, what they include. The
parser is git's syntax minus what no config of this kind needs (escapes inside values beyond
an escaped quote, continuation lines); a file it cannot read gives nothing.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from ._protected import ProtectedRule

__all__ = ["GIT_CONFIG_TARGET_RULE", "HOOKS_PATH_RULE", "configured_code_paths"]

HOOKS_PATH_RULE: Final = ProtectedRule(
    "<core.hooksPath>", "the repository's git configuration names it as its hooks directory: git runs them"
)
"""The rule for a hooks directory git configuration moves into the work tree (``core.hooksPath``)."""

GIT_CONFIG_TARGET_RULE: Final = ProtectedRule(
    "<named by git configuration>",
    "git configuration names it as a command to run (core.fsmonitor, a pager, an editor, a filter or "
    "diff driver, a credential helper, an alias) or as more configuration to include",
)
"""The rule for a work-tree file a git configuration runs or includes."""

_MAX_CONFIG_BYTES: Final = 1024 * 1024
_MAX_INCLUDE_DEPTH: Final = 5  # git's own limit is 10; a chain this long names nothing real
_SECTION = re.compile(r"\s*\[\s*([A-Za-z0-9.-]+)(?:\s+\"((?:[^\"\\]|\\.)*)\")?\s*\]\s*(.*)$")
_KEY = re.compile(r"\s*([A-Za-z][A-Za-z0-9-]*)\s*(?:=\s*(.*?))?\s*$")

# section -> keys whose value git runs as a command ("*": any key of the section)
_COMMAND_KEYS: Final[Mapping[str, frozenset[str]]] = {
    "core": frozenset({"fsmonitor", "editor", "pager", "sshcommand", "askpass", "gitproxy"}),
    "sequence": frozenset({"editor"}),
    "diff": frozenset({"external", "command", "textconv"}),
    "filter": frozenset({"clean", "smudge", "process"}),
    "merge": frozenset({"driver"}),
    "credential": frozenset({"helper"}),
    "gpg": frozenset({"program"}),
    "pager": frozenset({"*"}),
    "alias": frozenset({"*"}),
    "difftool": frozenset({"cmd", "path"}),
    "mergetool": frozenset({"cmd", "path"}),
    "interactive": frozenset({"difffilter"}),
    "browser": frozenset({"cmd", "path"}),
    "man": frozenset({"cmd", "path"}),
}


@dataclass(frozen=True, slots=True)
class _Entry:
    section: str  # lower case
    key: str  # lower case
    value: str
    source: Path  # the file it was read from


def configured_code_paths(
    root: Path, environ: Mapping[str, str] | None = None
) -> list[tuple[str, ProtectedRule]]:
    """Work-tree paths git configuration runs or reads, each with its rule.

    Args:
        root: The workspace's real path (its ``.git`` is the repository's; without one, what
            configuration names relative to a work tree is another repository's and not followed).
        environ: Where ``HOME``, ``XDG_CONFIG_HOME``, ``GIT_CONFIG_GLOBAL``, ``GIT_CONFIG_SYSTEM``
            come from (default ``os.environ``).

    Returns:
        POSIX paths relative to ``root``, without ``..``, in the order found, without duplicates.
    """
    env = os.environ if environ is None else environ
    repository = (root / ".git").exists()  # else what is relative to a work tree is another's
    home = env.get("HOME") or str(Path.home())
    found: dict[str, ProtectedRule] = {}
    read: set[Path] = set()
    for entry in _read_all([*_user_configs(env), *(_repository_configs(root) if repository else [])], read):
        for rel, rule in _targets(entry, root, home, repository):
            found.setdefault(rel, rule)
    for config in read:  # a config file itself inside the workspace (a dotfiles repository's gitconfig)
        for rel, rule in _inside(root, config, GIT_CONFIG_TARGET_RULE):
            found.setdefault(rel, rule)
    return list(found.items())


def _repository_configs(root: Path) -> list[Path]:
    """The repository's own config files: ``.git/config``, or a worktree's (``.git`` is a file).

    A worktree's ``.git`` file names its git directory (``gitdir: ...``), whose ``commondir`` names
    the main repository's: git reads the main ``config`` and the worktree's ``config.worktree``.
    """
    dot_git = root / ".git"
    if dot_git.is_dir():
        return [dot_git / "config", dot_git / "config.worktree"]
    pointer = _first_line(dot_git)
    if not pointer.startswith("gitdir:"):
        return []
    gitdir = Path(os.path.normpath(root / pointer[len("gitdir:") :].strip()))
    common = _first_line(gitdir / "commondir")
    shared = Path(os.path.normpath(gitdir / common)) if common else gitdir
    return [shared / "config", gitdir / "config.worktree", gitdir / "config"]


def _first_line(path: Path) -> str:
    try:
        with open(path, "rb") as handle:
            return handle.read(4096).decode("utf-8", "replace").split("\n", 1)[0].strip()
    except OSError:
        return ""


def _user_configs(env: Mapping[str, str]) -> list[Path]:
    home = env.get("HOME") or str(Path.home())
    system = env.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig"
    configured = env.get("GIT_CONFIG_GLOBAL")
    if configured:
        return [Path(system), Path(configured)]
    xdg = env.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    return [Path(system), Path(xdg) / "git" / "config", Path(home) / ".gitconfig"]


def _read_all(files: list[Path], seen: set[Path]) -> Iterator[_Entry]:
    """Every entry of ``files`` and of what they include (``include.path``, ``includeIf.*.path``).

    ``seen`` gets every file looked at (existing or not).
    """
    pending = [(path, 0) for path in reversed(files)]
    while pending:
        path, depth = pending.pop()
        if path in seen or depth > _MAX_INCLUDE_DEPTH:
            continue
        seen.add(path)
        for entry in _parse(path):
            yield entry
            if entry.section in ("include", "includeif") and entry.key == "path" and entry.value:
                pending.append((_include_target(entry), depth + 1))


def _include_target(entry: _Entry) -> Path:
    value = entry.value
    if value.startswith("~/"):
        return Path(os.path.expanduser(value))
    return Path(os.path.normpath(entry.source.parent / value))


def _parse(path: Path) -> Iterator[_Entry]:
    try:
        with open(path, "rb") as handle:
            text = handle.read(_MAX_CONFIG_BYTES).decode("utf-8", "replace")
    except OSError:
        return
    section = ""
    for raw in text.splitlines():
        line = _strip_comment(raw)
        header = _SECTION.match(line)
        if header is not None:
            name = header.group(1).lower()
            section = name.split(".", 1)[0]  # [diff.tool] is [diff "tool"]; the driver's name is not needed
            line = header.group(3)
        key = _KEY.match(line)
        if key is None or not section:
            continue
        value = key.group(2) or ""
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = value[1:-1].replace('\\"', '"')
        yield _Entry(section, key.group(1).lower(), value, path)


def _strip_comment(line: str) -> str:
    """The line up to a ``#`` or ``;`` outside double quotes."""
    quoted = False
    for i, char in enumerate(line):
        if char == '"' and (i == 0 or line[i - 1] != "\\"):
            quoted = not quoted
        elif char in "#;" and not quoted:
            return line[:i]
    return line


def _targets(entry: _Entry, root: Path, home: str, repository: bool) -> Iterator[tuple[str, ProtectedRule]]:
    if entry.section == "core" and entry.key == "hookspath":
        # ~ is the user's home; relative: resolved in the work tree where the hooks run (the
        # repository's root, when the workspace is one)
        value = home + entry.value[1:] if entry.value == "~" or entry.value.startswith("~/") else entry.value
        if os.path.isabs(value) or repository:
            yield from _inside(root, Path(value) if os.path.isabs(value) else root / value, HOOKS_PATH_RULE)
        return
    if entry.section in ("include", "includeif") and entry.key == "path":
        yield from _inside(root, _include_target(entry), GIT_CONFIG_TARGET_RULE)
        return
    keys = _COMMAND_KEYS.get(entry.section)
    if keys is None or not ("*" in keys or entry.key in keys):
        return
    if entry.section == "core" and entry.key == "fsmonitor" and entry.value.lower() in ("true", "false"):
        return  # git's built-in monitor
    command = entry.value[1:] if entry.section == "alias" else entry.value
    if entry.section == "alias" and not entry.value.startswith("!"):
        return  # an alias for git's own subcommands runs nothing else
    try:
        words = shlex.split(command, posix=True)
    except ValueError:
        words = command.split()
    for word in words:
        # the shell git starts runs a word with a slash as a path (from the work tree root);
        # a bare word is looked up on PATH
        if "/" in word and not word.startswith(("-", "~", "$")) and (repository or os.path.isabs(word)):
            yield from _inside(
                root, Path(word) if os.path.isabs(word) else root / word, GIT_CONFIG_TARGET_RULE
            )


def _inside(root: Path, path: Path, rule: ProtectedRule) -> Iterator[tuple[str, ProtectedRule]]:
    """``path`` relative to ``root`` as written and as it resolves (a link on the way), when inside."""
    lexical = Path(os.path.normpath(path))
    for candidate in dict.fromkeys((lexical, Path(os.path.realpath(lexical)))):
        if candidate != root and candidate.is_relative_to(root):
            yield candidate.relative_to(root).as_posix(), rule
