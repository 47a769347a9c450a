"""The web pair as tools: registration, session caps, post-hoc filtering, spilling, every entry point.

WEB-1 (one implementation, every entry point), WEB-2 (``web_tools=False`` / ``--no-web-tools``),
WEB-3 (direct tier, read mode, exact names), WEB-5/6 (registration by provider), WEB-7 (invalid
configuration: headless fails at load, the sidecar serves without the pair), WEB-10 (session caps),
WEB-11 (hits filtered post hoc), WEB-14 (the egress marker without a proxy), WEB-15 (spilling).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from subprocess import CompletedProcess
from typing import Any

import pytest

from steerable_agent_runtime import ToolCall, ToolExposure, ToolMode, ToolRouter, workspace_tools_for_cwd
from steerable_agent_runtime.spill import SpillHooks
from steerable_sidecar._boot import boot_tools
from steerable_sidecar.sidecar._client import SidecarClient
from steerable_sidecar.sidecar.protocol import WebSearchRequestParams, WebSearchResult
from steerable_sidecar.web_tools import (
    WEB_TOOL_NAMES,
    DuckDuckGoSearchProvider,
    SearchHit,
    SearchQuery,
    StaticSearchProvider,
    TavilySearchProvider,
    WebTools,
    WebToolsConfig,
    install_web_tools,
)

from .web_servers import PUBLIC_IP, PinRecorder, Reply, ScriptedResolver, ScriptedServer

HOST = "docs.example.com"


def call(name: str, **arguments: Any) -> ToolCall:
    return ToolCall(id=f"call-{name}", name=name, arguments=arguments)


@pytest.fixture
async def site() -> AsyncIterator[ScriptedServer]:
    routes = {
        "/page": Reply.text(
            "<html><body><h1>Docs</h1><p>Hello <a href='/x'>x</a></p></body></html>", "text/html"
        ),
        "/big": Reply.text("A" * 300_000, "text/plain"),
    }
    async with ScriptedServer(routes) as server:
        yield server


def web_router(site: ScriptedServer, provider: Any = None, **config: Any) -> tuple[ToolRouter, WebTools]:
    router = ToolRouter()
    tools = install_web_tools(
        router,
        WebToolsConfig(**config),
        provider=provider,
        resolver=ScriptedResolver({HOST: [PUBLIC_IP], "intranet.example.com": ["10.0.0.5"]}),
        transport=PinRecorder({f"{PUBLIC_IP}:80": site.port}),
    )
    return router, tools


# -- registration ---------------------------------------------------------------------------------


async def test_both_tools_register_at_the_direct_tier_in_read_mode_by_exact_name(site: ScriptedServer):
    """WEB-3."""
    router, tools = web_router(site, provider=StaticSearchProvider([], name="fake"))
    try:
        assert [t.name for t in router] == ["web_search", "web_fetch"]
        for name in WEB_TOOL_NAMES:
            assert (
                (tool := router.get(name)) is not None
                and tool.mode is ToolMode.READ
                and tool.exposure is ToolExposure.DIRECT
            )
        offered = {d["function"]["name"] for d in router.describe_model()}
        assert {"web_search", "web_fetch"} <= offered
        fetch, search = router.get("web_fetch"), router.get("web_search")
        assert fetch is not None and search is not None
        assert set(fetch.parameters["properties"]) == {"url"}
        assert set(search.parameters["properties"]) == {"query", "max_results"}
    finally:
        await tools.aclose()


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({}, ["web_fetch"]),  # Tavily is the default backend and has no key: web_search stays out (WEB-5)
        ({"STEERABLE_WEB_SEARCH_API_KEY": "   "}, ["web_fetch"]),
        ({"TAVILY_API_KEY": "tvly-abc"}, ["web_search", "web_fetch"]),
        ({"STEERABLE_WEB_SEARCH_PROVIDER": "ddg"}, ["web_search", "web_fetch"]),  # explicit only (WEB-6)
        ({"STEERABLE_WEB_SEARCH_PROVIDER": "host"}, ["web_fetch"]),  # no host to run it here
    ],
)
async def test_web_search_registers_only_with_a_working_provider(
    environ: dict[str, str], expected: list[str]
):
    """WEB-5, WEB-6: tool.list never advertises a web_search that cannot run."""
    router = ToolRouter()
    tools = install_web_tools(router, environ=environ)
    try:
        assert [t.name for t in router] == expected
        if "web_search" not in expected:  # a model that calls it anyway is told what turns it on
            told = await router.dispatch(call("web_search", query="x"))
            assert told.data is not None and told.data["code"] == "tool_unavailable"
            wanted = (
                "needs a sidecar host" if "STEERABLE_WEB_SEARCH_PROVIDER" in environ else "TAVILY_API_KEY"
            )
            assert wanted in (told.error or "")
        if "TAVILY_API_KEY" in environ:
            assert isinstance(tools.provider, TavilySearchProvider)
        if environ.get("STEERABLE_WEB_SEARCH_PROVIDER") == "ddg":
            assert isinstance(tools.provider, DuckDuckGoSearchProvider)
    finally:
        await tools.aclose()


async def test_the_host_provider_registers_when_a_host_can_run_the_search():
    """WEB-6: ``host`` registers without any key; the search goes to the host's callable."""
    asked: list[dict[str, Any]] = []

    async def host(request: dict[str, Any]) -> dict[str, Any]:
        asked.append(request)
        return {"results": [{"title": "T", "url": "https://docs.example.com/a", "snippet": "s"}]}

    router = ToolRouter()
    tools = install_web_tools(router, environ={"STEERABLE_WEB_SEARCH_PROVIDER": "host"}, host_search=host)
    try:
        result = await router.dispatch(call("web_search", query="steerable"))
        assert result.success, result.error
        assert result.data == {
            "query": "steerable",
            "results": [{"title": "T", "url": "https://docs.example.com/a", "snippet": "s"}],
        }
        assert asked == [{"query": "steerable", "maxResults": 8, "allowedDomains": [], "blockedDomains": []}]
    finally:
        await tools.aclose()


