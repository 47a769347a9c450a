"""FILE-14: tolerant matches keep the code's shape, ambiguity is refused alike, levels are reported.

Issue 11: a match found only with indentation ignored used to write the model's indentation into
the file (an IndentationError, spaces in a tab-indented Go file), ``apply_patch`` applied a hunk
that matched two places loosely to the first, no result said a tolerance was used, and a miss
gave no hint where the text really is.
"""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from steerable_agent_runtime.errors import EditError, PatchError
from steerable_agent_runtime.workspace import (
    MATCH_LEVELS,
    Edit,
    EditMatch,
    EditOutcome,
    apply_edits,
    apply_edits_detailed,
)
from steerable_agent_runtime.workspace._indent import IndentationMismatch, Labels, reindent
from steerable_agent_runtime.workspace._levels import TextLines, loosest_level
from steerable_agent_runtime.workspace._nearest import find_nearest
from steerable_agent_runtime.workspace._patch import (
    Chunk,
    HunkMatch,
    PatchOutcome,
    apply_chunks,
    apply_chunks_detailed,
    parse_patch,
)

LABELS = Labels("edits[0].oldText line {n}", "edits[0].newText line {n}")
FIX = "copy the file's indentation exactly (tabs as tabs) and retry"


def patch(path: str, *body: str) -> str:
    return "\n".join(["*** Begin Patch", f"*** Update File: {path}", *body, "*** End Patch"])


async def prepared(session, path: str, content: str) -> None:
    session.write_raw(path, content.encode())
    await session.read(path)


# --- the reproductions, through the real tools (FILE-14) -------------------------------------


async def test_file_14_edit_matched_without_indentation_keeps_the_blocks_depth(session):
    await prepared(session, "q.py", "def a():\n    x = 1\n    y = 2\n")
    result = await session(
        "edit_file", path="q.py", edits=[{"oldText": "x = 1\ny = 2", "newText": "x = 10\ny = 20"}]
    )
    assert result.success, result.error
    assert session.raw("q.py") == b"def a():\n    x = 10\n    y = 20\n"


async def test_file_14_space_indented_edit_of_a_tab_indented_go_file_writes_tabs(session):
    await prepared(
        session, "m.go", "package main\n\nfunc f() {\n\tx := 1\n\tif x > 0 {\n\t\tprintln(x)\n\t}\n}\n"
    )
    edits = [
        {
            "oldText": "    x := 1\n    if x > 0 {",
            "newText": '    x := 2\n    if x > 1 {\n        println("big")',
        }
    ]
    result = await session("edit_file", path="m.go", edits=edits)
    assert result.success, result.error
    assert session.raw("m.go") == (
        b'package main\n\nfunc f() {\n\tx := 2\n\tif x > 1 {\n\t\tprintln("big")\n\t\tprintln(x)\n\t}\n}\n'
    )


async def test_file_14_space_indented_hunk_on_a_tab_indented_go_file_writes_tabs(session):
    await prepared(
        session, "m.go", "package main\n\nfunc f() {\n\tx := 1\n\tif x > 0 {\n\t\tprintln(x)\n\t}\n}\n"
    )
    body = ("@@ func f() {", "     x := 1", "-    if x > 0 {", "+    for x > 0 {", "+        x--")
    result = await session("apply_patch", patch=patch("m.go", *body))
    assert result.success, result.error
    assert session.raw("m.go") == (
        b"package main\n\nfunc f() {\n\tx := 1\n\tfor x > 0 {\n\t\tx--\n\t\tprintln(x)\n\t}\n}\n"
    )


R_PY = "def a():\n    x = 1\n\ndef b():\n        x = 1\n"


