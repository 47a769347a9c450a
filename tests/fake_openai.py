"""A local OpenAI-compatible chat-completions server for tests: the real wire format, no internet.

In a test (the ``fake_openai`` fixture in ``tests/conftest.py`` does this for you)::

    with FakeOpenAI() as fake:
        fake.script([{"text": "hello"}])
        ...point a provider at fake.base_url ("http://127.0.0.1:PORT/v1")...
        fake.requests[0].body["stream"]  # -> True

As a subprocess (for end-to-end tests that start a sidecar with ``STEERABLE_BASE_URL``)::

    python tests/fake_openai.py --port-file PORT_FILE --script turns.json

prints ``FAKE_OPENAI_PORT=<port>`` on stdout, writes the port to ``PORT_FILE`` (atomically, once the
server accepts connections), and serves until SIGTERM/SIGINT. ``POST /_script`` with a JSON list
queues more turns; ``GET /_requests`` returns every request received so far.

Turns, consumed one per ``POST /v1/chat/completions``:

* ``{"text": str, "tool_calls": [{"id", "name", "arguments": str}], "usage": {"prompt_tokens",
  "completion_tokens"}, "finish_reason"?: str}``: a model answer. With ``"stream": true`` in the
  request it streams as OpenAI does: a role delta, the text in word-sized chunks, each tool call
  as a first delta (index, id, name, empty arguments) then its arguments in 5-character
  fragments, a chunk carrying ``finish_reason``, a usage chunk with ``"choices": []`` when the
  request asked for ``stream_options.include_usage``, then ``data: [DONE]``. Without streaming it
  answers one ``chat.completion`` JSON object. ``"non_streaming": true`` answers JSON even to a
  streaming request (a server that ignores ``stream``).
* ``{"status": 429, "body": {...} | str, "headers": {...}}``: an HTTP error answer.
* ``{"raw_sse": [...]}``: a hand-written event stream; a string item is written as-is plus
  ``"\\n"`` (so ``"data: [DONE]"`` needs a following ``""``), a mapping item becomes
  ``data: <json>`` plus a blank line. Add ``"abort": true`` to drop the connection afterwards
  (no chunked terminator), or ``"hang": true`` to stop sending without closing. A ``bytes`` item
  is written as-is (in-process only). ``"split_bytes": n`` sends the whole stream in pieces of
  ``n`` bytes instead of one piece per item (so a UTF-8 character can straddle two pieces), and
  ``"drip_ms": ms`` waits that long after each piece (a slow drip).
* ``{"hang": true}``: accept the request and never answer (until the server stops).

``fake.route = fn`` answers each chat request with the turn ``fn(body)`` (``body`` the request's
JSON) instead of the queue: for several clients at once, each picked out by its own messages.

Thinking models: ``"reasoning": str`` on a model answer streams it before the text as
``reasoning_content`` deltas, word by word (DeepSeek's shape; ``"reasoning_key": "reasoning"`` for
OpenRouter's and Ollama's), and puts it in a non-streamed ``message``. ``"require_reasoning":
"reasoning_content"`` on any turn makes the server check the request first, as DeepSeek's thinking
mode does: an assistant message with tool calls that lacks that key answers HTTP 400 with
DeepSeek's error body (:data:`DEEPSEEK_REASONING_400`). ``"reject_null_content": true`` answers
an assistant message with ``content: null`` and no tool calls as Ollama does
(:data:`OLLAMA_NIL_CONTENT_400`).

With no turn left the server answers HTTP 500 with an error naming the problem.

Vendors: ``FakeOpenAI(vendor="gemini")`` (``--vendor gemini``) refuses, before answering a turn,
a request that breaks that vendor's documented rules, with the vendor's own status and error body
(``tests/vendor_rules.py``). Chat completions are served at any ``.../chat/completions`` path
(Azure's ``/openai/deployments/<name>/chat/completions?api-version=...`` too); ``Received.query``
keeps the query string. ``fake.canned[path] = {...}`` (or a function of the request's JSON body)
answers any other GET or POST at ``path`` (llama.cpp's ``/props`` and ``/apply-template``, Ollama's
``/api/show``; ``bytes`` go out as they are); an unknown path is a 404, as on a server without that endpoint. Those requests are
listed in ``fake.probes``, not ``fake.requests``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import re
import signal
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from vendor_rules import RULES

DEFAULT_USAGE = {"prompt_tokens": 10, "completion_tokens": 5}
DEEPSEEK_REASONING_400: dict[str, Any] = {
    "error": {
        "message": "The reasoning_content in the thinking mode must be passed back to the API.",
        "type": "invalid_request_error",
        "param": None,
        "code": "invalid_request_error",
    }
}
"""DeepSeek's answer to a thinking-mode request whose tool-calling assistant message lost its reasoning."""
OLLAMA_NIL_CONTENT_400 = {
    "error": {
        "message": "invalid message content type: <nil>",
        "type": "invalid_request_error",
        "param": None,
    }
}
"""Ollama's OpenAI layer's answer to an assistant message with ``content: null`` and no tool calls."""
ARGUMENT_FRAGMENT_CHARS = 5
_WORDS = re.compile(r"\s*\S+\s*|\s+")


