"""apply_patch at the file layer, and the Codex scenarios as a conformance suite (FILE-11, FILE-3, FILE-8).

Every peer scenario runs through the real tool on a real directory. A session following our
rules reads every input file first (the read-before-write gate), then applies the patch. Three
scenarios deliberately differ, because our safety rules differ from Codex's:

* 010 (Move to onto an existing file) and 011 (Add File onto an existing file): Codex overwrites
  silently; we refuse with ``file_exists`` and leave the tree as it was.
* 015 (failure after partial success): Codex keeps the earlier operations; we are atomic, so the
  tree is left exactly as it was.
"""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from peer_data import peer_dir
from steerable_agent_runtime import version_of

PEER = peer_dir("codex-apply-patch")
INDEX = json.loads((PEER / "scenarios_index.json").read_text(encoding="utf-8"))["scenarios"]

# scenario -> (expected error code, tree stays as input) where our rules deliberately differ
DIFFERENCES = {
    "010_move_overwrites_existing_destination": "file_exists",
    "011_add_overwrites_existing_file": "file_exists",
    "015_failure_after_partial_success_leaves_changes": "file_not_found",
}


def snapshot(root: Path) -> dict[str, bytes | None]:
    tree: dict[str, bytes | None] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if rel == ".steerable" or rel.startswith(".steerable/"):
            continue  # steerable's lock and journal
        tree[rel] = path.read_bytes() if path.is_file() else None
    return tree


@pytest.mark.parametrize("scenario", INDEX, ids=[s["id"] for s in INDEX])
async def test_codex_scenario(scenario, session):
    folder = PEER / "scenarios" / scenario["id"]
    if (folder / "input").exists():
        shutil.copytree(folder / "input", session.root, dirs_exist_ok=True)
    for path in sorted(session.root.rglob("*")):
        if path.is_file():
            await session.read(path.relative_to(session.root).as_posix())
    before = snapshot(session.root)
    patch = (folder / "patch.txt").read_text(encoding="utf-8")
    result = await session("apply_patch", patch=patch)
    after = snapshot(session.root)
    if scenario["id"] in DIFFERENCES:
        assert result.success is False
        assert result.data["code"] == DIFFERENCES[scenario["id"]]
        assert after == before, "our apply_patch is atomic and never overwrites silently"
        return
    expected = snapshot(folder / "expected") if (folder / "expected").exists() else {}
    assert after == expected
    if after == before:  # a rejected scenario
        assert result.success is False and result.needs_followup is True
    else:
        assert result.success, result.error


async def test_atomic_across_files_second_file_fails(session):
    session.write_raw("a.txt", b"a1\n")
    session.write_raw("b.txt", b"b1\n")
    await session.read("a.txt")
    await session.read("b.txt")
    patch = (
        "*** Begin Patch\n*** Update File: a.txt\n@@\n-a1\n+a2\n"
        "*** Update File: b.txt\n@@\n-not there\n+b2\n*** Add File: c.txt\n+c\n*** End Patch"
    )
    result = await session("apply_patch", patch=patch)
    assert result.success is False and result.data["code"] == "context_not_found"
    assert session.raw("a.txt") == b"a1\n" and session.raw("b.txt") == b"b1\n"
    assert not (session.root / "c.txt").exists()
    # The session state still holds the pre-patch versions: a retry needs no re-read.
    assert session.workspace.state.get("a.txt").version == version_of(b"a1\n")


async def test_update_and_delete_need_a_read_first_file_8(session):
    session.write_raw("a.txt", b"a\n")
    update = await session(
        "apply_patch", patch="*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+b\n*** End Patch"
    )
    assert update.data["code"] == "not_read"
    assert "read it first" in update.error
    delete = await session("apply_patch", patch="*** Begin Patch\n*** Delete File: a.txt\n*** End Patch")
    assert delete.data["code"] == "not_read"
    assert session.raw("a.txt") == b"a\n"


