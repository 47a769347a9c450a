// The JSON-RPC peer against raw frames (docs/sidecar-protocol.md, Transport and Errors), and the
// typed errors against spec/sidecar.schema.json's table.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { PassThrough } from "node:stream";
import { test } from "node:test";

import * as host from "@steerable/host";
import {
  ERROR_CLASSES,
  ERROR_CODES,
  HostError,
  InvalidParamsError,
  JsonRpcPeer,
  PeerClosedError,
  RemoteError,
  RequestTimeoutError,
  remoteError,
} from "@steerable/host";

const SCHEMA = JSON.parse(readFileSync(new URL("../../../spec/sidecar.schema.json", import.meta.url), "utf8")) as {
  errors: Record<string, { code: number; parent: string | null }>;
};

/** A peer whose far end is this test: `send` writes raw bytes to it, `frames()` reads its answers. */
function wire(options: ConstructorParameters<typeof JsonRpcPeer>[2] = {}) {
  const toPeer = new PassThrough();
  const fromPeer = new PassThrough();
  const logs: string[] = [];
  const peer = new JsonRpcPeer(toPeer, fromPeer, {
    log: (level, message) => logs.push(`${level}: ${message}`),
    ...options,
  });
  let buffered = "";
  const waiting: ((line: string) => void)[] = [];
  const lines: string[] = [];
  fromPeer.on("data", (chunk: Buffer) => {
    buffered += chunk.toString("utf8");
    for (let at = buffered.indexOf("\n"); at !== -1; at = buffered.indexOf("\n")) {
      const line = buffered.slice(0, at);
      buffered = buffered.slice(at + 1);
      const waiter = waiting.shift();
      if (waiter) waiter(line);
      else lines.push(line);
    }
  });
  const next = (): Promise<unknown> =>
    new Promise((resolve) => {
      const line = lines.shift();
      if (line !== undefined) resolve(JSON.parse(line));
      else waiting.push((l) => resolve(JSON.parse(l)));
    });
  const send = (data: string | Buffer) => toPeer.write(data);
  return { peer, send, next, logs, raw: () => lines, end: () => toPeer.end() };
}

test("requests are served; garbage, bad UTF-8 and bad envelopes get their errors; serving goes on", async () => {
  const { peer, send, next } = wire();
  peer.addMethod("echo", (params) => params);
  send('{"jsonrpc":"2.0","id":1,"method":"echo","params":{"a":1}}\n');
  assert.deepEqual(await next(), { jsonrpc: "2.0", id: 1, result: { a: 1 } });
  send("not json\n");
  const parse = (await next()) as { id: null; error: { code: number; message: string } };
  assert.equal(parse.id, null);
  assert.equal(parse.error.code, -32700);
  assert.match(parse.error.message, /^Parse error: /);
  send(Buffer.from([0xff, 0xfe, 0x0a]));
  assert.deepEqual(await next(), {
    jsonrpc: "2.0",
    id: null,
    error: { code: -32700, message: "Parse error: the frame is not UTF-8" },
  });
  send('{"jsonrpc":"1.0","id":2,"method":"echo"}\n');
  assert.deepEqual(await next(), {
    jsonrpc: "2.0",
    id: 2,
    error: { code: -32600, message: "Invalid Request: 'jsonrpc' must be \"2.0\"" },
  });
  send('{"jsonrpc":"2.0","id":3,"method":"nope"}\n');
  assert.deepEqual(await next(), { jsonrpc: "2.0", id: 3, error: { code: -32601, message: "Method not found: nope" } });
  send('\r\n\n{"jsonrpc":"2.0","id":4,"method":"echo","params":[1]}\r\n'); // blank lines and CRLF
  assert.deepEqual(await next(), { jsonrpc: "2.0", id: 4, result: [1] });
});

test("a frame split anywhere, even inside a UTF-8 character, is one frame", async () => {
  const { peer, send, next } = wire();
  peer.addMethod("echo", (params) => params);
  const frame = Buffer.from('{"jsonrpc":"2.0","id":"x","method":"echo","params":["héllo ✓ 日本語"]}\n');
  for (const byte of frame) send(Buffer.from([byte]));
  assert.deepEqual(await next(), { jsonrpc: "2.0", id: "x", result: ["héllo ✓ 日本語"] });
});

