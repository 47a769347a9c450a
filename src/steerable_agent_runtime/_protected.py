"""Protected paths: files that make another program run code, or change what it trusts.

A model that can write ``.git/hooks/pre-commit``, ``.git/config`` (``core.fsmonitor``), ``.vscode/tasks.json``
or ``.mcp.json`` can plant a command the host runs later, outside every sandbox, with the host's
environment and keys (the next ``git status``, the next editor start, the next MCP host start). The
file tools refuse to create, change, move or delete these paths by default, and ``bash`` sees them
read-only where the sandbox backend can express it (FILE-15).

The list starts from the one Anthropic's sandbox-runtime enforces for sandboxed commands
(``DANGEROUS_FILES`` and ``DANGEROUS_DIRECTORIES`` plus ``.claude/commands`` and ``.claude/agents``)
and adds what else runs implicitly: the whole ``.git`` directory (and a ``.git`` file, which points git
at another directory), git attributes (filter and diff drivers), direnv's ``.envrc``, the other shell
start-up files, git-hook managers (husky, pre-commit), other editors' and agents' configuration folders,
dev containers (``initializeCommand`` runs on the host) and steerable's own ``.steerable`` folder (its
patch journal is replayed at start-up). ``docs/file-tools.md`` lists every rule with its reason.

Matching is on path components, at any depth, after case folding and removing the code points that
macOS's HFS+ ignores in names (``.g\u200cit`` is ``.git`` there, CVE-2014-9390), so ``.GIT/config`` and
``sub/.vscode/tasks.json`` are protected too.
"""

from __future__ import annotations

import os
import re
import sys
import unicodedata
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Final

__all__ = [
    "ENV_MARKERS",
    "GIT_DIR_RULE",
    "GIT_MARKERS",
    "INTERPRETER_ENV_RULE",
    "PLAIN_NAMES",
    "PROTECTED_ENTRIES",
    "PROTECTED_ENV",
    "PROTECTED_FLAG",
    "PROTECTED_RULES",
    "RUNTIME_RULE",
    "ProtectedRule",
    "git_directory",
    "interpreter_environment",
    "is_git_directory",
    "protected_rule",
    "runtime_roots",
]

PROTECTED_ENV: Final = "STEERABLE_ALLOW_PROTECTED_WRITES"
"""Set to ``1`` to let the file tools (and ``bash``) write protected paths (default off)."""

PROTECTED_FLAG: Final = "--allow-protected-writes"
"""The CLI flag with the same effect as :data:`PROTECTED_ENV`."""


@dataclass(frozen=True, slots=True)
class ProtectedRule:
    """One protected pattern.

    Attributes:
        pattern: Components joined with ``/``; ``**`` as the last component covers the entry itself
            and everything below it. Matched at any depth, case-insensitively.
        reason: Which program runs what from it (shown to the model and in the docs).
    """

    pattern: str
    reason: str

    @property
    def parts(self) -> tuple[str, ...]:
        """The pattern's components."""
        return tuple(self.pattern.split("/"))


_GIT_HOOKS = "git runs them on commit, checkout, merge, push"
_SHELL = "the shell runs it at start-up"
_EDITOR = "the editor runs tasks, launch configurations and language servers from it"
_AGENT = "an agent host loads commands, hooks or MCP servers from it"
_HOOK_MANAGER = "a git-hook manager runs the commands it lists on every commit"
_PACKAGE_MANAGER = "the package manager runs commands or code it names on every install or run"
_CARGO = "cargo runs its build wrappers and target runners (rustc-wrapper, runner)"
_MISE = "mise runs its hooks and tasks, and sources its env files, on entering the directory"

