/**
 * The embeddings cache on the real gateway, on both shared-state backends: the work of one request
 * does not grow with its number of inputs (statements and Redis commands are counted, see
 * test/support/round-trips.ts), one key's cache stays within AI_EMBEDDINGS_CACHE_MAX_BYTES_PER_KEY
 * however many requests it sends, and a repeated request is still served from the cache.
 */
import { randomUUID } from 'crypto';
import type Redis from 'ioredis';
import { Client } from 'pg';
import { LedgerRepository } from '../../apps/ai-gateway/src/usage/ledger.repository';
import { sqlClient } from '../support/database';
import { RoundTrip, recordRoundTrips } from '../support/round-trips';
import { fakeEmbedding } from '../support/upstreams';
import {
  Backend,
  backends,
  forgetRedisKeys,
  redisClient,
  redisKeysContaining,
  REDIS_PREFIX,
} from '../scale-out/shared-backends';
import { GatewayFixture, startGatewayFixture } from './gateway-fixture';

// 64-dimension vectors (~1.4 KB an entry as JSON): 512 of them fit in the bound, 100 make ~140 KB.
const MAX_BYTES_PER_KEY = 1_000_000;
const SMALL = { model: 'text-embedding-v3-small', dimensions: 64 };
/** Batches up to 512 inputs use the cache here (the default is 128). */
const MAX_INPUTS = 512;

