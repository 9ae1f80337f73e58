import { Controller, Get, HttpStatus, Inject, Optional, Req, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiServiceUnavailableResponse, ApiTags } from '@nestjs/swagger';
import { TypeOrmHealthIndicator } from '@nestjs/terminus';
import { SkipThrottle } from '@nestjs/throttler';
import { Public } from '@app/auth';
import { RawResponse } from '@app/envelope';
import type { Request, Response } from 'express';
import { BaseConfig } from '../config/base.config';
import { SharedState } from '../shared-state/shared-state';
import { managementAllowed } from './management-token';

type Status = 'UP' | 'DOWN';
interface Component {
  status: Status;
  details?: Record<string, unknown>;
}

/** Extra readiness checks an app registers (upstream providers, storage...). */
export interface ReadinessCheck {
  name: string;
  check(): Promise<Record<string, unknown> | void>;
}
export const READINESS_CHECKS = Symbol('READINESS_CHECKS');

const HEALTH_EXAMPLE = {
  status: 'UP',
  components: { db: { status: 'UP', details: { database: 'postgresql' } }, ping: { status: 'UP' } },
};

/**
 * Spring-style health: overall, liveness (process only) and readiness (database and dependencies).
 * Probes stay open; with MANAGEMENT_TOKEN set, which components are up or down (and their errors) is
 * shown to its bearer only.
 */
@ApiTags('actuator')
@Public()
@SkipThrottle()
@RawResponse()
@Controller('actuator/health')
export class HealthController {
  constructor(
    private readonly db: TypeOrmHealthIndicator,
    private readonly state: SharedState,
    private readonly config: BaseConfig,
    @Optional() @Inject(READINESS_CHECKS) private readonly extra: ReadinessCheck[] = [],
  ) {}

  @Get()
  // Optional credential (OpenAPI: the empty requirement): anyone gets the status, the bearer of MANAGEMENT_TOKEN the components.
  @ApiOperation({
    summary:
      'Overall health; 503 and DOWN when the database is unreachable. With MANAGEMENT_TOKEN set, components only for its bearer (others get the status alone)',
    security: [{}, { bearer: [] }],
  })
  @ApiOkResponse({ schema: { example: HEALTH_EXAMPLE } })
  @ApiServiceUnavailableResponse({
    schema: { example: { status: 'DOWN', components: { db: { status: 'DOWN', details: { error: 'timeout' } } } } },
  })
  async health(@Req() req: Request, @Res() res: Response): Promise<void> {
    this.send(
      res,
      { ping: { status: 'UP' }, ...(await this.dependencies()) },
      managementAllowed(req, this.config.MANAGEMENT_TOKEN),
    );
  }

  @Get('liveness')
  @ApiOperation({ summary: 'Kubernetes liveness: the process answers' })
  @ApiOkResponse({ schema: { example: { status: 'UP' } } })
  liveness(@Res() res: Response): void {
    res.status(HttpStatus.OK).json({ status: 'UP' });
  }

  @Get('readiness')
  // Optional credential, as the overall health: the bearer of MANAGEMENT_TOKEN gets the components.
  @ApiOperation({
    summary: 'Kubernetes readiness: database and required dependencies reachable',
    security: [{}, { bearer: [] }],
  })
  @ApiOkResponse({ schema: { example: { status: 'UP', components: { db: { status: 'UP' } } } } })
  @ApiServiceUnavailableResponse({ schema: { example: { status: 'DOWN', components: { db: { status: 'DOWN' } } } } })
  async readiness(@Req() req: Request, @Res() res: Response): Promise<void> {
    this.send(res, await this.dependencies(), managementAllowed(req, this.config.MANAGEMENT_TOKEN));
  }

  /** The overall status always; the components (which dependency, its errors) only when `detailed`. */
  private send(res: Response, components: Record<string, Component>, detailed: boolean): void {
    const status: Status = Object.values(components).every((c) => c.status === 'UP') ? 'UP' : 'DOWN';
    res.setHeader('Cache-Control', 'no-store');
    res
      .status(status === 'UP' ? HttpStatus.OK : HttpStatus.SERVICE_UNAVAILABLE)
      .json(detailed ? { status, components } : { status });
  }

  private async dependencies(): Promise<Record<string, Component>> {
    const checks: Array<[string, () => Promise<Record<string, unknown> | void>]> = [
      [
        'db',
        async () => {
          const result = await this.db.pingCheck('db', { timeout: 2000 });
          const db = result?.db as { status?: string; message?: string } | undefined;
          if (db?.status && db.status !== 'up') throw new Error(db.message ?? 'database unreachable');
          return { database: 'postgresql' };
        },
      ],
    ];
    if (this.state.backend === 'redis') checks.push(['redis', () => withTimeout(this.state.ping(), 2000)]);
    for (const c of this.extra ?? []) checks.push([c.name, () => c.check()]);
    const results = await Promise.all(
      checks.map(async ([name, fn]): Promise<[string, Component]> => {
        try {
          const details = await fn();
          return [name, details ? { status: 'UP', details } : { status: 'UP' }];
        } catch (e) {
          // Terminus errors carry per-check causes; anything else may carry a message.
          const err = e as
            { causes?: Record<string, { message?: string } | undefined>; message?: string } | null | undefined;
          const reason = err?.causes?.[name]?.message ?? err?.message ?? 'unavailable';
          return [name, { status: 'DOWN', details: { error: String(reason) } }];
        }
      }),
    );
    return Object.fromEntries(results);
  }
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  return Promise.race([
    p,
    new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`timeout after ${ms} ms`)), ms).unref()),
  ]);
}
