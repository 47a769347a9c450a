// The tool contract (spec/tool_contract.json, CON-1): every vector of its toolMode, completion and
// toolSearch sections, through the package's public entry point.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";

import {
  BM25,
  CAMEL_CASE_BOUNDARY,
  clampMaxResults,
  compareCodePoints,
  DEFAULT_TOOL_MODE,
  decideToolMode,
  documentTokens,
  inSearchCorpus,
  isTerminalResult,
  isToolMode,
  MAX_RESULTS_CEILING,
  MAX_RESULTS_DEFAULT,
  OPEN_WORLD_READS,
  type RankableTool,
  type RankedTool,
  rankTools,
  requiresConsent,
  TOOL_MODES,
  type ToolExposure,
  ToolIndex,
  tokenizeName,
  tokenizeProse,
} from "@steerable/host";

// -- the contract file (from js/build/test/ up to the repository root) ------------------------

interface Expected {
  readonly name: string;
  readonly score: number;
}
interface SearchVector {
  readonly query: string;
  readonly expected: readonly Expected[];
}
interface InventoryEntry {
  readonly name: string;
  readonly description: string;
}
type TokenVector =
  | { readonly name: string; readonly tokens: readonly string[] }
  | {
      readonly text: string;
      readonly tokens: readonly string[];
    };
interface Contract {
  readonly toolMode: {
    readonly modes: readonly string[];
    readonly exact: Readonly<Record<string, string>>;
    readonly rules: readonly { readonly prefixes: readonly string[]; readonly mode: string }[];
    readonly default: string;
    readonly vectors: readonly { readonly name: string; readonly mode: string }[];
  };
  readonly completion: {
    readonly vectors: readonly { readonly result: unknown; readonly terminal: boolean }[];
  };
  readonly toolSearch: {
    readonly tool: { readonly name: string; readonly exposure: string };
    readonly maxResults: { readonly default: number; readonly minimum: number; readonly ceiling: number };
    readonly tokens: { readonly camelCaseBoundary: string };
    readonly bm25: {
      readonly k1: number;
      readonly b: number;
      readonly nameWeight: number;
      readonly tolerance: number;
    };
    readonly tokenVectors: readonly TokenVector[];
    readonly inventory: readonly InventoryEntry[];
    readonly vectors: readonly SearchVector[];
    readonly camelCase: {
      readonly inventory: readonly InventoryEntry[];
      readonly vectors: readonly SearchVector[];
    };
  };
}

const CONTRACT_URL = new URL("../../../spec/tool_contract.json", import.meta.url);
const contract = JSON.parse(readFileSync(CONTRACT_URL, "utf8")) as Contract;
const { toolMode, completion, toolSearch } = contract;
const TOLERANCE = toolSearch.bm25.tolerance;

function assertRanking(actual: readonly RankedTool[], expected: readonly Expected[], label: string): void {
  assert.deepEqual(
    actual.map((hit) => hit.name),
    expected.map((hit) => hit.name),
    `${label}: names and order`,
  );
  actual.forEach((hit, i) => {
    const want = expected[i]?.score ?? Number.NaN;
    assert.ok(Math.abs(hit.score - want) <= TOLERANCE, `${label}: ${hit.name} scored ${hit.score}, want ${want}`);
    assert.equal(hit.tool.name, hit.name, `${label}: the hit carries its inventory entry`);
  });
}

test("CON-1: the contract file is found from the compiled test", () => {
  assert.ok(CONTRACT_URL.pathname.endsWith("/spec/tool_contract.json"));
  assert.ok(toolMode.vectors.length > 0 && completion.vectors.length > 0 && toolSearch.vectors.length > 0);
});

// -- toolMode: MODE-1, MODE-4 ------------------------------------------------------------------

