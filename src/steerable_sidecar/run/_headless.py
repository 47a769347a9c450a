"""``steerable run``: one headless agent run in a jailed workspace.

For eval harnesses and CI: the model comes from the ``STEERABLE_*`` provider configuration
(``docs/providers.md``), the file tools are confined to ``--workspace`` (alias ``--cwd``), every
consent prompt is answered yes (the workspace is the jail), progress streams to stderr, and stdout
carries exactly one line: the JSON summary::

    {"outcome": "completed", "rounds": 3, "toolCalls": 4, "usage": {...}, "text": "...",
     "sessionId": "...", "durationMs": 5123.4}

Exit codes (:data:`EXIT_CODES`): 0 the run succeeded (completed, or ended on a successful terminal
result); 1 it ended on a failed terminal result; 2 usage or configuration error; 3 the round limit
was reached; 4 the provider failed; 5 the model's answer was cut off or filtered (``incomplete``:
``finish_reason`` ``length``, ``content_filter``, ``sensitive``); 6 the model answered nothing
twice (``empty_answer``); 7 the model refused the task (``refused``: its words in ``error``); 70
an internal error (a bug, or the durable record could not be written:
the traceback is on stderr); 75 another process has the session open (``session_busy``, the
error names its pid and command line); ``128 + n`` after a signal (130 Ctrl-C, 143 SIGTERM, 129
SIGHUP: the calls in flight recorded as interrupted, the record's end written). Every exit prints
the summary line, usage errors included (``{"outcome": "usage_error", "error": ..., "exitCode":
2}``). A summary's ``error`` (a provider error names the provider and base URL) is repeated on
stderr, after the run's counts.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TextIO

from steerable_agent_runtime import DEFAULT_MAX_ROUNDS, RunOutcome  # lazy: not the loop (parser only)
from steerable_agent_runtime.errors import SteerableError

from ..exit_codes import ExitCode
from ..providers._vendor_profiles import PROFILE_ENV, THINKING_CHOICES

if TYPE_CHECKING:  # imported where a run needs them: the CLI's parser reads add_run_arguments
    from steerable_agent_runtime import ToolRouter
    from steerable_agent_runtime.llm import LLMProvider
    from steerable_agent_runtime.loop import LoopEvent, RunSummary

    from .._boot import Booted

__all__ = [
    "DEFAULT_SYSTEM_PROMPT",
    "EXIT_CODES",
    "add_run_arguments",
    "run_config_error",
    "run_headless",
    "usage_line",
]

EXIT_CODES: Final = {
    "succeeded": ExitCode.OK,
    "terminal_failure": ExitCode.FAILED,
    "usage": ExitCode.USAGE,
    RunOutcome.MAX_ROUNDS: ExitCode.MAX_ROUNDS,
    RunOutcome.ERROR: ExitCode.PROVIDER_ERROR,
    RunOutcome.INCOMPLETE: ExitCode.INCOMPLETE,
    RunOutcome.EMPTY_ANSWER: ExitCode.EMPTY_ANSWER,
    RunOutcome.REFUSED: ExitCode.REFUSED,
    RunOutcome.CANCELLED: ExitCode.INTERRUPTED,
    "internal_error": ExitCode.INTERNAL_ERROR,
    "session_busy": ExitCode.SESSION_BUSY,
}
"""Process exit code per outcome (see the module docstring)."""


DEFAULT_SYSTEM_PROMPT: Final = (
    "You are an autonomous software agent working in the directory {cwd}. Use the tools to inspect "
    "and change files there; paths are relative to it. Read a file before you overwrite it. When the "
    "task is done, answer with a short summary and call no more tools."
)


def usage_line(error: str, code: int = ExitCode.USAGE, outcome: str = "usage_error") -> None:
    """Print the one-line JSON summary of a run that did not start (or ended early) on stdout."""
    print(json.dumps({"outcome": outcome, "error": error, "exitCode": code}, ensure_ascii=False), flush=True)


def run_config_error(args: argparse.Namespace, error: SteerableError) -> int:
    """A bad setting, not the command line: its message on stderr and the JSON line, without the usage."""
    print(f"steerable run: {error}", file=sys.stderr)
    usage_line(str(error))
    return ExitCode.USAGE


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``steerable run`` options to ``parser``.

    The shared options (``--workspace/-w``, ``--harness``, ``--no-web-tools``, ``--no-plugins``,
    ``--allow-protected-writes``, ``--verbose``) come from the ``steerable`` parser
    (``steerable_sidecar.cli._main``); ``--cwd`` stays as an alias of ``--workspace``.
    Its usage errors also print the one-line JSON summary on stdout (:func:`usage_line`, the
    command table's ``on_usage_error``), so a harness reading stdout always gets a line.
    """
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "task", nargs="?", default=None, metavar="INSTRUCTION", help="the task (as --instruction gives it)"
    )
    source.add_argument("--instruction", metavar="TEXT", help="the task for the agent")
    source.add_argument("--instruction-file", metavar="FILE", help="read the task from FILE ('-' for stdin)")
    parser.add_argument(
        "--cwd", dest="workspace", metavar="DIR", default=argparse.SUPPRESS, help="alias of --workspace"
    )
    parser.add_argument(
        "--max-rounds",
        type=_positive_int,
        default=DEFAULT_MAX_ROUNDS,
        metavar="N",
        help=f"model calls at most (default {DEFAULT_MAX_ROUNDS})",
    )
    parser.add_argument(
        "--model-timeout-ms",
        type=_positive_int,
        default=600_000,
        metavar="MS",
        help="deadline for each whole model call (default 600000); past it the run ends with error",
    )
    parser.add_argument(
        "--mcp",
        metavar="FILE",
        default=None,
        help="MCP servers to connect (JSON; default $STEERABLE_MCP_CONFIG); their tools are deferred",
    )
    parser.add_argument("--system", metavar="TEXT", default=None, help="replace the default system prompt")
    parser.add_argument("--session-id", metavar="ID", default=None, help="resume (or name) a durable session")
    parser.add_argument(
        "--state-dir",
        metavar="DIR",
        default=None,
        help="where session records go (default: $STEERABLE_STATE_DIR or $XDG_STATE_HOME/steerable)",
    )
    parser.add_argument(
        "--ask-user",
        choices=["auto", "on", "off"],
        default="auto",
        help="offer ask_user with a terminal prompt (auto: only when stdin is a terminal)",
    )
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")
    model = parser.add_argument_group("model settings (each wins over its STEERABLE_* variable)")
    model.add_argument(
        "--provider",
        metavar="NAME",
        default=None,
        help="the vendor: openai, ollama, vllm... (the key stays a variable)",
    )
    model.add_argument("--model", metavar="ID", default=None, help="the model name sent with each request")
    model.add_argument(
        "--base-url", metavar="URL", default=None, help="the endpoint (requests go to URL/chat/completions)"
    )
    model.add_argument(
        "--max-tokens", metavar="N", default=None, help="output bound per model call; 0 sends none"
    )
    model.add_argument("--temperature", metavar="T", default=None, help="sampling temperature, 0 to 2")
    model.add_argument(
        "--thinking", choices=THINKING_CHOICES, default=None, help="reasoning on/off, or its effort"
    )
    model.add_argument("--profile", metavar="NAME", default=None, help="the vendor profile whatever the host")


