"""Tests for the pure apply_patch layer: grammar parser and text applier (FILE-11).

The Codex end-to-end scenarios under ``tests/data/peer/codex-apply-patch`` are replayed in memory: the
parser and :func:`apply_chunks` must turn ``input/`` into ``expected/``. Scenarios whose outcome depends
on what is on disk belong to the file layer (``test_apply_patch.py``); here only their grammar is checked.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from peer_data import peer_dir
from steerable_agent_runtime.errors import PatchError
from steerable_agent_runtime.workspace._patch import (
    AddFile,
    Chunk,
    DeleteFile,
    UpdateFile,
    apply_chunks,
    parse_patch,
)

SCENARIOS = peer_dir("codex-apply-patch") / "scenarios"

# Rejected by the grammar: parse_patch raises invalid_patch.
GRAMMAR_REJECTS = {
    "005_rejects_empty_patch",
    "008_rejects_empty_update_hunk",
    "013_rejects_invalid_hunk_header",
}
# Rejected by the matcher: apply_chunks raises context_not_found.
MATCH_REJECTS = {"006_rejects_missing_context"}
# The outcome depends on filesystem state, which the file layer (workspace apply_patch tool) owns.
FILE_LAYER = {
    "007_rejects_missing_file_delete": "deleting a missing file fails: the file layer checks existence",
    "009_requires_existing_file_for_update": "updating a missing file fails: the file layer reads the file",
    "012_delete_directory_fails": "deleting a directory fails: the file layer checks the file type",
    "015_failure_after_partial_success_leaves_changes": (
        "partial success across files: the file layer applies patches atomically instead (FILE-11)"
    ),
}


def _scenario_names() -> list[str]:
    return sorted(p.name for p in SCENARIOS.iterdir() if p.is_dir())


def _tree(root: Path) -> dict[str, str]:
    if not root.is_dir():
        return {}
    return {
        p.relative_to(root).as_posix(): p.read_bytes().decode("utf-8") for p in root.rglob("*") if p.is_file()
    }


def _patch_text(name: str) -> str:
    return (SCENARIOS / name / "patch.txt").read_bytes().decode("utf-8")


def test_scenarios_are_present() -> None:
    assert len(_scenario_names()) >= 23


@pytest.mark.parametrize("name", sorted(FILE_LAYER))
def test_file_layer_scenarios_parse(name: str) -> None:
    # FILE-11: the grammar part is fine; the failure is decided on disk (see test_apply_patch.py).
    assert parse_patch(_patch_text(name))


@pytest.mark.parametrize("name", [n for n in _scenario_names() if n not in FILE_LAYER])
def test_codex_scenario(name: str) -> None:
    # FILE-11: every Codex scenario the pure layer can decide, replayed on an in-memory tree.
    text = _patch_text(name)
    if name in GRAMMAR_REJECTS:
        with pytest.raises(PatchError) as caught:
            parse_patch(text)
        assert caught.value.code == "invalid_patch"
        return
    tree = _tree(SCENARIOS / name / "input")
    expected = _tree(SCENARIOS / name / "expected")
    ops = parse_patch(text)
    if name in MATCH_REJECTS:
        (op,) = ops
        assert isinstance(op, UpdateFile)
        with pytest.raises(PatchError) as caught:
            apply_chunks(tree[op.path], op.chunks, path=op.path)
        assert caught.value.code == "context_not_found"
        assert tree == expected
        return
    for op in ops:
        if isinstance(op, AddFile):
            tree[op.path] = op.content  # 011: overwriting an existing file is the file layer's choice
        elif isinstance(op, DeleteFile):
            del tree[op.path]
        else:
            new_text = apply_chunks(tree.pop(op.path), op.chunks, path=op.path)
            tree[op.move_to or op.path] = new_text  # 010: move onto an existing file overwrites it
    assert tree == expected


# --- grammar: exact error texts (FILE-11) -----------------------------------------------------------


def _parse_error(text: str) -> str:
    with pytest.raises(PatchError) as caught:
        parse_patch(text)
    assert caught.value.code == "invalid_patch"
    assert caught.value.data == {"code": "invalid_patch"}
    return caught.value.error


OPS = "expected '*** Add File:', '*** Delete File:' or '*** Update File:'"
BODY = "a hunk line starting with ' ', '-' or '+'"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "line 1: expected '*** Begin Patch', got an empty patch"),
        ("  \n\t\n", "line 1: expected '*** Begin Patch', got an empty patch"),
        ("hello\n*** End Patch", "line 1: expected '*** Begin Patch', got 'hello'"),
        ("\n\nhello\n*** End Patch", "line 3: expected '*** Begin Patch', got 'hello'"),
        (
            "*** Begin Patch",
            "line 1: expected '*** End Patch' after '*** Begin Patch', got the end of the patch",
        ),
        (
            "*** Begin Patch\n*** Add File: a\n+x\n+y",
            "line 4: expected '*** End Patch' as the last line, got '+y'",
        ),
        (
            "*** Begin Patch\n*** End Patch\n",
            f"line 2: {OPS}, got '*** End Patch' (the patch has no file operation)",
        ),
        (
            "*** Begin Patch\n*** Frobnicate File: foo\n*** End Patch",
            f"line 2: {OPS}, got '*** Frobnicate File: foo'",
        ),
        (
            "*** Begin Patch\n*** Add File: a\n+x\ny\n*** End Patch",
            f"line 4: {OPS}, got 'y' (every line of an added file starts with '+')",
        ),
        (
            "*** Begin Patch\n*** Add File: a\n+x\n\n*** End Patch",
            f"line 4: {OPS}, got '' (every line of an added file starts with '+')",
        ),
        ("*** Begin Patch\n*** Add File: \n*** End Patch", "line 2: expected a path after '*** Add File:'"),
        (
            "*** Begin Patch\n*** Delete File:\n*** End Patch",
            "line 2: expected a path after '*** Delete File:'",
        ),
        (
            "*** Begin Patch\n*** Update File: a\n*** Move to:  \n@@\n-x\n*** End Patch",
            "line 3: expected a path after '*** Move to:'",
        ),
        (
            "*** Begin Patch\n*** Update File: foo.txt\n*** End Patch",
            f"line 3: expected a hunk for 'foo.txt' ('@@' or {BODY}), got '*** End Patch'",
        ),
        (
            "*** Begin Patch\n*** Update File: a\n\n\n*** Delete File: b\n*** End Patch",
            f"line 5: expected a hunk for 'a' ('@@' or {BODY}), got '*** Delete File: b'",
        ),
        (
            "*** Begin Patch\n*** Update File: a\n@@\n-x\n+y\nz\n*** End Patch",
            "line 6: expected '@@' to start the next hunk of 'a', got 'z'",
        ),
        (
            "*** Begin Patch\n*** Update File: a\n@@\n@@\n-x\n*** End Patch",
            f"line 4: expected {BODY}, got '@@'",
        ),
        (
            "*** Begin Patch\n*** Update File: a\n@@ def f():\n*** End of File\n*** End Patch",
            f"line 4: expected {BODY}, got '*** End of File'",
        ),
        (
            "*** Begin Patch\n*** Update File: a\nfoo\n*** End Patch",
            f"line 3: expected '@@' or {BODY}, got 'foo'",
        ),
        (
            "*** Begin Patch\n*** Update File: a\n@@\n-x\n*** End of File\n*** End of File\n*** End Patch",
            f"line 6: {OPS}, got '*** End of File'",
        ),
        (
            "*** Begin Patch\n*** Add File: a\n+x\n*** End Patch\n*** End Patch",
            f"line 4: {OPS}, got '*** End Patch'",
        ),
    ],
)
def test_parse_error_messages(text: str, message: str) -> None:
    # FILE-11: each grammar error names the 1-based line and what was expected there.
    assert _parse_error(text) == message


def test_parse_error_clips_long_lines() -> None:
    message = _parse_error("*** Begin Patch\n" + "x" * 500 + "\n*** End Patch")
    assert message == f"line 2: {OPS}, got '{'x' * 120}...'"


def test_heredoc_errors_count_the_wrapper_line() -> None:
    message = _parse_error("<<'EOF'\n*** Begin Patch\n*** Bogus\n*** End Patch\nEOF\n")
    assert message == f"line 3: {OPS}, got '*** Bogus'"


def test_heredoc_whose_inside_has_no_end_reports_the_inside() -> None:
    message = _parse_error("<<EOF\n*** Begin Patch\n*** Add File: a\n+x\nEOF")
    assert message == "line 4: expected '*** End Patch' as the last line, got '+x'"


# --- grammar: accepted forms (FILE-11) --------------------------------------------------------------


def test_parse_all_operations() -> None:
    ops = parse_patch(
        "*** Begin Patch\n"
        "*** Add File: docs/new.md\n"
        "+# Title\n"
        "+\n"
        "+body\n"
        "*** Delete File: old.txt\n"
        "*** Update File: src/app.py\n"
        "*** Move to: src/main.py\n"
        "@@ def main():\n"
        "     x = 1\n"
        "-    return x\n"
        "+    return x + 1\n"
        "@@\n"
        " tail\n"
        "+more\n"
        "*** End of File\n"
        "*** End Patch\n"
    )
    assert ops == [
        AddFile("docs/new.md", "# Title\n\nbody\n"),
        DeleteFile("old.txt"),
        UpdateFile(
            "src/app.py",
            "src/main.py",
            (
                Chunk("def main():", ("    x = 1", "    return x"), ("    x = 1", "    return x + 1"), False),
                Chunk(None, ("tail",), ("tail", "more"), True),
            ),
        ),
    ]


def test_add_file_without_lines_is_empty() -> None:
    assert parse_patch("*** Begin Patch\n*** Add File: empty.txt\n*** End Patch") == [
        AddFile("empty.txt", "")
    ]


def test_first_chunk_may_omit_the_hunk_header() -> None:
    (op,) = parse_patch("*** Begin Patch\n*** Update File: a\n-x\n+y\n*** End Patch")
    assert op == UpdateFile("a", None, (Chunk(None, ("x",), ("y",), False),))


def test_blank_lines_between_chunks_are_skipped_and_inside_are_context() -> None:
    (op,) = parse_patch("*** Begin Patch\n*** Update File: a\n\n@@\n a\n\n-b\n@@\n-c\n*** End Patch")
    assert isinstance(op, UpdateFile)
    assert op.chunks == (Chunk(None, ("a", "", "b"), ("a", ""), False), Chunk(None, ("c",), (), False))


def test_padded_markers_headers_and_crlf_are_accepted() -> None:
    text = (
        "\r\n  *** Begin Patch \r\n\t*** Update File: a.txt  \r\n"
        "@@   \r\n-x\r\n+y\r\n*** End of File \r\n *** End Patch\r\n"
    )
    assert parse_patch(text) == [UpdateFile("a.txt", None, (Chunk(None, ("x",), ("y",), True),))]


@pytest.mark.parametrize("opener", ["<<EOF", "<<'EOF'", '<<"EOF"'])
def test_heredoc_wrapper_is_stripped(opener: str) -> None:
    text = f"{opener}\n*** Begin Patch\n*** Add File: foo\n+hi\n*** End Patch\nEOF\n"
    assert parse_patch(text) == [AddFile("foo", "hi\n")]


def test_hunk_header_context_keeps_its_text() -> None:
    (op,) = parse_patch("*** Begin Patch\n*** Update File: a\n@@  class A:\n-x\n*** End Patch")
    assert isinstance(op, UpdateFile)
    assert op.chunks[0].context == " class A:"


# --- applying: locating hunks (FILE-11) -------------------------------------------------------------


def _chunk(old: list[str], new: list[str], context: str | None = None, eof: bool = False) -> Chunk:
    return Chunk(context, tuple(old), tuple(new), eof)


def test_exact_replacement() -> None:
    assert apply_chunks("a\nb\nc\n", [_chunk(["a", "b"], ["a", "B"])], path="f") == "a\nB\nc\n"


@pytest.mark.parametrize(
    ("file_line", "patch_line"),
    [
        ("keep = 1   ", "keep = 1"),  # trailing whitespace
        ("\tkeep = 1 ", "  keep = 1"),  # both ends, same depth (a tab for 2 spaces)
        ("say(\u201chi\u201d)", 'say("hi")'),  # curly double quotes in the file
        ("it's", "it\u2019s"),  # curly apostrophe in the patch
        ("a \u2013 b", "a - b"),  # en dash
        ("x\u00a0= 1", "x = 1"),  # no-break space
    ],
)
def test_tolerant_match_keeps_the_files_own_text_for_context(file_line: str, patch_line: str) -> None:
    # FILE-11: context differing in whitespace or punctuation still matches; untouched lines keep their bytes.
    original = f"head\n{file_line}\nold\ntail\n"
    chunk = _chunk([patch_line, "old"], [patch_line, "new"])
    assert apply_chunks(original, [chunk], path="f") == f"head\n{file_line}\nnew\ntail\n"


def test_tolerant_match_writes_changed_lines_as_the_patch_has_them() -> None:
    original = "def f():\n    return \u201cx\u201d  \n"
    chunk = _chunk(["def f():", '    return "x"'], ["def f():", "    return 'y'"])
    assert apply_chunks(original, [chunk], path="f") == "def f():\n    return 'y'\n"


def test_stricter_level_wins_over_an_earlier_loose_match() -> None:
    # "x " at line 1 matches only loosely; the exact "x" at line 3 is chosen.
    assert apply_chunks("x \ny\nx\n", [_chunk(["x"], ["z"])], path="f") == "x \ny\nz\n"


def test_multiple_chunks_apply_in_order() -> None:
    # Each chunk is searched for after the previous one's match, so the three "x" lines map in turn.
    chunks = [_chunk(["x"], ["a"]), _chunk(["x"], ["b"]), _chunk(["x"], ["c"])]
    assert apply_chunks("x\n1\nx\n2\nx\n", chunks, path="f") == "a\n1\nb\n2\nc\n"


def test_chunks_out_of_order_fail() -> None:
    chunks = [_chunk(["b"], ["B"]), _chunk(["a"], ["A"])]
    with pytest.raises(PatchError) as caught:
        apply_chunks("a\nb\n", chunks, path="f")
    assert caught.value.code == "context_not_found"


def test_hunk_header_context_narrows_the_search() -> None:
    original = "def a():\n    return 1\ndef b():\n    return 1\n"
    chunk = _chunk(["    return 1"], ["    return 2"], context="def b():")
    assert apply_chunks(original, [chunk], path="f") == "def a():\n    return 1\ndef b():\n    return 2\n"


def test_hunk_header_context_is_matched_loosely() -> None:
    # FILE-14: the unindented '+' line is moved to the file's indentation, like the line it matched.
    original = "class A:\n  x = 1\nclass B:  \n  x = 1\n"
    chunk = _chunk(["x = 1"], ["x = 2"], context="  class B:")
    assert apply_chunks(original, [chunk], path="f") == "class A:\n  x = 1\nclass B:  \n  x = 2\n"


def test_end_of_file_chunk_prefers_the_last_occurrence() -> None:
    chunk = _chunk(["end"], ["END"], eof=True)
    assert apply_chunks("end\nmid\nend\n", [chunk], path="f") == "end\nmid\nEND\n"


def test_end_of_file_chunk_falls_back_to_the_normal_search() -> None:
    chunk = _chunk(["end"], ["END"], eof=True)
    assert apply_chunks("end\nmid\n", [chunk], path="f") == "END\nmid\n"


def test_pure_addition_without_context_goes_to_the_end() -> None:
    # Scenario 016: '+' lines under a bare @@ are appended.
    assert apply_chunks("a\nb\n", [_chunk([], ["c"])], path="f") == "a\nb\nc\n"


def test_pure_addition_goes_after_its_context_line() -> None:
    chunk = _chunk([], ["    x = 0"], context="def f():")
    assert apply_chunks("def f():\n    pass\n", [chunk], path="f") == "def f():\n    x = 0\n    pass\n"


def test_pure_addition_at_end_of_file_ignores_context_position() -> None:
    chunk = _chunk([], ["z"], context="a", eof=True)
    assert apply_chunks("a\nb\n", [chunk], path="f") == "a\nb\nz\n"


def test_insertion_and_replacement_at_the_same_line_keep_patch_order() -> None:
    chunks = [_chunk([], ["inserted"], context="a"), _chunk(["b"], ["B"])]
    assert apply_chunks("a\nb\n", chunks, path="f") == "a\ninserted\nB\n"


def test_trailing_blank_old_line_is_dropped_when_it_does_not_match() -> None:
    chunk = _chunk(["a", ""], ["A", ""])
    assert apply_chunks("a\nb\n", [chunk], path="f") == "A\nb\n"


def test_result_always_ends_with_a_newline() -> None:
    # Scenario 014 intent: a file without a final newline gets one.
    assert apply_chunks("one\ntwo", [_chunk(["two"], ["2"])], path="f") == "one\n2\n"


def test_file_ending_in_a_blank_line_keeps_it() -> None:
    assert apply_chunks("a\n\n", [_chunk(["a"], ["b"])], path="f") == "b\n\n"


def test_deleting_every_line_leaves_an_empty_file() -> None:
    assert apply_chunks("a\nb\n", [_chunk(["a", "b"], [])], path="f") == ""


def test_empty_file_accepts_an_addition() -> None:
    assert apply_chunks("", [_chunk([], ["x"])], path="f") == "x\n"


# --- applying: error texts (FILE-11) ----------------------------------------------------------------


def _apply_error(original: str, chunks: list[Chunk], path: str = "src/m.py") -> PatchError:
    with pytest.raises(PatchError) as caught:
        apply_chunks(original, chunks, path=path)
    assert caught.value.code == "context_not_found"
    assert caught.value.data == {"code": "context_not_found", "path": path, "hunk": len(chunks)}
    return caught.value


def test_missing_lines_message() -> None:
    error = _apply_error("line1\nline2\n", [_chunk(["missing"], ["changed"])], path="modify.txt")
    assert error.error == (
        "could not find the lines of hunk 1 in 'modify.txt'; expected:\n"
        "    'missing'\n"
        "re-read the file and regenerate the hunk"
    )


def test_missing_lines_message_after_a_previous_hunk_shows_three_lines() -> None:
    chunks = [_chunk(["a"], ["A"]), _chunk(["p", "q", "r", "s", "t"], [], eof=True)]
    assert _apply_error("a\nb\n", chunks).error == (
        "could not find the lines of hunk 2 in 'src/m.py' after line 1 at the end of the file; expected:\n"
        "    'p'\n"
        "    'q'\n"
        "    'r'\n"
        "    ... (2 more)\n"
        "re-read the file and regenerate the hunk"
    )


def test_missing_context_line_message() -> None:
    error = _apply_error("class C:\n    pass\n", [_chunk(["    pass"], [], context="def g():")])
    assert error.error == (
        "could not find the line '@@ def g():' of hunk 1 in 'src/m.py'; "
        "re-read the file and regenerate the hunk"
    )


def _nearest_error(original: str, chunks: list[Chunk]) -> PatchError:
    with pytest.raises(PatchError) as caught:
        apply_chunks(original, chunks, path="src/m.py")
    assert caught.value.code == "context_not_found"
    return caught.value


def test_missing_context_line_names_the_nearest_line_file_14() -> None:
    error = _nearest_error("def f():\n    pass\n", [_chunk(["    pass"], [], context="def g():")])
    assert error.error == (
        "could not find the line '@@ def g():' of hunk 1 in 'src/m.py'; the nearest text in the file is line 1:\n"
        "  1 | def f():\n"
        "regenerate the hunk from those lines"
    )
    assert error.data == {
        "code": "context_not_found",
        "path": "src/m.py",
        "hunk": 1,
        "nearest": {"startLine": 1, "endLine": 1, "lines": ["def f():"]},
    }


def test_old_lines_must_follow_the_context_line() -> None:
    error = _nearest_error("x = 1\ndef f():\n    pass\n", [_chunk(["x = 1"], ["x = 2"], context="def f():")])
    assert error.error == (
        "could not find the lines of hunk 1 in 'src/m.py' after line 2; expected:\n"
        "    'x = 1'\n"
        "those lines are at line 1, before line 3 where the search for this hunk starts: hunks must follow "
        "the file's order, and an '@@' line must come before the lines it introduces"
    )


# --- properties (FILE-11) ---------------------------------------------------------------------------

LINE_TEXT = st.text(st.characters(codec="utf-8", exclude_characters="\r\n"), max_size=12)


@given(st.lists(LINE_TEXT, max_size=8))
def test_add_file_round_trips(lines: list[str]) -> None:
    text = (
        "*** Begin Patch\n*** Add File: f.txt\n" + "".join(f"+{line}\n" for line in lines) + "*** End Patch"
    )
    assert parse_patch(text) == [AddFile("f.txt", "".join(f"{line}\n" for line in lines))]


@st.composite
def _edits(draw: st.DrawFn) -> tuple[list[str], list[tuple[int, int, list[str]]]]:
    """A file of unique lines and sorted edits (start, end, new lines) separated by a kept line."""
    size = draw(st.integers(0, 25))
    lines = [f"{i}:{draw(LINE_TEXT)}" for i in range(size)]
    cuts = sorted(draw(st.lists(st.integers(0, size), max_size=8)))
    edits: list[tuple[int, int, list[str]]] = []
    for a, b in zip(cuts[::2], cuts[1::2], strict=False):
        new = draw(st.lists(LINE_TEXT, max_size=4))
        if (edits and a <= edits[-1][1]) or (a == b and not new):
            continue
        edits.append((a, b, new))
    return lines, edits


def _hunks(lines: list[str], edits: list[tuple[int, int, list[str]]]) -> str:
    """Write the edits as hunks with up to three context lines that never overlap a neighbour."""
    out: list[str] = []
    covered = 0
    for index, (a, b, new) in enumerate(edits):
        limit = edits[index + 1][0] if index + 1 < len(edits) else len(lines)
        lo, hi = max(covered, a - 3), min(b + 3, limit)
        out.append("@@")
        out += [f" {line}" for line in lines[lo:a]]
        out += [f"-{line}" for line in lines[a:b]]
        out += [f"+{line}" for line in new]
        out += [f" {line}" for line in lines[b:hi]]
        covered = hi
    return "\n".join(out)


@given(_edits(), st.booleans())
def test_generated_patch_applies_back_to_the_edited_text(
    case: tuple[list[str], list[tuple[int, int, list[str]]]], final_newline: bool
) -> None:
    lines, edits = case
    expected = list(lines)
    for a, b, new in reversed(edits):
        expected[a:b] = new
    original = "\n".join(lines) + ("\n" if final_newline and lines else "")
    if not edits:
        return
    text = f"*** Begin Patch\n*** Update File: f.txt\n{_hunks(lines, edits)}\n*** End Patch\n"
    (op,) = parse_patch(text)
    assert isinstance(op, UpdateFile)
    assert apply_chunks(original, op.chunks, path="f.txt") == ("\n".join(expected) + "\n" if expected else "")


@given(st.text(max_size=200))
def test_parser_raises_only_patch_errors(text: str) -> None:
    try:
        parse_patch(text)
    except PatchError as error:
        assert error.code == "invalid_patch"
        assert error.error.startswith("line ")


@given(
    st.lists(
        st.sampled_from(
            ["*** Begin Patch", "*** End Patch", "@@", "+a", "-a", " a", "", "*** Update File: f"]
        )
    )
)
def test_parser_on_marker_soup_raises_only_patch_errors(lines: list[str]) -> None:
    try:
        ops = parse_patch("\n".join(["*** Begin Patch", *lines, "*** End Patch"]))
    except PatchError as error:
        assert error.code == "invalid_patch"
    else:
        assert ops


def test_hunk_repeating_its_context_header_line_applies() -> None:
    # Models often write '@@ def f():' and then ' def f():' again as the first context line.
    text = "def g():\n    pass\n\ndef f():\n    return 1\n"
    (op,) = parse_patch(
        "*** Begin Patch\n*** Update File: m.py\n@@ def f():\n def f():\n"
        "-    return 1\n+    return 2\n*** End Patch"
    )
    assert isinstance(op, UpdateFile)
    assert apply_chunks(text, op.chunks, path="m.py") == "def g():\n    pass\n\ndef f():\n    return 2\n"
