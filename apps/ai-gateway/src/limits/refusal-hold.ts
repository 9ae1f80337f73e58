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

  constructor(
    private readonly clock: Clock,
    private readonly config: GatewayConfig,
  ) {}

  /** Waits AI_REFUSAL_HOLD_MS on the app's clock, at most `atMostMs` (a retry time). */
  async hold(atMostMs = Infinity): Promise<void> {
    const ms = Math.min(this.config.AI_REFUSAL_HOLD_MS, Math.max(0, atMostMs));
    if (ms <= 0 || this.held >= RefusalHold.MAX_HELD) return;
    this.held++;
    try {
      await this.clock.sleep(ms);
    } finally {
      this.held--;
    }
  }

  /** Refusals being held now. */
  get holding(): number {
    return this.held;
  }
}
