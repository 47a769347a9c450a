// SidecarClient end to end: a real `steerable sidecar` subprocess, its model the scripted provider.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

import {
  type ApprovalRequestParams,
  type AskUserRequestParams,
  type ChatEvent,
  ConfigError,
  type HostInvokeParams,
  InvalidParamsError,
  isTerminalResult,
  PeerClosedError,
  PluginStateError,
  RemoteError,
  SidecarClient,
  SidecarStartError,
  UserError,
} from "@steerable/host";

import { COMMAND, childEnv, scratch, startSidecar } from "./sidecar.js";

const ask = (id: string) => ({
  id,
  name: "ask_user",
  arguments: {
    intro: "Before I start:",
    questions: [{ id: "scope", text: "Which tests?", type: "select", options: ["unit", "all"] }],
  },
});
const bash = (id: string, command: string) => ({ id, name: "bash", arguments: { command } });
const read = (id: string, path: string) => ({ id, name: "read_file", arguments: { path } });

async function collect(events: AsyncIterable<ChatEvent>): Promise<ChatEvent[]> {
  const seen: ChatEvent[] = [];
  for await (const event of events) seen.push(event);
  return seen;
}

function results(events: ChatEvent[]) {
  return events.flatMap((e) => (e.type === "tool_result" ? [e] : []));
}

test("the handshake: ready, ping, the full inventory", async () => {
  const { sidecar, workspace } = await startSidecar([]);
  try {
    assert.equal(sidecar.ready.protocolVersion, 1);
    assert.equal(sidecar.ready.workspace, workspace);
    assert.equal(sidecar.ready.pid, sidecar.process.pid);
    assert.deepEqual(await sidecar.ping(), { pong: true, pid: sidecar.process.pid });
    const tools = new Map((await sidecar.list()).map((t) => [t.name, t]));
    for (const name of ["read_file", "write_file", "edit_file", "apply_patch", "bash", "web_fetch"]) {
      assert.ok(tools.has(name), name);
    }
    assert.equal(tools.get("read_file")?.mode, "read");
    assert.equal(tools.get("bash")?.mode, "local");
    assert.equal(tools.get("edit_file")?.parameters.type, "object");
  } finally {
    assert.equal(await sidecar.shutdown(), 0);
  }
});

test("invoke: read then edit with the CAS gate, consent for a local tool", async () => {
  const { sidecar, workspace } = await startSidecar([]);
  try {
    const blind = await sidecar.invoke("write_file", { path: "notes.txt", content: "x" });
    assert.equal(blind.success, false);
    assert.equal(blind.needsFollowup, true);
    assert.equal(isTerminalResult(blind), false);
    const got = await sidecar.invoke("read_file", { path: "notes.txt" });
    assert.equal(got.success, true);
    assert.equal((got.data as { content: string }).content, "alpha\nbeta\n");
    const edited = await sidecar.invoke("edit_file", {
      path: "notes.txt",
      edits: [{ oldText: "beta", newText: "gamma" }],
    });
    assert.equal(edited.success, true, JSON.stringify(edited));
    assert.equal(readFileSync(join(workspace, "notes.txt"), "utf8"), "alpha\ngamma\n");
    const unasked = await sidecar.invoke("bash", { command: "echo hi" });
    assert.deepEqual(unasked.data, { code: "consent_required", mode: "local" });
    assert.match(
      unasked.error ?? "",
      /bash is a local-mode tool: ask the user, then send the call again with consentGranted: true/,
    );
    const unknown = await sidecar.invoke("no_such_tool", {});
    assert.equal(unknown.success, false);
    assert.equal(unknown.needsFollowup, true);
  } finally {
    await sidecar.close();
  }
});

