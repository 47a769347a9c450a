/**
 * Typed errors: a sidecar error response rebuilt as the class its code names.
 *
 * Spec: docs/sidecar-protocol.md, Errors (the table lives in spec/sidecar.schema.json, `errors`).
 */
import { InvalidParamsError, RemoteError } from "./errors-base.js";
import { ERROR_CLASSES } from "./generated/errors.js";

const SHOWN_CHARS = 200;

/**
 * The error a response `{code, message, data}` stands for.
 *
 * @returns An instance of the steerable class the code names (a subclass of RemoteError, e.g.
 *   `ConfigError` for -32040), InvalidParamsError for -32602, or a plain RemoteError for the
 *   other standard codes, RemoteError's own (-32090) and codes outside the table.
 */
export function remoteError(code: number, message: string, data?: unknown): RemoteError {
  if (code === InvalidParamsError.CODE) return new InvalidParamsError(message, data);
  const typed = ERROR_CLASSES.get(code) ?? RemoteError;
  return new typed(code, message, data);
}

/**
 * The error for an answer that is not the shape its method answers (a broken sidecar):
 * a plain RemoteError, code -32603, `data: {method}`, the message naming the method, what was
 * expected and the answer (clipped to 200 characters), as the Python client has it.
 */
export function malformedResult(method: string, answer: unknown, expected: string): RemoteError {
  let shown = JSON.stringify(answer) ?? String(answer);
  if (shown.length > SHOWN_CHARS) shown = `${shown.slice(0, SHOWN_CHARS)}... (${shown.length} characters)`;
  return new RemoteError(-32603, `the sidecar answered ${method} with ${shown}, not ${expected}`, { method });
}
