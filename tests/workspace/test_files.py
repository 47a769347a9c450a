"""Byte-faithful reads and writes: encodings, line endings, BOM, modes, atomicity (FILE-11)."""

import ctypes
import dataclasses
import os
import stat

import pytest

from steerable_agent_runtime import Workspace, WorkspaceError, version_of
from steerable_agent_runtime.workspace import _rename


async def test_read_reports_lines_and_style(session):
    session.write_raw("crlf.txt", b"\xef\xbb\xbfone\r\ntwo\r\n")
    data = await session.read("crlf.txt")
    assert data == {
        "path": "crlf.txt",
        "content": "one\ntwo\n",
        "version": version_of(b"\xef\xbb\xbfone\r\ntwo\r\n"),
        "partial": False,
        "startLine": 1,
        "endLine": 2,
        "totalLines": 2,
        "lineEnding": "crlf",
        "bom": True,
    }
    # the content last: a host that keeps only the start of a long result still shows the path,
    # the version a later write needs, and whether this was all of the file
    assert list(data)[:3] == ["path", "version", "partial"] and list(data)[-1] == "content"


async def test_read_empty_file(session):
    session.write_raw("empty.txt", b"")
    data = await session.read("empty.txt")
    assert (data["content"], data["totalLines"], data["startLine"], data["partial"]) == ("", 0, 0, False)


async def test_offset_past_the_end_is_a_clear_error(session):
    session.write_raw("a.txt", b"1\n2\n")
    result = await session("read_file", path="a.txt", offset=10)
    assert result.needs_followup and result.error == "offset 10 is past the end of a.txt (2 lines)"


async def test_invalid_offset_is_an_argument_error(session):
    session.write_raw("a.txt", b"1\n")
    result = await session("read_file", path="a.txt", offset=0)
    assert result.data["errors"] == [
        {"field": "offset", "message": "Input should be greater than or equal to 1"}
    ]


async def test_crlf_and_bom_survive_write_and_edit_file_11(session):
    original = b"\xef\xbb\xbfa\r\nb\r\nc\r\n"
    session.write_raw("w.txt", original)
    await session.read("w.txt")
    assert (
        await session("edit_file", path="w.txt", edits=[{"oldText": "b\n", "newText": "B\nB2\n"}])
    ).success
    assert session.raw("w.txt") == b"\xef\xbb\xbfa\r\nB\r\nB2\r\nc\r\n"
    assert (await session("write_file", path="w.txt", content="x\ny\n")).success
    assert session.raw("w.txt") == b"\xef\xbb\xbfx\r\ny\r\n"


async def test_mixed_line_endings_are_left_alone(session):
    session.write_raw("mixed.txt", b"a\r\nb\nc\r\n")
    data = await session.read("mixed.txt")
    assert data["lineEnding"] == "lf" and data["content"] == "a\r\nb\nc\r\n"
    result = await session("edit_file", path="mixed.txt", edits=[{"oldText": "b", "newText": "B"}])
    assert result.success
    assert session.raw("mixed.txt") == b"a\r\nB\nc\r\n"


async def test_file_mode_is_preserved_file_11(session):
    session.write_raw("run.sh", b"#!/bin/sh\necho hi\n")
    os.chmod(session.root / "run.sh", 0o751)
    await session.read("run.sh")
    assert (await session("edit_file", path="run.sh", old_string="hi", new_string="ho")).success
    assert stat.S_IMODE((session.root / "run.sh").stat().st_mode) == 0o751


async def test_a_write_never_carries_set_id_bits_file_11(session):
    """A command that set the set-uid bit on a program must not get a root sidecar's write to keep it."""
    session.write_raw("pwn", b"#!/bin/sh\nid\n")
    os.chmod(session.root / "pwn", 0o6755)
    await session.read("pwn")
    assert (await session("write_file", path="pwn", content="#!/bin/sh\nwhoami\n")).success
    assert stat.S_IMODE((session.root / "pwn").stat().st_mode) == 0o755


async def test_new_files_get_the_umask_mode_and_parent_dirs(session):
    result = await session("write_file", path="a/b/c.txt", content="x")
    assert result.success
    mode = stat.S_IMODE((session.root / "a/b/c.txt").stat().st_mode)
    umask = os.umask(0)
    os.umask(umask)
    assert mode == 0o666 & ~umask


async def test_writes_leave_no_temp_files_file_11(session):
    session.write_raw("a.txt", b"1\n")
    await session.read("a.txt")
    for n in range(3):
        await session("write_file", path="a.txt", content=f"{n}\n")
    assert session.names() == ["a.txt"] and session.leftovers() == []


