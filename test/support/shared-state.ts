import { randomBytes } from 'crypto';
import { DataSource } from 'typeorm';
import { SharedState1732240000000, SharedStateUnlogged1795500000000 } from '@app/database';
import { PostgresSharedState } from '../../libs/platform/src/shared-state/postgres-shared-state';
import { RedisSharedState } from '../../libs/platform/src/shared-state/redis-shared-state';
import { SharedState } from '../../libs/platform/src/shared-state/shared-state';
import { createTestDatabase } from './database';
import { Backend, REDIS_TEST_URL } from '../scale-out/shared-backends';

/**
 * A SharedState of the given backend on its own namespace: a fresh database with the shared-state
 * migrations, or a Redis key prefix unique to this call. `close()` removes what it made.
 */
export async function openSharedState(backend: Backend): Promise<{ state: SharedState; close(): Promise<void> }> {
  if (backend.name === 'redis') {
    const prefix = `test-${randomBytes(6).toString('hex')}:`;
    const redis = new RedisSharedState(REDIS_TEST_URL, prefix);
    return {
      state: redis,
      close: async () => {
        const keys = await redis.client.keys(`${prefix}*`);
        if (keys.length) await redis.client.del(...keys);
        await redis.onModuleDestroy();
      },
    };
  }
  const db = await createTestDatabase();
  const ds = new DataSource({
    type: 'postgres',
    url: db.url,
    migrations: [SharedState1732240000000, SharedStateUnlogged1795500000000],
    migrationsTableName: 'test_migrations',
  });
  await ds.initialize();
  await ds.runMigrations();
  const state = new PostgresSharedState(ds);
  return {
    state,
    close: async () => {
      state.onModuleDestroy();
      await ds.destroy();
      await db.drop();
    },
  };
}
