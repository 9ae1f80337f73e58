import { EngineInputError, EngineWorker } from '../engine-worker';
import { LOCAL_EMBEDDING_DIMENSIONS, TextEmbeddingEngine, textEmbeddingWorker } from './text-embedding.engine';

/**
 * Runs before the engine's code in its worker: the WASM backend cannot finish starting while the
 * model is being loaded, as on a loaded machine where reading the model outran the WASM start. It
 * starts once tf.ready() is awaited with no model load under way, or once the model load ended.
 */
const WASM_STARTS_LATE = `
{
  let open;
  const gate = new Promise((r) => (open = r));
  const instantiate = WebAssembly.instantiate;
  WebAssembly.instantiate = (...args) => gate.then(() => instantiate(...args));
  const engine = require(workerData.core).engine();
  const ready = engine.ready.bind(engine);
  let loading = false;
  engine.ready = () => {
    setImmediate(() => loading || open());
    return ready();
  };
  const { modelSource } = require(workerData.model);
  require.cache[workerData.model].exports = {
    modelSource: (...args) => {
      loading = true;
      return modelSource(...args).finally(open);
    },
  };
}
`;

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
    const [cat, kitten, stocks] = await engine.embed([
      'The cat sits on the mat.',
      'A kitten is resting on a rug.',
      'Stock markets fell sharply today.',
    ]);
    const firstMs = Date.now() - started;
    for (const v of [cat, kitten, stocks]) expect(v).toHaveLength(LOCAL_EMBEDDING_DIMENSIONS);
    expect(cosine(cat, kitten)).toBeGreaterThan(cosine(cat, stocks) + 0.2);
    const again = Date.now();
    const [single] = await engine.embed(['The cat sits on the mat.']);
    console.log(`embeddings: first call (with load, 3 inputs) ${firstMs} ms, warm single ${Date.now() - again} ms`);
    // Same text, same vector: the model is deterministic.
    expect(cosine(single, cat)).toBeGreaterThan(0.9999);
  });

  it('loads when the WASM backend starts after the model files could have been read', async () => {
    const { body, data } = textEmbeddingWorker();
    const slow = new EngineWorker('embeddings', WASM_STARTS_LATE + body, data);
    try {
      const [v] = await slow.call<Float32Array[]>('embed', [['The cat sits on the mat.']]);
      expect(v).toHaveLength(LOCAL_EMBEDDING_DIMENSIONS);
    } finally {
      await slow.close();
    }
  });

  it('rejects empty inputs and returns nothing for no inputs', async () => {
    await expect(engine.embed(['ok', '  '])).rejects.toBeInstanceOf(EngineInputError);
    expect(await engine.embed([])).toEqual([]);
  });
});