async def test_update_after_outside_change_is_a_conflict_file_4(session):
    session.write_raw("a.txt", b"a\n")
    await session.read("a.txt")
    session.write_raw("a.txt", b"a\nmore\n")
    result = await session(
        "apply_patch", patch="*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+b\n*** End Patch"
    )
    assert result.data["code"] == "conflict"
    assert session.raw("a.txt") == b"a\nmore\n"


async def test_delete_after_partial_view_is_refused_but_update_allowed_file_10(session):
    session.write_raw("a.txt", b"1\n2\n3\n")
    await session.read("a.txt", limit=1)
    delete = await session("apply_patch", patch="*** Begin Patch\n*** Delete File: a.txt\n*** End Patch")
    assert delete.data["code"] == "partial_read"
    update = await session(
        "apply_patch", patch="*** Begin Patch\n*** Update File: a.txt\n@@\n-1\n+one\n*** End Patch"
    )
    assert update.success, update.error


async def test_result_shape_versions_moves_and_deletes_file_3(session):
    session.write_raw("src/old.py", b"x = 1\n")
    session.write_raw("gone.txt", b"bye\n")
    await session.read("src/old.py")
    await session.read("gone.txt")
    patch = (
        "*** Begin Patch\n*** Update File: src/old.py\n*** Move to: src/new.py\n@@\n-x = 1\n+x = 2\n"
        "*** Delete File: gone.txt\n*** Add File: docs/n.md\n+# N\n*** End Patch"
    )
    result = await session("apply_patch", patch=patch)
    assert result.success, result.error
    assert result.data["versions"] == {
        "src/new.py": version_of(b"x = 2\n"),
        "docs/n.md": version_of(b"# N\n"),
    }
    assert result.data["filesChanged"] == ["src/old.py", "src/new.py", "gone.txt", "docs/n.md"]
    assert result.data["deleted"] == ["src/old.py", "gone.txt"]
    assert result.data["moved"] == {"src/old.py": "src/new.py"}
    assert "-x = 1\n+x = 2\n" in result.data["diff"]
    assert (
        session.workspace.state.get("src/old.py") is None and session.workspace.state.get("gone.txt") is None
    )
    assert session.workspace.state.get("src/new.py").version == version_of(b"x = 2\n")


async def test_crlf_file_keeps_its_line_endings_through_a_patch(session):
    session.write_raw("w.txt", b"one\r\ntwo\r\n")
    await session.read("w.txt")
    result = await session(
        "apply_patch", patch="*** Begin Patch\n*** Update File: w.txt\n@@\n one\n-two\n+2\n*** End Patch"
    )
    assert result.success and session.raw("w.txt") == b"one\r\n2\r\n"


async def test_commit_failure_restores_already_replaced_files(session):
    # FILE-11, FILE-13: a rename that fails after an earlier one succeeded (here: b.txt is immutable, a
    # real EPERM from the kernel) puts the earlier file back; nothing is left half-applied or behind.
    session.write_raw("a.txt", b"a\n")
    session.write_raw("b.txt", b"b\n")
    await session.read("a.txt")
    await session.read("b.txt")
    chattr = subprocess.run(["chattr", "+i", str(session.root / "b.txt")], capture_output=True, text=True)
    if chattr.returncode != 0:
        pytest.skip(f"chattr +i is not available here: {chattr.stderr.strip()}")
    try:
        patch = (
            "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+A\n"
            "*** Update File: b.txt\n@@\n-b\n+B\n*** End Patch"
        )
        result = await session("apply_patch", patch=patch)
    finally:
        subprocess.run(["chattr", "-i", str(session.root / "b.txt")], check=True)
    assert result.data["code"] == "write_failed"
    assert result.error == "could not apply the patch: Operation not permitted (b.txt); nothing was changed"
    assert session.raw("a.txt") == b"a\n" and session.raw("b.txt") == b"b\n"
    assert session.names() == ["a.txt", "b.txt"] and session.leftovers() == []


