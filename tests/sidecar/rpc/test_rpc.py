"""The JSON-RPC 2.0 peer: both directions, concurrency, the standard errors, the error table, stdio."""

from __future__ import annotations

import asyncio
import functools
import importlib
import importlib.util
import json
import logging
import os
import pkgutil
import re
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pydantic
import pytest

import steerable_agent_runtime
import steerable_sidecar
from steerable_agent_runtime.errors import PeerClosedError, RemoteError, SteerableError
from steerable_sidecar.rpc._peer import (
    ERROR_CODES,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    InvalidParams,
    JsonRpcPeer,
    error_code_for,
    open_fd_streams,
)
from steerable_sidecar.rpc._shallow_json import MAX_SKIP_TOKENS, NESTED, top_level_scalars

HERE = Path(__file__).resolve().parent
DOC = HERE.parents[2] / "docs" / "sidecar-protocol.md"
LOGGER = "steerable_sidecar.rpc._peer"


async def _stream_pair():
    """Two (reader, writer) pairs joined by two real OS pipes: what one writes the other reads."""
    a_read, b_write = os.pipe()
    b_read, a_write = os.pipe()
    return await open_fd_streams(a_read, a_write), await open_fd_streams(b_read, b_write)


async def _close(writer):
    writer.close()
    await writer.wait_closed()


