"""A local fake of Anthropic's Messages API for driving a real host CLI: stdlib only, loopback only.

::

    with FakeAnthropic(answer) as fake:
        ...start the host with ANTHROPIC_BASE_URL=fake.base_url ("http://127.0.0.1:PORT")...
        fake.messages_requests()[0]["tools"]  # -> what the host offered the model first

``answer(body)`` gets each ``POST /v1/messages`` body (parsed JSON) and returns the assistant's
content blocks: ``{"type": "text", "text": ...}`` or ``{"type": "tool_use", "id", "name",
"input"}``. A request with ``"stream": true`` gets them as the Messages API's server-sent events
(``message_start``, per block ``content_block_start`` / ``_delta`` / ``_stop``, ``message_delta``
with the stop reason, ``message_stop``); without it, one ``message`` JSON object. Every request
(any method and path) is recorded in :attr:`FakeAnthropic.requests`; a path other than
``/v1/messages`` gets a 404 with an Anthropic-shaped error body.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

Answer = Callable[[dict[str, Any]], list[dict[str, Any]]]


@dataclass(frozen=True)
class Received:
    """One request as the fake server got it."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any  # parsed JSON, or the raw text when it is not JSON


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def _events(message_id: str, model: str, blocks: list[dict[str, Any]]) -> list[bytes]:
    """The Messages API's stream for an answer made of ``blocks``."""
    stop_reason = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
    start: dict[str, Any] = {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 1},
    }
    out = [_sse("message_start", {"type": "message_start", "message": start})]
    for index, block in enumerate(blocks):
        if block["type"] == "text":
            head: dict[str, Any] = {"type": "text", "text": ""}
            delta: dict[str, Any] = {"type": "text_delta", "text": block["text"]}
        else:
            head = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        out.append(
            _sse(
                "content_block_start", {"type": "content_block_start", "index": index, "content_block": head}
            )
        )
        out.append(
            _sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
        )
        out.append(_sse("content_block_stop", {"type": "content_block_stop", "index": index}))
    out.append(
        _sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": 5},
            },
        )
    )
    out.append(_sse("message_stop", {"type": "message_stop"}))
    return out


class FakeAnthropic:
    """``POST /v1/messages`` on 127.0.0.1, answered by ``answer``; a context manager."""

    def __init__(self, answer: Answer) -> None:
        self._answer = answer
        self._lock = threading.Lock()
        self.requests: list[Received] = []
        self.errors: list[str] = []  # what ``answer`` raised, so a test can fail with it
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-anthropic", daemon=True)

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT``, what ``ANTHROPIC_BASE_URL`` takes (the client adds ``/v1/...``)."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def messages_requests(self) -> list[dict[str, Any]]:
        """The bodies of the ``POST /v1/messages`` requests received so far, in order."""
        with self._lock:
            return [
                r.body
                for r in self.requests
                if r.method == "POST" and r.path.split("?")[0] == "/v1/messages" and isinstance(r.body, dict)
            ]

    def __enter__(self) -> FakeAnthropic:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        return type("Handler", (_Handler,), {"fake": self})


class _Handler(BaseHTTPRequestHandler):
    fake: ClassVar[FakeAnthropic]
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: the requests are recorded instead

    def _record(self) -> Received:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length).decode("utf-8", "replace") if length else ""
        try:
            body: Any = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            body = raw
        received = Received(self.command, self.path, dict(self.headers.items()), body)
        with self.fake._lock:
            self.fake.requests.append(received)
        return received

    def _json(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _not_found(self) -> None:
        error = {"type": "not_found_error", "message": f"no {self.command} {self.path} here"}
        self._json(404, {"type": "error", "error": error})

    def do_GET(self) -> None:
        self._record()
        self._not_found()

    def do_HEAD(self) -> None:
        self._record()
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self) -> None:
        received = self._record()
        if received.path.split("?")[0] != "/v1/messages" or not isinstance(received.body, dict):
            self._not_found()
            return
        try:
            blocks = self.fake._answer(received.body)
        except Exception as exc:  # reported to the test, and to the host as a 500
            self.fake.errors.append(repr(exc))
            self._json(500, {"type": "error", "error": {"type": "api_error", "message": repr(exc)}})
            return
        with self.fake._lock:
            message_id = f"msg_fake_{len(self.fake.requests)}"
        model = str(received.body.get("model", "fake-model"))
        if not received.body.get("stream"):
            self._json(200, self._message(message_id, model, blocks))
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        for event in _events(message_id, model, blocks):
            self.wfile.write(event)
            self.wfile.flush()
        self.close_connection = True

    @staticmethod
    def _message(message_id: str, model: str, blocks: list[dict[str, Any]]) -> dict[str, Any]:
        stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
        return {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": blocks,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }
