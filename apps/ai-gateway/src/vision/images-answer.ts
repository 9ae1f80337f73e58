import type { BulkPace } from '@app/llm';

/** Image bytes encoded per piece: a multiple of 3, so the pieces' base64 joins into the image's base64. */
export const B64_PIECE_BYTES = 3 * 64 * 1024;

/** Bytes of base64 per unit charged to the pace (as sliced-json.ts charges JSON bytes). */
const BYTES_PER_UNIT = 16;

export interface AnsweredImage {
  bytes: Buffer;
  revisedPrompt?: string;
}

/**
 * The JSON of an images answer with `b64_json` data, as Buffer pieces for sendJson (written a few hundred KB a
 * turn): each image encoded B64_PIECE_BYTES at a time on `pace`. Ten images of 1.5 MB are a 20 MB answer, which
 * as one object for res.json() held the event loop ~90 ms to encode and stringify and ~80 ms more to make
 * bytes. The same text as JSON.stringify({created, data: [{b64_json, revised_prompt}]}).
 */
export async function b64ImagesAnswer(created: number, images: AnsweredImage[], pace: BulkPace): Promise<Buffer[]> {
  const pieces: Buffer[] = [Buffer.from(`{"created":${JSON.stringify(created)},"data":[`)];
  for (let i = 0; i < images.length; i++) {
    const { bytes, revisedPrompt } = images[i];
    pieces.push(Buffer.from(`${i ? ',' : ''}{"b64_json":"`));
    for (let at = 0; at < bytes.length; at += B64_PIECE_BYTES) {
      const piece = Buffer.from(bytes.subarray(at, at + B64_PIECE_BYTES).toString('base64'), 'latin1');
      pieces.push(piece);
      const due = pace.charge(Math.ceil(piece.length / BYTES_PER_UNIT));
      if (due) await due;
    }
    pieces.push(
      Buffer.from(revisedPrompt === undefined ? '"}' : `","revised_prompt":${JSON.stringify(revisedPrompt)}}`),
    );
  }
  pieces.push(Buffer.from(']}'));
  return pieces;
}
