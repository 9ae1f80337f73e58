// file-type 16 is the last CommonJS major (17+ is ESM-only and cannot load under Jest here).
import { fromBuffer } from 'file-type';

export interface DetectedType {
  ext: string;
  mime: string;
}

/** The type by the file's magic bytes, never by its name or the client's Content-Type. */
export async function detectType(bytes: Buffer): Promise<DetectedType | null> {
  const t = await fromBuffer(bytes);
  return t ? { ext: t.ext, mime: t.mime } : null;
}

/** Inline display is safe only for raster images; everything else is served as an attachment. */
export function isInlineImage(mime: string): boolean {
  return ['image/png', 'image/jpeg', 'image/gif', 'image/webp', 'image/avif', 'image/bmp'].includes(mime);
}

/** The client's file name, kept only as a label: no path, no control characters, bounded. */
export function cleanOriginalName(name: string | undefined): string {
  const base = (name ?? '').split(/[\\/]/).pop() ?? '';
  // Drops C0 controls (below \x20), DEL (\x7f) and '"': every UTF-16 unit outside the kept ranges.
  const cleaned = base
    .replace(/[^\x20\x21\x23-\x7e\x80-\uffff]/g, '')
    .replace(/^\.+/, '')
    .trim()
    .slice(0, 255);
  return cleaned || 'file';
}
