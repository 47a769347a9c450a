/**
 * The host's answers to the sidecar's reverse calls, each through an optional handler and under
 * a timeout (docs/sidecar-protocol.md, Reverse calls; the Python client's handlers).
 *
 * | Method | Handler | Unset, or past its timeout |
 * | --- | --- | --- |
 * | `ask_user.request` | `onAskUser` | `{cancelled: true}`: the questions get empty answers |
 * | `approval.request` | `onApproval` | `{approved: false}`: the model gets `consent_denied` |
 * | `tool.invoke` | `onToolInvoke` | unset: -32602 (`host_error`); late: a failed result with `needsFollowup` |
 * | `read_state.seed` | `onReadStateSeed` | `{ok: true}` (the seed is kept in `client.seeds` either way) |
 * | `web_search.request` | `onWebSearch` | -32602: the model gets `search_failed` |
 *
 * A handler that throws answers with an error (-32603 for a plain Error, the error's own code for
 * a RemoteError such as InvalidParamsError): for the sidecar, a refused approval, a failed tool.
 */
import { InvalidParamsError, RemoteError, RequestTimeoutError } from "./errors-base.js";
import type {
  ApprovalRequestParams,
  AskUserRequestParams,
  HostInvokeParams,
  HostMethods,
  ReadStateSeedParams,
  ToolResult,
  WebSearchRequestParams,
  WebSearchResult,
} from "./generated/protocol.js";
import type { JsonRpcPeer } from "./peer.js";
import type { SidecarLogger } from "./stderr.js";
import { giveUp } from "./timeouts.js";

type Maybe<T> = T | Promise<T>;

/** The reverse-call handlers; each gets an AbortSignal, aborted at its timeout or when the sidecar exits. */
export interface ReverseHandlers {
  /** Show the question card; return `{questionId: answer}`, or `null` (or `{cancelled: true}`) when the user dismissed it. */
  onAskUser?:
    | ((payload: AskUserRequestParams, signal: AbortSignal) => Maybe<Record<string, unknown> | null>)
    | undefined;
  /** Ask the user whether `request.call` may run; only `true` approves. */
  onApproval?: ((request: ApprovalRequestParams, signal: AbortSignal) => Maybe<boolean>) | undefined;
  /** Run a tool of a `toolsViaHost` chat (its arguments already validated by your schema). */
  onToolInvoke?: ((params: HostInvokeParams, signal: AbortSignal) => Maybe<ToolResult>) | undefined;
  /** Take a resumed session's read state into your CAS gate. */
  onReadStateSeed?: ((params: ReadStateSeedParams, signal: AbortSignal) => Maybe<void>) | undefined;
  /** Run a hosted web search (`STEERABLE_WEB_SEARCH_PROVIDER=host`). */
  onWebSearch?: ((params: WebSearchRequestParams, signal: AbortSignal) => Maybe<WebSearchResult>) | undefined;
}

/** Milliseconds each reverse method's handler may take. */
export type ReverseTimeouts = Partial<Record<keyof HostMethods, number>>;

/**
 * The defaults: the sidecar itself waits 10 minutes for a question or a consent prompt (a
 * person answers those), so the handlers get as long; a tool gets 10 minutes too (the sidecar's
 * own tools default to 120 s, but a host's may be slower); a seed 30 s, a search 60 s.
 */
export const DEFAULT_TIMEOUTS_MS: Readonly<Required<ReverseTimeouts>> = {
  "ask_user.request": 600_000,
  "approval.request": 600_000,
  "tool.invoke": 600_000,
  "read_state.seed": 30_000,
  "web_search.request": 60_000,
};

const TIMED_OUT = Symbol("timed out");

/** `{cancelled: true}`, the protocol's own answer for a dismissed card (no answer is ever `true`). */
function isCancel(answers: object): boolean {
  const keys = Object.keys(answers);
  return keys.length === 1 && keys[0] === "cancelled" && (answers as { cancelled?: unknown }).cancelled === true;
}