class Wire:
    """A peer under test, serving, and the raw other end of its pipes (bytes in, lines out)."""

    def __init__(
        self,
        peer: JsonRpcPeer,
        serving: asyncio.Task[None],
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        peer_writer: asyncio.StreamWriter,
    ):
        self.peer = peer
        self.serving = serving
        self.reader = reader
        self.writer = writer
        self.peer_writer = peer_writer

    async def send(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def line(self) -> bytes:
        async with asyncio.timeout(5):
            return await self.reader.readline()

    async def frame(self):
        return json.loads(await self.line())

    async def ask(self, message) -> object:
        """Send one JSON message and return the parsed answer."""
        await self.send(json.dumps(message).encode() + b"\n")
        return await self.frame()

    async def eof(self) -> None:
        """Close the raw side's writer: the peer reads EOF."""
        if not self.writer.is_closing():
            await _close(self.writer)

    async def shut(self) -> None:
        await self.eof()
        async with asyncio.timeout(5):
            await asyncio.gather(self.serving, return_exceptions=True)
            await _close(self.peer_writer)
            while await self.reader.read(65536):  # drain to EOF so the read transport closes
                pass


async def _echo(params):
    return params


@pytest.fixture
async def make_wire() -> AsyncIterator[Callable[..., Awaitable[Wire]]]:
    wires: list[Wire] = []

    async def make(**options: Any) -> Wire:
        (raw_reader, raw_writer), (reader, writer) = await _stream_pair()
        peer = JsonRpcPeer(reader, writer, name="under-test", **options)
        peer.add_method("echo", _echo)
        wire = Wire(peer, asyncio.create_task(peer.serve()), raw_reader, raw_writer, writer)
        wires.append(wire)
        return wire

    yield make
    for wire in wires:
        await wire.shut()


@pytest.fixture
async def wire(make_wire: Callable[..., Awaitable[Wire]]) -> Wire:
    return await make_wire()


@pytest.fixture
async def pair():
    """Two peers serving each other over OS pipes."""
    (a_reader, a_writer), (b_reader, b_writer) = await _stream_pair()
    a = JsonRpcPeer(a_reader, a_writer, name="host")
    b = JsonRpcPeer(b_reader, b_writer, name="sidecar")
    serving = [asyncio.create_task(a.serve()), asyncio.create_task(b.serve())]
    yield a, b
    await _close(a_writer)
    await _close(b_writer)
    async with asyncio.timeout(5):
        await asyncio.gather(*serving)


# -- both directions and concurrency ------------------------------------------------------------


async def test_requests_flow_in_both_directions(pair):
    host, sidecar = pair

    async def add(params):
        return params[0] + params[1]

    async def greet(params):
        return f"hello {params['name']}"

    host.add_method("host.add", add)
    sidecar.add_method("greet", greet)
    async with asyncio.timeout(5):
        assert await host.request("greet", {"name": "host"}) == "hello host"
        assert await sidecar.request("host.add", [2, 3]) == 5


async def test_a_handler_awaiting_a_reverse_call_does_not_block_the_reader(pair):
    # A sequential reader deadlocks here: the sidecar's reader would sit inside "outer" waiting for
    # the answer to "inner", which only that same reader can deliver (and "inner" nests once more).
    host, sidecar = pair

    async def outer(params):
        return {"outer": await sidecar.request("inner", params)}

    async def inner(params):
        return {"inner": await host.request("innermost", params)}

    async def innermost(params):
        return params["n"] + 1

    sidecar.add_method("outer", outer)
    host.add_method("inner", inner)
    sidecar.add_method("innermost", innermost)
    async with asyncio.timeout(5):
        assert await host.request("outer", {"n": 41}) == {"outer": {"inner": 42}}


async def test_concurrent_requests_are_answered_out_of_order(pair):
    host, sidecar = pair
    gate = asyncio.Event()
    finished = []

    async def wait(params):
        await gate.wait()
        return "waited"

    async def open_gate(params):
        gate.set()
        return "opened"

    sidecar.add_method("wait", wait)
    sidecar.add_method("open", open_gate)

    async def call(method: str) -> Any:
        result = await host.request(method)
        finished.append(method)
        return result

    async with asyncio.timeout(5):
        results = await asyncio.gather(call("wait"), call("open"))
    assert list(results) == ["waited", "opened"]
    assert finished == ["open", "wait"]


async def test_responses_on_the_wire_follow_completion_not_arrival(wire):
    gate = asyncio.Event()

    async def wait(params):
        await gate.wait()
        return "late"

    async def open_gate(params):
        gate.set()
        return "early"

    wire.peer.add_method("wait", wait)
    wire.peer.add_method("open", open_gate)
    await wire.send(b'{"jsonrpc":"2.0","id":1,"method":"wait"}\n{"jsonrpc":"2.0","id":2,"method":"open"}\n')
    assert await wire.line() == b'{"jsonrpc":"2.0","id":2,"result":"early"}\n'
    assert await wire.line() == b'{"jsonrpc":"2.0","id":1,"result":"late"}\n'


async def test_notifications_run_their_handler_and_are_never_answered(wire):
    seen: asyncio.Queue[Any] = asyncio.Queue()

    async def progress(params):
        await seen.put(params)

    async def broken(params):
        raise ValueError("a failing notification handler")

    wire.peer.add_notification("progress", progress)
    wire.peer.add_notification("broken", broken)
    await wire.send(
        b'{"jsonrpc":"2.0","method":"progress","params":{"done":1}}\n'
        b'{"jsonrpc":"2.0","method":"broken"}\n'
        b'{"jsonrpc":"2.0","method":"no.such.method"}\n'
        b'{"jsonrpc":"2.0","method":"echo","params":[1]}\n'  # a method called as a notification
    )
    assert await wire.ask({"jsonrpc": "2.0", "id": 7, "method": "echo", "params": ["after"]}) == {
        "jsonrpc": "2.0",
        "id": 7,
        "result": ["after"],
    }
    assert seen.get_nowait() == {"done": 1}


async def test_notify_and_add_notification_between_peers(pair):
    host, sidecar = pair
    got: asyncio.Queue[Any] = asyncio.Queue()

    async def on_log(params):
        await got.put(params)

    host.add_notification("log", on_log)
    await sidecar.notify("log", {"line": "hello"})
    async with asyncio.timeout(5):
        assert await got.get() == {"line": "hello"}
    with pytest.raises(RemoteError) as caught:  # a notification-only name is not a method
        async with asyncio.timeout(5):
            await sidecar.request("log", {"line": "x"})
    assert caught.value.code == METHOD_NOT_FOUND


async def test_a_request_can_carry_positional_params(wire):
    assert await wire.ask({"jsonrpc": "2.0", "id": "s", "method": "echo", "params": [1, "two"]}) == {
        "jsonrpc": "2.0",
        "id": "s",
        "result": [1, "two"],
    }


# -- the standard errors, frame by frame --------------------------------------------------------


async def test_a_frame_that_is_not_json_is_a_parse_error_with_a_null_id(wire):
    await wire.send(b'{"jsonrpc":"2.0","method":"echo","id":1\n')
    assert await wire.line() == (
        b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,'
        b'"message":"Parse error: Expecting \',\' delimiter: line 1 column 40 (char 39)"}}\n'
    )
    assert await wire.ask({"jsonrpc": "2.0", "id": 1, "method": "echo"}) == {
        "jsonrpc": "2.0",
        "id": 1,
        "result": None,
    }


async def test_a_frame_that_is_not_utf8_is_a_parse_error_and_serving_goes_on(wire):
    await wire.send(b'{"jsonrpc":"2.0","id":1,"method":"echo","params":["caf\xe9"]}\n')
    answer = await wire.frame()
    assert answer["id"] is None
    assert answer["error"]["code"] == PARSE_ERROR
    assert answer["error"]["message"].startswith("Parse error: the frame is not UTF-8")
    assert await wire.ask({"jsonrpc": "2.0", "id": 2, "method": "echo", "params": ["café"]}) == {
        "jsonrpc": "2.0",
        "id": 2,
        "result": ["café"],
    }


@pytest.mark.parametrize(
    ("frame", "answer_id", "problem"),
    [
        (b"1", None, "a message must be a JSON object"),
        (b'"echo"', None, "a message must be a JSON object"),
        (b'{"id":1,"method":"echo"}', 1, "'jsonrpc' must be \"2.0\""),
        (b'{"jsonrpc":"1.0","id":1,"method":"echo"}', 1, "'jsonrpc' must be \"2.0\""),
        (b'{"jsonrpc":"2.0","id":1}', 1, "'method' is missing"),
        (b'{"jsonrpc":"2.0","id":1,"method":5}', 1, "'method' must be a string"),
        (b'{"jsonrpc":"2.0","method":1,"params":"bar"}', None, "'method' must be a string"),
        (b'{"jsonrpc":"2.0","id":{"n":1},"method":"echo"}', None, "'id' must be a string, a number or null"),
        (b'{"jsonrpc":"2.0","id":true,"method":"echo"}', None, "'id' must be a string, a number or null"),
        (
            b'{"jsonrpc":"2.0","id":1,"method":"echo","params":"x"}',
            1,
            "'params' must be an object or an array",
        ),
    ],
)
async def test_an_invalid_request_is_answered_with_32600(wire, frame, answer_id, problem):
    await wire.send(frame + b"\n")
    assert await wire.frame() == {
        "jsonrpc": "2.0",
        "id": answer_id,
        "error": {"code": INVALID_REQUEST, "message": f"Invalid Request: {problem}"},
    }


async def test_an_unknown_method_is_32601(wire):
    await wire.send(b'{"jsonrpc":"2.0","id":1,"method":"nope"}\n')
    assert (
        await wire.line()
        == b'{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found: nope"}}\n'
    )


class Move(pydantic.BaseModel):
    path: str
    line: int


async def test_invalid_params_and_validation_errors_are_32602(wire):
    async def strict(params):
        if not isinstance(params, dict):
            raise InvalidParams("params must be an object", data={"got": type(params).__name__})
        return Move.model_validate(params).model_dump()

    wire.peer.add_method("move", strict)
    await wire.send(b'{"jsonrpc":"2.0","id":1,"method":"move","params":[1]}\n')
    assert await wire.line() == (
        b'{"jsonrpc":"2.0","id":1,"error":{"code":-32602,'
        b'"message":"Invalid params: params must be an object","data":{"got":"list"}}}\n'
    )
    answer = await wire.ask({"jsonrpc": "2.0", "id": 2, "method": "move", "params": {"line": "x"}})
    error = answer["error"]
    assert (answer["id"], error["code"]) == (2, INVALID_PARAMS)
    assert error["message"] == (
        "Invalid params: path: Field required; line: Input should be a valid integer, unable to parse string as an integer"
    )
    assert error["data"]["type"] == "ValidationError"
    assert [(e["loc"], e["type"]) for e in error["data"]["errors"]] == [
        (["path"], "missing"),
        (["line"], "int_parsing"),
    ]
    assert all(set(e) == {"loc", "msg", "type"} for e in error["data"]["errors"])  # never the input
    assert await wire.ask(
        {"jsonrpc": "2.0", "id": 3, "method": "move", "params": {"path": "a", "line": 2}}
    ) == {
        "jsonrpc": "2.0",
        "id": 3,
        "result": {"path": "a", "line": 2},
    }


async def test_an_unexpected_exception_is_32603_and_its_traceback_goes_to_logging(wire, caplog, capsys):
    async def boom(params):
        raise ValueError("the disk is on fire")

    wire.peer.add_method("boom", boom)
    with caplog.at_level(logging.ERROR, logger=LOGGER):
        await wire.send(b'{"jsonrpc":"2.0","id":1,"method":"boom"}\n')
        assert await wire.line() == (
            b'{"jsonrpc":"2.0","id":1,"error":{"code":-32603,'
            b'"message":"Internal error: ValueError: the disk is on fire","data":{"type":"ValueError"}}}\n'
        )
    [record] = [r for r in caplog.records if r.name == LOGGER]
    assert record.exc_info is not None
    assert record.exc_info[0] is ValueError
    assert capsys.readouterr().out == ""


async def test_a_result_that_is_not_json_becomes_32603(wire):
    async def nan(params):
        return {"value": float("nan")}

    async def opaque(params):
        return {"value": object()}

    wire.peer.add_method("nan", nan)
    wire.peer.add_method("opaque", opaque)
    for request_id, method in ((1, "nan"), (2, "opaque")):
        answer = await wire.ask({"jsonrpc": "2.0", "id": request_id, "method": method})
        assert answer["id"] == request_id
        assert answer["error"]["code"] == INTERNAL_ERROR
        assert answer["error"]["message"].startswith("Internal error: the result is not JSON")


async def test_a_lone_surrogate_in_a_result_is_escaped_instead_of_crashing(wire):
    async def surrogate(params):
        return {"text": "bad \ud800 half", "fine": "é"}

    wire.peer.add_method("surrogate", surrogate)
    await wire.send(b'{"jsonrpc":"2.0","id":1,"method":"surrogate"}\n')
    line = await wire.line()
    assert line == b'{"jsonrpc":"2.0","id":1,"result":{"text":"bad \\ud800 half","fine":"\\u00e9"}}\n'
    assert json.loads(line)["result"]["text"] == "bad \ud800 half"


async def test_a_lone_surrogate_survives_a_round_trip_between_peers(pair):
    host, sidecar = pair

    async def surrogate(params):
        return [params[0] + " and \udcff"]

    sidecar.add_method("surrogate", surrogate)
    async with asyncio.timeout(5):
        assert await host.request("surrogate", ["\ud800"]) == ["\ud800 and \udcff"]


# -- batches ------------------------------------------------------------------------------------


async def test_a_mixed_batch_gets_one_array_with_an_answer_per_request(wire):
    hello: asyncio.Queue[Any] = asyncio.Queue()

    async def total(params):
        return sum(params)

    async def notify_hello(params):
        await hello.put(params)

    wire.peer.add_method("sum", total)
    wire.peer.add_notification("notify_hello", notify_hello)
    batch = [  # the example from the JSON-RPC 2.0 specification
        {"jsonrpc": "2.0", "method": "sum", "params": [1, 2, 4], "id": "1"},
        {"jsonrpc": "2.0", "method": "notify_hello", "params": [7]},
        {"jsonrpc": "2.0", "method": "sum", "params": [42, 23], "id": "2"},
        {"foo": "boo"},
        {"jsonrpc": "2.0", "method": "foo.get", "params": {"name": "myself"}, "id": "5"},
        {"jsonrpc": "2.0", "method": "echo", "id": "9"},
    ]
    assert await wire.ask(batch) == [
        {"jsonrpc": "2.0", "id": "1", "result": 7},
        {"jsonrpc": "2.0", "id": "2", "result": 65},
        {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": -32600, "message": "Invalid Request: 'jsonrpc' must be \"2.0\""},
        },
        {"jsonrpc": "2.0", "id": "5", "error": {"code": -32601, "message": "Method not found: foo.get"}},
        {"jsonrpc": "2.0", "id": "9", "result": None},
    ]
    assert hello.get_nowait() == [7]


