// An editor's side of ACP on the official TypeScript SDK (@agentclientprotocol/sdk), for the
// `steerable acp` tests (tests/sidecar/acp/test_acp_typescript.py): a second, independent client
// beside the Python SDK's (tests/sidecar/acp_client.py).
//
//   node acp_client.mjs [--plan FILE] -- COMMAND [ARGS...]
//
// spawns COMMAND (the agent) with its stdio as the ACP wire (stderr passes through), then runs one
// turn by the plan: `initialize`, `session/new`, `session/prompt`, answering each
// `session/request_permission` from the plan and recording every `session/update`. The plan is
// JSON, from --plan FILE or the ACP_PLAN environment variable:
//
//   cwd          session/new's cwd (absolute; required)
//   prompt       the prompt's text (one text block)
//   permissions  option ids to pick, one per permission request, in order ("cancelled" answers
//                the cancelled outcome); when they run out, "reject_once"
//   cancel       once a tool call is shown in_progress: true or "session" sends session/cancel;
//                "request" aborts the session/prompt request itself (the SDK's cancellationSignal,
//                which sends $/cancel_request and still waits for the answer)
//   mode         a session mode to pick with session/set_mode before the prompt
//   list         true: ask session/list (of cwd) after the turn
//   timeoutMs    the whole run's bound (default 60000): past it the agent is killed and we fail
//
// On success ONE JSON line goes to stdout, then exit 0:
//
//   {initialize, session, sessionId, stopReason, updates, permissions, cancel, listed, problems, agentExit}
//
// `session` is the session/new answer and `listed` the session/list one (null without `list`);
// `updates` are the session/update params' `update` objects as the SDK parsed them, in order;
// `permissions` each request's {toolCall, options, chosen}; `cancel` {sentAfterMs, stopAfterMs}
// when a cancel was sent; `agentExit` the agent's exit code once its stdin closed. `problems`
// lists what the SDK swallowed (its console.error reports: a session/update it could not parse is
// logged and dropped, never delivered), updates whose sessionId is not the session's, responses
// the stable v1 schema refuses, and updates the SDK's parse changed (fields stripped or replaced).
// A failure (an error response, the agent exiting early, the timeout) is a message on stderr and
// a non-zero exit (2 for the timeout).

import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import { isDeepStrictEqual } from "node:util";

import * as acp from "@agentclientprotocol/sdk";

// The SDK's generated zod schemas are not a public export; reached by file for the response
// checks (the SDK validates what it receives as requests and notifications, not responses).
const zod = await import(
  new URL("node_modules/@agentclientprotocol/sdk/dist/v1/schema/zod.gen.js", import.meta.url)
).catch(() => null);

const started = Date.now();
const elapsed = () => Date.now() - started;

function fail(message, code = 1) {
  process.stderr.write(`acp_client: ${message}\n`);
  process.exit(code);
}

function parseArgs(argv) {
  const dash = argv.indexOf("--");
  const own = dash < 0 ? argv : argv.slice(0, dash);
  const command = dash < 0 ? [] : argv.slice(dash + 1);
  let planText = process.env.ACP_PLAN;
  for (let i = 0; i < own.length; i++) {
    if (own[i] === "--plan" && i + 1 < own.length) planText = readFileSync(own[++i], "utf8");
    else fail(`unknown argument ${JSON.stringify(own[i])}; usage: acp_client.mjs [--plan FILE] -- COMMAND [ARGS...]`);
  }
  if (command.length === 0) fail("no agent command after --");
  if (!planText) fail("no plan: pass --plan FILE or set ACP_PLAN");
  let plan;
  try {
    plan = JSON.parse(planText);
  } catch (error) {
    fail(`the plan is not JSON: ${error.message}`);
  }
  if (typeof plan?.cwd !== "string") fail("the plan needs a cwd");
  return { command, plan };
}

const { command, plan } = parseArgs(process.argv.slice(2));
const problems = [];

// the SDK reports what it drops (unparsable notifications, unknown responses) with console.error
console.error = (...args) => {
  problems.push({ sdk: args.map((a) => (typeof a === "string" ? a : JSON.stringify(a))).join(" ") });
  process.stderr.write(`acp_client (sdk): ${args.map((a) => (typeof a === "string" ? a : JSON.stringify(a))).join(" ")}\n`);
};

