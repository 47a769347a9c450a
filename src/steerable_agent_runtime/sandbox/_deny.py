"""The deny-read set: what a sandboxed child may not read although it may read everything else (SAFE-3).

Reading is allowed everywhere a backend can show, so without this a command (or a ``run_code``
program) the model wrote reads the user's SSH keys, cloud credentials, the host configurations our
own docs tell users to put ``STEERABLE_API_KEY`` in, and steerable's records of other sessions, then
prints them into the conversation. bubblewrap mounts over each entry (an empty read-only directory,
``/dev/null`` for a file); Landlock grants read on everything *but* them (:func:`read_grants`): its
rules only grant, so ``/`` is split into its entries around each denied path. ``docs/sandbox.md``,
"Deny-read".
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Final

from ..config import default_state_dir, env_text
from ..errors import ConfigError

__all__ = [
    "DEFAULT_DENY_READ",
    "DENY_READ_ENV",
    "DEV_READABLE",
    "applicable_denials",
    "denials_for_files",
    "denials_inside",
    "deny_read_from_env",
    "hidden_devices",
    "hiding_mount",
    "masking_mounts",
    "read_grants",
]

MCP_CONFIG_ENV: Final = "STEERABLE_MCP_CONFIG"

DENY_READ_ENV: Final = "STEERABLE_SANDBOX_DENY_READ"
"""More paths sandboxed children may not read, comma-separated, absolute or ``~``-relative."""

DEFAULT_DENY_READ: Final[tuple[tuple[str, str], ...]] = (
    # credentials
    ("~/.ssh", "SSH keys and known hosts"),
    ("~/.gnupg", "GnuPG keys"),
    ("~/.aws", "AWS credentials"),
    ("~/.azure", "Azure CLI tokens"),
    ("~/.config/gcloud", "Google Cloud credentials"),
    ("~/.kube", "Kubernetes credentials"),
    ("~/.docker", "Docker registry logins (config.json)"),
    ("~/.config/gh", "GitHub CLI token"),
    ("~/.config/hub", "hub's GitHub token"),
    ("~/.git-credentials", "git's stored passwords"),
    ("~/.config/git/credentials", "git's stored passwords (its other place)"),
    ("~/.netrc", "logins for curl, git, pip"),
    ("~/.npmrc", "npm registry tokens"),
    ("~/.pypirc", "PyPI upload tokens"),
    ("~/.cargo/credentials.toml", "crates.io token"),
    ("~/.cargo/credentials", "crates.io token (old name)"),
    ("~/.terraform.d/credentials.tfrc.json", "Terraform Cloud token"),
    ("~/.password-store", "pass's password store"),
    ("~/.local/share/keyrings", "GNOME keyrings"),
    # the host configurations docs/mcp.md and docs/acp.md tell users to put STEERABLE_API_KEY in
    ("~/.config/zed", "Zed's settings (agent_servers env)"),
    ("~/.config/Claude", "Claude Desktop's configuration (Linux)"),
    ("~/Library/Application Support/Claude", "Claude Desktop's configuration (macOS)"),
    ("~/.claude.json", "Claude Code's configuration (MCP servers' env)"),
    ("~/.claude", "Claude Code's credentials and settings"),
    ("~/.cursor", "Cursor's MCP configuration"),
    ("~/.codex", "Codex's configuration and login"),
    ("~/.config/Code/User", "VS Code's user settings and MCP configuration"),
    ("~/.config/JetBrains", "JetBrains IDEs' settings (ACP agent env)"),
)
"""The default deny-read set, each entry with why: credential stores, then host configurations.

steerable's own state directory (other sessions' records) and the MCP configuration
``STEERABLE_MCP_CONFIG`` names are added by :func:`deny_read_from_env`."""

DEV_READABLE: Final = ("null", "zero", "full", "random", "urandom", "fd", "stdin", "stdout", "stderr", "shm")
"""The ``/dev`` entries a child may read under Landlock; every other one is denied (SAFE-3).

