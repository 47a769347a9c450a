// Start a real `steerable sidecar` for the tests: a fresh workspace (notes.txt: "alpha\nbeta\n"),
// a state directory, and the scripted model playing `turns` (docs/providers.md, ScriptedProvider).
//
// The command is `steerable sidecar` from PATH (CI runs the tests inside the project's venv), or
// STEERABLE_TEST_COMMAND (a JSON array, e.g. ["python", "-P", "-m", "steerable_sidecar", "sidecar"]).
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { SidecarClient, type SidecarLogEntry, type SidecarStartOptions } from "@steerable/host";

export const COMMAND: readonly string[] = process.env.STEERABLE_TEST_COMMAND
  ? (JSON.parse(process.env.STEERABLE_TEST_COMMAND) as string[])
  : ["steerable", "sidecar"];

/** This process's environment without any STEERABLE_* knob, plus `extra`. */
export function childEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("STEERABLE_")));
  return { ...env, PYTHONIOENCODING: "utf-8", ...extra };
}

export interface Started {
  readonly sidecar: SidecarClient;
  readonly workspace: string;
  readonly stateDir: string;
  readonly logs: SidecarLogEntry[];
}

let scripts = 0;

/** A fresh directory with a workspace and a state directory in it. */
export function scratch(): { root: string; workspace: string; stateDir: string } {
  const root = mkdtempSync(join(tmpdir(), "steerable-host-"));
  const workspace = join(root, "ws");
  mkdirSync(workspace);
  writeFileSync(join(workspace, "notes.txt"), "alpha\nbeta\n");
  return { root, workspace, stateDir: join(root, "state") };
}

/** Start a sidecar whose scripted model plays `turns`. */
export async function startSidecar(
  turns: unknown[],
  options: Partial<SidecarStartOptions> & { extraEnv?: Record<string, string>; dirs?: ReturnType<typeof scratch> } = {},
): Promise<Started> {
  const dirs = options.dirs ?? scratch();
  const script = join(dirs.root, `turns-${scripts++}.json`);
  writeFileSync(script, JSON.stringify(turns));
  const logs: SidecarLogEntry[] = [];
  const { extraEnv, dirs: _, ...rest } = options;
  const sidecar = await SidecarClient.start({
    command: COMMAND,
    workspace: dirs.workspace,
    stateDir: dirs.stateDir,
    args: ["--no-plugins"],
    env: childEnv({ STEERABLE_PROVIDER: "scripted", STEERABLE_SCRIPT: script, ...extraEnv }),
    logger: (entry) => logs.push(entry),
    ...rest,
  });
  return { sidecar, workspace: dirs.workspace, stateDir: dirs.stateDir, logs };
}
