"""The web tools: ``web_fetch`` and ``web_search`` (spec: Web tools (sidecar)).

One implementation serves every entry point. The pieces:

* ``_config``: :class:`WebToolsConfig`, every bound resolved from its ``STEERABLE_WEB_*`` variable;
* ``_policy``: URL checks, the domain policy and the SSRF address check;
* ``_fetch``: the fetcher (DNS, SSRF check of every answer, a connection pinned to the validated
  address, same-origin redirects, streaming bounds, HTML to Markdown);
* ``_search``: the :class:`WebSearchProvider` protocol and its Tavily, DuckDuckGo and host backends.
"""

from __future__ import annotations

__all__: list[str] = []
