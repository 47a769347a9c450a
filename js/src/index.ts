// the tool contract

export { ChatHandle } from "./chat.js";
// the sidecar client
export {
  type InvokeOptions,
  type ParamsArgs,
  type RunOutcome,
  SidecarClient,
  type SidecarExit,
  type SidecarStartOptions,
} from "./client.js";
export { isTerminalResult } from "./completion.js";
export { malformedResult, remoteError } from "./errors.js";
// errors: RemoteError and the classes its codes name (ConfigError, PluginStateError...)
export { HostError, InvalidParamsError, PeerClosedError, RemoteError, RequestTimeoutError } from "./errors-base.js";
export * from "./generated/errors.js";
// the wire types, generated from spec/*.schema.json
export * from "./generated/protocol.js";
export {
  DEFAULT_TOOL_MODE,
  decideToolMode,
  isToolMode,
  OPEN_WORLD_READS,
  requiresConsent,
  TOOL_MODES,
  type ToolMode,
} from "./modes.js";
export {
  type HandlerContext,
  JsonRpcPeer,
  type MethodHandler,
  type PeerLog,
  type PeerOptions,
  type RequestOptions,
} from "./peer.js";
export {
  BM25,
  CAMEL_CASE_BOUNDARY,
  clampMaxResults,
  compareCodePoints,
  documentTokens,
  inSearchCorpus,
  MAX_RESULTS_CEILING,
  MAX_RESULTS_DEFAULT,
  type RankableTool,
  type RankedTool,
  type RankOptions,
  rankTools,
  type ToolExposure,
  ToolIndex,
  tokenizeName,
  tokenizeProse,
} from "./rank.js";
export { DEFAULT_TIMEOUTS_MS, type ReverseHandlers, type ReverseTimeouts } from "./reverse.js";
export { defaultLogger, type SidecarLogEntry, type SidecarLogger } from "./stderr.js";