PROTECTED_RULES: Final[tuple[ProtectedRule, ...]] = (
    # version-control metadata, at any depth
    ProtectedRule(
        ".git/**",
        f"git's own directory: hooks ({_GIT_HOOKS}) and config (core.fsmonitor, core.pager, aliases and "
        "filters run commands); a .git file points git at another directory",
    ),
    ProtectedRule(".hg/**", "Mercurial's own directory: hgrc's [hooks] run on status, commit, update"),
    ProtectedRule(
        ".jj/**", "Jujutsu's own directory: its repo config names the pager, editor and diff tools"
    ),
    ProtectedRule(".svn/**", "Subversion's working-copy metadata"),
    ProtectedRule(".bzr/**", "Breezy's own directory: branch configuration and hooks"),
    ProtectedRule(".gitmodules", "git submodule URLs and settings, used by git submodule update"),
    ProtectedRule(".gitconfig", "git configuration: fsmonitor, pager, aliases and filters run commands"),
    ProtectedRule(".gitattributes", "git attributes send file contents through filter, diff, merge drivers"),
    # steerable's own configuration (a workspace holding the home folder holds it)
    ProtectedRule(
        ".config/steerable/**",
        "steerable's configuration file: the model provider, key and policy the next run starts with",
    ),
    # git-hook managers
    ProtectedRule(".husky/**", f"husky's git hooks ({_GIT_HOOKS})"),
    ProtectedRule(".huskyrc", _HOOK_MANAGER),
    ProtectedRule(".pre-commit-config.yaml", "pre-commit runs the hooks it lists on every git commit"),
    ProtectedRule("lefthook.yml", _HOOK_MANAGER),
    ProtectedRule(".lefthook.yml", _HOOK_MANAGER),
    ProtectedRule("lefthook-local.yml", _HOOK_MANAGER),
    ProtectedRule(".lefthook-local.yml", _HOOK_MANAGER),
    ProtectedRule("lefthook.yaml", _HOOK_MANAGER),
    ProtectedRule("lefthook-local.yaml", _HOOK_MANAGER),
    ProtectedRule("lefthook.toml", _HOOK_MANAGER),
    ProtectedRule("lefthook.json", _HOOK_MANAGER),
    ProtectedRule(".huskyrc.json", _HOOK_MANAGER),
    ProtectedRule(".huskyrc.js", _HOOK_MANAGER),
    ProtectedRule(".lintstagedrc", _HOOK_MANAGER),
    ProtectedRule(".lintstagedrc.json", _HOOK_MANAGER),
    ProtectedRule(".lintstagedrc.yaml", _HOOK_MANAGER),
    ProtectedRule(".lintstagedrc.yml", _HOOK_MANAGER),
    ProtectedRule(".lintstagedrc.js", _HOOK_MANAGER),
    ProtectedRule(".lintstagedrc.cjs", _HOOK_MANAGER),
    ProtectedRule(".lintstagedrc.mjs", _HOOK_MANAGER),
    ProtectedRule("lint-staged.config.js", _HOOK_MANAGER),
    ProtectedRule("lint-staged.config.cjs", _HOOK_MANAGER),
    ProtectedRule("lint-staged.config.mjs", _HOOK_MANAGER),
    # shells, direnv and other tools that run a file found in the current directory
    ProtectedRule(".bashrc", _SHELL),
    ProtectedRule(".bash_profile", _SHELL),
    ProtectedRule(".bash_login", _SHELL),
    ProtectedRule(".bash_logout", "the shell runs it at exit"),
    ProtectedRule(".profile", _SHELL),
    ProtectedRule(".zshrc", _SHELL),
    ProtectedRule(".zshenv", _SHELL),
    ProtectedRule(".zprofile", _SHELL),
    ProtectedRule(".zlogin", _SHELL),
    ProtectedRule(".zlogout", "the shell runs it at exit"),
    ProtectedRule(".envrc", "direnv runs it when a shell enters the directory"),
    ProtectedRule("mise.toml", _MISE),
    ProtectedRule(".mise.toml", _MISE),
    ProtectedRule("mise.local.toml", _MISE),
    ProtectedRule(".mise.local.toml", _MISE),
    ProtectedRule(".mise/**", _MISE),
    ProtectedRule(".ripgreprc", "ripgrep reads options from it, including --pre (a command run per file)"),
    ProtectedRule(".exrc", "vi and Vim run its commands when started here with 'exrc' set"),
    ProtectedRule(".nvimrc", "Neovim runs it when started here with 'exrc' set"),
    ProtectedRule(".nvim.lua", "Neovim runs it when started here with 'exrc' set"),
    ProtectedRule(".gdbinit", "gdb runs its commands when started here (when the auto-load path allows)"),
    ProtectedRule(".pdbrc", "Python's debugger runs its commands when started here"),
    # package managers and build tools that run what their configuration names
    ProtectedRule(".npmrc", f"{_PACKAGE_MANAGER} (script-shell, node-options, git)"),
    ProtectedRule(".yarnrc", _PACKAGE_MANAGER),
    ProtectedRule(".yarnrc.yml", f"{_PACKAGE_MANAGER} (yarnPath is the Yarn that runs)"),
    ProtectedRule(".pnpmfile.cjs", "pnpm runs its hooks on every install"),
    ProtectedRule("bunfig.toml", f"{_PACKAGE_MANAGER} (preload scripts)"),
    ProtectedRule(".cargo/config.toml", _CARGO),
    ProtectedRule(".cargo/config", _CARGO),
    ProtectedRule("rust-toolchain.toml", "rustup runs the toolchain it names (a path is any program)"),
    ProtectedRule("rust-toolchain", "rustup runs the toolchain it names"),
    # MCP hosts, editors, dev containers, agents
    ProtectedRule(".mcp.json", "MCP hosts start the servers it lists (commands run at host start)"),
    ProtectedRule(".vscode/**", _EDITOR),
    ProtectedRule(".idea/**", _EDITOR),
    ProtectedRule(".zed/**", _EDITOR),
    ProtectedRule(".fleet/**", _EDITOR),
    ProtectedRule(".helix/**", _EDITOR),
    ProtectedRule(".devcontainer/**", "dev container tools run its initializeCommand on the host"),
    ProtectedRule(".cursor/**", _AGENT),
    ProtectedRule(".claude/commands/**", _AGENT),
    ProtectedRule(".claude/agents/**", _AGENT),
    ProtectedRule(".claude/settings.json", _AGENT),
    ProtectedRule(".claude/settings.local.json", _AGENT),
    ProtectedRule(".gemini/**", _AGENT),
    ProtectedRule(".codex/**", _AGENT),
    ProtectedRule(".continue/**", _AGENT),
    ProtectedRule(".windsurf/**", _AGENT),
    ProtectedRule(".amazonq/**", _AGENT),
    ProtectedRule(".kiro/**", _AGENT),
    ProtectedRule(".aider.conf.yml", "aider runs the lint and test commands it names"),
    ProtectedRule("opencode.json", _AGENT),
    ProtectedRule(".opencode/**", _AGENT),
    ProtectedRule(".steerable/**", "steerable's own lock and patch journal, replayed when a workspace opens"),
)
"""Every protected pattern, by kind of place, in the order ``docs/file-tools.md`` lists them."""

