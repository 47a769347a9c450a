"""Read-before-write state and the CAS gate (FILE-1..FILE-10)."""

import os
import time
from typing import Any

import pytest

from steerable_agent_runtime import ConfigError, ReadFileState, version_of, workspace_tools_for_cwd


async def test_read_returns_sha256_of_the_full_content_file_1(session):
    session.write_raw("a.txt", b"alpha\nbeta\n")
    data = await session.read("a.txt", offset=2, limit=1)
    assert data["content"] == "beta\n"
    assert data["version"] == version_of(b"alpha\nbeta\n")


async def test_expected_version_mismatch_is_rejected_file_2(session):
    session.write_raw("a.txt", b"one\n")
    result = await session("write_file", path="a.txt", content="two\n", expectedVersion="0" * 64)
    assert result.success is False and result.needs_followup is True
    assert result.data["code"] == "conflict"
    assert (
        result.error
        == "a.txt changed since version 000000000000; read it again, then write with the new version"
    )
    assert session.raw("a.txt") == b"one\n"


async def test_a_truncated_expected_version_says_what_a_version_is_file_2(session):
    session.write_raw("a.txt", b"one\n")
    short = version_of(b"one\n")[:12]
    result = await session("write_file", path="a.txt", content="two\n", expectedVersion=short)
    assert result.success is False and result.data["code"] == "conflict"
    assert result.error == (
        f"expectedVersion '{short}' is not a version: pass the whole 64-character version read_file "
        "returned, or leave expectedVersion out"
    )
    assert session.raw("a.txt") == b"one\n"


async def test_explicit_expected_version_passes_without_a_tracked_read_file_2(session):
    session.write_raw("a.txt", b"one\n")
    result = await session("write_file", path="a.txt", content="two\n", expectedVersion=version_of(b"one\n"))
    assert result.success, result.error
    assert session.raw("a.txt") == b"two\n"


async def test_own_writes_refresh_the_state_so_iterative_editing_works_file_3(session):
    session.write_raw("a.txt", b"v1\n")
    await session.read("a.txt")
    for n in range(2, 6):
        result = await session("write_file", path="a.txt", content=f"v{n}\n")
        assert result.success, result.error
        assert session.workspace.state.get("a.txt").version == result.data["version"] == version_of(f"v{n}\n")
    edit = await session("edit_file", path="a.txt", edits=[{"oldText": "v5", "newText": "v6"}])
    assert edit.success and session.workspace.state.get("a.txt").version == edit.data["version"]
    patch = await session(
        "apply_patch", patch="*** Begin Patch\n*** Update File: a.txt\n@@\n-v6\n+v7\n*** End Patch"
    )
    assert patch.success, patch.error
    assert (
        session.workspace.state.get("a.txt").version == patch.data["versions"]["a.txt"] == version_of("v7\n")
    )


async def test_outside_change_after_read_is_a_conflict_file_4(session):
    session.write_raw("a.txt", b"mine\n")
    data = await session.read("a.txt")
    session.write_raw("a.txt", b"someone else's\n")
    cases: list[tuple[str, dict[str, Any]]] = [
        ("write_file", {"content": "x\n"}),
        ("edit_file", {"edits": [{"oldText": "else", "newText": "other"}]}),
    ]
    for name, args in cases:
        result = await session(name, path="a.txt", **args)
        assert result.success is False and result.needs_followup is True
        assert result.data["code"] == "conflict"
        assert result.data["expectedVersion"] == data["version"]
        assert "was modified outside this session since you read it" in result.error
        assert result.error.endswith("read it again, then write with the new version")
    assert session.raw("a.txt") == b"someone else's\n"


async def test_vanished_file_is_a_plain_create_and_new_files_are_never_gated_file_5(session):
    session.write_raw("gone.txt", b"old\n")
    await session.read("gone.txt")
    (session.root / "gone.txt").unlink()
    result = await session("write_file", path="gone.txt", content="new\n")
    assert result.success and result.data["created"] is True
    fresh = await session("write_file", path="dir/new.txt", content="hi\n")
    assert fresh.success and fresh.data["created"] is True
    assert session.raw("dir/new.txt") == b"hi\n"


