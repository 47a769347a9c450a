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