PROTECTED_ENTRIES: Final[tuple[str, ...]] = tuple(r.pattern.removesuffix("/**") for r in PROTECTED_RULES)
"""Each rule as one relative path (``.git``, ``.vscode``, ``.claude/commands``, ``.mcp.json``...): what a
sandbox carves read-only out of a writable root where it exists."""

PLAIN_NAMES: Final = frozenset(e.split("/")[0].casefold() for e in PROTECTED_ENTRIES if not e.startswith("."))
"""The protected names that do not start with a dot (``lefthook.yml``, ``bunfig.toml``...): a scan
that skips plain names must still look at these."""

GIT_MARKERS: Final = frozenset({"HEAD", "objects", "refs", "commondir"})
"""The names that make a directory a git directory to git, whatever its own name: ``HEAD`` with
``objects`` and ``refs``, or with ``commondir`` (which names a directory holding them); each in any
form git accepts (a link, a file): see :func:`is_git_directory`."""


def is_git_directory(names: Collection[str]) -> bool:
    """Do ``names`` (a directory's entries among :data:`GIT_MARKERS`) make it a git directory?"""
    return "HEAD" in names and ({"objects", "refs"} <= set(names) or "commondir" in names)


GIT_DIR_RULE: Final = ProtectedRule(
    "<git directory>",
    "a directory holding HEAD, objects/ and refs/ is a git repository to git whatever its name: its "
    "config (core.fsmonitor, core.worktree) and hooks run for any git command in the folders it serves",
)
"""The rule for a git directory under an ordinary name (SAFE-2)."""

ENV_MARKERS: Final = (("pyvenv.cfg", False), ("conda-meta", True))
"""What makes a directory an interpreter environment: ``(name, is a directory)``."""

INTERPRETER_ENV_RULE: Final = ProtectedRule(
    "<interpreter environment>",
    "a Python virtual environment or conda environment (it holds pyvenv.cfg or conda-meta/): its next "
    "interpreter start runs its .pth files and sitecustomize, and its bin/ scripts run as commands",
)
"""The rule for an interpreter environment inside the workspace (SAFE-2)."""