describe("toolMode (MODE-1, MODE-4)", () => {
  for (const { name, mode } of toolMode.vectors) {
    test(`MODE-1/MODE-4: decideToolMode(${JSON.stringify(name)}) is ${mode}`, () => {
      assert.equal(decideToolMode(name), mode);
    });
  }

  test("MODE-1: TOOL_MODES, DEFAULT_TOOL_MODE and OPEN_WORLD_READS are the contract's", () => {
    assert.deepEqual([...TOOL_MODES], toolMode.modes);
    assert.equal(DEFAULT_TOOL_MODE, toolMode.default);
    assert.deepEqual([...OPEN_WORLD_READS].sort(), Object.keys(toolMode.exact).sort());
    for (const [name, mode] of Object.entries(toolMode.exact)) assert.equal(decideToolMode(name), mode);
  });

  test("MODE-1: every prefix of every rule gives the rule's mode", () => {
    for (const { prefixes, mode } of toolMode.rules) {
      for (const prefix of prefixes) {
        assert.equal(decideToolMode(prefix), mode, prefix);
        assert.equal(decideToolMode(`${prefix}thing`), mode, `${prefix}thing`);
        assert.equal(decideToolMode(prefix.toUpperCase()), toolMode.default, prefix.toUpperCase());
      }
    }
  });

  test("MODE-4: a name no rule matches gets the documented, consent-requiring default", () => {
    assert.equal(decideToolMode("frobnicate"), "local");
    assert.equal(requiresConsent(DEFAULT_TOOL_MODE), true);
  });

  test("MODE-2: requiresConsent is true for local only, and refuses a non-mode", () => {
    assert.deepEqual(
      TOOL_MODES.filter((mode) => requiresConsent(mode)),
      ["local"],
    );
    assert.throws(() => requiresConsent("Local" as never), RangeError);
    assert.equal(isToolMode("safe_write"), true);
    assert.equal(isToolMode("write"), false);
    assert.equal(isToolMode(3), false);
  });
});

// -- completion: ENV-6 -------------------------------------------------------------------------

describe("completion (ENV-6)", () => {
  for (const { result, terminal } of completion.vectors) {
    test(`ENV-6: isTerminalResult(${JSON.stringify(result)}) is ${terminal}`, () => {
      assert.equal(isTerminalResult(result), terminal);
    });
  }

  test("ENV-6: undefined and non-objects are not terminal", () => {
    for (const value of [undefined, false, true, 0, "", "terminal", [], [false], Symbol("x"), () => false]) {
      assert.equal(isTerminalResult(value), false);
    }
  });

  test("ENV-6: the snake_case needs_followup counts when needsFollowup is absent (as in Python)", () => {
    assert.equal(isTerminalResult({ success: false, needs_followup: true }), false);
    assert.equal(isTerminalResult({ success: false, needs_followup: false }), true);
    // needsFollowup present (even null) wins, as Python's result.get("needsFollowup", ...) does
    assert.equal(isTerminalResult({ success: false, needsFollowup: null, needs_followup: true }), true);
    assert.equal(isTerminalResult({ success: false, needsFollowup: true, needs_followup: false }), false);
    // an undefined value is an absent key, as after JSON.stringify
    assert.equal(isTerminalResult({ success: false, needsFollowup: undefined, needs_followup: true }), false);
  });
});

// -- toolSearch: TS-1..TS-4 --------------------------------------------------------------------

