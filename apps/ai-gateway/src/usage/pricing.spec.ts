import { DEFAULT_MODELS } from '@app/llm';
import { chatCost, tokenCost, yuanText } from './pricing';

describe('pricing', () => {
  it('prices embeddings from the contract table', () => {
    expect(tokenCost(DEFAULT_MODELS['text-embedding-v3'], { promptTokens: 1000, completionTokens: 0 })).toBe(0.0001);
    expect(tokenCost(DEFAULT_MODELS['text-embedding-v3-small'], { promptTokens: 2000, completionTokens: 0 })).toBe(
      0.0001,
    );
    expect(tokenCost(DEFAULT_MODELS['text-embedding-v3-large'], { promptTokens: 500, completionTokens: 0 })).toBe(
      0.0001,
    );
  });

  it('prices input and output tokens separately and keeps ten decimals', () => {
    expect(
      tokenCost({ price: { inputPer1k: 0.002, outputPer1k: 0.006 } }, { promptTokens: 3, completionTokens: 7 }),
    ).toBe(0.000048);
    expect(yuanText(0.1 + 0.2)).toBe('0.3000000000');
  });

  it('prices audio tokens at the audio prices and a web search call once', () => {
    const price = { inputPer1k: 1, outputPer1k: 2, audioInputPer1k: 10, audioOutputPer1k: 20, webSearchPerCall: 0.5 };
    // 1000 prompt tokens of which 400 audio; 2000 completion tokens of which 1500 audio; one search.
    expect(
      chatCost(
        { price },
        {
          promptTokens: 1000,
          completionTokens: 2000,
          audioPromptTokens: 400,
          audioCompletionTokens: 1500,
          webSearchCalls: 1,
        },
      ),
    ).toBe(0.6 + 4 + 1 + 30 + 0.5);
    // No audio price for input: audio prompt tokens cost as text; no details: tokenCost's figure.
    expect(
      chatCost(
        { price: { inputPer1k: 1, outputPer1k: 2 } },
        { promptTokens: 1000, completionTokens: 0, audioPromptTokens: 400 },
      ),
    ).toBe(1);
    expect(chatCost({ price }, { promptTokens: 3, completionTokens: 7 })).toBe(
      tokenCost({ price }, { promptTokens: 3, completionTokens: 7 }),
    );
  });
});
