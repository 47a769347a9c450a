// ChatHandle on its own: loops over its events, in order, several at once, and the failure.
import assert from "node:assert/strict";
import { test } from "node:test";

import { type ChatEvent, ChatHandle, type ChatSummary } from "@steerable/host";

const round = (n: number): ChatEvent => ({ type: "round", round: n });

function handle() {
  let finish!: (summary: ChatSummary) => void;
  let fail!: (error: Error) => void;
  const request = new Promise<ChatSummary>((resolve, reject) => {
    finish = resolve;
    fail = reject;
  });
  const chat = new ChatHandle("c1", request, async () => true);
  return { chat, finish, fail };
}

const summary = {
  chatId: "c1",
  sessionId: "s",
  outcome: "completed",
  rounds: 2,
  toolCalls: 0,
  text: "",
  usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 },
} satisfies ChatSummary;

test("two loops at once each get every event, in order", async () => {
  const { chat, finish } = handle();
  const loops = [0, 1].map(async () => {
    const seen: number[] = [];
    for await (const event of chat) if (event.type === "round") seen.push(event.round);
    return seen;
  });
  chat.push(round(1));
  await new Promise((resolve) => setImmediate(resolve));
  chat.push(round(2));
  finish(summary);
  assert.deepEqual(await Promise.all(loops), [
    [1, 2],
    [1, 2],
  ]);
  assert.deepEqual(await chat.result, summary);
  chat.push(round(3)); // after the end: dropped
  assert.equal(chat.eventsSeen.length, 2);
});

test("a chat that fails ends its loops with the error, after the events before it", async () => {
  const { chat, fail } = handle();
  chat.push(round(1));
  fail(new Error("refused"));
  const seen: ChatEvent[] = [];
  await assert.rejects(async () => {
    for await (const event of chat) seen.push(event);
  }, /refused/);
  assert.deepEqual(seen, [round(1)]);
  await assert.rejects(chat.result, /refused/);
});