def test_web_tools_false_omits_both_and_an_installer_adds_them(tmp_path: Path):
    """WEB-1, WEB-2: one implementation, wired through ``workspace_tools_for_cwd``."""
    without = workspace_tools_for_cwd(tmp_path, web_tools=False)
    assert not any(name in without for name in WEB_TOOL_NAMES)
    installed: list[WebTools] = []
    with_pair = workspace_tools_for_cwd(
        tmp_path, web_tools=lambda r: installed.append(install_web_tools(r, environ={"TAVILY_API_KEY": "k"}))
    )
    assert all(name in with_pair for name in WEB_TOOL_NAMES)
    assert installed and installed[0].config.search_api_key == "k"


async def test_boot_tools_registers_the_pair_unless_told_not_to(tmp_path: Path):
    """WEB-1, WEB-2: every entry point boots through ``boot_tools``."""
    env = {"STEERABLE_WEB_SEARCH_PROVIDER": "ddg"}
    booted = boot_tools(tmp_path, environ=env, plugins=False)
    try:
        assert all(name in booted.router for name in WEB_TOOL_NAMES) and booted.web is not None
    finally:
        await booted.aclose()
    bare = boot_tools(tmp_path, environ=env, plugins=False, web_tools=False)
    assert not any(name in bare.router for name in WEB_TOOL_NAMES) and bare.web is None
    offline = await bare.router.dispatch(call("web_fetch", url="https://example.com/"))
    assert offline.error == (
        "The tool 'web_fetch' is not available here: this run is offline: the web tools were turned off "
        "(--no-web-tools). Carry on with the offered tools."
    )
    no_run_code = await bare.router.dispatch(call("run_code", code="return 1", description="x"))
    assert no_run_code.data == {
        "code": "tool_unavailable",
        "reason": "run_code is off (the user can turn it on with STEERABLE_RUN_CODE=1).",
    }


async def test_an_invalid_variable_fails_the_boot_or_only_drops_the_pair(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
):
    """WEB-7: headless/one-shot boots raise naming the variable; the sidecar logs and serves on."""
    env = {"STEERABLE_WEB_FETCH_MAX_BYTES": "lots"}
    from steerable_agent_runtime.errors import ConfigError

    with pytest.raises(ConfigError, match="STEERABLE_WEB_FETCH_MAX_BYTES"):
        boot_tools(tmp_path, environ=env, plugins=False)
    booted = boot_tools(tmp_path, environ=env, plugins=False, web_config_errors="log")
    assert "read_file" in booted.router and not any(name in booted.router for name in WEB_TOOL_NAMES)
    assert "web_search and web_fetch are not served: STEERABLE_WEB_FETCH_MAX_BYTES" in caplog.text