describe.each(backends('embeddings cache'))('embeddings cache, %s', (_label: string, backend: Backend) => {
  let f: GatewayFixture;
  let db: Client;
  let redis: Redis | undefined;
  const keyIds: string[] = [];
  const run = randomUUID();

  beforeAll(async () => {
    // Key lookups cached for a minute: a warmed-up key is not looked up again between the counted requests.
    f = await startGatewayFixture({
      ...backend.env,
      AI_KEY_CACHE_TTL_MS: '60000',
      AI_EMBEDDINGS_CACHE_MAX_BYTES_PER_KEY: String(MAX_BYTES_PER_KEY),
      AI_EMBEDDINGS_CACHE_MAX_INPUTS: String(MAX_INPUTS),
    });
    db = await sqlClient(f.gw.dbUrl);
    if (backend.name === 'redis') redis = redisClient();
  });
  afterAll(async () => {
    if (redis) {
      await forgetRedisKeys(redis, keyIds);
      redis.disconnect();
    }
    await db?.end();
    await f?.close();
  });
  beforeEach(() => f.openai.reset());

  const newKey = async (fields: Record<string, unknown> = {}) => {
    const k = await f.createKey(fields);
    keyIds.push(k.id);
    return k;
  };
  const embed = async (key: string, input: string[], extra: Record<string, unknown> = {}) => {
    const res = await fetch(`${f.gw.url}/v1/embeddings`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'text-embedding-v3', input, encoding_format: 'float', ...extra }),
    });
    const body = await res.json();
    expect({ status: res.status, error: body.error }).toEqual({ status: 200, error: undefined });
    return body as { data: Array<{ embedding: number[] }> };
  };
  /** Bytes of the key's live cache entries, counted as the bound counts them (key without the Redis prefix, value). */
  const cacheBytes = async (keyId: string): Promise<{ entries: number; bytes: number }> => {
    if (redis) {
      const keys = (await redisKeysContaining(redis, `ai:emb:${keyId}:`)).filter((k) => k.startsWith(REDIS_PREFIX));
      let bytes = 0;
      for (const k of keys) bytes += Buffer.byteLength(k.slice(REDIS_PREFIX.length)) + (await redis.strlen(k));
      return { entries: keys.length, bytes };
    }
    const { rows } = await db.query<{ entries: string; bytes: string | null }>(
      `SELECT count(*) AS entries, sum(octet_length(key) + octet_length(value)) AS bytes FROM shared_state WHERE key LIKE $1 AND expires_at > now()`,
      [`ai:emb:${keyId}:%`],
    );
    return { entries: Number(rows[0].entries), bytes: Number(rows[0].bytes ?? 0) };
  };
  /** Round trips that touch the embeddings cache, by kind. */
  const cacheTrips = (trips: RoundTrip[]) => {
    const isCache = (t: RoundTrip) =>
      t.via === 'pg' ? /shared_state/.test(t.text) : /ai:emb|local bytes/.test(t.text);
    return trips.filter(isCache).length;
  };

  it('costs the same number of statements and commands for 1 input and for 512, and serves a repeat from the cache', async () => {
    const { id, key } = await newKey({ budget_yuan: 1000 });
    const texts = (n: number, tag: string) => Array.from({ length: n }, (_, i) => `${tag} ${run} ${i}`);
    const ledger = f.gw.app.get(LedgerRepository);
    // The ledger is written on a timer, not by the request: held while counting, written after.
    const held = jest.spyOn(ledger, 'flush').mockResolvedValue();
    const rec = recordRoundTrips();
    try {
      await embed(key, texts(1, 'warm-up'), SMALL); // the key's lookup, then cached
      rec.take();
      await embed(key, texts(1, 'one'), SMALL);
      const one = rec.take();
      const first = await embed(key, texts(512, 'many'), SMALL);
      const many = rec.take();
      expect(f.openai.requests).toHaveLength(3);
      const repeat = await embed(key, texts(512, 'many'), SMALL);
      const hit = rec.take();
      expect(f.openai.requests).toHaveLength(3); // served from the cache
      expect(repeat.data[511].embedding[0]).toBeCloseTo(fakeEmbedding(`many ${run} 511`, 64)[0], 12);
      expect(repeat.data).toEqual(first.data);
      // The replicas' timers (expired shared state, expired holds and leases, expired responses, webhook deliveries,
      // the audit retention sweep) are not the request's work.
      const background =
        /DELETE FROM shared_state WHERE expires_at|ai_limits_release_expired|DELETE FROM ai_limit_leases WHERE expires_at|ai_responses_sweep|FROM ai_responses WHERE expires_at|webhook_deliveries|audit\.retention_sweep/;
      const summary = (all: RoundTrip[]) => {
        const trips = all.filter((t) => !background.test(t.text));
        return { total: trips.length, cache: cacheTrips(trips) };
      };
      // A miss: one cache read, one cache write; a full hit: one read. Whatever the number of inputs.
      expect({ one: summary(one), many: summary(many), hit: summary(hit) }).toEqual({
        one: { total: summary(one).total, cache: 2 },
        many: { total: summary(one).total, cache: 2 },
        hit: { total: summary(one).total - 1, cache: 1 },
      });
    } finally {
      rec.stop();
      held.mockRestore();
    }
    await ledger.flush();
    const { rows } = await db.query<{ status: string; n: string }>(
      `SELECT status, count(*) AS n FROM ai_usage_records WHERE key_id = $1 GROUP BY status ORDER BY status`,
      [id],
    );
    expect(rows.map((r) => [r.status, Number(r.n)])).toEqual([
      ['cached', 1],
      ['ok', 3],
    ]);
  });

  it("keeps one key's cache within AI_EMBEDDINGS_CACHE_MAX_BYTES_PER_KEY, concurrent requests included, without touching another key's", async () => {
    const full = await newKey();
    const other = await newKey();
    const batch = (tag: string, n = 100) => Array.from({ length: n }, (_, j) => `${tag} ${run} ${j}`);
    let largest = 0;
    for (let i = 0; i < 12; i++) {
      await embed(full.key, batch(`bound-${i}`), SMALL);
      const { bytes } = await cacheBytes(full.id);
      largest = Math.max(largest, bytes);
      expect({ i, bytes, within: bytes <= MAX_BYTES_PER_KEY }).toEqual({ i, bytes, within: true });
    }
    await Promise.all(Array.from({ length: 6 }, (_, i) => embed(full.key, batch(`bound-c${i}`), SMALL)));
    const after = await cacheBytes(full.id);
    expect(after.bytes).toBeLessThanOrEqual(MAX_BYTES_PER_KEY);
    // The cache was used up to near the bound (each request adds ~140 KB), not simply turned off.
    expect(largest).toBeGreaterThan(MAX_BYTES_PER_KEY / 2);
    // Full (some 100-input batch was refused, so less than one such batch is left): a 200-input
    // request, which an empty cache would take, is answered but not cached; sent again, it goes upstream again.
    f.openai.reset();
    const late = batch('bound-late', 200);
    await embed(full.key, late, SMALL);
    await embed(full.key, late, SMALL);
    expect(f.openai.requests).toHaveLength(2);
    expect((await cacheBytes(full.id)).bytes).toBeLessThanOrEqual(MAX_BYTES_PER_KEY);
    // Another key's cache is its own: it caches while the first key's is full.
    f.openai.reset();
    const first = await embed(other.key, late, SMALL);
    const second = await embed(other.key, late, SMALL);
    expect(f.openai.requests).toHaveLength(1);
    expect(second.data).toEqual(first.data);
    expect((await cacheBytes(other.id)).entries).toBe(200);
  });

  it('leaves a batch of more than AI_EMBEDDINGS_CACHE_MAX_INPUTS inputs out of the cache: no lookup, no write', async () => {
    const { id, key } = await newKey();
    const texts = Array.from({ length: MAX_INPUTS + 1 }, (_, i) => `bulk ${run} ${i}`);
    const rec = recordRoundTrips();
    try {
      await embed(key, texts.slice(0, 1), SMALL); // the key's lookup, then cached
      rec.take();
      const first = await embed(key, texts, SMALL);
      expect(cacheTrips(rec.take())).toBe(0);
      const again = await embed(key, texts, SMALL);
      expect(cacheTrips(rec.take())).toBe(0);
      expect(again.data).toEqual(first.data);
    } finally {
      rec.stop();
    }
    expect(f.openai.requests).toHaveLength(3);
    // The one input of the first request is the key's only entry; the input at the bound's edge still caches.
    expect((await cacheBytes(id)).entries).toBe(1);
    await embed(key, texts.slice(1), SMALL);
    expect((await cacheBytes(id)).entries).toBe(1 + MAX_INPUTS);
  });
});
