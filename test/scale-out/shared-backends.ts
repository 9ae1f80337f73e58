/**
 * The two shared-state backends a scale-out scenario runs on: PostgreSQL (no REDIS_URL: the
 * `shared_state` table) and Redis (REDIS_URL), the latter only when a Redis answers.
 *
 * The Redis used by tests may be shared with other programs, so these suites never flush it:
 * every identifier they use (client IPs, phones, WeChat app ids, scene strings, key ids) is random
 * per run, every entry the apps write expires, and `forgetRedisKeys` deletes, at the end, the keys
 * that carry one of this run's identifiers.
 */
import { randomBytes, randomInt } from 'crypto';
import { spawnSync } from 'child_process';
import Redis from 'ioredis';

/** The key prefix the instances of this run write under (REDIS_KEY_PREFIX), unique per run. */
export const REDIS_PREFIX = `mp:scale-out-${randomBytes(4).toString('hex')}:`;

export const REDIS_TEST_URL = process.env.REDIS_TEST_URL || process.env.TEST_REDIS_URL || 'redis://127.0.0.1:6379';

/**
 * Whether a Redis answers PING at `url`, asked synchronously (in a child process) so the answer
 * can decide at load time whether the Redis variant of a suite runs or is skipped.
 */
function redisAnswers(url: string): boolean {
  const probe = `
    const Redis = require('ioredis');
    const r = new Redis(process.argv[1], { lazyConnect: true, connectTimeout: 1500, maxRetriesPerRequest: 0, retryStrategy: () => null, enableOfflineQueue: false });
    r.on('error', () => undefined);
    r.connect().then(() => r.ping()).then((p) => { r.disconnect(); process.exit(p === 'PONG' ? 0 : 1); }, () => process.exit(1));`;
  const res = spawnSync(process.execPath, ['-e', probe, url], { cwd: process.cwd(), timeout: 5000, stdio: 'ignore' });
  return res.status === 0;
}

export interface Backend {
  name: 'postgres' | 'redis';
  /** Extra environment of every instance: REDIS_URL for the Redis variant. */
  env: Record<string, string>;
}

const redisUp = redisAnswers(REDIS_TEST_URL);

/** [name, backend] rows for describe.each; the Redis row only when a Redis answers. */
export function backends(suite: string): [string, Backend][] {
  const rows: [string, Backend][] = [['shared state on PostgreSQL (no REDIS_URL)', { name: 'postgres', env: {} }]];
  if (redisUp) {
    rows.push([
      `shared state on Redis (REDIS_URL=${redactUrl(REDIS_TEST_URL)})`,
      { name: 'redis', env: { REDIS_URL: REDIS_TEST_URL, REDIS_KEY_PREFIX: REDIS_PREFIX } },
    ]);
  } else {
    console.warn(
      `[${suite}] Redis variant SKIPPED: no Redis answered PING at ${redactUrl(REDIS_TEST_URL)} (set REDIS_TEST_URL to run it).`,
    );
  }
  return rows;
}

function redactUrl(url: string): string {
  return url.replace(/\/\/[^@/]*@/, '//***@');
}

/** A test-side Redis client (assertions and cleanup only). */
export function redisClient(): Redis {
  const r = new Redis(REDIS_TEST_URL, { maxRetriesPerRequest: 1 });
  r.on('error', () => undefined);
  return r;
}

/** Keys under the apps' prefix whose name contains `fragment`. */
export async function redisKeysContaining(redis: Redis, fragment: string): Promise<string[]> {
  const found: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(
      cursor,
      'MATCH',
      `*${fragment.replace(/[*?[\]\\]/g, '\\$&')}*`,
      'COUNT',
      1000,
    );
    cursor = next;
    found.push(...keys);
  } while (cursor !== '0');
  return found;
}

/** Deletes the keys carrying one of this run's random identifiers; never touches anything else. */
export async function forgetRedisKeys(redis: Redis, identifiers: Iterable<string>): Promise<number> {
  let n = 0;
  for (const id of identifiers) {
    if (id.length < 8) continue; // too short to be sure it is ours
    const keys = await redisKeysContaining(redis, id);
    if (keys.length) n += await redis.del(...keys);
  }
  return n;
}

/**
 * A random client address in 10.0.0.0/8 with three-digit octets (so one address is never a
 * substring of another), so per-IP counters never meet another run's.
 */
export function randomIp(): string {
  return `10.${randomInt(100, 255)}.${randomInt(100, 255)}.${randomInt(100, 255)}`;
}

/** A random mainland mobile number matching the default PHONE_PATTERN. */
export function randomPhone(): string {
  return `139${String(randomInt(0, 100_000_000)).padStart(8, '0')}`;
}

/** A random WeChat-looking app id (`wx` + 16 hex). */
export function randomAppId(): string {
  return `wx${randomBytes(8).toString('hex')}`;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
