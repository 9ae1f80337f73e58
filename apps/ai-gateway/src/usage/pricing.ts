import { ModelInfo } from '@app/llm';

export interface TokenUnits {
  promptTokens: number;
  completionTokens: number;
}

/** Yuan for a token-priced call, from the model's per-1000-token prices. */
export function tokenCost(model: Pick<ModelInfo, 'price'>, units: TokenUnits): number {
  return roundYuan(
    (units.promptTokens / 1000) * model.price.inputPer1k + (units.completionTokens / 1000) * model.price.outputPer1k,
  );
}

/** A chat answer's usage with OpenAI's optional details (audio tokens are part of the prompt and completion counts). */
export interface ChatUsageUnits extends TokenUnits {
  audioPromptTokens?: number;
  audioCompletionTokens?: number;
  /** Calls that sent `web_search_options` (0 or 1). */
  webSearchCalls?: number;
}

/**
 * Yuan for a chat call: text tokens at the token prices, audio tokens at the model's audio prices
 * (prompt audio at `inputPer1k` when none is declared), plus `webSearchPerCall` per search call.
 */
export function chatCost(model: Pick<ModelInfo, 'price'>, units: ChatUsageUnits): number {
  const p = model.price;
  const audioIn = Math.min(units.audioPromptTokens ?? 0, units.promptTokens);
  const audioOut = Math.min(units.audioCompletionTokens ?? 0, units.completionTokens);
  return roundYuan(
    ((units.promptTokens - audioIn) / 1000) * p.inputPer1k +
      (audioIn / 1000) * (p.audioInputPer1k ?? p.inputPer1k) +
      ((units.completionTokens - audioOut) / 1000) * p.outputPer1k +
      (audioOut / 1000) * (p.audioOutputPer1k ?? p.outputPer1k) +
      (units.webSearchCalls ?? 0) * (p.webSearchPerCall ?? 0),
  );
}

/** Ten decimals, the ledger's precision. */
export function roundYuan(x: number): number {
  return Math.round(x * 1e10) / 1e10;
}

/** Exact decimal text for numeric columns. */
export function yuanText(x: number): string {
  return roundYuan(x).toFixed(10);
}
