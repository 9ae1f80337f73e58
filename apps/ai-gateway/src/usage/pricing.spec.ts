import { DEFAULT_MODELS } from '@app/llm';
import { tokenCost, yuanText } from './pricing';

describe('pricing', () => {
  it('prices embeddings from the contract table', () => {
    expect(tokenCost(DEFAULT_MODELS['text-embedding-v3'], { promptTokens: 1000, completionTokens: 0 })).toBe(0.0001);
    expect(tokenCost(DEFAULT_MODELS['text-embedding-v3-small'], { promptTokens: 2000, completionTokens: 0 })).toBe(0.0001);
    expect(tokenCost(DEFAULT_MODELS['text-embedding-v3-large'], { promptTokens: 500, completionTokens: 0 })).toBe(0.0001);
  });

  it('prices input and output tokens separately and keeps ten decimals', () => {
    expect(tokenCost({ price: { inputPer1k: 0.002, outputPer1k: 0.006 } }, { promptTokens: 3, completionTokens: 7 })).toBe(0.000048);
    expect(yuanText(0.1 + 0.2)).toBe('0.3000000000');
  });
});