/** @internal Register the reverse methods on `peer`; handlers are read at each call. */
export function serveReverseCalls(
  peer: JsonRpcPeer,
  handlers: ReverseHandlers,
  timeouts: ReverseTimeouts,
  seeds: ReadStateSeedParams[],
  logger: SidecarLogger,
  chatEnded: (chatId: unknown) => AbortSignal | undefined = () => undefined,
): void {
  const within = async <T>(
    method: keyof HostMethods,
    context: { signal: AbortSignal; chatId?: unknown },
    run: (signal: AbortSignal) => Maybe<T>,
  ): Promise<T | typeof TIMED_OUT> => {
    // the handler stops being waited for when the sidecar goes, or when its chat ends (cancelled)
    const ended = chatEnded(context.chatId);
    const closed = ended === undefined ? context.signal : AbortSignal.any([context.signal, ended]);
    if (closed.aborted) return TIMED_OUT;
    const ms = timeouts[method] ?? DEFAULT_TIMEOUTS_MS[method];
    const controller = new AbortController(); // the handler's signal
    // past the timeout, or once the sidecar or the chat is gone (nobody reads the answer), stop waiting
    const wait = giveUp(method, ms, closed);
    const late = wait.why.then((why): typeof TIMED_OUT => {
      if (why instanceof RequestTimeoutError) {
        logger({ source: "client", level: "warning", message: `${method}: the handler took over ${ms} ms` });
        controller.abort(new Error(`${method}: timed out after ${ms} ms`));
      } else {
        controller.abort(closed.reason);
      }
      return TIMED_OUT;
    });
    try {
      return await Promise.race([Promise.resolve().then(() => run(controller.signal)), late]);
    } finally {
      wait.stop();
    }
  };

  peer.addMethod("ask_user.request", async (params, { signal }) => {
    const handler = handlers.onAskUser;
    if (handler === undefined) return { cancelled: true };
    const payload = params as AskUserRequestParams;
    const answers = await within("ask_user.request", { signal, chatId: payload.chatId }, (s) => handler(payload, s));
    if (answers === TIMED_OUT || answers === null || typeof answers !== "object" || isCancel(answers)) {
      return { cancelled: true };
    }
    return { answers };
  });

  peer.addMethod("approval.request", async (params, { signal }) => {
    const handler = handlers.onApproval;
    if (handler === undefined) return { approved: false };
    const request = params as ApprovalRequestParams;
    const answer = await within("approval.request", { signal, chatId: request.chatId }, (s) => handler(request, s));
    return { approved: answer === true }; // consent is never inferred from a truthy value
  });

  peer.addMethod("tool.invoke", async (params, { signal }) => {
    const handler = handlers.onToolInvoke;
    if (handler === undefined) throw new InvalidParamsError("this host runs no tools (no onToolInvoke handler)");
    const call = params as HostInvokeParams;
    const result = await within("tool.invoke", { signal, chatId: call.context?.chatId }, (s) => handler(call, s));
    if (result !== TIMED_OUT) return result;
    const ms = timeouts["tool.invoke"] ?? DEFAULT_TIMEOUTS_MS["tool.invoke"];
    return {
      success: false,
      needsFollowup: true,
      error: `the host's ${call.name} did not finish in ${ms} ms`,
      data: { code: "timeout" },
    } satisfies ToolResult;
  });

  peer.addMethod("read_state.seed", async (params, { signal }) => {
    const seed = params as ReadStateSeedParams;
    seeds.push(seed);
    const handler = handlers.onReadStateSeed;
    if (handler !== undefined) await within("read_state.seed", { signal }, (s) => handler(seed, s));
    return { ok: true };
  });

  peer.addMethod("web_search.request", async (params, { signal }) => {
    const handler = handlers.onWebSearch;
    if (handler === undefined) throw new InvalidParamsError("this host runs no web search (no onWebSearch handler)");
    const answer = await within("web_search.request", { signal }, (s) => handler(params as WebSearchRequestParams, s));
    if (answer === TIMED_OUT) {
      const ms = timeouts["web_search.request"] ?? DEFAULT_TIMEOUTS_MS["web_search.request"];
      throw new RemoteError(-32603, `the host's search did not finish in ${ms} ms`, { type: "TimeoutError" });
    }
    return answer;
  });
}