async def test_an_empty_batch_is_one_invalid_request(wire):
    await wire.send(b"[]\n")
    assert (
        await wire.line()
        == b'{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: empty batch"}}\n'
    )


async def test_a_batch_of_non_objects_gets_an_error_for_each(wire):
    invalid = {"code": -32600, "message": "Invalid Request: a message must be a JSON object"}
    assert await wire.ask([1, 2, 3]) == [{"jsonrpc": "2.0", "id": None, "error": invalid}] * 3


async def test_a_batch_of_notifications_gets_no_answer(wire):
    await wire.send(b'[{"jsonrpc":"2.0","method":"echo"},{"jsonrpc":"2.0","method":"nope"}]\n')
    assert await wire.ask({"jsonrpc": "2.0", "id": 1, "method": "echo", "params": ["next"]}) == {
        "jsonrpc": "2.0",
        "id": 1,
        "result": ["next"],
    }


def _in_flight(request_id: Any) -> dict[str, Any]:
    """The answer to a request reusing ``request_id`` while a request with it is in flight (SAFE-7)."""
    shown = json.dumps(request_id)
    message = (
        f"Invalid Request: id {shown} is already in use by a request still in flight; wait for its answer "
        "or give this request another id"
    )
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": -32600, "message": message}}


async def test_a_request_reusing_an_id_in_flight_is_refused_singly_and_in_batches(wire):  # SAFE-7
    gate = asyncio.Event()

    async def wait(params):
        await gate.wait()
        return "waited"

    wire.peer.add_method("wait", wait)
    held = {"jsonrpc": "2.0", "id": "a", "method": "wait"}
    again = {"jsonrpc": "2.0", "id": "a", "method": "echo", "params": ["second"]}
    # in the same read as the first, before its handler has run
    await wire.send(json.dumps(held).encode() + b"\n" + json.dumps(again).encode() + b"\n")
    assert await wire.frame() == _in_flight("a")
    # a batch: the id in flight, and an id twice within the batch itself
    batch = [
        {"jsonrpc": "2.0", "id": "a", "method": "echo"},
        {"jsonrpc": "2.0", "id": 5, "method": "echo", "params": ["five"]},
        {"jsonrpc": "2.0", "id": 5, "method": "echo", "params": ["again"]},
    ]
    assert await wire.ask(batch) == [
        _in_flight("a"),
        {"jsonrpc": "2.0", "id": 5, "result": ["five"]},
        _in_flight(5),
    ]
    assert await wire.ask({"jsonrpc": "2.0", "id": 5, "method": "echo"}) == {  # the batch answered: free
        "jsonrpc": "2.0",
        "id": 5,
        "result": None,
    }
    # "a" is still the first request's: cancellable, and answered once when it ends
    assert wire.peer.cancel_request("a") is True
    assert await wire.ask({"jsonrpc": "2.0", "id": "a", "method": "echo", "params": [1]}) == {
        "jsonrpc": "2.0",
        "id": "a",
        "result": [1],
    }