async def test_file_14_hunk_matching_two_places_loosely_is_refused(session):
    await prepared(session, "r.py", R_PY)
    result = await session("apply_patch", patch=patch("r.py", "@@", "-  x = 1", "+  x = 2"))
    assert result.success is False and result.needs_followup is True
    assert result.error == (
        "the lines of hunk 1 match 2 places in 'r.py' (lines 2, 5) with leading and trailing whitespace "
        "ignored; copy the file's lines exactly (with their indentation), add context lines to make the hunk "
        "unique, or put an '@@' line naming the enclosing block before it"
    )
    assert result.data == {
        "code": "ambiguous_match",
        "path": "r.py",
        "hunk": 1,
        "lines": [2, 5],
        "matchLevel": "whitespace",
    }
    assert session.raw("r.py") == R_PY.encode()


async def test_file_14_edit_with_the_same_text_is_refused_too(session):
    await prepared(session, "r.py", R_PY)
    result = await session("edit_file", path="r.py", edits=[{"oldText": "  x = 1", "newText": "  x = 2"}])
    assert result.success is False and result.needs_followup is True
    assert result.data == {"code": "ambiguous_match", "edit": 0, "lines": [2, 5], "matchLevel": "exact"}
    assert session.raw("r.py") == R_PY.encode()


async def test_file_14_an_enclosing_context_line_makes_the_loose_hunk_unique(session):
    await prepared(session, "r.py", R_PY)
    result = await session("apply_patch", patch=patch("r.py", "@@ def b():", "-  x = 1", "+  x = 2"))
    assert result.success, result.error
    assert session.raw("r.py") == b"def a():\n    x = 1\n\ndef b():\n        x = 2\n"


async def test_file_14_indentation_that_does_not_map_is_refused_by_the_tools(session):
    await prepared(session, "s.py", "head\n    keep = 1\nold\n")
    result = await session("apply_patch", patch=patch("s.py", "@@", " keep = 1", "-old", "+new"))
    assert result.success is False and result.needs_followup is True
    assert result.data == {
        "code": "indentation_mismatch",
        "path": "s.py",
        "hunk": 1,
        "line": 3,
        "matchLevel": "whitespace",
    }
    assert result.error == (
        "hunk 1 matches 's.py' at line 2 only with leading and trailing whitespace ignored, and its indentation "
        "does not map onto the file's: line 2 of the file is indented with 4 spaces where line 1 of hunk 1's "
        "context and '-' lines is not indented, but line 3 of the file is not indented where line 2 of hunk "
        "1's context and '-' lines is not indented: the indentation differs by different amounts; " + FIX
    )
    result = await session("edit_file", path="s.py", edits=[{"oldText": "keep = 1\n  old", "newText": "x"}])
    assert result.data["code"] == "indentation_mismatch"
    assert result.error.startswith(
        "edits[0].oldText matches lines 2-3 only with leading and trailing whitespace ignored, and its "
        "indentation does not map onto the file's: line 2 of the file is indented with 4 spaces"
    )
    assert session.raw("s.py") == b"head\n    keep = 1\nold\n"


async def test_file_14_a_miss_names_the_nearest_lines_through_the_tool(session):
    await prepared(session, "n.py", "import os\n\n\ndef area(w, h):\n    return w * h\n")
    result = await session(
        "edit_file", path="n.py", edits=[{"oldText": "def area(width, h):", "newText": "x"}]
    )
    assert result.data == {
        "code": "old_text_not_found",
        "edit": 0,
        "nearest": {"startLine": 4, "endLine": 4, "lines": ["def area(w, h):"]},
    }
    assert result.error == (
        "edits[0].oldText was not found in the file (also tried ignoring whitespace and typographic "
        "punctuation): 'def area(width, h):'. The nearest text in the file is line 4:\n"
        "  4 | def area(w, h):\n"
        "Copy the text exactly from those lines."
    )


