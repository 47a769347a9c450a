/**
 * The root of the errors a sidecar call raises, and the two raised on this side of the pipe.
 *
 * Every error the sidecar answers with becomes a {@link RemoteError} carrying the response's
 * `code`, `message` and `data`; a code of the steerable table becomes that class
 * (`src/generated/errors.ts`, e.g. `PluginStateError` for -32033), which is still a RemoteError.
 * Spec: docs/sidecar-protocol.md, Errors.
 */

/**
 * The root of every error this package raises for a call: {@link RemoteError} (what the sidecar
 * answered, and the steerable classes under it) and {@link RequestTimeoutError}. `catch (e) { if
 * (e instanceof HostError) ... }` catches what a call can fail with; a `TypeError` or a `RangeError`
 * is a mistake in the arguments (not JSON, over the frame limit, a bad timeout), raised before
 * anything is sent.
 */
export class HostError extends Error {
  override readonly name: string = "HostError";
}

/** A JSON-RPC error response, or (as a subclass) the steerable error class its code names. */
export class RemoteError extends HostError {
  /** RemoteError's own code (-32090): the sidecar's handler got an error from a reverse call. */
  static readonly CODE: number = -32090;
  override readonly name: string = "RemoteError";
  /** The JSON-RPC error code (-32700..-32000); a file tool's own code is in `data.code`. */
  readonly code: number;
  /** The response's `data` (for steerable errors an object with `type`, the class name). */
  readonly data: unknown;

  /**
   * @param code - The JSON-RPC error code.
   * @param message - The error's message, as the sidecar sent it.
   * @param data - The error's `data`, if any.
   */
  constructor(code: number, message: string, data?: unknown, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
    this.data = data;
  }
}

/** The connection closed (the sidecar exited, crashed or closed its output) before an answer. */
export class PeerClosedError extends RemoteError {
  static override readonly CODE: number = -32099;
  override readonly name: string = "PeerClosedError";

  constructor(message: string, data?: unknown) {
    super(PeerClosedError.CODE, message, data);
  }
}

/** A request had no answer within its timeout; the late answer, if any, is dropped. */
export class RequestTimeoutError extends HostError {
  override readonly name: string = "RequestTimeoutError";

  /**
   * @param method - The method called.
   * @param timeoutMs - The timeout that elapsed, in milliseconds.
   */
  constructor(
    readonly method: string,
    readonly timeoutMs: number,
  ) {
    super(`${method}: no answer in ${timeoutMs} ms`);
  }
}

/**
 * -32602 (Invalid params): what a call the sidecar refused for its params rejects with (`data`
 * names each field for a validation error), and what a handler throws to answer one.
 */
export class InvalidParamsError extends RemoteError {
  static override readonly CODE: number = -32602;
  override readonly name: string = "InvalidParamsError";

  constructor(message: string, data?: unknown) {
    super(InvalidParamsError.CODE, message, data);
  }
}
