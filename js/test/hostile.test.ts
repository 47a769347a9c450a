// SidecarClient against a hostile stand-in sidecar (fake-sidecar.ts) and at its edges.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

import { SidecarClient, type SidecarLogEntry, SidecarStartError } from "@steerable/host";

import { childEnv, scratch } from "./sidecar.js";

const FAKE = fileURLToPath(new URL("fake-sidecar.js", import.meta.url));
const fake = (scenario: string, logs: SidecarLogEntry[] = []) =>
  SidecarClient.start({ command: [process.execPath, FAKE, scenario], logger: (e) => logs.push(e) });

test("a sidecar of another protocol version, or a garbled ready, is refused at start", async () => {
  await assert.rejects(fake("protocol-2"), {
    name: "SidecarStartError",
    message:
      "the sidecar speaks protocol 2, this client protocol 1: update one of them before lifecycle.ready (its stderr was empty)",
  });
  await assert.rejects(fake("ready-garbage"), {
    message: /^the sidecar sent a lifecycle\.ready that is not \{version, protocolVersion, pid, workspace\} \(42\)/,
  });
});

test("bad start options are SidecarStartError or RangeError, never a hang", async () => {
  await assert.rejects(SidecarClient.start({ command: ["steer\0able"] }), (error: unknown) => {
    assert.ok(error instanceof SidecarStartError);
    assert.match(error.message, /^the sidecar could not be started: /);
    return true;
  });
  await assert.rejects(SidecarClient.start({ command: [process.execPath], cwd: "/nonexistent/dir" }), {
    message: /could not be started \(.*: the working directory \/nonexistent\/dir does not exist\)/,
  });
  await assert.rejects(SidecarClient.start({ readyTimeoutMs: Number.NaN }), {
    name: "RangeError",
    message: "readyTimeoutMs must be a number of milliseconds >= 0 (Infinity: no limit), got NaN",
  });
  await assert.rejects(SidecarClient.start({ handlerTimeoutsMs: { "tool.invoke": -1 } }), { name: "RangeError" });
});

test("a stray response, and a logger that throws on it, break nothing", async () => {
  const sidecar = await SidecarClient.start({
    command: [process.execPath, FAKE, "stray"],
    logger: () => {
      throw new Error("broken logger");
    },
  });
  assert.equal((await sidecar.ping()).pong, true);
  assert.equal((await sidecar.ping()).pong, true);
  assert.equal(await sidecar.close(), 0);
});

test("the last answer before EOF, without its newline, still arrives", async () => {
  const sidecar = await fake("last-frame-unterminated");
  assert.equal((await sidecar.ping()).pong, true);
  assert.equal(await sidecar.close(), 0);
});

test("stderr: a line that never ends is kept to 64 Ki characters, the tail too", async () => {
  const logs: SidecarLogEntry[] = [];
  const sidecar = await fake("stderr-no-newline", logs);
  await sidecar.ping();
  await sidecar.close();
  const [long, after] = logs.filter((e) => e.source === "sidecar");
  assert.equal(long?.message.length, 64 * 1024);
  assert.deepEqual(after, {
    source: "sidecar",
    level: "error",
    message: "2026-12-02 10:00:00,000 ERROR steerable: after the long line",
  });
  assert.ok(sidecar.stderrTail.length <= 64 * 1024);
  assert.ok(sidecar.stderrTail.endsWith("after the long line\n"));
});

test("shutdown kills a sidecar that ignores it, by the deadline, not twice it", async () => {
  const sidecar = await fake("deaf");
  const started = Date.now();
  assert.equal(await sidecar.shutdown(600), null);
  const took = Date.now() - started;
  assert.deepEqual(await sidecar.exited, { code: null, signal: "SIGKILL" });
  assert.ok(took < 1100, `shutdown(600) took ${took} ms`);
});

test("a wrapper that never says ready is killed with its children; the host exits at once", () => {
  // sh starts a grandchild holding the pipes; the kill must reach it (the process group), and
  // the client must let go of the pipes, or Node would wait the grandchild's 30 s out
  const dirs = scratch();
  const script = join(dirs.root, "host.mjs");
  const entry = new URL("../../dist/index.js", import.meta.url).href;
  writeFileSync(
    script,
    `import { SidecarClient } from ${JSON.stringify(entry)};
await SidecarClient.start({ command: ["sh", "-c", "sleep 30 & sleep 30"], readyTimeoutMs: 300 }).catch((e) => console.log(e.name));
`,
  );
  const started = Date.now();
  const run = spawnSync(process.execPath, [script], { encoding: "utf8", timeout: 25_000, env: childEnv() });
  assert.equal(run.stdout, "SidecarStartError\n", run.stderr);
  assert.ok(Date.now() - started < 10_000, `the host took ${Date.now() - started} ms to exit`);
  const left = spawnSync("pgrep", ["-xf", "sleep 30"], { encoding: "utf8" });
  assert.equal(left.stdout, "", "a sleep 30 of the wrapper is still running");
});