# --- re-indentation (FILE-14) ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "found", "new", "expected"),
    [
        # prefix shift: the model dropped the block's indentation
        (["x = 1", "y = 2"], ["    x = 1", "    y = 2"], ["x = 10", "y = 20"], ["    x = 10", "    y = 20"]),
        # prefix shift the other way: the model indented more than the file
        (["        x"], ["    x"], ["        y", "            z"], ["    y", "        z"]),
        # nested new lines deeper than the match keep their relative depth
        (
            ["if a:"],
            ["    if a:"],
            ["if a:", "    b()", "        c()"],
            ["    if a:", "        b()", "            c()"],
        ),
        # blank and whitespace-only lines are written as the model wrote them
        (["x", "", "y"], ["  x", "", "  y"], ["x", "", "   ", "y"], ["  x", "", "   ", "  y"]),
        # spaces from the model, tabs in the file: tabs stay tabs
        (
            ["    x := 1"],
            ["\tx := 1"],
            ["    if y {", "        z()", "    }"],
            ["\tif y {", "\t\tz()", "\t}"],
        ),
        # tabs from the model, spaces in the file
        (
            ["\tif a:", "\t\tb"],
            ["    if a:", "        b"],
            ["\tif a:", "\t\tc", "\t\t\td"],
            ["    if a:", "        c", "            d"],
        ),
        # 2-space model, 4-space file
        (
            ["  if a:", "    b"],
            ["    if a:", "        b"],
            ["  if a:", "    c", "      d"],
            ["    if a:", "        c", "            d"],
        ),
        # 4-space model, 2-space file
        (["    if a:", "        b"], ["  if a:", "    b"], ["    if a:", "        c"], ["  if a:", "    c"]),
        # the file's step comes from nearby lines when the match alone leaves it open (8 = 2 x 4)
        (["\tx"], ["        x"], ["\tx", "\t\ty"], ["        x", "            y"]),
    ],
)
def test_reindent_maps_the_models_indentation_onto_the_files(old, found, new, expected):
    around = ["class A:", "    def f(self):", *found] if old == ["\tx"] else list(found)
    moved = reindent(old, found, new, first_line=1, labels=LABELS, around=around)
    assert list(moved.lines) == expected and moved.changed


def test_reindent_with_identical_indentation_changes_nothing():
    moved = reindent(["    x  "], ["    x"], ["    y"], first_line=3, labels=LABELS)
    assert moved.lines == ("    y",) and moved.changed is False


@pytest.mark.parametrize(
    ("old", "found", "new", "message"),
    [
        (
            ["keep", "old"],
            ["    keep", "old"],
            ["new"],
            "line 12 of the file is indented with 4 spaces where edits[0].oldText line 1 is not indented, but "
            "line 13 of the file is not indented where edits[0].oldText line 2 is not indented: the indentation "
            "differs by different amounts",
        ),
        (
            ["        x"],
            ["    x"],
            ["        y", "  z"],
            "edits[0].newText line 2 is indented with 2 spaces, but matching the file removes 4 spaces from the "
            "front of every line (line 12 of the file is indented with 4 spaces where edits[0].oldText line 1 is "
            "indented with 8 spaces)",
        ),
        (
            ["\tx", "    y"],
            ["  x", "  y"],
            ["z"],
            "edits[0].oldText line 1 is indented with a tab but edits[0].oldText line 2 is indented with 4 "
            "spaces, and tabs and spaces cannot both be mapped",
        ),
        (
            ["  x"],
            ["\t x"],
            ["  y"],
            "line 12 of the file is indented with mixed whitespace '\\t ', and a mix of tabs and spaces cannot "
            "be mapped",
        ),
        (
            ["    x", "    y"],
            ["\tx", "\t\ty"],
            ["z"],
            "line 12 of the file is indented with a tab where edits[0].oldText line 1 is indented with 4 spaces, "
            "but line 13 of the file is indented with 2 tabs where edits[0].oldText line 2 is indented with 4 "
            "spaces: the indentation differs by different amounts",
        ),
        (
            ["        x", "            y"],
            ["\tx", "\t\ty"],
            ["z"],
            "edits[0].newText line 1 is not indented, which would put it left of the file's margin (line 12 of "
            "the file is indented with a tab where edits[0].oldText line 1 is indented with 8 spaces)",
        ),
        (
            ["x", "        y"],
            ["x", "\t\ty"],
            ["x", "      z"],
            "edits[0].newText line 2 is indented with 6 spaces, which would put it between two of the file's "
            "indentation steps (line 12 of the file is not indented where edits[0].oldText line 1 is not "
            "indented)",
        ),
    ],
)
def test_reindent_refuses_what_it_cannot_map(old, found, new, message):
    with pytest.raises(IndentationMismatch) as caught:
        reindent(old, found, new, first_line=12, labels=LABELS)
    assert str(caught.value) == f"{message}; {FIX}"
    assert caught.value.file_line >= 12