describe("toolSearch tokens (TS-4)", () => {
  for (const vector of toolSearch.tokenVectors) {
    if ("name" in vector) {
      test(`TS-4: tokenizeName(${JSON.stringify(vector.name)})`, () => {
        assert.deepEqual(tokenizeName(vector.name), vector.tokens);
      });
    } else {
      test(`TS-4: tokenizeProse(${JSON.stringify(vector.text)})`, () => {
        assert.deepEqual(tokenizeProse(vector.text), vector.tokens);
      });
    }
  }

  test("TS-4: a document is the name tokens nameWeight times, then the description's", () => {
    assert.deepEqual(documentTokens("getV2", "Get it"), ["getv2", "get", "v2", "getv2", "get", "v2", "get", "it"]);
  });

  test("TS-4: a query is never camelCase-split", () => {
    assert.deepEqual(tokenizeProse("sendFile HTTPHeaders"), ["sendfile", "httpheaders"]);
  });

  // Values from the Python reference (str.lower() and toLowerCase() agree on every character
  // that lowercases to ASCII: all 0x110000 code points were compared in context)
  test("TS-4: Unicode case mapping as Python's str.lower() (İ, the Kelvin sign, ß, final sigma)", () => {
    assert.deepEqual(tokenizeProse("\u0130stanbul"), ["i", "stanbul"]);
    assert.deepEqual(tokenizeProse("\u212Aelvin"), ["kelvin"]);
    assert.deepEqual(tokenizeProse("\u03A3\u0391\u03A3 x"), ["x"]);
    assert.deepEqual(tokenizeProse("stra\u00DFe STRASSE \uFB03x"), ["stra", "e", "strasse", "x"]);
    assert.deepEqual(tokenizeName("\u0130nspectHTTPFile"), ["i", "nspecthttpfile", "nspect", "http", "file"]);
  });
});

