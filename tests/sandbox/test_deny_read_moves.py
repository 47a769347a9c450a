"""SAFE-3: a secret inside the workspace stays unread when a command renames the folder holding it.

The deny-read set is paths. In a workspace that is ``~`` (``steerable -w ~``) a command can rename
``.config`` or ``.local`` (the mounts hiding ``.config/gh`` and ``.local/share/keyrings`` move with
them, so that run reads nothing); afterwards the token would sit at ``cfg/gh``, under a name nothing
hides (the third attack round's break). Each test drives the real tools (``bash``, ``run_code``
and the file tools in one process, as the sidecar has them) under each real Linux backend, in a fake
home outside ``/tmp`` with canary secrets, and checks on the host, in the tools' answers and in a
fresh process that no canary comes out.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sbx_helpers import LINUX_BACKENDS, real_backend

from escape_snippets import GET_OS
from steerable_agent_runtime import ToolCall, ToolRouter, workspace_tools_for_cwd
from steerable_agent_runtime.sandbox import SandboxConfig, _deny_moves
from waiting import eventually

CANARY = f"canary-{uuid.uuid4().hex[:10]}"

SECRETS = (
    ".config/gh/hosts.yml",
    ".config/gcloud/credentials.db",
    ".local/share/keyrings/login.keyring",
    ".local/state/steerable/sessions/other.jsonl",  # steerable's own records (the state directory)
    ".cargo/credentials.toml",
)


@pytest.fixture(autouse=True)
def _nothing_left_displaced() -> Iterator[None]:
    """What a test left displaced must not refuse the next test's runs (the list is per process)."""
    yield
    with _deny_moves._LOCK:
        for item in _deny_moves._STUCK:
            if item.held.fd >= 0:
                os.close(item.held.fd)
        _deny_moves._STUCK.clear()


@pytest.fixture
def home() -> Iterator[Path]:
    """A fake home under ``/var/tmp`` (bubblewrap's ``/tmp`` is private): secrets and ordinary files."""
    root = Path(tempfile.mkdtemp(prefix="steerable-home-", dir="/var/tmp"))
    try:
        for secret in SECRETS:
            path = root / secret
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"{CANARY} {secret}\n")
        (root / ".config" / "fish").mkdir()
        (root / ".config" / "fish" / "config.fish").write_text("visible-fish\n")
        (root / "notes.txt").write_text("visible-notes\n")
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def environ_for(home: Path, backend: str, **extra: str) -> dict[str, str]:
    unset = {"STEERABLE_SANDBOX_DENY_READ", "STEERABLE_STATE_DIR", "STEERABLE_MCP_CONFIG", "XDG_STATE_HOME"}
    base = {k: v for k, v in os.environ.items() if k not in unset}
    return {**base, "HOME": str(home), "STEERABLE_SANDBOX": backend, **extra}


class Tools:
    """The file tools and ``bash`` of one workspace, called like a model would."""

    def __init__(self, home: Path, backend: str, **extra: str) -> None:
        real_backend(backend)  # fails naming the fix when the backend cannot run here
        self.router = workspace_tools_for_cwd(home, environ=environ_for(home, backend, **extra))

    async def __call__(self, name: str, /, **arguments: Any) -> Any:
        return await self.router.dispatch(ToolCall(id=uuid.uuid4().hex[:8], name=name, arguments=arguments))


def wire(result: Any) -> str:
    return json.dumps(result.to_wire())


def _bytes_read() -> int:
    """What this process has read so far: the bytes of every read call (``rchar``, /proc/self/io)."""
    [line] = [line for line in Path("/proc/self/io").read_text().splitlines() if line.startswith("rchar:")]
    return int(line.split()[1])


def secrets_in_place(home: Path) -> None:
    for secret in SECRETS:
        assert (home / secret).read_text() == f"{CANARY} {secret}\n", secret


