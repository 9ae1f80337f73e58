import { dirname, join } from 'node:path';

import { EngineCallOptions, EngineLimiter } from '../engine-limiter';
import { EngineWorker } from '../engine-worker';
import { normalizePng } from '../image/image-decoder';

export interface RecognizedText {
  content: string;
  confidence: number;
  /** Axis-aligned box around the line, in the original image's pixels. */
  bounding_box: { x: number; y: number; width: number; height: number };
}

/** Languages the PaddleOCR Chinese model reads: simplified Chinese with Latin letters and digits. */
export const OCR_LANGUAGES = ['zh-CN', 'zh', 'zh-Hans', 'en', 'en-US', 'en-GB'] as const;

export function isOcrLanguage(language: string): boolean {
  return (OCR_LANGUAGES as readonly string[]).some((l) => l.toLowerCase() === language.toLowerCase());
}

const BODY = `
async function init(data) {
  // OpenCV's WebAssembly compiles asynchronously after import; the OCR package uses \`cv.Mat\` without waiting for it,
  // so on a busy machine the first detection found \`cv.Mat is not a constructor\`. Wait until the runtime is ready.
  const { default: cv } = await importFile(data.opencv);
  if (typeof cv.Mat !== 'function') {
    await new Promise((resolve) => {
      const previous = cv.onRuntimeInitialized;
      cv.onRuntimeInitialized = () => {
        if (typeof previous === 'function') previous();
        resolve();
      };
    });
  }
  // Importing the package registers its Node backend. Its two stages are then held apart so the lines are
  // recognized a slice per call (models/ of @gutenye/ocr-common, the very modules the package's Ocr runs).
  const { default: Ocr } = await importFile(data.entry);
  const { Detection, Recognition } = await importFile(data.models);
  const detection = await Detection.create({});
  const recognition = await Recognition.create({});
  const ocr = new Ocr({ detection, recognition });
  // An image's line images and the text of those read so far, by job.
  const jobs = new Map();
  const job = (id) => {
    const j = jobs.get(id);
    if (!j) throw new Error('this OCR job is gone');
    return j;
  };
  return {
    // The package's own one-call path: the reference the engine's spec compares the sliced path with.
    async detect(bytes) {
      const lines = await ocr.detect(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
      return lines.map((l) => ({ text: l.text, mean: l.mean, box: l.box }));
    },
    async detectLines(bytes, id) {
      const lineImages = await detection.run(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
      jobs.set(id, { lineImages, decoded: [] });
      return lineImages.length;
    },
    // Recognition.run's steps for each line, as it takes them: resized to 48 pixels high, to input, the
    // model, decoded to text (a model output is ~3 MB a line; its text is kept, as run keeps it).
    async recognizeLines(id, start, end) {
      const j = job(id);
      for (let k = start; k < end; k++) {
        const image = await j.lineImages[k].image.resize({ height: 48 });
        const output = await recognition.runModel({ modelData: recognition.imageToInput(image, {}), onnxOptions: {} });
        j.decoded[k] = recognition.decodeText(output);
      }
      return end;
    },
    // Recognition.run itself over the lines already read (its boxes and grouping of lines into rows), its
    // resize, input, model and decoding steps answered from them. Calls run one at a time in this worker,
    // so nothing else sees the instance while those methods are shadowed.
    async finishLines(id) {
      const j = job(id);
      jobs.delete(id);
      recognition.imageToInput = (k) => k;
      recognition.runModel = async ({ modelData }) => modelData;
      recognition.decodeText = (k) => j.decoded[k];
      try {
        const views = j.lineImages.map((l, k) => ({ box: l.box, image: { resize: async () => k } }));
        const lines = await recognition.run(views);
        return lines.map((l) => ({ text: l.text, mean: l.mean, box: l.box }));
      } finally {
        delete recognition.imageToInput;
        delete recognition.runModel;
        delete recognition.decodeText;
      }
    },
    async endJob(id) {
      jobs.delete(id);
      return null;
    },
  };
}
`;

