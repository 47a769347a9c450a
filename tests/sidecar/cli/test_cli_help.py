"""Issue 32 (messages name the fix): the ``steerable`` commands' ``--help`` and usage errors.

Each command's ``--help`` says what it is for, lists only options it accepts, ``run``'s lists every
exit code, and a misspelt command, choice or option is answered with the one meant. The help texts
and messages are the real ``steerable`` process's; an option's acceptance is the command line's
(every refusal happens there, :func:`steerable_sidecar.cli._main._parse`).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
from collections.abc import Callable

import pytest

from steerable_sidecar.cli import _main as cli
from steerable_sidecar.cli._commands import COMMANDS as TABLE
from steerable_sidecar.cli._parser import build_parser
from steerable_sidecar.exit_codes import ExitCode

RunCli = Callable[..., subprocess.CompletedProcess[str]]

COMMANDS = ("tools", "call", "session", "mcp", "acp", "plugins", "doctor", "jobs", "run", "sidecar")
EVERY = [(command,) for command in COMMANDS] + [("jobs", "stop")]
CHOICES = "'tools', 'call', 'session', 'mcp', 'acp', 'plugins', 'doctor', 'jobs', 'run', 'sidecar'"


def flat(text: str) -> str:
    """``text`` with argparse's line wrapping undone."""
    return " ".join(text.split())


def help_of(run_cli: RunCli, *command: str) -> str:
    done = run_cli(*command, "--help")
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_every_command_is_described() -> None:
    parser = build_parser()
    listed = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert tuple(listed.choices) == COMMANDS == tuple(TABLE)


@pytest.mark.parametrize("command", EVERY, ids=" ".join)
def test_a_commands_help_says_what_it_does(command: tuple[str, ...], run_cli: RunCli) -> None:
    shown = help_of(run_cli, *command)
    description = TABLE[command[0]].description if len(command) == 1 else None
    if description is not None:
        assert flat(description) in flat(shown)
    paragraphs = shown.split("\n\n")  # usage, the description, then the options
    assert not paragraphs[1].startswith(("positional arguments:", "options:")), shown


def test_calls_help_names_its_output_and_exit_codes(run_cli: RunCli) -> None:
    assert (
        "Run one tool call in the workspace and print its ToolResult JSON on stdout; exit 0 when the "
        'result succeeded, 1 when it failed. Example: steerable call read_file \'{"path": "README.md"}\'. '
        "Each call is its own session: for several steps that share read state, use `session` or `mcp`."
    ) in flat(help_of(run_cli, "call"))


def test_jobs_stop_is_described(run_cli: RunCli) -> None:
    assert (
        "Stop background jobs, each with every process below it: SIGTERM, then SIGKILL after the grace. "
        "Exit 1 when a pid given is not a running job."
    ) in flat(help_of(run_cli, "jobs", "stop"))


def value_for(option_line: str) -> list[str]:
    """A value the option takes at parse time, from its help line (``--harness {full,...}``)."""
    parts = option_line.split()
    if len(parts) == 1:
        return []
    metavar = parts[1]
    if metavar.startswith("{"):
        return [metavar.strip("{}").split(",")[0]]
    return ["1"] if metavar in {"N", "MS", "TOKENS", "S"} else ["x"]


def options_in(shown: str) -> dict[str, list[str]]:
    """Every long option ``--help`` mentions, each with a value it takes."""
    forms = {}
    for line in shown.splitlines():
        match = re.match(r"  (-\S.*?)(?:\s{2,}|$)", line)
        if match:
            for form in match.group(1).split(", "):
                if form.startswith("--"):
                    forms[form.split()[0]] = value_for(form)
    mentioned = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", shown))
    assert mentioned <= set(forms), f"mentioned but not an option: {mentioned - set(forms)}"
    return {option: forms[option] for option in sorted(mentioned) if option != "--help"}


