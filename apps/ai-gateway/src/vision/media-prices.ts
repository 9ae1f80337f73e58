// Per-use prices of the media endpoints, in yuan, as the contract lists them.
import { roundYuan } from '../usage/pricing';

export const MEDIA_PRICES = {
  /** labels and faces: "image recognition", per call. */
  imageRecognition: 0.01,
  /** objects: "object detection", per call. */
  objectDetection: 0.02,
  /** text: "OCR", per call. */
  ocr: 0.01,
  /** per 1024x1024 image; other sizes scale with their pixel count, never below a 512x512 quarter. */
  imageGeneration1024: 0.1,
  speechRecognitionPerMinute: 0.02,
  speechSynthesisPer1000Chars: 0.01,
  liveSpeechRecognitionPerMinute: 0.03,
} as const;

export type VisionFeature = 'labels' | 'objects' | 'text' | 'faces';

/** Each requested feature is charged once: labels and faces as image recognition, objects as detection, text as OCR. */
export function recognitionCost(features: VisionFeature[]): number {
  const price: Record<VisionFeature, number> = {
    labels: MEDIA_PRICES.imageRecognition,
    faces: MEDIA_PRICES.imageRecognition,
    objects: MEDIA_PRICES.objectDetection,
    text: MEDIA_PRICES.ocr,
  };
  return roundYuan([...new Set(features)].reduce((sum, f) => sum + price[f], 0));
}

/** The largest size an image model answers for `size: "auto"` (1792x1024): what a request is reserved at. */
export const AUTO_SIZE_BOUND = '1792x1024';

/** `per1024`: the model's price per 1024x1024 image (media catalog); `size` WxH, `auto` reserved at AUTO_SIZE_BOUND. */
export function imageGenerationCost(
  size: string,
  n: number,
  per1024: number = MEDIA_PRICES.imageGeneration1024,
): number {
  const [w, h] = (size === 'auto' ? AUTO_SIZE_BOUND : size).split('x').map(Number);
  const factor = Math.max(0.25, (w * h) / (1024 * 1024));
  return roundYuan(per1024 * factor * n);
}

/** Billed pro rata by the second (rounded up), from the measured duration; `perMinute` from the model's catalog entry. */
export function transcriptionCost(seconds: number, live = false, perMinute?: number): number {
  perMinute ??= live ? MEDIA_PRICES.liveSpeechRecognitionPerMinute : MEDIA_PRICES.speechRecognitionPerMinute;
  return roundYuan((Math.ceil(seconds) / 60) * perMinute);
}

export function synthesisCost(characters: number): number {
  return roundYuan((characters / 1000) * MEDIA_PRICES.speechSynthesisPer1000Chars);
}
