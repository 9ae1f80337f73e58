import { request as httpRequest } from 'http';
import OpenAI from 'openai';
import { Client } from 'pg';
import { FakeClock } from '../support/clock';
import { until } from '../support/until';
import { GatewayFixture, startGatewayFixture } from './gateway-fixture';

describe('AI gateway routing: retries, fallback, cooldown, upstream failures, streams', () => {
  let f: GatewayFixture;
  let key: string;
  let keyId: string;
  let client: OpenAI;
  // Cooldowns end by the gateway's clock, which stands still unless a test moves it.
  const clock = new FakeClock();

  beforeAll(async () => {
    f = await startGatewayFixture(
      {},
      ({ openai, backup, anthropic }) => ({
        routing: { maxAttempts: 3, backoffMs: 20, cooldownMs: 500, maxRetryAfterMs: 3000 },
        models: {
          'vendor-gpt-4': { price: { inputPer1k: 1, outputPer1k: 2 } },
          'vendor-gpt-4-mini': { price: { inputPer1k: 1, outputPer1k: 2 } },
        },
        deployments: [
          {
            name: 'primary',
            type: 'openai',
            baseUrl: openai.url,
            apiKeyEnv: 'FAKE_OPENAI_KEY',
            timeoutMs: 800,
            models: ['vendor-gpt-4', 'vendor-gpt-4-mini'],
          },
          { name: 'backup', type: 'openai', baseUrl: backup.url, timeoutMs: 800, models: ['vendor-gpt-4'] },
          {
            name: 'claude',
            type: 'anthropic',
            baseUrl: anthropic.url,
            apiKeyEnv: 'FAKE_ANTHROPIC_KEY',
            timeoutMs: 800,
            models: ['vendor-claude-3'],
          },
        ],
      }),
      { clock },
    );
    ({ key, id: keyId } = await f.createKey({ name: 'routing' }));
    client = new OpenAI({ apiKey: key, baseURL: `${f.gw.url}/v1`, maxRetries: 0, timeout: 15_000 });
  });
  afterAll(() => f?.close());
  beforeEach(async () => {
    for (const u of [f.openai, f.openaiBackup, f.anthropic]) {
      const apiKey = u.behaviour.apiKey;
      u.reset();
      u.behaviour.apiKey = apiKey;
    }
    // Cooldowns from the previous test run out.
    clock.advance(600);
  });
  const ask = (model = 'vendor-gpt-4-mini') => ({
    model,
    messages: [{ role: 'user' as const, content: 'hello there' }],
  });

  async function ledger(where = ''): Promise<any[]> {
    await fetch(`${f.gw.url}/v1/usage`, { headers: { authorization: `Bearer ${key}` } }); // flushes the batch
    const db = new Client({ connectionString: f.gw.dbUrl });
    await db.connect();
    try {
      return (
        await db.query(
          `SELECT status, provider, prompt_tokens, completion_tokens, cost_yuan::float AS cost, error FROM ai_usage_records WHERE key_id = $1 ${where} ORDER BY id`,
          [keyId],
        )
      ).rows;
    } finally {
      await db.end();
    }
  }

  it('falls back to another deployment when one fails, and cools the failing one down', async () => {
    f.openai.behaviour.failTimes = 100;
    for (let i = 0; i < 6; i++) {
      const res = await client.chat.completions.create(ask('vendor-gpt-4'));
      expect(res.choices[0].message.content).toBe('Echo: hello there');
    }
    expect(f.openaiBackup.requests).toHaveLength(6);
    // Tried at most once: afterwards it is cooling down and the backup goes first.
    expect(f.openai.requests.length).toBeLessThanOrEqual(1);
  });

  it('retries the same deployment after the Retry-After it was given', async () => {
    f.openai.behaviour.rateLimitTimes = 1;
    f.openai.behaviour.retryAfterSeconds = 1;
    const started = Date.now();
    const res = await client.chat.completions.create(ask());
    expect(res.choices[0].message.content).toBe('Echo: hello there');
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
    expect(f.openai.requests).toHaveLength(2);
  });

  it('retries an overloaded Anthropic upstream', async () => {
    f.anthropic.behaviour.failTimes = 1;
    f.anthropic.behaviour.failStatus = 529;
    const res = await client.chat.completions.create(ask('vendor-claude-3'));
    expect(res.choices[0].message.content).toBe('Echo: hello there');
    expect(f.anthropic.requests).toHaveLength(2);
  });

  it('surfaces the upstream error as a 502 in the OpenAI shape when every attempt fails, and charges nothing', async () => {
    f.openai.behaviour.failTimes = 100;
    const res = await fetch(`${f.gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(ask()),
    });
    expect(res.status).toBe(502);
    const body = await res.json();
    expect(body.error).toMatchObject({ type: 'upstream_error', code: 'upstream_error', param: null });
    expect(body.error.message).toContain('Upstream primary failed');
    expect(body.error.message).toContain('fake 500');
    expect(res.headers.get('x-gateway-overhead-ms')).toMatch(/^\d+(\.\d+)?$/);
    expect(f.openai.requests).toHaveLength(3);
    const rows = await ledger(`AND status = 'failed'`);
    expect(rows[rows.length - 1]).toMatchObject({ status: 'failed', provider: 'primary', cost: 0 });
  });

  it('reports an upstream that rejects our credentials as a 502, not as the caller’s 401', async () => {
    f.openai.behaviour.apiKey = 'another-key';
    const err: any = await client.chat.completions.create(ask()).catch((e) => e);
    expect(err.status).toBe(502);
    expect(err.message).toContain("refused the gateway's credentials (HTTP 401)");
    expect(err.message).not.toContain('another-key');
    expect(f.openai.requests).toHaveLength(1);
    f.openai.behaviour.apiKey = 'sk-upstream-openai';
  });

  it('answers 504 when the upstream is too slow', async () => {
    f.openai.behaviour.delayMs = 1500;
    const err: any = await client.chat.completions.create(ask()).catch((e) => e);
    expect(err.status).toBe(504);
    expect(err.error).toMatchObject({ type: 'timeout', code: 'upstream_timeout' });
  });

  it('ends a stream the upstream dropped with an error event, and does not charge it', async () => {
    f.openai.behaviour.dropAfterChunks = 2;
    const stream = await client.chat.completions.create({ ...ask(), stream: true });
    const parts: string[] = [];
    const err: any = await (async () => {
      for await (const c of stream) if (c.choices[0]?.delta?.content) parts.push(c.choices[0].delta.content);
    })().catch((e) => e);
    expect(parts).toEqual(['Echo: ', 'hello ']);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect(err.message).toContain('Upstream primary failed');
    const rows = await ledger();
    expect(rows[rows.length - 1]).toMatchObject({ status: 'failed', cost: 0 });
  });

  it('aborts the upstream when the client disconnects, and bills what was delivered', async () => {
    f.openai.behaviour.reply = Array.from({ length: 30 }, (_, i) => `w${i}`).join(' ');
    f.openai.behaviour.chunkDelayMs = 100;
    const url = new URL(`${f.gw.url}/v1/chat/completions`);
    const received = await new Promise<string>((resolve, reject) => {
      const req = httpRequest(
        {
          host: url.hostname,
          port: url.port,
          path: url.pathname,
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        },
        (res) => {
          let text = '';
          res.on('data', (d) => {
            text += d.toString();
            if ((text.match(/"content":"w/g) ?? []).length >= 3) {
              req.destroy();
              resolve(text);
            }
          });
          res.on('error', () => undefined);
        },
      );
      req.on('error', (e) => (e.message.includes('socket hang up') ? undefined : reject(e)));
      req.end(JSON.stringify({ ...ask(), stream: true }));
    });
    expect(received).toContain('data: ');
    // No deadlines: an abort or a ledger row that never comes ends at Jest's timeout.
    await until(() => f.openai.stats.streamsAbortedByClient > 0 || f.openai.stats.streamsCompleted > 0);
    expect(f.openai.stats).toMatchObject({ streamsStarted: 1, streamsCompleted: 0, streamsAbortedByClient: 1 });
    let row: any;
    await until(async () => !!(row = (await ledger(`AND status = 'aborted'`))[0]), 100);
    expect(row).toMatchObject({ status: 'aborted', provider: 'primary' });
    expect(row.completion_tokens).toBeGreaterThanOrEqual(3);
    expect(row.completion_tokens).toBeLessThan(30);
    expect(row.cost).toBeGreaterThan(0);
  });
});