/** OCR, Chinese and English, with PaddleOCR v4 ONNX models (`@gutenye/ocr-node`, ESM, hence a worker). */
export class OcrEngine {
  private static instance: OcrEngine | null = null;
  private nextJob = 1;
  private readonly worker = new EngineWorker('ocr', BODY, {
    entry: require.resolve('@gutenye/ocr-node'),
    // The copy of @gutenye/ocr-common the OCR package itself imports (where it registered its backend).
    models: join(
      dirname(require.resolve('@gutenye/ocr-common', { paths: [dirname(require.resolve('@gutenye/ocr-node'))] })),
      'models',
      'index.js',
    ),
    // The copy of OpenCV the OCR package itself imports (a dependency of @gutenye/ocr-common).
    opencv: require.resolve('@techstark/opencv-js', { paths: [dirname(require.resolve('@gutenye/ocr-common'))] }),
  });

  /** One engine per process: the models are large. */
  static shared(): OcrEngine {
    return (OcrEngine.instance ??= new OcrEngine());
  }

  get loaded(): boolean {
    return this.worker.started;
  }

  /**
   * Text lines in reading order, empty lines dropped. Throws EngineInputError for an undecodable image.
   * Detection is one worker call; the lines it found are then recognized OCR_SLICE_LINES per call (a dense
   * page of 400 lines took 35 to 50 s in one call on the CI machines, ~80 ms a line), each under the engine
   * limiter, so another key's image waits for at most a slice, and a caller that leaves stops the work
   * within one. The image is opened as engine work of several steps (EngineLimiter.openWork).
   */
  async recognize(
    image: Buffer,
    maxPixels: number,
    minConfidence = 0.5,
    call: EngineCallOptions = {},
  ): Promise<RecognizedText[]> {
    // Opened first: an image refused for the key's or the replica's share is refused before it is decoded.
    const close = EngineLimiter.shared().openWork(call.key);
    try {
      const { png, scale } = await normalizePng(image, maxPixels, undefined, call);
      return toRecognized(await this.recognizeLines(png, call), scale, minConfidence);
    } finally {
      close();
    }
  }

  /** The worker's stages: detection, the lines a slice per call, then the library's own decoding of them. */
  private async recognizeLines(png: Buffer, call: EngineCallOptions): Promise<RawLine[]> {
    const job = this.nextJob++;
    let finished = false;
    try {
      const count = await this.worker.call<number>('detectLines', [png, job], [], call);
      const later = { ...call, continued: true };
      for (let start = 0; start < count; start += OCR_SLICE_LINES)
        await this.worker.call('recognizeLines', [job, start, Math.min(count, start + OCR_SLICE_LINES)], [], later);
      const lines = await this.worker.call<RawLine[]>('finishLines', [job], [], later);
      finished = true;
      return lines;
    } finally {
      // A job left unfinished frees its line images in the worker.
      if (!finished) this.worker.post('endJob', [job]);
    }
  }

  /** `recognize` through the package's own one-call path (`ocr.detect`): the reference for the spec. */
  async recognizeWhole(image: Buffer, maxPixels: number, minConfidence = 0.5): Promise<RecognizedText[]> {
    const { png, scale } = await normalizePng(image, maxPixels);
    return toRecognized(await this.worker.call<RawLine[]>('detect', [png]), scale, minConfidence);
  }

  close(): Promise<void> {
    return this.worker.close();
  }
}

/** Lines recognized per worker call: about half a second of the model on the CI machines. */
export const OCR_SLICE_LINES = 8;

interface RawLine {
  text: string;
  mean: number;
  box: number[][];
}

/** Lines with text and enough confidence, their boxes in the original image's pixels. */
function toRecognized(lines: RawLine[], scale: number, minConfidence: number): RecognizedText[] {
  return lines
    .filter((l) => l.text.trim() !== '' && l.mean >= minConfidence)
    .map((l) => {
      const xs = l.box.map((p) => p[0] * scale);
      const ys = l.box.map((p) => p[1] * scale);
      const x = Math.max(0, Math.min(...xs));
      const y = Math.max(0, Math.min(...ys));
      return {
        content: l.text.trim(),
        confidence: round(l.mean),
        bounding_box: {
          x: Math.round(x),
          y: Math.round(y),
          width: Math.round(Math.max(...xs) - x),
          height: Math.round(Math.max(...ys) - y),
        },
      };
    });
}

function round(n: number): number {
  return Math.round(n * 1000) / 1000;
}
