import type { CallHandler } from '@nestjs/common';
import type { Request, Response } from 'express';
import { Observable } from 'rxjs';
import type { Clock } from '../clock/clock';
import { BODY_MIN_BYTES_PER_SECOND, BODY_RATE_GRACE_MS, BodyArrival } from './body-arrival';

/** The slowest an admitted upload's body may arrive once its grace is past: every body's floor (body-arrival.ts). */
export const UPLOAD_MIN_BYTES_PER_SECOND = BODY_MIN_BYTES_PER_SECOND;
/** Time an admitted upload has before its receive rate is judged. */
export const UPLOAD_RATE_GRACE_MS = BODY_RATE_GRACE_MS;

/** One caller an upload is counted for: at most `max` of that caller's uploads at once in the replica. */
export interface UploadCaller {
  /** What kind of caller (each kind counted apart): a member, a client network, an API key's share. */
  kind: string;
  key: string;
  max: number;
  /** What a caller at its `max` is answered (a 429 with Retry-After). */
  refusal: () => Error;
}

/** What an upload asks to be admitted with. */
export interface UploadClaim {
  /** Checked in order; the first one full refuses. */
  callers: UploadCaller[];
  /** Most bytes the upload can hold in memory (its stated length, or its route's most); 0 when not counted. */
  bytes: number;
}

/** The replica's limits and the errors an app answers them with (its own error shape). */
export interface UploadSlotsOptions {
  /** Most uploads being read at once in the replica, all callers together. */
  maxUploads: number;
  /** Most bytes those uploads may hold at once (UploadClaim.bytes summed). */
  maxBytes: number;
  /** What a full replica answers (a 503 with Retry-After). */
  replicaFull: () => Error;
  /** What an upload whose client left before it was admitted ends with. */
  clientGone: () => Error;
  /** What an upload arriving slower than UPLOAD_MIN_BYTES_PER_SECOND is cut with (a 408). */
  tooSlow: (minBytesPerSecond: number) => Error;
}

/**
 * The uploads a replica reads into memory at once (multer keeps a file in memory until the request ends), taken
 * before the body is read, by an app's interceptor placed before multer's (apps/membership/src/files/
 * upload-admission.ts, apps/ai-gateway/src/http/upload-admission.ts):
 * - a caller at its share, the replica at its count or its bytes, is refused at once, without a byte read;
 * - an admitted upload whose body arrives slower than UPLOAD_MIN_BYTES_PER_SECOND on average, past
 *   UPLOAD_RATE_GRACE_MS, is cut and its slot given back at once (a trickled body held its slot until
 *   REQUEST_TIMEOUT_MS): judged by a BodyArrival of its own (body-arrival.ts) on the connection's `bytesRead`,
 *   so multer's reading is left alone.
 * A slot is held until the answer is out (or the client gone): the files stay in memory while the request is
 * served. The slots are this replica's memory, not a shared limit.
 */
export class UploadSlots {
  private readonly perCaller = new Map<string, number>();
  private uploads = 0;
  private bytes = 0;
  private readonly arrival: BodyArrival;

  constructor(
    clock: Clock,
    private readonly options: UploadSlotsOptions,
  ) {
    this.arrival = new BodyArrival(clock);
  }

  /**
   * Admits the upload and answers what `next` answers, or throws the refusal. Call it from an interceptor
   * that runs before the one reading the body.
   */
  admit(req: Request, res: Response, claim: UploadClaim, next: CallHandler): Observable<unknown> {
    const keys = claim.callers.map((c) => `${c.kind}\u0000${c.key}`);
    claim.callers.forEach((caller, i) => {
      if ((this.perCaller.get(keys[i]) ?? 0) >= caller.max) throw caller.refusal();
    });
    if (this.uploads >= this.options.maxUploads || this.bytes + claim.bytes > this.options.maxBytes)
      throw this.options.replicaFull();
    for (const key of keys) this.perCaller.set(key, (this.perCaller.get(key) ?? 0) + 1);
    this.uploads++;
    this.bytes += claim.bytes;
    let released = false;
    let unwatch: (() => void) | undefined;
    const release = () => {
      if (released) return;
      released = true;
      unwatch?.();
      this.uploads--;
      this.bytes -= claim.bytes;
      for (const key of keys) {
        const n = (this.perCaller.get(key) ?? 1) - 1;
        if (n > 0) this.perCaller.set(key, n);
        else this.perCaller.delete(key);
      }
    };
    res.once('close', release);
    res.once('finish', release);
    // A client gone while its upload was admitted (the guard, the quota read): 'close' came before the
    // listeners, so the slot is given back now, or it would stay taken for good.
    if (res.closed || res.destroyed || req.socket.destroyed) {
      release();
      throw this.options.clientGone();
    }
    // A connection that does not count its bytes (a stand-in) is left to REQUEST_TIMEOUT_MS.
    if (typeof req.socket.bytesRead !== 'number') return next.handle();
    return new Observable<unknown>((subscriber) => {
      const cut = () => {
        release();
        // The connection goes once the answer is out: the rest of the body is not read (multer stops for a
        // destroyed request and drops what it held).
        if (!res.headersSent) res.setHeader('Connection', 'close');
        res.once('finish', () => req.socket.destroy());
        subscriber.error(this.options.tooSlow(UPLOAD_MIN_BYTES_PER_SECOND));
      };
      if (!released) unwatch = this.arrival.watch(req, cut);
      const handled = next.handle().subscribe(subscriber);
      return () => handled.unsubscribe();
    });
  }

  /** Uploads being read or served in this replica (read by tests). */
  get inFlight(): number {
    return this.uploads;
  }

  /** Bytes those uploads may hold (read by tests). */
  get bytesInFlight(): number {
    return this.bytes;
  }
}
