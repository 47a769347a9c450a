/**
 * `tool_search`'s ranking: Okapi BM25 over the deferred tier's names and descriptions.
 *
 * Spec: "Exposure tiers" (`tool_search`); the contract's `toolSearch` section
 * (`spec/tool_contract.json`); REQUIREMENTS TS-1..TS-4. Port of the ranking in
 * `steerable_agent_runtime.tool_search` (tokens, BM25, floor, order, `max_results` clamping), so
 * a host that registers deferred tools itself ranks them exactly as the Python runtime does.
 *
 * @packageDocumentation
 */

/** A tool's tier (spec: "Exposure tiers"): only `deferred` tools are found by search. */
export type ToolExposure = "direct" | "deferred" | "hidden";

/** What the ranker reads of an inventory entry; any other fields ride along untouched. */
export interface RankableTool {
  /** The tool's registered name (unique in the corpus; see {@link ToolIndex}). */
  readonly name: string;
  /** Its description; missing (or not a string) ranks as the empty text. */
  readonly description?: string | undefined;
  /** Its tier; an entry without one counts as `deferred` (see {@link inSearchCorpus}). */
  readonly exposure?: ToolExposure | undefined;
}

/** Options of a search. */
export interface RankOptions {
  /**
   * Most results to return: default {@link MAX_RESULTS_DEFAULT}; clamped into
   * 1..{@link MAX_RESULTS_CEILING} as {@link clampMaxResults} does, never an error for a number.
   */
  readonly maxResults?: number | undefined;
}

/** One ranked tool. */
export interface RankedTool<T extends RankableTool = RankableTool> {
  /** The tool's name (`tool.name`). */
  readonly name: string;
  /** Its BM25 score, always positive. */
  readonly score: number;
  /** The inventory entry itself, so a host can send its schema. */
  readonly tool: T;
}

/** The BM25 parameters (contract: `toolSearch.bm25`). */
export const BM25 = Object.freeze({
  /** Term-frequency saturation. */
  k1: 1.2,
  /** Document-length normalisation. */
  b: 0.75,
  /** How many times a tool's name tokens are counted in its document. */
  nameWeight: 2,
});

/** Results returned when no `maxResults` is given (TS-2; contract: `toolSearch.maxResults`). */
export const MAX_RESULTS_DEFAULT = 8;
/** Per-call ceiling on results: each carries a full schema, so the payload stays bounded (TS-2). */
export const MAX_RESULTS_CEILING = 20;

const TOKEN = /[a-z0-9]+/g;
const ASCII_RUN = /[A-Za-z0-9]+/g;
/** Where {@link tokenizeName} splits an ASCII run (contract: `toolSearch.tokens.camelCaseBoundary`). */
export const CAMEL_CASE_BOUNDARY: RegExp = /(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])/;
const K1_PLUS_1 = BM25.k1 + 1;
const ONE_MINUS_B = 1 - BM25.b;

/**
 * Tokenize prose (a description or a query): lowercase the text (Unicode default case mapping),
 * then take every maximal run of `[a-z0-9]` (contract: `toolSearch.tokens.prose`).
 *
 * `String.prototype.toLowerCase` and Python's `str.lower()` agree on every character that
 * lowercases to ASCII (`"İ"` → `"i̇"`, the Kelvin sign `"K"` → `"k"`); other differences (final
 * sigma, newer Unicode versions) only touch non-ASCII output, which separates tokens either way.
 *
 * @param text - Any text.
 * @returns Its tokens, in order, repeats kept.
 */
export function tokenizeProse(text: string): string[] {
  return text.toLowerCase().match(TOKEN) ?? [];
}

/**
 * Tokenize a tool name (contract: `toolSearch.tokens.name`): its prose tokens, then, for every
 * maximal `[A-Za-z0-9]` run of the name as written that the camelCase boundary splits into two or
 * more parts, those parts lowercased. The whole run stays a token too, so `sendFile` is found by
 * `sendFile` and by `send file`.
 *
 * @param name - A tool name, as written.
 * @returns Its tokens, e.g. `mcp__x__sendFile` → `["mcp", "x", "sendfile", "send", "file"]`.
 */
export function tokenizeName(name: string): string[] {
  const tokens = tokenizeProse(name);
  for (const run of name.match(ASCII_RUN) ?? []) {
    const parts = run.split(CAMEL_CASE_BOUNDARY);
    if (parts.length > 1) tokens.push(...parts.map((part) => part.toLowerCase()));
  }
  return tokens;
}

