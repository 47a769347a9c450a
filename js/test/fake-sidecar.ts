// A hostile stand-in for `steerable sidecar`, run as `node fake-sidecar.js SCENARIO`: it speaks
// just enough of the protocol to reach the client's edge cases.
import { createInterface } from "node:readline";

const scenario = process.argv[2];
const send = (message: unknown) => process.stdout.write(`${JSON.stringify(message)}\n`);
const ready = (protocolVersion = 1) =>
  send({
    jsonrpc: "2.0",
    method: "lifecycle.ready",
    params: { version: "0", protocolVersion, pid: process.pid, workspace: "/" },
  });

switch (scenario) {
  case "protocol-2":
    ready(2);
    break;
  case "ready-garbage":
    send({ jsonrpc: "2.0", method: "lifecycle.ready", params: 42 });
    break;
  case "stderr-no-newline": // ready once all of it is written (a big write to a pipe is queued)
    process.stderr.write("x".repeat(5_000_000));
    process.stderr.write("\n2026-12-02 10:00:00,000 ERROR steerable: after the long line\n", () => ready());
    break;
  case "deaf": // ignores system.shutdown and stdin's end
    ready();
    process.on("SIGTERM", () => {});
    setInterval(() => {}, 1000);
    break;
  default:
    ready();
}

// answers ping; for "stray", a response to an id never sent first
const lines = createInterface({ input: process.stdin });
lines.on("line", (line) => {
  const message = JSON.parse(line) as { id?: number; method?: string };
  if (scenario === "deaf" || message.id === undefined) return;
  if (scenario === "stray") send({ jsonrpc: "2.0", id: 999_999, result: "stray" });
  if (scenario === "last-frame-unterminated") {
    process.stdout.write(JSON.stringify({ jsonrpc: "2.0", id: message.id, result: { pong: true, pid: process.pid } }));
    process.exit(0);
  }
  send({ jsonrpc: "2.0", id: message.id, result: { pong: true, pid: process.pid } });
});
if (scenario !== "deaf") lines.on("close", () => process.exit(0));
