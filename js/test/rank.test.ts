// ToolIndex's MaxScore pruning against a brute-force ranker over the same contract formula (TS-1,
// TS-3): inventories big enough that pruning happens, queries short and long.
import assert from "node:assert/strict";
import { test } from "node:test";

import { BM25, compareCodePoints, documentTokens, ToolIndex, tokenizeProse } from "@steerable/host";

function random(seed: number): () => number {
  return () => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed / 2 ** 31;
  };
}

function inventory(size: number, next: () => number) {
  const vocabulary = Array.from({ length: 400 }, (_, i) => `w${i}`);
  const word = () => vocabulary[Math.floor(vocabulary.length * next() ** 3)] as string; // Zipf-like
  return Array.from({ length: size }, (_, i) => ({
    name: `tool_${i}_${word()}`,
    description: Array.from({ length: 3 + Math.floor(next() * 20) }, word).join(" "),
  }));
}

function bruteForce(tools: { name: string; description: string }[], query: string, limit: number) {
  const docs = tools.map((t) => documentTokens(t.name, t.description));
  const avgdl = docs.reduce((n, d) => n + d.length, 0) / docs.length;
  const terms = [...new Set(tokenizeProse(query))];
  const df = new Map(terms.map((t) => [t, docs.filter((d) => d.includes(t)).length]));
  const hits = tools.map((tool, i) => {
    const doc = docs[i] as string[];
    let score = 0;
    for (const term of terms) {
      const tf = doc.filter((x) => x === term).length;
      const n = df.get(term) ?? 0;
      if (tf === 0) continue;
      const idf = Math.log(1 + (docs.length - n + 0.5) / (n + 0.5));
      score += (idf * tf * (BM25.k1 + 1)) / (tf + BM25.k1 * (1 - BM25.b + (BM25.b * doc.length) / avgdl));
    }
    return { name: tool.name, score };
  });
  return hits
    .filter((h) => h.score > 0)
    .sort((a, b) => b.score - a.score || compareCodePoints(a.name, b.name))
    .slice(0, limit);
}

test("MaxScore pruning ranks exactly as scoring every tool would (TS-1, TS-3)", () => {
  const next = random(7);
  const tools = inventory(3000, next);
  const index = new ToolIndex(tools);
  for (let q = 0; q < 120; q++) {
    const words = Array.from({ length: 1 + Math.floor(next() * 40) }, () => `w${Math.floor(400 * next() ** 2)}`);
    const limit = 1 + (q % 20);
    const query = words.join(" ");
    const ours = index.search(query, { maxResults: limit });
    const theirs = bruteForce(tools, query, limit);
    assert.deepEqual(
      ours.map((h) => h.name),
      theirs.map((h) => h.name),
      query,
    );
    ours.forEach((h, i) => {
      assert.ok(Math.abs(h.score - (theirs[i]?.score ?? NaN)) <= 1e-9, query);
    });
  }
});
