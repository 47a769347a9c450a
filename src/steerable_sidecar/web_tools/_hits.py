"""What a search hit is, the domain policy applied to hits, and hits read from a JSON answer.

Shared by every ``web_search`` backend (:mod:`._search`, :mod:`._ddg`) and ``web_tools``' tool.
Spec: Web tools › Domain policy (WEB-11), Bounds (``search_max_results``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from steerable_agent_runtime.errors import WebError

from ..shared._http import clip
from ._config import WEB_LIMIT_ENV
from ._policy import DomainPolicy, url_host, validate_url

__all__ = [
    "MAX_CONSIDERED_RESULTS",
    "MAX_SEARCH_RESULTS",
    "MAX_SNIPPET_CHARS",
    "MAX_TITLE_CHARS",
    "Malformed",
    "SearchHit",
    "clamp_results",
    "filter_hits",
    "hits_from",
]

MAX_SEARCH_RESULTS: Final = WEB_LIMIT_ENV["search_max_results"].ceiling
"""The most hits one search returns (spec: Bounds, ``search_max_results`` ceiling)."""

MAX_CONSIDERED_RESULTS: Final = 100
"""The most results of one answer looked at (a real page holds about 30); the rest are ignored."""

MAX_TITLE_CHARS: Final = 300
"""The most characters of a hit's title kept (a longer one ends in ``…``)."""

MAX_SNIPPET_CHARS: Final = 1_000
"""The most characters of a hit's snippet kept (a longer one ends in ``…``)."""


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One search result.

    Attributes:
        title: The page title (whitespace collapsed, at most 300 characters).
        url: The page URL, as the backend gave it (DuckDuckGo redirect links already unwrapped).
        snippet: A short extract of the page (whitespace collapsed, at most 1,000 characters).
    """

    title: str
    url: str
    snippet: str

    def to_json(self) -> dict[str, str]:
        """Return ``{"title", "url", "snippet"}``, the hit as the tool result carries it."""
        return {"title": self.title, "url": self.url, "snippet": self.snippet}


# -- the domain policy, post hoc ------------------------------------------------------------------


def filter_hits(hits: Iterable[SearchHit], policy: DomainPolicy, max_results: int) -> list[SearchHit]:
    """Apply the domain policy to returned hits: the post-hoc half of WEB-11, for every provider.

    A hit is dropped when its URL fails :func:`~._policy.validate_url` (not http(s), credentials in
    the URL, over 2,048 characters, no host: ``javascript:`` and relative links go here), when the
    policy refuses its host (an entry matches its host and every subdomain; blocked wins), or when
    an earlier hit had the same URL (compared without its ``#fragment``). Order is kept. Only the
    first :data:`MAX_CONSIDERED_RESULTS` hits are looked at, so a provider that returns a huge
    list costs no more than a real result page.

    Args:
        hits: The provider's hits, best first.
        policy: The deployment's allowed / blocked lists.
        max_results: The most hits to keep; 0 or less keeps none.

    Returns:
        At most ``max_results`` hits, in their original order.
    """
    kept: list[SearchHit] = []
    seen: set[str] = set()
    for considered, hit in enumerate(hits):
        if len(kept) >= max_results or considered >= MAX_CONSIDERED_RESULTS:
            break
        try:
            url = validate_url(hit.url)
        except WebError:
            continue
        if not policy.allows(url_host(url)):
            continue
        key = str(url.copy_with(fragment=None))
        if key in seen:
            continue
        seen.add(key)
        kept.append(hit)
    return kept


# -- shared helpers -------------------------------------------------------------------------------


def clamp_results(max_results: int) -> int:
    return min(max(1, max_results), MAX_SEARCH_RESULTS)


class Malformed(ValueError):
    """Why a backend's answer is not ``{"results": [{"url", "title"?, <snippet>?}, ...]}``."""


def _same(text: str) -> str:
    return text


def _hit(item: Any, index: int, snippet_key: str, scrub: Callable[[str], str] = _same) -> SearchHit:
    """One hit from an answer's result object; a result without a string ``url`` is malformed.

    ``scrub`` is applied to the title, URL and snippet as received, before any clipping (which could
    otherwise cut a secret into a prefix no longer recognised).
    """
    if not isinstance(item, Mapping):
        raise Malformed(f"result {index} is not an object")
    url = item.get("url")
    if not isinstance(url, str) or not url.strip():
        raise Malformed(f"result {index} has no url")
    fields: dict[str, str] = {}
    for key in ("title", snippet_key):
        value = item.get(key)
        if value is not None and not isinstance(value, str):
            raise Malformed(f"result {index} has a non-text {key}")
        fields[key] = value or ""
    return SearchHit(
        title=clip(scrub(fields["title"]), MAX_TITLE_CHARS, marker="…"),
        url=scrub(url).strip(),
        snippet=clip(scrub(fields[snippet_key]), MAX_SNIPPET_CHARS, marker="…"),
    )


def hits_from(answer: Any, snippet_key: str, scrub: Callable[[str], str] = _same) -> list[SearchHit]:
    """The hits of the first :data:`MAX_CONSIDERED_RESULTS` results of ``{"results": [...]}``, in order.

    Results past the bound are ignored, not checked.

    Raises:
        Malformed: When the answer or one of the considered results has the wrong shape.
    """
    if not isinstance(answer, Mapping):
        raise Malformed("not a JSON object")
    results = answer.get("results")
    if not isinstance(results, list):
        raise Malformed("no results list")
    considered = results[:MAX_CONSIDERED_RESULTS]
    return [_hit(item, index, snippet_key, scrub) for index, item in enumerate(considered, start=1)]