async def test_failed_write_leaves_the_original_intact_file_11(session, monkeypatch):
    session.write_raw("a.txt", b"original\n")
    await session.read("a.txt")

    def broken_replace(src, dst, **kwargs):
        raise OSError(28, "No space left on device")

    def broken_renameat(*args):
        ctypes.set_errno(28)
        return -1

    monkeypatch.setattr(os, "replace", broken_replace)
    calls = _rename._calls()
    if calls is not None:  # on Linux the rename is renameat, right after the last look (FILE-12)
        monkeypatch.setattr(_rename, "_calls", lambda: dataclasses.replace(calls, renameat=broken_renameat))
    result = await session("write_file", path="a.txt", content="new\n")
    assert result.to_wire() == {
        "success": False,
        "needsFollowup": True,
        "error": "could not write a.txt: No space left on device",
        "data": {"code": "write_failed", "path": "a.txt"},
    }
    monkeypatch.undo()
    assert session.raw("a.txt") == b"original\n"
    assert session.names() == ["a.txt"] and session.leftovers() == []


@pytest.mark.parametrize(
    ("raw", "code", "fragment"),
    [
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "binary_file", "is a binary file"),
        (b"caf\xe9 latin-1\n", "not_utf8", "is not valid UTF-8 (byte 3)"),
    ],
)
async def test_binary_and_non_utf8_files_are_refused_not_mangled_file_11(session, raw, code, fragment):
    session.write_raw("f.dat", raw)
    read = await session("read_file", path="f.dat")
    assert read.success is False and read.data["code"] == code and fragment in read.error
    edit = await session(
        "edit_file", path="f.dat", old_string="a", new_string="b", expectedVersion=version_of(raw)
    )
    assert edit.data["code"] == code
    assert session.raw("f.dat") == raw


async def test_huge_file_is_refused_with_a_clear_error(tmp_path):
    (tmp_path / "big.log").write_bytes(b"x" * 2048)
    ws = Workspace(tmp_path, max_file_bytes=1024)
    with pytest.raises(WorkspaceError) as info:
        await ws.read_file("big.log")
    assert info.value.code == "file_too_large"
    assert str(info.value) == (
        "big.log is 2048 bytes, over the file tools' limit of 1024 bytes; "
        "use bash (head, sed, split) to work with it"
    )


async def test_directory_and_missing_paths(session):
    (session.root / "d").mkdir()
    assert (await session("read_file", path="d")).error == "d is a directory; use list_dir to see its entries"
    assert (await session("read_file", path="nope.txt")).error == (
        "nope.txt does not exist; find the right path with list_dir or glob"
    )
    missing = await session("edit_file", path="nope.txt", old_string="a", new_string="b")
    assert missing.error == "nope.txt does not exist; create it with write_file"
    assert (await session("write_file", path="d", content="x")).data["code"] == "is_directory"


async def test_write_diff_is_a_unified_diff(session):
    session.write_raw("a.txt", b"one\ntwo\n")
    await session.read("a.txt")
    result = await session("write_file", path="a.txt", content="one\n2\n")
    assert result.data["diff"] == "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+2\n"


async def test_lines_are_newline_separated_only(session):
    # \v, \f and \x1c-\x1e are not line breaks for the file tools (str.splitlines would say so)
    session.write_raw("ff.txt", b"one\x0ctwo\nthree\x0bfour\nlast")
    data = await session.read("ff.txt", offset=2, limit=1)
    assert (data["content"], data["totalLines"], data["endLine"]) == ("three\x0bfour\n", 3, 2)
    tail = await session.read("ff.txt", offset=3)
    assert (tail["content"], tail["partial"]) == ("last", True)


async def test_a_file_that_grows_past_the_limit_while_read_is_refused(tmp_path, monkeypatch):
    from steerable_agent_runtime.workspace import _disk

    target = tmp_path / "grow.log"
    target.write_bytes(b"x" * 10)
    real_fstat = os.fstat

    def fstat_then_grow(fd):
        before = real_fstat(fd)  # the size the reader plans for...
        with open(target, "ab") as more:  # ...then a writer appends before the read
            more.write(b"y" * 100)
        return before

    monkeypatch.setattr(os, "fstat", fstat_then_grow)  # the os module _disk reads
    with pytest.raises(WorkspaceError) as info:
        _disk.read_bytes(target, root=tmp_path, display="grow.log", max_bytes=50)
    assert info.value.code == "file_too_large"
    assert str(info.value) == "grow.log is over the file tools' limit of 50 bytes"


async def test_fifo_is_refused_without_blocking(session):
    os.mkfifo(session.root / "pipe")
    result = await session("read_file", path="pipe")
    assert result.data == {"code": "not_a_file", "path": "pipe"}
    assert result.error == "pipe is not a regular file"
    grep = await session("grep", pattern="x")  # the walk meets the FIFO and skips it
    assert grep.success and grep.data["matches"] == []