# -- the calls ------------------------------------------------------------------------------------


async def test_web_fetch_returns_the_page_as_markdown(site: ScriptedServer):
    router, tools = web_router(site)
    try:
        result = await router.dispatch(call("web_fetch", url=f"http://{HOST}/page"))
        assert result.success, result.error
        data = result.data or {}
        assert data["url"] == f"http://{HOST}/page" and data["status"] == 200 and data["truncated"] is False
        assert "# Docs" in data["content"] and "[x](" in data["content"]
    finally:
        await tools.aclose()


async def test_a_refused_fetch_is_a_followup_result_naming_the_reason(site: ScriptedServer):
    router, tools = web_router(site)
    try:
        result = await router.dispatch(call("web_fetch", url="http://intranet.example.com/admin"))
        assert not result.success and result.needs_followup
        assert result.data is not None and result.data["code"] == "ssrf_blocked"
        assert "10.0.0.5" in (result.error or "")
        assert site.paths() == []
    finally:
        await tools.aclose()


async def test_the_fetch_session_cap_counts_fetches_that_reach_the_network(site: ScriptedServer):
    """WEB-10: the cap names its limit and variable; a call refused by policy is not counted."""
    router, tools = web_router(site, session_fetch_cap=2, blocked_domains=("blocked.example",))
    try:
        refused = await router.dispatch(call("web_fetch", url="http://blocked.example/"))
        assert refused.data is not None and refused.data["code"] == "domain_blocked"
        for _ in range(2):
            assert (await router.dispatch(call("web_fetch", url=f"http://{HOST}/page"))).success
        capped = await router.dispatch(call("web_fetch", url=f"http://{HOST}/page"))
        assert not capped.success and capped.needs_followup
        assert capped.error == (
            "web_fetch has reached its session limit of 2 calls (STEERABLE_WEB_SESSION_FETCH_CAP); "
            "work with what you have, or ask the user to raise the limit"
        )
        assert capped.data == {
            "code": "session_cap",
            "limit": 2,
            "variable": "STEERABLE_WEB_SESSION_FETCH_CAP",
        }
        assert site.paths() == ["/page", "/page"]
    finally:
        await tools.aclose()


async def test_the_search_session_cap_and_zero_disables_a_cap(site: ScriptedServer):
    """WEB-10."""
    provider = StaticSearchProvider([SearchHit("T", "https://docs.example.com/a", "s")], name="fake")
    router, tools = web_router(site, provider=provider, session_search_cap=1)
    try:
        assert (await router.dispatch(call("web_search", query="one"))).success
        capped = await router.dispatch(call("web_search", query="two"))
        assert capped.data is not None and capped.data["code"] == "session_cap"
        assert "STEERABLE_WEB_SESSION_SEARCH_CAP" in (capped.error or "") and len(provider.queries) == 1
    finally:
        await tools.aclose()
    router, tools = web_router(site, provider=provider, session_search_cap=0)
    try:
        for _ in range(5):
            assert (await router.dispatch(call("web_search", query="again"))).success
    finally:
        await tools.aclose()


async def test_search_hits_are_filtered_by_the_domain_policy_and_capped(site: ScriptedServer):
    """WEB-11: the policy holds whatever the provider returns."""
    hits = [
        SearchHit("blocked", "https://ads.example.com/x", ""),
        SearchHit("allowed", "https://docs.example.com/a", "a"),
        SearchHit("elsewhere", "https://other.org/b", ""),
        SearchHit("script", "javascript:alert(1)", ""),
        SearchHit("allowed sub", "https://api.docs.example.com/c", "c"),
        SearchHit("third", "https://example.com/d", "d"),
    ]
    provider = StaticSearchProvider(hits, name="fake")
    router, tools = web_router(
        site, provider=provider, allowed_domains=("example.com",), blocked_domains=("ads.example.com",)
    )
    try:
        result = await router.dispatch(call("web_search", query="docs", max_results=2))
        assert result.success
        assert [r["url"] for r in (result.data or {})["results"]] == [
            "https://docs.example.com/a",
            "https://api.docs.example.com/c",
        ]
        assert provider.queries == [SearchQuery("docs", 2, ("example.com",), ("ads.example.com",))]
        search = router.get("web_search")
        assert search is not None and "limited to example.com" in search.description
    finally:
        await tools.aclose()