Terminals and consoles (``/dev/pts/*``, ``/dev/tty*``: reading one takes the keystrokes typed into
steerable's terminal), input devices, and block devices (a root command reads the raw disk, and
every file on it, past any rule) are not among them. bubblewrap's ``/dev`` is its own and holds
no more than these, a private ``devpts`` and a ``tty`` no command of a new session can open."""


def hidden_devices(dev: str = "/dev") -> list[str]:
    """The entries of ``dev`` but :data:`DEV_READABLE` (``/dev/pts``, ``/dev/tty1``, ``/dev/vda``...)."""
    try:
        names = os.listdir(dev)
    except OSError:
        return []
    return sorted(os.path.join(dev, name) for name in names if name not in DEV_READABLE)


def deny_read_from_env(environ: Mapping[str, str] | None = None) -> tuple[Path, ...]:
    """The deny-read set: :data:`DEFAULT_DENY_READ`, the state directory, ``STEERABLE_SANDBOX_DENY_READ``.

    ``~`` is the ``HOME`` of ``environ``. Nothing is checked on disk here (a missing entry is
    skipped when a run starts: :func:`applicable_denials`).

    Args:
        environ: The environment (default ``os.environ``).

    Returns:
        Absolute paths, in the order above, without duplicates.

    Raises:
        ConfigError: An entry of ``STEERABLE_SANDBOX_DENY_READ`` is neither absolute nor ``~``-relative.
    """
    env = os.environ if environ is None else environ
    home = env.get("HOME") or str(Path.home())
    paths = [_expand(entry, home) for entry, _ in DEFAULT_DENY_READ]
    paths.append(default_state_dir(env))
    mcp_config = env_text(MCP_CONFIG_ENV, env)  # the MCP servers' configuration: their tokens in `env`
    if mcp_config:
        paths.append(_expand(mcp_config, home))
    for entry in (env_text(DENY_READ_ENV, env) or "").split(","):
        if not entry.strip():
            continue
        path = _expand(entry.strip(), home)
        if not path.is_absolute():
            raise ConfigError(
                f"{DENY_READ_ENV} entry {entry!r} is not an absolute path; give absolute or ~/ paths, "
                "separated by commas"
            )
        paths.append(path)
    return tuple(dict.fromkeys(Path(os.path.normpath(path)) for path in paths))


def _expand(entry: str, home: str) -> Path:
    if entry == "~" or entry.startswith("~/"):
        return Path(home + entry[1:])
    return Path(entry)


def applicable_denials(deny_read: Iterable[Path], writable_roots: Sequence[str]) -> list[str]:
    """The entries of ``deny_read`` a run can enforce: resolved, outside every writable root.

    An entry that is a writable root, contains one or lies inside one is left out: the workspace
    must stay readable, and inside it Landlock cannot take a right back (the file tools and
    ``bash`` share the workspace). A link is followed to what it names. A missing entry whose folder
    exists counts (``~/.cargo/credentials.toml`` in ``~/.cargo``): the host may create it during the
    run, and the folder is then split around it like any other (it never shows in the sandbox).

    Args:
        deny_read: The configured set (:func:`deny_read_from_env`).
        writable_roots: The run's writable roots, resolved.

    Returns:
        Real paths, outermost first, none inside another.
    """
    return _outermost(
        real
        for real in _existing(deny_read, missing_in_existing_folder=True)
        if not any(_within(real, root) or _within(root, real) for root in writable_roots)
    )


def denials_inside(deny_read: Iterable[Path], writable_roots: Sequence[str]) -> list[str]:
    """The existing entries of ``deny_read`` that lie inside a writable root (the workspace is ``~``).

    They are hidden by a mount over each, after the writable roots are bound: bubblewrap always,
    Landlock where it has a mount namespace. Real paths, outermost first, none inside another.
    """
    return _outermost(
        real
        for real in _existing(deny_read)
        if any(_within(real, root) and real != root for root in writable_roots)
    )


def denials_for_files(
    deny_read: Iterable[Path],
    root: str,
    *,
    outside: bool = False,
    fold: Callable[[str], str] | None = None,
) -> list[str]:
    """The entries of ``deny_read`` the file tools refuse in the workspace ``root`` (SAFE-3).

    Each entry counts as it resolves (links followed as far as they exist: a missing ``~/.ssh``
    still counts, so no write creates ``~/.ssh/authorized_keys``) and by its own name in its
    resolved folder (a link made there later is still refused by that name). As for commands
    (:func:`applicable_denials`), one that is ``root`` or holds it is left out: the workspace
    stays usable.

    Args:
        deny_read: The configured set (:func:`deny_read_from_env`).
        root: The workspace's real path.
        outside: Keep the entries outside ``root`` too (the tools accept paths outside it).
        fold: How the filesystem compares names (``str.casefold`` where it ignores case).

    Returns:
        Paths as resolved, outermost first, none inside another (compared through ``fold``);
        empty when none applies, the usual case.
    """
    key = fold if fold is not None else str
    top = key(root)
    forms: dict[str, str] = {}  # compared form -> as resolved
    for path in deny_read:
        try:
            resolved = {os.path.realpath(path), os.path.join(os.path.realpath(path.parent), path.name)}
        except (OSError, ValueError):  # a NUL in the name, a link loop: nothing there to read
            continue
        for form in resolved:
            compared = key(form)
            if not _within(top, compared) and (outside or _within(compared, top)):
                forms.setdefault(compared, form)
    return [forms[compared] for compared in _outermost(forms)]


def _existing(paths: Iterable[Path], *, missing_in_existing_folder: bool = False) -> Iterator[str]:
    """The real path of each of ``paths`` that exists (a missing one, or a link loop, hides nothing).

    With ``missing_in_existing_folder``, a missing one whose folder exists too (its real folder).
    """
    for path in paths:
        try:
            yield os.path.realpath(path, strict=True)
        except OSError:
            if missing_in_existing_folder and not os.path.lexists(path):
                try:
                    yield os.path.join(os.path.realpath(path.parent, strict=True), path.name)
                except OSError:
                    continue


def _outermost(paths: Iterable[str]) -> list[str]:
    """``paths`` without duplicates and without any inside another, outermost (shortest) first."""
    kept: list[str] = []
    for real in sorted(set(paths), key=lambda path: (len(path), path)):
        if not any(_within(real, outer) for outer in kept):
            kept.append(real)
    return kept


def masking_mounts(denied: Sequence[str]) -> list[str]:
    """Bubblewrap options that hide ``denied`` (outside the writable roots) for good.

    A mount over a denied *file* is dropped in the sandbox when the host renames a new file onto
    its path (``~/.claude.json``, ``~/.git-credentials`` are rewritten so), showing the new bytes.
    So each directory on the way to a denied entry (below ``/``) gets an empty tmpfs instead, with
    every other entry bound back read-only (links made again as links), then remounted read-only:
    a denied entry has no name in the sandbox at all. A denied entry directly under ``/`` is
    masked by itself (an empty tmpfs, or ``/dev/null``). The listing is a snapshot of shared
    folders (``~``): an entry removed before bubblewrap binds it is left out, not an error.
    """
    args: list[str] = []
    for top in sorted({"/" + d.split("/")[1] for d in denied}):
        below = [d for d in denied if _within(d, top)]
        if top in below:
            if os.path.lexists(top):  # a missing one directly under / cannot be made there
                args += hiding_mount(top)
        else:
            _mask(top, below, args)
    return args


def hiding_mount(path: str) -> list[str]:
    """Bubblewrap options putting an empty read-only tmpfs over folder ``path``, ``/dev/null`` over a file."""
    if os.path.isdir(path):
        return ["--tmpfs", path, "--remount-ro", path]
    return ["--ro-bind", os.devnull, path]


def _mask(directory: str, below: list[str], args: list[str]) -> None:
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return
    args += ["--tmpfs", directory]
    for name in names:
        path = os.path.join(directory, name)
        inner = [d for d in below if _within(d, path)]
        if path in inner:
            continue  # denied: no name in the sandbox
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISLNK(info.st_mode):
            with contextlib.suppress(OSError):
                args += ["--symlink", os.readlink(path), path]
        elif inner and stat.S_ISDIR(info.st_mode):
            _mask(path, inner, args)
        elif stat.S_ISDIR(info.st_mode) or stat.S_ISREG(info.st_mode):
            args += ["--ro-bind-try", path, path]  # -try: one removed before bubblewrap starts is skipped
    args += ["--remount-ro", directory]


def read_grants(denied: Sequence[str], *, root: str = "/") -> list[str]:
    """What to grant read on so that everything under ``root`` but ``denied`` stays readable (Landlock).

    Landlock rules only grant, and a grant covers everything beneath it, so each directory on the
    way from ``root`` to a denied path is not granted itself: each of its entries is, except the
    one leading to the denied path. Links are not granted (a rule would follow the link to its
    target, a denied one included; what a link names is readable through the grant that covers
    the target), nor are sockets and pipes (no rule can hold them). Files that appear in those
    directories after the grants were made stay unreadable for the run; one removed (or made a
    link) before the launcher makes the rules is skipped there, not an error: ``/tmp`` and ``~``
    see other processes' temporary files come and go.

    Args:
        denied: Real paths (:func:`applicable_denials`).
        root: The top of the tree (``/``).

    Returns:
        Paths to grant read on; just ``[root]`` when nothing is denied.
    """
    if not denied:
        return [root]
    grants: list[str] = []
    _split(root, [d for d in denied if _within(d, root)], grants)
    return grants


def _split(directory: str, below: list[str], grants: list[str]) -> None:
    if directory in below:
        return  # denied itself
    if not below:
        grants.append(directory)
        return
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return  # unreadable to us: nothing to grant under it
    for name in names:
        path = os.path.join(directory, name)
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            continue
        inner = [d for d in below if _within(d, path)]
        if inner:
            if stat.S_ISDIR(mode):
                _split(path, inner, grants)
            continue  # a denied file (real paths never go through a link)
        if stat.S_ISDIR(mode) or stat.S_ISREG(mode) or stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
            grants.append(path)


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")
