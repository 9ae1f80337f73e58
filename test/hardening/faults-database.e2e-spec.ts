// PostgreSQL stopped and restarted under traffic (a TCP proxy in front of the real server is cut and
// restored): readiness goes DOWN then UP, requests fail cleanly (503 in the app's shape) meanwhile,
// every acknowledged write (registrations, uploads, ledger rows) is there afterwards, and both apps
// recover without a restart.
import { createHash } from 'crypto';
import { mkdtempSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { Client } from 'pg';
import { RunningApp, startGateway, startMembership } from '../support/apps';
import { createTestDatabase } from '../support/database';
import { TcpProxy, viaProxy } from '../support/tcp-proxy';
import { FakeUpstream, startFakeOpenAi } from '../support/upstreams';
import { multipart, rawRequest, RawResponse } from './support/http';
import { membershipShapeProblem, openAiShapeProblem } from './support/shapes';
import { until } from '../support/until';
import { report, sleep } from './support/runs';

const ADMIN = 'test-admin-token-0123456789';
/** A valid PNG whose bytes differ per upload (a text chunk with a counter), so each sha256 is unique. */
function png(n: number): Buffer {
  const base = Buffer.from(
    'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
    'base64',
  );
  return Buffer.concat([base, Buffer.from(`upload-${n}`)]);
}

async function query<T = any>(url: string, sql: string, params: unknown[] = []): Promise<T[]> {
  const c = new Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query(sql, params)).rows;
  } finally {
    await c.end();
  }
}

