"""What the model sees after a write: a summary, and a diff only while it is small (issue 31).

Hosts send every tool result back to the model on every later round, so a result that echoes a
10 KB file costs 10 KB per round for the rest of the session. A created file is summarised; a
diff past ``MAX_RESULT_DIFF_CHARS`` is counted and left out, with the way to see the text.
"""

import json

from steerable_agent_runtime import version_of
from steerable_agent_runtime.workspace._diff import MAX_RESULT_DIFF_CHARS, DiffSummary, unified_diff

OMITTED = "over the 4000 a result shows; read_file shows the new text]"


def module(lines: int) -> str:
    """``lines`` distinct lines of Python-like text (about 45 characters each)."""
    return "".join(f"def handler_{i}(request, limit={i % 97}):  # sync\n" for i in range(lines))


async def test_a_created_file_is_a_summary_not_an_echo_file_1(session):
    content = module(227)  # about 10 KB
    result = await session("write_file", path="pkg/new.py", content=content)
    assert result.success, result.error
    assert result.data == {
        "path": "pkg/new.py",
        "version": version_of(content),
        "created": True,
        "bytes": len(content.encode()),
        "lines": 227,
    }
    assert list(result.data)[:2] == ["path", "version"]  # what a write needs next, first
    wire = json.dumps(result.to_wire())
    assert "handler_1(" not in wire and len(wire) < 300


async def test_the_created_file_s_version_is_the_token_for_the_next_write_file_2_file_3(session):
    created = await session("write_file", path="a.txt", content="one\n")
    version = created.data["version"]
    assert (await session.read("a.txt"))["version"] == version
    # FILE-2: the summary's version is a valid expectedVersion; FILE-3: and the session tracks it
    again = await session("write_file", path="a.txt", content="two\n", expectedVersion=version)
    assert again.success, again.error
    third = await session("write_file", path="a.txt", content="three\n")
    assert third.success, third.error
    stale = await session("write_file", path="a.txt", content="four\n", expectedVersion=version)
    assert stale.data["code"] == "conflict"


async def test_a_small_replacement_keeps_its_diff_last(session):
    session.write_raw("a.txt", b"one\ntwo\nthree\n")
    await session.read("a.txt")
    result = await session("write_file", path="a.txt", content="one\n2\nthree\n")
    assert result.data == {
        "path": "a.txt",
        "version": version_of(b"one\n2\nthree\n"),
        "created": False,
        "bytes": 12,
        "lines": 3,
        "linesAdded": 1,
        "linesRemoved": 1,
        "diff": "--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n",
    }
    assert list(result.data)[-1] == "diff"


async def test_a_whole_file_rewrite_leaves_the_diff_out_and_says_how_to_see_it(session):
    before = module(227)
    session.write_raw("big.py", before.encode())
    await session.read("big.py")
    after = before.replace("request", "req")
    result = await session("write_file", path="big.py", content=after)
    assert result.success, result.error
    data = result.data
    full = unified_diff(before, after, "big.py")
    assert len(full) > MAX_RESULT_DIFF_CHARS
    assert data == {
        "path": "big.py",
        "version": version_of(after),
        "created": False,
        "bytes": len(after),
        "lines": 227,
        "linesAdded": 227,
        "linesRemoved": 227,
        "diffOmitted": True,
        "diff": f"[diff left out: {len(full)} characters, {OMITTED}",
    }
    assert len(json.dumps(result.to_wire())) < 600
    # the version is right there for the next write, without a re-read
    assert (
        await session("write_file", path="big.py", content=before, expectedVersion=data["version"])
    ).success