test("a frame over the limit is answered -32600 as it crosses it, and the next frame is served", async () => {
  const { peer, send, next } = wire({ maxFrameBytes: 64 });
  peer.addMethod("echo", (params) => params);
  send(`{"jsonrpc":"2.0","id":1,"method":"echo","params":["${"x".repeat(40)}`);
  send(`${"y".repeat(100)}"]}\n{"jsonrpc":"2.0","id":2,"method":"echo"}\n`);
  assert.deepEqual(await next(), {
    jsonrpc: "2.0",
    id: null,
    error: { code: -32600, message: "Invalid Request: frame too large (over 64 bytes)" },
  });
  assert.deepEqual(await next(), { jsonrpc: "2.0", id: 2, result: null });
});

test("handler failures: -32603 for an Error, a RemoteError's own code; notifications never answered", async () => {
  const { peer, send, next, logs, raw } = wire();
  peer.addMethod("boom", () => {
    throw new TypeError("no such thing");
  });
  peer.addMethod("picky", () => {
    throw new InvalidParamsError("questions: required", { field: "questions" });
  });
  send('{"jsonrpc":"2.0","id":1,"method":"boom"}\n');
  assert.deepEqual(await next(), {
    jsonrpc: "2.0",
    id: 1,
    error: { code: -32603, message: "Internal error: TypeError: no such thing", data: { type: "TypeError" } },
  });
  assert.ok(logs.some((l) => l.startsWith("error: boom handler failed: TypeError: no such thing")));
  send('{"jsonrpc":"2.0","id":2,"method":"picky"}\n');
  assert.deepEqual(await next(), {
    jsonrpc: "2.0",
    id: 2,
    error: { code: -32602, message: "questions: required", data: { field: "questions" } },
  });
  send('{"jsonrpc":"2.0","method":"boom"}\n{"jsonrpc":"2.0","method":"unknown"}\n');
  send('{"jsonrpc":"2.0","id":3,"method":"picky"}\n');
  assert.equal(((await next()) as { id: number }).id, 3); // nothing came for the two notifications
  assert.deepEqual(raw(), []);
});

test("batches are answered as one array; an empty batch is -32600", async () => {
  const { peer, send, next } = wire();
  peer.addMethod("echo", (params) => params);
  send(
    '[{"jsonrpc":"2.0","id":1,"method":"echo","params":[1]},{"jsonrpc":"2.0","method":"echo"},{"jsonrpc":"2.0","id":2,"method":"nope"}]\n',
  );
  assert.deepEqual(await next(), [
    { jsonrpc: "2.0", id: 1, result: [1] },
    { jsonrpc: "2.0", id: 2, error: { code: -32601, message: "Method not found: nope" } },
  ]);
  send("[]\n");
  assert.deepEqual(await next(), {
    jsonrpc: "2.0",
    id: null,
    error: { code: -32600, message: "Invalid Request: empty batch" },
  });
});

test("outgoing requests: answers by id, typed errors, stray answers dropped, timeouts, aborts", async () => {
  const { peer, send, next, logs } = wire();
  const first = peer.request("tool.invoke", { name: "x" });
  const second = peer.request("plugin.enable", { name: "p" });
  const [a, b] = (await Promise.all([next(), next()])) as { id: number; method: string }[];
  assert.deepEqual([a?.method, b?.method], ["tool.invoke", "plugin.enable"]);
  send(
    `{"jsonrpc":"2.0","id":${b?.id},"error":{"code":-32033,"message":"unknown plugin 'p'","data":{"type":"PluginStateError"}}}\n`,
  );
  send(`{"jsonrpc":"2.0","id":${a?.id},"result":{"success":true}}\n`);
  assert.deepEqual(await first, { success: true });
  await assert.rejects(second, (error: unknown) => {
    assert.ok(
      error instanceof host.PluginStateError && error instanceof host.UserError && error instanceof RemoteError,
    );
    assert.equal(error.code, -32033);
    assert.ok(error instanceof HostError); // one root: RemoteError and everything under it
    assert.equal(error.message, "unknown plugin 'p'");
    assert.deepEqual(error.data, { type: "PluginStateError" });
    return true;
  });
  send('{"jsonrpc":"2.0","id":999,"result":1}\n');
  await new Promise((resolve) => setImmediate(resolve));
  assert.ok(logs.includes("warning: dropped a response to no pending request (id 999)"));
  await assert.rejects(peer.request("slow", undefined, { timeoutMs: 20 }), (error: unknown) => {
    assert.ok(error instanceof RequestTimeoutError && error instanceof HostError);
    assert.equal(error.message, "slow: no answer in 20 ms");
    return true;
  });
  const controller = new AbortController();
  const aborted = peer.request("slow", undefined, { signal: controller.signal });
  controller.abort(new Error("the user left"));
  await assert.rejects(aborted, /the user left/);
});

