"""tool_search: BM25 over the deferred tier, checked against spec/tool_contract.json (TS-1..TS-4, TIER-1)."""

from __future__ import annotations

import gc
import json
import random
import re
import weakref
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from peer_data import peer_dir
from steerable_agent_runtime.errors import DuplicateToolError
from steerable_agent_runtime.modes import ToolMode
from steerable_agent_runtime.tool_search import (
    BM25_B,
    BM25_K1,
    DEFAULT_MAX_RESULTS,
    MAX_RESULTS_CEILING,
    NAME_WEIGHT,
    TOOL_SEARCH_TOOL_NAME,
    ToolSearchIndex,
    clamp_max_results,
    name_tokens,
    register_tool_search,
    tokenize,
)
from steerable_agent_runtime.tools import Tool, ToolExposure, ToolRouter
from steerable_agent_runtime.types import ToolResult

ROOT = Path(__file__).resolve().parent.parent
CONTRACT = json.loads((ROOT / "spec" / "tool_contract.json").read_text(encoding="utf-8"))["toolSearch"]
TOLERANCE = CONTRACT["bm25"]["tolerance"]


async def _ok(**kwargs: Any) -> dict[str, Any]:
    return {"ran": True, "arguments": kwargs}


def make_tool(name: str, description: str, exposure: str = "deferred", **parameters: Any) -> Tool:
    schema = {"type": "object", "properties": parameters or {"text": {"type": "string"}}}
    return Tool(
        name=name,
        description=description,
        parameters=schema,
        handler=_ok,
        mode=ToolMode.READ,
        exposure=ToolExposure(exposure),
    )


def index_of(inventory: list[dict[str, str]]) -> ToolSearchIndex:
    return ToolSearchIndex(make_tool(t["name"], t["description"]) for t in inventory)


async def search(router: ToolRouter, query: Any, **extra: Any) -> ToolResult:
    return await router.dispatch({"id": "c1", "name": "tool_search", "arguments": {"query": query, **extra}})


def names(result: ToolResult) -> list[str]:
    return [t["name"] for t in hits(result)]


def hits(result: ToolResult) -> list[dict[str, Any]]:
    """A successful search's ``data.tools``."""
    assert result.success, result.error
    assert result.data is not None
    tools: list[dict[str, Any]] = result.data["tools"]
    return tools


# -- the contract (TS-4) -------------------------------------------------------------------------


def test_contract_parameters_match_the_code_ts_4():
    bm25 = CONTRACT["bm25"]
    assert (bm25["k1"], bm25["b"], bm25["nameWeight"]) == (BM25_K1, BM25_B, NAME_WEIGHT) == (1.2, 0.75, 2)
    limits = CONTRACT["maxResults"]
    assert (limits["default"], limits["ceiling"], limits["minimum"]) == (
        DEFAULT_MAX_RESULTS,
        MAX_RESULTS_CEILING,
        1,
    )
    assert (DEFAULT_MAX_RESULTS, MAX_RESULTS_CEILING) == (8, 20)
    assert CONTRACT["tokens"]["camelCaseBoundary"] == r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])"


def test_the_registered_tool_matches_the_contract_ts_1_ts_4():
    router = ToolRouter()
    tool = register_tool_search(router)
    spec = CONTRACT["tool"]
    assert tool.name == spec["name"] == TOOL_SEARCH_TOOL_NAME
    assert tool.mode.value == spec["mode"] and tool.exposure.value == spec["exposure"]
    required = set(tool.parameters["required"])
    assert required == set(spec["input"]["required"])
    assert set(tool.parameters["properties"]) - required == set(spec["input"]["optional"])


@pytest.mark.parametrize("vector", CONTRACT["vectors"], ids=lambda v: v["query"])
def test_acceptance_vectors_to_1e_9_ts_1_ts_3_ts_4(vector):
    index = index_of(CONTRACT["inventory"])
    expected = [(e["name"], e["score"]) for e in vector["expected"]]
    for limit in (None, 8, 20, 3, 1):
        got = index.scores(vector["query"], limit)
        want = expected if limit is None else expected[:limit]
        assert [n for n, _ in got] == [n for n, _ in want], limit
        assert all(abs(g - w) <= TOLERANCE for (_, g), (_, w) in zip(got, want, strict=True)), (got, want)