READ_EVERYTHING = (
    "cat cfg/gh/hosts.yml l/share/keyrings/login.keyring c/credentials.toml; grep -rs canary . ; echo end"
)

FRESH_PROCESS = """
import asyncio, json, sys
from steerable_agent_runtime import ToolCall, workspace_tools_for_cwd
root, command, environ = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
router = workspace_tools_for_cwd(root, environ=environ)
async def main():
    bash = await router.dispatch(ToolCall(id="b", name="bash", arguments={"command": command}))
    grep = await router.dispatch(ToolCall(id="g", name="grep", arguments={"pattern": "canary"}))
    print(json.dumps([bash.to_wire(), grep.to_wire()]))
asyncio.run(main())
"""


@pytest.mark.parametrize("backend", LINUX_BACKENDS)
async def test_renaming_the_folders_that_hold_secrets_exposes_nothing_safe_3(
    backend: str, home: Path
) -> None:
    # SAFE-3: `mv .config cfg; mv .local l` in `-w ~` (the third attack round's break A): the folders
    # are put back after the call, so no file tool, no later command and no new process reads them
    tools = Tools(home, backend)
    moved = await tools("bash", command="mv .config cfg; mv .local l; mv .cargo c; ls; echo done")
    data = moved.data
    assert data is not None and "done" in data["stdout"] and "cfg" in data["stdout"], moved
    assert moved.success is False and moved.needs_followup is True
    assert data["code"] == "deny_read_restored"
    assert data["denyReadRestored"] == [".cargo", ".config", ".local"]
    assert moved.error == (
        "The command moved .cargo to c, .config to cfg, .local to l; the deny-read set has entries there "
        "(.cargo/credentials.toml, .config/gcloud, .config/gh, .local/share/keyrings, .local/state/steerable), "
        "which commands and the file tools may not read under any name (SAFE-3), so everything was put "
        "back where it was."
    )
    secrets_in_place(home)
    assert not any((home / name).exists() for name in ("cfg", "l", "c"))
    assert (home / ".config" / "fish" / "config.fish").read_text() == "visible-fish\n"
    # the file tools, by either name
    gone = await tools("read_file", path="cfg/gh/hosts.yml")
    assert gone.data == {"code": "file_not_found", "path": "cfg/gh/hosts.yml"}, gone
    denied = await tools("read_file", path=".config/gh/hosts.yml")
    assert denied.data is not None and denied.data["code"] == "denied_path"
    found = await tools("grep", pattern="canary")
    assert CANARY not in wire(found)
    # a later command
    later = await tools("bash", command=READ_EVERYTHING)
    assert CANARY not in wire(later) and "end" in later.data["stdout"]
    # a new process
    run = subprocess.run(
        [
            sys.executable,
            "-P",
            "-c",
            FRESH_PROCESS,
            str(home),
            READ_EVERYTHING,
            json.dumps(environ_for(home, backend)),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert CANARY not in run.stdout and "end" in run.stdout


@pytest.mark.parametrize("backend", LINUX_BACKENDS)
async def test_the_protected_paths_opt_out_keeps_the_secrets_under_their_names_safe_3(
    backend: str, home: Path
) -> None:
    # SAFE-3: STEERABLE_ALLOW_PROTECTED_WRITES lets commands change git hooks and the like; it is
    # no way to move a secret out from under its name
    tools = Tools(home, backend, STEERABLE_ALLOW_PROTECTED_WRITES="1")
    moved = await tools("bash", command="mv .local l; echo done")
    assert moved.data is not None and moved.data["denyReadRestored"] == [".local"], moved
    secrets_in_place(home)
    assert not (home / "l").exists()


@pytest.mark.parametrize("backend", LINUX_BACKENDS)
async def test_a_link_on_the_way_and_what_the_command_left_there_are_sorted_out_safe_3(
    backend: str, home: Path
) -> None:
    # SAFE-3: ~/.config is a link into a dotfiles folder (stow): renaming the folder, deleting the
    # link and making a folder in its place would leave the token under no denied name
    dotfiles = home / "dotfiles" / "config"
    dotfiles.parent.mkdir()
    (home / ".config").rename(dotfiles)
    (home / ".config").symlink_to("dotfiles/config")
    tools = Tools(home, backend)
    moved = await tools(
        "bash", command="mv dotfiles d; rm .config; mkdir .config; echo mine > .config/x; echo done"
    )
    data = moved.data
    assert data is not None and "done" in data["stdout"], moved
    assert data["code"] == "deny_read_restored"
    assert data["denyReadRestored"] == [".config", "dotfiles"]
    assert os.readlink(home / ".config") == "dotfiles/config"
    secrets_in_place(home)
    assert not (home / "d").exists()
    [aside] = [p for p in home.iterdir() if p.name.startswith(".config.steerable-aside-")]
    assert (aside / "x").read_text() == "mine\n"  # what the command made there is kept, moved aside
    assert (
        moved.error is not None and f"What the command left at .config is now at {aside.name}." in moved.error
    )
    later = await tools(
        "bash", command="cat d/config/gh/hosts.yml dotfiles/config/gh/hosts.yml .config/gh/hosts.yml"
    )
    assert CANARY not in wire(later)
    read = await tools("read_file", path="dotfiles/config/gh/hosts.yml")
    assert read.data is not None and read.data["code"] == "denied_path"


@pytest.mark.parametrize("backend", LINUX_BACKENDS)
async def test_a_run_code_program_renaming_the_folder_is_put_back_too_safe_3(
    backend: str, home: Path
) -> None:
    # SAFE-3: run_code goes through the same guard as bash
    from steerable_sidecar.run_code._tool import RunCodeConfig, run_code_tool

    real_backend(backend)
    sandbox = SandboxConfig.from_env(environ_for(home, backend))
    router = ToolRouter()
    router.register(run_code_tool(home, router=router, config=RunCodeConfig(), sandbox=sandbox))
    program = GET_OS + 'os.rename(".config", "cfg")\nreturn sorted(os.listdir("."))\n'
    call = ToolCall(id="p", name="run_code", arguments={"code": program, "description": "rename"})
    result = await router.dispatch(call)
    data = result.data
    assert data is not None and "cfg" in data["value"], result
    assert data["code"] == "deny_read_restored" and data["denyReadRestored"] == [".config"]
    assert result.error is not None and result.error.startswith("The program moved .config to cfg;")
    secrets_in_place(home)
    assert not (home / "cfg").exists()


@pytest.mark.parametrize("backend", LINUX_BACKENDS)
async def test_a_cancelled_command_has_the_folder_put_back_safe_3(backend: str, home: Path) -> None:
    # SAFE-3: the call is cancelled (the user stops the turn, SIGTERM) while the folder is away
    tools = Tools(home, backend)
    call = asyncio.ensure_future(tools("bash", command="mv .config cfg; sleep 60"))
    await eventually(lambda: (home / "cfg").exists() or call.done(), what="the command moved .config")
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    secrets_in_place(home)
    assert not (home / "cfg").exists()


@pytest.mark.parametrize("backend", LINUX_BACKENDS)
async def test_the_file_tools_refuse_a_secret_where_a_running_command_moved_it_safe_3(
    backend: str, home: Path
) -> None:
    # SAFE-3: tool calls of a turn run concurrently: while the command keeps .config at cfg, the
    # file tools refuse the entries where they are now (on both search engines)
    tools = Tools(home, backend)
    python_engine = Tools(home, backend, STEERABLE_RIPGREP="off")
    wait = "mv .config cfg; mv .local l; until [ -e release ]; do sleep 0.05; done; echo done"
    call = asyncio.ensure_future(tools("bash", command=wait))
    await eventually(
        lambda: ((home / "cfg").exists() and (home / "l").exists()) or call.done(),
        what="the command moved .config and .local",
    )
    for each in (tools, python_engine):
        read = await each("read_file", path="cfg/gh/hosts.yml")
        assert read.data == {"code": "denied_path", "path": "cfg/gh/hosts.yml", "entry": ".config/gh"}, read
        assert read.error.startswith("cfg/gh/hosts.yml is in the deny-read set (.config/gh):")
        listed = await each("list_dir", path="cfg")
        assert [entry["name"] for entry in listed.data["entries"]] == ["fish"], listed
        assert listed.data["deniedSkipped"] == 2  # gh and gcloud
        for search in (
            await each("grep", pattern="canary"),
            await each("grep", pattern="canary", path="l"),
            await each("glob", pattern="**/*"),
            await each("glob", pattern="**/*", path="cfg"),
        ):
            assert search.success, search
            assert CANARY not in wire(search) and "hosts.yml" not in wire(search), search
            assert "login.keyring" not in wire(search) and "other.jsonl" not in wire(search), search
    (home / "release").touch()  # the command ends now
    done = await call
    assert done.data is not None and done.data["denyReadRestored"] == [".config", ".local"], done
    secrets_in_place(home)


@pytest.mark.parametrize("backend", LINUX_BACKENDS)
async def test_a_folder_that_cannot_be_put_back_stops_every_later_call_safe_3(
    backend: str, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # SAFE-3: when the rename back fails, nothing runs and the file tools refuse every path until the
    # user has moved the folder back, rather than expose it
    def refused(*_: Any) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(_deny_moves, "_rename", refused)
    tools = Tools(home, backend)
    moved = await tools("bash", command="mv .config cfg; echo done")
    data = moved.data
    assert data is not None and data["code"] == "deny_read_displaced", moved
    assert data["denyReadNotRestored"] == [".config"]
    fix = f"mv {home}/cfg {home}/.config"
    assert moved.error is not None and f"until the user moves them back ({fix})" in moved.error
    monkeypatch.undo()  # the rename works again; still nothing runs while the folder is away
    later = await tools("bash", command="echo ran")
    assert later.data is not None and later.data["code"] == "deny_read_displaced", later
    assert "stdout" not in later.data and later.data["denyReadNotRestored"] == [f"{home}/.config"]
    assert later.error is not None and later.error.startswith(
        f"The command was not run: an earlier command moved paths of the deny-read set, and steerable "
        f"could not put them back: {home}/.config (holding {home}/.config/gcloud, {home}/.config/gh) is "
        f"at {home}/cfg."
    )
    assert later.error.endswith(f"Ask the user to move them back themselves ({fix}).")
    for name, arguments in (
        ("read_file", {"path": "notes.txt"}),
        ("read_file", {"path": "cfg/gh/hosts.yml"}),
        ("list_dir", {"path": "."}),
        ("grep", {"pattern": "canary"}),
        ("write_file", {"path": "new.txt", "content": "x"}),
    ):
        result = await tools(name, **arguments)
        assert result.data is not None and result.data["code"] == "denied_path", (name, result)
        assert result.error.startswith(
            f"{arguments['path'] if 'path' in arguments else '.'} was not looked at"
        )
        assert CANARY not in wire(result)
    os.rename(home / "cfg", home / ".config")  # the user does as told
    again = await tools("bash", command="echo ran")
    assert again.success and again.data["stdout"] == "ran\n", again
    assert (await tools("read_file", path="notes.txt")).success


@pytest.mark.parametrize("backend", LINUX_BACKENDS)
async def test_a_project_workspace_holds_no_handle_safe_3(backend: str, home: Path, workspace: Path) -> None:
    # SAFE-3: with no entry inside the workspace (the usual case) nothing is watched or reported
    tools = Tools(workspace, backend, HOME=str(home))
    began = _deny_moves.DenyWatch.begin(
        str(workspace.resolve()), SandboxConfig.from_env(environ_for(home, backend)).deny_read
    )
    assert began is None
    result = await tools("bash", command="mkdir a; mv a b; echo done")
    assert result.success and "denyReadRestored" not in result.data, result


def test_the_watch_follows_a_workspace_reached_through_a_link_safe_3(home: Path, tmp_path: Path) -> None:
    # SAFE-3: HOME names the home through a link (/home -> /var/home): the entries are still held
    # as named, links on the way included
    alias = tmp_path / "alias"
    alias.symlink_to(home)
    (home / "dotfiles").mkdir()
    (home / ".config" / "gh").rename(home / "dotfiles" / "gh")
    (home / ".config" / "gh").symlink_to("../dotfiles/gh")
    deny = (alias / ".config" / "gh",)
    watch = _deny_moves.DenyWatch.begin(str(home), deny)
    assert watch is not None
    try:
        held = {rel: item.link for rel, item in watch._held.items()}
        assert held == {
            ".config": None,
            ".config/gh": "../dotfiles/gh",
            "dotfiles": None,
            "dotfiles/gh": None,
        }
        os.rename(home / "dotfiles", home / "d")
        (home / ".config" / "gh").unlink()
        moves = watch.restore()
    finally:
        watch.close()
    assert [(item.path, item.where) for item in moves.restored] == [("dotfiles", "d"), (".config/gh", None)]
    assert (home / ".config" / "gh" / "hosts.yml").read_text() == f"{CANARY} .config/gh/hosts.yml\n"


# -- SAFE-2: the store of protected entries is read with a bound ---------------------------------------


def test_a_deeply_nested_or_huge_protected_store_is_ignored_safe_2(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # SAFE-2: <state>/protected/<sha>.json is steerable's, but whatever is there must not stop the
    # first bash call (a 100 000-deep JSON raised RecursionError) nor be read whole (a sparse file of
    # gigabytes took 36 s and 7.9 GB)
    from steerable_agent_runtime.sandbox._protect import STORE_MAX_BYTES, ScanCache

    store = tmp_path / "store.json"
    store.write_text("[" * 100_000 + "]" * 100_000)
    deep = ScanCache(store)
    deep.load()
    assert deep.known == {}
    entry = {"rel": "libs/foo/.git", "rule": ".git/**", "parents": 0}
    store.write_text(json.dumps({"version": 1, "entries": [entry], "pad": " " * STORE_MAX_BYTES}))
    padded = ScanCache(store)
    padded.load()
    assert padded.known == {}  # over the cap: ignored, with a log line
    assert f"is over {STORE_MAX_BYTES} bytes" in caplog.text
    store.unlink()
    with open(store, "wb") as handle:
        handle.truncate(8 << 30)  # sparse: no disk used
    before = _bytes_read()
    ScanCache(store).load()
    assert _bytes_read() - before < 4 * STORE_MAX_BYTES  # up to the cap, not the 8 GiB
    store.write_text(json.dumps({"version": 1, "entries": [entry]}))
    kept = ScanCache(store)
    kept.load()
    assert list(kept.known) == ["libs/foo/.git"]


@pytest.mark.parametrize("backend", LINUX_BACKENDS)
async def test_the_first_bash_call_survives_a_deeply_nested_store_safe_2(
    backend: str, workspace: Path, tmp_path: Path
) -> None:
    from steerable_agent_runtime.sandbox import bash_tool
    from steerable_agent_runtime.sandbox._protect import known_entries_file

    real_backend(backend)
    environ = {"STEERABLE_SANDBOX": backend, "PATH": os.environ["PATH"], "HOME": str(tmp_path)}
    store = known_entries_file(str(workspace.resolve()), environ)
    store.parent.mkdir(parents=True)
    store.write_text("[" * 100_000 + "]" * 100_000)
    result = await bash_tool(workspace, environ=environ).handler(command="echo done")
    assert result.success and result.data["stdout"] == "done\n", result
