"""The web tools: ``web_fetch`` and ``web_search`` (spec: Web tools (sidecar); ``docs/web-tools.md``).

One implementation serves every entry point: :func:`install_web_tools` registers the pair on a
router (``workspace_tools_for_cwd(root, web_tools=install_web_tools)``), and every ``steerable``
command does so unless told ``--no-web-tools``. The pieces:

* :class:`WebToolsConfig`: every bound resolved from its ``STEERABLE_WEB_*`` variable;
* :class:`DomainPolicy`, :func:`validate_url`, :func:`address_refusal`: URL checks, the domain
  policy and the SSRF address check;
* :class:`WebFetcher`: DNS, the SSRF check of every answer, a connection pinned to the validated
  address, same-origin redirects, streaming bounds, HTML to Markdown;
* :class:`WebSearchProvider` with :class:`TavilySearchProvider`, :class:`DuckDuckGoSearchProvider`
  and :class:`HostSearchProvider`, chosen by :func:`default_web_search_provider`;
  :class:`StaticSearchProvider` answers from a fixed list of hits (tests, demos; no network);
* :class:`WebTools`: the two tools, their per-process session caps, and the HTTP clients' lifetime;
* :class:`FetchConsent`: an interactive session's question before the first ``web_fetch`` of each
  host (SAFE-4), and :func:`fetch_question_text`, what the person is asked.

Each public name is imported from its module on first use (PEP 562 ``__getattr__``): registering
the pair (``install_web_tools``) imports neither ``httpx`` nor the HTML converter, which load at
the first ``web_fetch`` / ``web_search`` call.
"""

import typing as _typing

from steerable_agent_runtime.lazy import lazy_exports as _lazy_exports

if _typing.TYPE_CHECKING:
    from ._codes import WebErrorCode
    from ._config import WebToolsConfig, parse_domain_list
    from ._consent import FetchConsent, fetch_question_text
    from ._ddg import DuckDuckGoSearchProvider
    from ._fetch import Resolver, WebFetcher, system_resolver
    from ._hits import SearchHit, filter_hits
    from ._policy import DomainPolicy, address_refusal, check_addresses, url_host, validate_url
    from ._search import (
        HostInvoke,
        HostSearchProvider,
        TavilySearchProvider,
        WebSearchProvider,
        default_web_search_provider,
    )
    from ._static_search import SearchQuery, StaticSearchProvider
    from ._tools import WEB_FETCH_TOOL_NAME, WEB_SEARCH_TOOL_NAME, WEB_TOOL_NAMES, WebTools, install_web_tools

_EXPORTS: dict[str, tuple[str, ...]] = {
    "_codes": ("WebErrorCode",),
    "_config": ("WebToolsConfig", "parse_domain_list"),
    "_consent": ("FetchConsent", "fetch_question_text"),
    "_fetch": ("Resolver", "WebFetcher", "system_resolver"),
    "_policy": ("DomainPolicy", "address_refusal", "check_addresses", "url_host", "validate_url"),
    "_ddg": ("DuckDuckGoSearchProvider",),
    "_hits": ("SearchHit", "filter_hits"),
    "_search": (
        "HostInvoke",
        "HostSearchProvider",
        "TavilySearchProvider",
        "WebSearchProvider",
        "default_web_search_provider",
    ),
    "_static_search": ("SearchQuery", "StaticSearchProvider"),
    "_tools": (
        "WEB_FETCH_TOOL_NAME",
        "WEB_SEARCH_TOOL_NAME",
        "WEB_TOOL_NAMES",
        "WebTools",
        "install_web_tools",
    ),
}
"""Each submodule and the public names it provides (the block above, for type checkers)."""


__all__ = [
    "WEB_FETCH_TOOL_NAME",
    "WEB_SEARCH_TOOL_NAME",
    "WEB_TOOL_NAMES",
    "DomainPolicy",
    "DuckDuckGoSearchProvider",
    "FetchConsent",
    "HostInvoke",
    "HostSearchProvider",
    "Resolver",
    "SearchHit",
    "SearchQuery",
    "StaticSearchProvider",
    "TavilySearchProvider",
    "WebErrorCode",
    "WebFetcher",
    "WebSearchProvider",
    "WebTools",
    "WebToolsConfig",
    "address_refusal",
    "check_addresses",
    "default_web_search_provider",
    "fetch_question_text",
    "filter_hits",
    "install_web_tools",
    "parse_domain_list",
    "system_resolver",
    "url_host",
    "validate_url",
]


if not _typing.TYPE_CHECKING:  # hidden from type checkers, so a misspelt import still fails there
    __getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS, globals())
