"""Every edit_file and apply_patch result names the match level it used (FILE-14), for hosts to show."""

from __future__ import annotations


async def test_edit_file_reports_exact_and_tolerant_levels_file_14(session):
    session.write_raw("q.py", b"def a():\n    x = 1\n    y = 2\n")
    await session.read("q.py")
    exact = await session("edit_file", path="q.py", edits=[{"oldText": "x = 1", "newText": "x = 3"}])
    assert exact.data["matchLevel"] == "exact"
    assert exact.data["matches"] == [{"edit": 0, "level": "exact", "lines": [2], "reindented": False}]
    tolerant = await session(
        "edit_file", path="q.py", edits=[{"oldText": "x = 3\ny = 2", "newText": "x = 10\ny = 20"}]
    )
    assert tolerant.success, tolerant.error
    assert session.raw("q.py") == b"def a():\n    x = 10\n    y = 20\n"
    assert tolerant.data["matchLevel"] == "whitespace"
    assert tolerant.data["matches"] == [{"edit": 0, "level": "whitespace", "lines": [2], "reindented": True}]


async def test_apply_patch_reports_each_hunks_level_file_14(session):
    session.write_raw("a.go", b"func a() {\n\tx := 1\n}\n")
    session.write_raw("b.txt", b"one\ntwo\n")
    await session.read("a.go")
    await session.read("b.txt")
    patch = (
        "*** Begin Patch\n*** Update File: a.go\n@@\n-    x := 1\n+    x := 2\n"
        "*** Update File: b.txt\n@@\n-two\n+three\n*** End Patch"
    )
    result = await session("apply_patch", patch=patch)
    assert result.success, result.error
    assert session.raw("a.go") == b"func a() {\n\tx := 2\n}\n"  # the tab stays a tab
    assert result.data["matchLevel"] == "whitespace"
    assert result.data["hunks"] == [
        {"path": "a.go", "hunk": 1, "line": 2, "level": "whitespace", "reindented": True},
        {"path": "b.txt", "hunk": 1, "line": 2, "level": "exact", "reindented": False},
    ]
