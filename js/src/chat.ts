/**
 * `ChatHandle`: one running `agent.chat.stream`, its events as they arrive and its summary.
 *
 * Spec: docs/sidecar-protocol.md, agent.chat.stream; the events are docs/agent-loop.md's.
 */
import type { ChatEvent, ChatSummary } from "./generated/protocol.js";

type Waiter = () => void;

/** Returned by {@link SidecarClient.chat}: iterate it for the events, await `result` for the end. */
export class ChatHandle implements AsyncIterable<ChatEvent> {
  /** The chat's id (for `agent.chat.cancel` and the events' `chatId`). */
  readonly chatId: string;
  /**
   * The `agent.chat.stream` answer, `{chatId, sessionId, outcome, rounds, toolCalls, usage, text,
   * terminalResult?, error?, finishReason?}`. Rejects with the typed error when the sidecar
   * refused the chat: -32602 (bad params), `ConfigError` (no model provider), `UserError` (the
   * chat or session already runs); PeerClosedError when the sidecar went away.
   */
  readonly result: Promise<ChatSummary>;
  /** Every event received so far, in order. */
  readonly eventsSeen: ChatEvent[] = [];
  readonly #cancel: () => Promise<boolean>;
  #ended = false;
  #failure: { error: unknown } | undefined;
  #wake: Waiter | undefined;

  constructor(chatId: string, request: Promise<ChatSummary>, cancel: () => Promise<boolean>) {
    this.chatId = chatId;
    this.#cancel = cancel;
    this.result = request;
    request.then(
      () => this.#end(undefined),
      (error: unknown) => this.#end({ error }),
    );
  }

  /** Ask the sidecar to stop the chat (`agent.chat.cancel`); `result` then says `cancelled`. */
  cancel(): Promise<boolean> {
    return this.#cancel();
  }

  /**
   * The chat's events until it ends (the last is `done`). One iteration at a time; a second
   * loop starts again from the first event. When the chat failed to run (its `result` rejects),
   * the loop throws that error after the events that came before it.
   */
  async *events(): AsyncGenerator<ChatEvent, void, undefined> {
    let index = 0;
    for (;;) {
      if (index < this.eventsSeen.length) {
        yield this.eventsSeen[index++] as ChatEvent;
        continue;
      }
      if (this.#ended) {
        if (this.#failure !== undefined) throw this.#failure.error;
        return;
      }
      await new Promise<void>((resolve) => (this.#wake = resolve));
    }
  }

  [Symbol.asyncIterator](): AsyncGenerator<ChatEvent, void, undefined> {
    return this.events();
  }

  /** @internal Called by the client for each `agent.chat.event` of this chat. */
  push(event: ChatEvent): void {
    if (this.#ended) return;
    this.eventsSeen.push(event);
    this.#notify();
  }

  #end(failure: { error: unknown } | undefined): void {
    this.#ended = true;
    this.#failure = failure;
    this.#notify();
  }

  #notify(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }
}
