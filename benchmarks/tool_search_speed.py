"""Query and registration cost of the ``tool_search`` index at 1k, 10k and 100k deferred tools.

What it measures
    Inventories of 1,000, 10,000 and 100,000 deferred tools grown from Seal-Tools
    (``_tool_corpus.synthetic_inventory``: the 4,076 real tools, then MCP-style namespaced copies
    whose descriptions borrow eight words of another tool). Three query sets of 300, stop-words kept:

    * ``keywords``: what a model sends to ``tool_search`` (its schema asks for keywords): the words
      of the tool each Seal-Tools query needs (``getVehicleBatteryLevel`` -> ``get vehicle battery
      level``), every 4th query;
    * ``requests``: MetaTool user requests (one sentence, ~18 words), every 3rd query;
    * ``tasks``: Seal-Tools test queries as written, every 4th: multi-step task descriptions of up
      to ~80 words, the worst case for a term-at-a-time ranker (dozens of distinct terms, many of
      them in most documents).

    * ``ToolSearchIndex.scores(query, 8)``: tokenise the query and return the exact top 8 by the
      contract's BM25 (``tool_search``'s default), per query; p50 / p90 / p99 in milliseconds.
    * Baselines in the same run, over the same documents already tokenised our way (name tokens
      twice + description), top 8 per query:
      ``bm25s`` (``BM25(k1=1.2, b=0.75, method="lucene")``: the same idf; the same ranking, its
      scores are ours / (k1 + 1) in float32) and ``rank-bm25`` (``BM25Okapi(k1=1.2, b=0.75)``:
      ``get_scores`` + ``argpartition``; a different idf that goes negative for common terms).
      A baseline that is not installed is skipped, and the run says so.
    * Registration: one tool added to (then removed from) a followed router of that size, through
      ``ToolRouter.register`` / ``unregister`` (router + index), in microseconds; and the time to
      build each index from scratch (what a rebuild per change would cost).
    * Agreement: the share of queries whose top-8 scores equal bm25s's (times k1 + 1, to float32
      precision); the names differ only where scores tie (bm25s breaks ties by position).

    Rounds: every query runs once as a warm-up, then ``--rounds`` times; per-query medians feed the
    percentiles. rank-bm25 at 100k is sampled (first 20 queries): it scores every document.

Goals (checked for every query set)
    * p50 query under 1 ms at 10k and under 5 ms at 100k deferred tools, exact contract scores;
    * registering one tool costs O(its tokens): microseconds, flat from 1k to 100k.

Run
    python benchmarks/tool_search_speed.py [--sizes 1000,10000,100000] [--rounds R] [--check]

    Goals are printed as PASS/FAIL lines; the exit code is 0 unless ``--check`` is given and a goal
    is missed (then 1).
"""

from __future__ import annotations

import argparse
import functools
import gc
import re
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from _tool_corpus import deferred_tool, load_dataset, synthetic_inventory
from steerable_agent_runtime.tool_search import BM25_K1, ToolSearchIndex, document_tokens, tokenize
from steerable_agent_runtime.tools import ToolRouter

GOAL_P50_MS = {10_000: 1.0, 100_000: 5.0}
K = 8
_CAMEL_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def _percentiles(samples: list[float]) -> tuple[float, float, float]:
    ordered = sorted(samples)

    def at(p: float) -> float:
        return ordered[min(len(ordered) - 1, int(p * len(ordered)))]

    return statistics.median(ordered), at(0.90), at(0.99)


def _time_queries(run: Callable[[str], Any], queries: list[str], rounds: int) -> list[float]:
    """Per-query median over ``rounds`` (after one warm-up), in milliseconds."""
    for q in queries:
        run(q)
    per_query: list[list[float]] = [[] for _ in queries]
    gc.disable()
    try:
        for _ in range(rounds):
            for i, q in enumerate(queries):
                started = time.perf_counter_ns()
                run(q)
                per_query[i].append((time.perf_counter_ns() - started) / 1e6)
    finally:
        gc.enable()
    return [statistics.median(s) for s in per_query]


def _bm25s(docs: list[list[str]]) -> tuple[Callable[[str], list[tuple[int, float]]], float] | None:
    try:
        import bm25s
    except ImportError:
        return None
    started = time.perf_counter()
    retriever = bm25s.BM25(k1=1.2, b=0.75, method="lucene")
    retriever.index(docs, show_progress=False)
    build = time.perf_counter() - started
    vocab = retriever.vocab_dict

    def run(query: str) -> list[tuple[int, float]]:
        tokens = [t for t in dict.fromkeys(tokenize(query)) if t in vocab]
        if not tokens:
            return []
        ids, scores = retriever.retrieve([tokens], k=K, show_progress=False, n_threads=0)
        return [(int(i), float(s)) for i, s in zip(ids[0], scores[0], strict=True) if s > 0]

    return run, build


def _rank_bm25(docs: list[list[str]]) -> tuple[Callable[[str], Any], float] | None:
    try:
        import numpy as np
        from rank_bm25 import BM25Okapi
    except ImportError:
        return None
    started = time.perf_counter()
    model = BM25Okapi(docs, k1=1.2, b=0.75)
    build = time.perf_counter() - started

    def run(query: str) -> list[int]:
        scores = model.get_scores(list(dict.fromkeys(tokenize(query))))
        top = np.argpartition(-scores, K)[:K]
        return [int(i) for i in top[np.argsort(-scores[top])]]

    return run, build


