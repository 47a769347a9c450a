"""``tool_search``: BM25 discovery over the deferred tier, kept current as the inventory changes.

Spec: Exposure tiers (``tool_search``). One direct-tier, read-mode tool ranks the *deferred* tier
(never direct, never hidden) over name + description and returns full schemas, so a match is
callable by name the next round. The ranking is the contract in ``spec/tool_contract.json`` ->
``toolSearch`` (shared with the desktop's TypeScript port; docs/requirements.md TS-1..4): tokens,
Okapi BM25 (``k1 = 1.2``, ``b = 0.75``), relevance floor and order are in docs/tool-search.md,
"Ranking (the contract)". :class:`ToolSearchIndex` follows a router through
:meth:`ToolRouter.subscribe`, O(a tool's tokens) per change, and answers with exact MaxScore
top-k (docs/tool-search.md, "The index").
"""

from __future__ import annotations

import heapq
import math
import re
import weakref
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from ._codes import ToolErrorCode
from ._problems import invalid_text
from .errors import DuplicateToolError, ToolRetry
from .modes import ToolMode
from .tools import Tool, ToolExposure, ToolRouter

if TYPE_CHECKING:  # results are built at call time: listing the tools (harness.offered) loads no pydantic
    from .types import ToolResult

__all__ = [
    "BM25_B",
    "BM25_K1",
    "DEFAULT_MAX_RESULTS",
    "MAX_RESULTS_CEILING",
    "NAME_WEIGHT",
    "TOOL_SEARCH_TOOL_NAME",
    "ToolSearchHit",
    "ToolSearchIndex",
    "clamp_max_results",
    "document_tokens",
    "is_tool_search",
    "name_tokens",
    "register_tool_search",
    "tokenize",
]

BM25_K1: Final = 1.2
"""BM25 term-frequency saturation."""
BM25_B: Final = 0.75
"""BM25 document-length normalisation."""
NAME_WEIGHT: Final = 2
"""How many times a tool's name tokens are counted in its document."""
DEFAULT_MAX_RESULTS: Final = 8
"""Results returned when the call gives no ``max_results``."""
MAX_RESULTS_CEILING: Final = 20
"""Per-call ceiling on results: each carries a full schema, so the payload stays bounded."""
TOOL_SEARCH_TOOL_NAME: Final = "tool_search"
"""The discovery tool's name."""

_TOKEN = re.compile(r"[a-z0-9]+")
_ASCII_RUN = re.compile(r"[A-Za-z0-9]+")
_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_K1_PLUS_1 = BM25_K1 + 1
_ONE_MINUS_B = 1 - BM25_B
_SLACK = 1e-9  # relative margin for float rounding when pruning; never changes a result


def tokenize(text: str) -> list[str]:
    """Return the tokens of prose (a description or a query): lowercase runs of ``[a-z0-9]``.

    >>> tokenize("Create a new issue in a GitHub repository")
    ['create', 'a', 'new', 'issue', 'in', 'a', 'github', 'repository']
    """
    return _TOKEN.findall(text.lower())


def name_tokens(name: str) -> list[str]:
    """Return the tokens of a tool name: :func:`tokenize`, then the camelCase parts of each ASCII run.

    A run of ``[A-Za-z0-9]`` splits before an upper-case letter that follows a lower-case letter or
    a digit, and before the last capital of an acronym followed by a lower-case letter
    (``HTTPServer`` -> ``http server``). Runs that do not split add nothing, so the whole
    lowercased run always stays a token and ``sendFile`` is found by ``sendFile`` and ``send file``.

    >>> name_tokens("mcp__x__sendFile")
    ['mcp', 'x', 'sendfile', 'send', 'file']
    """
    tokens = tokenize(name)
    for run in _ASCII_RUN.findall(name):
        parts = _CAMEL_BOUNDARY.split(run)
        if len(parts) > 1:
            tokens.extend(part.lower() for part in parts)
    return tokens


def document_tokens(name: str, description: str) -> list[str]:
    """Return a tool's document: its name tokens :data:`NAME_WEIGHT` times, then its description's."""
    return name_tokens(name) * NAME_WEIGHT + tokenize(description)


