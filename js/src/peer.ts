/**
 * A JSON-RPC 2.0 peer over a line-framed byte stream pair, both directions at once.
 *
 * The framing and rules are the sidecar's (docs/sidecar-protocol.md, Transport): one compact
 * UTF-8 JSON message per line; `\r\n`, blank lines and a last line without its newline at EOF
 * tolerated; an incoming frame over `maxFrameBytes` is answered -32600 and skipped; a frame that
 * is not UTF-8 or not JSON is answered -32700 (`id: null`); each incoming request runs on its own,
 * so a handler awaiting a reverse call never blocks the reader; responses whose id matches nothing
 * are logged and dropped. When such a refused frame is the answer to one of our requests (its
 * first bytes say `{"jsonrpc":"2.0","id":N,`), that request fails at once instead of waiting.
 */
import { setMaxListeners } from "node:events";
import type { Readable, Writable } from "node:stream";
import { remoteError } from "./errors.js";
import { PeerClosedError, RemoteError } from "./errors-base.js";
import { isObject } from "./objects.js";
import { checkTimeout, giveUp } from "./timeouts.js";

/** What a method handler gets besides its params. */
export interface HandlerContext {
  /** The incoming request's id (`undefined` for a notification). */
  readonly id: string | number | null | undefined;
  /** Aborted when the connection closes while the handler runs. */
  readonly signal: AbortSignal;
}

/** Serves one incoming method: returns the result (any JSON value) or throws. */
export type MethodHandler = (params: unknown, context: HandlerContext) => unknown;

/** Where the peer reports what it drops or fails to do; it must not throw. */
export type PeerLog = (level: "debug" | "warning" | "error", message: string) => void;

/** Options of {@link JsonRpcPeer}. */
export interface PeerOptions {
  /** Longest incoming frame in bytes, newline excluded (default 64 MiB). */
  readonly maxFrameBytes?: number;
  /** Longest frame sent, in bytes: the other side's limit (default 64 MiB, the sidecar's). */
  readonly maxOutgoingFrameBytes?: number;
  /** Receives the peer's own warnings (a dropped response, a failed handler). */
  readonly log?: PeerLog;
  /** Called once when the input ends or fails; returns why, for the pending requests' error. */
  readonly onClose?: () => Promise<string> | string;
}

/** Options of one outgoing request. */
export interface RequestOptions {
  /** Milliseconds to wait for the answer ({@link RequestTimeoutError} after); `Infinity`: no limit. */
  readonly timeoutMs?: number;
  /** Abandons the wait (the late answer is dropped); rejects with the signal's reason. */
  readonly signal?: AbortSignal;
}

type Pending = { method: string; resolve: (v: unknown) => void; reject: (e: Error) => void };
type Message = Record<string, unknown>;

