import { performance } from 'perf_hooks';
import type { GenAiMetrics } from '@app/platform';

export const OVERHEAD_HEADER = 'X-Gateway-Overhead-Ms';

/** When the gateway started handling a call (performance.now()), and where its overhead is reported. */
export interface CallTiming {
  startedAt: number;
  metrics?: GenAiMetrics;
}

/** Tracks time spent waiting on upstreams so the rest can be reported as gateway overhead. */
export class CallTimer {
  private readonly start: number;
  private upstreamMs = 0;
  private waitingSince?: number;
  private readonly metrics?: GenAiMetrics;
  private readonly endpoint: string;
  private reported = false;

  /** `endpoint`: the ai_gateway_overhead_seconds label, a fixed name per use case (chat.completions, responses, completions, embeddings). */
  constructor(timing: CallTiming, endpoint: string) {
    this.start = timing.startedAt;
    this.metrics = timing.metrics;
    this.endpoint = endpoint;
  }

  upstreamStarted(): void {
    this.waitingSince = performance.now();
  }

  upstreamDone(): void {
    if (this.waitingSince !== undefined) this.upstreamMs += performance.now() - this.waitingSince;
    this.waitingSince = undefined;
  }

  /**
   * Milliseconds inside the gateway so far (total minus upstream waits), two decimals. The first value
   * taken (the one the answer's head carries) is also observed in ai_gateway_overhead_seconds.
   */
  overheadMs(): string {
    const now = performance.now();
    const waiting = this.waitingSince !== undefined ? now - this.waitingSince : 0;
    const ms = Math.max(0, now - this.start - this.upstreamMs - waiting);
    if (!this.reported && this.metrics) {
      this.reported = true;
      this.metrics.gatewayOverhead(this.endpoint, ms / 1000);
    }
    return ms.toFixed(2);
  }
}
