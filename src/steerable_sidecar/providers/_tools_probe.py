"""Before the first round: do the offered tools reach the model at all?

A local server renders the conversation into the model's prompt with the model's chat template.
When that template has no place for tools, the tools are dropped without a word: the model never
sees them, answers from its imagination and the run "completes". Two servers can tell:

* llama.cpp's server renders a request without running it (``POST /apply-template``, the same
  body as a chat completion, answering ``{"prompt": ...}``): if no offered tool's name is in the
  prompt, the model would not see them. A server without that endpoint is asked ``GET /props``,
  whose ``chat_template_caps.supports_tools`` says whether the template takes tools.
* Ollama lists a model's capabilities (``POST /api/show``): without ``tools`` it has none.

The probe runs once per provider, for the profiles whose :attr:`VendorProfile.tools_probe` names
one, when the first request offering tools is made; a server that does not answer it (another
server on that port, an older build) is given the benefit of the doubt. What it finds is a
:class:`ProviderError` before anything is sent to the model (docs/providers.md, "Tools the model
actually sees").
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from steerable_agent_runtime.llm import Message

from ..shared._http import clip, read_capped

if TYPE_CHECKING:
    import httpx

__all__ = ["PROBE_TIMEOUT_S", "server_root", "tools_problem"]

PROBE_TIMEOUT_S: Final = 5.0
"""How long the probe waits for a local server's answer before giving it the benefit of the doubt."""
_MAX_PROBE_BYTES: Final = 4 * 1024 * 1024


def server_root(base_url: str) -> str:
    """The server's root: the base URL without a trailing ``/v1`` (``http://host:8080/v1`` -> ``http://host:8080``)."""
    base = base_url.split("?", 1)[0].rstrip("/")
    return base[: -len("/v1")] if base.endswith("/v1") else base


async def tools_problem(
    client: httpx.AsyncClient,
    probe: str,
    base_url: str,
    model: str,
    tools: Sequence[Mapping[str, Any]],
    headers: Mapping[str, str],
) -> str | None:
    """Why the offered tools would not reach the model, or ``None`` (they do, or the server cannot say).

    Args:
        client: The provider's HTTP client.
        probe: The profile's ``tools_probe`` (``llama-cpp`` or ``ollama``).
        base_url: The configured base URL.
        model: The model the run calls.
        tools: The offered OpenAI function-tool descriptors.
        headers: The provider's request headers (its key, extra headers).
    """
    names = [t["function"]["name"] for t in tools if isinstance(t.get("function"), dict)]
    root = server_root(base_url)
    if probe == "llama-cpp":
        return await _llama_cpp(client, root, model, tools, names, headers)
    if probe == "ollama":
        return await _ollama(client, root, model, headers)
    return None


async def _json(
    client: httpx.AsyncClient, method: str, url: str, headers: Mapping[str, str], body: Any = None
) -> Any:
    """The JSON a probe answered, or ``None`` for any failure (not this server, an older build).

    The whole exchange gets :data:`PROBE_TIMEOUT_S` (a server dripping bytes cannot hold the run
    at its start), and at most 4 MiB of the body is read (decoded a bounded step at a time).
    """
    import httpx

    try:
        async with asyncio.timeout(PROBE_TIMEOUT_S):
            async with client.stream(
                method,
                url,
                content=None if body is None else json.dumps(body).encode("utf-8"),
                headers={k: v for k, v in headers.items() if k.lower() != "accept"},
                timeout=PROBE_TIMEOUT_S,
                follow_redirects=False,
            ) as response:
                if not response.is_success:
                    return None
                raw, cut = await read_capped(response, _MAX_PROBE_BYTES)
    except (httpx.HTTPError, TimeoutError):
        return None
    if cut:
        return None
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):  # not JSON, or nested deeper than the decoder goes
        return None


async def _llama_cpp(
    client: httpx.AsyncClient,
    root: str,
    model: str,
    tools: Sequence[Mapping[str, Any]],
    names: list[str],
    headers: Mapping[str, str],
) -> str | None:
    messages: list[Message] = [{"role": "user", "content": "hi"}]
    rendered = await _json(
        client,
        "POST",
        f"{root}/apply-template",
        headers,
        {"model": model, "messages": messages, "tools": list(tools)},
    )
    prompt = rendered.get("prompt") if isinstance(rendered, dict) else None
    if isinstance(prompt, str):
        if names and not any(name in prompt for name in names):
            return (
                f"the llama.cpp server at {root} renders no tools into the prompt: its chat template has no "
                f"place for them, so the model would never see {', '.join(names[:3])}... and would answer "
                "without them. Start llama-server with --jinja and a template that supports tools "
                "(--chat-template-file), or use a model whose template does"
            )
        return None
    props = await _json(client, "GET", f"{root}/props", headers)
    caps = props.get("chat_template_caps") if isinstance(props, dict) else None
    if isinstance(caps, dict) and caps.get("supports_tools") is False:
        return (
            f"the llama.cpp server at {root} says its chat template does not support tools "
            "(/props: chat_template_caps.supports_tools is false), so the model would never see them. "
            "Start llama-server with --jinja and a template that supports tools (--chat-template-file)"
        )
    return None


async def _ollama(client: httpx.AsyncClient, root: str, model: str, headers: Mapping[str, str]) -> str | None:
    shown = await _json(client, "POST", f"{root}/api/show", headers, {"model": model})
    capabilities = shown.get("capabilities") if isinstance(shown, dict) else None
    if isinstance(capabilities, list) and "tools" not in capabilities:
        listed = clip(", ".join(str(c) for c in capabilities[:20]) or "none", 200)
        return (
            f"Ollama's model {model} has no tools capability (capabilities: {listed}), so it cannot call "
            "the offered tools. Pick a model that lists tools (ollama show MODEL)"
        )
    return None