async def test_a_batch_request_cannot_be_cancelled_and_holds_its_id_until_the_batch_is_answered(wire):
    gate = asyncio.Event()

    async def wait(params):
        await gate.wait()
        return "waited"

    wire.peer.add_method("wait", wait)
    await wire.send(json.dumps([{"jsonrpc": "2.0", "id": 1, "method": "wait"}]).encode() + b"\n")
    assert await wire.ask({"jsonrpc": "2.0", "id": 1, "method": "echo"}) == _in_flight(1)  # SAFE-7
    assert wire.peer.cancel_request(1) is False
    gate.set()
    assert await wire.frame() == [{"jsonrpc": "2.0", "id": 1, "result": "waited"}]
    assert await wire.ask({"jsonrpc": "2.0", "id": 1, "method": "echo"}) == {
        "jsonrpc": "2.0",
        "id": 1,
        "result": None,
    }


# -- framing limits -----------------------------------------------------------------------------


async def test_an_oversized_frame_is_refused_and_the_next_frame_is_served(make_wire):
    wire = await make_wire(max_frame_bytes=1000)
    exact = b'{"jsonrpc":"2.0","id":3,"method":"echo","params":["fits"]}'
    exact += b" " * (1000 - len(exact))
    # over the limit by one byte, far over it (several read chunks), then exactly at the limit
    await wire.send(b"x" * 1001 + b"\n" + b"y" * (3 * 1024 * 1024) + b"\n" + exact + b"\n")
    expected = (
        b'{"jsonrpc":"2.0","id":null,"error":{"code":-32600,'
        b'"message":"Invalid Request: frame too large (over 1000 bytes)"}}\n'
    )
    assert await wire.line() == expected
    assert await wire.line() == expected
    assert await wire.frame() == {"jsonrpc": "2.0", "id": 3, "result": ["fits"]}