describe("toolSearch ranking (TS-1..TS-4)", () => {
  test("TS-4: BM25, MAX_RESULTS_DEFAULT and MAX_RESULTS_CEILING are the contract's", () => {
    const { k1, b, nameWeight } = toolSearch.bm25;
    assert.deepEqual({ ...BM25 }, { k1, b, nameWeight });
    assert.equal(MAX_RESULTS_DEFAULT, toolSearch.maxResults.default);
    assert.equal(MAX_RESULTS_CEILING, toolSearch.maxResults.ceiling);
    assert.equal(clampMaxResults(0), toolSearch.maxResults.minimum);
    assert.equal(CAMEL_CASE_BOUNDARY.source, toolSearch.tokens.camelCaseBoundary);
    assert.equal(CAMEL_CASE_BOUNDARY.flags, "");
  });

  test("TS-1: tool_search itself is a direct-tier tool, so never in its own corpus", () => {
    assert.equal(toolSearch.tool.exposure, "direct");
    assert.equal(inSearchCorpus({ name: toolSearch.tool.name, exposure: "direct" }), false);
  });

  for (const { query, expected } of toolSearch.vectors) {
    test(`TS-1/TS-3/TS-4: rankTools(inventory, ${JSON.stringify(query)})`, () => {
      assertRanking(rankTools(toolSearch.inventory, query), expected, query);
    });
  }

  for (const { query, expected } of toolSearch.camelCase.vectors) {
    test(`TS-4: camelCase rankTools(inventory, ${JSON.stringify(query)})`, () => {
      assertRanking(rankTools(toolSearch.camelCase.inventory, query), expected, query);
    });
  }

  test("TS-4: one ToolIndex answers every vector, reused across queries", () => {
    const index = new ToolIndex(toolSearch.inventory);
    assert.equal(index.size, toolSearch.inventory.length);
    for (const { query, expected } of toolSearch.vectors) assertRanking(index.search(query), expected, query);
    for (const { query, expected } of toolSearch.vectors) assertRanking(index.search(query), expected, query);
  });

  test("TS-3: an off-vocabulary or empty query, or an empty corpus, gives an empty list", () => {
    assert.deepEqual(rankTools(toolSearch.inventory, "kubernetes helm rollout"), []);
    assert.deepEqual(rankTools(toolSearch.inventory, ""), []);
    assert.deepEqual(rankTools([], "github"), []);
  });

  test("TS-1: the corpus is the deferred tier: direct and hidden entries are excluded, from N too", () => {
    const withTiers = (exposure: ToolExposure): RankableTool[] =>
      toolSearch.inventory.map((tool) => ({ ...tool, name: `${exposure}_${tool.name}`, exposure }));
    const deferred = toolSearch.inventory.map((tool) => ({ ...tool, exposure: "deferred" as const }));
    const inventory = [...withTiers("direct"), ...deferred, ...withTiers("hidden")];
    for (const { query, expected } of toolSearch.vectors) {
      assertRanking(rankTools(inventory, query), expected, query);
    }
    assert.equal(new ToolIndex(inventory).size, toolSearch.inventory.length);
    // entries without exposure count as deferred; anything but "deferred" is out
    assert.equal(inSearchCorpus({ name: "x" }), true);
    assert.equal(inSearchCorpus({ name: "x", exposure: "deferred" }), true);
    assert.equal(inSearchCorpus({ name: "x", exposure: "hidden" }), false);
    assert.equal(inSearchCorpus({ name: "x", exposure: "DEFERRED" as ToolExposure }), false);
  });

  test("TS-4: the hit's tool is the inventory entry itself, with its other fields", () => {
    const entry = { name: "get_weather", description: "Weather", parameters: { type: "object" } };
    const [hit] = rankTools([entry], "weather");
    assert.equal(hit?.tool, entry);
    assert.deepEqual(hit?.tool.parameters, { type: "object" });
  });

  // Values from the Python reference: ToolSearchIndex(...).scores(query)
  test("TS-4: ties sort by name in code point order, not UTF-16 order or locale", () => {
    const names = ["z\u{1F600}", "z\uFF01", "z\uE000", "z\u00E9"];
    const hits = rankTools(
      names.map((name) => ({ name, description: "alpha" })),
      "z",
    );
    assert.deepEqual(
      hits.map((hit) => hit.name),
      ["z\u00E9", "z\uE000", "z\uFF01", "z\u{1F600}"],
    );
    for (const hit of hits) assert.ok(Math.abs(hit.score - 0.14487070903) <= TOLERANCE);
    assert.ok("\u{1F600}" < "\uFF01", "JavaScript's < differs here");
    assert.ok(compareCodePoints("\u{1F600}", "\uFF01") > 0);
    assert.ok(compareCodePoints("a", "ab") < 0 && compareCodePoints("ab", "a") > 0);
    assert.equal(compareCodePoints("\u{1F600}", "\u{1F600}"), 0);
    // a lone high surrogate is the code point U+D800..U+DBFF, below a pair's astral one
    assert.ok(compareCodePoints("\uDA00", "\uD900\uDC00") < 0);
    assert.ok(compareCodePoints("x\uD83D", "x\uD83D\uDE00") < 0);
  });

  test("TS-4: Unicode names and descriptions rank as in Python", () => {
    const inventory = [
      { name: "\u0130nspect_file", description: "Inspect a \u03A3\u039F\u03A6\u039F\u03A3 file" },
      { name: "\u212Aelvin_convert", description: "Convert \u212AELVIN to Celsius" },
      { name: "kelvin_read", description: "Read a temperature" },
    ];
    const index = new ToolIndex(inventory);
    assertRanking(index.search("i"), [{ name: "\u0130nspect_file", score: 1.302837347397 }], "i");
    assertRanking(index.search("\u0130"), [{ name: "\u0130nspect_file", score: 1.302837347397 }], "İ");
    assertRanking(index.search("inspect"), [{ name: "\u0130nspect_file", score: 0.933113235298 }], "inspect");
    assertRanking(
      index.search("kelvin"),
      [
        { name: "\u212Aelvin_convert", score: 0.738577131672 },
        { name: "kelvin_read", score: 0.669802742893 },
      ],
      "kelvin",
    );
    assertRanking(index.search("\u212A"), [], "K");
    assertRanking(
      index.search("\u03C3\u03BF\u03C6\u03BF\u03C2 file"),
      [{ name: "\u0130nspect_file", score: 1.501095204609 }],
      "σοφος file",
    );
  });

  // The one divergence left: V8's Math.log and glibc's log (CPython's math.log) differ in the last
  // place for some arguments, so a score can differ by a few 1e-16; the contract's tolerance covers
  // it. CPython on glibc gives 0.9808292530117263 here (idf = ln(1 + 2.5 / 1.5), tf 1, dl = avgdl).
  test("TS-4: scores match Python within the tolerance where Math.log rounds differently", () => {
    const inventory = [
      { name: "one", description: "alpha" },
      { name: "two", description: "beta" },
      { name: "three", description: "gamma" },
    ];
    assertRanking(rankTools(inventory, "alpha"), [{ name: "one", score: 0.9808292530117263 }], "alpha");
  });

  test("TS-4: a repeated name: the later entry replaces the earlier (as in the Python index)", () => {
    const inventory = [
      { name: "dup", description: "first alpha" },
      { name: "dup", description: "second beta" },
      { name: "other", description: "alpha beta" },
    ];
    assertRanking(rankTools(inventory, "alpha"), [{ name: "other", score: Math.LN2 }], "alpha");
    const beta = rankTools(inventory, "beta");
    assertRanking(
      beta,
      [
        { name: "dup", score: 0.182321556794 },
        { name: "other", score: 0.182321556794 },
      ],
      "beta",
    );
    assert.equal(beta[0]?.tool, inventory[1]);
  });
});

