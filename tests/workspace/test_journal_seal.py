"""The journal's seal: recovery acts only on records this user's steerable wrote for this workspace.

FILE-15: a record a repository ships (or one copied from another workspace, or sealed under another
key) never makes the next start remove protected paths. FILE-13: nor does a forged patch record make
it write or delete a file. A genuine record still recovers (test_integrity.py's kill -9 tests;
test_protected.py's kill -9 during bash). docs/file-tools.md, "The journal's seal".
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from integrity_helpers import child_env, committed_patch, sealed_record, steerable_call

from steerable_agent_runtime.sandbox import guard_protected_paths
from steerable_agent_runtime.sandbox._backend import SandboxBackend
from steerable_agent_runtime.workspace import Workspace, version_of
from steerable_agent_runtime.workspace._apply import _stage
from steerable_agent_runtime.workspace._seal import KEY_FILE, JournalKey, journal_key

TOKEN = "0123456789abcdef"
FORGED = b'{"v":1,"op":"bash"}\n{"protected":[]}\n'  # the review's reproduction, byte for byte


def _txn(root: Path) -> Path:
    return root / ".steerable" / "txn"


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**child_env(), "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(cwd.parent)}
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, env=env, check=True)


def _vscode(root: Path) -> Path:
    (root / ".vscode").mkdir(exist_ok=True)
    settings = root / ".vscode" / "settings.json"
    settings.write_text("{}\n")
    return settings


# -- FILE-15: a record that would remove protected paths --------------------------------------------


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_a_forged_record_committed_to_a_repository_removes_nothing_in_a_clone_file_15(tmp_path):
    # The review's reproduction: the record is committed (git add -f), the repository cloned, and the
    # clone opened by a real surface. Everything in a fresh checkout is newer than the record, so the
    # ctime bound alone let it strip .git and .vscode; the seal refuses it.
    origin = tmp_path / "origin"
    origin.mkdir()
    _git(origin, "init", "-q")
    _vscode(origin)
    _txn(origin).mkdir(parents=True)
    (_txn(origin) / f"{TOKEN}.json").write_bytes(FORGED)
    _git(origin, "add", "-A")
    _git(origin, "add", "-f", ".steerable")
    _git(origin, "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "a record")
    _git(tmp_path, "clone", "-q", str(origin), "clone")
    clone = tmp_path / "clone"
    listed = steerable_call(clone, "list_dir", '{"path": "."}', timeout=60)
    assert listed.returncode == 0, listed.stderr
    assert "removed protected paths" not in listed.stderr
    assert (
        f"steerable: ignored the journal record .steerable/txn/{TOKEN}.json: its seal does not check "
        in listed.stderr
    )
    assert "nothing was deleted or restored from it" in listed.stderr
    assert _git(clone, "remote", "-v").stdout.startswith("origin\t")
    assert (clone / ".git" / "config").is_file() and (clone / ".git" / "hooks").is_dir()
    assert (clone / ".vscode" / "settings.json").read_text() == "{}\n"
    # moved aside, so the next start says nothing more
    assert sorted(p.name for p in _txn(clone).iterdir()) == [f"{TOKEN}.json.untrusted"]
    again = steerable_call(clone, "list_dir", '{"path": "."}', timeout=60)
    assert again.returncode == 0 and "journal record" not in again.stderr, again.stderr


def test_the_reproductions_record_in_place_removes_nothing_file_15(tmp_path):
    # The same in-process, with protected entries that are all newer than the record
    (tmp_path / ".git").mkdir()
    _txn(tmp_path).mkdir(parents=True)
    (_txn(tmp_path) / f"{TOKEN}.json").write_bytes(FORGED)
    (tmp_path / ".git" / "config").write_text('[remote "origin"]\n\turl = x\n')
    (tmp_path / ".git" / "hooks").mkdir()
    settings = _vscode(tmp_path)
    reopened = Workspace(tmp_path)
    assert reopened.recovered == []
    assert (tmp_path / ".git" / "config").read_text() == '[remote "origin"]\n\turl = x\n'
    assert (tmp_path / ".git" / "hooks").is_dir() and settings.read_text() == "{}\n"
    assert (_txn(tmp_path) / f"{TOKEN}.json.untrusted").read_bytes() == FORGED  # kept, moved aside


def test_a_genuine_record_copied_to_another_workspace_removes_nothing_there_file_15(tmp_path):
    # A record this user's steerable sealed for workspace a, copied into workspace b: the seal names
    # a's root, so b's start never acts on it. The control shows the same record sealed for b would.
    a, b, control = tmp_path / "a", tmp_path / "b", tmp_path / "control"
    for root in (a, b, control):
        root.mkdir()
    genuine = sealed_record(a, TOKEN, [{"v": 2, "op": "bash"}, {"protected": []}])
    _txn(b).mkdir(parents=True)
    shutil.copyfile(genuine, _txn(b) / f"{TOKEN}.json")
    sealed_record(control, TOKEN, [{"v": 2, "op": "bash"}, {"protected": []}])
    copied, controlled = _vscode(b), _vscode(control)  # changed right after the record: "during its run"

    Workspace(b)
    assert copied.read_text() == "{}\n"
    assert (_txn(b) / f"{TOKEN}.json.untrusted").exists()

    opened = Workspace(control)  # the same record, genuine here: its run's plant goes
    assert not controlled.exists()
    assert opened.recovered == [
        "removed protected paths an interrupted bash call changed (its process died before putting them "
        "back): .vscode"
    ]


def test_a_record_sealed_under_another_key_removes_nothing_file_15(tmp_path):
    # Another user's (or another machine's) key: the record names this workspace and this token, but
    # the key is not this user's
    other = JournalKey(secrets.token_bytes(32), tmp_path / "elsewhere" / KEY_FILE)
    (tmp_path / "ws").mkdir()
    root = tmp_path / "ws"
    sealed_record(root, TOKEN, [{"v": 2, "op": "bash"}, {"protected": []}], key=other)
    settings = _vscode(root)
    assert Workspace(root).recovered == []
    assert settings.read_text() == "{}\n"
    assert [p.name for p in _txn(root).iterdir()] == [f"{TOKEN}.json.untrusted"]


async def test_a_bash_record_is_sealed_with_the_key_of_the_environments_state_directory_file_15(tmp_path):
    # bash and run_code seal their record with the key of the state directory they were given (the
    # sidecar's --state-dir reaches them through STEERABLE_STATE_DIR); a workspace on that state
    # directory recovers it, one on another refuses it. The record is copied while the run holds it,
    # and put back after, as a killed process leaves it.
    root = tmp_path / "ws"
    root.mkdir()
    state = tmp_path / "state"
    backend: SandboxBackend = object()  # type: ignore[assignment]  # neither bwrap nor Landlock: no binds
    async with guard_protected_paths(root, backend, allow=False, environ={"STEERABLE_STATE_DIR": str(state)}):
        (record,) = [p for p in _txn(root).iterdir() if p.suffix == ".json"]
        left = record.read_bytes()
    assert (state / KEY_FILE).exists()
    for keys, removed in ((tmp_path / "other-state", False), (state, True)):
        record.write_bytes(left)
        (root / ".mcp.json").write_text("{}\n")  # planted during the run
        Workspace(root, state_dir=keys)
        assert (root / ".mcp.json").exists() != removed


# -- FILE-13: a record that would write or delete files -------------------------------------------------


def _forged_patch(root: Path) -> None:
    """A patch record and its marker, as a repository or a command could leave them (unsealed)."""
    (root / "victim.txt").write_text("keep\n")
    (root / "target.txt").write_text("mine\n")
    (root / ".steerable-aaaaaaaaaaaaaaaa.tmp").write_text("evil\n")
    (root / "emptydir").mkdir(exist_ok=True)
    entries = [
        {"target": "victim.txt", "temp": None, "before": version_of(b"keep\n"), "after": None},
        {
            "target": "target.txt",
            "temp": ".steerable-aaaaaaaaaaaaaaaa.tmp",
            "before": version_of(b"mine\n"),
            "after": version_of(b"evil\n"),
        },
    ]
    lines = [
        {"v": 2, "op": "apply_patch"},
        {"temp": ".steerable-aaaaaaaaaaaaaaaa.tmp"},
        {"dir": "emptydir"},
        {"commit": entries},
    ]
    _txn(root).mkdir(parents=True, exist_ok=True)
    (_txn(root) / "commits").mkdir(exist_ok=True)
    body = "".join(f"{'0' * 64} {json.dumps(line)}\n" for line in lines)  # a MAC that checks nothing
    (_txn(root) / f"{TOKEN}.json").write_text(body)
    (_txn(root) / "commits" / f"{TOKEN}.json").write_text("")


def _untouched(root: Path) -> None:
    assert (root / "victim.txt").read_text() == "keep\n"
    assert (root / "target.txt").read_text() == "mine\n"
    assert (root / ".steerable-aaaaaaaaaaaaaaaa.tmp").read_text() == "evil\n"
    assert (root / "emptydir").is_dir()
    assert (_txn(root) / f"{TOKEN}.json.untrusted").exists()


def test_a_forged_patch_record_writes_and_deletes_nothing_at_the_next_start_file_13(tmp_path):
    _forged_patch(tmp_path)
    assert Workspace(tmp_path).recovered == []
    _untouched(tmp_path)
    assert not (_txn(tmp_path) / "commits").exists()  # its marker, steerable's own, names no patch of ours


async def test_a_forged_patch_record_is_not_finished_by_a_running_process_file_13(tmp_path):
    # issue 28's path: a running process finds the marker before a read and a write, and settles it
    running = Workspace(tmp_path)
    _forged_patch(tmp_path)
    read = await running.read_file("victim.txt")
    assert read["content"] == "keep\n"
    _untouched(tmp_path)
    _forged_patch(tmp_path)  # again, found this time by a write holding its locks
    await running.write_file("other.txt", "x\n")
    assert running.recovered == []
    _untouched(tmp_path)


def test_a_genuine_record_with_a_torn_last_line_is_still_recovered_file_13(tmp_path):
    # The writer died while appending a line: the lines before it still check
    (tmp_path / "a.txt").write_text("old\n")
    ws = Workspace(tmp_path, require_read_before_write=False)
    intent = ws.begin_intent("apply_patch")
    _stage(ws, intent, {tmp_path / "a.txt": b"new\n"}, {}, [], {})
    intent.abandon()
    (record,) = [p for p in _txn(tmp_path).iterdir() if p.suffix == ".json"]
    with record.open("ab") as handle:
        handle.write(b'3f2a {"temp": ".steer')
    assert Workspace(tmp_path).recovered == [
        "removed 1 temp file(s) of an interrupted apply_patch (its process died before changing any file: "
        "nothing was applied)"
    ]
    assert (tmp_path / "a.txt").read_text() == "old\n"
    assert list(tmp_path.glob(".steerable-*.tmp")) == [] and list(_txn(tmp_path).iterdir()) == []


def test_a_genuine_record_edited_after_sealing_is_read_only_up_to_the_edit_file_13(tmp_path):
    # A command rewrites the commit line of a genuine record to delete another file: that line, and
    # every line after it, no longer checks; what came before (the patch's temp files) is settled
    (tmp_path / "c.txt").write_text("old\n")
    committed_patch(tmp_path, ("a.txt", "b.txt"))
    (record,) = [p for p in _txn(tmp_path).iterdir() if p.suffix == ".json"]
    victim = {"target": "c.txt", "temp": None, "before": version_of(b"old\n"), "after": None}
    lines = record.read_bytes().splitlines(keepends=True)
    mac, _, _ = lines[-1].partition(b" ")
    lines[-1] = mac + b" " + json.dumps({"commit": [victim]}).encode() + b"\n"
    record.write_bytes(b"".join(lines))
    reopened = Workspace(tmp_path)
    assert [(tmp_path / n).read_text() for n in ("a.txt", "b.txt", "c.txt")] == ["old\n"] * 3
    assert reopened.recovered == [
        "removed 2 temp file(s) of an interrupted apply_patch (its process died before changing any file: "
        "nothing was applied)"
    ]


# -- the key -------------------------------------------------------------------------------------------


def test_the_journal_key_is_made_once_private_to_its_user(tmp_path):
    state = tmp_path / "state"
    key = journal_key(state)
    assert key is not None and journal_key(state) is key  # resolved once per process
    info = os.lstat(state / KEY_FILE)
    assert stat.S_IMODE(info.st_mode) == 0o600 and info.st_size == 32
    assert stat.S_IMODE(os.stat(state).st_mode) == 0o700
    assert "journal.key" in repr(key) and (state / KEY_FILE).read_bytes().hex() not in repr(key)
    assert list(state.iterdir()) == [state / KEY_FILE]  # no temp file left


@pytest.mark.parametrize("planted", ["symlink", "open to others", "not a key"])
def test_a_key_file_that_is_not_this_users_secret_is_refused_and_nothing_recovered_file_15(tmp_path, planted):
    # A key that could be read or planted through a link is no secret: no key, so recovery acts on no
    # record (and leaves every record in place for a start that has one)
    state = tmp_path / "state"
    state.mkdir()
    if planted == "symlink":
        (tmp_path / "k").write_bytes(os.urandom(32))
        os.chmod(tmp_path / "k", 0o600)
        os.symlink(tmp_path / "k", state / KEY_FILE)
    else:
        (state / KEY_FILE).write_bytes(os.urandom(32 if planted == "open to others" else 40))
        os.chmod(state / KEY_FILE, 0o644 if planted == "open to others" else 0o600)
    assert journal_key(state) is None
    root = tmp_path / "ws"
    root.mkdir()
    (_txn(root)).mkdir(parents=True)
    (_txn(root) / f"{TOKEN}.json").write_bytes(FORGED)
    settings = _vscode(root)
    assert Workspace(root, state_dir=state).recovered == []
    assert settings.read_text() == "{}\n"
    assert [p.name for p in _txn(root).iterdir()] == [f"{TOKEN}.json"]  # left as it is