test("typed errors carry the documented codes", async () => {
  const { sidecar } = await startSidecar([], { extraEnv: { STEERABLE_PROVIDER: "openai" } });
  try {
    await assert.rejects(sidecar.request("plugin.enable", { name: "nope" }), (error: unknown) => {
      assert.ok(error instanceof PluginStateError && error instanceof UserError && error instanceof RemoteError);
      assert.equal(error.code, -32033);
      assert.equal(error.data?.type, "PluginStateError"); // typed from the schema's errors table
      assert.equal(error.data?.plugin, "nope");
      return true;
    });
    await assert.rejects(sidecar.chat("hi").result, (error: unknown) => {
      assert.ok(error instanceof ConfigError, String(error));
      assert.equal(error.code, -32040);
      assert.match(error.message, /STEERABLE_(MODEL|API_KEY)/);
      return true;
    });
    await assert.rejects(sidecar.request("agent.chat.stream", {}), (error: unknown) => {
      assert.ok(error instanceof InvalidParamsError && error instanceof RemoteError);
      assert.equal(error.code, -32602);
      return true;
    });
    // a method the table does not know, through the untyped door
    const untyped = sidecar.request as (method: string, params?: unknown) => Promise<unknown>;
    await assert.rejects(untyped.call(sidecar, "tool.nope"), { code: -32601, message: "Method not found: tool.nope" });
    assert.equal((await sidecar.invoke("list_dir", {})).success, true); // tools are still served
  } finally {
    await sidecar.close();
  }
});

test("a chat whose ask_user the handler answers, and a refused approval", async () => {
  const turns = [{ tool_calls: [ask("q1")] }, { tool_calls: [bash("b1", "rm -rf build")] }, "The test passes."];
  const asked: AskUserRequestParams[] = [];
  const approvals: ApprovalRequestParams[] = [];
  const { sidecar } = await startSidecar(turns, {
    onAskUser: (payload) => {
      asked.push(payload);
      return { scope: payload.questions[0]?.options?.[0] };
    },
    onApproval: (request) => {
      approvals.push(request);
      return false;
    },
  });
  try {
    const handle = sidecar.chat({ message: "Fix the failing test", askUser: true, sessionId: "s1" });
    const events = await collect(handle);
    const summary = await handle.result;
    assert.equal(summary.outcome, "completed");
    assert.equal(summary.toolCalls, 2);
    assert.equal(summary.sessionId, "s1");
    assert.equal(summary.chatId, handle.chatId);
    assert.equal(asked.length, 1);
    assert.equal(asked[0]?.chatId, handle.chatId);
    assert.equal(asked[0]?.intro, "Before I start:");
    const [answered, refused] = results(events);
    assert.deepEqual(answered?.result.data, { answers: { scope: "unit" } });
    assert.deepEqual(approvals, [
      {
        chatId: handle.chatId,
        call: { id: "b1", name: "bash", arguments: { command: "rm -rf build" } },
        mode: "local",
      },
    ]);
    assert.equal(refused?.result.success, false);
    assert.equal(refused?.result.needsFollowup, true);
    assert.deepEqual(refused?.result.data, { code: "consent_denied", mode: "local" });
    assert.deepEqual(
      [...new Set(events.map((e) => e.type))],
      ["round", "assistant", "tool_call", "tool_result", "text", "done"].filter((t) =>
        events.some((e) => e.type === t),
      ),
    );
    assert.equal(events.at(-1)?.type, "done");
    assert.deepEqual(handle.eventsSeen, events);
  } finally {
    await sidecar.close();
  }
});

test("toolsViaHost: the host runs the tools; ask_user stays in the sidecar", async () => {
  const turns = [{ tool_calls: [read("r1", "host.txt")] }, "finished"];
  const invoked: HostInvokeParams[] = [];
  const { sidecar, workspace } = await startSidecar(turns);
  try {
    const tools = (await sidecar.list()).filter((t) => t.name === "read_file");
    sidecar.onToolInvoke = (params) => {
      invoked.push(params);
      return { success: true, data: { path: "host.txt", content: "from the host", version: "h1" } };
    };
    const handle = sidecar.chat({ message: "read host.txt", toolsViaHost: true, tools: [...tools] });
    const events = await collect(handle);
    assert.equal((await handle.result).outcome, "completed");
    assert.deepEqual(invoked, [
      { id: "r1", name: "read_file", arguments: { path: "host.txt" }, context: { chatId: handle.chatId } },
    ]);
    assert.equal(results(events)[0]?.result.data?.content, "from the host");
    assert.throws(() => readFileSync(join(workspace, "host.txt")));
  } finally {
    await sidecar.close();
  }
});

