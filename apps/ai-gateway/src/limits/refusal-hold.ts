import { Injectable } from '@nestjs/common';
import { Clock } from '@app/platform';
import { GatewayConfig } from '../config/gateway.config';

/**
 * Refusals a caller could have avoided, answered after AI_REFUSAL_HOLD_MS: a key calling again before the
 * retry time of its requests_per_minute refusal (CallAdmission.countRequest), a missing, unknown, revoked or
 * expired key (GatewayAuthenticator). A client that calls again at once, without waiting, then sends one call
 * per connection per hold instead of taking the replica's time with thousands of refusals a second; a
 * client that waits as told sees no difference. At most MAX_HELD refusals are held in a replica at once,
 * later ones are answered at once; a held refusal keeps nothing but its connection, which its caller
 * could keep open anyway.
 */
@Injectable()
export class RefusalHold {
  static readonly MAX_HELD = 10_000;
  private held = 0;
  private readonly connections = new WeakSet<HeldConnection>();

  constructor(
    private readonly clock: Clock,
    private readonly config: GatewayConfig,
  ) {}

  /**
   * Waits AI_REFUSAL_HOLD_MS on the app's clock, at most `atMostMs` (a retry time). `connection`: the
   * refused request's; a second refusal on a connection whose first is still held (requests pipelined
   * behind it) closes the connection at once instead, so one connection holds one refusal at a time.
   */
  async hold(atMostMs = Infinity, connection?: HeldConnection): Promise<void> {
    const ms = Math.min(this.config.AI_REFUSAL_HOLD_MS, Math.max(0, atMostMs));
    if (ms <= 0 || this.held >= RefusalHold.MAX_HELD) return;
    if (connection) {
      if (this.connections.has(connection)) return void connection.destroy();
      this.connections.add(connection);
    }
    this.held++;
    try {
      await this.clock.sleep(ms);
    } finally {
      this.held--;
      if (connection) this.connections.delete(connection);
    }
  }
}

/** What RefusalHold needs of a refused request's connection (a net.Socket). */
export interface HeldConnection {
  readonly destroyed: boolean;
  destroy(): void;
}