def test_the_bound_is_on_the_diff_s_characters():
    before = module(200)
    lines = before.splitlines(keepends=True)
    for changed in range(1, 60):
        after = "".join(line.replace("sync", "SYNC") if i < changed else line for i, line in enumerate(lines))
        full = unified_diff(before, after, "m.py")
        summary = DiffSummary()
        summary.add(before, after, "m.py")
        fields = summary.fields()
        assert (fields["linesAdded"], fields["linesRemoved"], summary.chars) == (changed, changed, len(full))
        if len(full) <= MAX_RESULT_DIFF_CHARS:
            assert fields == {"linesAdded": changed, "linesRemoved": changed, "diff": full}
        else:
            assert fields["diffOmitted"] is True and fields["diff"].endswith(OMITTED)
    assert len(full) > MAX_RESULT_DIFF_CHARS  # the loop crossed the bound


async def test_edit_file_bounds_its_diff_the_same_way(session):
    session.write_raw("m.py", module(227).encode())
    await session.read("m.py")
    small = await session("edit_file", path="m.py", old_string="handler_3(", new_string="handler_three(")
    assert small.success, small.error
    assert small.data["diff"].startswith("--- a/m.py\n+++ b/m.py\n@@ -1,7 +1,7 @@\n")
    assert (small.data["linesAdded"], small.data["linesRemoved"], list(small.data)[:2]) == (
        1,
        1,
        ["path", "version"],
    )
    assert "diffOmitted" not in small.data and list(small.data)[-1] == "diff"
    everywhere = await session(
        "edit_file", path="m.py", old_string="# sync", new_string="# in sync", replace_all=True
    )
    assert everywhere.success, everywhere.error
    data = everywhere.data
    assert (data["linesAdded"], data["linesRemoved"], data["diffOmitted"]) == (227, 227, True)
    assert data["diff"].endswith(OMITTED) and "handler_" not in json.dumps(data)
    assert data["editsApplied"] == 1 and data["matches"][0]["lines"][:2] == [1, 2]


async def test_apply_patch_does_not_echo_added_files_and_bounds_its_diff(session):
    content = module(227)
    added = "".join(f"+{line}\n" for line in content.splitlines())
    patch = f"*** Begin Patch\n*** Add File: new.py\n{added}*** End Patch"
    result = await session("apply_patch", patch=patch)
    assert result.success, result.error
    assert result.data["versions"] == {"new.py": version_of(content)}
    assert (result.data["linesAdded"], result.data["linesRemoved"], result.data["diff"]) == (227, 0, "")
    assert "handler_" not in json.dumps(result.to_wire())

    update = "".join(f"@@\n-{line}\n+{line.replace('sync', 'SYNC')}\n" for line in content.splitlines()[::2])
    session.write_raw("old.txt", b"a\nb\nc")
    await session.read("old.txt")
    patch = f"*** Begin Patch\n*** Update File: new.py\n{update}*** Delete File: old.txt\n*** End Patch"
    changed = await session("apply_patch", patch=patch)
    assert changed.success, changed.error
    data = changed.data
    assert (data["linesAdded"], data["linesRemoved"]) == (114, 114 + 3)  # old.txt's 3 lines deleted
    assert data["diffOmitted"] is True and data["diff"].endswith(OMITTED)
    assert list(data)[-1] == "diff" and data["deleted"] == ["old.txt"]


# -- the work bound: a diff that would take too long is not computed (SAFE-8) ----------------------

NOT_COMPUTED = (
    "too many to compare quickly; linesAdded and linesRemoved count the lines one text has more of than "
    "the other, in any order; read_file shows the new text]"
)


def scattered(lines: int) -> tuple[str, str]:
    """``lines`` distinct lines, and the same text with every other line changed (difflib's worst case)."""
    before = "".join(f"line {i} of the module, unchanged text\n" for i in range(lines))
    after = "".join(
        f"line {i} of the module, unchanged text\n" if i % 2 else f"line {i} rewritten\n"
        for i in range(lines)
    )
    return before, after