@dataclass(frozen=True, slots=True)
class ToolSearchHit:
    """One ranked deferred tool.

    Attributes:
        tool: The tool, as registered.
        score: Its BM25 score (always positive).
    """

    tool: Tool
    score: float

    @property
    def name(self) -> str:
        """The tool's name."""
        return self.tool.name


class _Term:
    """A term's posting list, grouped by ``(tf, document length)``: tools in a group weigh the same."""

    __slots__ = ("df", "dl_min", "groups", "tf_max")

    def __init__(self) -> None:
        self.groups: dict[tuple[int, int], dict[str, None]] = {}
        self.df = 0
        self.tf_max = 0  # with dl_min, an upper bound of any posting's weight (stale after removals)
        self.dl_min = 1 << 62


class _Doc:
    __slots__ = ("length", "terms", "tool")

    def __init__(self, tool: Tool, terms: dict[str, int], length: int) -> None:
        self.tool = tool
        self.terms = terms
        self.length = length


class ToolSearchIndex:
    """An incremental BM25 index over the deferred tier.

    Build it over some tools (only the deferred ones are indexed) or over a router with
    :meth:`follow`, which keeps it current through :meth:`ToolRouter.subscribe`.

    Args:
        tools: Initial tools; those not in the deferred tier are ignored.
    """

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._docs: dict[str, _Doc] = {}
        self._terms: dict[str, _Term] = {}
        self._total_length = 0
        self._unsubscribe: Callable[[], None] | None = None
        self._router: weakref.ref[ToolRouter] | None = None
        for tool in tools:
            self.apply(None, tool)

    @classmethod
    def follow(cls, router: ToolRouter) -> ToolSearchIndex:
        """Index ``router``'s deferred tier now and follow every later change to it.

        Returns:
            The index; :meth:`close` stops following.
        """
        index = cls(router)
        index._unsubscribe = router.subscribe(index.apply)
        index._router = weakref.ref(router)
        return index

    def follows(self, router: ToolRouter) -> bool:
        """``True`` while this index follows ``router`` (made by :meth:`follow`, not closed)."""
        return self._router is not None and self._router() is router

    def close(self) -> None:
        """Stop following the router (the index keeps what it has)."""
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        self._router = None

    # -- maintenance: O(tokens of the tool) --------------------------------------------------
    def apply(self, old: Tool | None, new: Tool | None) -> None:
        """Apply one inventory change (the :data:`~steerable_agent_runtime.tools.ToolListener` form).

        ``old`` leaves the index if it was indexed; ``new`` enters it when it is deferred.
        """
        if old is not None and old.name in self._docs:
            self._remove(old.name)
        if new is not None and new.exposure is ToolExposure.DEFERRED:
            if new.name in self._docs:
                self._remove(new.name)
            self._add(new)

    def _add(self, tool: Tool) -> None:
        tokens = document_tokens(tool.name, tool.description)
        length = len(tokens)
        counts = dict(Counter(tokens))
        name = tool.name
        self._docs[name] = _Doc(tool, counts, length)
        self._total_length += length
        terms = self._terms
        for term, tf in counts.items():
            entry = terms.get(term)
            if entry is None:
                entry = terms[term] = _Term()
            group = entry.groups.get((tf, length))
            if group is None:
                entry.groups[(tf, length)] = {name: None}
            else:
                group[name] = None
            entry.df += 1
            if tf > entry.tf_max:
                entry.tf_max = tf
            if length < entry.dl_min:
                entry.dl_min = length

    def _remove(self, name: str) -> None:
        doc = self._docs.pop(name)
        self._total_length -= doc.length
        for term, tf in doc.terms.items():
            entry = self._terms[term]
            key = (tf, doc.length)
            group = entry.groups[key]
            del group[name]
            if not group:
                del entry.groups[key]
            entry.df -= 1
            if not entry.df:
                del self._terms[term]

    # -- introspection -------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._docs)

    def __contains__(self, name: object) -> bool:
        return name in self._docs

    def __iter__(self) -> Iterator[Tool]:
        return iter([doc.tool for doc in self._docs.values()])

    # -- ranking -------------------------------------------------------------------------------
    def search(self, query: str, limit: int | None = DEFAULT_MAX_RESULTS) -> list[ToolSearchHit]:
        """Rank the indexed tools against ``query``.

        Args:
            query: Free text; tokenised like a description.
            limit: Most hits to return (``None``: every match). Not clamped here; the tool clamps.

        Returns:
            The matching tools, best first (score descending, then name ascending); an empty list
            when no indexed tool contains a query term.
        """
        scores = self.scores(query, limit)
        return [ToolSearchHit(self._docs[name].tool, score) for name, score in scores]

    def scores(self, query: str, limit: int | None = DEFAULT_MAX_RESULTS) -> list[tuple[str, float]]:
        """Like :meth:`search`, as ``(name, score)`` pairs."""
        terms = self._terms
        present = [t for t in dict.fromkeys(tokenize(query)) if t in terms]
        if not present or (limit is not None and limit < 1):
            return []
        n_docs = len(self._docs)
        avgdl = self._total_length / n_docs
        idfs = {t: math.log(1 + (n_docs - terms[t].df + 0.5) / (terms[t].df + 0.5)) for t in present}
        if limit is None or limit >= n_docs:
            acc = self._accumulate(present, idfs, avgdl)
            ranked = sorted(acc.items(), key=_by_score_then_name)
            return ranked if limit is None else ranked[:limit]
        return _TopK(self, present, idfs, avgdl, limit).run()

    def _accumulate(self, present: list[str], idfs: dict[str, float], avgdl: float) -> dict[str, float]:
        """Exact scores of every matching tool, summed in query order."""
        acc: dict[str, float] = {}
        for term in present:
            idf = idfs[term]
            for (tf, dl), names in self._terms[term].groups.items():
                weight = idf * tf * _K1_PLUS_1 / (tf + BM25_K1 * (_ONE_MINUS_B + BM25_B * dl / avgdl))
                _add_all(acc, names, weight)
        return acc

    def _score(self, name: str, present: list[str], idfs: dict[str, float], avgdl: float) -> float:
        """One tool's exact score, summed in query order (the contract's order)."""
        doc = self._docs[name]
        score = 0.0
        norm = BM25_K1 * (_ONE_MINUS_B + BM25_B * doc.length / avgdl)
        for term in present:
            tf = doc.terms.get(term)
            if tf:
                score += idfs[term] * tf * _K1_PLUS_1 / (tf + norm)
        return score


