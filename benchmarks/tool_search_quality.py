"""Retrieval quality of ``tool_search``'s ranking on MetaTool and Seal-Tools (measured, not asserted).

What it measures
    Both labelled data sets in ``tests/data/peer/tool-retrieval/`` (found by ``tests/peer_data.py``):
    Seal-Tools (4,076 tools, 1,354 test queries) and MetaTool (199 tools, 1,000 queries). Every
    catalogue tool is registered as a deferred tool; each query runs through
    ``ToolSearchIndex.scores(query, 20)``, the ranking the ``tool_search`` tool returns (contract
    BM25, name tokens twice, relevance floor, ties by name). Metrics, as defined in the data's
    ``SOURCE.md`` (macro-averaged over queries, in percent):

    * R@k: share of a query's relevant tools in the top k (k = 1, 5, 8, 10, 20); R@8 is the
      default result count;
    * Comp@8: share of queries with *every* relevant tool in the top 8;
    * NDCG@10 with binary relevance;
    * empty: queries with no result at all (the relevance floor).

    Printed next to the reference run in ``bm25_figures.json`` (``computed_here``, name weight 2,
    no stop-words: the same BM25 by the data's collector, whose tokenizer splits camelCase in the
    whole text and breaks ties by catalogue order), per data set and per split.

Run
    python benchmarks/tool_search_quality.py

    Nothing is asserted; the exit code is 0.
"""

from __future__ import annotations

import json
import math
import statistics
import sys
import time
from typing import Any

from _tool_corpus import deferred_tool, load_dataset, retrieval_dir
from steerable_agent_runtime.tool_search import ToolSearchIndex

KS = (1, 5, 8, 10, 20)
GROUP_FIELD = {"seal-tools": "split", "metatool": "type"}


def _metrics(ranked: list[str], relevant: list[str]) -> dict[str, float]:
    wanted = set(relevant)
    out = {f"R@{k}": len(wanted & set(ranked[:k])) / len(wanted) for k in KS}
    out["Comp@8"] = float(wanted <= set(ranked[:8]))
    dcg = sum(1 / math.log2(i + 2) for i, name in enumerate(ranked[:10]) if name in wanted)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(wanted), 10)))
    out["NDCG@10"] = dcg / ideal
    out["empty"] = float(not ranked)
    return out


def _mean(rows: list[dict[str, float]]) -> dict[str, float]:
    keys = rows[0].keys()
    out = {k: 100 * statistics.fmean(r[k] for r in rows) for k in keys if k != "empty"}
    out["empty"] = sum(r["empty"] for r in rows)
    return out


def _reference(dataset: str, group: str) -> dict[str, Any] | None:
    figures = json.loads((retrieval_dir() / "bm25_figures.json").read_text(encoding="utf-8"))
    for row in figures["computed_here"]:
        if (
            row["dataset"] == dataset
            and row["group"] == group
            and row["cfg"] == {"name_weight": 2, "stop": False}
        ):
            return row
    return None


def main() -> int:
    columns = ["R@1", "R@5", "R@8", "R@10", "R@20", "Comp@8", "NDCG@10", "empty"]
    print(f"{'data / group':<38} {'run':<10} " + " ".join(f"{c:>7}" for c in columns))
    for dataset in ("seal-tools", "metatool"):
        tools, queries = load_dataset(dataset)
        index = ToolSearchIndex(deferred_tool(t["name"], t["description"]) for t in tools)
        per_group: dict[str, list[dict[str, float]]] = {"all": []}
        started = time.perf_counter()
        for query in queries:
            ranked = [name for name, _ in index.scores(query["query"], 20)]
            row = _metrics(ranked, query["relevant_tools"])
            per_group["all"].append(row)
            per_group.setdefault(query[GROUP_FIELD[dataset]], []).append(row)
        elapsed = time.perf_counter() - started
        for group, rows in per_group.items():
            label = f"{dataset} / {group} ({len(rows)} q)"
            ours = _mean(rows)
            print(f"{label:<38} {'steerable':<10} " + " ".join(f"{ours[c]:7.2f}" for c in columns))
            reference = _reference(dataset, group)
            if reference is None:
                print(f"{'':<38} {'reference':<10} (no figure for this group)")
                continue
            figures = {**reference, "empty": reference.get("empty_results", 0)}
            print(f"{'':<38} {'reference':<10} " + " ".join(f"{figures[c]:7.2f}" for c in columns))
        print(
            f"{'':<38} ({len(tools):,} deferred tools, {len(queries):,} queries in {elapsed:.2f} s, "
            f"{1e3 * elapsed / len(queries):.2f} ms per query)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