async def test_search_arguments_and_deadline_are_checked(site: ScriptedServer):
    router, tools = web_router(
        site, provider=StaticSearchProvider([], name="fake", delay_s=5), search_timeout_ms=50
    )
    try:
        too_many = await router.dispatch(call("web_search", query="x", max_results=21))
        assert not too_many.success and too_many.needs_followup and "max_results" in (too_many.error or "")
        blank = await router.dispatch(call("web_search", query="   "))
        assert blank.data is not None and blank.data["code"] == "invalid_query"
        slow = await router.dispatch(call("web_search", query="slow"))
        assert slow.data is not None and slow.data["code"] == "search_timeout"
        assert slow.error == "web_search (fake) did not answer within 50 ms (STEERABLE_WEB_SEARCH_TIMEOUT_MS)"
    finally:
        await tools.aclose()


async def test_a_large_page_is_spilled_whole_not_clipped_twice(site: ScriptedServer, tmp_path: Path):
    """WEB-15: the fetch cap is the only bound; SpillHooks externalise the rest."""
    router, tools = web_router(site)
    try:
        fetch = call("web_fetch", url=f"http://{HOST}/big")
        result = await router.dispatch(fetch)
        assert result.success and result.data is not None
        assert result.data["bytes"] == 300_000 and len(result.data["content"]) == 300_000
        spilled = await SpillHooks(tmp_path / "spill").apply(fetch, result)
        assert spilled.data is not None and spilled.data["spilled"]["locator"].startswith("spill://")
        stored = json.loads(next((tmp_path / "spill").iterdir()).read_text())
        assert stored["content"] == "A" * 300_000
    finally:
        await tools.aclose()


# -- entry points ---------------------------------------------------------------------------------


def test_cli_lists_the_pair_and_no_web_tools_omits_it(
    tmp_path: Path, run_cli: Callable[..., CompletedProcess[str]]
):
    """WEB-1, WEB-2 through ``steerable tools``."""
    tools = ["tools", "--workspace", str(tmp_path), "--no-plugins"]
    listed = run_cli(*tools, "--json", STEERABLE_WEB_SEARCH_PROVIDER="ddg")
    assert listed.returncode == 0, listed.stderr
    names = {t["name"]: t for t in json.loads(listed.stdout)}
    assert names["web_search"]["mode"] == "read" and names["web_fetch"]["exposure"] == "direct"
    offline = run_cli(*tools, "--json", "--no-web-tools", STEERABLE_WEB_SEARCH_PROVIDER="ddg")
    assert not {"web_search", "web_fetch"} & {t["name"] for t in json.loads(offline.stdout)}
    bad = run_cli(*tools, STEERABLE_WEB_SEARCH_PROVIDER="bing")
    assert bad.returncode == 2 and "STEERABLE_WEB_SEARCH_PROVIDER" in bad.stderr


def test_headless_fails_at_load_on_the_egress_marker_without_a_proxy(
    tmp_path: Path, run_cli: Callable[..., CompletedProcess[str]]
):
    """WEB-7, WEB-14: a misconfiguration stops ``steerable run`` before any model or network work."""
    script = tmp_path / "turns.json"
    script.write_text(json.dumps(["hi"]))
    env = {
        "STEERABLE_EGRESS_CONFINED": "1",
        "STEERABLE_PROVIDER": "scripted",
        "STEERABLE_SCRIPT": str(script),
        "STEERABLE_STATE_DIR": str(tmp_path.parent / f"{tmp_path.name}-state"),  # not in the workspace
    }
    args = ["run", "--cwd", str(tmp_path), "--no-plugins", "--quiet", "--instruction", "say hi"]
    run = run_cli(*args, **env)
    summary = json.loads(run.stdout.strip().splitlines()[-1])
    assert run.returncode == 2 and summary["outcome"] != "succeeded", summary
    assert "STEERABLE_EGRESS_CONFINED" in summary["error"] and "HTTPS_PROXY" in summary["error"]
    offline = run_cli(*args, "--no-web-tools", **env)  # offline runs never resolve it
    assert offline.returncode == 0 and json.loads(offline.stdout.strip().splitlines()[-1])["text"] == "hi"


