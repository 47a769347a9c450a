"""Typos are caught (issue 32, item 4): a ``STEERABLE_*`` name nothing reads is reported.

Real processes: ``steerable call`` warns on stderr with the closest known name and still prints
its JSON alone on stdout and exits 0; ``steerable doctor`` lists the name as a ``warn`` row;
correctly spelt and internal names are not reported; a name with no close match is reported
without a suggestion. Then the table: the copy of the known names the commands read at start-up
equals the table's, and every name the code (and the repository's scripts) reads is in it.
"""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from steerable_sidecar.cli._doctor import diagnose
from steerable_sidecar.config import _unknown_env
from steerable_sidecar.config._settings import INTERNAL_VARIABLES, KNOWN_NAMES, VARIABLES
from steerable_sidecar.config._unknown_env import unknown_variables, warn_unknown_variables

Run = Callable[..., subprocess.CompletedProcess[str]]

ROOT = Path(__file__).resolve().parents[3]
WARNING = (
    "steerable: warning: STEERABLE_PROVIDR is not a steerable variable; did you mean STEERABLE_PROVIDER?"
)


def test_call_warns_on_stderr_and_keeps_stdout_for_its_json(workspace: Path, run_cli: Run) -> None:
    proc = run_cli("call", "list_dir", "{}", "--workspace", str(workspace), STEERABLE_PROVIDR="ollama")
    assert proc.returncode == 0, proc.stderr
    assert WARNING in proc.stderr.splitlines()
    assert proc.stderr.count("STEERABLE_PROVIDR") == 1  # one line, once
    result = json.loads(proc.stdout)  # stdout is the ToolResult alone
    assert result["success"] is True
    assert "warning" not in proc.stdout and "ollama" not in proc.stderr  # the value is never shown


def test_doctor_lists_the_unknown_name_as_a_warn_row(workspace: Path, run_cli: Run) -> None:
    proc = run_cli(
        "doctor", "--json", "--no-plugins", "--workspace", str(workspace), STEERABLE_PROVIDR="ollama"
    )
    report = json.loads(proc.stdout)  # the warning went to stderr, not into the JSON
    rows = {(row["section"], row["item"]): row for row in report["checks"]}
    row = rows[("Environment", "STEERABLE_PROVIDR")]
    assert (row["value"], row["status"]) == ("ignored", "warn")
    assert row["detail"] == "not a steerable variable; did you mean STEERABLE_PROVIDER?"
    assert WARNING in proc.stderr.splitlines()
    assert not any(
        check["status"] == "error" and check["section"] == "Environment" for check in report["checks"]
    )
    table = run_cli(
        "doctor", "--no-plugins", "--workspace", str(workspace), STEERABLE_PROVIDR="ollama", COLUMNS="240"
    )
    assert "did you mean STEERABLE_PROVIDER?" in table.stdout  # the rendered table has the row too


def test_correct_and_internal_names_are_not_reported(workspace: Path, run_cli: Run) -> None:
    proc = run_cli(
        "call",
        "list_dir",
        "{}",
        "--workspace",
        str(workspace),
        STEERABLE_PROVIDER="ollama",
        STEERABLE_LOG_LEVEL="WARNING",
        STEERABLE_CONFORMANCE_SRC=str(ROOT / "src"),  # read by scripts/mcp_conformance.py, passed on
    )
    assert proc.returncode == 0, proc.stderr
    assert "not a steerable variable" not in proc.stderr
    assert proc.stderr == ""


def test_a_name_with_no_close_match_gets_no_suggestion(workspace: Path, run_cli: Run) -> None:
    proc = run_cli("call", "list_dir", "{}", "--workspace", str(workspace), STEERABLE_ZQXJW="1")
    assert proc.returncode == 0, proc.stderr
    assert "steerable: warning: STEERABLE_ZQXJW is not a steerable variable" in proc.stderr.splitlines()
    assert "did you mean" not in proc.stderr
    json.loads(proc.stdout)


def test_diagnose_reports_each_unknown_name_and_an_ok_row_when_there_is_none(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "STEERABLE_CONFIG": "off", "STEERABLE_MODLE": "m", "STEERABLE_QQ": "1"}
    report = diagnose(tmp_path, environ=env, plugins=False)
    rows = [check for check in report.checks if check.section == "Environment"]
    assert [(row.item, row.status, row.detail) for row in rows] == [
        ("STEERABLE_MODLE", "warn", "not a steerable variable; did you mean STEERABLE_MODEL?"),
        ("STEERABLE_QQ", "warn", "not a steerable variable"),
    ]
    assert not [check for check in report.errors if check.section == "Environment"]
    clean = diagnose(tmp_path, environ={"PATH": "/usr/bin:/bin", "STEERABLE_CONFIG": "off"}, plugins=False)
    rows = [check for check in clean.checks if check.section == "Environment"]
    assert [(row.item, row.value, row.status) for row in rows] == [("STEERABLE_* variables", "1 set", "ok")]


