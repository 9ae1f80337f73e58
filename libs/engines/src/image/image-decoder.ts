import type Sharp from 'sharp';
import { EngineCallOptions, limitEngineWork } from '../engine-limiter';
import { EngineInputError } from '../engine-worker';

let sharpLib: typeof Sharp | undefined;

/** libvips loads with the first image, not at boot: a chat-only gateway never pays for its memory. */
function sharp(input: Buffer, options: Sharp.SharpOptions): Sharp.Sharp {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded synchronously on first use, not at boot (see above)
  sharpLib ??= require('sharp') as typeof Sharp;
  return sharpLib(input, options);
}

export const IMAGE_FORMATS = ['jpeg', 'png', 'webp', 'gif', 'tiff', 'avif', 'heif'] as const;

export interface ImageInfo {
  format: string;
  /** Width and height as displayed (EXIF orientation applied). */
  width: number;
  height: number;
  /** Frames (pages) the image holds: more than 1 for an animated GIF or WebP. */
  frames: number;
}

export interface RgbImage {
  /** Packed RGB, 3 bytes a pixel, row-major. */
  data: Uint8Array;
  width: number;
  height: number;
  /** Factor from these pixels back to the original image's pixels (>= 1 when downscaled). */
  scale: number;
}

/**
 * Reads the header only and refuses anything that is not a still image within `maxPixels`,
 * so a small file that inflates to a huge bitmap ("decompression bomb") is never decoded.
 */
export async function inspectImage(bytes: Buffer, maxPixels: number): Promise<ImageInfo> {
  // Only raster formats reach libvips: SVG (external references), PDF and the rest are refused by their first bytes.
  if (!sniffRaster(bytes))
    throw new EngineInputError('unsupported image format: expected JPEG, PNG, WebP, GIF, TIFF, AVIF or HEIF');
  let meta: Sharp.Metadata;
  try {
    meta = await sharp(bytes, { limitInputPixels: false, failOn: 'error' }).metadata(); // header only; the cap is checked below
  } catch {
    throw new EngineInputError('image could not be decoded');
  }
  const format = meta.format ?? 'unknown';
  if (!(IMAGE_FORMATS as readonly string[]).includes(format) || !meta.width || !meta.height) {
    throw new EngineInputError(`unsupported image format: ${format}`);
  }
  if (meta.width * meta.height > maxPixels) {
    throw new EngineInputError(`image has ${meta.width}x${meta.height} pixels; at most ${maxPixels} allowed`);
  }
  const swapped = (meta.orientation ?? 1) >= 5;
  return {
    format,
    width: swapped ? meta.height : meta.width,
    height: swapped ? meta.width : meta.height,
    frames: meta.pages ?? 1,
  };
}

function sniffRaster(b: Buffer): boolean {
  if (b.length < 12) return false;
  const ascii = (from: number, to: number) => b.toString('latin1', from, to);
  return (
    (b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) || // JPEG
    b.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) || // PNG
    ascii(0, 4) === 'GIF8' ||
    (ascii(0, 4) === 'RIFF' && ascii(8, 12) === 'WEBP') ||
    ascii(0, 4) === 'II*\0' ||
    ascii(0, 4) === 'MM\0*' ||
    (ascii(4, 8) === 'ftyp' && /^(avif|avis|heic|heix|hevc|mif1|msf1)$/.test(ascii(8, 12))) // AVIF / HEIF
  );
}

/**
 * Decodes to RGB (EXIF orientation applied), shrunk to fit `maxSide` to bound inference memory.
 * The decode (libvips threads, up to `maxPixels` of bitmap) runs under the shared engine limiter.
 */
export async function decodeRgb(
  bytes: Buffer,
  maxPixels: number,
  maxSide = 1280,
  call: EngineCallOptions = {},
): Promise<RgbImage> {
  const info = await inspectImage(bytes, maxPixels);
  return limitEngineWork(call, () => decodeRgbNow(bytes, info, maxPixels, maxSide));
}

async function decodeRgbNow(bytes: Buffer, info: ImageInfo, maxPixels: number, maxSide: number): Promise<RgbImage> {
  try {
    const { data, info: out } = await sharp(bytes, { limitInputPixels: maxPixels, failOn: 'error' })
      .rotate()
      .resize({ width: maxSide, height: maxSide, fit: 'inside', withoutEnlargement: true })
      .removeAlpha()
      .toColourspace('srgb')
      .raw()
      .toBuffer({ resolveWithObject: true });
    return {
      data: new Uint8Array(data.buffer, data.byteOffset, data.byteLength),
      width: out.width,
      height: out.height,
      scale: info.width / out.width,
    };
  } catch {
    throw new EngineInputError('image could not be decoded');
  }
}

/** Re-encodes as PNG (orientation applied, no metadata, fitted in `maxSide`); the OCR engine reads this. */
export async function normalizePng(
  bytes: Buffer,
  maxPixels: number,
  maxSide = 2048,
  call: EngineCallOptions = {},
): Promise<{ png: Buffer; scale: number }> {
  const info = await inspectImage(bytes, maxPixels);
  return limitEngineWork(call, () => normalizePngNow(bytes, info, maxPixels, maxSide));
}

async function normalizePngNow(
  bytes: Buffer,
  info: ImageInfo,
  maxPixels: number,
  maxSide: number,
): Promise<{ png: Buffer; scale: number }> {
  try {
    const { data, info: out } = await sharp(bytes, { limitInputPixels: maxPixels, failOn: 'error' })
      .rotate()
      .resize({ width: maxSide, height: maxSide, fit: 'inside', withoutEnlargement: true })
      .png({ compressionLevel: 1 })
      .toBuffer({ resolveWithObject: true });
    return { png: data, scale: info.width / out.width };
  } catch {
    throw new EngineInputError('image could not be decoded');
  }
}