async def test_blank_lines_and_crlf_endings_are_tolerated(wire):
    await wire.send(b"\n  \r\n" + b'{"jsonrpc":"2.0","id":1,"method":"echo","params":[1]}\r\n')
    assert await wire.frame() == {"jsonrpc": "2.0", "id": 1, "result": [1]}


# -- responses, EOF, timeouts, close ------------------------------------------------------------


async def test_a_response_for_an_unknown_id_is_logged_and_dropped(wire, caplog):
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        pending = asyncio.create_task(wire.peer.request("host.thing", {"q": 1}))
        request = await wire.frame()
        assert request == {"jsonrpc": "2.0", "id": request["id"], "method": "host.thing", "params": {"q": 1}}
        await wire.send(b'{"jsonrpc":"2.0","id":999,"result":"stray"}\n')
        await wire.send(b'{"jsonrpc":"2.0","id":"%d","result":"wrong type"}\n' % request["id"])
        await wire.send(b'{"jsonrpc":"2.0","id":%d,"result":"right"}\n' % request["id"])
        async with asyncio.timeout(5):
            assert await pending == "right"
    dropped = [r.getMessage() for r in caplog.records if "late or unknown" in r.getMessage()]
    assert len(dropped) == 2
    assert "999" in dropped[0]


async def test_an_error_response_raises_remote_error_with_code_message_and_data(wire):
    pending = asyncio.create_task(wire.peer.request("host.thing"))
    request = await wire.frame()
    await wire.send(
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": request["id"],
                "error": {"code": -32011, "message": "try again", "data": {"k": 1}},
            }
        ).encode()
        + b"\n"
    )
    with pytest.raises(RemoteError) as caught:
        async with asyncio.timeout(5):
            await pending
    assert (caught.value.code, caught.value.message, caught.value.data) == (-32011, "try again", {"k": 1})
    assert not isinstance(caught.value, PeerClosedError)


async def test_an_answer_too_deep_to_decode_fails_its_request_instead_of_leaving_it_waiting(wire):  # SAFE-6
    pending = asyncio.create_task(wire.peer.request("host.thing"))
    request = await wire.frame()
    deep = "[" * 5_000 + "]" * 5_000
    await wire.send(f'{{"jsonrpc":"2.0","result":{deep},"id":{request["id"]}}}\n'.encode())
    with pytest.raises(RemoteError) as caught:
        async with asyncio.timeout(5):
            await pending
    assert (caught.value.code, caught.value.message) == (
        PARSE_ERROR,
        "Parse error: the answer was nested too deeply to decode",
    )
    # the wire still gets JSON-RPC's parse error, with a null id: a response is never answered as a request
    assert await wire.frame() == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": PARSE_ERROR, "message": "Parse error: too deeply nested"},
    }
    assert await wire.ask({"jsonrpc": "2.0", "id": "next", "method": "echo"})  # serving goes on


async def test_a_request_too_deep_to_decode_is_answered_with_its_top_level_id(wire):  # SAFE-6
    deep = "[" * 5_000 + "]" * 5_000
    head = '{"jsonrpc":"2.0","method":"echo","params":'
    frames = [
        ('{"jsonrpc":"2.0","id":1,"method":"echo","params":' + deep + "}", 1),
        (head + "[" + deep + '],"id":"last"}', "last"),
        (head + '{"id":2,"p":' + deep + "}}", None),  # an id deeper down only
        (head + deep + ',"id":true}', None),  # not an id
        (head + deep + ',"id":3', None),  # the top level is not JSON
        (head + "[" + deep[:-1] + '}],"id":4}', None),  # brackets that do not match
    ]
    for frame, request_id in frames:
        await wire.send(frame.encode() + b"\n")
        answer = await wire.frame()
        assert (answer["id"], answer["error"]["code"]) == (request_id, PARSE_ERROR), frame[-40:]


@pytest.mark.parametrize(
    ("text", "members"),
    [
        ('{"id": 7, "method": "m", "params": {"id": 8}}', {"id": 7, "method": "m"}),
        ('{"\\u0069d": "x", "method": "m"}', {"id": "x", "method": "m"}),  # an escaped name is the name
        (
            '{"id": 1, "method": "m", "p": ["]}", "[{"], "id": 2}',
            {"id": 2, "method": "m"},
        ),  # the last, as json
        ('{"id": [1], "method": {"n": 1}}', {"id": NESTED, "method": NESTED}),
        ('{"id": 1.5, "method": null, "result": false}', {"id": 1.5, "method": None, "result": False}),
        (" {} ", {}),
        ("[1, 2]", None),
        ('{"id": 1} {"id": 2}', None),
        ('{"id": 1e999}', None),
        ('{"id": NaN}', None),
        ('{"id": 01}', None),
        ('{"id": ' + "9" * 5_000 + "}", None),  # past the interpreter's digit limit
        ('{"id": "\x01"}', None),  # a control character in a string
        ('{"p": "[", "id": 1', None),
    ],
)
def test_the_shallow_scan_reads_only_top_level_json(text, members):  # SAFE-6
    assert top_level_scalars(text, ("id", "method", "result")) == members