describe("toolSearch maxResults (TS-2)", () => {
  const many = Array.from({ length: 25 }, (_, i) => ({
    name: `tool_${String(i).padStart(2, "0")}`,
    description: "alpha",
  }));
  const count = (maxResults?: number): number => rankTools(many, "alpha", { maxResults }).length;

  test("TS-2: 8 by default, clamped into 1..20, fractions truncated", () => {
    assert.equal(count(), 8);
    assert.equal(rankTools(many, "alpha", { maxResults: undefined }).length, 8);
    assert.equal(count(0), 1);
    assert.equal(count(25), 20);
    assert.equal(count(2.7), 2);
    assert.equal(count(-3), 1);
    assert.equal(count(-0.5), 1);
    assert.equal(count(0.5), 1);
    assert.equal(count(20), 20);
    assert.equal(count(1), 1);
  });

  test("TS-2: non-finite counts: NaN is the default, ±Infinity clamps", () => {
    assert.equal(count(Number.NaN), 8);
    assert.equal(count(Infinity), 20);
    assert.equal(count(-Infinity), 1);
  });

  test("TS-2: the first results of a tie are the lowest names", () => {
    assert.deepEqual(
      rankTools(many, "alpha", { maxResults: 3 }).map((hit) => hit.name),
      ["tool_00", "tool_01", "tool_02"],
    );
  });

  // Values from the Python reference's clamp_max_results
  test("TS-2: clampMaxResults reads argument values as Python's clamp_max_results does", () => {
    const cases: readonly (readonly [unknown, number])[] = [
      [null, 8],
      [undefined, 8],
      ["5", 5],
      [" 7 ", 7],
      ["2.7", 2],
      ["1_0", 10],
      ["1e1", 10],
      ["inf", 20],
      ["-inf", 1],
      ["+Infinity", 20],
      ["nan", 8],
      ["\x1c5\x1c", 5],
      ["\u00855", 5],
      ["\u0665", 5],
      ["\u0661\u0662", 12],
      [10n ** 30n, 20],
      [-(10n ** 30n), 1],
      [3n, 3],
    ];
    for (const [value, want] of cases) {
      assert.equal(clampMaxResults(value), want, typeof value === "bigint" ? `${value}n` : JSON.stringify(value));
    }
    for (const value of ["abc", "", "\uFEFF5", "0x10", "1__0", true, [], {}]) {
      assert.throws(() => clampMaxResults(value), TypeError, JSON.stringify(value));
    }
  });
});
