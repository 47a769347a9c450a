/**
 * `SidecarClient`: spawn `steerable sidecar` and drive it over its JSON-RPC line protocol.
 *
 * Spec: the host side of the sidecar protocol (docs/sidecar-protocol.md); the Python twin is
 * `steerable_sidecar.sidecar.SidecarClient`. The client waits for `lifecycle.ready`, calls the
 * sidecar's methods, streams a chat's `agent.chat.event`s, and answers the sidecar's reverse
 * calls with the handlers you give it, each under a timeout.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { ChatHandle } from "./chat.js";
import { malformedResult } from "./errors.js";
import { SidecarStartError, UserError } from "./generated/errors.js";
import type {
  ChatEvent,
  ChatEventParams,
  ChatParams,
  ChatSummary,
  PingResult,
  ReadStateSeedParams,
  ReadyParams,
  SidecarMethods,
  ToolDescriptor,
  ToolResult,
} from "./generated/protocol.js";
import { PROTOCOL_VERSION } from "./generated/protocol.js";
import { isObject } from "./objects.js";
import { JsonRpcPeer, type RequestOptions } from "./peer.js";
import { type ReverseHandlers, type ReverseTimeouts, serveReverseCalls } from "./reverse.js";
import { defaultLogger, type SidecarLogger, StderrLines } from "./stderr.js";
import { after, checkTimeout, delay, giveUp } from "./timeouts.js";

/** How to start a sidecar ({@link SidecarClient.start}). */
export interface SidecarStartOptions extends ReverseHandlers {
  /** The program and its leading arguments (default `["steerable", "sidecar"]`). */
  readonly command?: readonly string[];
  /** `--workspace` (default: the child's working directory). */
  readonly workspace?: string;
  /** `--state-dir`, where durable session records live. */
  readonly stateDir?: string;
  /** More arguments after those (`--no-plugins`, `--harness`, ...). */
  readonly args?: readonly string[];
  /** The child's working directory. */
  readonly cwd?: string;
  /** The child's environment (default: this process's); the model comes from its `STEERABLE_*`. */
  readonly env?: NodeJS.ProcessEnv;
  /** Milliseconds to wait for `lifecycle.ready` (default 30 000). */
  readonly readyTimeoutMs?: number;
  /** Receives the sidecar's stderr, line by line, and the client's own warnings. */
  readonly logger?: SidecarLogger;
  /** Per reverse method, milliseconds its handler may take (defaults: {@link DEFAULT_TIMEOUTS_MS}). */
  readonly handlerTimeoutsMs?: ReverseTimeouts;
  /** Longest accepted frame from the sidecar, in bytes (default 64 MiB). */
  readonly maxFrameBytes?: number;
}

/** Options of {@link SidecarClient.invoke}. */
export interface InvokeOptions extends RequestOptions {
  /** The call's id (default: the sidecar makes one). */
  readonly id?: string;
  /** The user allowed this `local`-mode call (otherwise it answers `consent_required`). */
  readonly consentGranted?: boolean;
  /** Free-form metadata for the call's trace span (never part of the ToolCall). */
  readonly context?: Record<string, unknown>;
}

/** `request()`'s arguments after the method: params required unless the method takes none. */
export type ParamsArgs<M extends keyof SidecarMethods> = undefined extends SidecarMethods[M]["params"]
  ? [params?: SidecarMethods[M]["params"], options?: RequestOptions]
  : [params: SidecarMethods[M]["params"], options?: RequestOptions];

/** How a chat ended (`ChatSummary.outcome`). */
export type RunOutcome = ChatSummary["outcome"];

/** How the process ended. */
export interface SidecarExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

const READY_TIMEOUT_MS = 30_000;
const CLOSE_TIMEOUT_MS = 10_000;
const STDERR_GRACE_MS = 1_000;
const CANCEL_GRACE_MS = 5_000;
const EXIT_GRACE_MS = 2_000; // after its output closed, how long the exit is awaited, to name it

/**
 * A running `steerable sidecar` and the host's end of its connection.
 *
 * The reverse-call handlers (`onAskUser`, `onApproval`, `onToolInvoke`, `onReadStateSeed`,
 * `onWebSearch`: {@link ReverseHandlers}) are read when a call arrives: pass them to `start` or
 * set them any time before a chat needs them.
 */