const agent = spawn(command[0], command.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
let exited = null;
const agentExited = new Promise((resolve) => {
  agent.on("exit", (code, signal) => {
    exited = { code, signal };
    resolve(exited);
  });
});
agent.on("error", (error) => fail(`cannot start ${command[0]}: ${error.message}`));

const deadline = setTimeout(() => {
  agent.kill("SIGKILL");
  fail(`timed out after ${plan.timeoutMs ?? 60000} ms (at ${elapsed()} ms); the agent was killed`, 2);
}, plan.timeoutMs ?? 60000);

// the wire, tapped: every session/update as sent, to compare with what the SDK delivered
const rawUpdates = [];
const wire = acp.ndJsonStream(Writable.toWeb(agent.stdin), Readable.toWeb(agent.stdout));
const tapped = {
  writable: wire.writable,
  readable: wire.readable.pipeThrough(
    new TransformStream({
      transform(message, controller) {
        if (message?.method === acp.CLIENT_METHODS.session_update) rawUpdates.push(message.params);
        controller.enqueue(message);
      },
    }),
  ),
};

const updates = [];
const delivered = []; // the full notifications, for the session id check
const permissions = [];
const choices = [...(plan.permissions ?? [])];
let sessionId = null;
let cancel = null;
let onInProgress = null;

const app = acp
  .client({ name: "steerable-tests-ts" })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    delivered.push(params);
    updates.push(params.update);
    const u = params.update;
    if (u.sessionUpdate === "tool_call_update" && u.status === "in_progress" && onInProgress) {
      const act = onInProgress;
      onInProgress = null;
      act();
    }
  })
  .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
    const chosen = choices.length ? choices.shift() : "reject_once";
    permissions.push({ toolCall: params.toolCall, options: params.options, chosen });
    if (chosen === "cancelled") return { outcome: { outcome: "cancelled" } };
    return { outcome: { outcome: "selected", optionId: chosen } };
  });

function checkResponse(name, schemaName, value) {
  const schema = zod?.[schemaName];
  if (!schema) return;
  const parsed = schema.safeParse(value);
  if (!parsed.success) problems.push({ response: name, issues: parsed.error.issues });
}

function describe(error) {
  if (error instanceof acp.RequestError) {
    return `JSON-RPC error ${error.code}: ${error.message} ${JSON.stringify(error.data ?? null)}`;
  }
  return error?.stack ?? String(error);
}

async function turn(ctx) {
  const initialize = await ctx.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
    clientInfo: { name: "steerable-tests-ts", version: "0" },
  });
  checkResponse("initialize", "zInitializeResponse", initialize);
  const session = await ctx.request(acp.methods.agent.session.new, { cwd: plan.cwd, mcpServers: [] });
  checkResponse("session/new", "zNewSessionResponse", session);
  sessionId = session.sessionId;
  if (plan.mode) {
    const picked = await ctx.request(acp.methods.agent.session.setMode, { sessionId, modeId: plan.mode });
    checkResponse("session/set_mode", "zSetSessionModeResponse", picked);
  }
  let cancelSent = null;
  const abort = new AbortController();
  if (plan.cancel) {
    onInProgress = () => {
      cancelSent = Date.now();
      if (plan.cancel === "request") {
        abort.abort();
        return;
      }
      ctx.notify(acp.methods.agent.session.cancel, { sessionId }).catch((error) => {
        problems.push({ cancel: describe(error) });
      });
    };
  }
  const answer = await ctx.request(
    acp.methods.agent.session.prompt,
    { sessionId, prompt: [{ type: "text", text: plan.prompt ?? "" }] },
    { cancellationSignal: abort.signal },
  );
  checkResponse("session/prompt", "zPromptResponse", answer);
  if (cancelSent !== null) cancel = { sentAfterMs: cancelSent - started, stopAfterMs: Date.now() - cancelSent };
  else if (plan.cancel) problems.push({ cancel: "no tool call was shown in_progress; no cancel was sent" });
  // the SDK dispatches notifications asynchronously: let the ones read before the answer land
  for (let i = 0; i < 100 && updates.length < rawUpdates.length; i++) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  let listed = null;
  if (plan.list) {
    listed = await ctx.request(acp.methods.agent.session.list, { cwd: plan.cwd });
    checkResponse("session/list", "zListSessionsResponse", listed);
  }
  return { initialize, session, answer, listed };
}

let result;
try {
  const connected = app.connectWith(tapped, turn);
  result = await Promise.race([
    connected,
    agentExited.then((how) => {
      throw new Error(`the agent exited before the turn ended (${JSON.stringify(how)})`);
    }),
  ]);
} catch (error) {
  agent.kill("SIGKILL");
  fail(describe(error));
}

// what the SDK delivered against what was on the wire
if (updates.length !== rawUpdates.length) {
  problems.push({ dropped: `${rawUpdates.length} session/update sent, ${updates.length} delivered` });
}
for (const [index, params] of delivered.entries()) {
  if (params.sessionId !== sessionId) problems.push({ update: index, sessionId: params.sessionId });
  const raw = rawUpdates[index];
  if (raw !== undefined && !isDeepStrictEqual(JSON.parse(JSON.stringify(params)), raw)) {
    problems.push({ update: index, altered: { sent: raw, parsed: params } });
  }
}

// the editor leaves: close the agent's stdin, give it a moment to finish, then stop it
agent.stdin.end();
const bye = setTimeout(() => agent.kill("SIGKILL"), 10000);
const how = exited ?? (await agentExited);
clearTimeout(bye);
clearTimeout(deadline);

process.stdout.write(
  `${JSON.stringify({
    initialize: result.initialize,
    session: result.session,
    sessionId,
    stopReason: result.answer.stopReason,
    updates,
    permissions,
    cancel,
    listed: result.listed,
    problems,
    agentExit: how.code ?? how.signal,
  })}\n`,
);
process.exit(0);
