"""list_dir, glob and grep: navigation for the model, read mode."""

import pytest


async def test_list_dir(session):
    session.write_raw("b.txt", b"bb")
    session.write_raw("a/x.txt", b"x")
    result = await session("list_dir", path=".")
    assert result.data == {
        "path": ".",
        "total": 2,
        "truncated": False,
        "entries": [{"name": "a", "type": "dir"}, {"name": "b.txt", "type": "file", "size": 2}],
    }
    assert (await session("list_dir", path="b.txt")).error == "b.txt is not a directory"


async def test_glob_recursive_and_skips_vcs(session):
    for path in ["src/a.py", "src/pkg/b.py", "src/c.txt", ".git/config.py", "top.py"]:
        session.write_raw(path, b"x")
    result = await session("glob", pattern="**/*.py")
    assert result.data["files"] == ["src/a.py", "src/pkg/b.py", "top.py"]
    assert (await session("glob", pattern="src/*.py")).data["files"] == ["src/a.py"]
    assert (await session("glob", pattern="*.py", path="src/pkg")).data["files"] == ["src/pkg/b.py"]


async def test_grep(session):
    session.write_raw("a.py", b"def f():\n    return 1\n")
    session.write_raw("b.txt", b"DEF not code\n")
    session.write_raw("bin.dat", b"def\x00\x01")
    result = await session("grep", pattern=r"^def ")
    assert result.data["matches"] == [{"path": "a.py", "line": 1, "text": "def f():"}]
    assert result.data["skipped"] == []  # a binary file in a walk is passed over, as ripgrep does
    named = await session("grep", pattern="def", path="bin.dat")
    assert named.data["matches"] == [] and named.data["skipped"] == [
        {"path": "bin.dat", "reason": "binary_file"}
    ]
    insensitive = await session("grep", pattern="def", ignoreCase=True, glob="*.txt")
    assert [m["path"] for m in insensitive.data["matches"]] == ["b.txt"]
    capped = await session("grep", pattern=".", maxResults=1)
    assert capped.data["truncated"] is True and capped.data["matches"] == [
        {"path": "a.py", "line": 1, "text": "def f():"}
    ]
    bad = await session("grep", pattern="(")
    assert bad.data["code"] == "invalid_regex" and bad.needs_followup
    assert bad.error == "invalid regular expression '(': unclosed group (at position 0)"


def test_navigation_tools_are_read_mode(session):
    modes = {t["name"]: t["mode"] for t in session.router.describe()}
    assert modes == {
        "read_file": "read",
        "write_file": "safe_write",
        "edit_file": "safe_write",
        "apply_patch": "safe_write",
        "list_dir": "read",
        "glob": "read",
        "grep": "read",
        "bash": "local",
    }


async def test_backtracking_patterns_run_in_linear_time_file_16(session):
    # the case: (x+x+)+y over 5,000 x took the old engine to its 20 s budget (and past it);
    # the answer is whole, not cut at the budget (the time it takes: benchmarks/search_worst_cases.py)
    session.write_raw("evil.txt", b"x" * 5000 + b"\n")
    session.write_raw("ok.txt", b"xxy\n")
    result = await session("grep", pattern=r"(x+x+)+y")
    assert result.data == {
        "pattern": "(x+x+)+y",
        "matches": [{"path": "ok.txt", "line": 1, "text": "xxy"}],
        "truncated": False,
        "skipped": [],
    }


async def test_python_engine_bounds_a_backtracking_pattern_by_the_deadline(tmp_path, make_session):
    (tmp_path / "evil.txt").write_bytes(b"a" * 5000 + b"!\n")
    (tmp_path / "ok.txt").write_bytes(b"fine\n")
    session = make_session(tmp_path, bash=False, environ={"STEERABLE_RIPGREP": "off"})
    session.workspace.grep_time_budget_s = 0.2
    result = await session("grep", pattern=r"(a|aa)+$")
    assert result.data["timedOut"] is True and result.data["truncated"] is True
    assert result.data["message"].startswith("grep stopped after 0.2 s")


async def test_grep_line_numbers_match_read_file_lines(session):
    session.write_raw("f.txt", b"one\x0ctwo\nthree\n")
    result = await session("grep", pattern="three")
    assert result.data["matches"] == [{"path": "f.txt", "line": 2, "text": "three"}]


async def test_python_engine_grep_does_not_stall_the_event_loop(tmp_path, make_session):
    import asyncio
    import time

    session = make_session(tmp_path, bash=False, environ={"STEERABLE_RIPGREP": "off"})
    session.workspace.grep_time_budget_s = 1.0
    session.write_raw("evil.txt", b"a" * 5000 + b"!\n")
    gaps = []

    async def ticker():
        last = time.monotonic()
        while True:
            await asyncio.sleep(0.01)
            now = time.monotonic()
            gaps.append(now - last)
            last = now

    tick = asyncio.create_task(ticker())
    result = await session("grep", pattern=r"(a|aa)+$")
    tick.cancel()
    assert result.data["timedOut"] is True
    # the loop kept running while the regex engine worked: on it, the engine held it its whole 1 s budget
    assert max(gaps) < 0.5