test("toolsViaHost resume: the host gets read_state.seed", async () => {
  const dirs = scratch();
  const host = { success: true, data: { path: "notes.txt", content: "alpha", version: "v-host-1" } };
  const first = await startSidecar([{ tool_calls: [read("r1", "notes.txt")] }, "read"], { dirs });
  const tools = (await first.sidecar.list()).filter((t) => t.name === "read_file");
  first.sidecar.onToolInvoke = () => host;
  await first.sidecar.chat({ message: "read", sessionId: "resume1", toolsViaHost: true, tools: [...tools] }).result;
  assert.deepEqual(first.sidecar.seeds, []);
  await first.sidecar.shutdown();
  const seeded: unknown[] = [];
  const second = await startSidecar(["resumed"], { dirs, onReadStateSeed: (params) => void seeded.push(params) });
  try {
    const summary = await second.sidecar.chat({
      message: "go on",
      sessionId: "resume1",
      toolsViaHost: true,
      tools: [...tools],
    }).result;
    assert.equal(summary.text, "resumed");
    const seed = { sessionId: "resume1", readState: { "notes.txt": "v-host-1" } };
    assert.deepEqual(second.sidecar.seeds, [seed]);
    assert.deepEqual(seeded, [seed]);
  } finally {
    await second.sidecar.close();
  }
});

test("a hosted web search answers web_search.request", async () => {
  const turns = [{ tool_calls: [{ id: "w", name: "web_search", arguments: { query: "steerable" } }] }, "found"];
  const { sidecar } = await startSidecar(turns, {
    extraEnv: { STEERABLE_WEB_SEARCH_PROVIDER: "host" },
    onWebSearch: (params) => ({
      results: [{ title: `about ${params.query}`, url: "https://example.com/a", snippet: String(params.maxResults) }],
    }),
  });
  try {
    const handle = sidecar.chat("search");
    const [hit] = results(await collect(handle));
    assert.equal(hit?.result.success, true, JSON.stringify(hit));
    assert.match(JSON.stringify(hit?.result.data), /about steerable/);
  } finally {
    await sidecar.close();
  }
});

test("cancel: a chat waiting on the user ends cancelled", async () => {
  let signalled: AbortSignal | undefined;
  let asked!: () => void;
  const waiting = new Promise<void>((resolve) => (asked = resolve));
  const { sidecar } = await startSidecar([{ tool_calls: [ask("q1")] }, "never"], {
    onAskUser: (_payload, signal) => {
      signalled = signal;
      asked();
      return new Promise(() => {}); // the user never answers
    },
  });
  try {
    const handle = sidecar.chat({ message: "go", askUser: true });
    await waiting;
    assert.equal(await handle.cancel(), true);
    assert.equal((await handle.result).outcome, "cancelled");
    assert.equal(await sidecar.cancel("no-such-chat"), false);
    assert.equal(signalled?.aborted, true); // the question card is told: its chat is over
  } finally {
    await sidecar.close();
  }
});

test("a handler past its timeout: the question is cancelled, the chat goes on", async () => {
  const { sidecar } = await startSidecar([{ tool_calls: [ask("q1")] }, "went on"], {
    handlerTimeoutsMs: { "ask_user.request": 200 },
    onAskUser: () => new Promise(() => {}),
  });
  try {
    const handle = sidecar.chat({ message: "go", askUser: true });
    const [answer] = results(await collect(handle));
    assert.equal((await handle.result).text, "went on");
    assert.equal(answer?.result.data?.cancelled, true);
    assert.deepEqual(answer?.result.data?.answers, {});
  } finally {
    await sidecar.close();
  }
});