@dataclass(frozen=True)
class Received:
    """One request the server received: path, headers (lower-case names), JSON body, client port.

    Two requests with the same ``client_port`` came over one (kept-alive) connection.
    """

    path: str
    headers: dict[str, str]
    body: Any
    client_port: int | None = None
    query: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "query": self.query,
            "headers": self.headers,
            "body": self.body,
            "client_port": self.client_port,
        }


class _Abort(Exception):
    """Raised inside a streaming body to drop the connection mid-response."""


def _turn(turn: Any) -> Mapping[str, Any]:
    """A scripted turn in the server's shape (see :meth:`FakeOpenAI.script`)."""
    if isinstance(turn, str):
        return {"text": turn}
    calls = turn.get("tool_calls") if isinstance(turn, Mapping) else None
    if not calls:
        return dict(turn)
    fixed = [
        {
            **c,
            "arguments": c["arguments"]
            if isinstance(c.get("arguments", ""), str)
            else json.dumps(c["arguments"]),
        }
        for c in calls
    ]
    return {**turn, "tool_calls": fixed}


class FakeOpenAI:
    """The server, run by uvicorn on 127.0.0.1 in a background thread.

    Args:
        turns: Turns to queue before the first request.
        port: The port to bind (0 picks a free one).
        model: The model name answered when the request names none.
    """

    def __init__(
        self,
        turns: Iterable[Mapping[str, Any]] = (),
        *,
        port: int = 0,
        model: str = "fake-model",
        vendor: str | None = None,
    ):
        self.model = model
        self.vendor = vendor  # whose rules each request must follow (tests/vendor_rules.py)
        self.canned: dict[str, Any] = {}  # path -> the JSON any other GET/POST there answers
        self.probes: list[Received] = []  # the requests to any other path (kept apart from requests)
        # answers each chat request from its JSON body instead of the queue (concurrent clients)
        self.route: Callable[[Any], Mapping[str, Any] | str] | None = None
        self.requests: list[Received] = []
        self._turns: deque[Mapping[str, Any]] = deque(_turn(t) for t in turns)
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", port))
        self.port: int = self._sock.getsockname()[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._release = asyncio.Event()  # set to release hanging requests; replaced by reset()

    # -- control ---------------------------------------------------------------------------------

    def script(self, turns: Iterable[Mapping[str, Any] | str]) -> None:
        """Queue turns (answered in order, one per chat-completions request).

        The scripted provider's shorthands are accepted too: a bare string is a text turn, and
        tool-call ``arguments`` may be an object (sent as its JSON text).
        """
        with self._lock:
            self._turns.extend(_turn(t) for t in turns)

    @property
    def remaining(self) -> int:
        """Turns queued and not yet answered."""
        with self._lock:
            return len(self._turns)

    def reset(self) -> None:
        """Forget queued turns and received requests, and release requests left hanging."""
        with self._lock:
            self._turns.clear()
        self.requests.clear()
        self.vendor = None
        self.canned = {}
        self.probes.clear()
        self._release_hangers()

    def start(self) -> FakeOpenAI:
        """Start serving; returns once the server accepts connections."""
        config = uvicorn.Config(
            self._app(), log_config=None, log_level="critical", access_log=False, lifespan="off"
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._sock]}, name="fake-openai", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the fake OpenAI server did not start")
            time.sleep(0.001)
        return self

    def stop(self) -> None:
        """Release hanging requests, stop the server and wait for its thread."""
        self._release_hangers()
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._sock.close()

    def _release_hangers(self) -> None:
        release, self._release = self._release, asyncio.Event()
        if self._loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop already closed
                self._loop.call_soon_threadsafe(release.set)

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- the app ---------------------------------------------------------------------------------

    def _app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/v1/chat/completions", self._chat, methods=["POST"]),
                Route("/{prefix:path}/chat/completions", self._chat, methods=["POST"]),
                Route("/v1/models", self._models, methods=["GET"]),
                Route("/_script", self._add_script, methods=["POST"]),
                Route("/_requests", self._list_requests, methods=["GET"]),
                Route("/{path:path}", self._canned, methods=["GET", "POST"]),
            ]
        )

    async def _models(self, request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [{"id": self.model, "object": "model"}]})

    async def _add_script(self, request: Request) -> Response:
        turns = await request.json()
        if not isinstance(turns, list):
            return JSONResponse({"error": {"message": "POST a JSON list of turns"}}, status_code=400)
        self.script(turns)
        return JSONResponse({"remaining": self.remaining})

    async def _canned(self, request: Request) -> Response:
        raw = await request.body()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        self.probes.append(Received(request.url.path, dict(request.headers), body, None, request.url.query))
        if request.url.path not in self.canned:
            return JSONResponse(
                {"error": {"message": "File Not Found", "type": "not_found_error"}}, status_code=404
            )
        answer = self.canned[request.url.path]
        if isinstance(answer, bytes):  # a body as-is (not JSON, nested past any decoder, huge)
            return Response(answer, media_type="application/json")
        return JSONResponse(answer(body) if callable(answer) else answer)

    async def _list_requests(self, request: Request) -> Response:
        return JSONResponse([r.to_dict() for r in self.requests])

    def _next_turn(self, body: Any) -> Mapping[str, Any] | None:
        """The turn that answers this request: :attr:`route`'s pick, else the queue's next."""
        if self.route is not None:
            return _turn(self.route(body))
        with self._lock:
            return self._turns.popleft() if self._turns else None

    async def _chat(self, request: Request) -> Response:
        self._loop = asyncio.get_running_loop()
        release = self._release
        raw = await request.body()
        try:
            body = json.loads(raw)
        except ValueError:
            body = raw.decode("utf-8", "replace")
        port = request.client.port if request.client else None
        headers = dict(request.headers)
        self.requests.append(Received(request.url.path, headers, body, port, request.url.query))
        if self.vendor is not None:
            refused = RULES[self.vendor](request.url.path, request.url.query, headers, body)
            if refused is not None:
                return JSONResponse(refused[1], status_code=refused[0])
        turn = self._next_turn(body)
        if turn is None:
            return JSONResponse(
                {"error": {"message": "fake_openai: no scripted turn left", "type": "server_error"}},
                status_code=500,
            )
        required = turn.get("require_reasoning")
        if required and not _reasoning_passed_back(body, str(required)):
            return JSONResponse(DEEPSEEK_REASONING_400, status_code=400)
        if turn.get("reject_null_content") and _has_nil_content(body):
            return JSONResponse(OLLAMA_NIL_CONTENT_400, status_code=400)
        if "status" in turn:
            payload = turn.get("body", {"error": {"message": f"HTTP {turn['status']}"}})
            headers = dict(turn.get("headers", {}))
            if isinstance(payload, str):
                return Response(payload, status_code=turn["status"], headers=headers, media_type="text/plain")
            return JSONResponse(payload, status_code=turn["status"], headers=headers)
        if "raw_sse" in turn:
            return StreamingResponse(self._raw_stream(turn, release), media_type="text/event-stream")
        if turn.get("hang"):
            await release.wait()
            return Response(status_code=503)
        model = body.get("model") if isinstance(body, dict) else None
        model = model if isinstance(model, str) and model else self.model
        streaming = isinstance(body, dict) and body.get("stream") is True and not turn.get("non_streaming")
        if not streaming:
            return JSONResponse(self._completion(turn, model))
        options = body.get("stream_options") if isinstance(body, dict) else None
        include_usage = isinstance(options, dict) and options.get("include_usage") is True
        return StreamingResponse(
            self._chunks(turn, model, include_usage=include_usage), media_type="text/event-stream"
        )

    async def _raw_stream(self, turn: Mapping[str, Any], release: asyncio.Event) -> AsyncIterator[bytes]:
        pieces = [_raw_item(item) for item in turn["raw_sse"]]
        if turn.get("split_bytes"):  # the whole stream in fixed-size pieces, across item boundaries
            body, size = b"".join(pieces), int(turn["split_bytes"])
            pieces = [body[start : start + size] for start in range(0, len(body), size)]
        for piece in pieces:
            yield piece
            if turn.get("drip_ms"):
                await asyncio.sleep(float(turn["drip_ms"]) / 1000)
        if turn.get("abort"):
            raise _Abort("fake_openai: dropping the connection as scripted")
        if turn.get("hang"):
            await release.wait()

    # -- OpenAI wire format ----------------------------------------------------------------------

    def _completion(self, turn: Mapping[str, Any], model: str) -> dict[str, Any]:
        calls = list(turn.get("tool_calls", ()))
        message: dict[str, Any] = {"role": "assistant", "content": turn.get("text") or None}
        if turn.get("reasoning"):
            message[str(turn.get("reasoning_key") or "reasoning_content")] = turn["reasoning"]
        if calls:
            message["tool_calls"] = [
                {
                    "id": c.get("id") or f"call_{next(self._ids)}",
                    "type": "function",
                    "function": {"name": c["name"], "arguments": c.get("arguments", "{}")},
                }
                for c in calls
            ]
        return {
            "id": f"chatcmpl-{next(self._ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": _finish(turn)}],
            "usage": _usage(turn),
        }

    async def _chunks(
        self, turn: Mapping[str, Any], model: str, *, include_usage: bool
    ) -> AsyncIterator[str]:
        ident = f"chatcmpl-{next(self._ids)}"
        created = int(time.time())

        def chunk(choices: list[dict[str, Any]], usage: Any = None) -> str:
            data = {
                "id": ident,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": choices,
            }
            if include_usage:
                data["usage"] = usage
            return f"data: {json.dumps(data)}\n\n"

        def delta(fields: dict[str, Any], finish: str | None = None) -> str:
            return chunk([{"index": 0, "delta": fields, "logprobs": None, "finish_reason": finish}])

        yield delta({"role": "assistant", "content": ""})
        reasoning_key = str(turn.get("reasoning_key") or "reasoning_content")
        for piece in _WORDS.findall(turn.get("reasoning") or ""):
            yield delta({"content": None, reasoning_key: piece})
        for piece in _WORDS.findall(turn.get("text") or ""):
            yield delta({"content": piece})
        for index, call in enumerate(turn.get("tool_calls", ())):
            call_id = call.get("id") or f"call_{next(self._ids)}"
            head = {"name": call["name"], "arguments": ""}
            yield delta(
                {"tool_calls": [{"index": index, "id": call_id, "type": "function", "function": head}]}
            )
            arguments = call.get("arguments", "{}")
            for start in range(0, len(arguments), ARGUMENT_FRAGMENT_CHARS):
                fragment = arguments[start : start + ARGUMENT_FRAGMENT_CHARS]
                yield delta({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]})
        yield delta({}, _finish(turn))
        if include_usage:
            yield chunk([], _usage(turn))
        yield "data: [DONE]\n\n"


