"""Rebuilding read state from a durable record (FILE-7)."""

import json

from steerable_agent_runtime import ReadFileState, ToolCall, read_file_state_from_messages, version_of


def tool_message(result):
    return {"role": "tool", "tool_call_id": "x", "content": json.dumps(result)}


def test_rebuilds_from_tool_messages_in_order_file_7():
    messages = [
        {"role": "user", "content": json.dumps({"success": True, "data": {"path": "u.txt", "version": "u"}})},
        tool_message({"success": True, "data": {"path": "a.txt", "version": "v1", "partial": False}}),
        tool_message({"success": True, "data": {"path": "a.txt", "version": "v2"}}),
        tool_message(
            {"success": True, "data": {"versions": {"b.txt": "b1", "c.txt": "c1"}, "filesChanged": []}}
        ),
        tool_message({"success": False, "data": {"path": "d.txt", "version": "nope"}}),
        {"role": "tool", "content": {"success": True, "data": {"path": "e.txt", "version": "e1"}}},
        {
            "role": "tool",
            "content": [
                {
                    "type": "text",
                    "text": json.dumps({"success": True, "data": {"path": "f", "version": "f1"}}),
                }
            ],
        },
    ]
    assert read_file_state_from_messages(messages) == {
        "a.txt": "v2",
        "b.txt": "b1",
        "c.txt": "c1",
        "e.txt": "e1",
        "f": "f1",
    }


def test_unparseable_entries_are_skipped_file_7():
    messages = [
        {"role": "tool", "content": "[spilled to disk: 120 kB]"},
        {"role": "tool", "content": '{"success": true, "data": {"path": "a.txt", "version": '},
        {"role": "tool", "content": json.dumps({"success": True, "data": {"path": 3, "version": None}})},
        {"role": "tool", "content": json.dumps({"success": True, "data": ["not", "a", "mapping"]})},
        {"role": "tool", "content": "[" * 100_000},
        "not even a message",
        tool_message({"success": True, "data": {"path": "ok.txt", "version": "v"}}),
    ]
    assert read_file_state_from_messages(messages) == {"ok.txt": "v"}


def test_partial_views_and_deletes_remove_the_entry_file_7_file_10():
    messages = [
        tool_message({"success": True, "data": {"path": "big.txt", "version": "v1"}}),
        tool_message({"success": True, "data": {"path": "big.txt", "version": "v2", "partial": True}}),
        tool_message({"success": True, "data": {"path": "gone.txt", "version": "g"}}),
        tool_message({"success": True, "data": {"versions": {}, "deleted": ["gone.txt"]}}),
    ]
    assert read_file_state_from_messages(messages) == {}


async def test_resume_round_trip_through_real_tool_results_file_7(tmp_path, make_session):
    (tmp_path / "a.txt").write_text("one\n", encoding="utf-8")
    (tmp_path / "b.txt").write_text("bee\n", encoding="utf-8")
    first = make_session(tmp_path)
    record = []
    for name, args in [
        ("read_file", {"path": "a.txt"}),
        ("write_file", {"path": "a.txt", "content": "two\n"}),
        ("read_file", {"path": "b.txt"}),
        ("apply_patch", {"patch": "*** Begin Patch\n*** Update File: b.txt\n@@\n-bee\n+B\n*** End Patch"}),
    ]:
        result = await first.router.dispatch(ToolCall(id=name, name=name, arguments=args))
        record.append({"role": "tool", "tool_call_id": name, "content": json.dumps(result.to_wire())})
    seeded = read_file_state_from_messages(record)
    assert seeded == {"a.txt": version_of("two\n"), "b.txt": version_of("B\n")}
    # A restarted process seeded from the record writes without re-reading...
    resumed = make_session(tmp_path, state=ReadFileState(seeded))
    assert (await resumed("write_file", path="a.txt", content="three\n")).success
    # ...and still catches an outside change made while it was down.
    (tmp_path / "b.txt").write_text("edited by a human\n", encoding="utf-8")
    assert (await resumed("write_file", path="b.txt", content="x\n")).data["code"] == "conflict"


def test_state_to_dict_excludes_partial_views():
    state = ReadFileState({"a": "1"})
    state.record("b", "2", partial=True)
    assert state.to_dict() == {"a": "1"}
    assert "b" in state and len(state) == 2
