"""Checked inputs (issue 12): scripted-turn files against their schema, and ``--state-dir``.

A bad script or state directory is a configuration error: exit 2, one line on stderr naming the
turn and key (or the option / variable), no traceback; ``steerable run`` still prints its JSON line.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from steerable_agent_runtime.errors import ConfigError, ProviderError, UserError
from steerable_agent_runtime.llm import SCRIPTED_TURNS_SCHEMA, ChatResponse, ScriptedProvider
from steerable_sidecar.shared._state_dir import checked_state_dir

Cli = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "todo.txt").write_text("buy milk\n")
    return root


def write_script(tmp_path: Path, turns: Any) -> Path:
    script = tmp_path / "turns.json"
    script.write_text(json.dumps(turns))
    return script


def run_steerable(run_cli: Cli, ws: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return run_cli("run", "--cwd", str(ws), "--instruction", "look", *args, stdin="", **env)


def assert_usage_error(
    proc: subprocess.CompletedProcess[str], message: str, prefix: str = "steerable run"
) -> None:
    """Exit 2, ``PREFIX: MESSAGE`` on stderr and no traceback; for ``run`` also the JSON line."""
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert f"{prefix}: {message}" in proc.stderr.splitlines(), proc.stderr
    if prefix == "steerable run":
        assert [json.loads(line) for line in proc.stdout.splitlines()] == [
            {"outcome": "usage_error", "error": message, "exitCode": 2}
        ]


# -- scripted turns -------------------------------------------------------------------------------


def test_the_schema_is_valid_draft_2020_12() -> None:
    jsonschema.Draft202012Validator.check_schema(SCRIPTED_TURNS_SCHEMA)
    assert SCRIPTED_TURNS_SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def test_a_misspelt_key_ends_steerable_run_with_exit_2_naming_turn_and_key(
    run_cli: Cli, ws: Path, tmp_path: Path
) -> None:
    script = write_script(
        tmp_path, ["one", "two", {"tool_call": [{"name": "read_file", "arguments": {"path": "todo.txt"}}]}]
    )
    proc = run_steerable(
        run_cli,
        ws,
        STEERABLE_PROVIDER="scripted",
        STEERABLE_SCRIPT=str(script),
        STEERABLE_STATE_DIR=str(tmp_path / "state"),
    )
    assert_usage_error(
        proc,
        f"STEERABLE_SCRIPT: {script}: scripted turn 3: unknown key 'tool_call' (allowed: text, tool_calls, usage)",
    )


def test_tool_calls_that_are_not_a_list_end_with_exit_2_not_an_internal_error(
    run_cli: Cli, ws: Path, tmp_path: Path
) -> None:
    script = write_script(tmp_path, ["first", {"tool_calls": 5}])
    proc = run_steerable(
        run_cli,
        ws,
        STEERABLE_PROVIDER="scripted",
        STEERABLE_SCRIPT=str(script),
        STEERABLE_STATE_DIR=str(tmp_path / "state"),
    )
    assert_usage_error(proc, f"STEERABLE_SCRIPT: {script}: scripted turn 2, tool_calls: 5 is not a list")


def test_a_valid_script_still_completes(run_cli: Cli, ws: Path, tmp_path: Path) -> None:
    script = write_script(
        tmp_path,
        [
            {
                "text": "Reading.",
                "tool_calls": [{"id": "r", "name": "read_file", "arguments": '{"path": "todo.txt"}'}],
            },
            {"tool_calls": [{"name": "list_dir", "arguments": {"path": "."}}], "usage": {"prompt_tokens": 5}},
            {"text": None, "tool_calls": [{"name": "list_dir"}]},
            {"tool_calls": [{"name": "read_file", "arguments": '{"path": '}]},  # a model's slip
            {"text": "Done.", "usage": {"prompt_tokens": 30, "completion_tokens": 4}},
        ],
    )
    proc = run_steerable(
        run_cli,
        ws,
        "--quiet",
        STEERABLE_PROVIDER="scripted",
        STEERABLE_SCRIPT=str(script),
        STEERABLE_STATE_DIR=str(tmp_path / "state"),
    )
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["outcome"] == "completed" and summary["text"] == "Done." and summary["toolCalls"] == 4


@pytest.mark.parametrize(
    ("turns", "message"),
    [
        ([{"tool_calls": [{"arguments": "{}"}]}], "scripted turn 1, tool_calls[0]: 'name' is required"),
        (
            ["a", {"tool_calls": [{"name": "x", "argument": "{}"}]}],
            "scripted turn 2, tool_calls[0]: unknown key 'argument' (allowed: id, name, arguments)",
        ),
        (
            [{"tool_calls": [{"name": "x", "arguments": [1]}]}],
            "scripted turn 1, tool_calls[0].arguments: [1] is not a string or an object",
        ),
        ([{"tool_calls": ["read_file"]}], 'scripted turn 1, tool_calls[0]: "read_file" is not an object'),
        ([{"text": 3}], "scripted turn 1, text: 3 is not a string or null"),
        ([{"usage": {"prompt_tokens": -1}}], "scripted turn 1, usage.prompt_tokens: -1 is less than 0"),
        (
            [{"usage": {"prompt_tokens": 1, "total_tokens": 2}}],
            "scripted turn 1, usage: unknown key 'total_tokens' (allowed: prompt_tokens, completion_tokens)",
        ),
        (["ok", 7], "scripted turn 2: 7 is not a string or an object"),
        (
            [1, 2, 3, 4, 5],
            "scripted turn 1: 1 is not a string or an object; scripted turn 2: 2 is not a string or an "
            "object; scripted turn 3: 3 is not a string or an object; and more problems",
        ),
    ],
)
def test_a_bad_turn_file_names_the_turn_and_the_path(tmp_path: Path, turns: Any, message: str) -> None:
    script = write_script(tmp_path, turns)
    with pytest.raises(ProviderError) as caught:
        ScriptedProvider.from_file(script)
    assert str(caught.value) == f"{script}: {message}"


def test_in_process_turns_are_checked_too_skipping_responses_and_callables() -> None:
    def answer(request: Any) -> ChatResponse:
        return ChatResponse(text="called")

    with pytest.raises(UserError) as caught:
        ScriptedProvider([ChatResponse(text="x"), answer, {"tool_calls": ({"name": "x", "Id": "1"},)}])
    assert (
        str(caught.value) == "scripted turn 3, tool_calls[0]: unknown key 'Id' (allowed: id, name, arguments)"
    )
    provider = ScriptedProvider([ChatResponse(text="x"), answer, {"tool_calls": ({"name": "x"},)}, "done"])
    assert provider.remaining == 4


# -- --state-dir and STEERABLE_STATE_DIR ----------------------------------------------------------


def test_state_dir_that_is_a_file_ends_steerable_run_with_exit_2(
    run_cli: Cli, ws: Path, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    state.write_text("not a directory\n")
    proc = run_steerable(run_cli, ws, "--state-dir", str(state))
    assert_usage_error(proc, f"--state-dir {state} is not a usable directory: it is a file")


def test_state_dir_under_a_file_ends_steerable_run_with_exit_2(
    run_cli: Cli, ws: Path, tmp_path: Path
) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("")
    state = blocker / "state"
    proc = run_steerable(run_cli, ws, "--state-dir", str(state))
    assert_usage_error(
        proc, f"--state-dir {state} is not a usable directory: it cannot be created: {blocker} is a file"
    )


def test_state_dir_that_is_a_file_ends_steerable_sidecar_with_exit_2(
    run_cli: Cli, ws: Path, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    state.write_text("")
    proc = run_cli("sidecar", "-w", str(ws), "--no-plugins", "--state-dir", str(state), stdin="")
    assert_usage_error(
        proc, f"--state-dir {state} is not a usable directory: it is a file", "steerable sidecar"
    )
    assert proc.stdout == ""  # not even lifecycle.ready


def test_state_dir_under_a_file_ends_steerable_sidecar_with_exit_2(
    run_cli: Cli, ws: Path, tmp_path: Path
) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("")
    proc = run_cli("sidecar", "-w", str(ws), "--no-plugins", "--state-dir", str(blocker / "s"), stdin="")
    assert_usage_error(
        proc,
        f"--state-dir {blocker / 's'} is not a usable directory: it cannot be created: {blocker} is a file",
        "steerable sidecar",
    )


def test_the_state_dir_variable_as_a_file_is_named_by_run_and_sidecar(
    run_cli: Cli, ws: Path, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    state.write_text("")
    message = f"STEERABLE_STATE_DIR={state} is not a usable directory: it is a file"
    assert_usage_error(run_steerable(run_cli, ws, STEERABLE_STATE_DIR=str(state)), message)
    sidecar = run_cli("sidecar", "-w", str(ws), "--no-plugins", stdin="", STEERABLE_STATE_DIR=str(state))
    assert_usage_error(sidecar, message, "steerable sidecar")


def test_a_missing_state_dir_is_created_private_and_left_clean(tmp_path: Path) -> None:
    state = tmp_path / "a" / "state"
    assert checked_state_dir(state) == state
    assert state.is_dir() and (state.stat().st_mode & 0o777) == 0o700
    assert list(state.iterdir()) == []  # the writability probe is gone
    assert checked_state_dir(None, environ={"STEERABLE_STATE_DIR": str(state)}) == state


def test_the_default_state_dir_is_named_when_it_is_unusable(tmp_path: Path) -> None:
    (tmp_path / "xdg").write_text("")
    with pytest.raises(ConfigError) as caught:
        checked_state_dir(None, environ={"XDG_STATE_HOME": str(tmp_path / "xdg")})
    assert str(caught.value) == (
        f"the state directory {tmp_path / 'xdg' / 'steerable'} is not a usable directory: it cannot be "
        f"created: {tmp_path / 'xdg'} is a file"
    )


def test_a_state_dir_whose_sessions_entry_is_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "sessions").write_text("")
    with pytest.raises(ConfigError) as caught:
        checked_state_dir(tmp_path)
    assert str(caught.value) == (
        f"--state-dir {tmp_path} is not a usable directory: {tmp_path / 'sessions'} is not a directory"
    )


def test_a_read_only_state_dir_is_refused(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    if os.geteuid() == 0:  # root writes through mode bits: a read-only filesystem stops it
        mounted = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(state)], capture_output=True, text=True
        )
        assert mounted.returncode == 0, f"cannot mount a read-only tmpfs: {mounted.stderr}"
        undo = ["umount", "-l", str(state)]
        reason = "Read-only file system"
    else:
        state.chmod(0o500)
        undo = ["chmod", "700", str(state)]
        reason = "Permission denied"
    try:
        with pytest.raises(ConfigError) as caught:
            checked_state_dir(state)
    finally:
        subprocess.run(undo, check=False)
    assert (
        str(caught.value) == f"--state-dir {state} is not a usable directory: it is not writable ({reason})"
    )