test("a lone surrogate goes out as a JSON escape, never as bytes that are not UTF-8", async () => {
  const { peer, send, next } = wire();
  peer.addMethod("odd", () => "a\ud800b");
  send('{"jsonrpc":"2.0","id":1,"method":"odd"}\n');
  const answer = (await next()) as { result: string };
  assert.equal(answer.result, "a\ud800b");
});

test("end of input fails pending requests with PeerClosedError, and later ones at once", async () => {
  const { peer, next, end } = wire({ onClose: () => "the sidecar exited with code 3" });
  const pending = peer.request("agent.chat.stream", { message: "hi" });
  await next();
  end();
  await assert.rejects(pending, (error: unknown) => {
    assert.ok(error instanceof PeerClosedError);
    assert.equal(error.code, -32099);
    assert.equal(error.message, "agent.chat.stream: the sidecar exited with code 3");
    return true;
  });
  assert.equal(await peer.closed, "the sidecar exited with code 3");
  await assert.rejects(peer.request("system.ping"), {
    name: "PeerClosedError",
    message: "system.ping: the sidecar exited with code 3",
  });
});

test("handlers learn of the close through their signal", async () => {
  const { peer, send, end } = wire();
  let signal: AbortSignal | undefined;
  peer.addMethod("wait", (_params, context) => {
    signal = context.signal;
    return new Promise(() => {});
  });
  send('{"jsonrpc":"2.0","id":1,"method":"wait"}\n');
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(signal?.aborted, false);
  end();
  await peer.closed;
  assert.equal(signal?.aborted, true);
  assert.ok(signal?.reason instanceof PeerClosedError);
});

test("every error class of the schema's table, with its code and its parent", () => {
  const classes = host as unknown as Record<string, typeof RemoteError | undefined>;
  for (const [name, { code, parent }] of Object.entries(SCHEMA.errors)) {
    assert.equal(ERROR_CODES[name as keyof typeof ERROR_CODES], code, name);
    const cls = classes[name];
    assert.ok(cls !== undefined, `${name} is exported`);
    const error = remoteError(code, "m", { type: name });
    if (name === "RemoteError" || name === "PeerClosedError") {
      assert.equal(error.constructor, RemoteError, `${code} is a plain RemoteError`); // never raised from a code
      continue;
    }
    assert.equal(error.constructor, cls, name);
    assert.equal(ERROR_CLASSES.get(code), cls);
    assert.equal(error.name, name);
    assert.equal(error.code, code);
    assert.ok(parent === null || error instanceof (classes[parent] as typeof RemoteError), `${name} extends ${parent}`);
    assert.ok(error instanceof RemoteError && error instanceof Error);
  }
  for (const code of [-32700, -32600, -32601, -32603, -31999]) {
    assert.equal(remoteError(code, "m").constructor, RemoteError);
  }
  assert.ok(remoteError(-32602, "m", { type: "ValidationError" }) instanceof InvalidParamsError); // catchable as such
});