@pytest.mark.parametrize(
    ("name", "suggestion"),
    [
        ("STEERABLE_PROVIDR", "STEERABLE_PROVIDER"),
        ("STEERABLE_MODLE", "STEERABLE_MODEL"),
        ("STEERABLE_APIKEY", "STEERABLE_API_KEY"),
        ("STEERABLE_LOGLEVEL", "STEERABLE_LOG_LEVEL"),
        ("STEERABLE_SANDBOX_NET", "STEERABLE_SANDBOX_NETWORK"),
        ("steerable_provider", "STEERABLE_PROVIDER"),  # the names are case-sensitive: not read either
        ("STEERABLE_ZQXJW", ""),
        ("STEERABLE_", ""),
    ],
)
def test_the_closest_known_name(name: str, suggestion: str) -> None:
    assert unknown_variables({name: "x", "STEERABLE_MODEL": "m", "HOME": "/"}) == [(name, suggestion)]


def test_known_and_foreign_names_are_not_reported() -> None:
    env = {name: "1" for name in KNOWN_NAMES} | {"PATH": "/bin", "STEERABLEX": "1", "MY_STEERABLE_X": "1"}
    assert unknown_variables(env) == []
    out = io.StringIO()
    warn_unknown_variables(env, out)
    assert out.getvalue() == ""


def test_the_warning_never_fails_the_command() -> None:
    class Closed(io.StringIO):
        def write(self, text: str) -> int:
            raise OSError("stderr is gone")

    warn_unknown_variables({"STEERABLE_PROVIDR": "x"}, Closed())  # no exception
    out = io.StringIO()
    warn_unknown_variables({"STEERABLE_PROVIDR": "x", "STEERABLE_ZQXJW": "y"}, out)
    assert out.getvalue().splitlines() == [
        WARNING,
        "steerable: warning: STEERABLE_ZQXJW is not a steerable variable",
    ]


def test_the_check_loads_nothing_when_every_name_is_known() -> None:
    code = (
        "import sys; before = set(sys.modules)\n"
        "from steerable_sidecar.config._unknown_env import warn_unknown_variables\n"
        "warn_unknown_variables({'STEERABLE_PROVIDER': 'ollama', 'PATH': '/bin'})\n"
        "print(sorted(m for m in set(sys.modules) - before if 'steerable' not in m))\n"
        "warn_unknown_variables({'STEERABLE_PROVIDR': 'ollama'})\n"
        "print('difflib' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=False,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    loaded, difflib_after = done.stdout.splitlines()
    assert "difflib" not in loaded and difflib_after == "True"
    assert done.stderr == WARNING + "\n"


# the table cannot drift: the start-up copy, the code and the scripts all agree with it


def test_the_start_up_copy_is_the_table() -> None:
    assert _unknown_env.KNOWN_NAMES == KNOWN_NAMES, (
        "steerable_sidecar.config._unknown_env.KNOWN_NAMES differs from steerable_sidecar.config._settings.KNOWN_NAMES: "
        f"add {sorted(KNOWN_NAMES - _unknown_env.KNOWN_NAMES)}, remove {sorted(_unknown_env.KNOWN_NAMES - KNOWN_NAMES)}"
    )


def test_internal_names_are_known_but_not_documented() -> None:
    documented = {var.name for var in VARIABLES}
    assert INTERNAL_VARIABLES and not documented & set(INTERNAL_VARIABLES)
    reference = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert not [name for name in INTERNAL_VARIABLES if f"| `{name}` |" in reference]  # no table row
    assert all(f"`{name}`" in reference for name in INTERNAL_VARIABLES)  # named once, as known


def _names(path: Path, pattern: str) -> set[str]:
    return {name for name in re.findall(pattern, path.read_text(encoding="utf-8")) if not name.endswith("_")}


def test_every_name_read_anywhere_is_known() -> None:
    # src/: every STEERABLE_ token, prose included (a family such as STEERABLE_WEB_ ends with "_");
    # the repository's scripts and benchmarks: the quoted names, which they read and pass on
    unknown = {
        f"{path.relative_to(ROOT)}: {name}"
        for path in (ROOT / "src").rglob("*.py")
        for name in _names(path, r"STEERABLE_[A-Z0-9_]+")
        if name not in KNOWN_NAMES
    }
    unknown |= {
        f"{path.relative_to(ROOT)}: {name}"
        for folder in ("scripts", "benchmarks")
        for path in (ROOT / folder).rglob("*.py")
        for name in _names(path, r"""["'](STEERABLE_[A-Z0-9_]+)["']""")
        if name not in KNOWN_NAMES
    }
    assert not unknown, (
        f"read but not in steerable_sidecar.config._settings (VARIABLES or INTERNAL_VARIABLES): {unknown}"
    )


def test_an_unlisted_name_would_be_caught(tmp_path: Path) -> None:
    planted = tmp_path / "module.py"
    planted.write_text('TIMEOUT = os.environ.get("STEERABLE_NEW_KNOB")\n', encoding="utf-8")
    assert _names(planted, r"STEERABLE_[A-Z0-9_]+") - KNOWN_NAMES == {"STEERABLE_NEW_KNOB"}