@pytest.mark.parametrize("vector", CONTRACT["camelCase"]["vectors"], ids=lambda v: v["query"])
def test_camel_case_vectors_ts_4(vector):
    index = index_of(CONTRACT["camelCase"]["inventory"])
    got = index.scores(vector["query"], None)
    assert [n for n, _ in got] == [e["name"] for e in vector["expected"]]
    assert all(abs(g - e["score"]) <= TOLERANCE for (_, g), e in zip(got, vector["expected"], strict=True))


@pytest.mark.parametrize("vector", CONTRACT["tokenVectors"], ids=lambda v: v.get("name") or v["text"])
def test_token_vectors_ts_4(vector):
    if "name" in vector:
        assert name_tokens(vector["name"]) == vector["tokens"]
    else:
        assert tokenize(vector["text"]) == vector["tokens"]


def test_camel_case_names_are_found_by_the_joined_and_the_split_query():
    index = index_of(CONTRACT["camelCase"]["inventory"])
    assert index.scores("sendFile", 1)[0][0] == "mcp__x__sendFile"
    assert index.scores("send file", 1)[0][0] == "mcp__x__sendFile"
    assert index.scores("Send a file", 1)[0][0] == "mcp__x__sendFile"


def test_prose_is_not_split_so_github_matches_github():
    index = index_of(CONTRACT["camelCase"]["inventory"])
    assert tokenize("GitHub") == ["github"]
    assert [n for n, _ in index.scores("github", None)] == ["mcp__github__getIssue"]
    assert index.scores("hub", None) == []  # the description's GitHub is one word
    # a description-only match: the name is getIssue, the word GitHub only in the description
    index = index_of([{"name": "open_ticket", "description": "Open a ticket on GitHub"}])
    assert [n for n, _ in index.scores("github", None)] == ["open_ticket"]


# -- the tool over a router (TS-1..3, TIER-1) ------------------------------------------------------


@pytest.fixture
def router() -> ToolRouter:
    r = ToolRouter()
    for entry in CONTRACT["inventory"]:
        r.register(make_tool(entry["name"], entry["description"]))
    r.register(make_tool("github_direct", "A direct GitHub tool", exposure="direct"))
    r.register(make_tool("github_hidden", "A hidden GitHub tool", exposure="hidden"))
    register_tool_search(r)
    return r


async def test_ranks_the_deferred_tier_only_tier_1_ts_1(router):
    result = await search(router, "github")
    assert names(result) == [
        "mcp__github__create_issue",
        "mcp__github__list_repos",
        "mcp__github__search_issues",
    ]
    # the scores are the contract's: direct and hidden tools are not in the corpus (N = 8)
    assert result.data is not None
    assert result.data["tools"][0]["score"] == pytest.approx(1.443104830718, abs=TOLERANCE)


async def test_tool_search_is_one_direct_read_tool_offered_directly_ts_1(router):
    tool = router.get("tool_search")
    assert tool is not None and tool.exposure is ToolExposure.DIRECT and tool.mode is ToolMode.READ
    offered = [d["function"]["name"] for d in router.describe_model()]
    assert offered == ["github_direct", "tool_search"]
    assert register_tool_search(router) is tool  # idempotent
    assert router.names().count("tool_search") == 1


def test_a_foreign_tool_named_tool_search_is_not_replaced():
    router = ToolRouter()
    router.register(make_tool("tool_search", "someone else's", exposure="direct"))
    with pytest.raises(DuplicateToolError):
        register_tool_search(router)


async def test_results_carry_full_schemas_callable_next_round_ts_1_tier_2(router):
    result = await search(router, "post a slack message", max_results=1)
    assert result.data is not None
    [hit] = result.data["tools"]
    registered = router.get(hit["name"])
    assert registered is not None
    assert hit == {
        "name": registered.name,
        "description": registered.description,
        "parameters": registered.parameters,
        "score": hit["score"],
    }
    assert hit["score"] > 0
    assert result.message is not None and hit["name"] in result.message
    called = await router.dispatch({"id": "c2", "name": hit["name"], "arguments": {"text": "hi"}})
    assert called.success and called.data["ran"] is True


@pytest.fixture
def crowded() -> ToolRouter:
    r = ToolRouter()
    for i in range(30):
        r.register(make_tool(f"mcp__srv__widget_{i:02d}", f"Widget number {i}"))
    register_tool_search(r)
    return r