async def test_a_scattered_rewrite_of_200000_lines_is_counted_not_diffed_safe_8(session):
    # difflib over it took over 5 minutes of CPU, after the write had landed, in a thread no
    # cancellation stops; the result now says the diff was not computed, and counts in linear time
    before, after = scattered(200_000)
    session.write_raw("big.txt", before.encode())
    result = await session("write_file", path="big.txt", content=after, expectedVersion=version_of(before))
    assert result.success, result.error
    assert session.raw("big.txt") == after.encode()
    assert result.data == {
        "path": "big.txt",
        "version": version_of(after),
        "created": False,
        "bytes": len(after),
        "lines": 200_000,
        "linesAdded": 100_000,
        "linesRemoved": 100_000,
        "diffOmitted": True,
        "diffNotComputed": True,
        "diff": f"[diff not computed: the changes are spread over 199999 lines, {NOT_COMPUTED}",
    }
    assert len(json.dumps(result.to_wire())) < 800


async def test_rewriting_every_line_is_still_diffed_within_the_bound_safe_8(session):
    # the bound is on the matcher's work, not the file's size: nothing in common is found at once
    before, _ = scattered(20_000)
    session.write_raw("e.txt", before.encode())
    edited = await session(
        "edit_file",
        path="e.txt",
        old_string="of the module, unchanged text",
        new_string="of the module, edited",
        replace_all=True,
        expectedVersion=version_of(before),
    )
    assert edited.success, edited.error
    assert (edited.data["linesAdded"], edited.data["linesRemoved"]) == (20_000, 20_000)
    assert "diffNotComputed" not in edited.data and edited.data["diff"].endswith(OMITTED)


async def test_apply_patch_with_scattered_changes_is_counted_not_diffed_safe_8(session):
    # one hunk over the whole file: the lines inside it are compared, under the same bound
    before, after = scattered(20_000)
    session.write_raw("p.txt", before.encode())
    await session.read("p.txt", limit=1)
    hunk = "".join(
        f"-{old}\n+{new}\n" if old != new else f" {old}\n"
        for old, new in zip(before.splitlines(), after.splitlines(), strict=True)
    )
    patch = f"*** Begin Patch\n*** Update File: p.txt\n@@\n{hunk}*** End Patch"
    patched = await session("apply_patch", patch=patch)
    assert patched.success, patched.error
    assert session.raw("p.txt") == after.encode()
    data = patched.data
    assert (data["linesAdded"], data["linesRemoved"]) == (10_000, 10_000)
    assert data["diffOmitted"] is True and data["diffNotComputed"] is True
    assert data["diff"] == f"[diff not computed: the changes are spread over 20000 lines, {NOT_COMPUTED}"
    assert list(data)[-1] == "diff"


async def test_edit_file_with_scattered_changes_is_counted_not_diffed_safe_8(session):
    before, _ = scattered(20_000)
    session.write_raw("e.txt", before.encode())
    edited = await session(
        "edit_file",
        path="e.txt",
        old_string="0 of the module, unchanged text",  # every tenth line
        new_string="0 of the module, edited",
        replace_all=True,
        expectedVersion=version_of(before),
    )
    assert edited.success, edited.error
    data = edited.data
    assert (data["linesAdded"], data["linesRemoved"], data["diffNotComputed"]) == (2_000, 2_000, True)
    assert data["diff"].startswith("[diff not computed: the changes are spread over 19991 lines, ")


def test_past_the_budget_the_counts_ignore_order_and_later_files_are_not_diffed_safe_8():
    # a summary's files share one budget: once a file is past it, no diff of the summary is shown;
    # a moved line counts as neither added nor removed (difflib counts it as both)
    small = DiffSummary()
    small.add("a\nb\nc\n", "a\nB\nc\n", "one.txt")
    assert small.fields()["diff"].startswith("--- a/one.txt")
    spent = DiffSummary(budget=-(10**9))
    spent.add("a\nb\nc\nd\n", "b\na\nc\nD\n", "moved.txt")
    spent.add("x\n", "y\n", "two.txt")
    assert spent.fields() == {
        "linesAdded": 2,
        "linesRemoved": 2,
        "diffOmitted": True,
        "diffNotComputed": True,
        "diff": f"[diff not computed: the changes are spread over 5 lines, {NOT_COMPUTED}",
    }
