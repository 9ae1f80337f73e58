import { EngineInputError } from '../engine-worker';
import { LOCAL_EMBEDDING_DIMENSIONS, TextEmbeddingEngine } from './text-embedding.engine';

function cosine(a: number[], b: number[]): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i] * b[i];
    na += a[i] * a[i];
    nb += b[i] * b[i];
  }
  return dot / Math.sqrt(na * nb);
}

describe('TextEmbeddingEngine (USE lite, real model)', () => {
  const engine = TextEmbeddingEngine.shared();
  afterAll(() => engine.close());

  it('embeds sentences into 512 dimensions where paraphrases are closer than unrelated text', async () => {
    const started = Date.now();
    const [cat, kitten, stocks] = await engine.embed(['The cat sits on the mat.', 'A kitten is resting on a rug.', 'Stock markets fell sharply today.']);
    const firstMs = Date.now() - started;
    for (const v of [cat, kitten, stocks]) expect(v).toHaveLength(LOCAL_EMBEDDING_DIMENSIONS);
    expect(cosine(cat, kitten)).toBeGreaterThan(cosine(cat, stocks) + 0.2);
    const again = Date.now();
    const [single] = await engine.embed(['The cat sits on the mat.']);
    console.log(`embeddings: first call (with load, 3 inputs) ${firstMs} ms, warm single ${Date.now() - again} ms`);
    // Same text, same vector: the model is deterministic.
    expect(cosine(single, cat)).toBeGreaterThan(0.9999);
  });

  it('rejects empty inputs and returns nothing for no inputs', async () => {
    await expect(engine.embed(['ok', '  '])).rejects.toBeInstanceOf(EngineInputError);
    expect(await engine.embed([])).toEqual([]);
  });
});
