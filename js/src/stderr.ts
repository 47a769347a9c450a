/**
 * The sidecar's stderr: split into lines, each handed to a logger with the level its Python
 * logging format names (`2026-12-02 10:00:00,123 WARNING steerable_sidecar.rpc._peer: ...`; a
 * traceback's lines keep the level of the line that started it); the last 64 Ki characters are kept.
 */

/** One line for a {@link SidecarLogger}. */
export interface SidecarLogEntry {
  /** `sidecar`: a line of its stderr; `client`: this package's own warning. */
  readonly source: "sidecar" | "client";
  readonly level: "debug" | "info" | "warning" | "error";
  readonly message: string;
}

/** Receives the sidecar's logs and the client's warnings; must not throw. */
export type SidecarLogger = (entry: SidecarLogEntry) => void;

/** Writes each line to this process's stderr (sidecar lines as they are). */
export const defaultLogger: SidecarLogger = (entry) => {
  process.stderr.write(entry.source === "sidecar" ? `${entry.message}\n` : `steerable host: ${entry.message}\n`);
};

const TAIL_CHARS = 64 * 1024;
const LEVEL = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (DEBUG|INFO|WARNING|ERROR|CRITICAL) /;
const LEVELS = { DEBUG: "debug", INFO: "info", WARNING: "warning", ERROR: "error", CRITICAL: "error" } as const;

/** @internal Feeds a logger that does not throw (the client wraps the one it is given). */
export class StderrLines {
  readonly #logger: SidecarLogger;
  readonly #decoder = new TextDecoder("utf-8");
  #partial = "";
  #tail = "";
  #level: SidecarLogEntry["level"] = "warning";

  constructor(logger: SidecarLogger) {
    this.#logger = logger;
  }

  get tail(): string {
    return this.#tail;
  }

  lastLines(count: number): string {
    return this.tail.trimEnd().split("\n").slice(-count).join("\n");
  }

  feed(chunk: Buffer): void {
    const text = this.#decoder.decode(chunk, { stream: true });
    this.#tail =
      this.#tail.length + text.length > TAIL_CHARS ? (this.#tail + text).slice(-TAIL_CHARS) : this.#tail + text;
    let start = 0;
    for (let at = text.indexOf("\n"); at !== -1; at = text.indexOf("\n", start)) {
      const room = TAIL_CHARS - this.#partial.length; // a line is kept to its first 64 Ki characters
      this.#line(room > 0 ? this.#partial + text.slice(start, Math.min(at, start + room)) : this.#partial);
      this.#partial = "";
      start = at + 1;
    }
    // a line that never ends (a progress bar redrawn with \r) is kept to its first 64 Ki characters too
    if (this.#partial.length < TAIL_CHARS)
      this.#partial += text.slice(start, start + TAIL_CHARS - this.#partial.length);
  }

  #line(line: string): void {
    const level = LEVEL.exec(line)?.[1] as keyof typeof LEVELS | undefined;
    if (level !== undefined) this.#level = LEVELS[level];
    this.#logger({ source: "sidecar", level: this.#level, message: line.replace(/\r$/, "") });
  }
}