_SETTING_FLAGS: Final = {
    "provider": "STEERABLE_PROVIDER",
    "model": "STEERABLE_MODEL",
    "base_url": "STEERABLE_BASE_URL",
    "max_tokens": "STEERABLE_MAX_TOKENS",
    "temperature": "STEERABLE_TEMPERATURE",
    "thinking": "STEERABLE_THINKING",
    "profile": PROFILE_ENV,
}
"""``steerable run``'s model flags and the variable each stands in for (read and checked the same way)."""


def _model_settings(args: argparse.Namespace) -> dict[str, str]:
    """The environment the provider is built from: ours, with the model flags given put over it."""
    environ = dict(os.environ)
    given = vars(args)  # add_run_arguments defines every one of them (None: not given)
    for attribute, variable in _SETTING_FLAGS.items():
        value = given[attribute]
        if value is not None:
            environ[variable] = str(value)
    return environ


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _instruction(args: argparse.Namespace) -> str:
    if args.instruction is not None or args.task is not None:
        text: str = args.instruction if args.instruction is not None else args.task
    elif args.instruction_file == "-":
        text = sys.stdin.read()
    else:
        try:
            text = Path(args.instruction_file).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise ValueError(f"--instruction-file {args.instruction_file}: {reason}") from None
    if not text.strip():
        raise ValueError("the instruction is empty")
    return text