async def test_state_lives_in_the_tool_owning_process_file_6(tmp_path, make_session):
    state = ReadFileState()
    (tmp_path / "a.txt").write_text("x\n", encoding="utf-8")
    first = make_session(tmp_path, state=state)
    await first.read("a.txt")
    # A second router in the same process sharing the state (e.g. after compaction) can write.
    second = make_session(tmp_path, state=state)
    assert (await second("write_file", path="a.txt", content="y\n")).success


async def test_unread_existing_file_is_refused_with_the_fix_file_8(session):
    session.write_raw("a.txt", b"precious\n")
    cases: list[tuple[str, dict[str, Any]]] = [
        ("write_file", {"content": "x"}),
        ("edit_file", {"edits": [{"oldText": "precious", "newText": "gone"}]}),
    ]
    for name, args in cases:
        result = await session(name, path="a.txt", **args)
        assert result.to_wire() == {
            "success": False,
            "needsFollowup": True,
            "error": "a.txt already exists and has not been read in this session; "
            "read it first, then write with the read version (expectedVersion)",
            "data": {"code": "not_read", "path": "a.txt"},
        }
    assert session.raw("a.txt") == b"precious\n"


@pytest.mark.parametrize("value", ["0", "false", "off", "no"])
async def test_gate_opt_out_by_env_file_8(tmp_path, monkeypatch, value, make_session):
    monkeypatch.setenv("STEERABLE_REQUIRE_READ_BEFORE_WRITE", value)
    (tmp_path / "a.txt").write_text("x\n", encoding="utf-8")
    session = make_session(tmp_path)
    assert (await session("write_file", path="a.txt", content="y\n")).success
    # The CAS still holds once the file has been read.
    await session.read("a.txt")
    session.write_raw("a.txt", b"z\n")
    assert (await session("write_file", path="a.txt", content="w\n")).data["code"] == "conflict"


def test_invalid_gate_env_value_fails_loud_naming_the_variable(tmp_path, monkeypatch):
    monkeypatch.setenv("STEERABLE_REQUIRE_READ_BEFORE_WRITE", "maybe")
    with pytest.raises(ConfigError, match="STEERABLE_REQUIRE_READ_BEFORE_WRITE='maybe' is not a boolean"):
        workspace_tools_for_cwd(tmp_path)


async def test_touch_with_identical_content_is_not_a_conflict_file_9(session):
    session.write_raw("a.txt", b"same\n")
    await session.read("a.txt")
    future = time.time() + 100
    os.utime(session.root / "a.txt", (future, future))
    assert (await session("write_file", path="a.txt", content="changed\n")).success


