"""Before a command runs: the configuration file, logging, and the one rule for its workspace.

The order every command shares (docs/configuration.md): the file's settings go under the
environment's (variable > file > default), logging is set up, then the folder the command opens
is checked (``shared._workspace_rule``: not ``/``, a home folder, ...). A command reports a failure
its own way when its row says so (``on_config_error``, ``on_usage_error``: ``_commands``).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Iterator

from steerable_agent_runtime.errors import SteerableError

from ..exit_codes import ExitCode
from ..shared._logging import configure_logging, log_level
from ._commands import Command, resolve

__all__ = ["configure", "explained", "loading"]


def configure(args: argparse.Namespace, command: Command) -> int | None:
    """Apply the configuration file, set up logging and check the workspace; the exit code when that fails.

    A bad file or setting ends the command with a usage error, unless the command reports it
    itself (``command.on_config_error``). So does a workspace the one rule refuses.
    """
    try:
        if command.applies_config_file:
            _apply_config_file(args, command)
        configure_logging(log_level(args.verbose))
    except SteerableError as exc:
        if command.on_config_error is None:
            print(f"steerable: {exc}", file=sys.stderr)
            return ExitCode.USAGE
        configure_logging(log_level(args.verbose, {}))
        code: int = resolve(command.on_config_error)(args, exc)
        return code
    return _refuse_workspace(args, command)


def _refuse_workspace(args: argparse.Namespace, command: Command) -> int | None:
    """Apply the workspace rule to ``command``: exit code 2 when it is refused (message on stderr).

    ``None`` when the workspace may be opened, or the command opens none here; then the
    ``sys.path`` entries dropped at start are said (``_safe_path.tell_dropped``): a refused
    workspace is told alone (``doctor`` says it in its table), as nothing runs there.
    """
    from .._safe_path import tell_dropped
    from ..shared._workspace_rule import workspace_refusal

    workspace = vars(args).get("workspace")
    if command.workspace != "opened":
        if command.workspace != "reported" or workspace_refusal(workspace, command=command.name) is None:
            tell_dropped()
        return None
    message = workspace_refusal(workspace, command=command.name, state_dir=vars(args).get("state_dir"))
    if message is None:
        tell_dropped()
        return None
    print(f"steerable {command.name}: {message}", file=sys.stderr)
    if command.on_usage_error is not None:  # run: its one-line JSON summary, as for any usage error
        resolve(command.on_usage_error)(message)
    return ExitCode.USAGE


@contextlib.contextmanager
def loading(*, own_process: bool) -> Iterator[None]:
    """Load a one-shot command's tools without the garbage collector, then keep them out of its way.

    Loading allocates some 30,000 objects, modules, classes and functions that live as long as the
    process; the collector would walk them again and again meanwhile (several ms of a ``steerable
    call``, benchmarks/startup.py). It is paused while they load and, once they are loaded, they
    are moved out of its sight (``gc.freeze``): what the command allocates afterwards is collected
    as usual. Only when this process runs the command alone (``main()`` of the ``steerable``
    program, not a caller's ``main([...])``, whose objects are its own).
    """
    if not own_process:
        yield
        return
    import gc

    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()


def _apply_config_file(args: argparse.Namespace, command: Command) -> None:
    """Put the configuration file's settings under the environment's (variable > file > default).

    ``args.setting_origins`` (``{}`` by default) gets where the file set each variable it gave, for
    the errors that name one (``config._file.with_origins``).

    Raises:
        ConfigError: The file is invalid (the message names it and the key).
    """
    from ..config._file import read_config_file

    try:
        workspace = None if command.workspace == "per_session" else vars(args).get("workspace") or os.getcwd()
    except FileNotFoundError:  # the current directory was deleted: the workspace rule says so next
        return
    loaded = read_config_file(workspace=workspace)  # acp: each session's folder is checked for the file
    if loaded.ignored:  # a folder the rule refuses is no workspace: the refusal is what the user is told
        from ..shared._workspace_rule import workspace_refusal

        if workspace_refusal(workspace, command=command.name) is not None:
            loaded = read_config_file()
    if loaded.ignored:
        print(
            f"steerable: the configuration file {loaded.path} is not read: {loaded.ignored}", file=sys.stderr
        )
    applied = loaded.applied(os.environ)
    os.environ.update(applied)
    args.setting_origins = loaded.origins(applied)  # an error naming one of them says where it is


def explained(exc: Exception, args: argparse.Namespace) -> str:
    """``exc``'s message, with where the configuration file set each variable it names."""
    from ..config._file import with_origins

    origins: dict[str, str] = args.setting_origins
    return with_origins(str(exc), origins)
