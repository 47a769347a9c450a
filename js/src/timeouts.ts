/**
 * Timeouts in milliseconds: validated, `Infinity` meaning none, and waits longer than a Node
 * timer can hold (2^31 - 1 ms, about 24.8 days) chained rather than fired at once.
 */
import { RequestTimeoutError } from "./errors-base.js";

const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * @returns `ms`, when it is a number of milliseconds >= 0 (`Infinity`: no limit).
 * @throws RangeError - naming `what` and the value, for NaN, a negative number or a non-number.
 */
export function checkTimeout(what: string, ms: unknown): number {
  if (typeof ms !== "number" || Number.isNaN(ms) || ms < 0) {
    throw new RangeError(`${what} must be a number of milliseconds >= 0 (Infinity: no limit), got ${String(ms)}`);
  }
  return ms;
}

/**
 * Call `fire` after `ms` milliseconds (never, for `Infinity`).
 *
 * @param unref - Let Node exit while the timer waits.
 * @returns A function that cancels it.
 */
export function after(ms: number, fire: () => void, unref = false): () => void {
  if (ms === Infinity) return () => {};
  let timer: NodeJS.Timeout;
  const arm = (left: number) => {
    timer = setTimeout(() => (left > MAX_TIMER_MS ? arm(left - MAX_TIMER_MS) : fire()), Math.min(left, MAX_TIMER_MS));
    if (unref) timer.unref();
  };
  arm(ms);
  return () => clearTimeout(timer);
}

/** Resolves `undefined` after `ms` (never, for `Infinity`); does not keep Node running. */
export function delay(ms: number): Promise<undefined> {
  return new Promise((resolve) => after(ms, () => resolve(undefined), true));
}

/** A wait that may end early: see {@link giveUp}. */
export interface GiveUp {
  /** Settles with why the wait ended early: a RequestTimeoutError, or the signal's reason. */
  readonly why: Promise<Error>;
  /** Stop the timer and stop listening to the signal. */
  readonly stop: () => void;
}

/**
 * Why a wait for `what` ends early: `RequestTimeoutError(what, ms)` after `ms` (never, for
 * `Infinity`), or `signal`'s reason once it aborts (an Error, else `${what}: aborted`).
 */
export function giveUp(what: string, ms: number, signal?: AbortSignal): GiveUp {
  let stopTimer = () => {};
  let onAbort = () => {};
  const why = new Promise<Error>((resolve) => {
    onAbort = () => resolve(signal?.reason instanceof Error ? signal.reason : new Error(`${what}: aborted`));
    stopTimer = after(ms, () => resolve(new RequestTimeoutError(what, ms)));
    if (signal?.aborted) onAbort();
    else signal?.addEventListener("abort", onAbort, { once: true });
  });
  return {
    why,
    stop: () => {
      stopTimer();
      signal?.removeEventListener("abort", onAbort);
    },
  };
}
