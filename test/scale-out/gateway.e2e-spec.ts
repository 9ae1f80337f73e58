/**
 * Scale-out: two AI gateway instances on different ports, one PostgreSQL database,
 * separate DATA_DIRs, one local OpenAI-protocol upstream, shared short-lived state on PostgreSQL or
 * on Redis. Keys revoked on one are refused by the other within the key-cache lifetime, a key's
 * per-minute limit counts calls on both, and the usage ledger holds exactly one row per call.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { randomBytes } from 'crypto';
import type Redis from 'ioredis';
import OpenAI from 'openai';
import { Client } from 'pg';
import { GatewayConfig } from '../../apps/ai-gateway/src/config/gateway.config';
import { RunningApp, startGateway } from '../support/apps';
import { sqlClient } from '../support/database';
import { FakeUpstream, startFakeOpenAi } from '../support/upstreams';
import { Backend, backends, forgetRedisKeys, redisKeysContaining, sleep } from './shared-backends';
import { redisClient } from './shared-backends';

const ADMIN_TOKEN = 'scale-out-admin-token-0123456789';
const KEY_CACHE_TTL_MS = 1500;

describe.each(backends('scale-out ai-gateway'))(
  'scale-out: two AI gateway instances, %s',
  (_label: string, backend: Backend) => {
    let a: RunningApp;
    let b: RunningApp;
    let upstream: FakeUpstream;
    let db: Client;
    let redis: Redis | undefined;
    let providersDir: string;
    const ours = new Set<string>();
    const run = randomBytes(3).toString('hex');

    const admin = async (app: RunningApp, method: string, path: string, body?: unknown) => {
      const res = await fetch(`${app.url}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${ADMIN_TOKEN}`,
          ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        },
        body: body !== undefined ? JSON.stringify(body) : undefined,
      });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : undefined };
    };
    const createKey = async (app: RunningApp, fields: Record<string, unknown> = {}) => {
      const res = await admin(app, 'POST', '/admin/keys', { name: `scale-out-${run}`, ...fields });
      expect(res.status).toBe(201);
      ours.add(res.body.id);
      return res.body as { id: string; key: string };
    };
    const models = (app: RunningApp, key: string) =>
      fetch(`${app.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } });
    const sdk = (app: RunningApp, key: string) => new OpenAI({ apiKey: key, baseURL: `${app.url}/v1`, maxRetries: 0 });

    beforeAll(async () => {
      upstream = await startFakeOpenAi();
      providersDir = mkdtempSync(join(tmpdir(), 'scale-out-providers-'));
      const providersFile = join(providersDir, 'providers.json');
      writeFileSync(
        providersFile,
        JSON.stringify({
          routing: { maxAttempts: 1 },
          models: { 'vendor-gpt-4': { price: { inputPer1k: 1, outputPer1k: 2 } } },
          deployments: [
            {
              name: 'primary',
              type: 'openai',
              baseUrl: upstream.url,
              timeoutMs: 5000,
              models: [{ name: 'vendor-gpt-4', upstream: 'gpt-4o' }],
            },
          ],
        }),
      );
      const env = {
        ...backend.env,
        AI_PROVIDERS_FILE: providersFile,
        ADMIN_TOKEN,
        AI_KEY_CACHE_TTL_MS: String(KEY_CACHE_TTL_MS),
        AI_LOCAL_ENGINES: 'false',
        AI_LOCAL_STT: 'false',
        RATE_LIMIT_PER_MINUTE: '100000',
      };
      // A writes its ledger batches every 100 ms; B every minute (the maximum), so its calls wait for shutdown.
      a = await startGateway({ ...env, AI_LEDGER_FLUSH_MS: '100' });
      b = await startGateway({ ...env, AI_LEDGER_FLUSH_MS: '60000' }, { dbUrl: a.dbUrl });
      db = await sqlClient(a.dbUrl);
      if (backend.name === 'redis') redis = redisClient();
    });

    afterAll(async () => {
      await db?.end();
      await b?.close();
      await a?.close(); // drops the database
      if (redis) {
        await forgetRedisKeys(redis, ours);
        redis.disconnect();
      }
      await upstream?.close();
      for (const d of [providersDir, a?.dataDir, b?.dataDir]) if (d) rmSync(d, { recursive: true, force: true });
    });

    it('runs two instances on different ports, one database, separate data directories, the expected state backend', async () => {
      expect(a.url).not.toBe(b.url);
      expect(b.dbUrl).toBe(a.dbUrl);
      expect(a.dataDir).not.toBe(b.dataDir);
      for (const app of [a, b]) {
        const ready = await (await fetch(`${app.url}/actuator/health/readiness`)).json();
        expect(ready.status).toBe('UP');
        expect(Boolean(ready.components?.redis)).toBe(backend.name === 'redis');
      }
    });

    it('an API key revoked on A is refused on B within the key-cache lifetime (AI_KEY_CACHE_TTL_MS)', async () => {
      const ttl = b.app.get(GatewayConfig).AI_KEY_CACHE_TTL_MS;
      expect(ttl).toBe(KEY_CACHE_TTL_MS);
      const created = await createKey(a);
      // A key created on A works on B at once.
      expect((await models(b, created.key)).status).toBe(200);
      expect((await models(a, created.key)).status).toBe(200);
      // Both instances now hold it in their cache as valid.
      const revoked = await admin(a, 'DELETE', `/admin/keys/${created.id}`);
      expect(revoked.body.status).toBe('revoked');
      const started = Date.now();
      expect((await models(a, created.key)).status).toBe(401);
      // B cached the key before the revocation, so it may answer 200 from that cache only to a request
      // sent within `ttl` of the revocation (a request is sent before B looks at it); then 401. No bound
      // on how long a loaded machine takes to answer.
      let refusedAfter = -1;
      for (;;) {
        const sentAt = Date.now();
        const res = await models(b, created.key);
        if (res.status === 401) {
          refusedAfter = Date.now() - started;
          expect((await res.json()).error).toMatchObject({
            code: 'invalid_api_key',
            message: 'This API key has been revoked',
          });
          break;
        }
        expect(res.status).toBe(200);
        expect(sentAt - started).toBeLessThanOrEqual(ttl);
        await res.arrayBuffer();
        await sleep(25);
      }
      console.info(
        `[scale-out ai-gateway, ${backend.name}] key revoked on A refused on B after ${refusedAfter} ms (AI_KEY_CACHE_TTL_MS=${ttl})`,
      );
      // And it stays refused on both.
      expect((await models(b, created.key)).status).toBe(401);
      expect((await models(a, created.key)).status).toBe(401);
    });

    it("a key's requests_per_minute counts calls on both instances", async () => {
      // A sliding window: no minute boundary to stay clear of.
      const { id, key } = await createKey(b, { requests_per_minute: 4 });
      // Four calls split 2/2: an in-process counter would allow 8.
      for (let i = 0; i < 4; i++) expect((await models(i % 2 ? b : a, key)).status).toBe(200);
      for (const app of [a, b]) {
        const res = await models(app, key);
        expect(res.status).toBe(429);
        expect((await res.json()).error.code).toBe('rate_limit_exceeded');
        expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      }
      // The window (per-second buckets of allowed calls) lives in the configured backend only (apps/ai-gateway/src/limits).
      const sum = (buckets: Record<string, string | number>) =>
        Object.entries(buckets)
          .filter(([k]) => k !== 'a')
          .reduce((n, [, v]) => n + Number(v), 0);
      const inPostgres = (await db.query(`SELECT bucket, amount FROM ai_limit_windows WHERE key = $1`, [`rpm:k:${id}`]))
        .rows;
      const inRedis = redis ? await redisKeysContaining(redis, `lim:rpm:k:${id}`) : [];
      if (backend.name === 'redis') {
        expect(inPostgres).toEqual([]);
        expect(inRedis).toHaveLength(1);
        expect(sum(await redis!.hgetall(inRedis[0]))).toBe(4);
      } else {
        expect(inPostgres.length).toBeGreaterThanOrEqual(1);
        expect(sum(Object.fromEntries(inPostgres.map((r) => [r.bucket, r.amount])))).toBe(4);
      }
    });

    it('the per-minute counter is exact under concurrency: 30 parallel calls over both instances, exactly 10 get through', async () => {
      // A sliding window: no minute boundary to stay clear of.
      const { key } = await createKey(a, { requests_per_minute: 10 });
      const statuses = await Promise.all(
        Array.from({ length: 30 }, (_, i) =>
          models(i % 2 ? b : a, key).then(async (r) => (await r.arrayBuffer(), r.status)),
        ),
      );
      expect(statuses.filter((s) => s === 200)).toHaveLength(10);
      expect(statuses.filter((s) => s === 429)).toHaveLength(20);
    });

    it('a budget is never overspent by concurrent calls spread over both instances', async () => {
      upstream.reset();
      upstream.behaviour.reply = 'w '.repeat(50).trim(); // 50 completion tokens: 0.1 yuan per call
      upstream.behaviour.delayMs = 50;
      try {
        const { id, key } = await createKey(b, { budget_yuan: 1 });
        const results = await Promise.all(
          Array.from({ length: 30 }, (_, i) =>
            sdk(i % 2 ? b : a, key)
              .chat.completions.create({
                model: 'vendor-gpt-4',
                max_tokens: 50,
                messages: [{ role: 'user', content: 'hi' }],
              })
              .then(
                () => 'ok',
                (e) =>
                  e.status === 429 && e.error?.code === 'insufficient_quota'
                    ? 'quota'
                    : `other ${e.status} ${e.message}`,
              ),
          ),
        );
        expect(results.filter((r) => r !== 'ok' && r !== 'quota')).toEqual([]);
        const ok = results.filter((r) => r === 'ok').length;
        expect(ok).toBeGreaterThanOrEqual(5);
        const k = (await admin(a, 'GET', `/admin/keys/${id}`)).body;
        expect(k.spent_yuan).toBeLessThanOrEqual(1);
        expect(k.reserved_yuan).toBe(0);
        expect(k.spent_yuan).toBeCloseTo(ok * (0.1 + 0.002), 6);
      } finally {
        upstream.reset();
      }
    });

    it('the usage ledger has exactly one row per call made across both instances, after graceful close', async () => {
      upstream.reset();
      const { id, key } = await createKey(a, { budget_yuan: 100 });
      const N = 24;
      const ids = Array.from({ length: N }, (_, i) => `so-${run}-${backend.name}-${i}`);
      const call = async (i: number) => {
        const client = new OpenAI({
          apiKey: key,
          baseURL: `${(i % 2 ? b : a).url}/v1`,
          maxRetries: 0,
          defaultHeaders: { 'X-Request-Id': ids[i] },
        });
        const messages = [{ role: 'user' as const, content: `count me ${i}` }];
        if (i % 4 < 2) {
          const r = await client.chat.completions.create({ model: 'vendor-gpt-4', messages });
          return r.choices[0].message.content;
        }
        let text = '';
        for await (const chunk of await client.chat.completions.create({
          model: 'vendor-gpt-4',
          messages,
          stream: true,
          stream_options: { include_usage: true },
        })) {
          text += chunk.choices[0]?.delta?.content ?? '';
        }
        return text;
      };
      // Six at a time, every batch spread over both instances.
      for (let i = 0; i < N; i += 6) {
        const answers = await Promise.all(ids.slice(i, i + 6).map((_, j) => call(i + j)));
        answers.forEach((t, j) => expect(t).toContain(`count me ${i + j}`));
      }
      expect(upstream.requests).toHaveLength(N);

      const rowsOf = async () =>
        (
          await db.query(
            `SELECT request_id, status, cost_yuan::text AS cost FROM ai_usage_records WHERE key_id = $1 ORDER BY request_id`,
            [id],
          )
        ).rows as { request_id: string; status: string; cost: string }[];
      // A flushes its half within its 100 ms tick; B holds its half (one-minute tick) until shutdown or
      // its tick. Waited for however long A's flush takes on a loaded machine (a missing flush ends at
      // Jest's timeout); rows are never written twice (the final count below is exact).
      const servedByA = ids.filter((_, i) => i % 2 === 0).sort();
      let before: string[] = [];
      while (!servedByA.every((r) => before.includes(r))) {
        before = (await rowsOf()).map((r) => r.request_id).sort();
        await sleep(50);
      }
      expect(before.every((r) => ids.includes(r))).toBe(true);

      await b.close();
      await a.app.close(); // graceful: flush whatever A still holds (the database stays for the count)
      const rows = await rowsOf();
      expect(rows).toHaveLength(N);
      expect(rows.map((r) => r.request_id).sort()).toEqual([...ids].sort());
      expect(rows.every((r) => r.status === 'ok' && Number(r.cost) > 0)).toBe(true);
      // The key was charged once per call: spent equals the ledger's sum, nothing left reserved.
      const k = (
        await db.query(
          `SELECT spent_yuan::text AS spent, (SELECT coalesce(sum(reserved_yuan), 0)::text FROM ai_budget_usage WHERE subject = 'k:' || $1::text) AS reserved FROM ai_api_keys WHERE id = $1::uuid`,
          [id],
        )
      ).rows[0];
      const ledgerSum = (
        await db.query(`SELECT sum(cost_yuan)::text AS total FROM ai_usage_records WHERE key_id = $1`, [id])
      ).rows[0].total;
      expect(Number(k.spent)).toBeCloseTo(Number(ledgerSum), 8);
      expect(Number(k.reserved)).toBe(0);
    });
  },
);