class _Progress:
    """Live progress on stderr with rich (imported only for a run that shows progress)."""

    def __init__(self, stream: TextIO) -> None:
        from rich.console import Console

        self.console = Console(file=stream, highlight=False, soft_wrap=True)
        self._in_text: str | None = None  # "text" or "reasoning" while a stream of either is open

    def __call__(self, event: LoopEvent) -> None:
        kind = event["type"]
        if kind in ("text", "reasoning"):  # model output: never a terminal escape sequence
            if self._in_text not in (None, kind):
                self.console.out("")
            style = "white" if kind == "text" else "dim"
            self.console.out(_printable(event["text"]), end="", style=style, highlight=False)
            self._in_text = kind
            return
        if self._in_text:
            self.console.out("")
            self._in_text = None
        if kind == "round":
            self.console.rule(f"round {event['round']}", style="dim")
        elif kind == "tool_call":
            call = event["call"]
            arguments = (
                call["arguments"] if isinstance(call["arguments"], str) else json.dumps(call["arguments"])
            )
            name, shown = _safe(call["name"], 80), _safe(arguments, 160)
            self.console.print(f"[cyan]→ {name}[/] [dim]{shown}[/]", markup=True)
        elif kind == "tool_result":
            result = event["result"]
            if result.get("success"):
                label = "[green]✓[/]" if not result.get("terminal") else "[green]■ terminal[/]"
            elif result.get("needsFollowup"):
                label = "[yellow]↻ retry[/]"
            else:
                label = "[red]✗ terminal[/]"
            detail = _safe(str(result.get("error") or result.get("message") or ""), 200)
            self.console.print(f"  {label} {_safe(event['name'], 80)} [dim]{detail}[/]", markup=True)
        elif kind == "done":
            summary = event["summary"]
            usage = summary["usage"]
            why = f": {_safe(summary['error'], 1000)}" if summary.get("error") else ""
            self.console.print(
                f"[bold]{summary['outcome']}[/] after {summary['rounds']} round(s), "
                f"{summary['toolCalls']} tool call(s), {usage['totalTokens']} tokens{why}",
                markup=True,
            )


_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _printable(text: str) -> str:
    """``text`` with control characters (ANSI/OSC escapes included) shown as ``?``; newlines kept."""
    return _CONTROL.sub("?", text)


def _safe(text: str, limit: int) -> str:
    """Model-controlled text for a rich markup line: one line, clipped, no controls, markup escaped."""
    from rich.markup import escape

    text = _printable(" ".join(text.split()))
    return escape(text if len(text) <= limit else text[: limit - 1] + "…")


def _exit_code(summary: RunSummary) -> int:
    if summary.succeeded:
        return EXIT_CODES["succeeded"]
    if summary.outcome is RunOutcome.TERMINAL:
        return EXIT_CODES["terminal_failure"]
    return EXIT_CODES[summary.outcome]


