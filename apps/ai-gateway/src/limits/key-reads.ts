import { Injectable } from '@nestjs/common';
import type { Principal } from '@app/auth';
import { GatewayConfig } from '../config/gateway.config';
import { GatewayError, GatewayErrorCode } from '../errors';
import { shareOf } from '../keys/key-scopes';

/**
 * Unmetered reads a key's share (ApiKeyClaims.share: its project's keys together, else the key) runs at once in
 * this replica: GET /v1/usage, GET and DELETE /v1/responses/{id} and its input_items. Only requests_per_minute
 * bounded them, so a key asking a year's usage many times at once held the shared database pool; past
 * AI_READS_PER_KEY a read is refused (429) before any statement, while other keys' reads go on.
 */
@Injectable()
export class KeyReads {
  private readonly running = new Map<string, number>();

  constructor(private readonly config: GatewayConfig) {}

  async run<T>(principal: Principal, read: () => Promise<T>): Promise<T> {
    const share = shareOf(principal);
    const n = this.running.get(share) ?? 0;
    const max = this.config.AI_READS_PER_KEY;
    if (n >= max) throw new GatewayError(GatewayErrorCode.ReadsInFlightForKey, { max });
    this.running.set(share, n + 1);
    try {
      return await read();
    } finally {
      const left = (this.running.get(share) ?? 1) - 1;
      if (left > 0) this.running.set(share, left);
      else this.running.delete(share);
    }
  }

  /** Shares with reads running (read by tests). */
  get size(): number {
    return this.running.size;
  }
}