const DEFAULT_MAX_FRAME_BYTES = 64 * 1024 * 1024;
const NEWLINE = 0x0a;
const ANSWER_HEAD = /^\{"jsonrpc":"2\.0","id":(\d{1,15}),"(?:result|error)"/;
const HEAD_BYTES = 64;
const MAX_UNREAD_REPLY_BYTES = 1024 * 1024; // unread output past this: replies to garbage are dropped
const FORGOTTEN = 1024; // ids of timed-out requests remembered, so their late answers log quietly

/** One end of the sidecar protocol's connection (the host's end, in SidecarClient). */
export class JsonRpcPeer {
  readonly #output: Writable;
  readonly #maxFrameBytes: number;
  readonly #maxOutgoingFrameBytes: number;
  readonly #log: PeerLog;
  readonly #onClose: (() => Promise<string> | string) | undefined;
  readonly #methods = new Map<string, MethodHandler>();
  readonly #notifications = new Map<string, MethodHandler>();
  readonly #pending = new Map<number, Pending>();
  readonly #forgotten = new Set<number>();
  readonly #abort = new AbortController();
  readonly #decoder = new TextDecoder("utf-8", { fatal: true });
  #chunks: Buffer[] = [];
  #buffered = 0;
  #skipping = false; // inside a frame over the limit: drop bytes up to its newline
  #nextId = 0;
  #closed: string | undefined; // why, once the input ended
  readonly closed: Promise<string>;
  #markClosed!: (why: string) => void;

  /**
   * @param input - Where frames arrive (the sidecar's stdout).
   * @param output - Where frames go (the sidecar's stdin).
   */
  constructor(input: Readable, output: Writable, options: PeerOptions = {}) {
    this.#output = output;
    this.#maxFrameBytes = options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES;
    this.#maxOutgoingFrameBytes = options.maxOutgoingFrameBytes ?? DEFAULT_MAX_FRAME_BYTES;
    this.#log = options.log ?? (() => {});
    this.#onClose = options.onClose;
    this.closed = new Promise((resolve) => (this.#markClosed = resolve));
    setMaxListeners(Infinity, this.#abort.signal); // one listener per running handler
    input.on("data", (chunk: Buffer | string) => this.#feed(typeof chunk === "string" ? Buffer.from(chunk) : chunk));
    input.once("end", () => {
      this.#flush(); // a last line without its newline is still a frame
      void this.#close("the sidecar closed its output");
    });
    input.once("error", (error: Error) => void this.#close(`reading from the sidecar failed: ${error.message}`));
    output.on("error", (error: Error) => this.#log("warning", `writing to the sidecar failed: ${error.message}`));
  }

  /** Serve requests for `method` with `handler` (a notification to it runs it too). */
  addMethod(method: string, handler: MethodHandler): void {
    this.#methods.set(method, handler);
  }

  /** Run `handler` for notifications to `method`; a request to it is answered -32601. */
  addNotification(method: string, handler: MethodHandler): void {
    this.#notifications.set(method, handler);
  }

  /** True once the input ended: requests fail at once with {@link PeerClosedError}. */
  get isClosed(): boolean {
    return this.#closed !== undefined;
  }

  /**
   * Send a request and wait for its answer.
   *
   * @returns The response's `result`.
   * @throws RemoteError - the error response, as the class its code names ({@link remoteError});
   *   PeerClosedError when the connection closes first; RequestTimeoutError past `timeoutMs`;
   *   TypeError when `params` cannot be JSON (a cycle, a BigInt); RangeError when the frame would
   *   be over `maxFrameBytes` (the sidecar would refuse it) or `timeoutMs` is not a timeout.
   */
  request(method: string, params?: unknown, options: RequestOptions = {}): Promise<unknown> {
    if (this.#closed !== undefined) {
      return Promise.reject(new PeerClosedError(`${method}: ${this.#closed}`, { method }));
    }
    const id = ++this.#nextId;
    let line: string;
    let ms: number;
    try {
      ms = options.timeoutMs === undefined ? Infinity : checkTimeout("timeoutMs", options.timeoutMs);
      line = this.#encode(
        params === undefined ? { jsonrpc: "2.0", id, method } : { jsonrpc: "2.0", id, method, params },
      );
    } catch (error) {
      return Promise.reject(error instanceof Error ? withMethod(error, method) : error);
    }
    return new Promise<unknown>((resolve, reject) => {
      const wait = giveUp(method, ms, options.signal);
      const settle = () => {
        this.#pending.delete(id);
        wait.stop();
      };
      this.#pending.set(id, {
        method,
        resolve: (value) => {
          settle();
          resolve(value);
        },
        reject: (error) => {
          settle();
          reject(error);
        },
      });
      void wait.why.then((error) => {
        if (!this.#pending.has(id)) return; // answered first
        settle();
        this.#forgotten.add(id); // its late answer, if any, is logged quietly
        if (this.#forgotten.size > FORGOTTEN) this.#forgotten.delete(this.#forgotten.values().next().value as number);
        reject(error);
      });
      if (!options.signal?.aborted) this.#write(line);
    });
  }

  /**
   * Send a notification (no answer). Dropped once the connection is closed.
   *
   * @throws TypeError or RangeError - as {@link request}, for params that cannot be sent.
   */
  notify(method: string, params?: unknown): void {
    if (this.#closed !== undefined) return;
    this.#write(this.#encode(params === undefined ? { jsonrpc: "2.0", method } : { jsonrpc: "2.0", method, params }));
  }

  // -- the reader -------------------------------------------------------------------------------

  #feed(chunk: Buffer): void {
    let start = 0;
    for (let at = chunk.indexOf(NEWLINE); at !== -1; at = chunk.indexOf(NEWLINE, start)) {
      this.#take(chunk.subarray(start, at));
      this.#flush();
      start = at + 1;
    }
    this.#take(chunk.subarray(start));
  }

  #flush(): void {
    const frame = this.#skipping || this.#buffered === 0 ? null : Buffer.concat(this.#chunks);
    this.#chunks = [];
    this.#buffered = 0;
    this.#skipping = false;
    if (frame !== null) this.#frame(frame);
  }

  #take(piece: Buffer): void {
    if (this.#skipping || piece.length === 0) return;
    this.#buffered += piece.length;
    if (this.#buffered > this.#maxFrameBytes) {
      // answered now; the rest of the line is dropped unread
      const head = Buffer.concat([...this.#chunks, piece]).subarray(0, HEAD_BYTES);
      this.#chunks = [];
      this.#skipping = true;
      const why = `frame too large (over ${this.#maxFrameBytes} bytes)`;
      if (!this.#failAnswer(head, -32600, `Invalid Request: the answer is a ${why}`)) {
        this.#reply(errorFrame(null, -32600, `Invalid Request: ${why}`));
      }
      return;
    }
    this.#chunks.push(piece);
  }

  #frame(bytes: Buffer): void {
    let text: string;
    let message: unknown;
    try {
      text = this.#decoder.decode(bytes);
    } catch {
      if (this.#failAnswer(bytes.subarray(0, HEAD_BYTES), -32700, "Parse error: the answer is not UTF-8")) return;
      this.#reply(errorFrame(null, -32700, "Parse error: the frame is not UTF-8"));
      return;
    }
    if (text.trim() === "") return; // blank lines (and a lone \r) are tolerated
    try {
      message = JSON.parse(text);
    } catch (error) {
      const why = `Parse error: ${(error as Error).message}`;
      if (this.#failAnswer(bytes.subarray(0, HEAD_BYTES), -32700, why)) return;
      this.#reply(errorFrame(null, -32700, why));
      return;
    }
    if (Array.isArray(message)) return void this.#batch(message);
    void this.#dispatch(message).then((answer) => answer !== undefined && this.#reply(answer));
  }

  /** A refused frame that starts as an answer to a pending request fails that request; true if so. */
  #failAnswer(head: Buffer, code: number, message: string): boolean {
    const id = Number(ANSWER_HEAD.exec(head.toString("latin1"))?.[1]);
    const pending = this.#pending.get(id);
    if (pending === undefined) return false;
    pending.reject(new RemoteError(code, `${pending.method}: ${message}`, { method: pending.method }));
    return true;
  }

  async #batch(messages: unknown[]): Promise<void> {
    if (messages.length === 0) return this.#reply(errorFrame(null, -32600, "Invalid Request: empty batch"));
    const answers = await Promise.all(messages.map((m) => this.#dispatch(m)));
    const sent = answers.filter((a): a is Message => a !== undefined);
    if (sent.length > 0) this.#reply(sent);
  }

  /** Handle one message; returns the response to send, if any. */
  async #dispatch(message: unknown): Promise<Message | undefined> {
    if (!isObject(message)) return errorFrame(null, -32600, "Invalid Request: not an object");
    const { id, method } = message;
    if (method === undefined && ("result" in message || "error" in message)) {
      this.#response(message);
      return undefined;
    }
    const validId = id === undefined || id === null || typeof id === "string" || typeof id === "number";
    if (message.jsonrpc !== "2.0" || typeof method !== "string" || !validId) {
      const problem =
        message.jsonrpc !== "2.0" ? "'jsonrpc' must be \"2.0\"" : validId ? "'method' must be a string" : "bad 'id'";
      return errorFrame(validId ? (id ?? null) : null, -32600, `Invalid Request: ${problem}`);
    }
    const isRequest = "id" in message;
    const handler = this.#methods.get(method) ?? (isRequest ? undefined : this.#notifications.get(method));
    if (handler === undefined) {
      return isRequest ? errorFrame(id ?? null, -32601, `Method not found: ${method}`) : undefined;
    }
    try {
      const result = await handler(message.params, { id: id as HandlerContext["id"], signal: this.#abort.signal });
      return isRequest ? { jsonrpc: "2.0", id, result: result ?? null } : undefined;
    } catch (error) {
      if (!(error instanceof RemoteError)) {
        this.#log("error", `${method} handler failed: ${(error as Error)?.stack ?? String(error)}`);
      }
      if (!isRequest) return undefined;
      if (error instanceof RemoteError) {
        return errorFrame(id ?? null, error.code, error.message, error.data ?? { type: error.name });
      }
      const type = error instanceof Error ? error.name : typeof error;
      const text = error instanceof Error ? error.message : String(error);
      return errorFrame(id ?? null, -32603, `Internal error: ${type}: ${text}`, { type });
    }
  }

  #response(message: Message): void {
    const id = typeof message.id === "number" ? message.id : undefined;
    const pending = id === undefined ? undefined : this.#pending.get(id);
    if (pending === undefined) {
      const late = id !== undefined && this.#forgotten.delete(id);
      const what = late
        ? "a late answer to a request that timed out or was abandoned"
        : "a response to no pending request";
      this.#log(late ? "debug" : "warning", `dropped ${what} (id ${JSON.stringify(message.id)})`);
      return;
    }
    if ("error" in message) {
      const error = isObject(message.error) ? message.error : {};
      const code = typeof error.code === "number" ? error.code : -32603;
      const text = typeof error.message === "string" ? error.message : "Internal error: malformed error";
      pending.reject(remoteError(code, text, error.data));
    } else {
      pending.resolve(message.result);
    }
  }

  // -- the writer and the end -------------------------------------------------------------------

  /** One frame's text; throws TypeError (not JSON) or RangeError (over the frame limit). */
  #encode(message: Message | Message[]): string {
    const line = JSON.stringify(message); // lone surrogates come out as \ud800 escapes (ES2019)
    const limit = this.#maxOutgoingFrameBytes;
    if (line.length > limit || Buffer.byteLength(line) > limit) {
      throw new RangeError(
        `the frame is ${Buffer.byteLength(line)} bytes, over the ${limit} a frame may hold: send less`,
      );
    }
    return line;
  }

  /** Send an answer; one that cannot be encoded becomes a -32603 error, so the caller still hears. */
  #reply(message: Message | Message[]): void {
    if (!Array.isArray(message) && message.id === null && this.#output.writableLength > MAX_UNREAD_REPLY_BYTES) {
      this.#log("warning", "the sidecar reads nothing: dropped an error reply to a frame it sent");
      return;
    }
    let line: string;
    try {
      line = this.#encode(message);
    } catch (error) {
      this.#log("error", `could not encode an answer: ${(error as Error).message}`);
      if (Array.isArray(message)) return;
      const text = `Internal error: the answer cannot be sent: ${(error as Error).message}`;
      line = JSON.stringify(errorFrame(message.id ?? null, -32603, text, { type: (error as Error).name }));
    }
    this.#write(line);
  }

  #write(line: string): void {
    if (this.#output.destroyed || this.#output.writableEnded) return;
    this.#output.write(`${line}\n`);
  }

  async #close(why: string): Promise<void> {
    if (this.#closed !== undefined) return;
    this.#closed = why;
    let reason = why;
    try {
      reason = (await this.#onClose?.()) ?? why;
    } catch {
      // keep the plain reason
    }
    this.#closed = reason;
    this.#abort.abort(new PeerClosedError(reason));
    for (const pending of [...this.#pending.values()]) {
      pending.reject(new PeerClosedError(`${pending.method}: ${reason}`, { method: pending.method }));
    }
    this.#markClosed(reason);
  }
}

function errorFrame(id: unknown, code: number, message: string, data?: unknown): Message {
  const error = data === undefined ? { code, message } : { code, message, data };
  return { jsonrpc: "2.0", id: id ?? null, error };
}

function withMethod(error: Error, method: string): Error {
  error.message = `${method}: ${error.message}`;
  return error;
}
