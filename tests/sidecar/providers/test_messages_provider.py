"""A provider's 404 names the URL posted and, for a base URL without a version segment, the fix.

Against a real loopback server shaped like a Go model server (``/v1/chat/completions`` served,
``404 page not found`` for every other path) and ``steerable run`` as a real process.
"""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from run_helpers import summary_of

from steerable_agent_runtime.errors import ProviderError
from steerable_agent_runtime.llm import ChatRequest
from steerable_sidecar.providers._openai import LLMConfig, OpenAICompatibleProvider

_ANSWER = {
    "id": "c1",
    "object": "chat.completion",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "done"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
}


class _GoLikeServer(http.server.BaseHTTPRequestHandler):
    """``POST /v1/chat/completions`` answers one completion; anything else is Go's plain 404."""

    posted: list[str]

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.posted.append(self.path)
        if self.path == "/v1/chat/completions":
            self._send(200, "application/json", json.dumps(_ANSWER).encode())
        else:
            self._send(404, "text/plain; charset=utf-8", b"404 page not found\n")

    def _send(self, status: int, content_type: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[tuple[str, list[str]]]:
    """The server's root URL (``http://127.0.0.1:PORT``, no ``/v1``) and the paths posted to it."""
    posted: list[str] = []
    handler = type("Handler", (_GoLikeServer,), {"posted": posted})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", posted
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


def _run(run_cli: Callable[..., Any], workspace: Path, tmp_path: Path, base_url: str) -> Any:
    return run_cli(
        "run",
        "-w",
        str(workspace),
        "--instruction",
        "hi",
        "--no-web-tools",
        "--quiet",
        STEERABLE_PROVIDER="openai",
        STEERABLE_MODEL="m",
        STEERABLE_API_KEY="sk-test-key-0123456789",
        STEERABLE_BASE_URL=base_url,
        STEERABLE_STATE_DIR=str(tmp_path / "state"),
    )


def test_a_base_url_without_v1_names_the_url_posted_and_the_fix(
    server: tuple[str, list[str]], run_cli: Callable[..., Any], workspace: Path, tmp_path: Path
) -> None:
    root, posted = server
    proc = _run(run_cli, workspace, tmp_path, root)
    summary = summary_of(proc)
    assert summary["exitCode"] == 4 and proc.returncode == 4, proc.stderr
    assert summary["error"] == (
        f"openai at {root} answered HTTP 404 to POST {root}/chat/completions (404 page not found): "
        f"the base URL may need /v1 (STEERABLE_BASE_URL={root}/v1)"
    )
    assert posted == ["/chat/completions"]  # a 404 is not retried

    # The fix the message names works.
    fixed = _run(run_cli, workspace, tmp_path, f"{root}/v1")
    assert summary_of(fixed)["outcome"] == "completed", fixed.stderr


async def test_a_404_under_a_versioned_base_url_names_the_url_without_a_v1_hint(
    server: tuple[str, list[str]],
) -> None:
    root, _ = server
    config = LLMConfig.from_env(
        {
            "STEERABLE_PROVIDER": "openai",
            "STEERABLE_MODEL": "m",
            "STEERABLE_BASE_URL": f"{root}/api/v2",
            "STEERABLE_API_KEY": "k",
        }
    )
    async with OpenAICompatibleProvider(config, max_retries=0) as provider:
        with pytest.raises(ProviderError) as info:
            await provider.complete(ChatRequest(messages=[{"role": "user", "content": "hi"}]))
    assert str(info.value) == (
        f"openai at {root}/api/v2 answered HTTP 404 to POST {root}/api/v2/chat/completions (404 page not found)"
    )
    assert info.value.status == 404 and not info.value.retryable


def test_a_static_file_server_is_named_as_the_url_posted_not_dumped_and_not_retried(
    run_cli: Callable[..., Any], workspace: Path, tmp_path: Path
) -> None:
    """``python -m http.server`` answers a POST with 501 and an HTML page: the message gives the
    page's words, the URL posted and the /v1 hint, at once (asking again cannot help)."""
    posted: list[str] = []

    class Static(http.server.SimpleHTTPRequestHandler):  # the standard library's own 501 for POST
        def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
            posted.append(self.path)
            super().send_error(code, message, explain)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Static)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        root = f"http://127.0.0.1:{httpd.server_address[1]}"
        summary = summary_of(_run(run_cli, workspace, tmp_path, root))
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)
    assert summary["exitCode"] == 4
    assert summary["error"].startswith(
        f"openai at {root} answered HTTP 501 to POST {root}/chat/completions (Error"
    )
    assert "Unsupported method ('POST')" in summary["error"] and "<" not in summary["error"]
    assert summary["error"].endswith(f": the base URL may need /v1 (STEERABLE_BASE_URL={root}/v1)")
    assert posted == ["/chat/completions"]  # not retried


def test_no_provider_chosen_says_openai_is_only_the_default() -> None:
    """Issue 32: with nothing set, the missing model is told with why openai is named at all; a
    provider the user chose is told plainly."""
    from steerable_agent_runtime.errors import ConfigError

    with pytest.raises(ConfigError) as unset:
        LLMConfig.from_env({})
    assert str(unset.value) == (
        "STEERABLE_MODEL is required for STEERABLE_PROVIDER=openai: set it to the model name the endpoint "
        "serves (STEERABLE_PROVIDER is not set, so the default, openai, is used: set it, or `provider` in "
        "the configuration file, to the provider you use)"
    )
    with pytest.raises(ConfigError) as chosen:
        LLMConfig.from_env({"STEERABLE_PROVIDER": "openai"})
    assert str(chosen.value) == (
        "STEERABLE_MODEL is required for STEERABLE_PROVIDER=openai: set it to the model name the endpoint serves"
    )
