"""The ``web_fetch`` and ``web_search`` tools: session caps, registration, lifecycle.

Spec: Web tools (sidecar). Both tools register at the direct exposure tier in read mode, by their
exact names (WEB-3); ``web_search`` only when a provider is configured (an empty Tavily key leaves
it unregistered, WEB-5), so ``tool.list`` never advertises a tool that cannot work. Oversized
pages are not clipped here: the agent loop's ``SpillHooks`` externalise them (WEB-15); the only
bound on a page is ``fetch_max_bytes``.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Annotated, Any, Final, Protocol

from steerable_agent_runtime.errors import WebError
from steerable_agent_runtime.lazy import Field  # pydantic's, imported when a validator is built
from steerable_agent_runtime.modes import ToolMode
from steerable_agent_runtime.tools import Tool, ToolExposure, ToolRouter

from ..shared._endpoints import client_settings_to_check, env_proxy_client
from ._codes import WebErrorCode
from ._config import WEB_LIMIT_ENV, WebToolsConfig
from ._schemas import TOOL_PARAMETERS

if TYPE_CHECKING:  # the engines (httpx, the HTML converter) and the wire types load at the first call
    import httpx

    from steerable_agent_runtime.types import ToolResult

    from ._fetch import Resolver, WebFetcher
    from ._policy import DomainPolicy
    from ._search import HostInvoke, WebSearchProvider

__all__ = [
    "WEB_FETCH_TOOL_NAME",
    "WEB_SEARCH_TOOL_NAME",
    "WEB_TOOL_NAMES",
    "WebTools",
    "install_web_tools",
]

logger = logging.getLogger(__name__)

WEB_FETCH_TOOL_NAME: Final = "web_fetch"
WEB_SEARCH_TOOL_NAME: Final = "web_search"
WEB_TOOL_NAMES: Final = (WEB_SEARCH_TOOL_NAME, WEB_FETCH_TOOL_NAME)
"""The pair, by exact name (``--no-web-tools`` omits both)."""

MAX_QUERY_CHARS: Final = 2000
"""The longest ``web_search`` query accepted, in characters."""

MAX_SEARCH_RESULTS: Final = WEB_LIMIT_ENV["search_max_results"].ceiling
"""The most hits one ``web_search`` returns (``_hits.MAX_SEARCH_RESULTS``, without importing it)."""


class _Closable(Protocol):
    """What :class:`WebTools` owns and closes: an HTTP client, the fetcher."""

    async def aclose(self) -> None: ...


_ProviderFactory = Callable[[], "tuple[WebSearchProvider, tuple[_Closable, ...]]"]
"""Builds the configured search provider and what it owns (its HTTP client), at the first search."""

_DEFAULT: Any = object()


class _SessionCounter:
    """One per-process counter (spec: "The session caps are per-sidecar-process counters")."""

    def __init__(self, tool: str, cap: int, variable: str) -> None:
        self.tool, self.cap, self.variable, self.used = tool, cap, variable, 0

    def admit(self) -> None:
        """Count one call; refuse it when the cap is reached (0 disables the cap).

        Raises:
            WebError: ``session_cap``, naming the limit and its environment variable.
        """
        if self.cap and self.used >= self.cap:
            raise WebError(
                WebErrorCode.SESSION_CAP,
                f"{self.tool} has reached its session limit of {self.cap} call{'s' if self.cap != 1 else ''} "
                f"({self.variable}); "
                "work with what you have, or ask the user to raise the limit",
                data={"limit": self.cap, "variable": self.variable},
            )
        self.used += 1


class WebTools:
    """The web pair of one process: configuration, fetcher, search provider and session counters.

    Build it with :func:`install_web_tools` (which also registers the tools), or directly to
    inject a fetcher or provider. Close it with :meth:`aclose` (it owns HTTP clients).

    The default fetcher (and, from :func:`install_web_tools`, the default search provider and its
    HTTP client) is built at its first use, not here: registering the pair costs no ``httpx``
    import, TLS context or converter (start-up, ``benchmarks/startup.py``). What could make building
    them fail is checked here instead, so it still fails the load: with the egress marker, or a CA
    bundle variable (``SSL_CERT_FILE`` / ``SSL_CERT_DIR``) naming no file or folder, the fetcher is
    built at once (``_endpoints.client_settings_to_check``).

    Args:
        config: The bounds and policies.
        provider: The search backend; ``None`` leaves ``web_search`` unregistered.
        fetcher: The fetch engine (default: a :class:`WebFetcher` for ``config``).
        resolver: DNS for the default fetcher (tests inject one).
        transport: HTTP transport for the default fetcher (tests inject one).
        environ: The environment the default fetcher reads proxy variables from.
        owned: What :meth:`aclose` closes besides the default fetcher (a provider's HTTP client).
        make_provider: Builds the search backend at the first search instead (``provider`` is
            then ``None``); returns it and what it owns.
    """

    def __init__(
        self,
        config: WebToolsConfig,
        *,
        provider: WebSearchProvider | None,
        fetcher: WebFetcher | None = None,
        resolver: Resolver | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        environ: Mapping[str, str] | None = None,
        owned: tuple[_Closable, ...] = (),
        make_provider: _ProviderFactory | None = None,
    ) -> None:
        self.config = config
        self._provider = provider
        self._make_provider = make_provider
        self._policy: DomainPolicy | None = None
        self._fetcher = fetcher
        self._fetcher_args = (resolver, transport, environ)
        self._owned = owned
        self.searches = _SessionCounter(
            WEB_SEARCH_TOOL_NAME, config.session_search_cap, WEB_LIMIT_ENV["session_search_cap"].variable
        )
        self.fetches = _SessionCounter(
            WEB_FETCH_TOOL_NAME, config.session_fetch_cap, WEB_LIMIT_ENV["session_fetch_cap"].variable
        )
        if fetcher is None and (
            config.egress_confined or client_settings_to_check(os.environ if environ is None else environ)
        ):
            _ = self.fetcher  # a missing extra (socksio), a proxy or CA bundle it cannot use fails the load

    @property
    def fetcher(self) -> WebFetcher:
        """The fetch engine (the default one is built here, at the first access)."""
        if self._fetcher is None:
            from ._fetch import WebFetcher

            resolver, transport, environ = self._fetcher_args
            self._fetcher = WebFetcher(self.config, resolver=resolver, transport=transport, environ=environ)
            self._owned = (*self._owned, self._fetcher)
        return self._fetcher

    @property
    def provider(self) -> WebSearchProvider | None:
        """The search backend, ``None`` without one (a deferred default one is built here)."""
        if self._make_provider is not None:  # a failure here is raised again at the next search
            self._provider, owned = self._make_provider()
            self._make_provider = None
            self._owned = (*self._owned, *owned)
        return self._provider

    @provider.setter
    def provider(self, provider: WebSearchProvider | None) -> None:
        self._provider, self._make_provider = provider, None

    @property
    def policy(self) -> DomainPolicy:
        """The domain policy of :attr:`config` (search hits are filtered by it)."""
        if self._policy is None:
            from ._policy import DomainPolicy

            self._policy = DomainPolicy.from_config(self.config)
        return self._policy

    async def fetch(self, url: str) -> ToolResult:
        """Run one ``web_fetch`` call (see :meth:`tools` for the model-facing contract).

        Raises:
            WebError: Every refusal and failure (the router turns it into a followup result).
        """
        from steerable_agent_runtime.types import ToolResult

        data = await self.fetcher.fetch(url, admit=self.fetches.admit)
        if data.get("redirect_to"):
            return ToolResult(success=True, data=data, message=str(data.get("content") or ""))
        return ToolResult(success=True, data=data)

    async def search(self, query: str, max_results: int | None = None) -> ToolResult:
        """Run one ``web_search`` call: the provider's hits, filtered by the domain policy.

        Raises:
            WebError: An empty query, the session cap, or the provider's failure.
        """
        provider = self.provider
        if provider is None:  # not registered then; a direct caller still gets a clear answer
            raise WebError(WebErrorCode.SEARCH_UNAVAILABLE, "web_search has no provider configured")
        text = query.strip()
        if not text:
            raise WebError(WebErrorCode.INVALID_QUERY, "query is empty; say what to search for")
        limit = min(max_results or self.config.search_max_results, MAX_SEARCH_RESULTS)
        self.searches.admit()
        try:
            async with asyncio.timeout(self.config.search_timeout_ms / 1000):
                hits = await provider.search(
                    text,
                    max_results=limit,
                    allowed_domains=self.config.allowed_domains,
                    blocked_domains=self.config.blocked_domains,
                )
        except TimeoutError:
            raise WebError(
                WebErrorCode.SEARCH_TIMEOUT,
                f"web_search ({provider.name}) did not answer within "
                f"{self.config.search_timeout_ms} ms ({WEB_LIMIT_ENV['search_timeout_ms'].variable})",
            ) from None
        from steerable_agent_runtime.types import ToolResult

        from ._hits import filter_hits

        kept = filter_hits(hits, self.policy, limit)
        return ToolResult(success=True, data={"query": text, "results": [hit.to_json() for hit in kept]})

    def tools(self) -> list[Tool]:
        """The tools to register: ``web_fetch``, and ``web_search`` when a provider is set."""
        made = [self._fetch_tool()]
        if self._provider is not None or self._make_provider is not None:
            made.insert(0, self._search_tool())
        return made

    def install(self, router: ToolRouter) -> list[str]:
        """Register :meth:`tools` on ``router``; return their names.

        Raises:
            DuplicateToolError: A tool of the same name is already registered.
        """
        names = []
        for made in self.tools():
            router.register(made)
            names.append(made.name)
        return names

    async def aclose(self) -> None:
        """Close the HTTP clients this object owns (safe to call twice)."""
        owned, self._owned = self._owned, ()
        for item in owned:
            await item.aclose()

    def _fetch_tool(self) -> Tool:
        cfg = self.config

        async def web_fetch(url: Annotated[str, Field(min_length=1, max_length=2048)]) -> ToolResult:
            """Fetch a web page.

            Args:
                url: An absolute http(s) URL of a public page, without credentials.
            """
            return await self.fetch(url)

        description = (
            "Fetch a public http(s) web page and return its text: HTML as Markdown (links and tables "
            "kept), JSON, XML and plain text as they are. Returns {url, status, contentType, bytes, "
            f"truncated, content}}; at most {cfg.fetch_max_bytes} bytes are read (truncated says so). "
            "Private, loopback and cloud-metadata addresses are refused. A redirect to another site "
            "is not followed: it is reported in redirect_to, fetch that URL if you want it. Binary "
            "content (PDF, images, archives) is refused: use the bash tool with curl for it."
        )
        return Tool.from_function(  # the schema computed ahead of time
            web_fetch,
            parameters=TOOL_PARAMETERS[WEB_FETCH_TOOL_NAME],
            description=description,
            mode=ToolMode.READ,
            timeout_ms=cfg.fetch_timeout_ms + 5_000,
        )

    def _search_tool(self) -> Tool:
        cfg = self.config
        default = cfg.search_max_results

        async def web_search(
            query: Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS)],
            max_results: Annotated[int, Field(ge=1, le=MAX_SEARCH_RESULTS, strict=True)] = default,
        ) -> ToolResult:
            """Search the web.

            Args:
                query: What to search for.
                max_results: How many results to return (1-20).
            """
            return await self.search(query, max_results)

        scope = ""
        if cfg.allowed_domains:
            scope = f" Results are limited to {', '.join(cfg.allowed_domains)} and their subdomains."
        description = (
            "Search the web and return {query, results: [{title, url, snippet}]}, at most "
            f"max_results results (default {default}).{scope} Use web_fetch to read a result."
        )
        return Tool.from_function(
            web_search,
            description=description,
            mode=ToolMode.READ,
            exposure=ToolExposure.DIRECT,
            timeout_ms=cfg.search_timeout_ms + 5_000,
        )


def install_web_tools(
    router: ToolRouter,
    config: WebToolsConfig | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    provider: WebSearchProvider | None = _DEFAULT,
    host_search: HostInvoke | None = None,
    resolver: Resolver | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
) -> WebTools:
    """Register ``web_fetch`` and (when a provider is configured) ``web_search`` on ``router``.

    Pass it as ``workspace_tools_for_cwd(root, web_tools=install_web_tools)`` to get the file
    tools and the web pair in one router; every ``steerable`` entry point does the equivalent.

    Args:
        router: Where the tools go (at the direct tier, read mode).
        config: The bounds and policies (default: :meth:`WebToolsConfig.from_env` of ``environ``).
        environ: The environment (default ``os.environ``).
        provider: The search backend; default :func:`default_web_search_provider` for ``config``;
            ``None`` registers ``web_fetch`` alone.
        host_search: The host's search (the sidecar's reverse call), for
            ``STEERABLE_WEB_SEARCH_PROVIDER=host``.
        resolver: DNS for the fetcher (tests).
        transport: HTTP transport for the fetcher (tests).

    Returns:
        The :class:`WebTools` (close it with ``aclose`` when the process ends).

    Raises:
        ConfigError: An invalid ``STEERABLE_WEB_*`` / ``STEERABLE_EGRESS_CONFINED`` variable (the
            message names it).
        DuplicateToolError: A tool of the same name is already registered.
    """
    cfg = WebToolsConfig.from_env(environ) if config is None else config
    owned: tuple[_Closable, ...] = ()
    deferred: _ProviderFactory | None = None
    if provider is _DEFAULT:
        if client_settings_to_check():  # httpx reads them when the client is built: a bad one fails the load
            from ._search import default_web_search_provider

            client = _search_client(cfg)
            provider = default_web_search_provider(cfg, client=client, host_invoke=host_search)
            owned = (client,)
        else:  # nothing can fail in building it: it is built at the first search
            provider, deferred = None, _default_provider(cfg, host_search)
    tools = WebTools(
        cfg,
        provider=provider,
        resolver=resolver,
        transport=transport,
        environ=environ,
        owned=owned,
        make_provider=deferred,
    )
    tools.install(router)
    if provider is None and deferred is None:
        router.mark_unavailable(WEB_SEARCH_TOOL_NAME, _no_provider_reason(cfg, host_search is not None))
        logger.info(
            "web_search is not registered: no search provider configured (set STEERABLE_WEB_SEARCH_API_KEY "
            "or TAVILY_API_KEY, or STEERABLE_WEB_SEARCH_PROVIDER=ddg|host)"
        )
    return tools


def _default_provider(config: WebToolsConfig, host_search: HostInvoke | None) -> _ProviderFactory | None:
    """What ``default_web_search_provider`` will build, deferred; ``None`` when it would build none.

    The choice (``config.search_provider``, a key, a host) is made here, from the configuration
    alone, so ``web_search`` is registered (or not) exactly as if the provider had been built.
    """
    name = config.search_provider
    if (name == "tavily" and not config.search_api_key) or (name == "host" and host_search is None):
        return None

    def make() -> tuple[WebSearchProvider, tuple[_Closable, ...]]:
        from ._search import default_web_search_provider

        client = None if name == "host" else _search_client(config)  # the host runs it: no HTTP client
        made = default_web_search_provider(config, client=client, host_invoke=host_search)
        if made is None:  # pragma: no cover - the choice above is default_web_search_provider's
            raise WebError(WebErrorCode.SEARCH_UNAVAILABLE, "web_search has no provider configured")
        return made, (() if client is None else (client,))

    return make


def _search_client(config: WebToolsConfig) -> httpx.AsyncClient:
    """The HTTP client the default search backend shares (it never follows a redirect).

    Raises:
        ConfigError: When it cannot use the proxy the environment names.
    """
    return env_proxy_client("web_search", timeout=config.search_timeout_ms / 1000, follow_redirects=False)


def _no_provider_reason(config: WebToolsConfig, has_host: bool) -> str:
    if config.search_provider == "host" and not has_host:
        return (
            "STEERABLE_WEB_SEARCH_PROVIDER=host needs a sidecar host to run searches, and this "
            "process has none."
        )
    return (
        "no search backend is configured (the user can set TAVILY_API_KEY or "
        "STEERABLE_WEB_SEARCH_API_KEY, or STEERABLE_WEB_SEARCH_PROVIDER=ddg)."
    )
