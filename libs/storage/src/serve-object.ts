import type { ServerResponse } from 'http';
import { pipeline } from 'stream';
import { answerDeadline, realStallTimers, type StallTimers } from '@app/platform';
import type { StoredObject } from './object-storage';

/**
 * Streams a stored object as the answer. pipeline, not pipe: a client leaving mid-download also
 * destroys the storage stream (an S3 socket of the SDK's pool of 50, or a file descriptor). A client
 * that stays connected but takes nothing for `stallMs` (REQUEST_TIMEOUT_MS) is cut the same way, and so is
 * one that has not taken the whole object by `answerDeadline` (`stallMs` plus its size at 256 KiB/s, the
 * minimum average rate of every answer): the socket's idle timer alone restarts with each write, so a client
 * reading a little every few seconds held its S3 socket for hours, and 50 of them every S3 call of a replica.
 */
export function serveObject(
  object: StoredObject,
  res: ServerResponse,
  stallMs: number,
  timers: StallTimers = realStallTimers,
): void {
  res.setTimeout(stallMs, () => res.destroy());
  // Unknown size: the longest a stored object may be (a 10 MB upload, a generated image) is far under 64 MiB.
  const deadline = answerDeadline(timers.now(), stallMs, object.size ?? 64 * 1024 * 1024);
  const cut = timers.after(deadline - timers.now(), () => {
    if (!res.writableFinished) res.destroy();
  });
  pipeline(object.body, res, () => cut.cancel());
}
