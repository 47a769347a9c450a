"""The ask_user tool: normalisation at the model-JSON boundary, the blocking handler, no-answer cases.

Requirement IDs: ASK-2 (canonical payload), ASK-3 (aliases), ASK-4 (errors naming the fix), ASK-5
(answers are the result), ASK-6 (cancel / unreachable / timeout give empty answers), ASK-8 (the
injected handler).
"""

import asyncio
import json
import logging
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from steerable_agent_runtime import ToolCall, ToolFailed, ToolMode, ToolRetry, ToolRouter, UserError
from steerable_agent_runtime.ask_user import (
    ASK_USER_TOOL_NAME,
    MAX_OPTIONS,
    MAX_QUESTIONS,
    make_ask_user_tool,
    normalise_ask_user_arguments,
)
from steerable_agent_runtime.tools import ToolExposure

CANONICAL = {
    "intro": "A few choices before I scaffold the project.",
    "questions": [
        {"id": "lang", "text": "Which language?", "type": "select", "options": ["Python", "Go"]},
        {
            "id": "features",
            "text": "Which features?",
            "type": "select",
            "options": ["lint", "tests", "ci"],
            "multiSelect": True,
        },
        {"id": "name", "text": "Project name?", "type": "text"},
        {"id": "token", "text": "API token?", "type": "password"},
    ],
    "outro": "Thanks!",
}

GPT_OSS = {
    "questions": [{"name": "lang", "message": "Which language?", "type": "list", "choices": ["Python", "Go"]}]
}


class Recorder:
    """An injected handler (ASK-8) that records the payloads it is given and answers with ``answers``."""

    def __init__(self, answers: Any = None) -> None:
        self.answers = answers
        self.payloads: list[Any] = []

    async def __call__(self, payload):
        self.payloads.append(payload)
        return self.answers


def router_with(handler, **options) -> ToolRouter:
    router = ToolRouter()
    router.register(make_ask_user_tool(handler, **options))
    return router


def call(arguments) -> ToolCall:
    return ToolCall(id="c1", name=ASK_USER_TOOL_NAME, arguments=arguments)


# -- the tool itself --------------------------------------------------------------------------------


def test_tool_is_a_direct_read_tool_with_its_own_timeout_ask_8():
    tool = make_ask_user_tool(Recorder())
    assert tool.name == "ask_user" == ASK_USER_TOOL_NAME
    assert tool.mode is ToolMode.READ
    assert tool.exposure is ToolExposure.DIRECT
    assert tool.timeout_ms == 0  # the router's deadline never fires; the tool enforces its own
    router = router_with(Recorder())
    assert [d["function"]["name"] for d in router.describe_model()] == ["ask_user"]


def test_schema_is_valid_and_accepts_the_canonical_payload_ask_2():
    parameters = make_ask_user_tool(Recorder()).parameters
    jsonschema.Draft202012Validator.check_schema(parameters)
    jsonschema.validate(CANONICAL, parameters)
    question = parameters["properties"]["questions"]["items"]
    assert question["properties"]["type"]["enum"] == ["select", "text", "password"]
    assert set(question["properties"]) == {"id", "text", "type", "options", "multiSelect"}


def test_each_tool_gets_its_own_schema_copy():
    first, second = make_ask_user_tool(Recorder()), make_ask_user_tool(Recorder())
    first.parameters["properties"]["intro"]["description"] = "changed"
    assert second.parameters["properties"]["intro"]["description"] != "changed"


def test_negative_timeout_is_a_developer_error():
    with pytest.raises(UserError):
        make_ask_user_tool(Recorder(), timeout_ms=-1)


# -- normalisation (ASK-2, ASK-3) -------------------------------------------------------------------


def test_canonical_payload_passes_through_unchanged_ask_2():
    assert normalise_ask_user_arguments(json.loads(json.dumps(CANONICAL))) == CANONICAL


