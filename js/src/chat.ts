/**
 * `ChatHandle`: one running `agent.chat.stream`, its events as they arrive and its summary.
 *
 * Spec: docs/sidecar-protocol.md, agent.chat.stream; the events are docs/agent-loop.md's.
 */
import type { ChatEvent, ChatSummary } from "./generated/protocol.js";

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
  #changed: Promise<void>;
  #wake!: () => void; // resolves #changed: every loop waiting for the next event wakes

  constructor(chatId: string, request: Promise<ChatSummary>, cancel: () => Promise<boolean>) {
    this.chatId = chatId;
    this.#cancel = cancel;
    this.#changed = this.#nextChange();
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
   * The chat's events until it ends (the last is `done`). Each loop starts from the first event,
   * so several may run at once. When the chat failed to run (its `result` rejects), the loop
   * throws that error after the events that came before it.
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
      await this.#changed;
    }
  }

  [Symbol.asyncIterator](): AsyncGenerator<ChatEvent, void, undefined> {
    return this.events();
  }

  /** Add an event: the client does for each `agent.chat.event` of this chat (a test or another transport can too). */
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

  #nextChange(): Promise<void> {
    return new Promise<void>((resolve) => (this.#wake = resolve));
  }

  #notify(): void {
    const wake = this.#wake;
    this.#changed = this.#nextChange();
    wake();
  }
}