async def test_invalid_patch_error_names_the_line(session):
    result = await session("apply_patch", patch="*** Begin Patch\nfoo\n*** End Patch")
    assert result.success is False and result.needs_followup is True
    assert result.data["code"] == "invalid_patch"
    assert result.error.startswith(
        "line 2: expected '*** Add File:', '*** Delete File:' or '*** Update File:'"
    )


@pytest.mark.parametrize(
    "patch",
    [
        "*** Begin Patch\n*** Update File: big.txt\n@@\n-line 1\n+LINE 1\n"
        "*** Delete File: big.txt\n*** End Patch",
        "*** Begin Patch\n*** Update File: big.txt\n*** Move to: moved.txt\n@@\n-line 1\n+LINE 1\n"
        "*** Delete File: moved.txt\n*** End Patch",
    ],
    ids=["update-then-delete", "move-then-delete"],
)
async def test_a_partial_view_cannot_be_deleted_through_earlier_ops_in_the_patch_file_10(session, patch):
    original = "".join(f"line {n}\n" for n in range(1, 11)).encode()
    session.write_raw("big.txt", original)
    await session.read("big.txt", limit=1)
    result = await session("apply_patch", patch=patch)
    assert result.data["code"] == "partial_read"
    assert session.raw("big.txt") == original and not (session.root / "moved.txt").exists()


async def test_a_file_added_by_the_patch_may_be_deleted_by_it(session):
    patch = "*** Begin Patch\n*** Add File: tmp.txt\n+x\n*** Delete File: tmp.txt\n*** End Patch"
    result = await session("apply_patch", patch=patch)
    assert result.success, result.error
    assert not (session.root / "tmp.txt").exists()


async def test_move_keeps_the_file_mode_and_rollback_restores_modes_and_dirs(session):
    import stat

    session.write_raw("run.sh", b"echo hi\n")
    os.chmod(session.root / "run.sh", 0o750)
    session.write_raw("f.txt", b"x\n")
    await session.read("run.sh")
    await session.read("f.txt")
    failing = (
        "*** Begin Patch\n*** Delete File: run.sh\n*** Add File: e/deep/new.txt\n+n\n"
        "*** Add File: f.txt/child\n+c\n*** End Patch"
    )
    result = await session("apply_patch", patch=failing)
    assert result.success is False and result.data["code"] == "not_a_directory"
    assert stat.S_IMODE((session.root / "run.sh").stat().st_mode) == 0o750
    assert session.raw("run.sh") == b"echo hi\n"
    assert not (session.root / "e").exists()  # directories the failed patch created are gone
    moved = await session(
        "apply_patch",
        patch="*** Begin Patch\n*** Update File: run.sh\n*** Move to: bin/run2.sh\n"
        "@@\n-echo hi\n+echo ho\n*** End Patch",
    )
    assert moved.success, moved.error
    assert stat.S_IMODE((session.root / "bin/run2.sh").stat().st_mode) == 0o750


@pytest.mark.parametrize("path", ["a.txt/", "dir/.", "dir/.."])
async def test_patch_paths_naming_directories_are_refused(session, path):
    session.write_raw("a.txt", b"a\n")
    (session.root / "dir").mkdir()
    await session.read("a.txt")
    for patch in (
        f"*** Begin Patch\n*** Delete File: {path}\n*** End Patch",
        f"*** Begin Patch\n*** Add File: {path}\n+x\n*** End Patch",
    ):
        result = await session("apply_patch", patch=patch)
        assert result.needs_followup is True
        assert result.data["code"] in {"invalid_path", "is_directory", "file_exists"}, result.error
    assert session.raw("a.txt") == b"a\n"
    assert session.names() == ["a.txt", "dir"] and session.names("dir") == []
    assert session.leftovers() == []
