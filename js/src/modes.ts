/**
 * `ToolMode`, the harness classifier that decides whether a call needs consent.
 *
 * Spec: "ToolMode (harness classifier)"; the contract's `toolMode` section
 * (`spec/tool_contract.json`); REQUIREMENTS MODE-1, MODE-4. Port of
 * `steerable_agent_runtime.modes`.
 *
 * @packageDocumentation
 */

/** How risky a tool call is; the value is the wire string. */
export type ToolMode = "read" | "safe_write" | "destructive" | "local" | "external";

/** Every {@link ToolMode}, in the spec's order. */
export const TOOL_MODES: readonly ToolMode[] = Object.freeze([
  "read",
  "safe_write",
  "destructive",
  "local",
  "external",
]);

/**
 * The mode of a name that matches no rule: `local`, the conservative, consent-requiring one
 * (MODE-4). An unknown tool may touch the user's machine, so it is treated as if it did until
 * its author registers it with an explicit mode.
 */
export const DEFAULT_TOOL_MODE: ToolMode = "local";

/**
 * Reads of the open web, by exact name (spec: "Web tools"): `read` mode. Exact names, not a
 * `web_` prefix, so a future write-flavoured `web_*` tool does not inherit the read posture.
 */
export const OPEN_WORLD_READS: ReadonlySet<string> = new Set(["web_search", "web_fetch"]);

/** The spec's pattern rules, checked in order; the first prefix that starts the name wins. */
const RULES: readonly (readonly [readonly string[], ToolMode])[] = [
  [["get_", "list_", "read_", "search_"], "read"],
  [["create_", "update_", "add_", "set_"], "safe_write"],
  [["delete_", "remove_", "archive_", "drop_"], "destructive"],
  [["local_", "shell_", "exec_"], "local"],
];

/**
 * Tell whether a value is one of the {@link ToolMode} wire strings.
 *
 * @param value - Anything.
 * @returns `true` when `value` is a string in {@link TOOL_MODES}.
 */
export function isToolMode(value: unknown): value is ToolMode {
  return typeof value === "string" && (TOOL_MODES as readonly string[]).includes(value);
}

/**
 * Classify a tool by its name alone (spec: "ToolMode (harness classifier)"; MODE-1, MODE-4).
 *
 * The exact names in {@link OPEN_WORLD_READS} are `read`; otherwise the first rule whose prefix
 * starts the name as written wins (case-sensitive, no trimming, no Unicode folding):
 * `get_ list_ read_ search_` → `read`; `create_ update_ add_ set_` → `safe_write`;
 * `delete_ remove_ archive_ drop_` → `destructive`; `local_ shell_ exec_` → `local`.
 * A tool registered with an explicit mode keeps it; this is only the inference.
 *
 * @param name - The registered tool name, as written.
 * @returns The inferred mode; {@link DEFAULT_TOOL_MODE} (`local`) when no rule matches.
 */
export function decideToolMode(name: string): ToolMode {
  if (OPEN_WORLD_READS.has(name)) return "read";
  for (const [prefixes, mode] of RULES) {
    if (prefixes.some((prefix) => name.startsWith(prefix))) return mode;
  }
  return DEFAULT_TOOL_MODE;
}

/**
 * Tell whether the spec's default UI treatment for a mode asks the user first (MODE-2).
 *
 * @param mode - A {@link ToolMode} wire string.
 * @returns `true` only for `local`.
 * @throws RangeError When `mode` is not a {@link ToolMode} (as the Python `ToolMode(mode)`
 *   raises), so a misspelt mode never silently skips consent.
 */
export function requiresConsent(mode: ToolMode): boolean {
  if (!isToolMode(mode)) {
    const shown = typeof mode === "string" ? JSON.stringify(mode) : typeof mode;
    throw new RangeError(`not a tool mode: ${shown}`);
  }
  return mode === "local";
}