export class SidecarClient implements ReverseHandlers {
  onAskUser: ReverseHandlers["onAskUser"];
  onApproval: ReverseHandlers["onApproval"];
  onToolInvoke: ReverseHandlers["onToolInvoke"];
  onReadStateSeed: ReverseHandlers["onReadStateSeed"];
  onWebSearch: ReverseHandlers["onWebSearch"];
  /** The `lifecycle.ready` params: `{version, protocolVersion, pid, workspace}`. */
  ready!: ReadyParams;
  /** Every `read_state.seed` received, in order. */
  readonly seeds: ReadStateSeedParams[] = [];
  /** Settles when the process has exited. */
  readonly exited: Promise<SidecarExit>;
  readonly process: ChildProcess;
  readonly #peer: JsonRpcPeer;
  readonly #stderr: StderrLines;
  readonly #chats = new Map<string, { handle: ChatHandle; ended: AbortController }>();
  readonly #stderrDone: Promise<void>;
  #exit: SidecarExit | undefined;

  private constructor(child: ChildProcess, options: SidecarStartOptions) {
    this.process = child;
    const logger = safely(options.logger ?? defaultLogger);
    this.#stderr = new StderrLines(logger);
    child.stderr?.on("data", (chunk: Buffer) => this.#stderr.feed(chunk));
    this.#stderrDone = new Promise((resolve) => (child.stderr ? child.stderr.once("close", resolve) : resolve()));
    // an 'error' without a listener would throw in the host: report it instead
    child.on("error", (error) =>
      logger({ source: "client", level: "error", message: `the sidecar process: ${error.message}` }),
    );
    child.stderr?.on("error", (error) =>
      logger({ source: "client", level: "warning", message: `its stderr: ${error.message}` }),
    );
    this.exited = new Promise((resolve) => {
      child.once("exit", (code, signal) => {
        this.#exit = { code, signal };
        resolve(this.#exit);
      });
    });
    if (child.stdout === null || child.stdin === null) throw new Error("the sidecar has no stdio pipes");
    this.#peer = new JsonRpcPeer(child.stdout, child.stdin, {
      ...(options.maxFrameBytes !== undefined && { maxFrameBytes: options.maxFrameBytes }),
      log: (level, message) => logger({ source: "client", level, message }),
      onClose: () => this.#whyClosed(),
    });
    this.#peer.addNotification("agent.chat.event", (params) => this.#event(params));
    this.onAskUser = options.onAskUser;
    this.onApproval = options.onApproval;
    this.onToolInvoke = options.onToolInvoke;
    this.onReadStateSeed = options.onReadStateSeed;
    this.onWebSearch = options.onWebSearch;
    const chatEnded = (chatId: unknown) =>
      typeof chatId === "string" ? this.#chats.get(chatId)?.ended.signal : undefined;
    serveReverseCalls(this.#peer, this, options.handlerTimeoutsMs ?? {}, this.seeds, logger, chatEnded);
  }

  /** Whether the sidecar runs in its own process group (killed whole: a wrapper's children too). */
  static readonly #grouped = process.platform !== "win32";

  /**
   * Spawn the sidecar and wait for its `lifecycle.ready`.
   *
   * @returns A connected client.
   * @throws SidecarStartError (code -32060) - the program could not start, it exited or stayed
   *   silent for `readyTimeoutMs` first, or its ready names another protocol version; the
   *   message carries its stderr. RangeError for a timeout that is not milliseconds >= 0.
   */
  static async start(options: SidecarStartOptions = {}): Promise<SidecarClient> {
    const [program, ...leading] = options.command ?? ["steerable", "sidecar"];
    if (program === undefined)
      throw new SidecarStartError(-32060, "the sidecar could not be started: command is empty");
    const timeoutMs = checkTimeout("readyTimeoutMs", options.readyTimeoutMs ?? READY_TIMEOUT_MS);
    for (const [what, value] of Object.entries(options.handlerTimeoutsMs ?? {})) checkTimeout(what, value);
    const argv = [
      ...leading,
      ...(options.workspace !== undefined ? ["--workspace", options.workspace] : []),
      ...(options.stateDir !== undefined ? ["--state-dir", options.stateDir] : []),
      ...(options.args ?? []),
    ];
    let child: ChildProcess;
    try {
      child = spawn(program, argv, {
        stdio: ["pipe", "pipe", "pipe"],
        detached: SidecarClient.#grouped, // its own process group, so a kill reaches a wrapper's children
        ...(options.cwd !== undefined && { cwd: options.cwd }),
        ...(options.env !== undefined && { env: options.env }),
      });
    } catch (error) {
      // a NUL byte in an argument, a bad option value: Node refuses before any process exists
      throw new SidecarStartError(-32060, `the sidecar could not be started: ${(error as Error).message}`);
    }
    const client = new SidecarClient(child, options);
    let cancelTimer = () => {};
    const outcome = await new Promise<string | { ready: unknown }>((resolve) => {
      client.#peer.addNotification("lifecycle.ready", (params) => resolve({ ready: params }));
      child.once("error", (error) => resolve(`could not be started (${program}: ${spawnProblem(error, options.cwd)})`));
      void client.exited.then((exit) => resolve(`exited with ${describeExit(exit)}`));
      cancelTimer = after(timeoutMs, () => resolve(`sent nothing in ${timeoutMs} ms`));
    });
    cancelTimer();
    const problem = typeof outcome === "string" ? outcome : readyProblem(outcome.ready);
    if (problem !== undefined) {
      await client.#kill();
      const stderr = client.stderrTail;
      const said = stderr.trim() === "" ? " (its stderr was empty)" : `; stderr:\n${stderr}`;
      throw new SidecarStartError(-32060, `the sidecar ${problem} before lifecycle.ready${said}`);
    }
    client.ready = (outcome as { ready: ReadyParams }).ready;
    return client;
  }

  /** The last 64 Ki characters the sidecar wrote to stderr (its logs). */
  get stderrTail(): string {
    return this.#stderr.tail;
  }

  // -- host -> sidecar ---------------------------------------------------------------------------

  /**
   * Call one sidecar method; the wrappers below all go through it. The result is typed from
   * spec/sidecar.schema.json but not checked (the wrappers check the shapes they return).
   *
   * @throws RemoteError - the error response, as the class its code names (`ConfigError`...);
   *   PeerClosedError when the sidecar went away first; RequestTimeoutError past `timeoutMs`.
   */
  async request<M extends keyof SidecarMethods>(
    method: M,
    ...args: ParamsArgs<M>
  ): Promise<SidecarMethods[M]["result"]> {
    const [params, options] = args;
    return (await this.#peer.request(method, params, options)) as SidecarMethods[M]["result"];
  }

  /** `system.ping`: `{pong: true, pid}`. */
  async ping(options?: RequestOptions): Promise<PingResult> {
    const answer = await this.request("system.ping", undefined, options);
    if (!isObject(answer) || answer.pong !== true) throw malformedResult("system.ping", answer, "{pong: true}");
    return answer;
  }

  /** `tool.list`: the full inventory (every tier) with schemas, modes and exposure. */
  async list(options?: RequestOptions): Promise<ToolDescriptor[]> {
    const answer: unknown = await this.request("tool.list", undefined, options);
    const tools = isObject(answer) ? answer.tools : undefined;
    if (!Array.isArray(tools) || !tools.every((t) => isObject(t) && typeof t.name === "string")) {
      throw malformedResult("tool.list", answer, "{tools: [{name, ...}]}");
    }
    return tools as ToolDescriptor[];
  }

  /**
   * `tool.invoke`: run one tool in the sidecar. Everything a tool can go wrong with is a result,
   * not an error: an unknown name, invalid arguments, `consent_required` for a `local` tool.
   *
   * @param name - The tool's name.
   * @param args - Its arguments (validated by the tool's schema).
   * @returns The ToolResult (wire form).
   */
  async invoke(name: string, args: Record<string, unknown> = {}, options: InvokeOptions = {}): Promise<ToolResult> {
    const params = {
      name,
      arguments: args,
      ...(options.id !== undefined && { id: options.id }),
      ...(options.consentGranted === true && { consentGranted: true }),
      ...(options.context !== undefined && { context: options.context }),
    };
    const answer: unknown = await this.request("tool.invoke", params, options);
    if (!isObject(answer) || typeof answer.success !== "boolean") {
      throw malformedResult("tool.invoke", answer, "a ToolResult");
    }
    return answer as ToolResult;
  }

  /**
   * Start `agent.chat.stream` and return at once: iterate the handle for the chat's events,
   * await `handle.result` for its summary. When `options.timeoutMs` passes or `options.signal`
   * aborts first, `result` rejects and the chat is cancelled in the sidecar.
   *
   * @param message - The user's message, or the whole params (`chatId`, `sessionId`, `askUser`,
   *   `toolsViaHost` with `tools`, `autoApprove`, `maxRounds`, `model`, `harness`...).
   */
  chat(message: string | ChatParams, options: RequestOptions = {}): ChatHandle {
    const params: ChatParams = typeof message === "string" ? { message } : { ...message };
    const chatId = params.chatId || randomUUID(); // "" is unset, as the sidecar reads it
    if (this.#chats.has(chatId)) {
      // the sidecar would refuse it too; refused here, the running chat keeps its events
      const refused = Promise.reject(
        new UserError(-32030, `chat '${chatId}' is already running`, { type: "UserError" }),
      );
      return new ChatHandle(chatId, refused, () => this.cancel(chatId));
    }
    const request = this.#runChat({ ...params, chatId }, options);
    const handle = new ChatHandle(chatId, request, () => this.cancel(chatId));
    const ended = new AbortController(); // its reverse calls (questions, consent prompts) end with it
    this.#chats.set(chatId, { handle, ended });
    const forget = () => {
      ended.abort(new Error(`chat ${chatId} ended`));
      if (this.#chats.get(chatId)?.handle === handle) this.#chats.delete(chatId);
    };
    void request.then(forget, forget);
    return handle;
  }

  /**
   * The `agent.chat.stream` call. Past `timeoutMs`, or once `signal` aborts, the chat is
   * cancelled in the sidecar and its answer awaited (5 s at most) before the call rejects, so
   * the session is free for the next chat when it does.
   */
  async #runChat(params: ChatParams & { chatId: string }, options: RequestOptions): Promise<ChatSummary> {
    const stop = new AbortController(); // abandons the call itself, after the grace
    const wait = giveUp("agent.chat.stream", checkTimeout("timeoutMs", options.timeoutMs ?? Infinity), options.signal);
    const sent = this.request("agent.chat.stream", params, { signal: stop.signal });
    sent.catch(() => {}); // read below, or abandoned after the grace
    const first = await Promise.race([
      sent.then(
        () => undefined,
        () => undefined,
      ),
      wait.why,
    ]);
    wait.stop();
    if (first instanceof Error) {
      await this.cancel(params.chatId).catch(() => false);
      await Promise.race([sent.catch(() => undefined), delay(CANCEL_GRACE_MS)]);
      stop.abort(first);
      throw first;
    }
    stop.abort();
    const answer: unknown = await sent;
    if (!isObject(answer) || typeof answer.outcome !== "string") {
      throw malformedResult("agent.chat.stream", answer, "a summary with a string 'outcome'");
    }
    return answer as unknown as ChatSummary;
  }

  /** `agent.chat.cancel`: `true` when the chat was running; its result then says `cancelled`. */
  async cancel(chatId: string, options?: RequestOptions): Promise<boolean> {
    const answer: unknown = await this.request("agent.chat.cancel", { chatId }, options);
    if (!isObject(answer) || typeof answer.cancelled !== "boolean") {
      throw malformedResult("agent.chat.cancel", answer, "{cancelled: boolean}");
    }
    return answer.cancelled;
  }

  // -- the end ------------------------------------------------------------------------------------

  /**
   * `system.shutdown`, then wait for the exit (running chats are cancelled; calls in flight get
   * 5 s); kills the process if it is still there after `timeoutMs` (default 10 000).
   *
   * @returns The exit code (`null` when it ended by a signal).
   */
  async shutdown(timeoutMs = CLOSE_TIMEOUT_MS): Promise<number | null> {
    const deadline = Date.now() + checkTimeout("timeoutMs", timeoutMs);
    if (this.#exit === undefined && !this.#peer.isClosed) {
      await this.request("system.shutdown", undefined, { timeoutMs }).catch(() => undefined);
    }
    return this.#waitOrKill(Math.max(0, deadline - Date.now()));
  }

  /** Close the sidecar's stdin (it exits at EOF), wait up to `timeoutMs`, then kill it. */
  async close(timeoutMs = CLOSE_TIMEOUT_MS): Promise<number | null> {
    checkTimeout("timeoutMs", timeoutMs);
    this.process.stdin?.end();
    return this.#waitOrKill(timeoutMs);
  }

  /** `await using sidecar = await SidecarClient.start()` closes it at the end of the scope. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  async #waitOrKill(timeoutMs: number): Promise<number | null> {
    const exit = await Promise.race([this.exited, delay(timeoutMs)]);
    if (exit === undefined) await this.#kill();
    await this.#release();
    return (await this.exited).code;
  }

  /** SIGKILL the sidecar's process group (a wrapper script's children with it), then wait. */
  async #kill(): Promise<void> {
    const pid = this.process.pid;
    if (this.#exit === undefined && this.process.exitCode === null && pid !== undefined) {
      try {
        if (SidecarClient.#grouped) process.kill(-pid, "SIGKILL");
        else this.process.kill("SIGKILL");
      } catch {
        this.process.kill("SIGKILL"); // the group is gone already: the process itself
      }
      await this.exited;
    }
    await this.#release();
  }

  /**
   * Let go of the pipes once the sidecar's last logs are read (1 s at most): a grandchild still
   * holding them must not keep this process alive.
   */
  async #release(): Promise<void> {
    await Promise.race([this.#stderrDone, delay(STDERR_GRACE_MS)]);
    for (const stream of [this.process.stdin, this.process.stdout, this.process.stderr]) stream?.destroy();
  }

  // -- sidecar -> host ----------------------------------------------------------------------------

  #event(params: unknown): void {
    if (!isObject(params) || typeof params.chatId !== "string" || !isObject(params.event)) return;
    this.#chats.get(params.chatId)?.handle.push((params as unknown as ChatEventParams).event as ChatEvent);
  }

  async #whyClosed(): Promise<string> {
    const exit = await Promise.race([this.exited, delay(EXIT_GRACE_MS)]);
    const last = this.#stderr.lastLines(3);
    const said = last ? `; its last stderr lines:\n${last}` : "";
    if (exit === undefined) return `the sidecar closed its output${said}`;
    return `the sidecar exited with ${describeExit(exit)}${said}`;
  }
}

/** `logger`, made unable to throw into the client (a broken logger loses its line, nothing else). */
function safely(logger: SidecarLogger): SidecarLogger {
  return (entry) => {
    try {
      logger(entry);
    } catch {
      // nowhere left to report it
    }
  };
}

function describeExit(exit: SidecarExit): string {
  return exit.signal !== null ? `signal ${exit.signal}` : `code ${exit.code}`;
}

/** What is wrong with a `lifecycle.ready`'s params, if anything. */
function readyProblem(ready: unknown): string | undefined {
  if (!isObject(ready) || typeof ready.protocolVersion !== "number" || typeof ready.pid !== "number") {
    return `sent a lifecycle.ready that is not {version, protocolVersion, pid, workspace} (${JSON.stringify(ready)})`;
  }
  if (ready.protocolVersion !== PROTOCOL_VERSION) {
    return `speaks protocol ${ready.protocolVersion}, this client protocol ${PROTOCOL_VERSION}: update one of them`;
  }
  return undefined;
}

/** Node's spawn error, made clearer where it misleads (a missing cwd is reported as ENOENT of the program). */
function spawnProblem(error: NodeJS.ErrnoException, cwd: string | undefined): string {
  if (error.code === "ENOENT" && cwd !== undefined && !existsSync(cwd))
    return `the working directory ${cwd} does not exist`;
  return error.message;
}
