/**
 * Completion semantics: whether a tool result ends the agent run.
 *
 * Spec: "Completion semantics"; the contract's `completion` section (`spec/tool_contract.json`);
 * REQUIREMENTS ENV-6. Port of `steerable_agent_runtime.types.is_terminal_result`.
 *
 * @packageDocumentation
 */

/**
 * Tell whether a tool result ends the agent run (spec: "Completion semantics"; ENV-6).
 *
 * Terminal when `terminal === true`, or when `success === false` and the follow-up flag is not
 * `=== true`: identity semantics, so only the booleans count (`"false"`, `0` or `null` are not
 * `false`; `"true"` or `1` are not `true`). The follow-up flag is `needsFollowup`, or, when that
 * key is absent, the snake_case `needs_followup` (as the Python reads its wire dict). A key whose
 * value is `undefined` counts as absent, as it is once the result is sent as JSON.
 *
 * @param result - A `ToolResult` wire object (`{success, terminal?, needsFollowup?, ...}`), or
 *   anything: `null`, `undefined` and non-objects are not terminal.
 * @returns `true` when the run should stop.
 */
export function isTerminalResult(result: unknown): boolean {
  if (typeof result !== "object" || result === null) return false;
  const fields = result as Readonly<Record<string, unknown>>;
  if (fields.terminal === true) return true;
  const camel = fields.needsFollowup;
  const followup = camel === undefined ? fields.needs_followup : camel;
  return fields.success === false && followup !== true;
}