test("a sidecar that dies mid-request fails it with PeerClosedError", async () => {
  const { sidecar } = await startSidecar([{ tool_calls: [read("r1", "x.txt")] }, "never"]);
  let signal: AbortSignal | undefined;
  sidecar.onToolInvoke = (_params, s) => {
    signal = s;
    sidecar.process.kill("SIGKILL");
    return new Promise(() => {});
  };
  const tools = (await sidecar.list()).filter((t) => t.name === "read_file");
  const handle = sidecar.chat({ message: "go", toolsViaHost: true, tools: [...tools] });
  await assert.rejects(handle.result, (error: unknown) => {
    assert.ok(error instanceof PeerClosedError);
    assert.equal(error.code, -32099);
    assert.match(error.message, /^agent\.chat\.stream: the sidecar exited with signal SIGKILL/);
    return true;
  });
  await assert.rejects(collect(handle), PeerClosedError); // the events loop ends with the error
  assert.equal(signal?.aborted, true); // the handler is told
  await assert.rejects(sidecar.ping(), /system\.ping: the sidecar exited with signal SIGKILL/); // at once
  assert.deepEqual(await sidecar.exited, { code: null, signal: "SIGKILL" });
  assert.equal(await sidecar.close(), null);
});

test("start failures name why, with the sidecar's stderr", async () => {
  const dirs = scratch();
  await assert.rejects(
    SidecarClient.start({ command: COMMAND, workspace: join(dirs.root, "missing"), env: childEnv(), logger: () => {} }),
    (error: unknown) => {
      assert.ok(error instanceof SidecarStartError);
      assert.equal(error.code, -32060);
      assert.match(error.message, /^the sidecar exited with code 2 before lifecycle.ready; stderr:\n/);
      assert.match(error.message, /missing/);
      return true;
    },
  );
  await assert.rejects(SidecarClient.start({ command: ["/nonexistent/steerable", "sidecar"] }), {
    name: "SidecarStartError",
    message: /could not be started \(\/nonexistent\/steerable: spawn \/nonexistent\/steerable ENOENT\)/,
  });
  const silent = process.execPath; // node reading a program from stdin: says nothing
  await assert.rejects(SidecarClient.start({ command: [silent], readyTimeoutMs: 300 }), {
    message: /^the sidecar sent nothing in 300 ms before lifecycle.ready/,
  });
});

test("the sidecar's stderr reaches the logger, with its levels", async () => {
  const { sidecar, logs } = await startSidecar([], { extraEnv: { STEERABLE_LOG_LEVEL: "DEBUG" } });
  await sidecar.invoke("list_dir", {});
  assert.equal(await sidecar.close(), 0);
  const lines = logs.filter((e) => e.source === "sidecar");
  assert.ok(
    lines.some((e) => e.level === "debug" && / DEBUG steerable/.test(e.message)),
    JSON.stringify(lines),
  );
  assert.ok(sidecar.stderrTail.includes("DEBUG"));
});

test("a closed client leaves nothing that keeps Node running", async () => {
  // a real host process: its handler never answers, the chat is cancelled, the client closed;
  // Node must then exit by itself (no timer or listener of the client left behind)
  const dirs = scratch();
  const script = join(dirs.root, "host.mjs");
  const entry = new URL("../../dist/index.js", import.meta.url).href;
  writeFileSync(join(dirs.root, "turns.json"), JSON.stringify([{ tool_calls: [ask("q1")] }, "never"]));
  writeFileSync(
    script,
    `import { SidecarClient } from ${JSON.stringify(entry)};
const sidecar = await SidecarClient.start({
  command: ${JSON.stringify(COMMAND)}, workspace: ${JSON.stringify(dirs.workspace)}, stateDir: ${JSON.stringify(dirs.stateDir)},
  env: { ...process.env, STEERABLE_PROVIDER: "scripted", STEERABLE_SCRIPT: ${JSON.stringify(join(dirs.root, "turns.json"))} },
  onAskUser: () => { setTimeout(() => handle.cancel(), 10); return new Promise(() => {}); },
});
const handle = sidecar.chat({ message: "go", askUser: true });
console.log((await handle.result).outcome, await sidecar.close());
`,
  );
  const started = Date.now();
  const child = spawnSync(process.execPath, [script], { encoding: "utf8", timeout: 60_000, env: childEnv() });
  assert.equal(child.status, 0, child.stderr);
  assert.equal(child.stdout, "cancelled 0\n");
  assert.ok(Date.now() - started < 30_000, `the host took ${Date.now() - started} ms to exit`);
});

