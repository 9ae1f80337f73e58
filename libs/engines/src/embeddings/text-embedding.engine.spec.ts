import { EngineAbortedError } from '../engine-limiter';
import { EngineInputError, EngineWorker } from '../engine-worker';
import {
  embeddingSlices,
  LOCAL_EMBEDDING_DIMENSIONS,
  SLICE_CHARACTERS,
  SLICE_INPUTS,
  TextEmbeddingEngine,
  textEmbeddingWorker,
} from './text-embedding.engine';

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

  describe('big batches, a slice at a time', () => {
    afterEach(() => jest.restoreAllMocks());
    const batch = Array.from({ length: 40 }, (_, i) => `Sentence number ${i} about the weather and the sea.`);

    it('cuts by inputs and by characters, a longer input alone, covering every input once', () => {
      expect(embeddingSlices(batch)).toEqual([
        [0, 16],
        [16, 32],
        [32, 40],
      ]);
      const long = 'x'.repeat(SLICE_CHARACTERS / 2);
      expect(embeddingSlices([long, long, long, 'x'.repeat(SLICE_CHARACTERS + 1), 'y'])).toEqual([
        [0, 2],
        [2, 3],
        [3, 4],
        [4, 5],
      ]);
      expect(SLICE_INPUTS).toBe(16);
    });

    it('embeds a batch as one worker call per slice, to the same vectors as one input at a time', async () => {
      const calls = jest.spyOn(EngineWorker.prototype, 'call');
      const vectors = await engine.embed(batch);
      expect(calls.mock.calls.map(([, args]) => (args as string[][])[0].length)).toEqual([16, 16, 8]);
      expect(calls.mock.calls.map(([, , , opts]) => opts?.continued)).toEqual([false, true, true]);
      expect(vectors).toHaveLength(40);
      const [alone] = await engine.embed([batch[37]]);
      expect(cosine(alone, vectors[37])).toBeGreaterThan(0.9999);
    });

    it("another caller's input is embedded between a big batch's slices, not after all of them", async () => {
      let bigDone = false;
      const big = engine.embed(batch, { key: 'big' }).then(() => (bigDone = true));
      await engine.embed(['One short sentence.'], { key: 'small' });
      expect(bigDone).toBe(false);
      await big;
    });

    it('a caller that leaves stops the work within a slice', async () => {
      const calls = jest.spyOn(EngineWorker.prototype, 'call');
      const leaving = new AbortController();
      const left = engine.embed(batch, { signal: leaving.signal });
      await (calls.mock.results[0].value as Promise<unknown>);
      leaving.abort();
      await expect(left).rejects.toBeInstanceOf(EngineAbortedError);
      expect(calls.mock.calls.length).toBeLessThanOrEqual(2);
    });
  });
});