class _TopK:
    """One top-``limit`` query by MaxScore (term at a time), with exact scores.

    Terms are taken in decreasing order of their upper bound (rare terms first) and their posting
    lists walked into partial scores. ``theta``, a lower bound of the final cut-off, is the
    ``limit``-th best *complete* score among the tools completed so far (the leaders by partial
    score, every time the accumulator has grown threefold). Once the terms left (``rest``) cannot
    add up to ``theta``, a tool that matched none of the terms walked cannot make the results, so
    the remaining terms, usually common words with the longest posting lists, are never walked:
    they only add to the tools already seen, which are pruned between terms as soon as they
    cannot reach ``theta``. The final contenders are re-scored in query order (the contract's
    order of addition), so the pruning changes no score and no tie.
    """

    __slots__ = (
        "avgdl",
        "best",
        "docs",
        "idfs",
        "index",
        "limit",
        "order",
        "present",
        "rest",
        "scored",
        "terms",
    )

    def __init__(
        self, index: ToolSearchIndex, present: list[str], idfs: dict[str, float], avgdl: float, limit: int
    ) -> None:
        self.index = index
        self.docs = index._docs
        self.terms = index._terms
        self.present = present
        self.idfs = idfs
        self.avgdl = avgdl
        self.limit = limit
        bound = {t: self._bound(t) for t in present}
        self.order = sorted(present, key=lambda t: (-bound[t], self.terms[t].df, t))
        self.rest = [0.0] * (len(self.order) + 1)  # rest[j]: the most order[j:] can add to a tool
        for j in range(len(self.order) - 1, -1, -1):
            self.rest[j] = self.rest[j + 1] + bound[self.order[j]] * (1 + _SLACK)
        self.scored: dict[str, float] = {}  # complete scores (in bound order)
        self.best: list[float] = []  # min-heap of the best ``limit`` complete scores

    def _bound(self, term: str) -> float:
        entry = self.terms[term]
        tf = entry.tf_max
        return (
            self.idfs[term]
            * tf
            * _K1_PLUS_1
            / (tf + BM25_K1 * (_ONE_MINUS_B + BM25_B * entry.dl_min / self.avgdl))
        )

    @property
    def theta(self) -> float:
        """The ``limit``-th best complete score so far (0 until ``limit`` tools are scored)."""
        return self.best[0] / (1 + _SLACK) if len(self.best) >= self.limit else 0.0

    def _complete(self, name: str, partial: float, start: int) -> None:
        """Add terms ``order[start:]`` to ``partial`` and offer the complete score to ``best``."""
        doc = self.docs[name]
        norm = BM25_K1 * (_ONE_MINUS_B + BM25_B * doc.length / self.avgdl)
        counts = doc.terms
        idfs = self.idfs
        for term in self.order[start:]:
            tf = counts.get(term)
            if tf:
                partial += idfs[term] * tf * _K1_PLUS_1 / (tf + norm)
        self.scored[name] = partial
        if len(self.best) < self.limit:
            heapq.heappush(self.best, partial)
        elif partial > self.best[0]:
            heapq.heapreplace(self.best, partial)

    def _refresh(self, acc: dict[str, float], start: int) -> None:
        """Raise theta: complete the tools with the best partial scores (terms ``order[:start]``)."""
        kth = heapq.nlargest(self.limit, acc.values())[-1]
        scored = self.scored
        leaders = [name for name, partial in acc.items() if partial >= kth and name not in scored]
        for name in leaders[: self.limit]:  # ties can make many leaders; any ``limit`` of them will do
            self._complete(name, acc[name], start)

    def _walk(self, acc: dict[str, float], j: int) -> None:
        """Add the postings of ``order[j]`` to ``acc``; new tools enter while they still can matter.

        A tool that enters ``acc`` through group ``g`` of this term contains none of the terms walked
        before (else it would be in ``acc``), so it scores at most ``weight(g) + rest[j + 1]``. When
        that is below theta, the lighter groups only update tools already in ``acc``. (Tools kept
        out may enter through a later term with a partial score short of this term's weight: they
        cannot make the results anyway, and underestimates only lower theta.)
        """
        weighted = _weighted_groups(self.terms[self.order[j]], self.idfs[self.order[j]], self.avgdl)
        after = self.rest[j + 1]
        fresh = not acc
        if not fresh and after >= self.theta:  # no group can be cut: the plain walk
            for weight, names in weighted:
                _add_all(acc, names, weight)
            return
        weighted.sort(key=_heaviest, reverse=True)
        refresh_at = self.limit if fresh else -1
        for at, (weight, names) in enumerate(weighted):
            if weight + after < self.theta:  # from here on, no tool enters
                if not fresh:
                    keys = acc.keys()
                    for lighter, group in weighted[at:]:
                        for name in keys & group.keys():
                            acc[name] += lighter
                return
            if fresh:
                acc.update(dict.fromkeys(names, weight))
                if 0 <= refresh_at <= len(acc):
                    self._refresh(acc, j + 1)
                    refresh_at = -1
            else:
                _add_all(acc, names, weight)

    def _add_to(self, survivors: dict[str, float], j: int) -> None:
        """Add term ``order[j]`` to the survivors only (no tool enters), the cheaper way round."""
        term = self.order[j]
        entry = self.terms[term]
        idf = self.idfs[term]
        avgdl = self.avgdl
        if _walk_is_cheaper(entry, len(survivors)):
            keys = survivors.keys()
            for (tf, dl), names in entry.groups.items():
                hits = keys & names.keys()
                if hits:
                    weight = idf * tf * _K1_PLUS_1 / (tf + BM25_K1 * (_ONE_MINUS_B + BM25_B * dl / avgdl))
                    for name in hits:
                        survivors[name] += weight
            return
        docs = self.docs
        for name in survivors:
            doc = docs[name]
            count = doc.terms.get(term)
            if count:
                survivors[name] += (
                    idf
                    * count
                    * _K1_PLUS_1
                    / (count + BM25_K1 * (_ONE_MINUS_B + BM25_B * doc.length / avgdl))
                )

    def run(self) -> list[tuple[str, float]]:
        """Return the top ``limit`` as ``(name, score)``, score descending then name ascending."""
        order, rest, limit = self.order, self.rest, self.limit
        acc: dict[str, float] = {}
        j = 0
        next_refresh = limit
        while j < len(order) and rest[j] >= self.theta:
            self._walk(acc, j)
            j += 1
            if j < len(order) and len(acc) >= next_refresh:
                self._refresh(acc, j)
                next_refresh = 3 * len(acc)
        # a tool missing from acc cannot make the results; the rest of the terms only re-score the
        # tools that still can, pruning between terms
        survivors = acc
        while j < len(order):
            floor = self.theta - rest[j]
            survivors = {name: partial for name, partial in survivors.items() if partial >= floor}
            self._add_to(survivors, j)
            j += 1
        if len(survivors) > limit:
            cut = max(self.theta, heapq.nlargest(limit, survivors.values())[-1] / (1 + _SLACK))
            contenders = [name for name, score in survivors.items() if score >= cut]
        else:
            contenders = list(survivors)
        present, idfs, avgdl = self.present, self.idfs, self.avgdl
        score = self.index._score
        ranked = sorted(
            ((name, score(name, present, idfs, avgdl)) for name in contenders), key=_by_score_then_name
        )
        return ranked[:limit]