def _same_scores(ours: list[tuple[str, float]], theirs: list[tuple[int, float]]) -> bool:
    """bm25s's lucene scores are ours / (k1 + 1) in float32; names may differ only among ties."""
    if len(ours) != len(theirs):
        return False
    return all(
        abs(a / (1 + BM25_K1) - b) <= 1e-5 * max(1.0, b) for (_, a), (_, b) in zip(ours, theirs, strict=True)
    )


def _registration_us(router: ToolRouter, rounds: int) -> tuple[float, float]:
    """Median microseconds to register / unregister one tool on a followed router."""
    adds: list[float] = []
    removes: list[float] = []
    tool = deferred_tool(
        "mcp__bench__sendSlackMessage", "Send a message to a Slack channel on behalf of the user"
    )
    for _ in range(rounds):
        started = time.perf_counter_ns()
        router.register(tool)
        adds.append((time.perf_counter_ns() - started) / 1e3)
        started = time.perf_counter_ns()
        router.unregister(tool.name)
        removes.append((time.perf_counter_ns() - started) / 1e3)
    return statistics.median(adds), statistics.median(removes)


def _query_sets() -> dict[str, list[str]]:
    """Three kinds of query, 300 each (see the module docstring)."""
    _, seal = load_dataset("seal-tools")
    _, meta = load_dataset("metatool")
    keywords = []
    for query in seal[::4][:300]:
        words = [w.lower() for w in _CAMEL_WORDS.findall(query["relevant_tools"][0])]
        keywords.append(" ".join(words))
    return {
        "keywords": keywords,
        "requests": [q["query"] for q in meta[::3][:300]],
        "tasks": [q["query"] for q in seal[::4][:300]],
    }


def _words(queries: list[str]) -> float:
    return statistics.median(len(tokenize(q)) for q in queries)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]

    query_sets = _query_sets()
    print(f"top {K}; times in ms unless noted; python {sys.version.split()[0]}; query sets (median words):")
    for label, queries in query_sets.items():
        print(f"  {label:<9} {len(queries)} queries, {_words(queries):.0f} words, e.g. {queries[1][:70]!r}")
    failures: list[str] = []
    for size in sizes:
        inventory = synthetic_inventory(size)
        tools = [deferred_tool(name, description) for name, description in inventory]
        router = ToolRouter()
        started = time.perf_counter()
        index = ToolSearchIndex.follow(router)
        for tool in tools:
            router.register(tool)
        build_ours = time.perf_counter() - started
        started = time.perf_counter()
        ToolSearchIndex(tools)
        build_bare = time.perf_counter() - started
        docs = [document_tokens(name, description) for name, description in inventory]
        bm25s_made = _bm25s(docs)
        rank_made = _rank_bm25(docs)

        print(f"\n== {size:,} deferred tools ==")
        print(f"{'queries':<9} {'ranker':<11} {'p50':>8} {'p90':>8} {'p99':>8}   steerable p50 / theirs")
        for label, queries in query_sets.items():
            ours = _time_queries(functools.partial(index.scores, limit=K), queries, args.rounds)
            p50, p90, p99 = _percentiles(ours)
            print(f"{label:<9} {'steerable':<11} {p50:8.3f} {p90:8.3f} {p99:8.3f}")
            for name, made, sample, rounds in (
                ("bm25s", bm25s_made, queries, args.rounds),
                ("rank-bm25", rank_made, queries if size < 100_000 else queries[:20], 1),
            ):
                if made is None:
                    print(f"{'':<9} {name:<11} skipped: not installed (pip install {name})")
                    continue
                theirs = _time_queries(made[0], sample, rounds)
                t50, t90, t99 = _percentiles(theirs)
                mine = statistics.median(ours[: len(sample)])
                print(f"{'':<9} {name:<11} {t50:8.3f} {t90:8.3f} {t99:8.3f}   {mine / t50:6.2f}x")
            if bm25s_made is not None:
                same = sum(_same_scores(index.scores(q, K), bm25s_made[0](q)) for q in queries)
                print(f"{'':<9} top-{K} scores equal to bm25s's (x (k1 + 1), float32): {same}/{len(queries)}")
            goal = GOAL_P50_MS.get(size)
            if goal is not None:
                ok = p50 < goal
                print(f"{'':<9} {'PASS' if ok else 'FAIL'}: p50 {p50:.3f} ms < {goal} ms")
                if not ok:
                    failures.append(f"{label} p50 at {size}")
        add_us, remove_us = _registration_us(router, 200)
        builds = ", ".join(
            f"{name} {made[1] * 1e3:.0f} ms"
            for name, made in (("bm25s", bm25s_made), ("rank-bm25", rank_made))
            if made
        )
        print(
            f"register one tool {add_us:.1f} us, unregister {remove_us:.1f} us (router + index). Whole "
            f"index: {build_bare * 1e3:.0f} ms bare, {build_ours * 1e3:.0f} ms through router.register"
            f"{'; rebuild ' + builds if builds else ''}"
        )
        index.close()
    if failures:
        print(f"missed: {', '.join(failures)}")
    return 1 if args.check and failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
