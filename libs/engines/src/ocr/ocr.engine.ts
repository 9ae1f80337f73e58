import { dirname } from 'node:path';

import type { EngineCallOptions } from '../engine-limiter';
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
  const { default: Ocr } = await importFile(data.entry);
  const ocr = await Ocr.create();
  return {
    async detect(bytes) {
      const lines = await ocr.detect(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
      return lines.map((l) => ({ text: l.text, mean: l.mean, box: l.box }));
    },
  };
}
`;

/** OCR, Chinese and English, with PaddleOCR v4 ONNX models (`@gutenye/ocr-node`, ESM, hence a worker). */
export class OcrEngine {
  private static instance: OcrEngine | null = null;
  private readonly worker = new EngineWorker('ocr', BODY, {
    entry: require.resolve('@gutenye/ocr-node'),
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

  /** Text lines in reading order, empty lines dropped. Throws EngineInputError for an undecodable image. */
  async recognize(
    image: Buffer,
    maxPixels: number,
    minConfidence = 0.5,
    call: EngineCallOptions = {},
  ): Promise<RecognizedText[]> {
    const { png, scale } = await normalizePng(image, maxPixels, undefined, call);
    const lines = await this.worker.call<Array<{ text: string; mean: number; box: number[][] }>>(
      'detect',
      [png],
      [],
      call,
    );
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

  close(): Promise<void> {
    return this.worker.close();
  }
}

function round(n: number): number {
  return Math.round(n * 1000) / 1000;
}