async def test_same_mtime_content_change_is_a_conflict_file_9(session):
    session.write_raw("a.txt", b"aaaa\n")
    stat = (session.root / "a.txt").stat()
    await session.read("a.txt")
    session.write_raw("a.txt", b"bbbb\n")  # same size
    os.utime(session.root / "a.txt", ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert (session.root / "a.txt").stat().st_mtime_ns == stat.st_mtime_ns
    result = await session("write_file", path="a.txt", content="c\n")
    assert result.data["code"] == "conflict"


async def test_clipped_read_is_partial_and_blocks_blind_overwrite_file_10(session):
    big = "".join(f"line {n:06d} {'x' * 40}\n" for n in range(4000))  # ~200k chars
    session.write_raw("big.txt", big.encode())
    data = await session.read("big.txt")
    assert data["partial"] is True and len(data["content"]) < 101_000
    # the lines left out, by their numbers in the file (whole lines: 1415 at the head, 471 at the tail)
    assert "[... 112042 characters omitted from line 1416 to line 3529 (display clipped" in data["content"]
    assert data["content"].startswith("line 000000") and data["content"].endswith(f"line 003999 {'x' * 40}\n")
    blind = await session("write_file", path="big.txt", content="tiny\n")
    assert blind.data["code"] == "partial_read"
    assert blind.error == (
        "you have only seen part of big.txt (the read was clipped or ranged), so a full overwrite would "
        "destroy lines you never saw; use edit_file or apply_patch for targeted changes, or read the whole "
        "file first (a file over the display limit can only be changed that way)"
    )
    edit = await session(
        "edit_file", path="big.txt", edits=[{"oldText": "line 002000", "newText": "LINE 2000"}]
    )
    assert edit.success, edit.error
    # An edit shows only what it changed: the view stays partial, so the blind overwrite is still
    # refused (a file over the display limit can be changed only by edits and patches).
    assert (await session("write_file", path="big.txt", content="tiny\n")).data["code"] == "partial_read"
    x40 = "x" * 40
    patch = (
        f"*** Begin Patch\n*** Update File: big.txt\n@@\n-LINE 2000 {x40}\n+line 2000 {x40}\n*** End Patch"
    )
    assert (await session("apply_patch", patch=patch)).success
    delete = await session("apply_patch", patch="*** Begin Patch\n*** Delete File: big.txt\n*** End Patch")
    assert delete.data["code"] == "partial_read"


async def test_refusals_never_hand_out_the_current_version_file_8(session):
    # Echoing a version from a refusal back as expectedVersion must not open the gate.
    session.write_raw("secret.txt", b"unseen\n")
    refused = await session("write_file", path="secret.txt", content="pwned")
    assert refused.data == {"code": "not_read", "path": "secret.txt"}
    assert version_of(b"unseen\n") not in (refused.error or "")
    session.write_raw("seen.txt", b"v1\n")
    await session.read("seen.txt", limit=1)
    session.write_raw("seen.txt", b"v2 changed outside\n")
    conflict = await session("write_file", path="seen.txt", content="pwned")
    assert conflict.data["code"] == "conflict"
    assert version_of(b"v2 changed outside\n") not in str(conflict.to_wire())
    assert session.raw("secret.txt") == b"unseen\n" and session.raw("seen.txt") == b"v2 changed outside\n"


async def test_ranged_read_is_partial_but_a_full_read_clears_it_file_10(session):
    session.write_raw("a.txt", b"1\n2\n3\n")
    assert (await session.read("a.txt", limit=1))["partial"] is True
    assert (await session("write_file", path="a.txt", content="x")).data["code"] == "partial_read"
    assert (await session.read("a.txt"))["partial"] is False
    assert (await session.read("a.txt", limit=1))["partial"] is True  # display is partial...
    assert (await session("write_file", path="a.txt", content="x")).success  # ...but the full view stands


async def test_concurrent_writes_to_one_path_are_serialised(session):
    import asyncio

    session.write_raw("a.txt", b"0\n")
    await session.read("a.txt")
    results = await asyncio.gather(
        *[session("write_file", path="a.txt", content=f"{n}\n") for n in range(1, 9)]
    )
    # The first write wins against the read version; each later one sees the previous own write
    # as the tracked state, so every write lands in order with no lost update or torn file.
    assert all(r.success for r in results), [r.error for r in results]
    assert session.raw("a.txt") == b"8\n"


async def test_replace_all_cannot_reach_unseen_lines_after_a_partial_view_file_10(session):
    session.write_raw("p.txt", b"seen line\nunseen A\nunseen B secret\n")
    await session.read("p.txt", limit=1)
    wipe = await session("edit_file", path="p.txt", old_string="e", new_string="", replace_all=True)
    assert wipe.data["code"] == "partial_read" and wipe.needs_followup is True
    assert wipe.error.startswith("edits[0] would replace 9 places, but you have only seen part of the file;")
    assert session.raw("p.txt") == b"seen line\nunseen A\nunseen B secret\n"
    # A single-place edit (what the model quoted) is still fine, replace_all or not.
    one = await session(
        "edit_file", path="p.txt", old_string="seen line", new_string="SEEN", replace_all=True
    )
    assert one.success and session.raw("p.txt") == b"SEEN\nunseen A\nunseen B secret\n"
    # After a full read, replace_all works across the file.
    await session.read("p.txt")
    assert (
        await session("edit_file", path="p.txt", old_string="unseen", new_string="seen", replace_all=True)
    ).success
