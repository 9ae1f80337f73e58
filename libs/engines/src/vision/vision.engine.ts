import * as path from 'path';
import type { EngineCallOptions } from '../engine-limiter';
import { EngineWorker } from '../engine-worker';
import { decodeRgb } from '../image/image-decoder';

export interface BoundingBox {
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface DetectedObject {
  name: string;
  confidence: number;
  bounding_box: BoundingBox;
}

export interface DetectedFace {
  confidence: number;
  bounding_box: BoundingBox;
}

export interface ImageLabel {
  name: string;
  confidence: number;
}

export interface VisionResult {
  faces?: DetectedFace[];
  objects?: DetectedObject[];
  labels?: ImageLabel[];
}

export interface VisionOptions extends EngineCallOptions {
  faces: boolean;
  objects: boolean;
  labels: boolean;
  maxPixels: number;
  /** Detections below this are dropped (the face model reports ~0.2 for some non-faces). */
  minConfidence?: number;
}

// Runs in the worker: tfjs-core + the WASM backend + Human's own models from its package folder.
const BODY = `
async function init(data) {
  const fs = require('fs');
  const path = require('path');
  const tf = require(data.tfjsCore);
  const { Human } = require(data.human);
  // tfjs' WASM backend has no file:// loader in Node: read model.json and its weight shards from disk.
  tf.io.registerLoadRouter((url) => {
    const u = Array.isArray(url) ? url[0] : url;
    if (typeof u !== 'string' || !u.startsWith('file://')) return null;
    const file = u.slice('file://'.length);
    return {
      load: async () => {
        const json = JSON.parse(fs.readFileSync(file, 'utf8'));
        const weightSpecs = [];
        const shards = [];
        for (const group of json.weightsManifest) {
          weightSpecs.push(...group.weights);
          for (const p of group.paths) shards.push(fs.readFileSync(path.join(path.dirname(file), p)));
        }
        const weights = Buffer.concat(shards);
        return {
          modelTopology: json.modelTopology, format: json.format, generatedBy: json.generatedBy,
          convertedBy: json.convertedBy, signature: json.signature, userDefinedMetadata: json.userDefinedMetadata,
          weightSpecs, weightData: weights.buffer.slice(weights.byteOffset, weights.byteOffset + weights.byteLength),
        };
      },
    };
  });
  const human = new Human({
    backend: 'wasm', wasmPath: data.wasmDir, modelBasePath: 'file://' + data.modelsDir,
    debug: false, cacheSensitivity: 0, cacheModels: false, filter: { enabled: false },
    face: {
      enabled: true,
      detector: { rotation: false, maxDetected: 50, minConfidence: 0.2, return: false },
      mesh: { enabled: false }, iris: { enabled: false }, emotion: { enabled: false }, description: { enabled: false },
      antispoof: { enabled: false }, liveness: { enabled: false }, attention: { enabled: false },
    },
    object: { enabled: true, minConfidence: 0.2, maxDetected: 50 },
    body: { enabled: false }, hand: { enabled: false }, gesture: { enabled: false }, segmentation: { enabled: false },
  });
  await human.load();
  return {
    async tensors() {
      return tf.memory().numTensors;
    },
    async detect(rgb, width, height, wantFaces, wantObjects) {
      const input = tf.tensor3d(rgb, [height, width, 3], 'int32');
      try {
        const result = await human.detect(input, { face: { enabled: wantFaces }, object: { enabled: wantObjects } });
        if (result.error) throw new Error(result.error);
        return {
          faces: result.face.map((f) => ({ score: f.score, box: f.box })),
          objects: result.object.map((o) => ({ label: o.label, score: o.score, box: o.box })),
        };
      } finally {
        input.dispose();
      }
    },
  };
}
`;

/**
 * Faces (BlazeFace) and COCO objects (CenterNet) with `@vladmandic/human` on the tfjs WASM backend.
 * Labels are the distinct object classes found (plus "face"), each with its best confidence:
 * no separate whole-image classifier ships on npm.
 */
export class VisionEngine {
  private static instance: VisionEngine | null = null;
  private readonly worker: EngineWorker;

  constructor() {
    const humanDist = path.dirname(require.resolve('@vladmandic/human'));
    this.worker = new EngineWorker('vision', BODY, {
      tfjsCore: require.resolve('@tensorflow/tfjs-core'),
      human: path.join(humanDist, 'human.node-wasm.js'),
      modelsDir: path.join(humanDist, '..', 'models') + path.sep,
      wasmDir: path.dirname(require.resolve('@tensorflow/tfjs-backend-wasm')) + path.sep,
    });
  }

  /** One engine per process. */
  static shared(): VisionEngine {
    return (VisionEngine.instance ??= new VisionEngine());
  }

  get loaded(): boolean {
    return this.worker.started;
  }

  async detect(image: Buffer, options: VisionOptions): Promise<VisionResult> {
    const min = options.minConfidence ?? 0.5;
    const call = { key: options.key, signal: options.signal };
    const rgb = await decodeRgb(image, options.maxPixels, undefined, call);
    const wantObjects = options.objects || options.labels;
    const raw = await this.worker.call<{
      faces: Array<{ score: number; box: number[] }>;
      objects: Array<{ label: string; score: number; box: number[] }>;
    }>('detect', [rgb.data, rgb.width, rgb.height, options.faces || options.labels, wantObjects], [], call);
    const box = (b: number[]): BoundingBox => ({
      x: Math.max(0, Math.round(b[0] * rgb.scale)),
      y: Math.max(0, Math.round(b[1] * rgb.scale)),
      width: Math.round(b[2] * rgb.scale),
      height: Math.round(b[3] * rgb.scale),
    });
    const faces = raw.faces
      .filter((f) => f.score >= min)
      .map((f) => ({ confidence: round(f.score), bounding_box: box(f.box) }));
    const objects = raw.objects
      .filter((o) => o.score >= min)
      .map((o) => ({ name: o.label, confidence: round(o.score), bounding_box: box(o.box) }));
    const result: VisionResult = {};
    if (options.faces) result.faces = faces.sort((a, b) => b.confidence - a.confidence);
    if (options.objects) result.objects = objects.sort((a, b) => b.confidence - a.confidence);
    if (options.labels) {
      const best = new Map<string, number>();
      for (const o of objects) best.set(o.name, Math.max(best.get(o.name) ?? 0, o.confidence));
      if (faces.length) best.set('face', Math.max(...faces.map((f) => f.confidence)));
      result.labels = [...best]
        .map(([name, confidence]) => ({ name, confidence }))
        .sort((a, b) => b.confidence - a.confidence);
    }
    return result;
  }

  /** Live tensors in the engine (a leak check: constant between calls). */
  tensorCount(): Promise<number> {
    return this.worker.call<number>('tensors');
  }

  close(): Promise<void> {
    return this.worker.close();
  }
}

function round(n: number): number {
  return Math.round(n * 1000) / 1000;
}