def _add_all(acc: dict[str, float], names: Iterable[str], weight: float) -> None:
    for name in names:
        if name in acc:
            acc[name] += weight
        else:
            acc[name] = weight


def _heaviest(item: tuple[float, dict[str, None]]) -> float:
    return item[0]


def _weighted_groups(entry: _Term, idf: float, avgdl: float) -> list[tuple[float, dict[str, None]]]:
    """Each posting group of ``entry`` with its BM25 weight; ``tf_max`` / ``dl_min`` made exact again.

    Removals leave the two bounds loose; walking every group anyway, this tightens them for free.
    """
    weighted: list[tuple[float, dict[str, None]]] = []
    tf_max, dl_min = 0, 1 << 62
    for (tf, dl), names in entry.groups.items():
        weighted.append(
            (idf * tf * _K1_PLUS_1 / (tf + BM25_K1 * (_ONE_MINUS_B + BM25_B * dl / avgdl)), names)
        )
        if tf > tf_max:
            tf_max = tf
        if dl < dl_min:
            dl_min = dl
    entry.tf_max, entry.dl_min = tf_max, dl_min
    return weighted


def _walk_is_cheaper(entry: _Term, survivors: int) -> bool:
    """Whether to add a term to ``survivors`` tools through its posting groups, not tool by tool.

    Intersecting the posting groups touches small, hot dicts; looking each tool up touches three
    cold objects per tool (about 1 us at 100k tools, against some 100 ns per posting), hence the
    weights.
    """
    groups = len(entry.groups)
    return groups * 8 + min(entry.df, groups * survivors) <= 18 * survivors


