import { Global, Module } from '@nestjs/common';
import { DataSource } from 'typeorm';
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
      inject: [BaseConfig, DataSource],
      useFactory: (config: BaseConfig, db: DataSource) =>
        config.REDIS_URL ? new RedisSharedState(config.REDIS_URL) : new PostgresSharedState(db),
    },
    SharedThrottlerStorage,
  ],
  exports: [SharedState, SharedThrottlerStorage],
})
export class SharedStateModule {}