def test_the_shallow_scan_stops_at_its_budget_and_never_recurses():  # SAFE-6
    runaway = "[" * 2_000_000 + "]" * 2_000_000  # two tokens, however deep
    assert top_level_scalars('{"p": ' + runaway + ', "id": 1}', ("id",)) == {"id": 1}
    levels = MAX_SKIP_TOKENS // 2 + 1  # a string and a bracket a level: one token each
    costly = '["",' * levels + '""' + "]" * levels
    assert top_level_scalars('{"p": ' + costly + ', "id": 1}', ("id",)) is None
    within = '["",' * (levels // 2) + '""' + "]" * (levels // 2)
    assert top_level_scalars('{"p": ' + within + ', "id": 1}', ("id",)) == {"id": 1}


async def test_eof_fails_pending_requests_with_peer_closed(wire):
    pending = [asyncio.create_task(wire.peer.request("host.slow", [n])) for n in range(3)]
    for _ in pending:
        await wire.frame()
    await wire.eof()
    for task in pending:
        with pytest.raises(PeerClosedError):
            async with asyncio.timeout(5):
                await task
    async with asyncio.timeout(5):
        await wire.serving  # serve() returns on EOF
    assert wire.peer.closed
    with pytest.raises(PeerClosedError):
        await wire.peer.request("anything")
    with pytest.raises(PeerClosedError):
        await wire.peer.notify("anything")


async def test_a_timeout_forgets_the_request_and_a_late_answer_is_dropped(wire, caplog):
    with pytest.raises(TimeoutError):
        await wire.peer.request("host.never", timeout_s=0.05)
    request = await wire.frame()
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        await wire.send(b'{"jsonrpc":"2.0","id":%d,"result":"too late"}\n' % request["id"])
        assert await wire.ask({"jsonrpc": "2.0", "id": "ping", "method": "echo"})
    assert any("late or unknown" in r.getMessage() for r in caplog.records)


async def test_after_eof_in_flight_handlers_may_finish_and_answer(wire):
    release = asyncio.Event()

    async def slow(params):
        await release.wait()
        return "finished after EOF"

    wire.peer.add_method("slow", slow)
    seen_eof = asyncio.Event()
    wire.peer.on_eof = seen_eof.set
    await wire.send(b'{"jsonrpc":"2.0","id":1,"method":"slow"}\n')
    await wire.eof()
    async with asyncio.timeout(5):
        await seen_eof.wait()  # the reader saw EOF with the handler still in flight
    release.set()
    assert await wire.frame() == {"jsonrpc": "2.0", "id": 1, "result": "finished after EOF"}
    async with asyncio.timeout(5):
        await wire.serving


async def test_after_eof_handlers_past_the_drain_timeout_are_cancelled(make_wire):
    wire = await make_wire(drain_timeout_s=0.05)
    started = asyncio.Event()
    cancelled = asyncio.Event()

    async def stuck(params):
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    wire.peer.add_method("stuck", stuck)
    await wire.send(b'{"jsonrpc":"2.0","id":1,"method":"stuck"}\n')
    async with asyncio.timeout(5):
        await started.wait()
        await wire.eof()
        await wire.serving
    assert cancelled.is_set()


async def test_aclose_cancels_handlers_and_fails_pending_requests(wire):
    started = asyncio.Event()
    cancelled = asyncio.Event()

    async def stuck(params):
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    wire.peer.add_method("stuck", stuck)
    await wire.send(b'{"jsonrpc":"2.0","id":1,"method":"stuck"}\n')
    pending = asyncio.create_task(wire.peer.request("host.slow"))
    await wire.frame()
    async with asyncio.timeout(5):
        await started.wait()
        await wire.peer.aclose()
        await wire.serving
    assert cancelled.is_set()
    with pytest.raises(PeerClosedError):
        await pending


async def test_cancelling_serve_cancels_handlers_fails_pending_and_propagates(wire):
    started = asyncio.Event()
    cancelled = asyncio.Event()

    async def stuck(params):
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    wire.peer.add_method("stuck", stuck)
    await wire.send(b'{"jsonrpc":"2.0","id":1,"method":"stuck"}\n')
    pending = asyncio.create_task(wire.peer.request("host.slow"))
    await wire.frame()
    async with asyncio.timeout(5):
        await started.wait()
        wire.serving.cancel()
        with pytest.raises(asyncio.CancelledError):
            await wire.serving
    assert cancelled.is_set()
    with pytest.raises(PeerClosedError):
        await pending
    async with asyncio.timeout(5):
        await wire.peer.aclose()  # returns at once: already shut down


async def test_aclose_from_inside_a_handler_does_not_wait_for_itself(wire):
    async def stop(params):
        await wire.peer.aclose()
        await asyncio.sleep(0)  # the shutdown cancels this handler at its next await
        return "never sent"

    wire.peer.add_method("stop", stop)
    await wire.send(b'{"jsonrpc":"2.0","id":1,"method":"stop"}\n')
    async with asyncio.timeout(5):
        await wire.serving
    assert wire.peer.closed


async def test_the_peer_is_an_async_context_manager_that_serves_in_the_background():
    (a_reader, a_writer), (b_reader, b_writer) = await _stream_pair()
    sidecar = JsonRpcPeer(b_reader, b_writer, name="sidecar")
    sidecar.add_method("echo", _echo)
    async with asyncio.timeout(5):
        async with sidecar, JsonRpcPeer(a_reader, a_writer, name="host") as host:
            assert await host.request("echo", {"x": 1}) == {"x": 1}
        assert host.closed and sidecar.closed
        for writer in (a_writer, b_writer):
            await _close(writer)
        await a_reader.read()
        await b_reader.read()


async def test_registering_a_name_twice_or_a_reserved_name_is_a_user_error(wire):
    from steerable_agent_runtime.errors import UserError

    with pytest.raises(UserError):
        wire.peer.add_method("echo", _echo)
    with pytest.raises(UserError):
        wire.peer.add_notification("echo", _echo)
    with pytest.raises(UserError):
        wire.peer.add_method("rpc.discover", _echo)


# -- the SteerableError code table --------------------------------------------------------------


@functools.cache
def _steerable_error_classes() -> list[type[SteerableError]]:
    """Every SteerableError subclass defined in steerable's own packages (all modules imported)."""
    for package in (steerable_agent_runtime, steerable_sidecar):
        for module in pkgutil.walk_packages(package.__path__, prefix=f"{package.__name__}."):
            if module.name.endswith("__main__"):
                continue
            if module.name == "steerable_sidecar.harbor" and importlib.util.find_spec("harbor") is None:
                continue  # the Harbor adapter needs the `harbor` extra (Python 3.12+); it raises nothing
            importlib.import_module(module.name)
    found, todo = [], [SteerableError]
    while todo:
        cls = todo.pop()
        # steerable_sidecar.sidecar._remote_errors' classes mirror these on the calling side (each a
        # RemoteError too): they are never raised by a handler, so they need no code of their own.
        if cls.__module__.split(".")[0] in {"steerable_agent_runtime", "steerable_sidecar"} and (
            cls.__module__ != "steerable_sidecar.sidecar._remote_errors"
        ):
            found.append(cls)
        todo.extend(cls.__subclasses__())
    return sorted(set(found), key=lambda c: c.__name__)


def test_every_steerable_error_has_its_own_code_in_the_server_range():
    error_classes = _steerable_error_classes()
    missing = [cls.__name__ for cls in error_classes if cls not in ERROR_CODES]
    assert missing == [], f"add these to rpc.ERROR_CODES and docs/sidecar-protocol.md: {missing}"
    codes = [ERROR_CODES[cls] for cls in error_classes]
    assert len(set(codes)) == len(codes)
    assert all(-32099 <= code <= -32000 for code in codes)
    assert set(ERROR_CODES) <= set(error_classes)  # no stale entries either


def test_every_code_is_documented_in_the_protocol_doc():
    doc = DOC.read_text(encoding="utf-8")
    for cls, code in ERROR_CODES.items():
        assert re.search(rf"^\|\s*`{cls.__name__}`\s*\|\s*`?{code}`?\s*\|", doc, re.MULTILINE), cls.__name__
    for code in (PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR):
        assert str(code) in doc


def test_peer_closed_error_carries_its_table_code():
    assert PeerClosedError().code == ERROR_CODES[PeerClosedError]


def test_error_code_for_picks_the_most_specific_class():
    from steerable_agent_runtime.errors import EditError, ToolRetry

    class PluginRetry(ToolRetry):  # defined outside steerable: inherits its parent's code
        pass

    assert error_code_for(EditError("not_found", "x")) == ERROR_CODES[EditError]
    assert error_code_for(PluginRetry("x")) == ERROR_CODES[ToolRetry]
    assert error_code_for(InvalidParams("x")) == INVALID_PARAMS
    assert error_code_for(KeyError("x")) == INTERNAL_ERROR


def _instance(cls: type[SteerableError]) -> SteerableError:
    for args in (("boom",), (-32001, "boom"), ()):
        try:
            return cls(*args)
        except TypeError:
            continue
    pytest.fail(f"add a way to build {cls.__name__} to _instance()")


async def test_a_handler_raising_each_steerable_error_is_answered_with_its_code(wire):
    error_classes = _steerable_error_classes()
    by_name = {cls.__name__: cls for cls in error_classes}

    async def raise_it(params):
        raise _instance(by_name[params["name"]])

    wire.peer.add_method("raise", raise_it)
    tabled = [cls for cls in error_classes if cls in ERROR_CODES]  # the rest fail the table test above
    for request_id, cls in enumerate(tabled):
        answer = await wire.ask(
            {"jsonrpc": "2.0", "id": request_id, "method": "raise", "params": {"name": cls.__name__}}
        )
        assert answer["id"] == request_id
        assert answer["error"]["code"] == ERROR_CODES[cls], cls.__name__
        assert answer["error"]["data"]["type"] == cls.__name__


async def test_error_data_carries_the_machine_readable_attributes(wire):
    from steerable_agent_runtime.errors import EditError, ProviderError

    errors = {
        "edit": EditError("ambiguous", "old_string matches 2 places", data={"matches": 2}),
        "provider": ProviderError("HTTP 429 from the provider", status=429, retryable=True),
    }

    async def fail(params):
        raise errors[params[0]]

    wire.peer.add_method("fail", fail)
    edit = await wire.ask({"jsonrpc": "2.0", "id": 1, "method": "fail", "params": ["edit"]})
    assert edit["error"] == {
        "code": ERROR_CODES[EditError],
        "message": "old_string matches 2 places",
        "data": {"type": "EditError", "code": "ambiguous", "data": {"code": "ambiguous", "matches": 2}},
    }
    provider = await wire.ask({"jsonrpc": "2.0", "id": 2, "method": "fail", "params": ["provider"]})
    assert provider["error"]["data"] == {"type": "ProviderError", "status": 429, "retryable": True}


async def test_a_failed_reverse_call_inside_a_handler_is_reported_as_remote_error(pair):
    host, sidecar = pair

    async def needs_host(params):
        return await sidecar.request("host.missing")

    sidecar.add_method("needs_host", needs_host)
    with pytest.raises(RemoteError) as caught:
        async with asyncio.timeout(5):
            await host.request("needs_host")
    assert caught.value.code == ERROR_CODES[RemoteError]
    assert caught.value.data == {"type": "RemoteError", "remoteCode": METHOD_NOT_FOUND}
    assert "Method not found: host.missing" in caught.value.message


# -- the real stdio of a child process ----------------------------------------------------------

SCRIPT = str(HERE.parent / "rpc_stdio_peer.py")


async def test_a_child_on_its_real_stdio_answers_and_stray_output_goes_to_stderr(child_env):
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        SCRIPT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=child_env(),
    )
    assert proc.stdin is not None
    async with asyncio.timeout(30):
        proc.stdin.write(b'{"jsonrpc":"2.0","id":1,"method":"echo","params":{"text":"hi \xc3\xa9"}}\n')
        proc.stdin.write(b'{"jsonrpc":"2.0","id":2,"method":"echo","params":[2]}\n')
        proc.stdin.close()
        stdout, stderr = await proc.communicate()
    assert proc.returncode == 0, stderr.decode()
    assert stdout == (
        '{"jsonrpc":"2.0","id":1,"result":{"text":"hi é"}}\n{"jsonrpc":"2.0","id":2,"result":[2]}\n'.encode()
    )
    for stray in ("stray print from a handler", "stray bytes on fd 1", "stray output from a child process"):
        assert stderr.decode().count(stray) == 2, stderr.decode()
    assert "served until EOF" in stderr.decode()