/**
 * A tool's BM25 document (contract: `toolSearch.tokens.document`): its name tokens
 * {@link BM25}.nameWeight times, then its description's prose tokens.
 *
 * @param name - The tool name.
 * @param description - Its description.
 * @returns The document's tokens.
 */
export function documentTokens(name: string, description: string): string[] {
  const nameTokens = tokenizeName(name);
  const tokens: string[] = [];
  for (let i = 0; i < BM25.nameWeight; i++) tokens.push(...nameTokens);
  tokens.push(...tokenizeProse(description));
  return tokens;
}

/**
 * Tell whether an inventory entry is in the search corpus (contract: `toolSearch.corpus`; TS-1).
 *
 * `deferred` entries are; `direct` and `hidden` ones (and any other value) never are. An entry
 * without `exposure` counts as deferred, so a host can pass the deferred list it keeps itself.
 *
 * @param tool - An inventory entry.
 * @returns `true` when search ranks it.
 */
export function inSearchCorpus(tool: RankableTool): boolean {
  return tool.exposure === undefined || tool.exposure === "deferred";
}

// Python's str.isspace() characters, which clamp_max_results strips from a numeric string.
const PY_SPACE = "[\\t\\n\\v\\f\\r\\x1c-\\x1f \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]";
const PY_STRIP = new RegExp(`^${PY_SPACE}+|${PY_SPACE}+$`, "g");
const ND = /^\p{Nd}$/u;
const DIGITS = "[0-9](?:_?[0-9])*";
// Python's float() syntax (decimal digits already made ASCII): a decimal with optional `_` between
// digits, or inf/infinity/nan.
const PY_FLOAT = new RegExp(
  `^[+-]?(?:(?:(?:${DIGITS})?\\.${DIGITS}|${DIGITS}\\.?)(?:e[+-]?${DIGITS})?|inf(?:inity)?|nan)$`,
  "i",
);

/**
 * The result count for a `max_results` argument (contract: `toolSearch.maxResults`; TS-2), as the
 * Python `clamp_max_results`: `undefined`/`null` give {@link MAX_RESULTS_DEFAULT}; a number is
 * clamped into 1..{@link MAX_RESULTS_CEILING} with its fraction truncated (`2.7` → 2, `0` and
 * negatives → 1, `25` and `Infinity` → 20, `NaN` → the default); a bigint is clamped; a string
 * in Python's `float()` syntax (`" 5 "`, `"2.7"`, `"1_0"`, `"inf"`, `"nan"`, any Unicode decimal
 * digits) counts as its number.
 *
 * @param value - The argument as received.
 * @returns An integer in 1..20.
 * @throws TypeError When the value is not a number at all (a boolean, a word, an object...).
 */
export function clampMaxResults(value: unknown): number {
  if (value === undefined || value === null) return MAX_RESULTS_DEFAULT;
  if (typeof value === "bigint") {
    return value < 1n ? 1 : value > BigInt(MAX_RESULTS_CEILING) ? MAX_RESULTS_CEILING : Number(value);
  }
  let number: number;
  if (typeof value === "number") number = value;
  else if (typeof value === "string") number = parsePythonFloat(value);
  else throw invalidMaxResults(value);
  if (Number.isNaN(number)) return MAX_RESULTS_DEFAULT;
  if (number >= MAX_RESULTS_CEILING) return MAX_RESULTS_CEILING;
  if (number < 1) return 1;
  return Math.trunc(number);
}

function parsePythonFloat(text: string): number {
  const stripped = text.replace(PY_STRIP, "").replace(/\p{Nd}/gu, decimalDigit);
  if (!PY_FLOAT.test(stripped)) throw invalidMaxResults(text);
  const lower = stripped.toLowerCase();
  if (lower.endsWith("nan")) return Number.NaN;
  if (lower.endsWith("inf") || lower.endsWith("infinity")) {
    return lower.startsWith("-") ? -Infinity : Infinity;
  }
  return Number(stripped.replaceAll("_", ""));
}

/**
 * The ASCII digit of a Unicode decimal digit, as Python's float() reads it: decimal digits come in
 * runs of ten code points, 0 to 9, so the digit is its distance from the run's start, mod 10.
 */
function decimalDigit(digit: string): string {
  let cp = digit.codePointAt(0) ?? 0x30;
  let offset = 0;
  while (ND.test(String.fromCodePoint(cp - 1))) {
    cp--;
    offset++;
  }
  return String(offset % 10);
}

