"""``steerable run``: headless runs as a real process (scripted model and the local OpenAI server)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from run_helpers import summary_of

from fake_openai import FakeOpenAI
from waiting import wait_until

Run = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "todo.txt").write_text("buy milk\n")
    (tmp_path / "secret.txt").write_text("TOP-SECRET-7731\n")
    return root


@pytest.fixture
def run(tmp_path: Path, ws: Path, child_env: Callable[..., dict[str, str]]) -> Run:
    def _run(
        turns: list[Any] | None, *args: str, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        extra = {"STEERABLE_STATE_DIR": str(tmp_path / "state")}
        if turns is not None:
            script = tmp_path / "turns.json"
            script.write_text(json.dumps(turns))
            extra |= {"STEERABLE_PROVIDER": "scripted", "STEERABLE_SCRIPT": str(script)}
        return subprocess.run(
            [sys.executable, "-P", "-m", "steerable_sidecar", "run", "--cwd", str(ws), *args],
            capture_output=True,
            text=True,
            encoding="utf-8",
            env=child_env(**extra, **(env or {})),
            stdin=subprocess.DEVNULL,
            timeout=60,
            check=False,
        )

    return _run


def test_completed_run_prints_one_json_summary_and_exits_0(run: Run, ws: Path, tmp_path: Path) -> None:
    turns = [
        {"tool_calls": [{"id": "r", "name": "read_file", "arguments": '{"path": "todo.txt"}'}]},
        {
            "tool_calls": [
                {
                    "id": "e",
                    "name": "edit_file",
                    "arguments": '{"path": "todo.txt", "old_string": "milk", "new_string": "oat milk"}',
                }
            ]
        },
        {"text": "Updated the list.", "usage": {"prompt_tokens": 30, "completion_tokens": 4}},
    ]
    proc = run(turns, "--instruction", "use oat milk", "--session-id", "h1")
    assert proc.returncode == 0, proc.stderr
    summary = summary_of(proc)
    assert summary["outcome"] == "completed" and summary["rounds"] == 3 and summary["toolCalls"] == 2
    assert summary["usage"] == {"promptTokens": 30, "completionTokens": 4, "totalTokens": 34}
    assert summary["sessionId"] == "h1" and summary["exitCode"] == 0 and summary["durationMs"] > 0
    assert (ws / "todo.txt").read_text() == "buy oat milk\n"
    # live progress went to stderr
    assert "read_file" in proc.stderr and "edit_file" in proc.stderr and "completed" in proc.stderr
    assert (tmp_path / "state" / "sessions" / "h1.jsonl").is_file()


def test_workspace_is_a_jail(run: Run, tmp_path: Path) -> None:
    turns = [
        {
            "tool_calls": [
                {
                    "id": "x",
                    "name": "read_file",
                    "arguments": json.dumps({"path": str(tmp_path / "secret.txt")}),
                }
            ]
        },
        {"tool_calls": [{"id": "y", "name": "read_file", "arguments": '{"path": "../secret.txt"}'}]},
        "could not",
    ]
    proc = run(turns, "--instruction", "read the secret", "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert summary_of(proc)["outcome"] == "completed"
    record = next((tmp_path / "state" / "sessions").glob("*.jsonl")).read_text()
    assert "TOP-SECRET-7731" not in record and record.count("path_outside_workspace") >= 2
    assert proc.stderr == ""  # --quiet


def test_max_rounds_exits_3(run: Run) -> None:
    unknown_then_fail = [
        {"tool_calls": [{"id": "p", "name": "apply_patch", "arguments": '{"patch": "garbage"}'}]}
    ]
    proc = run(unknown_then_fail * 3, "--instruction", "x", "--max-rounds", "2", "--quiet")
    assert proc.returncode == 3 and summary_of(proc)["outcome"] == "max_rounds"


def test_provider_error_exits_4(run: Run, fake_openai: FakeOpenAI) -> None:
    fake_openai.script([{"status": 500, "body": {"error": {"message": "upstream down"}}}] * 5)
    env = {
        "STEERABLE_PROVIDER": "openai",
        "STEERABLE_MODEL": "m",
        "STEERABLE_BASE_URL": fake_openai.base_url,
        "STEERABLE_API_KEY": "sk-x",
    }
    proc = run(None, "--instruction", "x", "--quiet", env=env)
    assert proc.returncode == 4
    summary = summary_of(proc)
    assert summary["outcome"] == "error" and "500" in summary["error"]


def test_usage_and_config_errors_exit_2_naming_the_problem(run: Run, tmp_path: Path) -> None:
    missing = run(None, "--instruction", "x", env={"STEERABLE_PROVIDER": "openai"})
    assert missing.returncode == 2 and "STEERABLE_MODEL" in missing.stderr
    assert summary_of(missing)["outcome"] == "usage_error"
    no_instruction = run([], "--cwd", str(tmp_path))
    assert no_instruction.returncode == 2 and "--instruction" in no_instruction.stderr
    empty = tmp_path / "empty.txt"
    empty.write_text("  \n")
    for proc in [
        no_instruction,
        run([], "--instruction-file", str(empty)),
        run([], "--instruction", "x", "--harness", "bogus"),
        run([], "--instruction", "x", "--max-rounds", "0"),
        run([], "--instruction", "x", "--max-rounds", "abc"),
        run([], "--instruction", "x", "--bogus"),
        run([], "--instruction-file", str(tmp_path / "missing.md")),
    ]:
        # every exit prints the summary line, argument errors included
        assert proc.returncode == 2, proc.stderr
        assert summary_of(proc)["outcome"] == "usage_error" and summary_of(proc)["exitCode"] == 2
        assert "_positive_int" not in proc.stderr
    assert "unrecognized arguments: --bogus" in summary_of(run([], "--instruction", "x", "--bogus"))["error"]
    missing_file = summary_of(run([], "--instruction-file", str(tmp_path / "missing.md")))["error"]
    assert missing_file.startswith("--instruction-file ") and "No such file or directory" in missing_file


def test_instruction_file_and_no_web_tools_and_harness(run: Run, tmp_path: Path) -> None:  # WEB-2
    task = tmp_path / "task.md"
    task.write_text("Say hi.")
    proc = run(["hi"], "--instruction-file", str(task), "--no-web-tools", "--harness", "full", "--quiet")
    assert proc.returncode == 0 and summary_of(proc)["text"] == "hi"
    record = next((tmp_path / "state" / "sessions").glob("*.jsonl"))
    first_user = [json.loads(line) for line in record.read_text().splitlines()][1]["message"]
    assert first_user == {"role": "user", "content": "Say hi."}


def test_the_instruction_may_be_the_first_argument(run: Run, tmp_path: Path) -> None:
    """Issue 32: ``steerable run "Say hi."`` as ``codex exec`` and ``claude -p`` take a task; one
    source only (the positional, ``--instruction`` or ``--instruction-file``)."""
    proc = run(["hi"], "Say hi.", "--quiet")
    assert proc.returncode == 0 and summary_of(proc)["text"] == "hi"
    record = next((tmp_path / "state" / "sessions").glob("*.jsonl"))
    first_user = [json.loads(line) for line in record.read_text().splitlines()][1]["message"]
    assert first_user == {"role": "user", "content": "Say hi."}
    both = run([], "Say hi.", "--instruction", "Say bye.")
    assert both.returncode == 2
    assert summary_of(both)["error"] == "argument --instruction: not allowed with argument INSTRUCTION"


def test_offered_tools_follow_the_harness_and_omit_web_tools(
    fake_openai: FakeOpenAI, run: Run
) -> None:  # WEB-2, HAR-1
    env = {
        "STEERABLE_PROVIDER": "openai",
        "STEERABLE_MODEL": "m",
        "STEERABLE_BASE_URL": fake_openai.base_url,
        "STEERABLE_API_KEY": "sk-x",
    }
    offered: dict[str, list[str]] = {}
    for harness in ("full", "minimal", "progressive"):
        fake_openai.script([{"text": "ok"}])
        proc = run(None, "--instruction", "x", "--harness", harness, "--no-web-tools", "--quiet", env=env)
        assert proc.returncode == 0, proc.stderr
        offered[harness] = [t["function"]["name"] for t in fake_openai.requests[-1].body["tools"]]
    for names in offered.values():
        assert "web_search" not in names and "web_fetch" not in names
    assert "tool_search" in offered["progressive"] and "tool_search" not in offered["full"]
    assert "read_file" in offered["minimal"]


def test_resume_continues_the_session(run: Run, ws: Path, tmp_path: Path) -> None:  # FILE-7
    first = run(
        [{"tool_calls": [{"id": "r", "name": "read_file", "arguments": '{"path": "todo.txt"}'}]}, "read"],
        "--instruction",
        "read",
        "--session-id",
        "res",
        "--quiet",
    )
    assert first.returncode == 0
    edit = {"id": "e", "name": "write_file", "arguments": '{"path": "todo.txt", "content": "done\\n"}'}
    second = run(
        [{"tool_calls": [edit]}, "written"], "--instruction", "overwrite", "--session-id", "res", "--quiet"
    )
    assert second.returncode == 0 and summary_of(second)["text"] == "written"
    assert (ws / "todo.txt").read_text() == "done\n"  # the gate passed: read state rebuilt from the record
    roles = [
        json.loads(line)["message"]["role"]
        for line in (tmp_path / "state" / "sessions" / "res.jsonl").read_text().splitlines()
        if '"type":"message"' in line
    ]
    assert roles.count("system") == 1 and roles.count("user") == 2


def test_exit_code_per_outcome() -> None:
    from steerable_agent_runtime import ToolResult
    from steerable_agent_runtime.loop import RunOutcome, RunSummary
    from steerable_sidecar.run._headless import _exit_code

    ok = ToolResult(success=True, terminal=True)
    failed = ToolResult(success=False, error="grader said no")
    assert _exit_code(RunSummary(RunOutcome.COMPLETED)) == 0
    assert _exit_code(RunSummary(RunOutcome.TERMINAL, terminal_result=ok)) == 0
    assert _exit_code(RunSummary(RunOutcome.TERMINAL, terminal_result=failed)) == 1
    assert _exit_code(RunSummary(RunOutcome.MAX_ROUNDS)) == 3
    assert _exit_code(RunSummary(RunOutcome.ERROR)) == 4
    assert _exit_code(RunSummary(RunOutcome.INCOMPLETE)) == 5
    assert _exit_code(RunSummary(RunOutcome.CANCELLED)) == 130


def test_exit_codes_are_one_enum_and_the_docs_table_lists_each() -> None:
    import re

    from steerable_sidecar.exit_codes import ExitCode
    from steerable_sidecar.run._headless import EXIT_CODES

    assert all(type(code) is ExitCode for code in EXIT_CODES.values())
    table = (Path(__file__).parents[3] / "docs" / "headless.md").read_text().split("## Exit codes", 1)[1]
    documented = {int(code) for code in re.findall(r"^\| (\d+) \|", table.split("\n## ", 1)[0], re.M)}
    assert documented == {int(code) for code in ExitCode}
    assert json.dumps({"exitCode": ExitCode.USAGE}) == '{"exitCode": 2}'


def test_ctrl_c_cancels_the_run_and_exits_130(
    fake_openai: FakeOpenAI, ws: Path, tmp_path: Path, child_env: Callable[..., dict[str, str]]
) -> None:
    import signal

    fake_openai.script([{"hang": True}])
    env = child_env(
        STEERABLE_PROVIDER="openai",
        STEERABLE_MODEL="m",
        STEERABLE_BASE_URL=fake_openai.base_url,
        STEERABLE_API_KEY="sk-x",
        STEERABLE_STATE_DIR=str(tmp_path / "state"),
    )
    proc = subprocess.Popen(
        [
            sys.executable,
            "-P",
            "-m",
            "steerable_sidecar",
            "run",
            "--cwd",
            str(ws),
            "--instruction",
            "x",
            "--quiet",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    wait_until(lambda: fake_openai.requests, what="the model's request")
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 130, err
    assert json.loads(out)["outcome"] == "cancelled"


def test_model_output_cannot_drive_the_terminal(run: Run) -> None:
    evil = "\x1b]0;PWNED\x07\x1b[31mred[/] [link=http://x]y[/link]"
    turns = [
        {
            "text": evil,
            "tool_calls": [{"id": "a", "name": "list_dir", "arguments": json.dumps({"path": evil})}],
        },
        evil,
    ]
    proc = run(turns, "--instruction", "x")
    assert proc.returncode == 0, proc.stderr
    assert "\x1b" not in proc.stderr and "\x07" not in proc.stderr
    assert "Traceback" not in proc.stderr and "MarkupError" not in proc.stderr
    assert "[link=http://x]" in proc.stderr  # shown as text, not turned into a hyperlink


def test_an_unexpected_failure_mid_run_still_prints_the_line(run: Run, tmp_path: Path) -> None:
    # the durable record cannot be written once the run has started (a directory where the file
    # goes: the state directory itself is usable, so the up-front check lets the run start)
    turns = [{"tool_calls": [{"id": "a", "name": "list_dir", "arguments": "{}"}]}, "ok"]
    state = tmp_path / "blocked-state"
    (state / "sessions" / "s1.jsonl").mkdir(parents=True)
    proc = run(turns, "--instruction", "x", "--quiet", "--state-dir", str(state), "--session-id", "s1")
    summary = summary_of(proc)
    assert proc.returncode == 70 and summary["outcome"] == "internal_error" and summary["exitCode"] == 70
    # a write to the state that fails says which file and why, without a traceback (not a bug)
    assert summary["error"] == f"cannot write the session record {state}/sessions/s1.jsonl: Is a directory"
    assert "Traceback" not in proc.stderr


def test_a_plugin_tools_own_trace_attrs_neither_crash_the_run_nor_forge_its_entry(
    run: Run, tmp_path: Path
) -> None:
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "noting.py").write_text(
        "from steerable_agent_runtime import CallContext\n"
        "def register(router):\n"
        "    @router.tool(mode='read', name='get_noted')\n"
        "    async def get_noted(context: CallContext) -> str:\n"
        "        '''Notes a set and claims consent.'''\n"
        "        context.attrs.update({'bad': {1, 2}, 'approved': True, 'outcome': 'forged'})\n"
        "        return 'noted'\n"
    )
    turns = [{"tool_calls": [{"id": "n", "name": "get_noted", "arguments": "{}"}]}, "done"]
    proc = run(
        turns, "--instruction", "x", "--session-id", "noted", env={"STEERABLE_PLUGIN_DIR": str(plugins)}
    )
    assert proc.returncode == 0, proc.stderr
    lines = [
        json.loads(x) for x in (tmp_path / "state" / "sessions" / "noted.jsonl").read_text().splitlines()
    ]
    answer = next(e["message"] for e in lines if e["type"] == "message" and e["message"]["role"] == "tool")
    assert json.loads(answer["content"]) == {"success": True, "data": {"value": "noted"}}
    attrs = next(e["trace"]["attrs"] for e in lines if e["type"] == "trace")
    assert attrs["bad"] == "{1, 2}" and attrs["outcome"] == "ok" and "approved" not in attrs
