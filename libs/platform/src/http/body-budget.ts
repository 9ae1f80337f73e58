import { bodyError } from './body-reader';

/** How long a caller refused for its bodies in flight is told to wait (Retry-After): one is read in about that. */
const BODIES_RETRY_AFTER_SECONDS = 1;

/**
 * The body bytes a replica holds while bodies are being read (JSON bodies, counted as they arrive, inflated bytes
 * for a compressed one), per caller and in all. A caller is the
 * authenticated principal's share (the gateway: the key's project, or the key; membership: the member) or, for
 * a stranger on a public route, its client network (bodyCallerOf in configure-http-app.ts). Without it a caller
 * could hold a body limit's worth of inflated bytes per connection for REQUEST_TIMEOUT_MS by withholding the
 * last bytes of many gzip bodies, until the replica ran out of memory. A body that would take its caller past
 * `perCaller` is refused 429, with Retry-After and before any more of it is read; a caller's first body always
 * has room (a body is bounded by its route's limit). Past `perReplica` in all, the replica is shared out: a body
 * is refused 503 only when its caller would hold more than an equal share of `perReplica` among the callers
 * holding bytes (itself counted), so a few callers filling the replica cannot shut everyone else's bodies out
 * (the bytes in all then stay within about `perReplica` plus one chunk per caller). The bytes are given back when
 * the body is read (or refused, or cut).
 */
export class BodyBudget {
  private readonly held = new Map<string, number>();
  private total = 0;

  constructor(
    private readonly perCaller: number,
    private readonly perReplica: number,
  ) {}

  /**
   * Takes `bytes` for `caller`, or returns the refusal and takes nothing. With 0 bytes (a body starting whose size
   * is not known yet) it checks that there is room for at least one.
   */
  take(caller: string, bytes: number): Error | undefined {
    const need = Math.max(bytes, 1);
    const mine = this.held.get(caller) ?? 0;
    if (mine > 0 && mine + need > this.perCaller)
      return bodyError(429, 'bodies.caller.busy', 'too many request bodies of this caller are being received', {
        retryAfterSeconds: BODIES_RETRY_AFTER_SECONDS,
      });
    if (this.total > 0 && this.total + need > this.perReplica && mine + need > this.fairShare(mine))
      return bodyError(503, 'bodies.replica.busy', 'too many request bodies are being received', {
        retryAfterSeconds: BODIES_RETRY_AFTER_SECONDS,
      });
    if (bytes > 0) {
      this.held.set(caller, mine + bytes);
      this.total += bytes;
    }
    return undefined;
  }

  /** An equal share of the replica's bytes among the callers holding some, a caller holding `mine` counted too. */
  private fairShare(mine: number): number {
    return this.perReplica / (this.held.size + (mine > 0 ? 0 : 1));
  }

  /** Gives back `bytes` taken for `caller`. */
  give(caller: string, bytes: number): void {
    if (bytes <= 0) return;
    const left = (this.held.get(caller) ?? bytes) - bytes;
    if (left > 0) this.held.set(caller, left);
    else this.held.delete(caller);
    this.total -= bytes;
  }

  /** Bytes held by `caller`'s bodies being read (read by tests). */
  heldBy(caller: string): number {
    return this.held.get(caller) ?? 0;
  }

  /** Bytes held by every body being read in the replica (read by tests). */
  get inFlight(): number {
    return this.total;
  }
}
