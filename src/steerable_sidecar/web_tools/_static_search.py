"""A search provider that answers from a fixed list of hits: tests and demos without a network."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass

from ._hits import SearchHit

__all__ = ["SearchQuery", "StaticSearchProvider"]


@dataclass(frozen=True, slots=True)
class SearchQuery:
    """One search a :class:`StaticSearchProvider` was asked, with the arguments it was given.

    Attributes:
        query: The model's query text.
        max_results: The most hits asked for (already clamped to 1..20 by the caller).
        allowed_domains: The allowed-domain list passed down (lowercase A-labels; may be empty).
        blocked_domains: The blocked-domain list passed down (lowercase A-labels; may be empty).
    """

    query: str
    max_results: int
    allowed_domains: tuple[str, ...]
    blocked_domains: tuple[str, ...]


class StaticSearchProvider:
    """A :class:`~steerable_sidecar.web_tools.WebSearchProvider` answering every query with ``hits``.

    For tests and demos: ``install_web_tools(router, provider=StaticSearchProvider([...]))`` gives
    a ``web_search`` that needs no key and no network. It returns the hits as given, every time,
    and leaves the domain lists to the caller, which caps the hits to ``max_results`` and drops
    those outside the domain policy (docs/web-tools.md), so a long or off-policy list shows that
    the policy holds whatever a provider returns. Each search is recorded in :attr:`queries`.

    Args:
        hits: The hits each search returns, best first.
        name: The provider's name; results and error messages carry it. Defaults to ``"static"``.
        delay_s: Seconds each search waits before answering (to exercise the search deadline);
            defaults to 0.

    Attributes:
        queries: Every search asked so far, oldest first.
    """

    supports_domain_lists = False

    def __init__(self, hits: Iterable[SearchHit] = (), *, name: str = "static", delay_s: float = 0.0) -> None:
        self.name = name
        self.hits = tuple(hits)
        self.delay_s = delay_s
        self.queries: list[SearchQuery] = []

    async def search(
        self,
        query: str,
        *,
        max_results: int,
        allowed_domains: tuple[str, ...] = (),
        blocked_domains: tuple[str, ...] = (),
    ) -> list[SearchHit]:
        """Record the search, wait ``delay_s`` seconds, and return the hits (a new list each time)."""
        self.queries.append(SearchQuery(query, max_results, allowed_domains, blocked_domains))
        await asyncio.sleep(self.delay_s)  # yields to the event loop even at 0, as a real search would
        return list(self.hits)
