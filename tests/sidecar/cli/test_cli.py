"""The ``steerable`` command: ``tools``, ``call`` and ``session``, in-process and as a real process.

The workspace is a copy of this project's checkout (see ``conftest.py``). Exit codes: 0 success,
1 a failed ToolResult, 2 a usage error.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from steerable_sidecar.cli._main import main

RunCli = Callable[..., subprocess.CompletedProcess[str]]

EXPECTED = {  # name -> (mode, tier)
    "read_file": ("read", "direct"),
    "write_file": ("safe_write", "direct"),
    "edit_file": ("safe_write", "direct"),
    "apply_patch": ("safe_write", "direct"),
    "list_dir": ("read", "direct"),
    "glob": ("read", "direct"),
    "grep": ("read", "direct"),
    "bash": ("local", "direct"),  # runs under the layer-2 sandbox; local mode needs consent
    "web_fetch": ("read", "direct"),  # WEB-3; web_search needs a search provider, none is configured
}


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("STEERABLE_REQUIRE_READ_BEFORE_WRITE", raising=False)
    monkeypatch.setenv("COLUMNS", "200")


# -- tools ------------------------------------------------------------------------------------------


def test_tools_prints_a_table_with_mode_and_tier(repo_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # MODE-1 (read_/list_ inferred read), MODE-3 (write tools overridden to safe_write), TIER-3
    assert main(["tools", "--workspace", str(repo_copy), "--no-plugins"]) == 0  # plugins: test_boot.py
    out, err = capsys.readouterr()
    assert err == ""
    lines = out.splitlines()
    assert lines[0].split() == ["NAME", "MODE", "TIER", "DESCRIPTION"]
    rows = {line.split()[0]: line for line in lines[1:]}
    assert set(rows) == set(EXPECTED)
    assert len(lines) == 1 + len(EXPECTED)
    desc_col = lines[0].index("DESCRIPTION")
    for name, (mode, tier) in EXPECTED.items():
        assert rows[name].split()[1:3] == [mode, tier], rows[name]
        assert len(rows[name]) > desc_col  # a description is shown, aligned under its header
        assert rows[name][desc_col - 2 : desc_col] == "  "
    assert rows["read_file"][desc_col:].startswith("Read a UTF-8 text file.")
    assert rows["list_dir"][desc_col:].startswith(
        "List a directory's entries (name, type, size). Directories first"
    )


def test_tools_json_lists_nine_tools_with_mode_and_exposure(
    repo_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # TIER-3 (describe(): the full inventory with mode and exposure), MODE-1, MODE-3
    assert main(["tools", "--json", "-w", str(repo_copy), "--no-plugins"]) == 0
    inventory = json.loads(capsys.readouterr().out)
    assert isinstance(inventory, list)
    assert len(inventory) == 9
    assert {t["name"]: (t["mode"], t["exposure"]) for t in inventory} == EXPECTED
    for entry in inventory:
        assert set(entry) == {"name", "description", "parameters", "mode", "exposure"}
        assert entry["parameters"]["type"] == "object"
        assert entry["description"]


# -- call -------------------------------------------------------------------------------------------


def test_call_read_file_prints_the_result_json(repo_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # FILE-1 (version = SHA-256 of the bytes on disk), ENV-4 / ENV-5 (the wire ToolResult)
    raw = (repo_copy / "pyproject.toml").read_bytes()
    code = main(["call", "read_file", json.dumps({"path": "pyproject.toml"}), "-w", str(repo_copy)])
    out, err = capsys.readouterr()
    assert code == 0, err
    result = json.loads(out)
    assert result["success"] is True
    assert "error" not in result and "needsFollowup" not in result  # None fields are left out
    assert result["data"]["path"] == "pyproject.toml"
    assert result["data"]["version"] == sha256(raw)
    assert result["data"]["content"] == raw.decode("utf-8")


def test_call_as_a_process_exit_codes(repo_copy: Path, run_cli: RunCli) -> None:
    # ENV-4 (success: false -> exit 1), FILE-8 (the gate holds for one-shot calls), FILE-2
    ws = str(repo_copy)
    readme = repo_copy / "README.md"
    original = readme.read_bytes()

    done = run_cli("call", "read_file", '{"path": "README.md"}', "--workspace", ws)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["data"]["version"] == sha256(original)

    missing = run_cli("call", "read_file", '{"path": "no_such_file.txt"}', "--workspace", ws)
    assert missing.returncode == 1
    assert '"success": false' in missing.stdout
    failed = json.loads(missing.stdout)
    assert failed["needsFollowup"] is True
    assert failed["data"]["code"] == "file_not_found"

    # Each call is a fresh process: an existing file is never "read" there, so a blind write is gated...
    gated = run_cli("call", "write_file", '{"path": "README.md", "content": "x\\n"}', "--workspace", ws)
    assert gated.returncode == 1
    assert json.loads(gated.stdout)["data"]["code"] == "not_read"
    assert readme.read_bytes() == original
    # ...a stale expectedVersion is a conflict...
    stale = json.dumps({"path": "README.md", "content": "x\n", "expectedVersion": "0" * 64})
    conflict = run_cli("call", "write_file", stale, "--workspace", ws)
    assert conflict.returncode == 1
    assert json.loads(conflict.stdout)["data"]["code"] == "conflict"
    assert readme.read_bytes() == original
    # ...and the read version lets the write through.
    fresh = json.dumps({"path": "README.md", "content": "x\n", "expectedVersion": sha256(original)})
    written = run_cli("call", "write_file", fresh, "--workspace", ws)
    assert written.returncode == 0, written.stdout
    assert readme.read_bytes() == b"x\n"
    assert json.loads(written.stdout)["data"]["version"] == sha256(b"x\n")

    unknown = run_cli("call", "reed_file", "{}", "--workspace", ws)
    assert unknown.returncode == 1
    assert json.loads(unknown.stdout)["data"]["suggestions"][0] == "read_file"


def test_call_opt_out_of_the_gate(repo_copy: Path, run_cli: RunCli) -> None:
    # FILE-8 (STEERABLE_REQUIRE_READ_BEFORE_WRITE=0 opts out)
    args = ("call", "write_file", '{"path": "README.md", "content": "opted out\\n"}', "-w", str(repo_copy))
    done = run_cli(*args, STEERABLE_REQUIRE_READ_BEFORE_WRITE="0")
    assert done.returncode == 0, done.stdout
    assert (repo_copy / "README.md").read_bytes() == b"opted out\n"


def test_usage_errors_exit_2_with_a_message(
    repo_copy: Path, tmp_path: Path, run_cli: RunCli, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = str(repo_copy)
    # ARGUMENTS not JSON
    assert main(["call", "read_file", "{path: README.md}", "-w", ws]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        "steerable call: ARGUMENTS is not JSON: "
        "Expecting property name enclosed in double quotes at position 1\n"
    )
    # ARGUMENTS JSON but not an object
    assert main(["call", "read_file", '["README.md"]', "-w", ws]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == 'steerable call: ARGUMENTS must be a JSON object, e.g. \'{"path": "README.md"}\'\n'

    # --workspace naming a missing directory, as a real process
    missing = tmp_path / "does-not-exist"
    done = run_cli("tools", "--workspace", str(missing))
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == f"steerable: workspace {str(missing)!r} is not a directory\n"
    # ...and naming a file
    done = run_cli("call", "read_file", "{}", "--workspace", str(repo_copy / "README.md"))
    assert done.returncode == 2
    assert "is not a directory" in done.stderr

    # A non-boolean gate variable fails loud, naming the variable (ConfigError).
    done = run_cli("tools", "-w", ws, STEERABLE_REQUIRE_READ_BEFORE_WRITE="maybe")
    assert done.returncode == 2
    assert "STEERABLE_REQUIRE_READ_BEFORE_WRITE='maybe' is not a boolean" in done.stderr

    # No command: help, exit 2.
    assert main([]) == 2
    assert "COMMAND" in capsys.readouterr().out


# -- session ----------------------------------------------------------------------------------------


def _line(obj: Any) -> str:
    return json.dumps(obj) + "\n"


def test_session_lines_in_order_with_state_across_lines(repo_copy: Path, run_cli: RunCli) -> None:
    # FILE-3 / FILE-4 (read state kept across lines, refreshed by writes), FILE-6 (state in the process),
    # ENV-1 (extra envelope fields rejected), FILE-8 (gate), FILE-2 (expectedVersion)
    readme = repo_copy / "README.md"
    pyproject = repo_copy / "pyproject.toml"
    readme_v = sha256(readme.read_bytes())
    pyproject_raw = pyproject.read_bytes()
    nested = "[" * 100_000
    lines = [
        _line({"id": "r1", "name": "read_file", "arguments": {"path": "README.md"}}),
        "\n",  # blank: no output
        _line(
            {
                "id": "w1",
                "name": "write_file",
                "arguments": {"path": "README.md", "content": "one\n", "expectedVersion": readme_v},
            }
        ),
        "this is not json\n",
        "   \t \n",  # whitespace only: no output
        # No expectedVersion: CAS against the state the previous write refreshed.
        _line({"id": "w2", "name": "write_file", "arguments": {"path": "README.md", "content": "two\n"}}),
        _line([1, 2]),
        _line({"id": "x1", "name": "read_file", "arguments": {"path": "README.md"}, "meta": {"trace": 1}}),
        # Never read in this session: gated.
        _line(
            {"id": "g1", "name": "write_file", "arguments": {"path": "pyproject.toml", "content": "gated\n"}}
        ),
        # arguments as a JSON string (a common model slip) is decoded.
        _line({"id": "s1", "name": "read_file", "arguments": json.dumps({"path": "pyproject.toml"})}),
        # The read above is remembered: a write without expectedVersion now succeeds.
        _line(
            {"id": "w3", "name": "write_file", "arguments": {"path": "pyproject.toml", "content": "[x]\n"}}
        ),
        _line({"id": "s2", "name": "read_file", "arguments": "{not json"}),
        nested + "\n",
        _line({"id": 7, "name": "read_file", "arguments": {"path": "README.md"}}),
        _line({"id": "last", "name": "list_dir", "arguments": {}}),
    ]
    done = run_cli("session", "--workspace", str(repo_copy), stdin="".join(lines))
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    out = [json.loads(line) for line in done.stdout.split("\n")[:-1]]
    assert len(out) == len([line for line in lines if line.strip()])
    for item in out:
        assert set(item) == {"id", "result"}
    by_pos = iter(out)

    def nxt(expected_id: str | None) -> dict[str, Any]:
        item = next(by_pos)
        assert item["id"] == expected_id, item
        result: dict[str, Any] = item["result"]
        return result

    r1 = nxt("r1")
    assert r1["success"] is True and r1["data"]["version"] == readme_v
    w1 = nxt("w1")
    assert w1["success"] is True and w1["data"]["version"] == sha256(b"one\n")
    bad = nxt(None)
    assert bad == {
        "success": False,
        "needsFollowup": True,
        "error": "not a JSON line (Expecting value); send one ToolCall object per line",
    }
    w2 = nxt("w2")
    assert w2["success"] is True, w2
    assert w2["data"]["version"] == sha256(b"two\n")
    assert nxt(None) == {
        "success": False,
        "needsFollowup": True,
        "error": "a ToolCall must be a JSON object {id, name, arguments}",
    }
    x1 = nxt("x1")
    assert x1["success"] is False and x1["needsFollowup"] is True
    assert (
        x1["error"]
        == "Malformed tool call: meta: unexpected field. A tool call is {id, name, arguments} only."
    )
    assert x1["data"] == {
        "code": "invalid_envelope",
        "errors": [{"field": "meta", "message": "unexpected field"}],
    }
    g1 = nxt("g1")
    assert g1["success"] is False and g1["data"]["code"] == "not_read"
    assert "read it first" in g1["error"]
    s1 = nxt("s1")
    assert s1["success"] is True and s1["data"]["version"] == sha256(pyproject_raw)
    w3 = nxt("w3")
    assert w3["success"] is True, w3
    s2 = nxt("s2")
    assert s2 == {
        "success": False,
        "needsFollowup": True,
        "error": "arguments is not valid JSON "
        "(Expecting property name enclosed in double quotes at position 1); send a JSON object",
        "data": {"code": "invalid_envelope"},
    }
    deep = nxt(None)  # SAFE-6
    assert deep["error"] == (
        "not a JSON line (nested too deeply to decode; tool arguments may nest at most 64 levels); "
        "send one ToolCall object per line, with flatter arguments"
    )
    assert deep["data"] == {"code": "arguments_too_deep", "maxDepth": 64}
    non_str_id = nxt(None)  # an id that is not a string is not echoed
    assert non_str_id["data"]["code"] == "invalid_envelope"
    assert "id: Input should be a valid string" in non_str_id["error"]
    last = nxt("last")
    assert last["success"] is True
    assert next(by_pos, None) is None

    assert readme.read_bytes() == b"two\n"
    assert pyproject.read_bytes() == b"[x]\n"


def test_session_empty_input_and_crlf_lines(repo_copy: Path, run_cli: RunCli) -> None:
    # The session ends cleanly at end of input; CRLF-terminated lines are accepted.
    done = run_cli("session", "-w", str(repo_copy), stdin="")
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    line = json.dumps({"id": "c1", "name": "read_file", "arguments": {"path": "README.md"}})
    done = run_cli("session", "-w", str(repo_copy), stdin=line + "\r\n\r\n")
    assert done.returncode == 0
    [item] = [json.loads(x) for x in done.stdout.split("\n")[:-1]]
    assert item["id"] == "c1" and item["result"]["success"] is True


def test_non_utf8_file_name_does_not_break_session_or_call(
    repo_copy: Path, run_cli: RunCli, latin1_named_file: Path
) -> None:
    # latin1_named_file puts docs/caf\xe9.txt in the workspace copy
    # FILE-11 (real trees: a Latin-1 file name is legal on Linux); the session never stops on bad data.
    # The children run with PYTHONIOENCODING=utf-8, as under any UTF-8 desktop locale.
    lines = [
        _line({"id": "ls", "name": "list_dir", "arguments": {"path": "docs"}}),
        _line({"id": "rd", "name": "read_file", "arguments": {"path": "README.md"}}),
    ]
    done = run_cli("session", "-w", str(repo_copy), stdin="".join(lines))
    assert done.returncode == 0, done.stderr[-2000:]
    out = [json.loads(line) for line in done.stdout.split("\n")[:-1]]
    assert [item["id"] for item in out] == ["ls", "rd"]
    assert out[1]["result"]["success"] is True

    called = run_cli("call", "list_dir", '{"path": "docs"}', "-w", str(repo_copy))
    assert called.returncode in (0, 1), called.stderr[-2000:]
    assert "Traceback" not in called.stderr
    assert json.loads(called.stdout)["success"] in (True, False)


async def test_session_refuses_an_oversized_line_and_keeps_going(tmp_path, monkeypatch):
    import io

    from steerable_agent_runtime import workspace_tools_for_cwd
    from steerable_sidecar.cli import _session as session

    monkeypatch.setattr(session, "_MAX_LINE_CHARS", 80)
    (tmp_path / "a.txt").write_text("hi\n", encoding="utf-8")
    big = '{"id": "big", "name": "read_file", "arguments": {"path": "' + "x" * 500 + '"}}\n'
    small = '{"id": "ok", "name": "read_file", "arguments": {"path": "a.txt"}}\n'
    out = io.StringIO()
    await session.run_session(workspace_tools_for_cwd(tmp_path), io.StringIO(big + small), out)
    first, second = (json.loads(line) for line in out.getvalue().split("\n") if line)
    assert first == {
        "id": None,
        "result": {
            "success": False,
            "needsFollowup": True,
            "error": "line longer than 80 characters; send smaller tool calls",
        },
    }
    assert second["id"] == "ok" and second["result"]["data"]["content"] == "hi\n"


async def test_session_survives_an_over_long_integer_line(tmp_path):
    import io

    from steerable_agent_runtime import workspace_tools_for_cwd
    from steerable_sidecar.cli import _session as session

    huge = "1" * 5000
    lines = (
        '{"id": "1", "name": "list_dir", "arguments": {}}\n'
        '{"id": "2", "name": "read_file", "arguments": {"path": "a", "offset": ' + huge + "}}\n"
        '{"id": "3", "name": "list_dir", "arguments": "{\\"path\\": ' + huge + '}"}\n'
        '{"id": "4", "name": "list_dir", "arguments": {}}\n'
    )
    out = io.StringIO()
    await session.run_session(workspace_tools_for_cwd(tmp_path), io.StringIO(lines), out)
    results = [json.loads(line) for line in out.getvalue().split("\n") if line]
    assert [r["id"] for r in results] == ["1", None, "3", "4"]
    assert results[1]["result"]["success"] is False and results[1]["result"]["needsFollowup"] is True
    assert results[1]["result"]["error"].startswith("not a JSON line (Exceeds the limit")
    assert results[2]["result"]["data"] == {"code": "invalid_envelope"}
    assert results[3]["result"]["success"] is True


def test_a_reader_that_stops_early_ends_the_command_quietly(tmp_path: Path, child_env: Any) -> None:
    import sys

    proc = subprocess.Popen(
        [sys.executable, "-P", "-m", "steerable_sidecar", "tools", "--no-plugins", "-w", str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=child_env(),
    )
    assert proc.stdout is not None
    proc.stdout.close()  # the reader is gone before anything is written (`steerable tools | true`)
    assert proc.stderr is not None
    with proc.stderr:
        err = proc.stderr.read()
    proc.wait(timeout=30)
    assert b"Traceback" not in err and proc.returncode == 141


@pytest.mark.parametrize("closed", ["stdin", "stdout"])
@pytest.mark.parametrize("command", ["session", "mcp", "acp", "sidecar"])
def test_a_server_started_with_stdin_or_stdout_closed_says_so(
    command: str, closed: str, workspace: Path, child_env: Any
) -> None:
    """A launcher that closed a standard descriptor gets one line and exit 2, not a traceback or a hang.

    Before: ``session``, ``acp`` and ``sidecar`` ended with a traceback (exit 1), ``mcp`` spun on
    an ``OSError`` from its selector until it was killed.
    """
    import sys

    redirect = "<&-" if closed == "stdin" else ">&-"
    argv = [sys.executable, "-P", "-m", "steerable_sidecar", command, "--no-plugins"]
    done = subprocess.run(
        ["sh", "-c", f'exec "$@" {redirect}', "sh", *argv],
        stdin=subprocess.DEVNULL,  # the shell closes one of them before the command starts
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env(),
        cwd=workspace,
        timeout=30,
    )
    assert (done.returncode, done.stderr) == (
        2,
        f"steerable {command}: {closed} is closed: the command reads requests on stdin and answers on "
        "stdout (start it with a pipe on each)\n",
    )
