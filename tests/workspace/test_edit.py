"""edit_file matching and its error surface (FILE-11, FILE-2)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from steerable_agent_runtime import EditError
from steerable_agent_runtime.workspace import Edit, apply_edits

SOURCE = 'def greet(name):\n    msg = "hello"\n    return msg + name\n'


async def edit(session, content, **arguments):
    session.write_raw("f.py", content.encode())
    await session.read("f.py")
    return await session("edit_file", path="f.py", **arguments)


async def test_exact_edit_and_diff(session):
    result = await edit(session, SOURCE, edits=[{"oldText": '"hello"', "newText": '"hi"'}])
    assert result.success
    assert session.raw("f.py").decode() == SOURCE.replace('"hello"', '"hi"')
    assert result.data["editsApplied"] == 1
    assert '-    msg = "hello"\n+    msg = "hi"\n' in result.data["diff"]


async def test_single_edit_form_old_string_new_string(session):
    result = await edit(session, "a a a\n", old_string="a", new_string="b", replace_all=True)
    assert result.success and session.raw("f.py") == b"b b b\n"


async def test_mixing_both_forms_is_an_error(session):
    result = await edit(
        session, SOURCE, edits=[{"oldText": "a", "newText": "b"}], old_string="msg", new_string="m"
    )
    assert result.data["code"] == "invalid_edit"
    assert result.error == "give either edits: [{oldText, newText}] or old_string/new_string, not both"


async def test_old_string_without_new_string_is_an_error(session):
    result = await edit(session, SOURCE, old_string="msg")
    assert result.error == "old_string and new_string must be given together"


def test_trailing_whitespace_tolerance_keeps_the_files_other_bytes():
    text = "a = 1   \nb = 2\t\nc = 3\n"
    out = apply_edits(text, [Edit("a = 1\nb = 2\n", "a = 10\nb = 20\n")])
    assert out == "a = 10\nb = 20\nc = 3\n"


def test_indentation_tolerance():
    text = "if x:\n        call()\n"
    assert apply_edits(text, [Edit("call()", "other()")]) == "if x:\n        other()\n"  # exact substring
    # more indentation than the file has: not a substring, found by the whitespace level, whole line
    # replaced; the replacement moves by the same 4 spaces the match did (FILE-14)
    assert (
        apply_edits(text, [Edit("            call()\n", "            done()\n")]) == "if x:\n        done()\n"
    )
    assert apply_edits(text, [Edit("            call()\n", "        done()\n")]) == "if x:\n    done()\n"


def test_unicode_punctuation_folding():
    text = "say(\u201chello\u201d) \u2014 it\u2019s fine\nnext\n"
    out = apply_edits(text, [Edit('say("hello") - it\'s fine', "say('bye')")])
    assert out == "say('bye')\nnext\n"
    reverse = apply_edits("x = 'it' - 1\n", [Edit("x = \u2018it\u2019 \u2013 1", "y")])
    assert reverse == "y\n"


def test_ambiguous_match_lists_lines():
    text = "x = 1\ny = 2\nx = 1\n"
    with pytest.raises(EditError) as info:
        apply_edits(text, [Edit("x = 1", "x = 9")])
    assert info.value.code == "ambiguous_match"
    assert str(info.value) == (
        "edits[0].oldText matches 2 places (lines 1, 3); add surrounding lines to make it unique, "
        "or set replaceAll: true on that edit (replace_all: true with old_string/new_string) to change "
        "every occurrence."
    )
    assert apply_edits(text, [Edit("x = 1", "x = 9", replace_all=True)]) == "x = 9\ny = 2\nx = 9\n"


def test_not_found():
    with pytest.raises(EditError) as info:
        apply_edits("abc\n", [Edit("xyz", "q")])
    assert info.value.code == "old_text_not_found"
    assert str(info.value) == (
        "edits[0].oldText was not found in the file (also tried ignoring whitespace and typographic "
        "punctuation): 'xyz'. Re-read the file and copy the text exactly."
    )


def test_overlapping_edits_name_both():
    with pytest.raises(EditError) as info:
        apply_edits("one two three\n", [Edit("one two", "1 2"), Edit("two three", "2 3")])
    assert info.value.code == "overlapping_edits"
    assert str(info.value) == "edits[0] and edits[1] overlap (both touch line 1); merge them into one edit"


@pytest.mark.parametrize(
    ("edits", "code", "message"),
    [
        ([], "no_edits", "no edits given; pass edits: [{oldText, newText}] (at least one)"),
        (
            [Edit("", "x")],
            "empty_old_text",
            "edits[0].oldText is empty; quote the exact text to replace (to create or overwrite a whole file "
            "use write_file)",
        ),
        ([Edit("abc", "abc")], "no_change", "the edits leave the file unchanged (newText equals oldText)"),
    ],
)
def test_distinct_error_codes(edits, code, message):
    with pytest.raises(EditError) as info:
        apply_edits("abc\n", edits)
    assert (info.value.code, str(info.value)) == (code, message)


async def test_all_edits_apply_or_none_do(session):
    result = await edit(
        session,
        SOURCE,
        edits=[{"oldText": "greet", "newText": "welcome"}, {"oldText": "missing text", "newText": "x"}],
    )
    assert result.success is False and result.data == {"code": "old_text_not_found", "edit": 1}
    assert session.raw("f.py").decode() == SOURCE


async def test_multiple_edits_located_against_the_original(session):
    result = await edit(
        session,
        SOURCE,
        edits=[
            {"oldText": "return msg + name", "newText": "return msg"},
            {"oldText": "def greet", "newText": "def hi"},
        ],
    )
    assert result.success
    assert session.raw("f.py").decode() == 'def hi(name):\n    msg = "hello"\n    return msg\n'


async def test_edit_with_stale_expected_version_is_rejected_file_2(session):
    result = await edit(
        session, SOURCE, old_string="msg", new_string="m", replace_all=True, expectedVersion="f" * 64
    )
    assert result.data["code"] == "conflict"
    assert session.raw("f.py").decode() == SOURCE


@given(
    lines=st.lists(st.text(alphabet="abc xyz", min_size=1, max_size=8), min_size=1, max_size=12, unique=True),
    data=st.data(),
)
def test_unique_line_replacement_property(lines, data):
    text = "\n".join(f"{n}:{line}" for n, line in enumerate(lines)) + "\n"
    index = data.draw(st.integers(0, len(lines) - 1))
    target = f"{index}:{lines[index]}\n"
    out = apply_edits(text, [Edit(target, "REPLACED\n")])
    assert out == text.replace(target, "REPLACED\n", 1)
    assert out.count("\n") == text.count("\n")