INDENTED_LINE = st.tuples(st.integers(0, 4), st.text("abc:=()", min_size=1, max_size=6))


@given(
    block=st.lists(INDENTED_LINE, min_size=1, max_size=6),
    replacement=st.lists(INDENTED_LINE, min_size=1, max_size=6),
    prefix=st.sampled_from(["  ", "    ", "\t", "\t\t"]),
)
def test_shifting_by_a_prefix_and_back_is_the_identity(block, replacement, prefix):
    unit = "\t" if prefix.startswith("\t") else " "
    model = [unit * depth + text for depth, text in block]
    new = [unit * depth + text for depth, text in replacement]
    file = [prefix + line for line in model]
    there = reindent(model, file, new, first_line=1, labels=LABELS).lines
    assert list(there) == [prefix + line for line in new]
    back = reindent(file, model, list(there), first_line=1, labels=LABELS).lines
    assert list(back) == new


@given(
    depths=st.lists(st.integers(0, 4), min_size=2, max_size=6).filter(lambda d: len(set(d)) > 1),
    new_depths=st.lists(st.integers(0, 5), min_size=1, max_size=6),
    width=st.sampled_from([2, 4, 8]),
)
def test_tabs_to_spaces_and_back_is_the_identity(depths, new_depths, width):
    base = min(depths)
    new_depths = [d + base for d in new_depths]
    tabs = ["\t" * d + f"line{i}" for i, d in enumerate(depths)]
    spaces = [" " * (width * d) + f"line{i}" for i, d in enumerate(depths)]
    new = ["\t" * d + "n" for d in new_depths]
    there = reindent(tabs, spaces, new, first_line=1, labels=LABELS).lines
    assert list(there) == [" " * (width * d) + "n" for d in new_depths]
    assert list(reindent(spaces, tabs, list(there), first_line=1, labels=LABELS).lines) == new


# --- reported levels (FILE-14) -----------------------------------------------------------------------


def test_the_levels_are_shared_and_ordered():
    assert MATCH_LEVELS == ("exact", "trailing-whitespace", "whitespace", "unicode-punctuation")
    assert loosest_level([]) == "exact"
    assert loosest_level(["whitespace", "exact", "trailing-whitespace"]) == "whitespace"


def test_apply_edits_detailed_reports_each_edits_level_and_lines():
    text = "a = 1   \ndef f():\n    x = 1\nsay(\u201chi\u201d)\nz\nz\n"
    outcome = apply_edits_detailed(
        text,
        [
            Edit("a = 1\n", "a = 2\n"),
            Edit("x = 1", "x = 2"),  # an exact substring of "    x = 1"
            Edit('say("hi")', 'say("bye")'),
            Edit("z", "Z", replace_all=True),
        ],
    )
    assert outcome == EditOutcome(
        'a = 2\ndef f():\n    x = 2\nsay("bye")\nZ\nZ\n',
        (
            EditMatch(0, "trailing-whitespace", (1,), reindented=False),
            EditMatch(1, "exact", (3,), reindented=False),
            EditMatch(2, "unicode-punctuation", (4,), reindented=False),
            EditMatch(3, "exact", (5, 6), reindented=False),
        ),
    )
    assert outcome.level == "unicode-punctuation"
    moved = apply_edits_detailed("def a():\n    x = 1\n    y = 2\n", [Edit("x = 1\ny = 2", "x = 10\ny = 20")])
    assert moved.matches == (EditMatch(0, "whitespace", (2,), reindented=True),)
    assert (
        apply_edits("def a():\n    x = 1\n    y = 2\n", [Edit("x = 1\ny = 2", "x = 10\ny = 20")])
        == moved.text
    )


