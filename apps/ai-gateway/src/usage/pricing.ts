import { ModelInfo } from '@app/llm';

export interface TokenUnits {
  promptTokens: number;
  completionTokens: number;
}

/** Yuan for a token-priced call, from the model's per-1000-token prices. */
export function tokenCost(model: Pick<ModelInfo, 'price'>, units: TokenUnits): number {
  return roundYuan((units.promptTokens / 1000) * model.price.inputPer1k + (units.completionTokens / 1000) * model.price.outputPer1k);
}

/** Ten decimals, the ledger's precision. */
export function roundYuan(x: number): number {
  return Math.round(x * 1e10) / 1e10;
}

/** Exact decimal text for numeric columns. */
export function yuanText(x: number): string {
  return roundYuan(x).toFixed(10);
}
