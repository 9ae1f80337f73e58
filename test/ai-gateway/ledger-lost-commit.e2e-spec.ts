// The connection to PostgreSQL is cut right after a ledger batch commits, before the gateway hears
// the acknowledgement: the gateway writes the batch again, and the ledger still holds each call
// once and the key is charged once (once seen under load: 139 'ok' rows for 137 calls).
import { mkdtempSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { Client } from 'pg';
import { RunningApp, startGateway } from '../support/apps';
import { createTestDatabase } from '../support/database';
import { TcpProxy, viaProxy } from '../support/tcp-proxy';
import { FakeUpstream, startFakeOpenAi } from '../support/upstreams';

const ADMIN = 'test-admin-token-0123456789';

describe('AI gateway ledger: a batch whose commit was not acknowledged', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let proxy: TcpProxy;
  let gateway: RunningApp;
  let upstream: FakeUpstream;

  beforeAll(async () => {
    db = await createTestDatabase();
    const target = new URL(db.url);
    proxy = new TcpProxy(target.hostname, Number(target.port || 5432));
    const port = await proxy.start();
    upstream = await startFakeOpenAi();
    const providers = join(mkdtempSync(join(tmpdir(), 'ledger-commit-')), 'providers.json');
    writeFileSync(
      providers,
      JSON.stringify({
        models: { 'vendor-gpt-4-mini': { kind: 'chat', price: { inputPer1k: 1, outputPer1k: 2 } } },
        deployments: [{ name: 'primary', type: 'openai', baseUrl: upstream.url, models: ['vendor-gpt-4-mini'] }],
      }),
    );
    // Batches are written when GET /v1/usage asks (a timed flush in between changes nothing).
    gateway = await startGateway(
      { AI_PROVIDERS_FILE: providers, ADMIN_TOKEN: ADMIN, AI_LEDGER_FLUSH_MS: '60000' },
      { dbUrl: viaProxy(db.url, port) },
    );
  }, 60_000);

  afterAll(async () => {
    await gateway?.close();
    await Promise.all([proxy?.stop(), upstream?.close()]);
    await db?.drop();
  });

  it('writes it again without doubling rows or charges', async () => {
    const created = await fetch(`${gateway.url}/admin/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'lost-commit' }),
    });
    expect(created.status).toBe(201);
    const { id: keyId, key } = await created.json();
    const chat = async (requestId: string) => {
      const res = await fetch(`${gateway.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'x-request-id': requestId },
        body: JSON.stringify({ model: 'vendor-gpt-4-mini', messages: [{ role: 'user', content: 'hello ledger' }] }),
      });
      expect(res.status).toBe(200);
      expect(res.headers.get('x-request-id')).toBe(requestId);
    };
    const flush = () => fetch(`${gateway.url}/v1/usage`, { headers: { authorization: `Bearer ${key}` } });

    for (const id of ['call-1', 'call-2', 'call-3']) await chat(id);
    const cut = proxy.cutAfterCommit('INSERT INTO "ai_usage_records"');
    await flush(); // the batch commits; the gateway sees the connection die and keeps it
    await cut;
    await chat('call-4');
    expect((await flush()).status).toBe(200); // the kept batch goes again, then call-4

    const c = new Client({ connectionString: db.url });
    await c.connect();
    try {
      const rows = (
        await c.query(
          `SELECT request_id, status, cost_yuan FROM ai_usage_records WHERE key_id = $1 ORDER BY request_id`,
          [keyId],
        )
      ).rows;
      expect(rows.map((r) => [r.request_id, r.status])).toEqual([
        ['call-1', 'ok'],
        ['call-2', 'ok'],
        ['call-3', 'ok'],
        ['call-4', 'ok'],
      ]);
      const [{ spent, ledger }] = (
        await c.query(
          `SELECT k.spent_yuan::text AS spent, (SELECT sum(cost_yuan) FROM ai_usage_records WHERE key_id = k.id)::text AS ledger FROM ai_api_keys k WHERE k.id = $1`,
          [keyId],
        )
      ).rows;
      expect(Number(ledger)).toBeGreaterThan(0);
      expect(spent).toBe(ledger);
      // The hourly totals usage reports read grew with the entries once, not with the retried batch again.
      const [hourly] = (
        await c.query(
          `SELECT sum(requests)::int AS requests, sum(cost_yuan)::text AS cost FROM ai_usage_hourly WHERE key_id = $1`,
          [keyId],
        )
      ).rows;
      expect(hourly).toEqual({ requests: 4, cost: ledger });
      const usage = await (await flush()).json();
      expect(usage.data.map((d: { requests: number }) => d.requests)).toEqual([4]);
      expect(usage.total_cost_yuan).toBeCloseTo(Number(ledger), 8);
    } finally {
      await c.end();
    }
  });
});
