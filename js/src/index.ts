// the tool contract
export {
  DEFAULT_TOOL_MODE,
  OPEN_WORLD_READS,
  TOOL_MODES,
  type ToolMode,
  decideToolMode,
  isToolMode,
  requiresConsent,
} from "./modes.js";
export { isTerminalResult } from "./completion.js";
export {
  BM25,
  CAMEL_CASE_BOUNDARY,
  MAX_RESULTS_CEILING,
  MAX_RESULTS_DEFAULT,
  type RankOptions,
  type RankableTool,
  type RankedTool,
  type ToolExposure,
  ToolIndex,
  clampMaxResults,
  compareCodePoints,
  documentTokens,
  inSearchCorpus,
  rankTools,
  tokenizeName,
  tokenizeProse,
} from "./rank.js";

// the sidecar client
export {
  type InvokeOptions,
  type ParamsArgs,
  type RunOutcome,
  SidecarClient,
  type SidecarExit,
  type SidecarStartOptions,
} from "./client.js";
export { ChatHandle } from "./chat.js";
export { DEFAULT_TIMEOUTS_MS, type ReverseHandlers, type ReverseTimeouts } from "./reverse.js";
export { type SidecarLogEntry, type SidecarLogger, defaultLogger } from "./stderr.js";
export {
  type HandlerContext,
  JsonRpcPeer,
  type MethodHandler,
  type PeerLog,
  type PeerOptions,
  type RequestOptions,
} from "./peer.js";

// errors: RemoteError and the classes its codes name (ConfigError, PluginStateError...)
export { InvalidParamsError, PeerClosedError, RemoteError, RequestTimeoutError } from "./errors-base.js";
export { malformedResult, remoteError } from "./errors.js";
export * from "./generated/errors.js";

// the wire types, generated from spec/*.schema.json
export * from "./generated/protocol.js";