async def test_handler_receives_the_canonical_payload_unchanged_ask_2_ask_8():
    handler = Recorder({})
    result = await router_with(handler).dispatch(call(json.loads(json.dumps(CANONICAL))))
    assert result.success is True
    assert handler.payloads == [CANONICAL]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        # ASK-3: Inquirer field names
        (
            {"name": "q", "message": "Pick", "choices": ["a", "b"]},
            {"id": "q", "text": "Pick", "type": "select", "options": ["a", "b"]},
        ),
        ({"id": "q", "question": "Why?"}, {"id": "q", "text": "Why?", "type": "text"}),
        # choices as objects: the display label is the option, falling back to the value
        (
            {"id": "q", "text": "Pick", "choices": [{"name": "Python 3", "value": "py"}, {"value": "go"}]},
            {"id": "q", "text": "Pick", "type": "select", "options": ["Python 3", "go"]},
        ),
        (
            {"id": "q", "text": "Pick", "choices": [{"label": "A", "value": 1}, {"title": "B", "value": 2}]},
            {"id": "q", "text": "Pick", "type": "select", "options": ["A", "B"]},
        ),
        (
            {"id": "q", "text": "Pick", "choices": [{"value": 3}, 4, {"type": "separator"}, "", "x", "x"]},
            {"id": "q", "text": "Pick", "type": "select", "options": ["3", "4", "x"]},
        ),
        # Inquirer types
        *[
            (
                {"name": "q", "message": "Pick", "type": inquirer, "choices": ["a"]},
                {"id": "q", "text": "Pick", "type": "select", "options": ["a"]},
            )
            for inquirer in ("list", "rawlist", "expand", "LIST", " Select ")
        ],
        (
            {"name": "q", "message": "Pick", "type": "checkbox", "choices": ["a", "b"]},
            {"id": "q", "text": "Pick", "type": "select", "options": ["a", "b"], "multiSelect": True},
        ),
        (
            {"name": "q", "message": "Pick", "type": "Checkbox", "choices": ["a"], "multiSelect": False},
            {"id": "q", "text": "Pick", "type": "select", "options": ["a"], "multiSelect": True},
        ),
        *[
            ({"name": "q", "message": "Say", "type": inquirer}, {"id": "q", "text": "Say", "type": "text"})
            for inquirer in ("input", "editor", "number", "Input", "text")
        ],
        (
            {"name": "q", "message": "Secret", "type": "password", "mask": "*"},
            {"id": "q", "text": "Secret", "type": "password"},
        ),
        (
            {"name": "q", "message": "Sure?", "type": "confirm", "default": True},
            {"id": "q", "text": "Sure?", "type": "select", "options": ["Yes", "No"]},
        ),
        # a missing or unknown type: select with options, text without
        (
            {"id": "q", "text": "Pick", "options": ["a"]},
            {"id": "q", "text": "Pick", "type": "select", "options": ["a"]},
        ),
        ({"id": "q", "text": "Say"}, {"id": "q", "text": "Say", "type": "text"}),
        (
            {"id": "q", "text": "Pick", "type": "dropdown", "options": ["a"]},
            {"id": "q", "text": "Pick", "type": "select", "options": ["a"]},
        ),
        ({"id": "q", "text": "Say", "type": "autocomplete"}, {"id": "q", "text": "Say", "type": "text"}),
        # non-canonical keys are dropped; a numeric id becomes a string; multiSelect spelled loosely
        (
            {"id": 7, "text": "Say", "type": "text", "default": "x", "validate": "nonempty", "when": True},
            {"id": "7", "text": "Say", "type": "text"},
        ),
        (
            {"id": "q", "text": "Pick", "type": "select", "options": ["a"], "multiSelect": "true"},
            {"id": "q", "text": "Pick", "type": "select", "options": ["a"], "multiSelect": True},
        ),
        # options sent as a JSON string, or as an object of labels
        (
            {"id": "q", "text": "Pick", "options": '["a", "b"]'},
            {"id": "q", "text": "Pick", "type": "select", "options": ["a", "b"]},
        ),
        (
            {"id": "q", "text": "Pick", "choices": {"py": "Python", "go": "Go"}},
            {"id": "q", "text": "Pick", "type": "select", "options": ["Python", "Go"]},
        ),
    ],
)
def test_aliases_normalise_onto_the_canonical_question_ask_3(raw, expected):
    payload = normalise_ask_user_arguments({"intro": "hi", "questions": [raw]})
    assert payload == {"intro": "hi", "questions": [expected]}


def test_observed_gpt_oss_shape_normalises_ask_3():
    assert normalise_ask_user_arguments(GPT_OSS) == {
        "intro": "",
        "questions": [
            {"id": "lang", "text": "Which language?", "type": "select", "options": ["Python", "Go"]}
        ],
    }