# Code points HFS+ ignores when it compares names (the set git checks, CVE-2014-9390), plus the
# other default-ignorable format characters: a name with one of them inside is the same file there.
_IGNORABLE: Final = re.compile(
    "[\u00ad\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f"
    "\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8]"
)


def _fold(component: str) -> str:
    """Case-fold, NFC-normalise and drop ignorable code points (and Windows' trailing dots and spaces)."""
    folded = _IGNORABLE.sub("", unicodedata.normalize("NFC", component)).casefold()
    return folded.rstrip(". ") or folded


def _matches(parts: Sequence[str], pattern: Sequence[str]) -> bool:
    """Does ``pattern`` match ``parts`` starting at ``parts[0]``? A final ``**`` swallows the rest."""
    if pattern and pattern[-1] == "**":
        head = pattern[:-1]
        return len(parts) >= len(head) and all(fnmatchcase(p, q) for p, q in zip(parts, head, strict=False))
    return len(parts) == len(pattern) and all(fnmatchcase(p, q) for p, q in zip(parts, pattern, strict=True))


RUNTIME_RULE: Final = ProtectedRule(
    "<steerable's interpreter and package>",
    "the Python environment running steerable: its next start runs this code outside the sandbox",
)
"""The rule for steerable's own interpreter prefixes and package when they lie inside a workspace."""


def runtime_roots() -> tuple[str, ...]:
    """What steerable's Python runs from: the interpreter's prefixes and the directory holding its package.

    A workspace ``.venv`` or an editable install puts these inside a writable root; the sandbox binds
    them read-only and the file tools refuse to write them (FILE-15).
    """
    package_root = Path(__file__).resolve().parents[1]  # the directory holding steerable_agent_runtime
    executable = os.path.dirname(os.path.realpath(sys.executable)) if sys.executable else sys.prefix
    return (sys.prefix, sys.base_prefix, sys.exec_prefix, executable, str(package_root))


def interpreter_environment(root: Path, rel: str) -> str | None:
    """The interpreter environment ``rel`` lies in (or is), as a path relative to ``root``; else ``None``.

    Each directory from ``root``'s child down to ``rel`` itself is checked for :data:`ENV_MARKERS`
    (the workspace root itself is never one). A few ``stat`` calls per path.
    """
    parts = [part for part in rel.split("/") if part not in ("", ".")]
    for depth in range(1, len(parts) + 1):
        folder = root.joinpath(*parts[:depth])
        for marker, is_dir in ENV_MARKERS:
            candidate = folder / marker
            if candidate.is_dir() if is_dir else candidate.is_file():
                return "/".join(parts[:depth])
    return None


def git_directory(root: Path, rel: str) -> str | None:
    """The git directory ``rel`` lies in, or makes one by its write, relative to ``root`` (``.``: it).

    Each directory holding ``rel`` (the workspace root included) is checked for :data:`GIT_MARKERS`
    in any form; ``rel``'s own first name below it counts as present (writing ``HEAD`` beside
    ``objects/`` and ``refs/``, or a file under ``objects/`` beside ``HEAD`` and ``refs/``, makes
    one). ``None`` when no directory is or becomes one.
    """
    parts = [part for part in rel.split("/") if part not in ("", ".")]
    for depth in range(len(parts) - 1, -1, -1):
        folder = root.joinpath(*parts[:depth])
        present = {name for name in GIT_MARKERS if name == parts[depth] or os.path.lexists(folder / name)}
        if is_git_directory(present):
            return "/".join(parts[:depth]) or "."
    return None


def protected_rule(path: str) -> ProtectedRule | None:
    """Return the rule protecting ``path``, or ``None`` when it is not protected.

    Args:
        path: A POSIX path, relative to the workspace root (or absolute); ``.`` and empty
            components are ignored, and ``..`` is not resolved (pass a resolved path).

    Returns:
        The first matching :class:`ProtectedRule`; a rule matches at any depth, so ``a/b/.git/config``
        is protected like ``.git/config``. A directory that merely contains protected paths
        (``.claude``) is not itself protected.
    """
    parts = [_fold(part) for part in path.split("/") if part not in ("", ".")]
    for rule in PROTECTED_RULES:
        pattern = rule.parts
        first = pattern[0]
        for start, part in enumerate(parts):
            if part == first and _matches(parts[start:], pattern):
                return rule
    return None