def accepted(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str | None:
    """``None`` when ``steerable ARGV`` parses; else what it said on stderr."""
    try:
        cli._parse(build_parser(), argv)
    except SystemExit:
        return capsys.readouterr().err
    return None


@pytest.mark.parametrize("command", EVERY, ids=" ".join)
def test_every_option_a_help_lists_is_accepted(
    command: tuple[str, ...], run_cli: RunCli, capsys: pytest.CaptureFixture[str]
) -> None:
    listed = options_in(help_of(run_cli, *command))
    assert listed, "no options found"
    refused = {}
    for option, value in listed.items():
        base = {"call": ["read_file"], "run": ["--instruction", "x"]}.get(command[0], [])
        if option in ("--instruction", "--instruction-file"):
            base = []
        said = accepted([*command, *base, option, *value], capsys)
        if said is not None:
            refused[option] = said
    assert refused == {}


@pytest.mark.parametrize(
    ("command", "option", "said"),
    [
        (
            "acp",
            "--workspace",
            "steerable acp: --workspace is not accepted: each session's workspace is the folder the "
            "editor opens (session/new's cwd), confined to it\n",
        ),
        (
            "acp",
            "--allow-outside-workspace",
            "steerable acp: --allow-outside-workspace is not accepted: each session's workspace is the "
            "folder the editor opens (session/new's cwd), confined to it\n",
        ),
    ],
)
def test_a_refused_option_is_not_listed_and_still_refused_by_name(
    command: str, option: str, said: str, run_cli: RunCli
) -> None:
    assert option not in help_of(run_cli, command)
    value = ["/tmp"] if option == "--workspace" else []
    for argv in ([command, option, *value], [option, *value, command]):  # after or before the name
        done = run_cli(*argv, stdin="")
        assert (done.returncode, done.stdout, done.stderr) == (2, "", said)


def test_runs_help_hides_the_option_it_refuses(run_cli: RunCli) -> None:
    assert "--allow-outside-workspace" not in help_of(run_cli, "run")
    assert {name for name, command in TABLE.items() if command.refused} == {"acp", "run"}


def test_runs_help_lists_every_exit_code(run_cli: RunCli) -> None:
    shown = flat(help_of(run_cli, "run"))
    assert (
        "Exit codes: 0 success, 1 a failed terminal result, 2 usage or configuration error, 3 round "
        "limit, 4 provider failure, 5 an answer cut off or filtered, 6 empty answers, 7 the model "
        "refused, 70 internal error, 75 the session is open in another process; 128 + n on signal n: "
        "129 SIGHUP, 130 Ctrl-C, 141 stdout closed, 143 SIGTERM."
    ) in shown
    for code in ExitCode:  # a code added later is listed with its meaning, from the enum itself
        assert f" {int(code)} {code.meaning}" in shown


def last_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, done.stderr
    return done.stderr.splitlines()[-1]


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (
            ["tool"],
            f"steerable: error: argument COMMAND: invalid choice: 'tool' (choose from {CHOICES}); "
            "did you mean 'tools'?",
        ),
        (["xyz"], f"steerable: error: argument COMMAND: invalid choice: 'xyz' (choose from {CHOICES})"),
        (
            ["--harness", "ful", "tools"],
            "steerable: error: argument --harness: invalid choice: 'ful' (choose from 'full', 'minimal', "
            "'progressive'); did you mean 'full'?",
        ),
        (
            ["jobs", "stp"],
            "steerable jobs: error: argument ACTION: invalid choice: 'stp' (choose from 'stop'); "
            "did you mean 'stop'?",
        ),
        (
            ["call", "--worksapce", "x"],
            "steerable call: error: unrecognized arguments: --worksapce; did you mean --workspace?",
        ),
        (
            ["call", "--worksapce"],
            "steerable call: error: the following arguments are required: name; did you mean --workspace for "
            "--worksapce?",
        ),
        (["--jsn", "tools"], "steerable tools: error: unrecognized arguments: --jsn; did you mean --json?"),
        (
            ["tools", "--jsn", "--harnes=full"],
            "steerable tools: error: unrecognized arguments: --jsn --harnes=full; did you mean --json for "
            "--jsn, --harness for --harnes?",
        ),
        (["tools", "--bogus"], "steerable tools: error: unrecognized arguments: --bogus"),
        (
            ["jobs", "stop", "--gracee", "1"],
            "steerable jobs stop: error: unrecognized arguments: --gracee; did you mean --grace?",
        ),
        (
            ["acp", "--worksapce", "x"],  # the option acp refuses is never suggested
            "steerable acp: error: unrecognized arguments: --worksapce x",
        ),
    ],
)
def test_a_misspelt_command_choice_or_option_names_the_one_meant(
    argv: list[str], said: str, run_cli: RunCli
) -> None:
    assert last_line(run_cli(*argv, stdin="")) == said


def test_runs_usage_errors_name_the_option_meant_in_the_json_line_too(run_cli: RunCli) -> None:
    done = run_cli("run", "--instruction", "x", "--qiet", stdin="")
    assert last_line(done) == "steerable run: error: unrecognized arguments: --qiet; did you mean --quiet?"
    assert done.stdout == (
        '{"outcome": "usage_error", "error": "unrecognized arguments: --qiet; did you mean --quiet?", '
        '"exitCode": 2}\n'
    )
    missing = run_cli("run", "--instrction", "x", stdin="")
    assert last_line(missing) == (
        "steerable run: error: unrecognized arguments: --instrction; did you mean --instruction?"
    )
    missing = run_cli("run", "--instrction=x", stdin="")
    assert last_line(missing) == (
        "steerable run: error: one of the arguments INSTRUCTION --instruction --instruction-file is "
        "required; did you mean --instruction for --instrction?"
    )


@pytest.mark.parametrize(
    "argv",
    [
        ("--harness", "ful", "run", "x"),
        ("-w", "/tmp", "--harness", "ful", "run", "x"),
        ("run", "--harness", "ful", "x"),
    ],
    ids=["before", "after-a-value", "after"],
)
def test_runs_json_line_comes_for_a_shared_option_refused_before_its_name(
    argv: tuple[str, ...], run_cli: RunCli
) -> None:
    """``steerable run`` prints its one-line JSON summary for every usage error, wherever the option stood.

    Before the command's name the top-level parser reports it (``steerable --harness ful run x``):
    it printed the usage alone, and a harness reading stdout got no line.
    """
    done = run_cli(*argv)
    message = (
        "argument --harness: invalid choice: 'ful' (choose from 'full', 'minimal', 'progressive'); "
        "did you mean 'full'?"
    )
    assert done.returncode == 2
    assert json.loads(done.stdout) == {"outcome": "usage_error", "error": message, "exitCode": 2}
    assert done.stderr.endswith(f"error: {message}\n")


def test_a_shared_options_error_before_another_command_prints_no_json_line(run_cli: RunCli) -> None:
    done = run_cli("--harness", "ful", "tools")
    assert (done.returncode, done.stdout) == (2, "")
