// The TypeScript blocks of README.md and js/README.md work as written: each compiles against the
// package under the strict tsconfig, and a block followed by "It prints" and a `text` block runs
// (in a scratch directory holding a copy of README.md, `steerable` from PATH) and prints exactly that.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

import { childEnv, scratch } from "./sidecar.js";

const JS = new URL("../../", import.meta.url); // js/, from js/build/test/
const ROOT = new URL("../", JS);
const DOCS = ["README.md", "js/README.md"];

interface Block {
  readonly where: string;
  readonly code: string;
  readonly prints: string | undefined;
}

function blocks(doc: string): Block[] {
  const lines = readFileSync(new URL(doc, ROOT), "utf8").split("\n");
  const found: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (lines[i] !== "```ts") continue;
    const end = lines.indexOf("```", i + 1);
    const code = lines.slice(i + 1, end).join("\n");
    let prints: string | undefined;
    const after = lines.slice(end + 1, end + 6);
    const lead = after.findIndex((line) => line.startsWith("It prints"));
    if (lead !== -1 && after[lead + 2] === "```text") {
      const start = end + 1 + lead + 3;
      prints = `${lines.slice(start, lines.indexOf("```", start)).join("\n")}\n`;
    }
    found.push({ where: `${doc}:${i + 1}`, code, prints });
    i = end;
  }
  return found;
}

const BLOCKS = DOCS.flatMap(blocks);
const OUT = new URL("build/readme/", JS);
const name = (block: Block) => block.where.replace(/[^A-Za-z0-9]+/g, "_");

test("the docs have TypeScript blocks, and the README's runs", () => {
  assert.ok(BLOCKS.some((b) => b.where.startsWith("README.md") && b.prints !== undefined));
});

test("every TypeScript block compiles against the package (strict)", () => {
  rmSync(OUT, { recursive: true, force: true });
  mkdirSync(OUT, { recursive: true });
  for (const block of BLOCKS) writeFileSync(new URL(`${name(block)}.ts`, OUT), block.code);
  const config = {
    extends: "../../tsconfig.json",
    compilerOptions: {
      rootDir: ".",
      outDir: "out",
      declaration: false,
      noUnusedLocals: false,
      noUnusedParameters: false,
    },
    include: ["*.ts"],
  };
  writeFileSync(new URL("tsconfig.json", OUT), JSON.stringify(config));
  const tsc = fileURLToPath(new URL("node_modules/typescript/bin/tsc", JS));
  const run = spawnSync(process.execPath, [tsc, "-p", fileURLToPath(new URL("tsconfig.json", OUT))], {
    encoding: "utf8",
  });
  assert.equal(run.status, 0, `${run.stdout}${run.stderr}`);
});

for (const block of BLOCKS.filter((b) => b.prints !== undefined)) {
  test(`${block.where} prints what the docs say`, () => {
    const dirs = scratch();
    copyFileSync(new URL("README.md", ROOT), `${dirs.workspace}/README.md`);
    const program = fileURLToPath(new URL(`out/${name(block)}.js`, OUT));
    const run = spawnSync(process.execPath, [program], {
      cwd: dirs.workspace,
      env: childEnv(),
      encoding: "utf8",
      timeout: 60_000,
    });
    assert.equal(run.status, 0, run.stderr);
    assert.equal(run.stdout, block.prints);
  });
}
