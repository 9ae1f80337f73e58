import { Controller, Get, Injectable, Module, Req, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiProduces, ApiTags, ApiUnauthorizedResponse } from '@nestjs/swagger';
import { SkipThrottle } from '@nestjs/throttler';
import { Public } from '@app/auth';
import { RawResponse } from '@app/envelope';
import type { Request, Response } from 'express';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { SeriesCounter, SeriesHistogram } from './series-metrics';
import { BaseConfig } from '../config/base.config';
import { managementAllowed } from '../health/management-token';

/** One Prometheus registry per app instance (tests run several apps in one process). */
@Injectable()
export class Metrics {
  readonly registry = new Registry();
  // Series types (series-metrics.ts): observed on every request, exposed as prom-client's.
  readonly requests = new SeriesCounter({
    name: 'http_requests_total',
    help: 'HTTP requests by method, route and status',
    labelNames: ['method', 'route', 'status'],
    registers: [this.registry],
  });
  readonly duration = new SeriesHistogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request latency by method, route and status',
    labelNames: ['method', 'route', 'status'],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry });
  }
}

@ApiTags('actuator')
@Public()
@SkipThrottle()
@RawResponse()
@Controller('actuator')
export class MetricsController {
  constructor(
    private readonly metrics: Metrics,
    private readonly config: BaseConfig,
  ) {}

  @Get('prometheus')
  // The credential is needed only when MANAGEMENT_TOKEN is set (OpenAPI: the empty requirement makes it optional).
  @ApiOperation({
    summary:
      'Prometheus metrics: request counts and latency histograms per route, process metrics. Needs `Authorization: Bearer <MANAGEMENT_TOKEN>` when MANAGEMENT_TOKEN is set',
    security: [{}, { bearer: [] }],
  })
  @ApiProduces('text/plain')
  @ApiOkResponse({
    schema: { type: 'string', example: 'http_requests_total{method="GET",route="/actuator/health",status="200"} 3' },
  })
  @ApiUnauthorizedResponse({ schema: { example: { status: 401, error: 'management token required' } } })
  async prometheus(@Req() req: Request, @Res() res: Response): Promise<void> {
    if (!managementAllowed(req, this.config.MANAGEMENT_TOKEN)) {
      res.setHeader('WWW-Authenticate', 'Bearer');
      res.status(401).json({ status: 401, error: 'management token required' });
      return;
    }
    res.setHeader('Content-Type', this.metrics.registry.contentType);
    res.send(await this.metrics.registry.metrics());
  }
}

@Module({ providers: [Metrics], controllers: [MetricsController], exports: [Metrics] })
export class MetricsModule {}