@pytest.mark.parametrize(
    ("given", "count"),
    [
        (None, 8),
        (8, 8),
        (3, 3),
        (20, 20),
        (21, 20),
        (10_000, 20),
        (0, 1),
        (-5, 1),
        (3.9, 3),
        ("5", 5),
        (" 12 ", 12),
        (float("inf"), 20),
        (float("-inf"), 1),
        (float("nan"), 8),
    ],
)
async def test_default_8_ceiling_20_and_out_of_range_values_clamp_ts_2(crowded, given, count):
    extra = {} if given is None else {"max_results": given}
    result = await search(crowded, "widget", **extra)
    assert len(names(result)) == count
    assert result.data is not None
    assert result.data["maxResults"] == count


async def test_max_results_accepts_the_camel_case_alias_ts_2(crowded):
    assert len(names(await search(crowded, "widget", maxResults=2))) == 2


@pytest.mark.parametrize("given", [True, "many", [3], {"n": 3}])
async def test_a_max_results_that_is_no_number_asks_the_model_to_fix_it(crowded, given):
    result = await search(crowded, "widget", max_results=given)
    assert not result.success and result.needs_followup
    assert result.data is not None
    assert result.data["code"] == "invalid_arguments"
    assert result.error is not None and "max_results" in result.error


@pytest.mark.parametrize("query", [None, 7, ["github"]])
async def test_a_query_that_is_no_string_asks_the_model_to_fix_it(router, query):
    arguments = {} if query is None else {"query": query}
    result = await router.dispatch({"id": "c1", "name": "tool_search", "arguments": arguments})
    assert not result.success and result.needs_followup and "query" in result.error


def test_clamp_max_results_is_the_rule_ts_2():
    assert [clamp_max_results(v) for v in (None, 1, 20, 21, 0, 2.5)] == [8, 1, 20, 20, 1, 2]
    # integers too big for a float (valid JSON) clamp too, never raise
    assert [clamp_max_results(v) for v in (10**400, -(10**400))] == [20, 1]


@pytest.mark.parametrize("query", ["kubernetes helm rollout", "", "   ", "???", "déjà"])
async def test_off_vocabulary_query_gives_an_empty_list_with_a_note_ts_3(router, query):
    result = await search(router, query)
    assert result.success
    assert result.data is not None
    assert result.data["tools"] == []
    assert "No deferred tool matches" in result.data["note"]
    assert result.message == result.data["note"]


async def test_relevance_floor_drops_tools_without_a_query_term_ts_3(crowded, router):
    # three matches, not the eight asked for: nothing without the word is padded in
    assert len(names(await search(router, "github"))) == 3
    # never a hidden or direct tool either (hidden tools are never named: TIER-1)
    assert "github_hidden" not in names(await search(router, "hidden github tool", max_results=20))


# -- the incremental index -----------------------------------------------------------------------


async def test_changes_show_at_the_next_call_without_a_rebuild(router, monkeypatch):
    calls: list[str] = []
    original = ToolSearchIndex._add

    def counting(self: ToolSearchIndex, tool: Tool) -> None:
        calls.append(tool.name)
        original(self, tool)

    monkeypatch.setattr(ToolSearchIndex, "_add", counting)
    router.register(make_tool("mcp__k8s__rollout", "Roll out a kubernetes deployment with helm"))
    assert calls == ["mcp__k8s__rollout"]  # one tool indexed, not the inventory again
    assert names(await search(router, "kubernetes helm rollout")) == ["mcp__k8s__rollout"]

    router.unregister("mcp__k8s__rollout")
    assert names(await search(router, "kubernetes helm rollout")) == []

    router.set_exposure("mcp__slack__post_message", "direct")  # promoted: no longer searchable
    assert "mcp__slack__post_message" not in names(await search(router, "slack channel"))
    router.set_exposure("mcp__slack__post_message", "hidden")
    assert "mcp__slack__post_message" not in names(await search(router, "slack channel"))
    router.set_exposure("mcp__slack__post_message", "deferred")
    assert names(await search(router, "slack channel"))[0] == "mcp__slack__post_message"
    router.set_exposure("github_direct", "deferred")  # demoted: searchable now
    assert "github_direct" in names(await search(router, "github"))
    assert calls == ["mcp__k8s__rollout", "mcp__slack__post_message", "github_direct"]


async def test_scores_follow_the_inventory_at_call_time_ts_4(router):
    # N, n and avgdl come from the deferred tier when the call runs: one more tool changes the
    # scores, removing it restores the contract's figures exactly
    before = hits(await search(router, "github"))
    router.register(make_tool("mcp__gitlab__create_issue", "Create a new issue in a GitLab project"))
    during = hits(await search(router, "github"))
    assert during[0]["score"] != before[0]["score"]
    router.unregister("mcp__gitlab__create_issue")
    assert hits(await search(router, "github")) == before