async def test_symlink_swapped_in_after_resolution_is_not_followed(tmp_path):
    from steerable_agent_runtime.workspace import _disk

    outside = tmp_path / "secret"
    outside.write_text("s", encoding="utf-8")
    link = tmp_path / "ws_file"
    os.symlink(outside, link)  # what an attacker swaps in after the path was resolved
    with pytest.raises(WorkspaceError) as info:
        _disk.read_bytes(link, root=tmp_path, display="ws_file", max_bytes=100)
    assert info.value.code == "not_a_file"


@pytest.mark.parametrize(
    ("path", "fragment"),
    [
        ("x" * 5000, "path too long (5000 bytes; at most 4096 in all and 255 per name)"),
        ("d/" + "n" * 300, "path too long (302 bytes; at most 4096 in all and 255 per name)"),
        (
            "bad\ud800.txt",
            "invalid path 'bad\\ud800.txt': it is not valid Unicode (a file whose name is not UTF-8 on disk "
            "cannot be addressed by the file tools; use bash for it)",
        ),
        ("new/", "'new/' ends with '/', so it names a directory, not a file"),
    ],
)
async def test_hostile_paths_are_followup_errors_not_crashes(session, path, fragment):
    for name, args in [("read_file", {}), ("write_file", {"content": "x"})]:
        result = await session(name, path=path, **args)
        assert result.success is False and result.needs_followup is True, result.error
        assert result.data["code"] == "invalid_path" and result.error == fragment
    assert session.names() == [] and session.leftovers() == []


async def test_symlink_loop_is_a_clean_refusal(session):
    os.symlink("loop", session.root / "loop")
    result = await session("read_file", path="loop")
    assert result.needs_followup is True and result.data["code"] in {"not_a_file", "invalid_path"}


async def test_deep_paths_need_no_recursion(session):
    deep = "a/" * 300 + "f.txt"  # deep enough for a recursive mkdir to matter, shallow enough for rmtree
    result = await session("write_file", path=deep, content="deep\n")
    assert result.success, result.error
    assert (await session.read(deep))["content"] == "deep\n"


async def test_lone_surrogate_content_is_refused_not_crashed(session):
    result = await session("write_file", path="s.txt", content="a\ud800b")
    assert result.data["code"] == "invalid_text" and result.needs_followup is True
    assert result.error.startswith("the text has a lone surrogate ('\\ud800' at index 1)")
    assert not (session.root / "s.txt").exists()


async def test_boolean_is_not_an_offset(session):
    session.write_raw("a.txt", b"1\n2\n")
    result = await session("read_file", path="a.txt", offset=True)
    assert result.data["code"] == "invalid_arguments"
    assert result.data["errors"][0]["field"] == "offset"


async def test_crlf_content_written_into_an_lf_file_stays_lf(session):
    session.write_raw("lf.txt", b"a\nb\n")
    await session.read("lf.txt")
    assert (await session("write_file", path="lf.txt", content="x\r\ny\r\n")).success
    assert session.raw("lf.txt") == b"x\ny\n"


async def test_os_refusals_are_followup_errors(session, monkeypatch):
    from steerable_agent_runtime.workspace import _workspace

    async def denied(self, real, display):
        raise OSError(13, "Permission denied")

    monkeypatch.setattr(_workspace.Workspace, "load", denied)
    result = await session("read_file", path="x.txt")
    assert result.to_wire() == {
        "success": False,
        "needsFollowup": True,
        "error": "the operating system refused (x.txt): Permission denied",
        "data": {"code": "os_error", "errno": 13},
    }


async def test_long_non_ascii_names_can_be_written(session):
    name = "\u00e9" * 127  # 254 bytes: a valid name, longer than 200 characters' worth of bytes
    result = await session("write_file", path=name, content="x\n")
    assert result.success, result.error
    assert session.names() == [name] and session.leftovers() == []


async def test_non_utf8_paths_cannot_be_created_through_a_patch(session):
    patch = "*** Begin Patch\n*** Add File: \udcfe\n+x\n*** End Patch"
    result = await session("apply_patch", patch=patch)
    assert result.data["code"] == "invalid_path" and result.needs_followup is True
    assert session.names() == [] and session.leftovers() == []


async def test_a_return_value_without_a_json_form_is_a_failed_result_not_a_crash():
    from steerable_agent_runtime import ToolCall, ToolRouter, tool

    router = ToolRouter()

    @tool(router=router)
    def get_odd() -> dict[str, int]:
        return {"caf\udce9": 1}

    result = await router.dispatch(ToolCall(id="1", name="get_odd", arguments={}))
    assert result.data is not None
    assert result.success is False and result.data["code"] == "tool_exception"


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a file to another user")
async def test_a_root_write_keeps_the_files_owner(session):
    session.write_raw("theirs.txt", b"x\n")
    os.chown(session.root / "theirs.txt", 1000, 1000)
    await session.read("theirs.txt")
    assert (await session("write_file", path="theirs.txt", content="y\n")).success
    info = (session.root / "theirs.txt").stat()
    assert (info.st_uid, info.st_gid) == (1000, 1000)