async def test_gpt_oss_shape_reaches_the_handler_canonical_ask_3():
    handler = Recorder({"lang": "Go"})
    result = await router_with(handler).dispatch(call(GPT_OSS))
    assert result.to_wire() == {"success": True, "data": {"answers": {"lang": "Go"}}}
    (payload,) = handler.payloads
    assert set(payload) == {"intro", "questions"}
    assert set(payload["questions"][0]) == {"id", "text", "type", "options"}


@pytest.mark.parametrize(
    "arguments",
    [
        {"questions": json.dumps([{"id": "q", "text": "Say"}])},  # questions as a JSON string
        {"questions": {"id": "q", "text": "Say"}},  # one object instead of a list
        {"questions": json.dumps({"id": "q", "text": "Say"})},
        {"id": "q", "text": "Say"},  # the question itself as the arguments
        {"questions": [{"id": " q ", "text": "Say"}], "intro": None, "title": "dropped"},
    ],
)
def test_questions_container_slips_are_accepted_ask_3(arguments):
    expected = {"intro": "", "questions": [{"id": "q", "text": "Say", "type": "text"}]}
    assert normalise_ask_user_arguments(arguments) == expected


async def test_arguments_sent_as_a_json_string_are_decoded_ask_3():
    handler = Recorder({"lang": "Python"})
    wire_call = {"id": "c1", "name": "ask_user", "arguments": json.dumps(GPT_OSS)}
    result = await router_with(handler).dispatch(wire_call)
    assert result.data == {"answers": {"lang": "Python"}}


def test_outro_is_kept_only_when_given():
    with_outro = normalise_ask_user_arguments({"questions": [{"id": "q", "text": "t"}], "outro": "bye"})
    assert with_outro["outro"] == "bye"
    assert "outro" not in normalise_ask_user_arguments({"questions": [{"id": "q", "text": "t"}]})


# -- invalid calls: the error a model sees (ASK-4) --------------------------------------------------

ID_FIX = 'give every question a unique non-empty "id" and a "text"'


@pytest.mark.parametrize(
    ("arguments", "field", "fix"),
    [
        (
            {"questions": [{"id": "a", "text": "A"}, {"text": "B"}]},
            "questions[1]",
            f'questions[1] has no "id": {ID_FIX}',
        ),
        (
            {"questions": [{"name": "   ", "message": "B"}]},
            "questions[0]",
            f'questions[0] has no "id": {ID_FIX}',
        ),
        ({"questions": [{"id": "a"}]}, "questions[0]", f'questions[0] has no "text": {ID_FIX}'),
        ({"questions": [{"id": "a", "text": ""}]}, "questions[0]", f'questions[0] has no "text": {ID_FIX}'),
        (
            {"questions": [{"id": "a", "text": "A"}, {"id": "a", "text": "B"}]},
            "questions[1]",
            f"questions[1] repeats the \"id\" 'a' of questions[0]: {ID_FIX}",
        ),
        (
            {"questions": [{"id": "a", "text": "A", "type": "select"}]},
            "questions[0]",
            'questions[0] is a "select" question without "options": give it a non-empty "options" array',
        ),
        (
            {"questions": [{"id": "a", "text": "A", "type": "list", "choices": ["", {"type": "separator"}]}]},
            "questions[0]",
            'questions[0] is a "select" question without "options"',
        ),
        ({"questions": []}, "questions", "questions is empty: ask at least one question"),
        ({"intro": "hi"}, "questions", 'questions is missing: send "questions" as an array of objects'),
        ({"questions": None}, "questions", "questions is missing"),
        ({"questions": "not json"}, "questions", "questions is a string that is not valid JSON"),
        ({"questions": 3}, "questions", "questions is a number, not an array"),
        ({"questions": "null"}, "questions", "questions is null, not an array"),
        ({"questions": ["Which language?"]}, "questions[0]", "questions[0] is a string, not an object"),
        ({"questions": [None]}, "questions[0]", "questions[0] is null, not an object"),
        (
            {"questions": [{"id": "a", "text": "A", "options": "a, b"}]},
            "questions[0].options",
            "questions[0].options is a string: send options as an array of strings",
        ),
        (
            {"questions": [{"id": f"q{i}", "text": "t"} for i in range(MAX_QUESTIONS + 1)]},
            "questions",
            f"questions has {MAX_QUESTIONS + 1} questions; at most {MAX_QUESTIONS} are allowed per call",
        ),
        (
            {"questions": [{"id": "a", "text": "A", "options": [str(i) for i in range(MAX_OPTIONS + 1)]}]},
            "questions[0].options",
            f"questions[0].options has {MAX_OPTIONS + 1} options; at most {MAX_OPTIONS} are allowed",
        ),
    ],
)
async def test_invalid_questions_fail_with_an_error_naming_the_fix_ask_4(arguments, field, fix):
    handler = Recorder({})
    result = await router_with(handler).dispatch(call(arguments))
    wire = result.to_wire()
    assert wire["success"] is False
    assert wire["needsFollowup"] is True  # the model retries within the turn
    assert wire["data"]["code"] == "invalid_questions"
    assert field in [e["field"] for e in wire["data"]["errors"]]
    assert fix in wire["error"]
    assert wire["error"].startswith("Invalid ask_user arguments: ")
    assert wire["error"].endswith("Fix and call ask_user again.")
    assert handler.payloads == []  # the user never sees an invalid card