def _by_score_then_name(item: tuple[str, float]) -> tuple[float, str]:
    return (-item[1], item[0])


# -- the tool ---------------------------------------------------------------------------------

_DESCRIPTION = (
    "Find tools that are not offered directly. Describe the capability you need in a few keywords "
    "(for example 'create github issue'); the best matching tools come back with their full "
    "parameter schemas, and you can call any of them by name in your next step."
)

_PARAMETERS: Final[Mapping[str, Any]] = {
    "type": "object",
    "properties": {
        "query": {
            "type": "string",
            "description": "Keywords for the capability you need: verbs, nouns, service or tool names.",
        },
        "max_results": {
            "type": "integer",
            "description": (
                f"How many tools to return: default {DEFAULT_MAX_RESULTS}, at most {MAX_RESULTS_CEILING} "
                "(values out of range are clamped)."
            ),
            "default": DEFAULT_MAX_RESULTS,
        },
    },
    "required": ["query"],
}

_NO_MATCH_NOTE = (
    "No deferred tool matches any word of the query. Try other keywords (the action, the object, "
    "the service name), or use the tools you were offered."
)


@dataclass(frozen=True, slots=True)
class _SearchTool(Tool):
    """The ``tool_search`` :func:`register_tool_search` builds: a tool that carries its index."""

    index: ToolSearchIndex | None = field(default=None, repr=False, compare=False)