def test_replace_all_at_a_tolerant_level_reindents_each_place_on_its_own():
    text = "if a:\n    x = 1\n    print(x)\nif b:\n        x = 1\n        print(x)\n"
    edit = Edit("x = 1\nprint(x)\n", "x = 1\nif x:\n    print(x)\n", replace_all=True)
    outcome = apply_edits_detailed(text, [edit])
    assert outcome.text == (
        "if a:\n    x = 1\n    if x:\n        print(x)\nif b:\n        x = 1\n        if x:\n            print(x)\n"
    )
    assert outcome.matches == (EditMatch(0, "whitespace", (2, 5), reindented=True),)


def test_tolerant_edit_ambiguity_names_the_level():
    text = "if a:\n    x = 1\n    print(x)\nif b:\n  x = 1\n  print(x)\n"
    with pytest.raises(EditError) as caught:
        apply_edits(text, [Edit("x = 1\nprint(x)", "x = 2")])
    assert caught.value.data == {
        "code": "ambiguous_match",
        "edit": 0,
        "lines": [2, 5],
        "matchLevel": "whitespace",
    }
    assert str(caught.value).startswith(
        "edits[0].oldText matches 2 places (lines 2, 5) with leading and trailing whitespace ignored; "
    )


def _chunk(old, new, context=None, eof=False):
    return Chunk(context, tuple(old), tuple(new), eof)


def test_apply_chunks_detailed_reports_each_hunks_line_and_level():
    original = "def a():\n    return 1\n\ndef b():\n    return 2\n"
    chunks = [
        _chunk(["    return 1"], ["    return 10"]),
        _chunk(["return 2"], ["return 20", "# done"], context="def b():  "),
        _chunk([], ["# end"]),
    ]
    outcome = apply_chunks_detailed(original, chunks, path="m.py")
    assert outcome == PatchOutcome(
        "def a():\n    return 10\n\ndef b():\n    return 20\n    # done\n# end\n",
        (
            HunkMatch(1, 2, "exact", reindented=False),
            HunkMatch(2, 5, "whitespace", reindented=True),
            HunkMatch(3, 6, "exact", reindented=False),
        ),
    )
    assert outcome.level == "whitespace"
    assert apply_chunks(original, chunks, path="m.py") == outcome.text


def test_context_lines_keep_the_files_text_while_added_lines_are_reindented():
    original = "class A:\n\tdef f(self):  \n\t\treturn 1\n"
    (op,) = parse_patch(
        patch("a.py", "@@", "   def f(self):", "-      return 1", "+      x = 1", "+      return x")
    )
    outcome = apply_chunks_detailed(original, op.chunks, path="a.py")  # type: ignore[union-attr]
    assert outcome.text == "class A:\n\tdef f(self):  \n\t\tx = 1\n\t\treturn x\n"
    assert outcome.hunks == (HunkMatch(1, 2, "whitespace", reindented=True),)


# --- ambiguity in apply_patch (FILE-14) --------------------------------------------------------------


def test_exact_hunks_stay_positional_like_codex():
    # Several exact matches: the first after the cursor wins (the Codex scenarios rely on it).
    assert apply_chunks("x\ny\nx\n", [_chunk(["x"], ["z"])], path="f") == "z\ny\nx\n"


def test_an_exact_match_wins_over_several_loose_ones():
    assert apply_chunks("  x\nx\n    x\n", [_chunk(["x"], ["z"])], path="f") == "  x\nz\n    x\n"


def test_tolerant_ambiguity_counts_only_places_after_the_cursor():
    original = "  x = 1\nmark\n  x = 1\n"
    chunks = [_chunk(["mark"], ["MARK"]), _chunk(["x = 1"], ["x = 2"])]
    assert apply_chunks(original, chunks, path="f") == "  x = 1\nMARK\n  x = 2\n"
    with pytest.raises(PatchError) as caught:
        apply_chunks(original + "    x = 1\n", chunks, path="f")
    assert caught.value.data == {
        "code": "ambiguous_match",
        "path": "f",
        "hunk": 2,
        "lines": [3, 4],
        "matchLevel": "whitespace",
    }
    assert str(caught.value).startswith(
        "the lines of hunk 2 match 2 places in 'f' after line 2 (lines 3, 4) "
    )


