import { Injectable } from '@nestjs/common';
import { Clock } from '../clock/clock';

/**
 * The slowest a body may arrive, on average since it started being read, once BODY_RATE_GRACE_MS have passed
 * (16 KiB/s, the floor of uploads too: a phone on a weak 3G link still sends several times that); slower is cut.
 */
export const BODY_MIN_BYTES_PER_SECOND = 16 * 1024;
/** Time a body has before its arrival rate is judged (a slow start, a TCP window opening). */
export const BODY_RATE_GRACE_MS = 10_000;
/** How often the arrival rates of the bodies being read are checked (on the app's Clock). */
export const BODY_RATE_CHECK_MS = 1_000;

/** A request whose body is arriving: `complete` once all of it is here; its connection counts the bytes it reads. */
export interface ArrivingBody {
  complete: boolean;
  socket: { bytesRead?: number };
}

interface Watched {
  bytesAtStart: number;
  startedAt: number;
  cut: () => void;
}

/**
 * Judges how fast the bodies being read arrive: one that has taken more than BODY_RATE_GRACE_MS and arrived
 * slower than BODY_MIN_BYTES_PER_SECOND on average is cut (its `cut` is called once and the watch ends), so
 * a trickled body holds what was read of it for seconds, not REQUEST_TIMEOUT_MS. The bytes are the
 * connection's `bytesRead` (what came off the wire, compressed or not), so the reader is left alone; the time
 * is the app's Clock (a test moves it). One check loop per replica, running only while bodies are watched.
 */
@Injectable()
export class BodyArrival {
  private readonly watched = new Map<ArrivingBody, Watched>();
  private checking = false;
  /** Ends the check loop's wait once no body is watched: no wait is left on the clock (a test's clock counts them). */
  private idle?: AbortController;

  constructor(private readonly clock: Clock) {}

  /**
   * Watches `req` from now until its body is complete or the returned function is called. A later watch of
   * the same request takes over from an earlier one (the earlier one's stop no longer ends it).
   */
  watch(req: ArrivingBody, cut: () => void): () => void {
    const bytesAtStart = req.socket.bytesRead;
    // A connection that does not count its bytes (a stand-in) is left to REQUEST_TIMEOUT_MS.
    if (typeof bytesAtStart !== 'number' || req.complete) return () => undefined;
    const entry: Watched = { bytesAtStart, startedAt: this.clock.now(), cut };
    this.watched.set(req, entry);
    void this.check();
    return () => {
      if (this.watched.get(req) === entry) this.watched.delete(req);
      if (this.watched.size === 0) this.idle?.abort();
    };
  }

  /** Bodies being watched (read by tests). */
  get size(): number {
    return this.watched.size;
  }

  private async check(): Promise<void> {
    if (this.checking) return;
    this.checking = true;
    try {
      while (this.watched.size > 0) {
        // Its wait keeps no process up (Clock.sleep), and ends when the last body does.
        this.idle = new AbortController();
        await this.clock.sleep(BODY_RATE_CHECK_MS, this.idle.signal);
        this.idle = undefined;
        const now = this.clock.now();
        for (const [req, w] of [...this.watched]) {
          // The whole body is here: what follows is the server's time, not the client's.
          if (req.complete) {
            this.watched.delete(req);
            continue;
          }
          const elapsed = now - w.startedAt;
          if (elapsed < BODY_RATE_GRACE_MS) continue;
          const received = (req.socket.bytesRead ?? w.bytesAtStart) - w.bytesAtStart;
          if (received * 1000 < BODY_MIN_BYTES_PER_SECOND * elapsed) {
            this.watched.delete(req);
            w.cut();
          }
        }
      }
    } finally {
      this.checking = false;
    }
  }
}
