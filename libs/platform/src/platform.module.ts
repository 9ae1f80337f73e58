import { DynamicModule, Global, Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { ThrottlerModule } from '@nestjs/throttler';
import { AUTH_LIMITER } from '@app/auth';
import { DATABASE_URL } from '@app/database';
import { Clock } from './clock/clock';
import { BaseConfig } from './config/base.config';
import { ConfigModule } from './config/config.module';
import { HealthModule } from './health/health.module';
import { HttpPipeline } from './http/http-pipeline';
import { BodyArrival } from './http/body-arrival';
import { BodyBudget } from './http/body-budget';
import { AccessLog, loggingModule } from './logging/logging';
import { MetricsModule } from './metrics/metrics';
import { SharedThrottlerStorage } from './shared-state/throttler-storage';
import { PlatformAuthLimiter } from './rate-limit/auth-limiter';
import { clientLimitKey } from './rate-limit/address-limit-key';
import { PlatformThrottlerGuard } from './rate-limit/platform-throttler.guard';
import { SharedStateModule } from './shared-state/shared-state.module';
import { TimedHolds } from './shared-state/timed-holds';

export interface PlatformOptions<T extends BaseConfig> {
  app: string;
  configClass: new () => T;
  config: T;
  databaseUrl: string;
}

/**
 * What every app imports first: its validated config, logging, the database URL, shared state,
 * rate limiting across replicas (a global guard per IP for strangers; failed authentication per IP and
 * members per member through AUTH_LIMITER), the Clock, health and metrics.
 */
@Global()
@Module({})
export class PlatformModule {
  static forRoot<T extends BaseConfig>(options: PlatformOptions<T>): DynamicModule {
    const dbUrl = { provide: DATABASE_URL, useValue: options.databaseUrl };
    return {
      module: PlatformModule,
      imports: [
        ConfigModule.forRoot(options.configClass, options.config),
        loggingModule(options.config, options.app),
        SharedStateModule,
        ThrottlerModule.forRootAsync({
          inject: [BaseConfig, SharedThrottlerStorage],
          useFactory: (config: BaseConfig, storage: SharedThrottlerStorage) => ({
            throttlers: [{ name: 'default', ttl: 60_000, limit: config.RATE_LIMIT_PER_MINUTE }],
            // The same address key as every other per-address limit (IPv6 by RATE_LIMIT_IPV6_PREFIX).
            getTracker: (req: { ip?: string; socket?: { remoteAddress?: string } }) =>
              clientLimitKey(req, config.RATE_LIMIT_IPV6_PREFIX),
            storage,
            errorMessage: 'Too many requests, retry later',
          }),
        }),
        HealthModule,
        MetricsModule,
      ],
      providers: [
        dbUrl,
        {
          provide: AccessLog,
          inject: [BaseConfig],
          useFactory: (config: BaseConfig) => new AccessLog(config.LOG_LEVEL, options.app),
        },
        HttpPipeline,
        BodyArrival,
        {
          provide: BodyBudget,
          inject: [BaseConfig],
          useFactory: (config: BaseConfig) =>
            new BodyBudget(config.BODY_BYTES_PER_CALLER_MAX, config.BODY_BYTES_IN_FLIGHT_MAX),
        },
        { provide: APP_GUARD, useClass: PlatformThrottlerGuard },
        { provide: AUTH_LIMITER, useClass: PlatformAuthLimiter },
        Clock,
        TimedHolds,
      ],
      exports: [
        dbUrl,
        AccessLog,
        HttpPipeline,
        BodyArrival,
        BodyBudget,
        ConfigModule,
        SharedStateModule,
        MetricsModule,
        AUTH_LIMITER,
        Clock,
        TimedHolds,
      ],
    };
  }
}