def _finish_router(args: argparse.Namespace, router: ToolRouter) -> None:
    wants_ask = args.ask_user == "on" or (args.ask_user == "auto" and sys.stdin.isatty())
    if wants_ask:
        from steerable_agent_runtime.ask_user import make_ask_user_tool

        from ._terminal_prompt import terminal_ask_user_handler

        router.register(make_ask_user_tool(terminal_ask_user_handler()))


@dataclass(frozen=True, slots=True)
class _Run:
    """One ``steerable run`` as :func:`run_headless` resolved it.

    Attributes:
        args: The parsed command line.
        provider: The model.
        instruction: The task text.
        cwd: The workspace folder (resolved).
        state_dir: Where the session record goes.
        stage: ``{"running": bool}``, set true when the loop starts (a later failure is internal).
        session_id: ``--session-id``, else a fresh id; its lock is held for the whole run (REC-3).
    """

    args: argparse.Namespace
    provider: LLMProvider
    instruction: str
    cwd: Path
    state_dir: Path
    stage: dict[str, bool]
    session_id: str


async def _run(run: _Run) -> dict[str, Any]:
    from .._boot import boot_tools, mcp_sources_for

    args = run.args
    from ..shared._state_dir import environ_with_state_dir

    # --no-web-tools omits the pair entirely (spec: Web tools); an invalid STEERABLE_WEB_* fails the load
    booted = boot_tools(
        run.cwd,
        allow_protected_writes=args.allow_protected_writes,
        harness=args.harness,
        plugins=not args.no_plugins,
        web_tools=not args.no_web_tools,
        environ=environ_with_state_dir(run.state_dir),  # commands may not read it (SAFE-3)
    )
    try:
        router = booted.router
        _finish_router(args, router)
        sources = mcp_sources_for(router, args.mcp)
        async with sources if sources is not None else contextlib.nullcontext():
            return await _run_loop(run, booted)
    finally:
        await booted.aclose()


async def _run_loop(run: _Run, booted: Booted) -> dict[str, Any]:
    from steerable_agent_runtime.executor import approve_all

    from ..shared._assembly import LoopOptions, Transport, assemble_loop, open_session

    args = run.args
    session = await open_session(run.state_dir, run.session_id)
    # every consent prompt is answered yes: the workspace is the jail (docs/runtime.md, Consent)
    transport = Transport(
        approve=approve_all,
        on_event=None if args.quiet else _Progress(sys.stderr),
        read_state=booted.workspace.state.seed,
    )
    options = LoopOptions(max_rounds=args.max_rounds, model_timeout_ms=args.model_timeout_ms)
    loop = await assemble_loop(
        session,
        run.provider,
        booted.router,
        transport=transport,
        offered=booted.harness.offered,
        options=options,
    )
    system = args.system or DEFAULT_SYSTEM_PROMPT.format(cwd=run.cwd)
    prompt = session.opening(system, [{"role": "user", "content": run.instruction}])
    import asyncio

    from ..shared._signals import SHUTDOWN_GRACE_S, SIGNALS, Shutdown

    started = time.perf_counter()
    run.stage["running"] = True
    running = asyncio.ensure_future(loop.run(session.history, prompt))
    shutdown = Shutdown()
    event_loop = asyncio.get_running_loop()

    def stop(signum: int) -> None:  # REC-4: the calls in flight recorded as interrupted, then the end
        first = not shutdown.requested
        shutdown.request(signum)
        if first and loop.cancel(shutdown.reason):
            event_loop.call_later(SHUTDOWN_GRACE_S, running.cancel)  # the grace bounds the wind-down
        else:
            running.cancel()

    try:
        for signum in SIGNALS:
            event_loop.add_signal_handler(signum, stop, signum)
    except (NotImplementedError, RuntimeError):  # not the main thread, or no signals here
        pass
    try:
        summary = await running
    except asyncio.CancelledError:  # past the grace, or a second signal: the loop did not wind down
        if not shutdown.requested:
            raise
        from steerable_agent_runtime.loop import RunSummary

        summary = RunSummary(RunOutcome.CANCELLED, error=shutdown.reason)
    out = {
        **summary.to_dict(),
        "sessionId": session.id,
        "durationMs": round((time.perf_counter() - started) * 1000, 1),
    }
    # a signal's exit is the shell's 128 + n (143 SIGTERM, 129 SIGHUP, 130 SIGINT)
    out["exitCode"] = 128 + shutdown.signum if shutdown.signum is not None else _exit_code(summary)
    return out


