// Real media made or shipped for tests (dev dependencies only; never imported by app code).
import * as path from 'path';

let fontRegistered = false;

/** A white PNG with each line drawn in black in Noto Sans SC (a CJK font shipped on npm). */
export function renderTextPng(
  lines: string[],
  opts: { width?: number; height?: number; fontSize?: number } = {},
): Buffer {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- a dev dependency, loaded only when a test draws
  const { createCanvas, GlobalFonts } = require('@napi-rs/canvas') as typeof import('@napi-rs/canvas');
  if (!fontRegistered) {
    GlobalFonts.registerFromPath(
      require.resolve('@expo-google-fonts/noto-sans-sc/400Regular/NotoSansSC_400Regular.ttf'),
      'Noto Sans SC Test',
    );
    fontRegistered = true;
  }
  const fontSize = opts.fontSize ?? 40;
  const width = opts.width ?? 720;
  const height = opts.height ?? Math.round(fontSize * 2 * lines.length + fontSize);
  const canvas = createCanvas(width, height);
  const g = canvas.getContext('2d');
  g.fillStyle = '#ffffff';
  g.fillRect(0, 0, width, height);
  g.fillStyle = '#000000';
  g.font = `${fontSize}px "Noto Sans SC Test"`;
  lines.forEach((line, i) => g.fillText(line, fontSize, Math.round(fontSize * 1.6 + i * fontSize * 2)));
  return canvas.toBuffer('image/png');
}

/** A plain PNG of one colour (no text, no faces). */
export function renderBlankPng(width = 320, height = 240, colour = '#88aacc'): Buffer {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- a dev dependency, loaded only when a test draws
  const { createCanvas } = require('@napi-rs/canvas') as typeof import('@napi-rs/canvas');
  const canvas = createCanvas(width, height);
  const g = canvas.getContext('2d');
  g.fillStyle = colour;
  g.fillRect(0, 0, width, height);
  return canvas.toBuffer('image/png');
}

/**
 * A JPEG screenshot shipped in `@vladmandic/human` (800x718): a row of five large face portraits at
 * y 345..500 (x 5..795) above a caption, plus group photos with small faces at the top.
 */
export function facesPhotoPath(): string {
  return path.join(path.dirname(require.resolve('@vladmandic/human')), '..', 'assets', 'screenshot-facedetect.jpg');
}