def test_the_index_matches_a_fresh_build_after_any_sequence_of_changes():
    rng = random.Random(7)
    words = ["send", "file", "issue", "github", "slack", "message", "create", "list", "read", "user"]
    router = ToolRouter()
    index = ToolSearchIndex.follow(router)
    for step in range(300):
        name = f"t{rng.randrange(40)}{rng.choice(['', 'Send', 'File'])}"
        tool = router.get(name)
        if tool is None:
            description = " ".join(rng.choice(words) for _ in range(rng.randrange(1, 8)))
            router.register(
                make_tool(name, description, exposure=rng.choice(["deferred", "deferred", "direct"]))
            )
        elif step % 3:
            router.unregister(name)
        else:
            router.set_exposure(name, rng.choice(["direct", "deferred", "hidden"]))
        fresh = ToolSearchIndex(router)
        query = " ".join(rng.sample(words, 2))
        assert index.scores(query, None) == fresh.scores(query, None)
        assert index.scores(query, 3) == fresh.scores(query, None)[:3]
    index.close()
    router.register(make_tool("after_close", "send file"))
    assert "after_close" not in index


def test_top_k_equals_the_exhaustive_ranking_on_seal_tools():
    # the pruned top-k path (MaxScore) against scoring every tool, on 4,076 real tools and long,
    # stop-word-laden queries
    folder = peer_dir("tool-retrieval") / "seal-tools"
    tools = [json.loads(line) for line in (folder / "tools.jsonl").read_text(encoding="utf-8").splitlines()]
    queries = [
        json.loads(line)["query"]
        for line in (folder / "queries.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    index = ToolSearchIndex(make_tool(t["name"], t["description"]) for t in tools)
    for query in queries[::9] + ["get", "the a of", "information retrieve", "calculateNetIncome"]:
        full = index.scores(query, None)
        for limit in (1, 8, 20):
            assert index.scores(query, limit) == full[:limit], (query, limit)


# -- properties ----------------------------------------------------------------------------------

WORDS = ["send", "file", "get", "issue", "git", "hub", "github", "a", "the", "x1", "Send", "FILE"]
names_st = st.text(alphabet="abcxyzSFG_19", min_size=1, max_size=12)
descriptions_st = st.lists(st.sampled_from(WORDS), max_size=8).map(" ".join)
inventories_st = st.dictionaries(names_st, descriptions_st, min_size=1, max_size=25)


@given(st.text(max_size=60))
def test_tokens_are_lowercase_alphanumeric_runs(text):
    tokens = tokenize(text)
    assert all(re.fullmatch(r"[a-z0-9]+", t) for t in tokens)
    assert tokens == tokenize(text.lower())
    assert "".join(tokens) == re.sub(r"[^a-z0-9]", "", text.lower())


@given(st.text(max_size=40))
def test_name_tokens_extend_the_prose_tokens(name):
    tokens = name_tokens(name)
    assert tokens[: len(tokenize(name))] == tokenize(name)
    assert all(re.fullmatch(r"[a-z0-9]+", t) for t in tokens)


@settings(max_examples=150, deadline=None)
@given(inventories_st, st.lists(st.sampled_from(WORDS + ["zzz"]), min_size=1, max_size=5).map(" ".join))
def test_ranking_properties(inventory, query):
    tools = [make_tool(n, d) for n, d in inventory.items()]
    index = ToolSearchIndex(tools)
    ranked = index.scores(query, None)
    terms = set(tokenize(query))
    matching = {n for n, d in inventory.items() if terms & set(name_tokens(n) + tokenize(d))}
    # relevance floor: exactly the tools containing a query term, each with a positive score
    assert {n for n, _ in ranked} == matching
    assert all(score > 0 for _, score in ranked)
    # order: score descending, then name ascending
    assert ranked == sorted(ranked, key=lambda item: (-item[1], item[0]))
    # deterministic, whatever the registration order; the top-k path agrees with the full ranking
    assert ToolSearchIndex(reversed(tools)).scores(query, None) == ranked
    for limit in (1, 2, 8):
        assert index.scores(query, limit) == ranked[:limit]


def test_a_wired_router_can_be_garbage_collected():
    # the registry of wired routers is weak, and nothing it holds points back at the router
    router = ToolRouter()
    router.register(make_tool("mcp__x__sendFile", "Upload a file"))
    register_tool_search(router)
    gone = weakref.ref(router)
    del router
    gc.collect()
    assert gone() is None