test("a chat the host stops waiting for (timeoutMs) is cancelled in the sidecar", async () => {
  const { sidecar } = await startSidecar([{ tool_calls: [ask("q1")] }, "never"], {
    onAskUser: () => new Promise(() => {}),
  });
  try {
    const handle = sidecar.chat({ message: "go", askUser: true, sessionId: "busy" }, { timeoutMs: 500 });
    await assert.rejects(handle.result, {
      name: "RequestTimeoutError",
      message: "agent.chat.stream: no answer in 500 ms",
    });
    assert.equal(await sidecar.cancel(handle.chatId), false); // cancelled already, by the client
    // the rejection waited for the cancelled chat to end: the session is free at once
    assert.equal((await sidecar.chat({ message: "again", sessionId: "busy" }).result).outcome, "completed");
  } finally {
    await sidecar.close();
  }
});

test("a logger that throws breaks nothing", async () => {
  const { sidecar } = await startSidecar([], {
    extraEnv: { STEERABLE_LOG_LEVEL: "DEBUG" },
    logger: () => {
      throw new Error("broken logger");
    },
  });
  assert.equal((await sidecar.invoke("list_dir", {})).success, true);
  assert.equal(await sidecar.close(), 0);
});

test("a second chat under a running chat's id is refused here; the first keeps its events", async () => {
  let answer!: (value: Record<string, unknown>) => void;
  let asked!: () => void;
  const waiting = new Promise<void>((resolve) => (asked = resolve));
  const { sidecar } = await startSidecar([{ tool_calls: [ask("q1")] }, "finished"], {
    onAskUser: () => {
      asked();
      return new Promise((resolve) => (answer = resolve));
    },
  });
  try {
    const first = sidecar.chat({ chatId: "c1", message: "go", askUser: true });
    await waiting;
    const second = sidecar.chat({ chatId: "c1", message: "again" });
    await assert.rejects(second.result, (error: unknown) => {
      assert.ok(error instanceof UserError);
      assert.equal(error.message, "chat 'c1' is already running");
      return true;
    });
    answer({ scope: "all" });
    const events = await collect(first);
    assert.equal((await first.result).text, "finished");
    assert.equal(events.at(-1)?.type, "done");
    assert.deepEqual(results(events)[0]?.result.data, { answers: { scope: "all" } });
  } finally {
    await sidecar.close();
  }
});

test("a request the sidecar could not take, or params that are not JSON, fail at once", async () => {
  const { sidecar } = await startSidecar([]);
  try {
    const huge = "x".repeat(65 * 1024 * 1024);
    await assert.rejects(sidecar.invoke("write_file", { path: "big.txt", content: huge }), {
      name: "RangeError",
      message: /^tool\.invoke: the frame is \d+ bytes, over the 67108864 a frame may hold: send less$/,
    });
    await assert.rejects(sidecar.invoke("read_file", { path: 1n }), { name: "TypeError" });
    assert.equal((await sidecar.invoke("read_file", { path: "notes.txt" }, { timeoutMs: Infinity })).success, true);
  } finally {
    await sidecar.close();
  }
});

test("an empty chatId is unset (the sidecar makes one); {cancelled: true} from onAskUser cancels", async () => {
  const { sidecar } = await startSidecar([{ tool_calls: [ask("q1")] }, "done"], {
    onAskUser: () => ({ cancelled: true }),
  });
  try {
    const handle = sidecar.chat({ chatId: "", message: "go", askUser: true });
    assert.notEqual(handle.chatId, "");
    const events = await collect(handle);
    assert.equal((await handle.result).chatId, handle.chatId);
    const [answer] = results(events);
    assert.equal(answer?.result.data?.cancelled, true);
    assert.deepEqual(answer?.result.data?.answers, {});
  } finally {
    await sidecar.close();
  }
});

// type-level: compiled, never run (tsc fails on an unused @ts-expect-error)
export function typeChecks(sidecar: SidecarClient): void {
  // @ts-expect-error tool.invoke needs its params
  void sidecar.request("tool.invoke");
  // @ts-expect-error no such method in the schema's table
  void sidecar.request("tool.nope");
  void sidecar.request("system.ping");
  void sidecar.request("plugin.enable", { name: "p" });
}