def _internal_error(exc: BaseException) -> int:
    from steerable_agent_runtime.record import StateWriteError

    if isinstance(exc, StateWriteError):  # not a bug: the sentence names the file, the cause and the fix
        print(f"steerable run: {exc}", file=sys.stderr)
        usage_line(str(exc), EXIT_CODES["internal_error"], "internal_error")
        return EXIT_CODES["internal_error"]
    import traceback

    traceback.print_exception(exc, file=sys.stderr)
    usage_line(f"{type(exc).__name__}: {exc}", EXIT_CODES["internal_error"], "internal_error")
    return EXIT_CODES["internal_error"]


def _session_busy(message: str) -> int:
    print(f"steerable run: {message}", file=sys.stderr)
    usage_line(message, EXIT_CODES["session_busy"], "session_busy")
    return EXIT_CODES["session_busy"]


def run_headless(args: argparse.Namespace, *, provider: LLMProvider | None = None) -> int:
    """Run ``steerable run`` with parsed ``args``; prints the summary line; returns the exit code.

    Args:
        args: Parsed by a parser built with :func:`add_run_arguments`.
        provider: The model (default: from the ``STEERABLE_*`` environment).

    Returns:
        The exit code (:data:`EXIT_CODES`).
    """
    stage = {"running": False}
    try:
        instruction = _instruction(args)
        cwd = Path(args.workspace or os.getcwd()).resolve()
        if not cwd.is_dir():
            from steerable_agent_runtime.config import tilde_problem

            given = args.workspace or ""
            shown = repr(given) if tilde_problem(given) else str(cwd)
            raise ValueError(f"--workspace {shown} is not a directory{tilde_problem(given)}")
        from ..shared._state_dir import checked_state_dir

        state_dir = checked_state_dir(args.state_dir)  # a ConfigError naming --state-dir or the variable
        if provider is None:
            from ..providers._openai import default_llm_provider

            provider = default_llm_provider(environ=_model_settings(args))
        import asyncio  # the parser (every command) does not need it

        from steerable_agent_runtime.types import new_call_id

        from ..shared._session_lock import SessionLocks

        run = _Run(args, provider, instruction, cwd, state_dir, stage, args.session_id or new_call_id())
        locks = SessionLocks(state_dir / "sessions")
        holder = locks.hold(run.session_id)  # REC-3: one process per session (before any event loop)
        if holder is not None:
            return _session_busy(holder.message())
        try:
            with contextlib.redirect_stdout(sys.stderr):  # stdout is the summary line alone
                out = asyncio.run(_run(run))
        finally:
            locks.release_all()
    except KeyboardInterrupt:  # before the loop's own handler was installed, or after it
        usage_line("interrupted", EXIT_CODES[RunOutcome.CANCELLED], RunOutcome.CANCELLED.value)
        return EXIT_CODES[RunOutcome.CANCELLED]
    except (SteerableError, ValueError, OSError) as exc:
        if stage["running"]:  # the run had started: not a usage problem
            return _internal_error(exc)
        from ..config._file import with_origins

        said = with_origins(str(exc), args.setting_origins)  # a value from the configuration file
        print(f"steerable run: {said}", file=sys.stderr)
        usage_line(said)
        return EXIT_CODES["usage"]
    except Exception as exc:
        return _internal_error(exc)
    code = int(out["exitCode"])
    print(json.dumps(out, ensure_ascii=False))
    return code
