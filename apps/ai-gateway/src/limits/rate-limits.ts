import type { RateHeaderSink } from './call-admission';

/**
 * The x-ratelimit-* headers of one call as values: what its admissions decided (the request count at
 * authentication, then the call's own reservation: CallAdmission writes the tightest window of each
 * kind here). The HTTP transport writes them with the answer's head (http/rate-limit-headers.ts), on
 * refusals too; nothing else writes them.
 */
export class RateLimits implements RateHeaderSink {
  private readonly values = new Map<string, string>();

  setHeader(name: string, value: string): void {
    this.values.set(name, value);
  }

  getHeader(name: string): string | undefined {
    return this.values.get(name);
  }

  /** The headers as [name, value, ...] for the answer's head (none when the key has no such limit). */
  flat(): string[] {
    const out: string[] = [];
    for (const [name, value] of this.values) out.push(name, value);
    return out;
  }
}
