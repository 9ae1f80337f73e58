/**
 * No limit is ever exceeded, with two gateway instances, on Redis or on PostgreSQL alone
 * (apps/ai-gateway/src/limits/). fast-check draws a key's and its project's limits and waves of
 * concurrent calls — plain, streamed, failing, abandoned by the client — sent to either instance,
 * against an OpenAI-protocol upstream that reports the usage each call asks for and holds every call
 * until the whole wave is answered or waiting (so calls in flight really overlap). Afterwards:
 * - concurrency: no wave had more calls at the upstream than a key's, project's or model's limit;
 * - requests and tokens per minute: no span of waves under a minute counted more than a limit (tokens:
 *   beyond what the upstream reported above a call's reservation, which is counted);
 * - budgets: the period's cost and tokens in the ledger stay within the key's and project's budgets (the
 *   same allowance), and the budget counters equal the ledger exactly;
 * - every reservation was settled or released: no holds, no leases, nothing reserved.
 * The instances share one FakeClock that the waves move forward (no test waits for a minute).
 */
import { createServer, IncomingMessage, Server, ServerResponse } from 'http';
import { AddressInfo } from 'net';
import { mkdtempSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { randomBytes, randomUUID } from 'crypto';
import fc from 'fast-check';
import type Redis from 'ioredis';
import { Client } from 'pg';
import { LedgerRepository } from '../../apps/ai-gateway/src/usage/ledger.repository';
import { RunningApp, startGateway } from '../support/apps';
import { FakeClock } from '../support/clock';
import { sqlClient } from '../support/database';
import { until } from '../support/until';
import { Backend, backends, forgetRedisKeys, redisClient, redisKeysContaining } from './shared-backends';

const ADMIN_TOKEN = 'limits-property-admin-token-0123';
const MODELS = ['vendor-a', 'vendor-b'] as const;
type Model = (typeof MODELS)[number];
/** Yuan per token: 1 per 1000 in, 2 per 1000 out (the providers file below). */
const OUT_PRICE = 2 / 1000;

/** What a call asks the upstream to do; carried in the message so the upstream needs no other channel. */
interface Directive {
  call: string;
  mode: 'plain' | 'stream' | 'fail' | 'abandon';
  completion: number;
}

/** An OpenAI-protocol upstream: answers each call as its directive says, after the test opens the gate. */
class GatedUpstream {
  private server!: Server;
  url = '';
  waiting: Directive[] = [];
  private gate: { open: Promise<void>; release: () => void } = this.closedGate();

  private closedGate() {
    let release!: () => void;
    const open = new Promise<void>((r) => (release = r));
    return { open, release };
  }

  async start(): Promise<void> {
    this.server = createServer((req, res) => void this.handle(req, res));
    this.server.keepAliveTimeout = 120_000; // as test/support/upstreams/fake-upstream.ts says why
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1`;
  }

  /** Lets the waiting calls (and every later one) through; the next wave closes it again. */
  open(): void {
    this.gate.release();
  }

  close(): void {
    this.waiting = [];
    this.gate = this.closedGate();
  }

  stop(): Promise<void> {
    this.gate.release();
    this.server.closeAllConnections();
    return new Promise((r) => this.server.close(() => r()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    const d = JSON.parse(body.messages[0].content) as Directive;
    this.waiting.push(d);
    await this.gate.open;
    if (d.mode === 'fail') {
      res
        .writeHead(500, { 'content-type': 'application/json' })
        .end(JSON.stringify({ error: { message: 'fake failure', type: 'server_error' } }));
      return;
    }
    const usage = { prompt_tokens: 1, completion_tokens: d.completion, total_tokens: 1 + d.completion };
    const text = 'a '.repeat(d.completion);
    if (!body.stream) {
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          id: 'c',
          object: 'chat.completion',
          created: 1,
          model: body.model,
          choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }],
          usage,
        }),
      );
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const chunk = (delta: object, extra: object = {}) =>
      `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: body.model, choices: [{ index: 0, delta, finish_reason: null }], ...extra })}\n\n`;
    res.write(chunk({ role: 'assistant', content: '' }));
    if (d.mode === 'abandon') {
      // The client goes away after the first chunk; the rest never comes (the gateway cuts the upstream).
      res.write(chunk({ content: text }));
      req.socket.once('close', () => res.end());
      return;
    }
    res.write(chunk({ content: text }));
    res.write(
      `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: body.model, choices: [], usage })}\n\n`,
    );
    res.end('data: [DONE]\n\n');
  }
}

interface LimitDraw {
  requests_per_minute: number | null;
  tokens_per_minute: number | null;
  max_concurrent_requests: number | null;
  budget_yuan: number | null;
  budget_tokens: number | null;
}

const limitDraw: fc.Arbitrary<LimitDraw> = fc.record({
  requests_per_minute: fc.option(fc.integer({ min: 2, max: 14 }), { nil: null }),
  tokens_per_minute: fc.option(fc.integer({ min: 120, max: 700 }), { nil: null }),
  max_concurrent_requests: fc.option(fc.integer({ min: 1, max: 4 }), { nil: null }),
  budget_yuan: fc.option(
    fc.integer({ min: 20, max: 120 }).map((n) => n / 100),
    { nil: null },
  ),
  budget_tokens: fc.option(fc.integer({ min: 150, max: 900 }), { nil: null }),
});

const modelDraw = fc.record({
  requests_per_minute: fc.option(fc.integer({ min: 1, max: 8 }), { nil: null }),
  tokens_per_minute: fc.option(fc.integer({ min: 100, max: 500 }), { nil: null }),
  max_concurrent_requests: fc.option(fc.integer({ min: 1, max: 3 }), { nil: null }),
});

const callDraw = fc.record({
  key: fc.integer({ min: 0, max: 1 }),
  instance: fc.integer({ min: 0, max: 1 }),
  model: fc.constantFrom(...MODELS),
  mode: fc.constantFrom<Directive['mode']>('plain', 'plain', 'stream', 'fail', 'abandon'),
  maxTokens: fc.integer({ min: 5, max: 60 }),
  /** Reported completion tokens relative to max_tokens: mostly within, sometimes above (an upstream miscounting). */
  over: fc.oneof(fc.integer({ min: -5, max: 0 }), fc.integer({ min: -5, max: 0 }), fc.integer({ min: 1, max: 15 })),
});

const scenario = fc.record({
  key: limitDraw,
  project: limitDraw,
  modelLimits: fc.option(modelDraw, { nil: null }),
  /** Each wave: how far the clock moves first (ms), then its calls, sent together. */
  waves: fc.array(
    fc.record({
      advance: fc.integer({ min: 0, max: 40_000 }),
      calls: fc.array(callDraw, { minLength: 1, maxLength: 8 }),
    }),
    { minLength: 2, maxLength: 5 },
  ),
});

interface Outcome {
  wave: number;
  at: number;
  key: number;
  model: Model;
  status: number;
  param: string | null;
  requestId: string;
  maxTokens: number;
  /** Reached the upstream (admitted). */
  admitted: boolean;
  /** Refused at authentication by a key's or project's requests-per-minute window (not counted in any). */
  refusedAtAuth: boolean;
}

type CallDraw = typeof callDraw extends fc.Arbitrary<infer T> ? T : never;
type Scenario = typeof scenario extends fc.Arbitrary<infer T> ? T : never;

describe.each(backends('limits property'))(
  'limits hold across two instances (fast-check), %s',
  (_label: string, backend: Backend) => {
    let a: RunningApp;
    let b: RunningApp;
    let upstream: GatedUpstream;
    let db: Client;
    let redis: Redis | undefined;
    const clock = new FakeClock(Date.parse('2026-11-27T04:00:00Z')); // noon in Asia/Shanghai: the daily budget does not roll over
    const ids = new Set<string>();
    const run = randomBytes(3).toString('hex');

    const admin = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${a.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: res.status, body: await res.json() };
    };

    beforeAll(async () => {
      upstream = new GatedUpstream();
      await upstream.start();
      const dir = mkdtempSync(join(tmpdir(), 'limits-property-'));
      const providersFile = join(dir, 'providers.json');
      writeFileSync(
        providersFile,
        JSON.stringify({
          routing: { maxAttempts: 1, cooldownMs: 0 },
          models: Object.fromEntries(
            MODELS.map((m) => [
              m,
              { kind: 'chat', contextLength: 8192, encoding: 'cl100k_base', price: { inputPer1k: 1, outputPer1k: 2 } },
            ]),
          ),
          deployments: [
            { name: 'gated', type: 'openai', baseUrl: upstream.url, timeoutMs: 60_000, models: [...MODELS] },
          ],
        }),
      );
      const env = {
        ...backend.env,
        AI_PROVIDERS_FILE: providersFile,
        ADMIN_TOKEN,
        AI_LOCAL_ENGINES: 'false',
        AI_LOCAL_STT: 'false',
        RATE_LIMIT_PER_MINUTE: '100000',
        AI_KEY_CACHE_TTL_MS: '1000',
        // A wave's calls are all answered before the clock moves: refusals are not held (limits.e2e-spec.ts tests the hold).
        AI_REFUSAL_HOLD_MS: '0',
      };
      a = await startGateway(env, { clock });
      b = await startGateway(env, { dbUrl: a.dbUrl, clock });
      db = await sqlClient(a.dbUrl);
      if (backend.name === 'redis') redis = redisClient();
    });

    afterAll(async () => {
      await db?.end();
      await b?.close();
      await a?.close();
      if (redis) {
        await forgetRedisKeys(redis, ids);
        redis.disconnect();
      }
      await upstream?.stop();
    });

    /** One call as a client sends it; an abandoning client hangs up after the first chunk. */
    async function send(
      app: RunningApp,
      key: string,
      c: CallDraw,
    ): Promise<{ status: number; param: string | null; message: string; requestId: string }> {
      const requestId = randomUUID();
      const directive: Directive = { call: requestId, mode: c.mode, completion: Math.max(0, c.maxTokens + c.over) };
      const ac = new AbortController();
      const res = await fetch(`${app.url}/v1/chat/completions`, {
        method: 'POST',
        signal: ac.signal,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'x-request-id': requestId },
        body: JSON.stringify({
          model: c.model,
          max_tokens: c.maxTokens,
          stream: c.mode === 'stream' || c.mode === 'abandon',
          ...(c.mode === 'stream' ? { stream_options: { include_usage: true } } : {}),
          messages: [{ role: 'user', content: JSON.stringify(directive) }],
        }),
      });
      if (c.mode === 'abandon' && res.status === 200) {
        const reader = res.body!.getReader();
        await reader.read();
        ac.abort();
        return { status: 200, param: null, message: '', requestId };
      }
      const text = await res.text();
      const error = res.status === 200 ? null : JSON.parse(text).error;
      return {
        status: res.status,
        param: error ? (error.param ?? error.code ?? null) : null,
        message: error?.message ?? '',
        requestId,
      };
    }

    it('no window, lease or budget period is ever exceeded, and every reservation ends', async () => {
      await fc.assert(
        fc.asyncProperty(scenario, async (s) => {
          const created = await admin('POST', '/admin/projects', {
            name: `p-${run}`,
            ...s.project,
            budget_period: 'daily',
            model_limits: s.modelLimits ? { 'vendor-b': s.modelLimits } : null,
          });
          expect(created.status).toBe(201);
          const project = created.body.id as string;
          ids.add(project);
          const keys: Array<{ id: string; key: string }> = [];
          for (let i = 0; i < 2; i++) {
            // Key 0 carries its own limits (and the per-model ones); key 1 only the project's.
            const own =
              i === 0
                ? {
                    ...s.key,
                    budget_period: 'daily',
                    model_limits: s.modelLimits ? { 'vendor-a': s.modelLimits } : null,
                  }
                : {};
            const res = await admin('POST', '/admin/keys', { name: `k${i}-${run}`, project_id: project, ...own });
            expect(res.status).toBe(201);
            keys.push(res.body);
            ids.add(res.body.id);
          }

          const outcomes: Outcome[] = [];
          for (const [w, wave] of s.waves.entries()) {
            clock.advance(wave.advance);
            upstream.close();
            let answered = 0;
            const sent = wave.calls.map((c) =>
              send([a, b][c.instance], keys[c.key].key, c).then((r) => {
                if (!upstream.waiting.some((d) => d.call === r.requestId)) answered++;
                return r;
              }),
            );
            // Every call is either refused (answered) or held at the upstream: the wave's overlap is complete.
            await until(() => answered + upstream.waiting.length >= wave.calls.length);
            const admitted = new Set(upstream.waiting.map((d) => d.call));
            // With the wave's calls in flight, what the counters hold (their reservations) fits every limit.
            await expectCountersWithin(s, keys[0].id, project);
            upstream.open();
            const results = await Promise.all(sent);
            results.forEach((r, i) => {
              const c = wave.calls[i];
              const refusedAtAuth =
                r.status === 429 && r.param === 'requests_per_minute' && !r.message.includes(' for model ');
              outcomes.push({
                wave: w,
                at: clock.now(),
                key: c.key,
                model: c.model,
                status: r.status,
                param: r.param,
                requestId: r.requestId,
                maxTokens: c.maxTokens,
                admitted: admitted.has(r.requestId),
                refusedAtAuth,
              });
            });
            // Every refusal is a 429 naming its limit; nothing else fails but the calls told to.
            for (const [i, r] of results.entries()) {
              if (!admitted.has(r.requestId)) expect([r.status, typeof r.param]).toEqual([429, 'string']);
              else expect(r.status).toBe(wave.calls[i].mode === 'fail' ? 502 : 200);
            }
          }

          // Every call settles (an abandoned stream settles once the gateway sees the client gone).
          await until(
            async () =>
              (await db.query(`SELECT count(*)::int AS n FROM ai_limit_holds`)).rows[0].n === 0 &&
              (await leaseCount(keys, project)) === 0,
          );
          await Promise.all([a, b].map((app) => app.app.get(LedgerRepository).flush()));
          const ledger = new Map<string, { tokens: number; completion: number; cost: number }>(
            (
              await db.query(
                `SELECT request_id, prompt_tokens, completion_tokens, cost_yuan::float8 AS cost FROM ai_usage_records WHERE key_id = ANY($1::uuid[])`,
                [keys.map((k) => k.id)],
              )
            ).rows.map((r) => [
              r.request_id,
              { tokens: r.prompt_tokens + r.completion_tokens, completion: r.completion_tokens, cost: r.cost },
            ]),
          );
          const admittedCalls = outcomes.filter((o) => o.admitted);
          expect(admittedCalls.every((o) => ledger.has(o.requestId))).toBe(true);
          const used = (o: Outcome) => ledger.get(o.requestId)!;
          const excess = (o: Outcome) => Math.max(0, used(o).completion - o.maxTokens);

          const scopes: Array<{ limits: LimitDraw; member: (o: Outcome) => boolean; perModel?: Model }> = [
            { limits: s.key, member: (o) => o.key === 0 },
            { limits: s.project, member: () => true },
          ];
          if (s.modelLimits) {
            const m = { ...nulls(), ...s.modelLimits };
            scopes.push({ limits: m, member: (o) => o.key === 0 && o.model === 'vendor-a', perModel: 'vendor-a' });
            scopes.push({ limits: m, member: (o) => o.model === 'vendor-b', perModel: 'vendor-b' });
          }
          for (const scope of scopes) {
            const mine = outcomes.filter(scope.member);
            // Concurrency: calls of one wave were all in flight together.
            if (scope.limits.max_concurrent_requests !== null) {
              for (let w = 0; w < s.waves.length; w++)
                expect(mine.filter((o) => o.wave === w && o.admitted).length).toBeLessThanOrEqual(
                  scope.limits.max_concurrent_requests,
                );
            }
            // Windows: every span of waves shorter than a minute.
            for (let i = 0; i < s.waves.length; i++) {
              for (let j = i; j < s.waves.length; j++) {
                const span = mine.filter((o) => o.wave >= i && o.wave <= j);
                if (span.length && span[span.length - 1].at - span[0].at >= 60_000) continue;
                if (scope.limits.requests_per_minute !== null) {
                  // Per-model requests are counted at admission; a key's or project's at authentication.
                  const counted = scope.perModel
                    ? span.filter((o) => o.admitted)
                    : span.filter((o) => !o.refusedAtAuth);
                  expect(counted.length).toBeLessThanOrEqual(scope.limits.requests_per_minute);
                }
                if (scope.limits.tokens_per_minute !== null) {
                  const admitted = span.filter((o) => o.admitted);
                  const tokens = admitted.reduce((t, o) => t + used(o).tokens, 0);
                  expect(tokens).toBeLessThanOrEqual(
                    scope.limits.tokens_per_minute + admitted.reduce((t, o) => t + excess(o), 0),
                  );
                }
              }
            }
            if (!scope.perModel) {
              // Budgets of the (one) daily period.
              const admitted = mine.filter((o) => o.admitted);
              const cost = admitted.reduce((t, o) => t + used(o).cost, 0);
              const tokens = admitted.reduce((t, o) => t + used(o).tokens, 0);
              const over = admitted.reduce((t, o) => t + excess(o), 0);
              if (scope.limits.budget_yuan !== null)
                expect(cost).toBeLessThanOrEqual(scope.limits.budget_yuan + over * OUT_PRICE + 1e-9);
              if (scope.limits.budget_tokens !== null)
                expect(tokens).toBeLessThanOrEqual(scope.limits.budget_tokens + over);
            }
          }
          // The budget counters equal the ledger, and nothing is left reserved.
          const rows = (
            await db.query(
              `SELECT subject, spent_yuan::float8 AS spent, reserved_yuan::float8 AS reserved, spent_tokens::int AS tokens, reserved_tokens::int AS rtokens FROM ai_budget_usage WHERE subject = ANY($1)`,
              [[`k:${keys[0].id}`, `p:${project}`]],
            )
          ).rows;
          const budgeted = (l: LimitDraw) => l.budget_yuan !== null || l.budget_tokens !== null;
          // Rows for budgeted subjects only, and one for each whose calls were admitted (the admission creates it).
          const seen = rows.map((r) => r.subject);
          expect(seen.filter((x) => x !== `k:${keys[0].id}` && x !== `p:${project}`)).toEqual([]);
          if (seen.includes(`k:${keys[0].id}`)) expect(budgeted(s.key)).toBe(true);
          if (seen.includes(`p:${project}`)) expect(budgeted(s.project)).toBe(true);
          if (budgeted(s.key) && outcomes.some((o) => o.admitted && o.key === 0))
            expect(seen).toContain(`k:${keys[0].id}`);
          if (budgeted(s.project) && outcomes.some((o) => o.admitted)) expect(seen).toContain(`p:${project}`);
          for (const r of rows) {
            const mine = outcomes.filter((o) => o.admitted && (r.subject.startsWith('p:') || o.key === 0));
            expect(r.spent).toBeCloseTo(
              mine.reduce((t, o) => t + used(o).cost, 0),
              8,
            );
            expect(r.tokens).toBe(mine.reduce((t, o) => t + used(o).tokens, 0));
            expect([r.reserved, r.rtokens]).toEqual([0, 0]);
          }
          // The next draw starts in a fresh minute.
          clock.advance(61_000);
        }),
        { numRuns: Number(process.env.LIMITS_PROPERTY_RUNS ?? 12), endOnFailure: true },
      );
    });

    /** The sum a window counts now (its buckets from now - 60 s on) and the leases a counter holds, in the backend in use. */
    async function windowUsed(key: string): Promise<number> {
      const first = Math.floor((clock.now() - 60_000) / 1000);
      if (backend.name === 'postgres')
        return Number(
          (
            await db.query(
              `SELECT coalesce(sum(amount), 0) AS n FROM ai_limit_windows WHERE key = $1 AND bucket >= $2`,
              [key, first],
            )
          ).rows[0].n,
        );
      const buckets = await redis!.hgetall(`${backend.env.REDIS_KEY_PREFIX}lim:${key}`);
      return Object.entries(buckets).reduce((n, [b, v]) => (Number(b) >= first ? n + Number(v) : n), 0);
    }
    async function leasesHeld(key: string): Promise<number> {
      if (backend.name === 'postgres')
        return (
          await db.query(`SELECT count(*)::int AS n FROM ai_limit_leases WHERE key = $1 AND expires_at > now()`, [key])
        ).rows[0].n;
      return redis!.zcount(`${backend.env.REDIS_KEY_PREFIX}lim:${key}`, clock.now(), '+inf');
    }
    async function expectCountersWithin(s: Scenario, keyId: string, project: string): Promise<void> {
      const counters: Array<[string, LimitDraw]> = [
        [`k:${keyId}`, s.key],
        [`p:${project}`, s.project],
      ];
      if (s.modelLimits)
        counters.push(
          [`k:${keyId}:vendor-a`, { ...nulls(), ...s.modelLimits }],
          [`p:${project}:vendor-b`, { ...nulls(), ...s.modelLimits }],
        );
      for (const [tag, l] of counters) {
        if (l.tokens_per_minute !== null)
          expect(await windowUsed(`tpm:${tag}`)).toBeLessThanOrEqual(l.tokens_per_minute);
        if (l.requests_per_minute !== null)
          expect(await windowUsed(`rpm:${tag}`)).toBeLessThanOrEqual(l.requests_per_minute);
        if (l.max_concurrent_requests !== null)
          expect(await leasesHeld(`conc:${tag}`)).toBeLessThanOrEqual(l.max_concurrent_requests);
      }
    }

    async function leaseCount(keys: Array<{ id: string }>, project: string): Promise<number> {
      if (backend.name === 'postgres')
        return (await db.query(`SELECT count(*)::int AS n FROM ai_limit_leases`)).rows[0].n;
      let n = 0;
      for (const id of [...keys.map((k) => k.id), project])
        for (const k of await redisKeysContaining(redis!, `conc:`)) if (k.includes(id)) n += await redis!.zcard(k);
      return n;
    }
  },
);

function nulls(): LimitDraw {
  return {
    requests_per_minute: null,
    tokens_per_minute: null,
    max_concurrent_requests: null,
    budget_yuan: null,
    budget_tokens: null,
  };
}