async def test_a_child_peer_makes_reverse_calls_to_its_host(child_env):
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        SCRIPT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=child_env(),
    )
    assert proc.stdout is not None and proc.stdin is not None
    host = JsonRpcPeer(proc.stdout, proc.stdin, name="host")

    async def add(params):
        return params["a"] + params["b"]

    host.add_method("host.add", add)
    async with asyncio.timeout(30):
        async with host:
            assert await host.request("ask_host", {"a": 20, "b": 22}) == 42
            assert await host.request("echo", ["fine"]) == ["fine"]
        proc.stdin.close()
        assert await proc.wait() == 0


def test_a_child_reading_a_regular_file_and_writing_a_regular_file_still_serves(child_env, tmp_path):
    requests = tmp_path / "requests.jsonl"
    requests.write_bytes(
        b'{"jsonrpc":"2.0","id":1,"method":"echo","params":[1]}\n'
        b'{"jsonrpc":"2.0","method":"echo","params":["a notification"]}\n'
        b"not json\n"
        b'{"jsonrpc":"2.0","id":2,"method":"echo","params":[2]}'  # no final newline
    )
    answers = tmp_path / "answers.jsonl"
    with requests.open("rb") as stdin, answers.open("wb") as stdout:
        run = subprocess.run(
            [sys.executable, SCRIPT],
            stdin=stdin,
            stdout=stdout,
            stderr=subprocess.PIPE,
            env=child_env(),
            timeout=30,
        )
    assert run.returncode == 0, run.stderr.decode()
    lines = sorted(answers.read_bytes().splitlines())  # the three answers race each other
    assert lines == sorted(
        [
            b'{"jsonrpc":"2.0","id":1,"result":[1]}',
            b'{"jsonrpc":"2.0","id":2,"result":[2]}',
            b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,'
            b'"message":"Parse error: Expecting value: line 1 column 1 (char 0)"}}',
        ]
    )


def test_a_child_with_stdin_on_dev_null_exits_cleanly(child_env):
    run = subprocess.run(
        [sys.executable, SCRIPT], stdin=subprocess.DEVNULL, capture_output=True, env=child_env(), timeout=30
    )
    assert run.returncode == 0, run.stderr.decode()
    assert run.stdout == b""
    assert b"served until EOF" in run.stderr


@pytest.mark.parametrize(
    "frame",
    [
        b'{"jsonrpc":"2.0","id":NaN,"method":"echo"}\n',
        b'{"jsonrpc":"2.0","id":1e999,"method":"echo"}\n',
        b'{"jsonrpc":"2.0","id":1,"method":"echo","params":[Infinity]}\n',
    ],
)
async def test_non_json_numbers_are_parse_errors_and_always_answered(wire, frame):
    await wire.send(frame)
    answer = await wire.frame()
    assert answer["id"] is None and answer["error"]["code"] == PARSE_ERROR
    assert await wire.ask({"jsonrpc": "2.0", "id": "next", "method": "echo"})  # serving goes on
