import { randomUUID } from 'crypto';
import { hostname } from 'os';
import { Controller, Get } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Roles } from '@app/auth';
import { LlmRouter } from '@app/llm';
import { Clock } from '@app/platform';
import { ApiOpenAiErrors } from '../http/openai-error.doc';
import { UpstreamsResponse } from './dtos/upstream-health.dto';
import { LedgerRepository } from './ledger.repository';
import { DeploymentStatsRow, UsageRepository } from './usage.repository';

const WINDOW_MS = 3_600_000;

/**
 * Upstream health for the console. Error rates and latency come from the usage ledger (the last hour of every
 * replica's calls, provider = deployment): shared by all replicas and surviving restarts, which in-process
 * counters would not. Cooldowns are each router's own memory (libs/llm/src/router.ts), so the answer names the
 * replica they belong to.
 */
@ApiTags('admin')
@Controller('admin/upstreams')
export class UpstreamHealthController {
  private readonly replica = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;

  constructor(
    private readonly router: LlmRouter,
    private readonly usage: UsageRepository,
    private readonly ledger: LedgerRepository,
    private readonly clock: Clock,
  ) {}

  @Get()
  @Roles('viewer')
  @ApiOperation({
    summary:
      'Deployments of the providers file with their cooldown (this replica) and last hour error rate and latency (all replicas)',
    description:
      "Errors count failures with a 5xx, a 429 or no answer; a 4xx the request earned is not an upstream fault. Cached answers reached no deployment and are not counted. The answering replica's calls are in as of at most AI_LEDGER_FLUSH_MS before the read (such reads share one ledger write per AI_LEDGER_FLUSH_MS), other replicas' as of their last ledger write.",
  })
  @ApiOkResponse({ type: UpstreamsResponse })
  @ApiOpenAiErrors(401, 403)
  async list(): Promise<UpstreamsResponse> {
    const now = this.clock.now();
    const since = new Date(now - WINDOW_MS);
    // This replica's calls up to AI_LEDGER_FLUSH_MS ago: a console polling this costs one write per interval at most.
    await this.ledger.flushForReport();
    const stats = new Map((await this.usage.deploymentStats(since)).map((s) => [s.provider, s]));
    const window = (s: DeploymentStatsRow | undefined) => ({
      requests: s?.calls ?? 0,
      errors: s?.failed ?? 0,
      error_rate: s && s.calls > 0 ? Math.round((s.failed / s.calls) * 10_000) / 10_000 : null,
      latency_p50_ms: s?.p50Ms ?? null,
      latency_p95_ms: s?.p95Ms ?? null,
    });
    return {
      object: 'list',
      replica: this.replica,
      window_start: since.toISOString(),
      window_end: new Date(now).toISOString(),
      overall: window(stats.get(null)),
      data: this.router.config.deployments.map((d) => {
        const s = stats.get(d.name);
        const until = this.router.cooldownEndsAt(d.name);
        return {
          name: d.name,
          type: d.type,
          models: d.models.map((m) => m.name),
          weight: d.weight,
          cooldown: { cooling_down: until !== null, until: until === null ? null : new Date(until).toISOString() },
          last_hour: window(s),
        };
      }),
    };
  }
}