async def test_every_problem_is_reported_at_once_ask_4():
    arguments = {"questions": [{"text": "A"}, {"id": "b"}, {"id": "c", "text": "C", "type": "select"}]}
    result = await router_with(Recorder()).dispatch(call(arguments))
    assert result.error == (
        'Invalid ask_user arguments: questions[0] has no "id": give every question a unique non-empty "id" '
        'and a "text"; questions[1] has no "text": give every question a unique non-empty "id" and a '
        '"text"; questions[2] is a "select" question without "options": give it a non-empty "options" '
        'array of strings, or make it a "text" question. Fix and call ask_user again.'
    )
    assert result.data is not None
    assert [e["field"] for e in result.data["errors"]] == ["questions[0]", "questions[1]", "questions[2]"]


def test_normalise_raises_tool_retry_directly_ask_4():
    with pytest.raises(ToolRetry) as caught:
        normalise_ask_user_arguments({"questions": [{"message": "no id"}]})
    assert caught.value.data is not None
    assert caught.value.data["code"] == "invalid_questions"


def test_limits_are_inclusive():
    most = {"questions": [{"id": f"q{i}", "text": "t"} for i in range(MAX_QUESTIONS)]}
    assert len(normalise_ask_user_arguments(most)["questions"]) == MAX_QUESTIONS
    options = [str(i) for i in range(MAX_OPTIONS)]
    one = normalise_ask_user_arguments({"questions": [{"id": "q", "text": "t", "options": options}]})
    assert one["questions"][0]["options"] == options


# -- answers (ASK-5) --------------------------------------------------------------------------------


async def test_answers_are_the_tool_result_ask_5():
    answers = {"lang": "Go", "features": ["lint", "ci"], "name": "demo", "token": "s3cret"}
    result = await router_with(Recorder(answers)).dispatch(call(CANONICAL))
    assert result.to_wire() == {"success": True, "data": {"answers": answers}}


async def test_answers_keep_only_the_asked_ids_in_question_order_ask_5():
    answers = {"token": "t", "other": "dropped", "lang": "Go", "": "empty"}
    result = await router_with(Recorder(answers)).dispatch(call(CANONICAL))
    assert result.data == {"answers": {"lang": "Go", "token": "t"}}
    assert list(result.data["answers"]) == ["lang", "token"]


async def test_an_empty_mapping_is_an_answer_not_a_cancel_ask_5():
    result = await router_with(Recorder({})).dispatch(call(CANONICAL))
    assert result.to_wire() == {"success": True, "data": {"answers": {}}}


# -- no answer: cancel, timeout, unreachable (ASK-6) ------------------------------------------------

NO_ANSWER = "gave no answer; continue without the answers."


async def test_cancel_records_empty_answers_ask_6():
    result = await router_with(Recorder(None)).dispatch(call(CANONICAL))
    assert result.to_wire() == {
        "success": True,
        "message": f"The user cancelled the questions and {NO_ANSWER}",
        "data": {"answers": {}, "cancelled": True, "reason": "cancelled"},
    }


