import { OnModuleDestroy } from '@nestjs/common';
import Redis from 'ioredis';
import { distinctEntries, HitAnswer, SharedState } from './shared-state';

const INCR = `
local n = redis.call('INCRBY', KEYS[1], ARGV[2])
if n == tonumber(ARGV[2]) then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local t = redis.call('PTTL', KEYS[1])
if t < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]); t = tonumber(ARGV[1]) end
return {n, t}`;

const HIT = `
local b = redis.call('PTTL', KEYS[2])
if b > 0 then return {b, 0, 0} end
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local t = redis.call('PTTL', KEYS[1])
if t < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]); t = tonumber(ARGV[1]) end
return {0, n, t}`;

// KEYS[1]: the byte counter, KEYS[2..]: entries. ARGV: bytes, bound, ttl ms, then the entries' values.
// Returns 1 when stored (the entries expire with the counter), 0 when the counter would pass the bound.
const SET_WITHIN = `
local bytes = tonumber(ARGV[1])
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
if used + bytes > tonumber(ARGV[2]) then return 0 end
redis.call('INCRBY', KEYS[1], bytes)
local t = redis.call('PTTL', KEYS[1])
-- No expiry yet (new counter), or under a millisecond left (PX 0 would be an error): a full window from
-- now; the bytes still counted only make the bound stricter.
if t <= 0 then redis.call('PEXPIRE', KEYS[1], ARGV[3]); t = tonumber(ARGV[3]) end
for i = 2, #KEYS do redis.call('SET', KEYS[i], ARGV[i + 2], 'PX', t) end
return 1`;

/** SharedState on Redis; keys are prefixed so several deployments can share one server. */
export class RedisSharedState extends SharedState implements OnModuleDestroy {
  readonly backend = 'redis' as const;
  readonly client: Redis;

  constructor(
    url: string,
    private readonly prefix = 'mp:',
  ) {
    super();
    // keepAlive: probes from 10 s of silence (ioredis's 0 leaves the system's two hours), as the database pool does.
    this.client = new Redis(url, {
      lazyConnect: false,
      maxRetriesPerRequest: 2,
      enableOfflineQueue: true,
      keepAlive: 10_000,
    });
    this.client.on('error', () => undefined); // surfaced through ping() and failed commands
  }

  async onModuleDestroy(): Promise<void> {
    await this.client.quit().catch(() => this.client.disconnect());
  }

  private k(key: string): string {
    return this.prefix + key;
  }

  get(key: string): Promise<string | null> {
    return this.client.get(this.k(key));
  }

  async set(key: string, value: string, ttlMs: number): Promise<void> {
    await this.client.set(this.k(key), value, 'PX', Math.max(1, Math.round(ttlMs)));
  }

  async getMany(keys: string[]): Promise<(string | null)[]> {
    if (!keys.length) return [];
    return this.client.mget(keys.map((k) => this.k(k)));
  }

  async setManyWithin(
    budgetKey: string,
    maxBytes: number,
    entries: Array<[string, string]>,
    ttlMs: number,
  ): Promise<boolean> {
    const { entries: distinct, bytes } = distinctEntries(entries);
    if (!distinct.length) return true;
    // A batch larger than the whole bound can never fit: refused here, not shipped to be refused.
    if (bytes > maxBytes) return false;
    const stored = await this.client.eval(
      SET_WITHIN,
      1 + distinct.length,
      this.k(budgetKey),
      ...distinct.map(([k]) => this.k(k)),
      bytes,
      Math.max(0, Math.floor(maxBytes)),
      Math.max(1, Math.round(ttlMs)),
      ...distinct.map(([, v]) => v),
    );
    return Number(stored) === 1;
  }

  async setIfAbsent(key: string, value: string, ttlMs: number): Promise<boolean> {
    return (await this.client.set(this.k(key), value, 'PX', Math.max(1, Math.round(ttlMs)), 'NX')) === 'OK';
  }

  take(key: string): Promise<string | null> {
    return this.client.getdel(this.k(key));
  }

  async del(key: string): Promise<void> {
    await this.client.del(this.k(key));
  }

  async incr(key: string, ttlMs: number, by = 1): Promise<{ count: number; ttlMs: number }> {
    const [count, ttl] = (await this.client.eval(
      INCR,
      1,
      this.k(key),
      Math.max(1, Math.round(ttlMs)),
      Math.round(by),
    )) as [number, number];
    return { count: Number(count), ttlMs: Number(ttl) };
  }

  override async hit(key: string, blockKey: string, ttlMs: number): Promise<HitAnswer> {
    const [blocked, count, ttl] = (await this.client.eval(
      HIT,
      2,
      this.k(key),
      this.k(blockKey),
      Math.max(1, Math.round(ttlMs)),
    )) as [number, number, number];
    return { blockedMs: Number(blocked), count: Number(count), ttlMs: Number(ttl) };
  }

  /** Runs a Lua script on keys of this state (prefixed like every other key): for stores with their own scripts. */
  evalScript(script: string, keys: string[], args: Array<string | number>): Promise<unknown> {
    return this.client.eval(script, keys.length, ...keys.map((k) => this.k(k)), ...args);
  }

  async ttl(key: string): Promise<number> {
    return Math.max(0, await this.client.pttl(this.k(key)));
  }

  async ping(): Promise<void> {
    await this.client.ping();
  }
}
