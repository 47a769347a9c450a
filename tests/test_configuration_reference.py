"""docs/configuration.md is generated from the code's variable table, and the table is the code's.

Three ways it could drift, each checked here: the file is stale; the code reads a ``STEERABLE_*``
variable the table does not list (or the table lists one nothing reads); the table's bounds,
choices or kinds differ from what the code accepts. The last is checked by behaviour: each
variable set just past its bounds (or to a bad flag or choice) must make ``steerable doctor``'s
resolution fail with a message naming that variable, and just inside its bounds must not.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
from pathlib import Path

import pytest

from steerable_sidecar.cli._doctor import diagnose
from steerable_sidecar.config._settings import INTERNAL_VARIABLES, VARIABLES, EnvVar

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"
TABLES = {
    SRC / "steerable_agent_runtime" / "settings.py",
    SRC / "steerable_sidecar" / "settings.py",
    SRC / "steerable_sidecar" / "_unknown_env.py",  # the table's names, copied for start-up
}


def _generator():
    spec = importlib.util.spec_from_file_location(
        "generate_config_docs", ROOT / "scripts" / "generate_config_docs.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_docs_configuration_md_is_what_the_table_generates():
    generated = _generator().render()
    current = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert current == generated, "docs/configuration.md is stale: run python scripts/generate_config_docs.py"


def test_the_check_mode_fails_on_a_stale_file(tmp_path, monkeypatch, capsys):
    generator = _generator()
    stale = tmp_path / "configuration.md"
    stale.write_text("# old\n", encoding="utf-8")
    monkeypatch.setattr(generator, "OUTPUT", stale)
    assert generator.main(["--check"]) == 1
    assert "is out of date: run python scripts/generate_config_docs.py" in capsys.readouterr().err
    assert generator.main([]) == 0 and generator.main(["--check"]) == 0


def _variables_in_source() -> dict[str, set[Path]]:
    found: dict[str, set[Path]] = {}
    for path in SRC.rglob("*.py"):
        for token in re.findall(r"STEERABLE_[A-Z0-9_]+", path.read_text(encoding="utf-8")):
            if not token.endswith("_"):  # STEERABLE_WEB_ and the like name a family in prose
                found.setdefault(token, set()).add(path)
    return found


def test_every_variable_the_code_names_is_in_the_table_and_every_entry_is_read():
    names = [var.name for var in VARIABLES]
    assert len(names) == len(set(names)), "a variable is listed twice"
    in_source = _variables_in_source()
    missing = sorted(set(in_source) - set(names) - set(INTERNAL_VARIABLES))  # those: test_unknown_env.py
    assert not missing, f"named in src/ but not in steerable_sidecar.config._settings: {missing}"
    unread = sorted(name for name in names if not in_source.get(name, set()) - TABLES)
    assert not unread, f"listed in the table but named nowhere else in src/: {unread}"


def test_no_variable_name_is_built_at_run_time():
    # the table check above reads literal names: a name glued together at run time would escape it
    built = re.compile(r"""["']STEERABLE_[A-Z0-9_]*["']\s*\+|f["']STEERABLE_[A-Z0-9_]*\{""")
    offenders = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in SRC.rglob("*.py")
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if built.search(line)
    ]
    assert offenders == []


def test_every_entry_is_documented_and_has_a_section():
    for var in VARIABLES:
        assert var.summary.endswith((".", ")")), var.name
        assert var.area, var.name
        if var.kind == "int":
            assert var.floor is not None and var.ceiling is not None
            assert var.floor <= int(var.default) <= var.ceiling, var.name


# what makes each variable read at all: run_code's limits only with run_code on, the provider's
# only with a provider that needs nothing else, the plugins-in-workspace flag only with a plugin dir
def _base(var: EnvVar, tmp_path: Path) -> dict[str, str]:
    env = {"PATH": "/usr/bin:/bin", "STEERABLE_PROVIDER": "ollama", "STEERABLE_MODEL": "m"}
    if var.name == "STEERABLE_PROVIDER":
        env["STEERABLE_API_KEY"] = "k"
        env["STEERABLE_BASE_URL"] = "http://127.0.0.1:9/v1"  # azure has no default
    if var.name.startswith("STEERABLE_RUN_CODE_"):
        env["STEERABLE_RUN_CODE"] = "1"
    if var.name == "STEERABLE_ALLOW_PLUGINS_IN_WORKSPACE":
        plugins = tmp_path / "plugins"
        plugins.mkdir(exist_ok=True)
        env["STEERABLE_PLUGIN_DIR"] = str(plugins)
    if var.name == "STEERABLE_EGRESS_CONFINED":
        env["HTTPS_PROXY"] = "http://127.0.0.1:3128"
    return env


def _errors(env: dict[str, str], workspace: Path) -> list[str]:
    report = diagnose(workspace, environ=env, plugins="STEERABLE_PLUGIN_DIR" in env)
    return [f"{check.section}/{check.item}: {check.detail}" for check in report.errors]


CHECKED = [var for var in VARIABLES if var.kind in ("int", "flag", "choice")]


@pytest.mark.parametrize("var", CHECKED, ids=lambda var: var.name)
def test_the_code_accepts_exactly_what_the_table_says(var: EnvVar, tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    base = _base(var, tmp_path)
    assert _errors(base, workspace) == []
    if var.kind == "int":
        assert var.floor is not None and var.ceiling is not None
        good, bad = [str(var.floor), str(var.ceiling)], [str(var.floor - 1), str(var.ceiling + 1), "ten"]
    elif var.kind == "flag":
        good, bad = ["1", "0", "yes", "off"], ["maybe"]
    else:
        good, bad = [choice.upper() for choice in var.choices if choice != "scripted"], ["bogus"]
    for value in good:
        # accepted: no error names it (a forced sandbox that cannot run here is not a bad value)
        errors = [
            e
            for e in _errors({**base, var.name: value}, workspace)
            if var.name in e and "sandbox_unavailable" not in e
        ]
        assert errors == [], (value, errors)
    for value in bad:
        errors = _errors({**base, var.name: value}, workspace)
        assert any(var.name in e for e in errors), (value, errors)


def test_a_secret_is_reported_only_as_set(tmp_path):
    env = {
        "PATH": "/usr/bin",
        "STEERABLE_PROVIDER": "openai",
        "STEERABLE_MODEL": "m",
        "STEERABLE_API_KEY": "sk-abc123",
    }
    report = diagnose(tmp_path, environ=env, plugins=False)
    text = repr(report.to_json())
    assert "sk-abc123" not in text
    values = {row["name"]: row["value"] for row in report.variables}
    assert values["STEERABLE_API_KEY"] == "set" and values["STEERABLE_WEB_SEARCH_API_KEY"] == "unset"


def test_nothing_in_a_report_carries_a_credential(tmp_path):
    key = "sk-SECRETKEY42"
    config = tmp_path / "mcp.json"
    args = [
        "-e",
        "GITHUB_TOKEN=SECRETARG1",
        "--header",
        "Authorization: Bearer SECRETARG2",
        "https://h/SECRETARG3",
    ]
    server = {"command": "npx", "args": args, "env": {"API_TOKEN": "SECRETENV12"}}
    config.write_text(json.dumps({"mcpServers": {"gh": server}}))
    env = {
        "PATH": "/usr/bin:/bin",
        "STEERABLE_MCP_CONFIG": str(config),
        "STEERABLE_PROVIDER": "openai",
        "STEERABLE_MODEL": key,  # a key pasted into the wrong variable
        "STEERABLE_API_KEY": key,
        "STEERABLE_BASE_URL": f"https://gw.example.com/{key}/v1",  # a gateway with the key in its path
        "STEERABLE_WEB_SEARCH_BASE_URL": "https://x:SECRETWEB123@s.example/?k=SECRETQ",
    }
    report = diagnose(tmp_path, environ=env, plugins=False)
    text = json.dumps(report.to_json())
    assert "SECRET" not in text
    rows = {(c.section, c.item): c for c in report.checks}
    assert rows[("MCP servers", "gh")].value == "npx"
    assert rows[("MCP servers", "gh")].detail.endswith(
        "; 5 argument(s) not shown (they may hold credentials)"
    )
    values = {row["name"]: row["value"] for row in report.variables}
    assert values["STEERABLE_BASE_URL"] == "https://gw.example.com/[redacted]/v1"
    assert values["STEERABLE_MODEL"] == "[redacted]"
    assert values["STEERABLE_WEB_SEARCH_BASE_URL"] == "https://[redacted]@s.example/?[redacted]"
    # the search URL is refused as the commands refuse it: the variable named, the secret not shown
    assert rows[("Web tools", "configuration")].detail == (
        "STEERABLE_WEB_SEARCH_BASE_URL='https://...@s.example' must not contain credentials; put the "
        "key in STEERABLE_WEB_SEARCH_API_KEY"
    )


@pytest.mark.parametrize(
    ("env", "workspace_kind"),
    [
        (
            {"STEERABLE_BASE_URL": "https://u:x@[bad/v1", "STEERABLE_MODEL": "m", "STEERABLE_API_KEY": "k"},
            "dir",
        ),
        ({"STEERABLE_BASE_URL": "https://xn--/v1", "STEERABLE_MODEL": "m", "STEERABLE_API_KEY": "k"}, "dir"),
        ({"STEERABLE_MCP_CONFIG": "deep"}, "dir"),
        ({"STEERABLE_MCP_CONFIG": "fifo"}, "dir"),
        ({"STEERABLE_MCP_CONFIG": "/dev/zero"}, "dir"),
        ({"STEERABLE_PLUGIN_DIR": "loop"}, "dir"),
        ({"ALL_PROXY": "socks5://127.0.0.1:1080"}, "dir"),
        ({"HTTPS_PROXY": "ftp://u:SECRETPROXY@p:21"}, "dir"),
        ({"STEERABLE_STATE_DIR": "loop/x"}, "dir"),
        ({}, "loop"),
        ({}, "file"),
    ],
)
def test_doctor_reports_what_used_to_crash_or_hang_as_an_error_row(
    tmp_path, monkeypatch, env, workspace_kind
):
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    (tmp_path / "deep").write_text("[" * 100_000 + "]" * 100_000)
    os.mkfifo(tmp_path / "fifo")
    workspace = tmp_path / "ws"
    if workspace_kind == "dir":
        workspace.mkdir()
    elif workspace_kind == "file":
        workspace.write_text("")
    else:
        workspace = tmp_path / "loop"
    resolved = {
        k: str(tmp_path / v) if v in ("deep", "fifo", "loop", "loop/x") else v for k, v in env.items()
    }
    for name in ("ALL_PROXY", "HTTPS_PROXY"):  # httpx reads the real environment
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
        if name in resolved:
            monkeypatch.setenv(name, resolved[name])
    report = diagnose(
        workspace, environ={"PATH": "/usr/bin:/bin", **resolved}, plugins="STEERABLE_PLUGIN_DIR" in env
    )
    assert report.errors, report.checks
    assert not any(check.item == "check" for check in report.errors), report.errors  # no internal failure
    assert "SECRET" not in json.dumps(report.to_json())


def test_doctor_changes_nothing_on_disk(tmp_path):
    state = tmp_path / "not" / "yet" / "state"
    workspace = tmp_path / "ws"
    workspace.mkdir()
    report = diagnose(workspace, environ={"PATH": "/usr/bin:/bin"}, plugins=False, state_dir=state)
    rows = {(c.section, c.item): c for c in report.checks}
    assert rows[("State and logs", "state directory")].status == "ok"
    assert rows[("State and logs", "state directory")].detail.endswith(
        "created at the first run or sidecar start"
    )
    assert not (tmp_path / "not").exists() and list(workspace.iterdir()) == []
