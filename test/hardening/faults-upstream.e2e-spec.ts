// Upstream AI provider faults, mixed at random (fast-check): refused connections, timeouts, 500s,
// 429s, garbage answers and streams dropped half way, with and without a fallback deployment.
// Every call ends cleanly (a result, an OpenAI-shaped error, or a stream that ends with [DONE] or an
// error event), failed calls are not charged, and no sockets or file descriptors are left behind.
import { readdirSync } from 'fs';
import { createServer, Server } from 'http';
import { AddressInfo } from 'net';
import fc from 'fast-check';
import { Client } from 'pg';
import { GatewayFixture, startGatewayFixture } from '../ai-gateway/gateway-fixture';
import { FakeClock } from '../support/clock';
import { until } from '../support/until';
import { FakeUpstream } from '../support/upstreams';
import { openSocketsTo, rawRequest, RawResponse } from './support/http';
import { openAiShapeProblem } from './support/shapes';
import { report, RUNS, SEED } from './support/runs';
import { freePort } from '../support/free-port';

type Garbage = 'html' | 'truncated-json' | 'wrong-json' | 'sse-garbage' | 'hangup' | 'empty';

/** An "upstream" that answers chat calls with junk of a chosen kind. */
async function startGarbageUpstream(): Promise<{
  url: string;
  port: number;
  mode: { kind: Garbage };
  close(): Promise<void>;
}> {
  const mode = { kind: 'html' as Garbage };
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      switch (mode.kind) {
        case 'html':
          res.writeHead(200, { 'content-type': 'text/html' }).end('<html><body>Bad Gateway</body></html>');
          break;
        case 'truncated-json':
          res.writeHead(200, { 'content-type': 'application/json' }).end('{"id":"x","choices":[{"mess');
          break;
        case 'wrong-json':
          res
            .writeHead(200, { 'content-type': 'application/json' })
            .end('{"choices":"nope","usage":{"prompt_tokens":"many"}}');
          break;
        case 'sse-garbage':
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          res.write('data: {not json}\n\n');
          res.write('data: {"choices":[{"delta":{"content":42}}]}\n\n');
          res.end('event: weird\ndata: \u0000\n\n');
          break;
        case 'hangup':
          req.socket.destroy();
          break;
        case 'empty':
          res.writeHead(200, { 'content-type': 'application/json' }).end();
          break;
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    port,
    mode,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

const fdCount = () => readdirSync('/proc/self/fd').length;
const portOf = (u: FakeUpstream | { url: string }) => Number(new URL(u.url).port);

type Fault =
  | { kind: 'none' }
  | { kind: 'status500'; times: number }
  | { kind: 'status429'; times: number }
  | { kind: 'timeout' }
  | { kind: 'drop'; after: number }
  | { kind: 'garbage'; garbage: Garbage };

describe('hardening: upstream faults', () => {
  let fx: GatewayFixture;
  let garbage: Awaited<ReturnType<typeof startGarbageUpstream>>;
  let refusedPort: number;
  let key: string;
  let keyId: string;
  // Cooldowns end by the gateway's clock; each scenario moves it past the previous one's.
  const clock = new FakeClock();

  beforeAll(async () => {
    Object.assign(process.env, { FAKE_OPENAI_KEY: 'sk-upstream-openai', FAKE_ANTHROPIC_KEY: 'sk-upstream-anthropic' });
    garbage = await startGarbageUpstream();
    refusedPort = await freePort(); // nothing listens there (below the ephemeral range: nobody is given it meanwhile)
    const price = { kind: 'chat', price: { inputPer1k: 1, outputPer1k: 2 } };
    fx = await startGatewayFixture(
      {},
      ({ openai, backup }) => ({
        routing: { maxAttempts: 3, backoffMs: 10, cooldownMs: 100, maxRetryAfterMs: 1500 },
        models: { 'm-flaky': price, 'm-fallback': price, 'm-refused': price, 'm-garbage': price },
        deployments: [
          // m-flaky: one deployment whose behaviour each scenario sets; no fallback.
          {
            name: 'flaky',
            type: 'openai',
            baseUrl: openai.url,
            apiKeyEnv: 'FAKE_OPENAI_KEY',
            timeoutMs: 700,
            models: ['m-flaky'],
          },
          // m-fallback: a refusing deployment and a healthy backup.
          {
            name: 'refusing',
            type: 'openai',
            baseUrl: `http://127.0.0.1:${refusedPort}/v1`,
            timeoutMs: 700,
            models: ['m-fallback', 'm-refused'],
          },
          { name: 'healthy', type: 'openai', baseUrl: backup.url, timeoutMs: 700, models: ['m-fallback'] },
          { name: 'junk', type: 'openai', baseUrl: garbage.url, timeoutMs: 700, models: ['m-garbage'] },
        ],
      }),
      { clock },
    );
    ({ key, id: keyId } = await fx.createKey({ name: 'faults' }));
  }, 60_000);

  afterAll(async () => {
    await fx?.close();
    await garbage?.close();
  });

  const chat = (model: string, stream: boolean): Promise<RawResponse> =>
    rawRequest(fx.gw.url, {
      method: 'POST',
      path: '/v1/chat/completions',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model, stream, messages: [{ role: 'user', content: 'tell me a few words please' }] }),
      timeoutMs: 15_000,
    });

  /** 'ok' for a complete answer, 'error' for a clean failure; throws on anything unclean. */
  function judge(res: RawResponse, stream: boolean): 'ok' | 'error' {
    if (res.status >= 500 && ![502, 503, 504].includes(res.status))
      throw new Error(`HTTP ${res.status}: ${res.text.slice(0, 200)}`);
    const problem = openAiShapeProblem(res);
    if (problem) throw new Error(problem);
    if (res.status !== 200) return 'error';
    if (!stream) {
      if (!Array.isArray(res.json?.choices) || typeof res.json.choices[0]?.message?.content !== 'string')
        throw new Error(`200 without a completion: ${res.text.slice(0, 200)}`);
      return 'ok';
    }
    const events = res.text
      .split('\n\n')
      .map((e) => e.trim())
      .filter(Boolean);
    const last = events[events.length - 1];
    if (last === 'data: [DONE]') {
      if (events.some((e) => /"error"/.test(e))) throw new Error('stream carries an error and still ends with [DONE]');
      return 'ok';
    }
    if (last && /^data: \{"error"/.test(last)) return 'error';
    throw new Error(`stream ended uncleanly: ${JSON.stringify(res.text.slice(-200))}`);
  }

  function apply(f: Fault): void {
    for (const u of [fx.openai, fx.openaiBackup]) {
      const apiKey = u.behaviour.apiKey;
      u.reset();
      u.behaviour.apiKey = apiKey;
    }
    fx.openai.behaviour.reply = 'one two three four five six seven eight';
    if (f.kind === 'status500') Object.assign(fx.openai.behaviour, { failTimes: f.times, failStatus: 500 });
    if (f.kind === 'status429') Object.assign(fx.openai.behaviour, { rateLimitTimes: f.times, retryAfterSeconds: 1 });
    if (f.kind === 'timeout') fx.openai.behaviour.delayMs = 1200;
    if (f.kind === 'drop') fx.openai.behaviour.dropAfterChunks = f.after;
    if (f.kind === 'garbage') garbage.mode.kind = f.garbage;
  }

  async function ledger(): Promise<{ status: string; cost: number }[]> {
    await fetch(`${fx.gw.url}/v1/usage`, { headers: { authorization: `Bearer ${key}` } }); // flushes the batch
    const db = new Client({ connectionString: fx.gw.dbUrl });
    await db.connect();
    try {
      return (
        await db.query(
          `SELECT status, cost_yuan::float AS cost FROM ai_usage_records WHERE key_id = $1 AND endpoint LIKE '%chat%' ORDER BY id`,
          [keyId],
        )
      ).rows;
    } finally {
      await db.end();
    }
  }

  it(
    'random fault scenarios: clean answers, retries and fallbacks as configured, failed calls free, no leaked sockets',
    async () => {
      const upstreamPorts = [portOf(fx.openai), portOf(fx.openaiBackup), garbage.port];
      const sockets = () =>
        upstreamPorts.reduce((n, p) => n + openSocketsTo(p), 0) + openSocketsTo(Number(new URL(fx.gw.url).port));
      const fdsBefore = fdCount();
      const socketsBefore = sockets();
      const fault: fc.Arbitrary<Fault> = fc.oneof(
        fc.constant<Fault>({ kind: 'none' }),
        fc.integer({ min: 1, max: 5 }).map<Fault>((times) => ({ kind: 'status500', times })),
        fc.integer({ min: 1, max: 4 }).map<Fault>((times) => ({ kind: 'status429', times })),
        fc.constant<Fault>({ kind: 'timeout' }),
        fc.integer({ min: 0, max: 4 }).map<Fault>((after) => ({ kind: 'drop', after })),
        fc
          .constantFrom<Garbage>('html', 'truncated-json', 'wrong-json', 'sse-garbage', 'hangup', 'empty')
          .map<Fault>((g) => ({ kind: 'garbage', garbage: g })),
      );
      const scenarios = fc.sample(
        fc.record({ fault, stream: fc.boolean(), parallel: fc.integer({ min: 1, max: 3 }), fallback: fc.boolean() }),
        { numRuns: RUNS, seed: SEED },
      );
      const outcomes: Record<string, number> = {};
      let calls = 0;
      let oks = 0;
      for (const s of scenarios) {
        apply(s.fault);
        clock.advance(120); // cooldowns from the previous scenario run out
        const model = s.fault.kind === 'garbage' ? 'm-garbage' : s.fallback ? 'm-fallback' : 'm-flaky';
        const results = await Promise.all(Array.from({ length: s.parallel }, () => chat(model, s.stream)));
        for (const res of results) {
          calls++;
          let verdict: string;
          try {
            verdict = judge(res, s.stream);
          } catch (e) {
            throw new Error(`${JSON.stringify(s)}: ${(e as Error).message}`);
          }
          if (verdict === 'ok') oks++;
          const label = `${s.fault.kind}${s.fault.kind === 'garbage' ? `:${s.fault.garbage}` : ''}/${model}/${s.stream ? 'stream' : 'plain'}/${res.status}/${verdict}`;
          outcomes[label] = (outcomes[label] ?? 0) + 1;
          // What must happen, by configuration:
          if (model === 'm-fallback') expect({ s, verdict }).toEqual({ s, verdict: 'ok' }); // refused deployment -> healthy backup
          if (model === 'm-garbage' && !(s.stream && s.fault.kind === 'garbage' && s.fault.garbage === 'sse-garbage'))
            expect({ s, verdict }).toEqual({ s, verdict: 'error' });
          if (model === 'm-flaky' && s.fault.kind === 'none') expect({ s, verdict }).toEqual({ s, verdict: 'ok' });
          if (model === 'm-flaky' && s.fault.kind === 'timeout')
            expect({ s, status: res.status }).toEqual({ s, status: 504 });
          // Retries: two 500s or one 429 within maxAttempts=3 are absorbed (parallel calls share the counters).
          if (
            model === 'm-flaky' &&
            s.parallel === 1 &&
            ((s.fault.kind === 'status500' && s.fault.times <= 2) ||
              (s.fault.kind === 'status429' && s.fault.times <= 2))
          )
            expect({ s, verdict }).toEqual({ s, verdict: 'ok' });
        }
      }
      // Refused outright: no deployment left.
      const refused = await chat('m-refused', false);
      expect([502, 503]).toContain(refused.status);
      expect(openAiShapeProblem(refused)).toBeNull();
      calls++;

      // Charges: failed calls cost nothing; every complete answer is one charged row.
      // Every call was settled (its row queued) before its answer ended (the JSON body, a stream's
      // [DONE] or error event), and GET /v1/usage writes what is queued: one read has every row.
      const rows = await ledger();
      const charged = rows.filter((r) => r.cost > 0);
      expect(rows.filter((r) => r.status === 'failed' && r.cost !== 0)).toEqual([]);
      expect(rows.filter((r) => r.status === 'ok').length).toBe(oks);
      expect(charged.every((r) => r.status === 'ok' || r.status === 'aborted')).toBe(true);

      // Sockets and descriptors: after idle keep-alive connections time out, nothing is left open.
      // The gateway's upstream pools keep idle keep-alive sockets (30 s): at most one per call that ran
      // at once (parallel <= 3) per upstream is reuse, not a leak; a leak grows with the 20+ failed calls.
      const pooledAllowance = upstreamPorts.length * 3;
      let socketsAfter = sockets();
      // Closing sockets settle on their own time: waited for (a leak never settles and ends at Jest's timeout).
      let fdsAfter = fdCount();
      await until(
        () => (socketsAfter = sockets()) <= socketsBefore + pooledAllowance && (fdsAfter = fdCount()) - fdsBefore < 10,
        250,
      );
      report('faults-upstream', {
        seed: SEED,
        scenarios: scenarios.length,
        calls,
        complete: oks,
        ledgerRows: rows.length,
        socketsBefore,
        socketsAfter,
        fdsBefore,
        fdsAfter,
        outcomes,
      });
      expect(socketsAfter).toBeLessThanOrEqual(socketsBefore + pooledAllowance);
      expect(calls).toBeGreaterThan(pooledAllowance); // enough calls that a per-call leak would show
      expect(fdsAfter - fdsBefore).toBeLessThan(10);
    },
    10 * 60_000,
  );
});
