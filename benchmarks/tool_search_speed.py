"""Query and registration cost of the ``tool_search`` index at 1k, 10k and 100k deferred tools.

What it measures
    Inventories of 1,000, 10,000 and 100,000 deferred tools grown from Seal-Tools
    (``_tool_corpus.synthetic_inventory``: the 4,076 real tools, then MCP-style namespaced copies
    whose descriptions borrow eight words of another tool). Queries: 300 Seal-Tools queries
    (every 4th+1 of the 1,354 test queries; natural-language requests, 5-40 words, stop-words kept).

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
    * Agreement: the share of queries whose top-8 names equal bm25s's (float32 ties can differ).

    Rounds: every query runs once as a warm-up, then ``--rounds`` times; per-query medians feed the
    percentiles. rank-bm25 at 100k is sampled (first 20 queries): it scores every document.

Goals
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
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from _tool_corpus import deferred_tool, load_dataset, synthetic_inventory
from steerable_agent_runtime.tool_search import ToolSearchIndex, document_tokens, tokenize
from steerable_agent_runtime.tools import ToolRouter

GOAL_P50_MS = {10_000: 1.0, 100_000: 5.0}
K = 8


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


def _bm25s(docs: list[list[str]]) -> tuple[Callable[[str], list[int]], float] | None:
    try:
        import bm25s
    except ImportError:
        return None
    started = time.perf_counter()
    retriever = bm25s.BM25(k1=1.2, b=0.75, method="lucene")
    retriever.index(docs, show_progress=False)
    build = time.perf_counter() - started
    vocab = retriever.vocab_dict

    def run(query: str) -> list[int]:
        tokens = [t for t in dict.fromkeys(tokenize(query)) if t in vocab]
        if not tokens:
            return []
        ids, scores = retriever.retrieve([tokens], k=K, show_progress=False, n_threads=0)
        return [int(i) for i, s in zip(ids[0], scores[0], strict=True) if s > 0]

    return run, build


def _rank_bm25(docs: list[list[str]]) -> tuple[Callable[[str], list[int]], float] | None:
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


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]

    _, seal_queries = load_dataset("seal-tools")
    queries = [q["query"] for q in seal_queries[::4][:300]]
    print(
        f"{len(queries)} Seal-Tools queries; top {K}; times in ms unless noted; "
        f"python {sys.version.split()[0]}"
    )
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

        ours = _time_queries(functools.partial(index.scores, limit=K), queries, args.rounds)
        p50, p90, p99 = _percentiles(ours)
        print(f"\n== {size:,} deferred tools ==")
        print(f"steerable ToolSearchIndex   p50 {p50:8.3f}  p90 {p90:8.3f}  p99 {p99:8.3f}")
        docs = [document_tokens(name, description) for name, description in inventory]
        names = [name for name, _ in inventory]
        for label, factory, sample in (
            ("bm25s", _bm25s, queries),
            ("rank-bm25", _rank_bm25, queries if size < 100_000 else queries[:20]),
        ):
            made = factory(docs)
            if made is None:
                print(f"{label:<27} skipped: not installed (pip install {label})")
                continue
            run, build = made
            rounds = args.rounds if label == "bm25s" else 1
            theirs = _time_queries(run, sample, rounds)
            t50, t90, t99 = _percentiles(theirs)
            mine50 = statistics.median(ours[: len(sample)])
            print(
                f"{label:<27} p50 {t50:8.3f}  p90 {t90:8.3f}  p99 {t99:8.3f}   "
                f"ours/theirs p50 {mine50 / t50:5.2f}x   build {build * 1e3:8.1f} ms"
            )
            if label == "bm25s":
                same = sum([names[i] for i in run(q)] == [n for n, _ in index.scores(q, K)] for q in queries)
                print(f"{'':<27} same top-{K} names as bm25s: {same}/{len(queries)} queries")
        add_us, remove_us = _registration_us(router, 200)
        print(
            f"register one tool {add_us:7.1f} us, unregister {remove_us:7.1f} us (router + index); "
            f"building the whole index: {build_bare * 1e3:.1f} ms bare, {build_ours * 1e3:.1f} ms through "
            f"router.register"
        )
        goal = GOAL_P50_MS.get(size)
        if goal is not None:
            ok = p50 < goal
            print(f"{'PASS' if ok else 'FAIL'}: p50 {p50:.3f} ms < {goal} ms at {size:,}")
            if not ok:
                failures.append(f"p50 at {size}")
        index.close()
    return 1 if args.check and failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