function invalidMaxResults(value: unknown): TypeError {
  const shown = typeof value === "string" ? JSON.stringify(value) : typeof value;
  return new TypeError(`max_results: ${shown} is not a number; give an integer 1..${MAX_RESULTS_CEILING}`);
}

/**
 * Compare two strings by Unicode code points (Python's `str` order), not by UTF-16 code units
 * (JavaScript's `<`) nor by locale (`localeCompare`). They differ once an astral character meets
 * one in U+E000..U+FFFF: `"\u{1F600}" < "\uFF01"` is true in JavaScript, false here.
 *
 * @returns A negative number, zero or a positive number, as `a` sorts before, with or after `b`.
 */
export function compareCodePoints(a: string, b: string): number {
  if (a === b) return 0;
  const shorter = Math.min(a.length, b.length);
  let i = 0;
  while (i < shorter && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  // step back into a surrogate pair the two strings share the first half of
  if (i > 0 && isHighSurrogate(a.charCodeAt(i - 1))) i--;
  for (;;) {
    const x = a.codePointAt(i);
    const y = b.codePointAt(i);
    if (x === undefined || y === undefined) return (x === undefined ? 0 : 1) - (y === undefined ? 0 : 1);
    if (x !== y) return x < y ? -1 : 1;
    i += x > 0xffff ? 2 : 1;
  }
}

function isHighSurrogate(unit: number): boolean {
  return unit >= 0xd800 && unit <= 0xdbff;
}

interface Doc<T> {
  readonly tool: T;
  readonly length: number;
  /** Each of its terms' norm (see {@link Postings}), to re-score it without walking postings. */
  readonly norms: Map<string, number>;
}

/** One term's postings: the documents holding it and each one's length-normalised tf part. */
interface Postings {
  readonly docs: number[];
  /** `tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))`, so a term's weight is `idf * norm`. */
  readonly norms: number[];
  /** The largest norm: `idf * maxNorm` bounds what the term adds to any tool (MaxScore). */
  maxNorm: number;
}

interface Hit<T> {
  readonly doc: Doc<T>;
  readonly score: number;
}

/**
 * A BM25 index over an inventory's search corpus, to reuse across queries
 * (contract: `toolSearch`; TS-1..TS-4).
 *
 * Built once in O(the corpus's tokens), each posting's length-normalised tf part computed then (the
 * corpus, so `avgdl`, is fixed). A search is MaxScore, term at a time, as the Python index's: the
 * rare terms' postings are walked first, and once the terms left cannot lift an unseen tool to the
 * cut, the common terms are only looked up for the tools still in the running; the survivors are
 * re-scored exactly in query order, so the pruning changes no score and no tie
 * (benchmarks/host_typescript.py: 0.14 ms p50 for 80-word queries at 10,000 tools, 2 ms at
 * 100,000). The index does not follow later changes to the inventory: build a new one when it
 * changes.
 *
 * Entries outside the corpus ({@link inSearchCorpus}) are ignored. Names are unique in the
 * corpus: when two entries share one, the later replaces the earlier, as a re-registration does
 * in the Python index.
 *
 * @typeParam T - The inventory's entry type, returned as each result's `tool`.
 */
export class ToolIndex<T extends RankableTool = RankableTool> {
  readonly #postings = new Map<string, Postings>();
  readonly #docs: Doc<T>[] = [];
  readonly #scores: Float64Array;
  readonly #touched: Int32Array;

  /** @param inventory - The tools; only those in the search corpus are indexed. */
  constructor(inventory: Iterable<T>) {
    const byName = new Map<string, T>();
    for (const tool of inventory) {
      if (!inSearchCorpus(tool)) continue;
      byName.set(tool.name, tool); // a repeated name: the later entry wins
    }
    let totalLength = 0;
    const tfs = new Map<string, number[]>();
    for (const tool of byName.values()) {
      const description = typeof tool.description === "string" ? tool.description : "";
      const tokens = documentTokens(tool.name, description);
      const id = this.#docs.push({ tool, length: tokens.length, norms: new Map() }) - 1;
      totalLength += tokens.length;
      const counts = new Map<string, number>();
      for (const token of tokens) counts.set(token, (counts.get(token) ?? 0) + 1);
      for (const [term, tf] of counts) {
        let postings = this.#postings.get(term);
        if (postings === undefined) {
          postings = { docs: [], norms: [], maxNorm: 0 };
          this.#postings.set(term, postings);
          tfs.set(term, []);
        }
        postings.docs.push(id);
        tfs.get(term)?.push(tf);
      }
    }
    const avgdl = totalLength / this.#docs.length;
    for (const [term, postings] of this.#postings) {
      const counts = tfs.get(term) ?? [];
      postings.docs.forEach((id, i) => {
        const tf = counts[i] ?? 0;
        const doc = this.#docs[id] as Doc<T>;
        const norm = (tf * K1_PLUS_1) / (tf + BM25.k1 * (ONE_MINUS_B + (BM25.b * doc.length) / avgdl));
        postings.norms.push(norm);
        postings.maxNorm = Math.max(postings.maxNorm, norm);
        doc.norms.set(term, norm);
      });
    }
    this.#scores = new Float64Array(this.#docs.length);
    this.#touched = new Int32Array(this.#docs.length);
  }

  /** The number of tools in the corpus. */
  get size(): number {
    return this.#docs.length;
  }

  /**
   * Rank the corpus against a query (contract: `toolSearch.bm25`).
   *
   * The query's prose tokens, de-duplicated, are its terms; a tool scores the sum, in query
   * order, of `idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))` over the terms its
   * document holds, with `idf = ln(1 + (N - n + 0.5) / (n + 0.5))`. A tool holding no term is
   * dropped (TS-3), so an off-vocabulary query gives `[]`.
   *
   * Scores equal the Python reference's within the contract's tolerance (1e-9), not always bit for
   * bit: V8's `Math.log` and the C library's `log` behind Python's `math.log` round differently in
   * the last place for some arguments (the idf of a term in 1 of 3 tools, ln(1 + 2.5 / 1.5), is
   * 0.9808292530117264 here, 0.9808292530117263 in CPython on glibc), and the tf part is
   * computed once per posting: a few 1e-16 in a score.
   *
   * @param query - Free text, never camelCase-split.
   * @param options - `maxResults`, clamped by {@link clampMaxResults}.
   * @returns At most `maxResults` tools, score descending, then name ascending by code points.
   */
  search(query: string, options: RankOptions = {}): RankedTool<T>[] {
    const limit = clampMaxResults(options.maxResults);
    const n = this.#docs.length;
    const terms: { term: string; postings: Postings; idf: number; bound: number }[] = [];
    for (const term of new Set(tokenizeProse(query))) {
      const postings = this.#postings.get(term);
      if (postings === undefined) continue;
      const idf = Math.log(1 + (n - postings.docs.length + 0.5) / (postings.docs.length + 0.5));
      terms.push({ term, postings, idf, bound: idf * postings.maxNorm });
    }
    // MaxScore, term at a time: rare terms (the largest bounds) first. Once the terms left cannot
    // lift a tool no term has reached yet (`rest`) to the limit-th best partial score so far
    // (partial scores only grow), their posting lists, usually common words, are never walked.
    const order = [...terms].sort((a, b) => b.bound - a.bound || a.postings.docs.length - b.postings.docs.length);
    const rest = new Float64Array(order.length + 1);
    for (let j = order.length - 1; j >= 0; j--)
      rest[j] = (rest[j + 1] as number) + (order[j]?.bound ?? 0) * (1 + SLACK);
    const scores = this.#scores;
    const touched = this.#touched;
    let matched = 0;
    let walked = 0;
    let theta = 0; // the limit-th best partial score when last measured: a lower bound of the cut
    let measuredAt = 0;
    for (; walked < order.length; walked++) {
      const left = (rest[walked] as number) / (1 - SLACK);
      if (left < theta) break; // a stale theta is still a lower bound
      if (matched >= limit && matched >= 1.5 * measuredAt) {
        // measured again once the matches grew by half: the worst complete score of the leaders
        // by partial score (limit tools whose final scores are known) bounds the final cut
        theta = Math.max(theta, this.#worstOfLeaders(terms, leaders(scores, touched, matched, limit)));
        measuredAt = matched;
        if (left < theta) break;
      }
      const { postings, idf } = order[walked] as (typeof order)[number];
      const { docs, norms } = postings;
      for (let i = 0; i < docs.length; i++) {
        const id = docs[i] as number;
        if (scores[id] === 0) touched[matched++] = id; // every weight is > 0: 0 means untouched
        scores[id] = (scores[id] as number) + idf * (norms[i] as number);
      }
    }
    // the tools that can still make the results: the terms not walked are added to them alone,
    // one term at a time, each time dropping those that cannot reach the cut any more
    const kth =
      matched >= limit ? (scores[leaders(scores, touched, matched, limit)[limit - 1] as number] as number) : 0;
    const cut = Math.max(theta, kth) * (1 - SLACK);
    let contenders: number[] = [];
    for (let i = 0; i < matched; i++) {
      const id = touched[i] as number;
      if ((scores[id] as number) + (rest[walked] as number) >= cut) contenders.push(id);
    }
    for (let j = walked; j < order.length && contenders.length > limit; j++) {
      const { term, idf } = order[j] as (typeof order)[number];
      const after = rest[j + 1] as number;
      const kept: number[] = [];
      for (const id of contenders) {
        const norm = (this.#docs[id] as Doc<T>).norms.get(term);
        const partial = (scores[id] as number) + (norm === undefined ? 0 : idf * norm);
        scores[id] = partial;
        if (partial + after >= cut) kept.push(id);
      }
      contenders = kept;
    }
    // their exact scores, summed in query order (the contract's order of addition)
    const top: Hit<T>[] = [];
    for (const id of contenders) {
      const doc = this.#docs[id] as Doc<T>;
      offer(top, { doc, score: complete(doc, terms) }, limit);
    }
    for (let i = 0; i < matched; i++) scores[touched[i] as number] = 0;
    return top.map(({ doc, score }) => ({ name: doc.tool.name, score, tool: doc.tool }));
  }

  /** The lowest complete score among `ids`' tools. */
  #worstOfLeaders(terms: readonly { term: string; idf: number }[], ids: readonly number[]): number {
    let worst = Infinity;
    for (const id of ids) worst = Math.min(worst, complete(this.#docs[id] as Doc<T>, terms));
    return worst;
  }
}

/** A tool's exact score: its terms' weights added in query order (the contract's order). */
function complete<T>(doc: Doc<T>, terms: readonly { term: string; idf: number }[]): number {
  let score = 0;
  for (const { term, idf } of terms) {
    const norm = doc.norms.get(term);
    if (norm !== undefined) score += idf * norm;
  }
  return score;
}

/** The ids of the `k` best partial scores (`count >= k`, k ≤ 20). */
function leaders(scores: Float64Array, ids: Int32Array, count: number, k: number): number[] {
  const best: number[] = [];
  for (let i = 0; i < count; i++) {
    const id = ids[i] as number;
    const value = scores[id] as number;
    if (best.length === k && value <= (scores[best[k - 1] as number] as number)) continue;
    let at = best.length;
    while (at > 0 && (scores[best[at - 1] as number] as number) < value) at--;
    best.splice(at, 0, id);
    if (best.length > k) best.pop();
  }
  return best;
}

/** Relative slack on the MaxScore bounds, far above the rounding of a sum of a few terms. */
const SLACK = 1e-9;

/** Whether `a` ranks before `b`: higher score, then lower name by code points. */
function ranksBefore<T extends RankableTool>(a: Hit<T>, b: Hit<T>): boolean {
  if (a.score !== b.score) return a.score > b.score;
  return compareCodePoints(a.doc.tool.name, b.doc.tool.name) < 0;
}

/** Put `hit` into `top` (best first, at most `limit` long) if it ranks there (limit ≤ 20). */
function offer<T extends RankableTool>(top: Hit<T>[], hit: Hit<T>, limit: number): void {
  const last = top[top.length - 1];
  if (top.length >= limit && last !== undefined && !ranksBefore(hit, last)) return;
  let at = top.length;
  while (at > 0) {
    const previous = top[at - 1];
    if (previous === undefined || !ranksBefore(hit, previous)) break;
    at--;
  }
  top.splice(at, 0, hit);
  if (top.length > limit) top.pop();
}

/**
 * Rank an inventory's search corpus against a query: `new ToolIndex(inventory).search(...)`
 * (contract: `toolSearch`; TS-1..TS-4). Build a {@link ToolIndex} once instead to run several
 * queries over the same inventory.
 *
 * @param inventory - The tools; only `deferred` ones (or ones without `exposure`) are ranked.
 * @param query - Free text.
 * @param options - `maxResults` (default 8, clamped into 1..20).
 * @returns The matching tools `{name, score, tool}`, best first; `[]` when none matches.
 */
export function rankTools<T extends RankableTool>(
  inventory: Iterable<T>,
  query: string,
  options: RankOptions = {},
): RankedTool<T>[] {
  return new ToolIndex(inventory).search(query, options);
}
