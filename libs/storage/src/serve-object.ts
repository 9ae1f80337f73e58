import type { ServerResponse } from 'http';
import { pipeline } from 'stream';
import type { StoredObject } from './object-storage';

/**
 * Streams a stored object as the answer. pipeline, not pipe: a client leaving mid-download also
 * destroys the storage stream (an S3 socket of the SDK's pool of 50, or a file descriptor). A client
 * that stays connected but takes nothing for `stallMs` (REQUEST_TIMEOUT_MS) is cut the same way: the
 * public download routes would otherwise let anyone hold every S3 socket of a replica with 50
 * downloads they never read.
 */
export function serveObject(object: StoredObject, res: ServerResponse, stallMs: number): void {
  res.setTimeout(stallMs, () => res.destroy());
  pipeline(object.body, res, () => undefined);
}
