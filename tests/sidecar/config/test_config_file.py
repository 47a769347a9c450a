"""The user's configuration file (issue 32 item 3; issue 29's request settings written down once).

Unit tests of :func:`read_config_file` (where it is, how values become the variables' text, what is
refused), then real processes: ``steerable doctor`` says where each value came from, ``steerable
run`` takes its model from the file with a variable and a flag over it, a file inside the workspace
is not read, and the file is a protected path.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from run_helpers import summary_of

from fake_openai import FakeOpenAI
from steerable_agent_runtime.errors import ConfigError
from steerable_sidecar.config._file import ConfigFile, default_config_path, read_config_file

Run = Callable[..., subprocess.CompletedProcess[str]]
Env = Callable[..., dict[str, str]]


def write(home: Path, text: str) -> Path:
    path = home / ".config" / "steerable" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_the_file_is_in_the_platform_config_folder(tmp_path: Path) -> None:
    assert default_config_path({"HOME": str(tmp_path)}) == tmp_path / ".config" / "steerable" / "config.toml"
    xdg = tmp_path / "xdg"
    assert (
        default_config_path({"HOME": "/nowhere", "XDG_CONFIG_HOME": str(xdg)})
        == xdg / "steerable" / "config.toml"
    )
    relative = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": "relative/dir"}  # the XDG spec: ignore it
    assert default_config_path(relative) == tmp_path / ".config" / "steerable" / "config.toml"


def test_values_become_what_the_variables_would_hold(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        'provider = "groq"\nmodel = "llama"\nmax_tokens = 4096\ntemperature = 0.2\nallow_protected_writes = false\n'
        'web_allowed_domains = ["a.example", "b.example"]\nextra_headers = { X-Title = "me" }\n',
    )
    loaded = read_config_file({"HOME": str(tmp_path)})
    assert loaded.path == path and loaded.found and not loaded.ignored
    assert dict(loaded.values) == {
        "STEERABLE_PROVIDER": "groq",
        "STEERABLE_MODEL": "llama",
        "STEERABLE_MAX_TOKENS": "4096",
        "STEERABLE_TEMPERATURE": "0.2",
        "STEERABLE_ALLOW_PROTECTED_WRITES": "0",
        "STEERABLE_WEB_ALLOWED_DOMAINS": "a.example,b.example",
        "STEERABLE_EXTRA_HEADERS": '{"X-Title": "me"}',
    }
    # a variable that is set wins; an empty one counts as unset, as everywhere
    assert loaded.applied({"STEERABLE_MODEL": "other", "STEERABLE_PROVIDER": " "}) == {
        k: v for k, v in loaded.values.items() if k != "STEERABLE_MODEL"
    }


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('modle = "x"\n', "unknown key 'modle'; did you mean 'model'?"),
        ("zzz = 1\n", "unknown key 'zzz'; keys are the STEERABLE_* names in lower case, without STEERABLE_"),
        ('config = "other.toml"\n', "unknown key 'config'"),  # about the file itself: a variable only
        ("model = \n", "not valid TOML"),
        ('model = ["a"]\n', "model must be a string, a number or a boolean, not a list"),
        ('extra_body = "x"\n', 'extra_body must be a table (extra_body = { name = "value" })'),
        ("web_allowed_domains = [1]\n", "web_allowed_domains must be a list of strings"),
    ],
)
def test_a_bad_file_is_an_error_naming_the_file_and_the_key(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        read_config_file({"HOME": str(tmp_path)})
    assert str(info.value).startswith(f"{path}: ") and message in str(info.value)


def test_paths_in_the_file_are_taken_from_its_folder(tmp_path: Path) -> None:
    """Issue 32: ``script = "turns.json"`` beside the file names that file, not one in the current
    directory (the workspace, where a model could put it); ``~`` is expanded; ``ripgrep = "rg"`` is
    still a command looked up on ``PATH``, and ``off`` stays ``off``."""
    path = write(
        tmp_path,
        'script = "turns.json"\nmcp_config = "sub/mcp.json"\nstate_dir = "~/state"\n'
        'plugin_dir = "/abs/plugins"\nripgrep = "rg"\n',
    )
    loaded = read_config_file({"HOME": str(tmp_path)})
    assert dict(loaded.values) == {
        "STEERABLE_SCRIPT": str(path.parent / "turns.json"),
        "STEERABLE_MCP_CONFIG": str(path.parent / "sub" / "mcp.json"),
        "STEERABLE_STATE_DIR": str(Path("~/state").expanduser()),
        "STEERABLE_PLUGIN_DIR": "/abs/plugins",
        "STEERABLE_RIPGREP": "rg",
    }
    write(tmp_path, 'ripgrep = "off"\n')
    assert read_config_file({"HOME": str(tmp_path)}).values == {"STEERABLE_RIPGREP": "off"}


def test_a_file_error_in_run_is_its_json_line_without_the_usage(
    tmp_path: Path, run_cli: Run, child_env: Env
) -> None:
    """Issue 32: a bad file is a setting, not a command-line mistake: ``steerable run`` says it in
    one line and its JSON summary, without the usage block."""
    home = tmp_path / "home"
    path = write(home, 'modle = "x"\n')
    ws = tmp_path / "ws"
    ws.mkdir()
    env = child_env(HOME=str(home), STEERABLE_CONFIG="")
    env.pop("XDG_CONFIG_HOME", None)
    proc = run_cli("run", "-w", str(ws), "hi", **env)
    said = f"{path}: unknown key 'modle'; did you mean 'model'?"
    assert proc.returncode == 2
    assert proc.stderr == f"steerable run: {said}\n"
    assert json.loads(proc.stdout) == {"outcome": "usage_error", "error": said, "exitCode": 2}


def test_steerable_config_names_the_file_or_turns_it_off(tmp_path: Path) -> None:
    other = tmp_path / "mine.toml"
    other.write_text('model = "from-mine"\n')
    assert read_config_file({"STEERABLE_CONFIG": str(other)}).values == {"STEERABLE_MODEL": "from-mine"}
    assert read_config_file({"STEERABLE_CONFIG": "OFF", "HOME": str(tmp_path)}) == ConfigFile(None)
    with pytest.raises(ConfigError, match=r"STEERABLE_CONFIG='/no/such.toml' is not a file"):
        read_config_file({"STEERABLE_CONFIG": "/no/such.toml"})
    assert read_config_file({"HOME": str(tmp_path / "empty")}).found is False  # no file: nothing to say


def test_a_file_inside_the_workspace_is_not_read(tmp_path: Path) -> None:
    write(tmp_path, 'model = "planted"\n')
    loaded = read_config_file({"HOME": str(tmp_path)}, workspace=tmp_path)
    assert loaded.found and loaded.values == {} and "lies inside the workspace" in loaded.ignored
    opted = read_config_file(
        {"HOME": str(tmp_path), "STEERABLE_CONFIG_IN_WORKSPACE": "1"}, workspace=tmp_path
    )
    assert opted.values == {"STEERABLE_MODEL": "planted"}
    elsewhere = tmp_path / "project"
    elsewhere.mkdir()
    assert read_config_file({"HOME": str(tmp_path)}, workspace=elsewhere).values == {
        "STEERABLE_MODEL": "planted"
    }


def test_doctor_says_where_each_value_came_from(tmp_path: Path, run_cli: Run, child_env: Env) -> None:
    home = tmp_path / "home"
    write(
        home,
        'provider = "groq"\nmodel = "from-file"\napi_key = "gsk0from0the0cfg0secret42"\nmax_tokens = 1000\n',
    )
    ws = tmp_path / "ws"
    ws.mkdir()
    env = child_env(HOME=str(home), STEERABLE_CONFIG="", STEERABLE_MAX_TOKENS="2000")
    env.pop("XDG_CONFIG_HOME", None)
    proc = run_cli("doctor", "--json", "--no-plugins", "--workspace", str(ws), **env)
    report = json.loads(proc.stdout)
    rows = {(r["section"], r["item"]): r for r in report["checks"]}
    file_row = rows[("Configuration file", "file")]
    assert file_row["value"] == "read"
    assert (
        "3 setting(s) used, 1 under a variable of the same name (STEERABLE_MAX_TOKENS)" in file_row["detail"]
    )
    assert rows[("Model provider", "profile")]["value"] == "groq"
    assert rows[("Model provider", "max tokens")]["value"] == "2000"  # the variable over the file
    sources = {v["name"]: v["source"] for v in report["variables"]}
    assert (sources["STEERABLE_MODEL"], sources["STEERABLE_MAX_TOKENS"]) == ("file", "env")
    assert "gsk0from0the0cfg0secret42" not in proc.stdout  # a key from the file is a secret like any


def test_steerable_run_takes_its_model_from_the_file(
    fake_openai: FakeOpenAI, tmp_path: Path, run_cli: Run, child_env: Env
) -> None:
    home = tmp_path / "home"
    write(
        home,
        f'provider = "vllm"\nmodel = "from-file"\nbase_url = "{fake_openai.base_url}"\nmax_tokens = 111\n',
    )
    ws = tmp_path / "ws"
    ws.mkdir()
    fake_openai.script(["one", "two", "three"])
    env = child_env(HOME=str(home), STEERABLE_CONFIG="")
    env.pop("XDG_CONFIG_HOME", None)
    common = (
        "run",
        "-w",
        str(ws),
        "--quiet",
        "--no-plugins",
        "--no-web-tools",
        "--state-dir",
        str(tmp_path / "s"),
    )
    proc = run_cli(*common, "--instruction", "hi", **env)
    assert summary_of(proc)["outcome"] == "completed", proc.stderr
    first = fake_openai.requests[0].body
    assert (first["model"], first["max_tokens"]) == ("from-file", 111)
    proc = run_cli(
        *common, "--instruction", "hi", "--max-tokens", "7", **{**env, "STEERABLE_MODEL": "from-env"}
    )
    assert summary_of(proc)["outcome"] == "completed", proc.stderr
    second = fake_openai.requests[1].body
    assert (second["model"], second["max_tokens"]) == ("from-env", 7)  # flag > variable > file
    other = {
        **env,
        "STEERABLE_MODEL": "from-env",
        "STEERABLE_PROVIDER": "ollama",
        "STEERABLE_BASE_URL": "http://x.invalid",
    }
    flagged = ("--provider", "vllm", "--model", "from-flag", "--base-url", fake_openai.base_url)
    proc = run_cli(*common, "--instruction", "hi", *flagged, **other)
    assert summary_of(proc)["outcome"] == "completed", proc.stderr
    assert fake_openai.requests[2].body["model"] == "from-flag"  # the model flags win over the variables too


def test_a_bad_value_from_the_file_names_the_key_and_the_file(
    tmp_path: Path, run_cli: Run, child_env: Env
) -> None:
    """Issue 32: a value checked later (by the provider, the web tools) fails with its variable's
    message, and the message then says which line of which file set it; the same value from the
    environment is told without the note."""
    home = tmp_path / "home"
    path = write(
        home, 'provider = "openai"\napi_key = "sk-x"\nmax_tokens = "lots"\nweb_fetch_max_bytes = 0\n'
    )
    ws = tmp_path / "ws"
    ws.mkdir()
    env = child_env(HOME=str(home), STEERABLE_CONFIG="")
    env.pop("XDG_CONFIG_HOME", None)
    common = ("-w", str(ws), "--no-plugins", "--state-dir", str(tmp_path / "s"))
    run = run_cli("run", *common, "--no-web-tools", "hi", **env)
    said = f"STEERABLE_MAX_TOKENS='lots' must be an integer from 0 to 1000000 (STEERABLE_MAX_TOKENS is `max_tokens` in {path})"
    assert run.returncode == 2 and summary_of(run)["error"] == said
    assert f"steerable run: {said}" in run.stderr
    call = run_cli("call", "read_file", '{"path": "x"}', *common[:3], **env)
    assert call.returncode == 2
    assert call.stderr.strip().endswith(
        f"must be an integer from 1 to 100000000 (STEERABLE_WEB_FETCH_MAX_BYTES is `web_fetch_max_bytes` in {path})"
    )
    from_env = run_cli("run", *common, "--no-web-tools", "hi", **{**env, "STEERABLE_MAX_TOKENS": "many"})
    assert summary_of(from_env)["error"] == "STEERABLE_MAX_TOKENS='many' must be an integer from 0 to 1000000"
    doctor = run_cli("doctor", "--json", *common, **env)
    rows = {(r["section"], r["item"]): r for r in json.loads(doctor.stdout)["checks"]}
    assert rows[("Model provider", "configuration")]["detail"] == said
    assert f"steerable: {said}" in doctor.stderr.splitlines()


def test_a_file_in_the_workspace_is_ignored_with_a_warning(
    fake_openai: FakeOpenAI, tmp_path: Path, run_cli: Run, child_env: Env
) -> None:
    project = tmp_path / "project"  # its config folder inside it (a home is no workspace: the one rule)
    path = write(project, 'model = "planted-by-a-model"\n')
    fake_openai.script(["ok"])
    env = child_env(
        HOME=str(tmp_path / "home"),
        XDG_CONFIG_HOME=str(project / ".config"),
        STEERABLE_CONFIG="",
        STEERABLE_PROVIDER="vllm",
        STEERABLE_MODEL="mine",
        STEERABLE_BASE_URL=fake_openai.base_url,
    )
    env.pop("STEERABLE_MODEL")
    proc = run_cli("run", "-w", str(project), "--quiet", "--no-plugins", "--no-web-tools", "--state-dir",
                   str(tmp_path / "s"), "--instruction", "hi", **env)  # fmt: skip
    assert f"the configuration file {path} is not read: it lies inside the workspace" in proc.stderr
    assert summary_of(proc)["outcome"] == "usage_error"  # no model: the planted one was not taken
    assert "STEERABLE_MODEL is required" in proc.stderr
    assert fake_openai.requests == []


def test_the_file_is_a_protected_path(tmp_path: Path, run_cli: Run, child_env: Env) -> None:
    project = tmp_path / "project"  # its config folder inside it (a home is no workspace: the one rule)
    path = write(project, 'model = "mine"\n')
    env = child_env(
        HOME=str(tmp_path / "home"), XDG_CONFIG_HOME=str(project / ".config"), STEERABLE_CONFIG="off"
    )
    arguments = json.dumps({"path": ".config/steerable/config.toml", "content": 'model = "evil"\n'})
    proc = run_cli("call", "write_file", arguments, "-w", str(project), "--no-plugins", **env)
    assert proc.returncode == 1 and "protected" in proc.stdout
    assert path.read_text() == 'model = "mine"\n'


def test_a_refused_folder_is_told_alone_not_as_a_workspace_holding_the_file(
    tmp_path: Path, run_cli: Run, child_env: Env
) -> None:
    home = tmp_path / "home"
    write(home, 'model = "mine"\n')  # where the docs say it goes
    env = child_env(HOME=str(home), STEERABLE_CONFIG="")
    env.pop("XDG_CONFIG_HOME", None)
    proc = run_cli("tools", "--no-plugins", cwd=home, **env)
    assert proc.returncode == 2
    assert "is not read" not in proc.stderr  # the refusal is the one thing said
    assert proc.stderr.startswith(
        f"steerable tools: the workspace {home.resolve()} (the current directory) is a home"
    )


async def test_acp_started_in_a_home_reads_the_file_and_refuses_a_session_in_the_files_folder(
    tmp_path: Path, child_env: Env
) -> None:
    """acp has no workspace at start (editors launch it in ``~`` or ``/``): the file is read; a
    session folder holding it is refused instead, as a model there could rewrite the next start."""
    from acp import RequestError, spawn_agent_process, text_block
    from acp_client import AGENT_COMMAND, EditorClient, start, write_script

    home = tmp_path / "home"
    script = write_script(tmp_path / "turns.json", ["answered by the file's model"])
    write(home, f'provider = "scripted"\nscript = "{script}"\n')
    project = tmp_path / "project"
    project.mkdir()
    env = child_env(HOME=str(home), STEERABLE_CONFIG="", STEERABLE_STATE_DIR=str(tmp_path / "state"))
    env.pop("XDG_CONFIG_HOME", None)
    client = EditorClient()
    async with spawn_agent_process(client, *AGENT_COMMAND, env=env, cwd=home) as (conn, _):
        await start(conn)
        session = await conn.new_session(cwd=str(project), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=[text_block("hi")])
        with pytest.raises(RequestError) as refused:
            await conn.new_session(cwd=str(home / ".config"), mcp_servers=[])
    assert client.text() == "answered by the file's model"
    assert refused.value.code == -32602 and isinstance(refused.value.data, dict)
    assert refused.value.data["reason"] == (
        f"the folder {(home / '.config').resolve()} holds steerable's configuration file "
        f"{home / '.config' / 'steerable' / 'config.toml'}, where a model could change its own provider, "
        "key or policy: open a project that does not, or set STEERABLE_CONFIG_IN_WORKSPACE=1"
    )


async def test_acp_says_which_line_of_the_file_holds_a_bad_model_setting(
    tmp_path: Path, child_env: Env
) -> None:
    """Issue 32: an editor's ``session/new`` answered with the provider's error names the file's
    key and the file when the value came from there, as ``steerable run`` does."""
    from acp import RequestError, spawn_agent_process
    from acp_client import AGENT_COMMAND, EditorClient, start

    home = tmp_path / "home"
    path = write(home, 'provider = "openai"\napi_key = "sk-x"\nmax_tokens = "lots"\n')
    project = tmp_path / "project"
    project.mkdir()
    env = child_env(HOME=str(home), STEERABLE_CONFIG="", STEERABLE_STATE_DIR=str(tmp_path / "state"))
    env.pop("XDG_CONFIG_HOME", None)
    async with spawn_agent_process(EditorClient(), *AGENT_COMMAND, env=env, cwd=home) as (conn, _):
        await start(conn)
        with pytest.raises(RequestError) as failed:
            await conn.new_session(cwd=str(project), mcp_servers=[])
    assert failed.value.code == -32603
    assert str(failed.value) == (
        "STEERABLE_MAX_TOKENS='lots' must be an integer from 0 to 1000000 "
        f"(STEERABLE_MAX_TOKENS is `max_tokens` in {path})"
    )