describe('hardening: database stopped and restarted during traffic', () => {
  let mDb: Awaited<ReturnType<typeof createTestDatabase>>;
  let gDb: Awaited<ReturnType<typeof createTestDatabase>>;
  let mProxy: TcpProxy;
  let gProxy: TcpProxy;
  let membership: RunningApp;
  let gateway: RunningApp;
  let upstream: FakeUpstream;

  beforeAll(async () => {
    [mDb, gDb] = await Promise.all([createTestDatabase(), createTestDatabase()]);
    const target = new URL(mDb.url);
    mProxy = new TcpProxy(target.hostname, Number(target.port || 5432));
    gProxy = new TcpProxy(target.hostname, Number(target.port || 5432));
    const [mPort, gPort] = await Promise.all([mProxy.start(), gProxy.start()]);
    upstream = await startFakeOpenAi();
    const dir = mkdtempSync(join(tmpdir(), 'hardening-db-'));
    const providers = join(dir, 'providers.json');
    writeFileSync(
      providers,
      JSON.stringify({
        routing: { maxAttempts: 2, backoffMs: 10, cooldownMs: 100 },
        models: { 'vendor-gpt-4-mini': { kind: 'chat', price: { inputPer1k: 1, outputPer1k: 2 } } },
        deployments: [
          { name: 'primary', type: 'openai', baseUrl: upstream.url, timeoutMs: 2000, models: ['vendor-gpt-4-mini'] },
        ],
      }),
    );
    [membership, gateway] = await Promise.all([
      startMembership({ RATE_LIMIT_PER_MINUTE: '1000000' }, { dbUrl: viaProxy(mDb.url, mPort) }),
      startGateway(
        {
          AI_PROVIDERS_FILE: providers,
          ADMIN_TOKEN: ADMIN,
          AI_LEDGER_FLUSH_MS: '100',
          RATE_LIMIT_PER_MINUTE: '1000000',
        },
        { dbUrl: viaProxy(gDb.url, gPort) },
      ),
    ]);
  }, 60_000);

  afterAll(async () => {
    await Promise.all([membership?.close(), gateway?.close()]);
    await Promise.all([mProxy?.stop(), gProxy?.stop(), upstream?.close()]);
    await Promise.all([mDb?.drop(), gDb?.drop()]);
  });

  it('readiness DOWN then UP, clean 503s meanwhile, no acknowledged write lost, recovery without restart', async () => {
    // A member (for uploads) and an API key (for chat), made while the database is up.
    let ip = 0;
    const xff = () => ({ 'x-forwarded-for': `10.9.${(++ip >> 8) & 255}.${ip & 255}` });
    const json = (url: string, method: string, path: string, body: unknown, headers: Record<string, string> = {}) =>
      rawRequest(url, {
        method,
        path,
        headers: { 'content-type': 'application/json', ...xff(), ...headers },
        body: JSON.stringify(body),
        timeoutMs: 20_000,
      });
    expect(
      (
        await json(membership.url, 'POST', '/api/v1/app/auth/register', {
          username: 'db_uploader',
          password: 'db-uploader-password',
        })
      ).status,
    ).toBe(200);
    const token = (
      await json(membership.url, 'POST', '/api/v1/app/auth/login', {
        account: 'db_uploader',
        password: 'db-uploader-password',
      })
    ).json.data.token;
    const created = await json(
      gateway.url,
      'POST',
      '/admin/keys',
      { name: 'db-faults' },
      { authorization: `Bearer ${ADMIN}` },
    );
    expect(created.status).toBe(201);
    const apiKey = created.json.key;
    const keyId = created.json.id;

    // Chats are told apart by the X-Request-Id the test sends, which the ledger row keeps.
    const acked = {
      registrations: [] as string[],
      uploads: [] as { id: string; url: string; sha256: string }[],
      chats: [] as string[],
    };
    const sentChats: string[] = [];
    const statuses: Record<string, Record<number, number>> = { register: {}, upload: {}, chat: {} };
    const unclean: string[] = [];
    // t0/t: when the probe was sent and when both answers were in.
    const readiness: { t0: number; t: number; membership: number; gateway: number }[] = [];
    const started = Date.now();
    let running = true;
    let n = 0;

    const check = (what: string, res: RawResponse, shape: (r: RawResponse) => string | null) => {
      statuses[what][res.status] = (statuses[what][res.status] ?? 0) + 1;
      if (res.status !== 200 && res.status !== 201 && res.status !== 503)
        unclean.push(`${what}: HTTP ${res.status} ${res.text.slice(0, 160)}`);
      if (res.status === 503 && !res.headers['retry-after']) unclean.push(`${what}: 503 without Retry-After`);
      const problem = shape(res);
      if (problem) unclean.push(`${what}: ${problem}`);
    };
    const guarded = async (what: string, f: () => Promise<void>) => {
      try {
        await f();
      } catch (e) {
        unclean.push(`${what}: ${(e as Error).message}`);
      }
    };

    const registerLoop = async () => {
      while (running) {
        const username = `dbf_${++n}_${Date.now() % 100000}`;
        await guarded('register', async () => {
          const res = await json(membership.url, 'POST', '/api/v1/app/auth/register', {
            username,
            password: 'db-fault-password',
          });
          check('register', res, (r) => membershipShapeProblem(r));
          if (res.status === 200) acked.registrations.push(username);
        });
        await sleep(30);
      }
    };
    const uploadLoop = async () => {
      while (running) {
        const bytes = png(++n);
        await guarded('upload', async () => {
          const { body, contentType } = multipart([
            { name: 'file', filename: 'a.png', contentType: 'image/png', data: bytes },
          ]);
          const res = await rawRequest(membership.url, {
            method: 'POST',
            path: '/api/v1/app/files',
            headers: { authorization: `Bearer ${token}`, 'content-type': contentType, ...xff() },
            body,
            timeoutMs: 20_000,
          });
          check('upload', res, (r) => membershipShapeProblem(r));
          if (res.status === 200) {
            expect(res.json.data.sha256).toBe(createHash('sha256').update(bytes).digest('hex'));
            acked.uploads.push({ id: res.json.data.id, url: res.json.data.url, sha256: res.json.data.sha256 });
          }
        });
        await sleep(30);
      }
    };
    const chatLoop = async () => {
      while (running) {
        const requestId = `db-chat-${++n}`;
        sentChats.push(requestId);
        await guarded('chat', async () => {
          const res = await json(
            gateway.url,
            'POST',
            '/v1/chat/completions',
            { model: 'vendor-gpt-4-mini', messages: [{ role: 'user', content: 'hello db' }] },
            { authorization: `Bearer ${apiKey}`, 'x-request-id': requestId },
          );
          check('chat', res, openAiShapeProblem);
          if (res.status === 200) acked.chats.push(requestId);
        });
        await sleep(30);
      }
    };
    const readinessLoop = async () => {
      while (running) {
        const t0 = Date.now() - started;
        const [m, g] = await Promise.all([
          rawRequest(membership.url, { method: 'GET', path: '/actuator/health/readiness', timeoutMs: 10_000 }).then(
            (r) => r.status,
            () => -1,
          ),
          rawRequest(gateway.url, { method: 'GET', path: '/actuator/health/readiness', timeoutMs: 10_000 }).then(
            (r) => r.status,
            () => -1,
          ),
        ]);
        readiness.push({ t0, t: Date.now() - started, membership: m, gateway: g });
        await sleep(150);
      }
    };

    // Each phase lasts until what it is for has been seen (no fixed durations: a loaded machine is slow).
    const loops = [registerLoop(), uploadLoop(), chatLoop(), readinessLoop()];
    await until(() => acked.registrations.length > 0 && acked.uploads.length > 0 && acked.chats.length > 0);
    const outageAt = Date.now() - started;
    const before = {
      register: statuses.register[503] ?? 0,
      upload: statuses.upload[503] ?? 0,
      chats: acked.chats.length,
    };
    await Promise.all([mProxy.stop(), gProxy.stop()]);
    const probedDuring = () => readiness.filter((r) => r.t0 > outageAt);
    await until(
      () =>
        probedDuring().some((r) => r.membership === 503) &&
        probedDuring().some((r) => r.gateway === 503) &&
        (statuses.register[503] ?? 0) > before.register &&
        (statuses.upload[503] ?? 0) > before.upload &&
        acked.chats.length > before.chats, // answered while its ledger row cannot be written
    );
    const during = probedDuring();
    await Promise.all([mProxy.start(mProxy.port), gProxy.start(gProxy.port)]);
    const restoredAt = Date.now() - started;
    // Keep the traffic going until both apps are ready again and every kind of write succeeded again.
    const ackedAtRestore = {
      registrations: acked.registrations.length,
      uploads: acked.uploads.length,
      chats: acked.chats.length,
    };
    await until(() => readiness.some((r) => r.t0 > restoredAt && r.membership === 200 && r.gateway === 200));
    const upAt = readiness.find((r) => r.t0 > restoredAt && r.membership === 200 && r.gateway === 200)!.t;
    await until(
      () =>
        acked.registrations.length > ackedAtRestore.registrations &&
        acked.uploads.length > ackedAtRestore.uploads &&
        acked.chats.length > ackedAtRestore.chats,
    );
    running = false;
    await Promise.all(loops);

    // Readiness went DOWN during the outage and UP afterwards, for both apps.
    expect(during.some((r) => r.membership === 503)).toBe(true);
    expect(during.some((r) => r.gateway === 503)).toBe(true);
    expect(unclean).toEqual([]);

    // The apps work again without a restart.
    expect(
      (
        await json(membership.url, 'POST', '/api/v1/app/auth/register', {
          username: 'after_outage',
          password: 'after-outage-password',
        })
      ).status,
    ).toBe(200);

    // Every acknowledged write is in the database (and every upload's bytes are served intact).
    const members = await query(mDb.url, 'SELECT username FROM members WHERE username = ANY($1)', [
      acked.registrations,
    ]);
    expect(members.length).toBe(acked.registrations.length);
    const files = await query(mDb.url, 'SELECT id, sha256 FROM member_files WHERE id = ANY($1::uuid[])', [
      acked.uploads.map((u) => u.id),
    ]);
    expect(files.length).toBe(acked.uploads.length);
    for (const u of acked.uploads) {
      const res = await fetch(`${membership.url}${u.url}`);
      expect(res.status).toBe(200);
      expect(
        createHash('sha256')
          .update(Buffer.from(await res.arrayBuffer()))
          .digest('hex'),
      ).toBe(u.sha256);
    }
    // The ledger holds one row per chat the gateway answered, under its request id: 'ok' exactly for
    // the chats the client saw answered 200, each once. GET /v1/usage writes the queued batches; a
    // batch refused while the pool reconnects is kept and goes with a later one.
    const ledger = async () =>
      await query<{ request_id: string; status: string }>(
        gDb.url,
        `SELECT request_id, status FROM ai_usage_records WHERE key_id = $1`,
        [keyId],
      );
    let rows = await ledger();
    while (!acked.chats.every((id) => rows.some((r) => r.request_id === id))) {
      await fetch(`${gateway.url}/v1/usage`, { headers: { authorization: `Bearer ${apiKey}` } });
      rows = await ledger();
      if (!acked.chats.every((id) => rows.some((r) => r.request_id === id))) await sleep(100);
    }
    const ledgerOk = rows.filter((r) => r.status === 'ok').map((r) => r.request_id);
    report('faults-database', {
      outageMs: restoredAt - outageAt,
      readyAgainAfterMs: upAt - restoredAt,
      acked: { registrations: acked.registrations.length, uploads: acked.uploads.length, chats: acked.chats.length },
      found: {
        registrations: members.length,
        uploads: files.length,
        ledgerOk: ledgerOk.length,
        ledgerOther: rows.length - ledgerOk.length,
      },
      statuses,
    });
    const byId = (a: string[]) => [...a].sort((x, y) => Number(x.split('-')[2]) - Number(y.split('-')[2]));
    expect(byId(ledgerOk)).toEqual(byId(acked.chats));
    // No row for a call the test did not make, and none twice.
    expect(rows.filter((r) => !sentChats.includes(r.request_id))).toEqual([]);
    expect(new Set(rows.map((r) => r.request_id)).size).toBe(rows.length);
  }, 120_000);
});