async def test_glob_patterns_cannot_backtrack_catastrophically(session):
    session.write_raw("a" * 100, b"x")
    result = await session("glob", pattern="*a*a*a*a*a*a*a*a*a*a*b")
    # whole, not cut at the search budget (the time it takes: benchmarks/search_worst_cases.py)
    assert result.data["files"] == [] and "timedOut" not in result.data, result.data


async def test_glob_double_star_spans_zero_or_more_directories(session):
    for path in ["x.py", "a/x.py", "a/b/x.py", "a/b/y.txt"]:
        session.write_raw(path, b"")
    assert (await session("glob", pattern="**/x.py")).data["files"] == ["a/b/x.py", "a/x.py", "x.py"]
    assert (await session("glob", pattern="a/**/x.py")).data["files"] == ["a/b/x.py", "a/x.py"]
    assert (await session("glob", pattern="a/**")).data["files"] == ["a/b/x.py", "a/b/y.txt", "a/x.py"]
    assert (await session("glob", pattern="?.py")).data["files"] == ["x.py"]


async def test_python_engine_does_not_follow_a_file_swapped_for_a_symlink_after_the_walk(
    tmp_path, make_session, monkeypatch
):
    import os

    from steerable_agent_runtime.workspace import _search

    root = tmp_path / "ws"
    root.mkdir()
    session = make_session(root, bash=False, environ={"STEERABLE_RIPGREP": "off"})
    secret = tmp_path / "secret.txt"
    secret.write_text("TOPSECRET\n", encoding="utf-8")
    session.write_raw("f.txt", b"harmless\n")
    real_walk = _search._walk

    def walk_then_swap(root, base, **options):
        for listed in real_walk(root, base, **options):
            os.unlink(listed)
            os.symlink(secret, listed)  # the swap lands between the walk and the read
            yield listed

    monkeypatch.setattr(_search, "_walk", walk_then_swap)
    result = await session("grep", pattern="SECRET")
    assert result.data["matches"] == []
    assert result.data["skipped"] == [{"path": "f.txt", "reason": "not_a_file"}]


async def test_list_dir_does_not_follow_a_directory_swapped_for_a_symlink(session, tmp_path, monkeypatch):
    import os

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "leak.txt").write_text("x", encoding="utf-8")
    (session.root / "sub").mkdir()
    ws_root = session.workspace.root
    real_resolve = type(ws_root).resolve

    def resolve_then_swap(self, path):
        resolved = real_resolve(self, path)
        (session.root / "sub").rmdir()
        os.symlink(outside, session.root / "sub")
        return resolved

    monkeypatch.setattr(type(ws_root), "resolve", resolve_then_swap)
    result = await session("list_dir", path="sub")
    assert result.success is False and "leak.txt" not in str(result.to_wire())


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        ("(?:(?:a{1000}){1000}){1000}", "counted repeats expand past 10000 atoms; use + or * instead"),
        ("a{65535}", "counted repeats expand past 10000 atoms; use + or * instead"),
        ("(a|(?R))+", "recursive patterns ((?R), (?1), (?&name)) are not allowed"),
        ("((?1))", "recursive patterns ((?R), (?1), (?&name)) are not allowed"),
        ("x" * 1001, "longer than 1000 characters"),
        ("(a(b)(c)){9999}" * 66, "counted repeats expand past 10000 atoms; use + or * instead"),
    ],
)
async def test_patterns_that_exhaust_memory_at_compile_time_are_refused(session, pattern, why):
    result = await session("grep", pattern=pattern)
    assert result.data["code"] == "invalid_regex" and result.needs_followup is True
    assert result.error.endswith(why)


async def test_grep_budget_covers_walking_and_reading(session):
    for n in range(50):
        session.write_raw(f"d/f{n}.txt", b"x\n")
    session.workspace.grep_time_budget_s = 0.0
    result = await session("grep", pattern="x")
    assert result.data["timedOut"] is True and result.data["matches"] == []


async def test_grep_and_glob_walk_any_depth(session):
    deep = "d/" * 700 + "f.txt"
    session.write_raw(deep, b"needle\n")
    assert (await session("glob", pattern="**/f.txt")).data["files"] == [deep]
    assert [m["path"] for m in (await session("grep", pattern="needle")).data["matches"]] == [deep]


async def test_grep_counts_lines_as_read_file_does(session):
    session.write_raw("a", b"hi\n")
    assert (await session("grep", pattern="^$")).data["matches"] == []


async def test_over_long_glob_patterns_are_refused(session):
    result = await session("glob", pattern="[" * 5000)
    assert result.data["code"] == "invalid_pattern" and result.needs_followup is True
    grep = await session("grep", pattern="x", glob="[" * 5000)
    assert grep.data["code"] == "invalid_pattern"