def _reasoning_passed_back(body: Any, key: str) -> bool:
    """Whether every assistant message with tool calls in ``body`` carries a non-empty ``key``."""
    messages = body.get("messages") if isinstance(body, dict) else None
    for message in messages if isinstance(messages, list) else ():
        if isinstance(message, dict) and message.get("role") == "assistant" and message.get("tool_calls"):
            if not message.get(key):
                return False
    return True


def _has_nil_content(body: Any) -> bool:
    messages = body.get("messages") if isinstance(body, dict) else None
    return any(
        isinstance(m, dict) and m.get("content") is None and not m.get("tool_calls")
        for m in (messages if isinstance(messages, list) else ())
    )


def _raw_item(item: Any) -> bytes:
    """One ``raw_sse`` item on the wire: bytes as-is, a string plus ``\\n``, a mapping as a data event."""
    if isinstance(item, bytes):
        return item
    if isinstance(item, str):
        return (item + "\n").encode("utf-8")
    return f"data: {json.dumps(item)}\n\n".encode()


def _finish(turn: Mapping[str, Any]) -> str:
    return str(turn.get("finish_reason") or ("tool_calls" if turn.get("tool_calls") else "stop"))


def _usage(turn: Mapping[str, Any]) -> dict[str, int]:
    usage = {**DEFAULT_USAGE, **turn.get("usage", {})}
    prompt, completion = int(usage["prompt_tokens"]), int(usage["completion_tokens"])
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def main(argv: list[str] | None = None) -> int:
    """Serve until SIGTERM/SIGINT (see the module docstring)."""
    parser = argparse.ArgumentParser(description="A local OpenAI-compatible server for tests.")
    parser.add_argument("--port", type=int, default=0, help="port to bind on 127.0.0.1 (0: any free port)")
    parser.add_argument("--port-file", type=Path, help="write the bound port here once serving")
    parser.add_argument("--script", type=Path, help="a JSON file holding a list of turns")
    parser.add_argument("--model", default="fake-model")
    parser.add_argument("--vendor", choices=sorted(RULES), help="refuse requests as this vendor does")
    args = parser.parse_args(argv)
    turns = json.loads(args.script.read_text(encoding="utf-8")) if args.script else []
    if not isinstance(turns, list):
        parser.error(f"{args.script}: the script must be a JSON list of turns")
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    with FakeOpenAI(turns, port=args.port, model=args.model, vendor=args.vendor) as fake:
        if args.port_file:
            partial = args.port_file.with_name(args.port_file.name + ".tmp")
            partial.write_text(str(fake.port), encoding="utf-8")
            os.replace(partial, args.port_file)
        print(f"FAKE_OPENAI_PORT={fake.port}", flush=True)
        stop.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
