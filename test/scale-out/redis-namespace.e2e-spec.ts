/**
 * Some Redis keys carry per-database sequence values (member ids in login lockouts). Two deployments
 * with their own databases that share one Redis must not share those entries: the default
 * REDIS_KEY_PREFIX (`mp:<database>:`) keeps them apart. Runs only when a Redis answers.
 */
import { randomBytes, randomInt } from 'crypto';
import type Redis from 'ioredis';
import request from 'supertest';
import { RunningApp, startMembership } from '../support/apps';
import { sqlClient } from '../support/database';
import { Backend, backends, forgetRedisKeys, randomIp, redisClient } from './shared-backends';

const redisOnly = backends('scale-out redis namespace').filter(([, b]) => b.name === 'redis');
const AUTH = '/api/v1/app/auth';
const NO_REDIS: [string, Backend] = ['no Redis', { name: 'redis', env: {} }];

(redisOnly.length ? describe.each(redisOnly) : describe.skip.each([NO_REDIS]))(
  'two separate deployments sharing one Redis, %s',
  (_label: string, backend: Backend) => {
    let x: RunningApp;
    let y: RunningApp;
    let redis: Redis;
    const memberId = randomInt(1_000_000_000, 9_000_000_000);

    beforeAll(async () => {
      // The default prefix is under test: no REDIS_KEY_PREFIX.
      const env = { ...backend.env, REDIS_KEY_PREFIX: undefined, LOGIN_ACCOUNT_MAX_FAILURES: '20' };
      [x, y] = await Promise.all([startMembership(env), startMembership(env)]);
      // The same member id in both databases, as two deployments reach it in their own sequence.
      for (const app of [x, y]) {
        const db = await sqlClient(app.dbUrl);
        await db.query(`ALTER TABLE members ALTER COLUMN id RESTART WITH ${memberId}`);
        await db.end();
      }
      redis = redisClient();
    });
    afterAll(async () => {
      await Promise.all([x?.close(), y?.close()]);
      if (redis) {
        await forgetRedisKeys(redis, [`:m:${memberId}`]);
        redis.disconnect();
      }
    });

    it('a lockout in deployment X does not lock the member with the same id out of deployment Y', async () => {
      const names = [`nx_${randomBytes(4).toString('hex')}`, `ny_${randomBytes(4).toString('hex')}`];
      const regX = await request(x.url)
        .post(`${AUTH}/register`)
        .set('X-Forwarded-For', randomIp())
        .send({ username: names[0], password: 'namespace-password' })
        .expect(200);
      // (Account-wide locks apply to addresses the member never logged in from; these are all new.)
      const regY = await request(y.url)
        .post(`${AUTH}/register`)
        .set('X-Forwarded-For', randomIp())
        .send({ username: names[1], password: 'namespace-password' })
        .expect(200);
      expect(regX.body.data.memberId).toBe(String(memberId));
      expect(regY.body.data.memberId).toBe(String(memberId));
      // LOGIN_ACCOUNT_MAX_FAILURES (20) wrong passwords from several addresses lock the account in X.
      for (let i = 0; i < 20; i++) {
        await request(x.url)
          .post(`${AUTH}/login`)
          .set('X-Forwarded-For', randomIp())
          .send({ account: names[0], password: 'wrong-password' });
      }
      await request(x.url)
        .post(`${AUTH}/login`)
        .set('X-Forwarded-For', randomIp())
        .send({ account: names[0], password: 'namespace-password' })
        .expect(423);
      // Y's member never failed a login: the right password must work.
      const inY = await request(y.url)
        .post(`${AUTH}/login`)
        .set('X-Forwarded-For', randomIp())
        .send({ account: names[1], password: 'namespace-password' });
      expect(inY.status).toBe(200);
    });
  },
);