async def test_timeout_records_empty_answers_and_does_not_hang_ask_6(caplog):
    entered = asyncio.Event()

    async def never_answers(payload):
        entered.set()
        await asyncio.Event().wait()

    async with asyncio.timeout(5):
        result = await router_with(never_answers, timeout_ms=20).dispatch(call(CANONICAL))
    assert entered.is_set()
    assert result.success is True
    assert result.data == {"answers": {}, "cancelled": True, "reason": "timeout"}
    assert result.message == f"The user did not answer in time and {NO_ANSWER}"
    assert "no answer within 20 ms" in caplog.text


async def test_unreachable_host_records_empty_answers_and_logs_ask_6(caplog):
    async def unreachable(payload):
        raise ConnectionError("host went away")

    with caplog.at_level(logging.WARNING, logger="steerable_agent_runtime.ask_user"):
        result = await router_with(unreachable).dispatch(call(CANONICAL))
    assert result.success is True
    assert result.data == {"answers": {}, "cancelled": True, "reason": "error"}
    assert result.message == f"The user could not be reached and {NO_ANSWER}"
    (record,) = caplog.records
    assert record.exc_info is not None and isinstance(record.exc_info[1], ConnectionError)


async def test_a_handler_timeout_error_of_its_own_is_an_error_not_our_timeout_ask_6():
    async def times_out(payload):
        raise TimeoutError("reverse channel timed out")

    result = await router_with(times_out).dispatch(call(CANONICAL))
    assert result.data == {"answers": {}, "cancelled": True, "reason": "error"}


async def test_a_cancelled_reverse_channel_is_unreachable_not_an_outside_cancel_ask_6():
    async def dropped(payload):
        future = asyncio.get_running_loop().create_future()
        asyncio.get_running_loop().call_soon(future.cancel)
        return await future  # the pending request was dropped when the channel closed

    result = await router_with(dropped).dispatch(call(CANONICAL))
    assert result.data == {"answers": {}, "cancelled": True, "reason": "error"}


async def test_a_handler_returning_a_non_mapping_is_an_error_ask_6():
    result = await router_with(Recorder(["Go"])).dispatch(call(CANONICAL))
    assert result.data == {"answers": {}, "cancelled": True, "reason": "error"}


async def test_outside_cancellation_propagates_ask_6():
    entered = asyncio.Event()
    cancelled = asyncio.Event()

    async def waits(payload):
        entered.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    task = asyncio.create_task(router_with(waits).dispatch(call(CANONICAL)))
    async with asyncio.timeout(5):
        await entered.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert cancelled.is_set()


async def test_a_tool_signal_from_the_handler_passes_through_ask_8():
    async def stops(payload):
        raise ToolFailed("the user closed the session")

    result = await router_with(stops).dispatch(call(CANONICAL))
    assert result.to_wire() == {"success": False, "terminal": True, "error": "the user closed the session"}


# -- property: the boundary never raises anything but ToolRetry -------------------------------------

_KEYS = st.sampled_from(
    ["id", "name", "text", "message", "question", "type", "options", "choices", "multiSelect",
     "multiple", "label", "title", "value", "intro", "outro", "questions"]
)  # fmt: skip
_TYPES = st.sampled_from(["select", "text", "password", "list", "checkbox", "confirm", "input", "separator"])
_LEAVES = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=8)
    | _TYPES
    | st.just('[{"id": "a", "text": "b"}]')
)
_JSON = st.recursive(
    _LEAVES,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(_KEYS | st.text(max_size=4), inner, max_size=5)
    ),
    max_leaves=30,
)


_CHOICE = _LEAVES | st.sampled_from(["a", "b", " "]) | st.dictionaries(_KEYS, _LEAVES, max_size=3)
_NAMES = st.sampled_from(["a", "b", " "]) | _LEAVES
_REST = {
    "type": _TYPES | _LEAVES,
    **dict.fromkeys(["options", "choices"], st.lists(_CHOICE, max_size=5) | _LEAVES),
    **dict.fromkeys(["multiSelect", "multiple"], _LEAVES),
    "default": _JSON,
}
_QUESTION = st.fixed_dictionaries(
    {}, optional={**dict.fromkeys(["id", "name", "text", "message", "question"], _NAMES), **_REST}
) | st.fixed_dictionaries(  # mostly usable: the valid paths get exercised too
    {"id": st.sampled_from(["a", "b", "c", "d"]), "message": st.sampled_from(["Pick?", "Say?"])},
    optional={"type": _TYPES, "choices": st.lists(_CHOICE, max_size=5), "multiSelect": st.booleans()},
)
_ARGUMENTS = st.fixed_dictionaries(
    {"questions": st.lists(_QUESTION | _JSON, max_size=4) | _QUESTION | _JSON},
    optional={"intro": _LEAVES, "outro": _LEAVES, "extra": _JSON},
)