async def test_the_sidecar_serves_without_the_pair_when_misconfigured(
    tmp_path: Path, child_env: Callable[..., dict[str, str]]
):
    """WEB-7: a typo in an optional feature's variable cannot brick chat."""
    client = await SidecarClient.start(
        workspace=tmp_path,
        state_dir=tmp_path.parent / f"{tmp_path.name}-state",
        args=["--no-plugins"],
        env=child_env(STEERABLE_WEB_SESSION_SEARCH_CAP="-1", STEERABLE_LOG_LEVEL="ERROR"),
    )
    async with client:
        names = {t["name"] for t in await client.list_tools()}
        assert "read_file" in names and not names & {"web_search", "web_fetch"}
        assert await client.shutdown() == 0
    assert "STEERABLE_WEB_SESSION_SEARCH_CAP" in client.stderr_tail


async def test_the_sidecar_asks_its_host_to_search(tmp_path: Path, child_env: Callable[..., dict[str, str]]):
    """WEB-6: with the ``host`` provider the host runs the search over ``web_search.request``."""
    client = await SidecarClient.start(
        workspace=tmp_path,
        state_dir=tmp_path.parent / f"{tmp_path.name}-state",
        args=["--no-plugins"],
        env=child_env(STEERABLE_WEB_SEARCH_PROVIDER="host", STEERABLE_WEB_BLOCKED_DOMAINS="spam.example"),
    )
    asked: list[WebSearchRequestParams] = []

    async def on_web_search(params: WebSearchRequestParams) -> WebSearchResult:
        asked.append(params)
        return {
            "results": [
                {"title": "Spam", "url": "https://spam.example/x", "snippet": ""},
                {"title": "Docs", "url": "https://docs.example.com/", "snippet": "the docs"},
            ]
        }

    client.on_web_search = on_web_search
    async with client:
        tools = {t["name"]: t for t in await client.list_tools()}
        assert tools["web_search"]["mode"] == "read"
        result = await client.invoke("web_search", {"query": "steerable docs", "max_results": 3})
        assert result.success, result.error
        assert result.data == {
            "query": "steerable docs",
            "results": [{"title": "Docs", "url": "https://docs.example.com/", "snippet": "the docs"}],
        }
        assert asked == [
            {
                "query": "steerable docs",
                "maxResults": 3,
                "allowedDomains": [],
                "blockedDomains": ["spam.example"],
            }
        ]
        client.on_web_search = None
        unanswered = await client.invoke("web_search", {"query": "again"})
        assert unanswered.data is not None and unanswered.data["code"] == "search_failed"
        assert await client.shutdown() == 0


# -- lazy engines (start-up: registering the pair builds no client) --------------------------------


def test_registering_the_pair_imports_no_http_client_nor_converter(tmp_path: Path):
    """``install_web_tools`` registers the descriptors; httpx and the converter load at the first call."""
    import os
    import subprocess
    import sys

    code = (
        "import json, sys\n"
        "from steerable_agent_runtime import ToolRouter\n"
        "from steerable_sidecar.web_tools import install_web_tools\n"
        "router = ToolRouter()\n"
        "tools = install_web_tools(router, environ={'STEERABLE_WEB_SEARCH_PROVIDER': 'ddg'})\n"
        "names = [t.name for t in router]\n"
        "print(json.dumps([names, [m for m in ('httpx', 'html_to_markdown') if m in sys.modules]]))\n"
    )
    # no proxy setting: with one, the search client is built at once (a bad proxy fails the load)
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert json.loads(done.stdout) == [["web_search", "web_fetch"], []]


async def test_the_deferred_provider_and_fetcher_are_built_at_first_use_and_closed():
    router = ToolRouter()
    tools = install_web_tools(router, environ={"STEERABLE_WEB_SEARCH_PROVIDER": "ddg"})
    try:
        assert tools._owned == ()  # nothing built yet
        assert isinstance(tools.provider, DuckDuckGoSearchProvider)
        assert tools.provider is tools.provider  # built once
        fetcher = tools.fetcher
        assert fetcher is tools.fetcher and fetcher in tools._owned and len(tools._owned) == 2
    finally:
        await tools.aclose()
    assert tools._owned == ()


def test_a_ca_bundle_that_does_not_exist_still_fails_the_load(tmp_path: Path):
    """What building the fetcher reads from the environment is checked at load, as before."""
    with pytest.raises(OSError):
        install_web_tools(ToolRouter(), environ={"SSL_CERT_FILE": str(tmp_path / "missing.pem")})