def clamp_max_results(value: Any) -> int:
    """Return the result count for a ``max_results`` argument, clamped into 1..:data:`MAX_RESULTS_CEILING`.

    ``None`` gives :data:`DEFAULT_MAX_RESULTS`; numbers (and numeric strings) out of range clamp, never
    fail; fractions are truncated.

    Raises:
        ToolRetry: When the value is not a number at all (a boolean, a word, a list...).
    """
    if value is None:
        return DEFAULT_MAX_RESULTS
    number: float
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise _invalid_max_results(value)
    if isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            raise _invalid_max_results(value) from None
    elif isinstance(value, int):  # an int of any size: compare it as an int (10**400 has no float)
        return max(1, min(value, MAX_RESULTS_CEILING))
    else:
        number = value
    if math.isnan(number):
        return DEFAULT_MAX_RESULTS
    if number >= MAX_RESULTS_CEILING:
        return MAX_RESULTS_CEILING
    if number < 1:
        return 1
    return int(number)


def _invalid_max_results(value: Any) -> ToolRetry:
    problems = [{"field": "max_results", "message": f"{value!r} is not a number; give an integer 1..20"}]
    return ToolRetry(
        invalid_text(TOOL_SEARCH_TOOL_NAME, problems),
        data={"code": ToolErrorCode.INVALID_ARGUMENTS, "errors": problems},
    )


def _validate(arguments: dict[str, Any]) -> dict[str, Any]:
    query = arguments.get("query")
    if not isinstance(query, str):
        problems = [{"field": "query", "message": "a string of keywords is required"}]
        raise ToolRetry(
            invalid_text(TOOL_SEARCH_TOOL_NAME, problems),
            data={"code": ToolErrorCode.INVALID_ARGUMENTS, "errors": problems},
        )
    raw = arguments["max_results"] if "max_results" in arguments else arguments.get("maxResults")
    return {"query": query, "max_results": clamp_max_results(raw)}


def _search_tool(index: ToolSearchIndex) -> _SearchTool:
    async def tool_search(query: str, max_results: int) -> ToolResult:
        from .types import ToolResult

        hits = index.search(query, max_results)
        tools: list[dict[str, Any]] = [
            {
                "name": hit.tool.name,
                "description": hit.tool.description,
                "parameters": hit.tool.parameters,
                "score": hit.score,
            }
            for hit in hits
        ]
        data: dict[str, Any] = {"query": query, "maxResults": max_results, "tools": tools}
        if not hits:
            data["note"] = _NO_MATCH_NOTE
            return ToolResult(success=True, message=_NO_MATCH_NOTE, data=data)
        names = ", ".join(t["name"] for t in tools)
        message = f"{len(tools)} matching tool{'s' if len(tools) > 1 else ''}: {names}. Call them by name."
        return ToolResult(success=True, message=message, data=data)

    return _SearchTool(
        name=TOOL_SEARCH_TOOL_NAME,
        description=_DESCRIPTION,
        parameters=dict(_PARAMETERS),
        handler=tool_search,
        mode=ToolMode.READ,
        exposure=ToolExposure.DIRECT,
        validate=_validate,
        index=index,
    )


def register_tool_search(router: ToolRouter) -> Tool:
    """Register the ``tool_search`` tool on ``router``, with an index that follows the router.

    Idempotent: on a router that already has this module's ``tool_search``, the registered tool is
    returned and nothing changes. Spec: Exposure tiers; the progressive harness strategy.

    Args:
        router: The run's router; its deferred tier is what the tool searches, as it is at each call.

    Returns:
        The registered tool (direct tier, read mode).

    Raises:
        DuplicateToolError: When another tool named ``tool_search`` is registered there.
    """
    registered = router.get(TOOL_SEARCH_TOOL_NAME)
    if registered is not None:
        if is_tool_search(router, registered):
            return registered
        raise DuplicateToolError(TOOL_SEARCH_TOOL_NAME)
    index = ToolSearchIndex.follow(router)
    tool = router.register(_search_tool(index))

    def stop_when_removed(old: Tool | None, new: Tool | None) -> None:
        if new is None and isinstance(old, _SearchTool) and old.index is index:
            index.close()  # the tool left this router: its index stops following it
            unsubscribe()

    unsubscribe = router.subscribe(stop_when_removed)
    return tool


def is_tool_search(router: ToolRouter, tool: Tool | None) -> bool:
    """Return ``True`` when ``tool`` is the ``tool_search`` :func:`register_tool_search` put on ``router``.

    The tool carries its index, and the index knows the router it follows.
    """
    return isinstance(tool, _SearchTool) and tool.index is not None and tool.index.follows(router)