def _check_canonical(payload):
    assert set(payload) <= {"intro", "questions", "outro"}
    assert isinstance(payload["intro"], str)
    assert 1 <= len(payload["questions"]) <= MAX_QUESTIONS
    ids = [q["id"] for q in payload["questions"]]
    assert len(ids) == len(set(ids))
    for question in payload["questions"]:
        assert set(question) <= {"id", "text", "type", "options", "multiSelect"}
        assert question["id"].strip() and question["text"].strip()
        assert question["type"] in ("select", "text", "password")
        options = question.get("options")
        assert options is None or (
            0 < len(options) <= MAX_OPTIONS and all(isinstance(o, str) for o in options)
        )
        if question["type"] == "select":
            assert options
        assert isinstance(question.get("multiSelect", False), bool)


@settings(max_examples=300, deadline=None)
@given(_ARGUMENTS | st.dictionaries(_KEYS, _JSON, max_size=4))
def test_normalise_raises_only_tool_retry_and_returns_canonical_payloads_ask_4(raw):
    try:
        payload = normalise_ask_user_arguments(raw)
    except ToolRetry as exc:
        assert exc.data is not None
        assert exc.data["code"] == "invalid_questions"
        assert exc.data["errors"]
        return
    _check_canonical(payload)
    assert normalise_ask_user_arguments(payload) == payload  # canonical is a fixed point


@settings(max_examples=100, deadline=None)
@given(_JSON)
def test_normalise_never_raises_anything_else_on_any_json_ask_4(raw):
    try:
        normalise_ask_user_arguments(raw)
    except ToolRetry:
        pass


@pytest.mark.parametrize(
    "raw",
    [
        {"questions": [{"id": 10**5000, "text": "t"}]},  # str() of it raises ValueError (digit limit)
        {"questions": [{"id": "q", "text": "t", "options": [10**5000, {"type": 10**5000, "value": 1}]}]},
        {"questions": "[" * 100_000},  # json.loads: RecursionError
        {"questions": "1" * 5000},  # json.loads: ValueError (digit limit)
    ],
)
def test_pathological_values_give_tool_retry_or_a_payload_ask_4(raw):
    try:
        _check_canonical(normalise_ask_user_arguments(raw))
    except ToolRetry as exc:
        assert exc.data is not None
        assert exc.data["code"] == "invalid_questions"


def test_text_and_password_questions_drop_select_only_fields_ask_3():
    payload = normalise_ask_user_arguments(
        {
            "questions": [
                {"id": "n", "text": "Name?", "type": "text", "options": ["a"], "multiSelect": True},
                {"id": "p", "text": "Password?", "type": "password", "options": ["b"]},
            ]
        }
    )
    assert payload["questions"] == [
        {"id": "n", "text": "Name?", "type": "text"},
        {"id": "p", "text": "Password?", "type": "password"},
    ]


@pytest.mark.parametrize(
    ("question", "fragment"),
    [
        ({"id": "a\ud800", "text": "?"}, 'questions[0] has a "id" with an invalid character'),
        ({"id": "a", "text": "t\udfff"}, 'questions[0] has a "text" with an invalid character'),
        ({"id": "a", "text": "x" * 4001}, 'questions[0] has a "text" of 4001 characters; keep it under 4000'),
        ({"id": "i" * 201, "text": "?"}, 'questions[0] has a "id" of 201 characters; keep it under 200'),
        ({"id": "a", "text": "?", "options": ["ok", "b\ud800"]}, "has an option with an invalid character"),
    ],
)
async def test_unusable_text_fails_before_the_user_is_asked_ask_4(question, fragment):
    asked = []

    async def handler(payload):
        asked.append(payload)
        return {}

    result = await router_with(handler).dispatch(call({"questions": [question]}))
    assert result.success is False and result.needs_followup is True
    assert fragment in (result.error or "") and asked == []
