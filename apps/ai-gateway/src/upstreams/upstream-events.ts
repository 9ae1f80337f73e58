import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { randomUUID } from 'crypto';
import { DataSource } from 'typeorm';
import { DeploymentHealthChange, LlmRouter } from '@app/llm';
import { SharedState } from '@app/platform';
import { WebhookOutbox } from '@app/webhooks';

/** How long a cooldown episode is remembered without a recovery (a deployment nobody calls again). */
const EPISODE_TTL_MS = 24 * 3600_000;

/**
 * upstream.cooled_down and upstream.recovered, once per transition per cluster. Cooldowns are per process
 * (libs/llm/src/router.ts), so every replica that meets a failing deployment sees its own transition; the
 * first one to record the episode in shared state (setIfAbsent on `upstream:episode:<deployment>`) sends
 * cooled_down, and the first one to see the deployment answer again takes the episode (an atomic take) and
 * sends recovered. Another cooldown after that is a new episode. A replica that never saw the cooldown
 * does not look for an episode on its successes (no shared-state round trip per call), so recovered comes
 * from a replica that had it cooling; an episode nobody recovers is forgotten after EPISODE_TTL_MS.
 */
@Injectable()
export class UpstreamEvents implements OnModuleInit {
  private readonly log = new Logger('UpstreamEvents');
  /** One change at a time, in order: a deployment's recovered never overtakes its cooled_down. */
  private chain: Promise<void> = Promise.resolve();

  constructor(
    @Inject(LlmRouter) private readonly router: LlmRouter,
    private readonly state: SharedState,
    private readonly outbox: WebhookOutbox,
    @InjectDataSource() private readonly db: DataSource,
  ) {}

  onModuleInit(): void {
    this.router.onHealthChange((change) => {
      this.chain = this.chain
        .then(() => this.announce(change))
        .catch((e: Error) =>
          this.log.error(`upstream ${change.state} of ${change.deployment} not announced: ${e.message}`),
        );
    });
  }

  /** Resolves when every change seen so far is announced (tests, shutdown). */
  settled(): Promise<void> {
    return this.chain;
  }

  private async announce(c: DeploymentHealthChange): Promise<void> {
    const key = `upstream:episode:${c.deployment}`;
    const at = new Date(c.at).toISOString();
    if (c.state === 'cooled_down') {
      const episode = { id: `ep_${randomUUID().replace(/-/g, '')}`, since: at };
      if (!(await this.state.setIfAbsent(key, JSON.stringify(episode), EPISODE_TTL_MS))) return;
      await this.outbox.enqueue(this.db, 'upstream.cooled_down', {
        deployment: c.deployment,
        episode_id: episode.id,
        cooled_down_at: at,
        cooldown_until: new Date(c.until).toISOString(),
        error: { status: c.status, kind: c.kind, message: c.message },
      });
      return;
    }
    const taken = await this.state.take(key);
    if (taken === null) return;
    const episode = JSON.parse(taken) as { id: string; since: string };
    await this.outbox.enqueue(this.db, 'upstream.recovered', {
      deployment: c.deployment,
      episode_id: episode.id,
      cooled_down_at: episode.since,
      recovered_at: at,
    });
  }
}
