"""Workspace confinement attacks (FILE-11): .., absolute paths, symlinks out, NUL bytes."""

import os

import pytest


@pytest.fixture
def outside(tmp_path):
    secret = tmp_path / "outside"
    secret.mkdir()
    (secret / "secret.txt").write_text("TOP SECRET\n", encoding="utf-8")
    return secret


ESCAPES = ["../outside/secret.txt", "sub/../../outside/secret.txt", "./../outside/secret.txt"]


@pytest.mark.parametrize("path", ESCAPES)
async def test_dotdot_is_refused(session, outside, path):
    for name, args in [("read_file", {}), ("write_file", {"content": "pwned"}), ("list_dir", {})]:
        result = await session(name, path=path, **args)
        assert result.success is False and result.needs_followup is True
        assert result.data["code"] == "path_outside_workspace"
        assert "resolves outside the workspace" in result.error
    assert (outside / "secret.txt").read_text(encoding="utf-8") == "TOP SECRET\n"


async def test_absolute_paths_outside_are_refused_and_inside_accepted(session, outside):
    result = await session("read_file", path=str(outside / "secret.txt"))
    assert result.data["code"] == "path_outside_workspace"
    assert (await session("read_file", path="/etc/passwd")).data["code"] == "path_outside_workspace"
    session.write_raw("in.txt", b"ok\n")
    inside = await session("read_file", path=str(session.root / "in.txt"))
    assert inside.success and inside.data["path"] == "in.txt"


async def test_symlinked_file_pointing_outside_is_refused(session, outside):
    os.symlink(outside / "secret.txt", session.root / "link.txt")
    assert (await session("read_file", path="link.txt")).data["code"] == "path_outside_workspace"
    write = await session("write_file", path="link.txt", content="pwned")
    assert write.data["code"] == "path_outside_workspace"
    assert (outside / "secret.txt").read_text(encoding="utf-8") == "TOP SECRET\n"


async def test_symlinked_directory_pointing_outside_is_refused(session, outside):
    os.symlink(outside, session.root / "linkdir")
    assert (await session("read_file", path="linkdir/secret.txt")).data["code"] == "path_outside_workspace"
    created = await session("write_file", path="linkdir/new.txt", content="x")
    assert created.data["code"] == "path_outside_workspace"
    assert not (outside / "new.txt").exists()
    patch = "*** Begin Patch\n*** Add File: linkdir/evil.txt\n+x\n*** End Patch"
    assert (await session("apply_patch", patch=patch)).data["code"] == "path_outside_workspace"
    assert not (outside / "evil.txt").exists()


async def test_dangling_symlink_out_is_refused(session, outside):
    os.symlink(outside / "not-yet.txt", session.root / "dangling.txt")
    result = await session("write_file", path="dangling.txt", content="x")
    assert result.data["code"] == "path_outside_workspace"
    assert not (outside / "not-yet.txt").exists()


async def test_symlink_inside_the_workspace_is_followed(session):
    session.write_raw("real.txt", b"real\n")
    os.symlink(session.root / "real.txt", session.root / "alias.txt")
    data = await session.read("alias.txt")
    assert data["path"] == "real.txt"  # state is keyed by the real path
    assert (await session("write_file", path="alias.txt", content="changed\n")).success
    assert (session.root / "alias.txt").is_symlink()
    assert session.raw("real.txt") == b"changed\n"


@pytest.mark.parametrize("path", ["", "   ", "a\x00b"])
async def test_invalid_paths(session, path):
    result = await session("read_file", path=path)
    assert result.data["code"] == "invalid_path"


async def test_moves_out_of_the_workspace_are_refused(session, outside):
    session.write_raw("a.txt", b"a\n")
    await session.read("a.txt")
    patch = (
        "*** Begin Patch\n*** Update File: a.txt\n*** Move to: ../outside/a.txt\n@@\n-a\n+b\n*** End Patch"
    )
    assert (await session("apply_patch", patch=patch)).data["code"] == "path_outside_workspace"
    assert session.raw("a.txt") == b"a\n" and not (outside / "a.txt").exists()