test("params that cannot be sent fail at once: not JSON (TypeError), over the frame limit (RangeError)", async () => {
  const { peer, raw } = wire({ maxOutgoingFrameBytes: 100 });
  const cyclic: Record<string, unknown> = {};
  cyclic.self = cyclic;
  await assert.rejects(peer.request("tool.invoke", cyclic), {
    name: "TypeError",
    message: /^tool\.invoke: Converting circular structure to JSON/,
  });
  await assert.rejects(peer.request("tool.invoke", { n: 1n }), {
    name: "TypeError",
    message: /^tool\.invoke: Do not know how to serialize a BigInt/,
  });
  await assert.rejects(peer.request("tool.invoke", { text: "é".repeat(60) }), {
    name: "RangeError",
    message: /^tool\.invoke: the frame is 1\d\d bytes, over the 100 a frame may hold: send less$/,
  });
  assert.throws(() => peer.notify("x", { n: 1n }), TypeError);
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(raw(), []); // nothing went out
});

test("an answer that cannot be encoded goes out as -32603, so the other side still hears", async () => {
  const { peer, send, next } = wire();
  peer.addMethod("big", () => ({ n: 1n }));
  send('{"jsonrpc":"2.0","id":7,"method":"big"}\n');
  assert.deepEqual(await next(), {
    jsonrpc: "2.0",
    id: 7,
    error: {
      code: -32603,
      message: "Internal error: the answer cannot be sent: Do not know how to serialize a BigInt",
      data: { type: "TypeError" },
    },
  });
});

test("an answer refused as too large or not UTF-8 fails its request at once", async () => {
  const { peer, send, next } = wire({ maxFrameBytes: 200 });
  const big = peer.request("tool.invoke", {});
  const bad = peer.request("tool.list");
  const [a, b] = (await Promise.all([next(), next()])) as { id: number }[];
  send(`{"jsonrpc":"2.0","id":${a?.id},"result":{"data":"${"x".repeat(300)}"}}\n`);
  await assert.rejects(big, {
    name: "RemoteError",
    code: -32600,
    message: "tool.invoke: Invalid Request: the answer is a frame too large (over 200 bytes)",
  });
  send(
    Buffer.concat([
      Buffer.from(`{"jsonrpc":"2.0","id":${b?.id},"result":"`),
      Buffer.from([0xc3, 0x28]),
      Buffer.from('"}\n'),
    ]),
  );
  await assert.rejects(bad, { code: -32700, message: "tool.list: Parse error: the answer is not UTF-8" });
});

test("late answers to abandoned requests are dropped quietly; Infinity waits without limit", async () => {
  const { peer, send, next, logs } = wire();
  const slow = peer.request("slow", undefined, { timeoutMs: 10 });
  const { id } = (await next()) as { id: number };
  await assert.rejects(slow, RequestTimeoutError);
  send(`{"jsonrpc":"2.0","id":${id},"result":1}\n`);
  const patient = peer.request("patient", undefined, { timeoutMs: Infinity });
  const asked = (await next()) as { id: number };
  await new Promise((resolve) => setTimeout(resolve, 20));
  send(`{"jsonrpc":"2.0","id":${asked.id},"result":"at last"}\n`);
  assert.equal(await patient, "at last");
  assert.ok(
    logs.includes(`debug: dropped a late answer to a request that timed out or was abandoned (id ${id})`),
    logs.join("\n"),
  );
  await assert.rejects(peer.request("x", undefined, { timeoutMs: -5 }), { name: "RangeError" });
});

test("a sidecar that reads nothing cannot make the host buffer replies to its garbage without bound", async () => {
  const toPeer = new PassThrough();
  const fromPeer = new PassThrough({ highWaterMark: 1024 }); // nobody reads it
  const logs: string[] = [];
  new JsonRpcPeer(toPeer, fromPeer, { log: (level, message) => logs.push(`${level}: ${message}`) });
  toPeer.write("x\n".repeat(50_000)); // 50,000 frames, each a -32700 reply of ~90 bytes if sent
  await new Promise((resolve) => setImmediate(resolve));
  assert.ok(fromPeer.writableLength < 1.1 * 1024 * 1024, `${fromPeer.writableLength} bytes buffered`);
  assert.ok(logs.includes("warning: the sidecar reads nothing: dropped an error reply to a frame it sent"));
});
