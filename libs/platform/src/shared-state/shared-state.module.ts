import { Global, Module } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { DATABASE_URL } from '@app/database';
import { BaseConfig } from '../config/base.config';
import { PostgresSharedState } from './postgres-shared-state';
import { RedisSharedState } from './redis-shared-state';
import { SharedState } from './shared-state';
import { SharedThrottlerStorage } from './throttler-storage';

@Global()
@Module({
  providers: [
    {
      provide: SharedState,
      inject: [BaseConfig, DataSource, DATABASE_URL],
      useFactory: (config: BaseConfig, db: DataSource, databaseUrl: string) =>
        config.REDIS_URL
          ? new RedisSharedState(config.REDIS_URL, redisKeyPrefix(config, databaseUrl))
          : new PostgresSharedState(db),
    },
    SharedThrottlerStorage,
  ],
  exports: [SharedState, SharedThrottlerStorage],
})
export class SharedStateModule {}

/** One deployment = one database: its name keeps the keys of deployments sharing a Redis apart. */
export function redisKeyPrefix(config: BaseConfig, databaseUrl: string): string {
  if (config.REDIS_KEY_PREFIX) return config.REDIS_KEY_PREFIX;
  let name = 'app';
  try {
    const u = new URL(databaseUrl);
    name = `${u.hostname}:${u.port || 5432}/${decodeURIComponent(u.pathname.replace(/^\//, '')) || 'postgres'}`;
  } catch {
    // keep the default
  }
  return `mp:${name}:`;
}