async def test_allow_outside_opt_in_for_jailed_runs(tmp_path, outside, make_session):
    root = tmp_path / "ws"
    root.mkdir()
    session = make_session(root, allow_outside=True)
    data = await session.read("../outside/secret.txt")
    assert data["content"] == "TOP SECRET\n" and data["path"] == str(outside / "secret.txt")


async def test_search_tools_do_not_follow_symlinks_out(session, outside):
    os.symlink(outside, session.root / "linkdir")
    os.symlink(outside / "secret.txt", session.root / "link.txt")
    session.write_raw("mine.txt", b"SECRET? no\n")
    grep = await session("grep", pattern="SECRET")
    assert [m["path"] for m in grep.data["matches"]] == ["mine.txt"]
    glob = await session("glob", pattern="**/*.txt")
    assert glob.data["files"] == ["mine.txt"]
    assert (await session("glob", pattern="../*")).data["code"] == "invalid_pattern"


async def test_directory_swapped_for_a_symlink_after_the_check_is_not_followed(session, outside, monkeypatch):
    # TOCTOU: the path is checked, then (before the write) a directory becomes a symlink out.
    (session.root / "sub").mkdir()
    ws_root = session.workspace.root
    real_resolve = type(ws_root).resolve

    def resolve_then_swap(self, path):
        resolved = real_resolve(self, path)
        sub = session.root / "sub"
        if sub.is_dir() and not sub.is_symlink():
            sub.rmdir()
            os.symlink(outside, sub)
        return resolved

    monkeypatch.setattr(type(ws_root), "resolve", resolve_then_swap)
    result = await session("write_file", path="sub/new.txt", content="pwned")
    assert result.success is False and result.data["code"] == "path_changed"
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]  # nothing landed outside


async def test_file_swapped_for_a_symlink_after_the_check_is_not_read(session, outside, monkeypatch):
    session.write_raw("a.txt", b"mine\n")
    ws_root = session.workspace.root
    real_resolve = type(ws_root).resolve

    def resolve_then_swap(self, path):
        resolved = real_resolve(self, path)
        (session.root / "a.txt").unlink()
        os.symlink(outside / "secret.txt", session.root / "a.txt")
        return resolved

    monkeypatch.setattr(type(ws_root), "resolve", resolve_then_swap)
    result = await session("read_file", path="a.txt")
    assert result.data["code"] == "not_a_file"
    assert "TOP SECRET" not in (result.error or "")


async def test_deleting_or_moving_a_symlink_is_refused_and_the_target_kept(session):
    session.write_raw("important.txt", b"keep me\n")
    os.symlink("important.txt", session.root / "current.txt")
    await session.read("current.txt")
    delete = await session(
        "apply_patch", patch="*** Begin Patch\n*** Delete File: current.txt\n*** End Patch"
    )
    assert delete.data["code"] == "is_symlink"
    assert delete.error.startswith("*** Delete File: current.txt: current.txt is a symlink to important.txt;")
    move = await session(
        "apply_patch",
        patch="*** Begin Patch\n*** Update File: current.txt\n*** Move to: other.txt\n"
        "@@\n-keep me\n+moved\n*** End Patch",
    )
    assert move.data["code"] == "is_symlink"
    assert session.raw("important.txt") == b"keep me\n" and (session.root / "current.txt").is_symlink()


@pytest.mark.parametrize("path", ["q.txt/.", "q.txt/zz/..", "q.txt/x"])
async def test_paths_through_a_file_are_refused(session, path):
    session.write_raw("q.txt", b"keep\n")
    await session.read("q.txt")
    write = await session("write_file", path=path, content="pwned")
    assert write.data["code"] == "not_a_directory" and write.needs_followup is True
    delete = await session("apply_patch", patch=f"*** Begin Patch\n*** Delete File: {path}\n*** End Patch")
    assert delete.success is False
    assert session.raw("q.txt") == b"keep\n"