def test_an_end_of_file_hunk_is_not_ambiguous_at_the_end():
    assert apply_chunks("  end\n  end\n", [_chunk(["end"], ["END"], eof=True)], path="f") == "  end\n  END\n"


# --- nearest lines (FILE-14) -------------------------------------------------------------------------


def test_nearest_lines_name_the_regenerable_text():
    text = "import os\n\ndef area(w, h):\n    '''Area.'''\n    return w * h\n"
    nearest = find_nearest(TextLines(text), ["def area(w, h):", "    return w + h"])
    assert nearest is not None
    # the docstring line the model left out does not hide the line it changed
    assert nearest.as_data() == {
        "startLine": 3,
        "endLine": 5,
        "lines": ["def area(w, h):", "    '''Area.'''", "    return w * h"],
    }
    assert nearest.render() == "  3 | def area(w, h):\n  4 |     '''Area.'''\n  5 |     return w * h"


def test_a_large_hunk_of_similar_lines_is_scored_quickly():
    # Few distinct characters made a character-level diff quadratic (80 s); tokens keep it bounded.
    words = ["alpha", "beta", "gamma", "delta"]
    lines = [" ".join(words[(i * 7 + k) % 4] for k in range(35)) for i in range(20_000)]
    lines[::400] = ["common_anchor = 1"] * len(lines[::400])
    wanted = ["common_anchor = 1"] + [" ".join(words[k % 3] for k in range(35))] * 60
    find_nearest(TextLines("\n".join(lines)), wanted)  # returns at all: scoring is bounded


def test_nearest_lines_found_by_a_word_when_no_line_is_equal():
    text = "a = 1\nresult = compute_total(items)\nb = 2\n"
    nearest = find_nearest(TextLines(text), ["result = compute_totals(item)"])
    assert nearest is not None and nearest.as_data()["startLine"] == 2


def test_nothing_near_says_nothing():
    assert find_nearest(TextLines("alpha\nbeta\n"), ["completely different words here"]) is None
    assert find_nearest(TextLines("alpha\n"), ["", "  "]) is None


def test_nearest_lines_of_a_patch_hunk_are_in_the_error():
    original = "def a():\n    x = 1\n    y = 2\n    return x\n"
    with pytest.raises(PatchError) as caught:
        apply_chunks(original, [_chunk(["def a():", "    x = 1", "    y = 3"], ["def a():"])], path="m.py")
    assert caught.value.data == {
        "code": "context_not_found",
        "path": "m.py",
        "hunk": 1,
        "nearest": {"startLine": 1, "endLine": 3, "lines": ["def a():", "    x = 1", "    y = 2"]},
    }
    assert str(caught.value) == (
        "could not find the lines of hunk 1 in 'm.py'; expected:\n"
        "    'def a():'\n"
        "    '    x = 1'\n"
        "    '    y = 3'\n"
        "the nearest text in the file is lines 1-3:\n"
        "  1 | def a():\n"
        "  2 |     x = 1\n"
        "  3 |     y = 2\n"
        "regenerate the hunk from those lines"
    )


def test_a_miss_in_a_large_file_finds_the_nearest_lines_far_from_the_start():
    # The timing on 1,000,000 lines is measured by benchmarks/edit_miss_nearest.py.
    lines = [f"    value_{i} = compute(item_{i % 1000}, factor={i % 97})" for i in range(50_000)]
    text = "\n".join(lines) + "\n"
    wanted = "value_40000 = compute(item_0, factor=99)\nvalue_40001 = compute(item_1, factor=9)"
    with pytest.raises(EditError) as caught:
        apply_edits(text, [Edit(wanted, "x")])
    assert caught.value.data is not None
    assert caught.value.data["nearest"] == {
        "startLine": 40_001,
        "endLine": 40_002,
        "lines": lines[40_000:40_002],
    }


# --- whole-line search without splitting the file (FILE-14 cost bound) -------------------------------


@pytest.mark.parametrize("with_lines", [False, True])
def test_runs_find_every_place_in_order_from_the_start_line(with_lines):
    text = "x\nx\ny\nx\ny\nx\n  x\n"
    source = TextLines(text, text.split("\n")[:-1] if with_lines else None)
    runs = source.runs(["x", "y", "x"], "exact")
    assert [(run.index, run.offset, run.lines) for run in runs] == [
        (1, 2, ("x", "y", "x")),
        (3, 6, ("x", "y", "x")),
    ]
    assert [run.index for run in source.runs(["x"], "whitespace", start=4)] == [5, 6]
    assert [run.index for run in source.runs(["x"], "exact", start=2, begin=(2, 4), limit=1)] == [3]
    assert source.runs(["x", "y", "x"], "exact", start=4) == []
    assert [run.index for run in source.runs(["", "  "], "trailing-whitespace")] == []


def test_runs_at_the_punctuation_level_search_the_folded_text():
    source = TextLines("a\nsay(\u201chi\u201d) \u2013 ok\n")
    (run,) = source.runs(['say("hi") - ok'], "unicode-punctuation")
    assert (run.index, run.offset, run.lines) == (1, 2, ("say(\u201chi\u201d) \u2013 ok",))
    assert source.runs(['say("hi") - ok'], "whitespace") == []


LINE = st.text(st.sampled_from(list("ab :\t ")), max_size=8)


@given(
    lines=st.lists(LINE, min_size=1, max_size=12),
    data=st.data(),
)
def test_edits_and_hunks_either_apply_or_refuse_with_their_own_errors(lines, data):
    # Any slice of the file, re-indented at random and replaced by random lines, either applies
    # or is refused with an EditError / PatchError, never another exception.
    text = "\n".join(lines) + "\n"
    start = data.draw(st.integers(0, len(lines) - 1))
    size = data.draw(st.integers(1, len(lines) - start))
    shift = data.draw(st.sampled_from(["", " ", "  ", "\t"]))
    old = [
        shift + line.lstrip() if data.draw(st.booleans()) else line for line in lines[start : start + size]
    ]
    new = data.draw(st.lists(LINE, max_size=4))
    try:
        apply_edits(text, [Edit("\n".join(old), "\n".join(new))])
    except EditError:
        pass
    try:
        apply_chunks(text, [Chunk(None, tuple(old), tuple(new), False)], path="f")
    except PatchError:
        pass


@given(
    block=st.lists(INDENTED_LINE, min_size=1, max_size=5),
    prefix=st.sampled_from(["    ", "\t", "        "]),
)
def test_a_block_copied_without_its_indentation_is_edited_in_place(block, prefix):
    model = ["unique_anchor()"] + ["    " * depth + text for depth, text in block]
    text = "def f():\n" + "".join(prefix + line + "\n" for line in model) + "tail\n"
    new = model[:-1] + [model[-1] + " + 1"]
    outcome = apply_edits_detailed(text, [Edit("\n".join(model), "\n".join(new))])
    assert outcome.text == "def f():\n" + "".join(prefix + line + "\n" for line in new) + "tail\n"


def test_a_very_common_key_line_falls_back_to_the_next_key_or_a_full_scan():
    # 30,000 candidate lines exceed the anchors tried per key: the rarer line decides, and a
    # pattern of common lines only is compared against every line.
    text = "x = 1\n" * 30_000 + "x = 2\n"
    source = TextLines(text)
    assert [run.index for run in source.runs(["x = 1", "x = 2"], "whitespace")] == [29_999]
    assert [run.index for run in source.runs(["x = 1", "x = 1"], "exact", start=10, limit=3)] == [10, 11, 12]
    with pytest.raises(EditError) as caught:
        apply_edits(text, [Edit("  x = 1\n  x = 1", "y")])
    assert str(caught.value).startswith("edits[0].oldText matches 500 or more places (lines 1, 3, 5,")
