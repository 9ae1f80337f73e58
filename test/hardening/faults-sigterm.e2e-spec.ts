// SIGTERM during uploads and streams, on the built apps run as child processes (`node scripts/build.js`,
// then `node dist/apps/<app>/src/main.js`): requests in flight finish
// within SHUTDOWN_GRACE_MS or are cut cleanly after it, the process exits 0, and no file record points
// at missing or partial bytes; completed streams are in the usage ledger. Steps wait on the child's log
// lines, its exit and what the upstream received, not on sleeps; a hang fails by the test's timeout.
import { ChildProcess, execFileSync, spawn } from 'child_process';
import { createHash } from 'crypto';
import { mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join, resolve } from 'path';
import { Client } from 'pg';
import { createTestDatabase } from '../support/database';
import { FakeUpstream, startFakeOpenAi } from '../support/upstreams';
import { multipart, rawRequest, RawResponse } from './support/http';
import { report } from './support/runs';
import { freePort } from '../support/free-port';

const root = resolve(__dirname, '..', '..');
const ADMIN = 'test-admin-token-0123456789';

interface Child {
  proc: ChildProcess;
  url: string;
  exited: Promise<{ code: number | null; signal: string | null; afterMs: number }>;
  stderr: () => string;
  /** Resolves once the child's output (stdout and stderr) has a line matching `re`; rejects if it exits first. */
  logged: (re: RegExp) => Promise<void>;
}

/** Resolves once `check()` holds, asked every 10 ms (a polling interval, not a deadline). */
async function until(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((r) => setTimeout(r, 10));
}

async function startChild(app: 'membership' | 'ai-gateway', env: Record<string, string>): Promise<Child> {
  const port = await freePort();
  let err = '';
  let out = '';
  // LOG_LEVEL info: the "listening on" and "SIGTERM received" lines are what the test waits on.
  const proc = spawn(process.execPath, [`dist/apps/${app}/src/main.js`], {
    cwd: root,
    env: {
      ...process.env,
      NODE_ENV: 'test',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      [app === 'membership' ? 'MEMBERSHIP_PORT' : 'AI_GATEWAY_PORT']: String(port),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const waiters: { re: RegExp; ok: () => void }[] = [];
  const seen = () => {
    for (const w of [...waiters]) {
      if (!w.re.test(out) && !w.re.test(err)) continue;
      waiters.splice(waiters.indexOf(w), 1);
      w.ok();
    }
  };
  proc.stdout.on('data', (c: Buffer) => {
    out += c.toString();
    seen();
  });
  proc.stderr.on('data', (c: Buffer) => {
    err += c.toString();
    seen();
  });
  let killedAt = 0;
  const exited = new Promise<{ code: number | null; signal: string | null; afterMs: number }>((ok) =>
    proc.on('exit', (code, signal) => ok({ code, signal, afterMs: killedAt ? Date.now() - killedAt : -1 })),
  );
  const origKill = proc.kill.bind(proc);
  proc.kill = (sig?: NodeJS.Signals | number) => {
    killedAt = Date.now();
    return origKill(sig);
  };
  const logged = (re: RegExp) =>
    Promise.race([
      new Promise<void>((ok) => {
        waiters.push({ re, ok });
        seen();
      }),
      exited.then(() => {
        if (!re.test(out) && !re.test(err)) throw new Error(`${app} exited before logging ${re}: ${err}`);
      }),
    ]);
  const url = `http://127.0.0.1:${port}`;
  await logged(/listening on /);
  expect((await fetch(`${url}/actuator/health/readiness`)).status).toBe(200);
  return { proc, url, exited, stderr: () => err, logged };
}

function outcome(p: Promise<RawResponse>): Promise<{ status: number; text: string } | { error: string }> {
  return p.then(
    (r) => ({ status: r.status, text: r.text }),
    (e) => ({ error: String((e as Error).message) }),
  );
}

/** Every file record's bytes on disk: present, same size, same sha256 (none half-written). */
async function checkFiles(dbUrl: string, dataDir: string): Promise<{ rows: number; bad: string[]; tmpLeft: string[] }> {
  const db = new Client({ connectionString: dbUrl });
  await db.connect();
  const rows = (await db.query('SELECT filename, size, sha256 FROM member_files')).rows;
  await db.end();
  const all: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (e.isDirectory()) walk(join(d, e.name));
      else all.push(join(d, e.name));
    }
  };
  walk(dataDir);
  const bad: string[] = [];
  for (const r of rows) {
    const path = all.find((p) => p.endsWith(`/${r.filename}`));
    if (!path) bad.push(`${r.filename}: missing`);
    else if (statSync(path).size !== Number(r.size))
      bad.push(`${r.filename}: size ${statSync(path).size} != ${r.size}`);
    else if (createHash('sha256').update(readFileSync(path)).digest('hex') !== r.sha256.trim())
      bad.push(`${r.filename}: sha256 differs`);
  }
  return { rows: rows.length, bad, tmpLeft: all.filter((p) => p.endsWith('.tmp')) };
}

describe('hardening: SIGTERM during uploads and streams (built apps as child processes)', () => {
  const figures: Record<string, unknown> = {};

  beforeAll(() => {
    execFileSync(process.execPath, ['scripts/build.js'], { cwd: root, stdio: 'pipe', timeout: 240_000 });
  }, 300_000);
  afterAll(() => report('faults-sigterm', figures));

  // Every upload writes all but its last piece, then holds it: until SIGTERM has been received (the
  // uploads are in flight and must be let finish) or, when they must be cut, until the process has exited.
  it.each([
    ['grace longer than the uploads: all in flight finish', 6000, 'finish'],
    ['grace shorter than the uploads: cut cleanly', 800, 'cut'],
  ] as const)(
    'membership uploads, %s',
    async (label, grace, mode) => {
      const db = await createTestDatabase();
      const dataDir = mkdtempSync(join(tmpdir(), 'sigterm-membership-'));
      const child = await startChild('membership', {
        DATABASE_URL: db.url,
        DATA_DIR: dataDir,
        JWT_SECRET: 'test-secret-test-secret-test-secret-0123456789',
        SHUTDOWN_GRACE_MS: String(grace),
        RATE_LIMIT_PER_MINUTE: '100000',
        REQUEST_TIMEOUT_MS: '30000',
      });
      try {
        const j = (path: string, body: unknown) =>
          rawRequest(child.url, {
            method: 'POST',
            path,
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify(body),
          });
        // Three members, two uploads each (a replica reads at most two uploads of one member at once), and a
        // fourth for the upload sent after SIGTERM.
        const tokens: string[] = [];
        for (let m = 0; m < 4; m++) {
          const username = `sigterm_up${m}`;
          expect((await j('/api/v1/app/auth/register', { username, password: 'sigterm-password' })).status).toBe(200);
          tokens.push(
            (await j('/api/v1/app/auth/login', { account: username, password: 'sigterm-password' })).json.data.token,
          );
        }
        const png = Buffer.from(
          'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
          'base64',
        );
        let release!: () => void;
        const released = new Promise<void>((ok) => (release = ok));
        let holding = 0;
        let allHolding!: () => void;
        const everyUploadHolding = new Promise<void>((ok) => (allHolding = ok));
        const upload = (i: number, holdLastChunk?: () => Promise<unknown>) => {
          const member = i === 99 ? 3 : i % 3;
          const { body, contentType } = multipart([
            {
              name: 'file',
              filename: `f${i}.png`,
              contentType: 'image/png',
              data: Buffer.concat([png, Buffer.alloc(200_000, i)]),
            },
          ]);
          // The time limit only turns a hang into a failure before the test's own timeout.
          return outcome(
            rawRequest(child.url, {
              method: 'POST',
              path: '/api/v1/app/files',
              headers: {
                authorization: `Bearer ${tokens[member]}`,
                'content-type': contentType,
                // Each member from an address of its own: a replica reads at most four uploads of one network.
                'x-forwarded-for': `192.0.2.${member + 1}`,
              },
              body,
              chunks: 10,
              chunkDelayMs: 20,
              holdLastChunk,
              timeoutMs: 100_000,
            }),
          );
        };
        const inFlight = Array.from({ length: 6 }, (_, i) =>
          upload(i, () => {
            if (++holding === 6) allHolding();
            return mode === 'finish' ? released : child.exited;
          }),
        );
        await everyUploadHolding;
        child.proc.kill('SIGTERM');
        await child.logged(/SIGTERM received/);
        const late = await upload(99);
        release();
        const results = await Promise.all(inFlight);
        const exit = await child.exited;
        const files = await checkFiles(db.url, dataDir);
        const ok = results.filter((r) => 'status' in r && r.status === 200).length;
        figures[`uploads (${label})`] = {
          grace,
          inFlight: results.length,
          completed: ok,
          cut: results.length - ok,
          exit,
          fileRows: files.rows,
        };
        // Every answer is a success or a clean refusal; the process exits 0: after letting every upload
        // finish, or, with uploads that could never finish, no sooner than the grace period.
        for (const r of results) if ('status' in r) expect([200, 503]).toContain(r.status);
        expect('error' in late || ('status' in late && late.status === 503)).toBe(true);
        expect(exit.code).toBe(0);
        if (mode === 'finish') expect(ok).toBe(results.length);
        else {
          expect(ok).toBe(0);
          expect(exit.afterMs).toBeGreaterThanOrEqual(grace);
        }
        // No record without its full bytes, and the completed uploads are all recorded.
        expect(files.bad).toEqual([]);
        expect(files.rows).toBe(ok);
        expect(files.tmpLeft.length).toBe(0);
      } finally {
        if (child.proc.exitCode === null) child.proc.kill('SIGKILL');
        await db.drop();
      }
    },
    120_000,
  );

  it.each([
    ['grace longer than the streams: all in flight end with [DONE] and are billed', 8000, 200],
    ['grace shorter than the streams: cut cleanly, nothing billed twice', 800, 400],
  ])(
    'ai-gateway streams, %s',
    async (label, grace, chunkDelay) => {
      const db = await createTestDatabase();
      const upstream: FakeUpstream = await startFakeOpenAi();
      upstream.behaviour.reply = Array.from({ length: 10 }, (_, i) => `w${i}`).join(' ');
      upstream.behaviour.chunkDelayMs = chunkDelay;
      const dir = mkdtempSync(join(tmpdir(), 'sigterm-gateway-'));
      const providers = join(dir, 'providers.json');
      writeFileSync(
        providers,
        JSON.stringify({
          models: { 'vendor-gpt-4-mini': { kind: 'chat', price: { inputPer1k: 1, outputPer1k: 2 } } },
          deployments: [
            {
              name: 'primary',
              type: 'openai',
              baseUrl: upstream.url,
              timeoutMs: 20_000,
              models: ['vendor-gpt-4-mini'],
            },
          ],
        }),
      );
      const child = await startChild('ai-gateway', {
        DATABASE_URL: db.url,
        DATA_DIR: dir,
        AI_PROVIDERS_FILE: providers,
        ADMIN_TOKEN: ADMIN,
        SHUTDOWN_GRACE_MS: String(grace),
        AI_LEDGER_FLUSH_MS: '60000',
      });
      try {
        const created = await rawRequest(child.url, {
          method: 'POST',
          path: '/admin/keys',
          headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
          body: JSON.stringify({ name: 'sigterm' }),
        });
        const { key, id: keyId } = created.json;
        const stream = () =>
          outcome(
            rawRequest(child.url, {
              method: 'POST',
              path: '/v1/chat/completions',
              headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
              body: JSON.stringify({
                model: 'vendor-gpt-4-mini',
                stream: true,
                messages: [{ role: 'user', content: 'count' }],
              }),
              timeoutMs: grace + 20_000,
            }),
          );
        const inFlight = Array.from({ length: 4 }, stream);
        // Every stream has reached the upstream (the gateway is serving it) before the signal.
        await until(() => upstream.requests.length === inFlight.length);
        child.proc.kill('SIGTERM');
        const results = await Promise.all(inFlight);
        const exit = await child.exited;
        const done = results.filter(
          (r) => 'status' in r && r.status === 200 && r.text.trim().endsWith('data: [DONE]'),
        ).length;
        const c = new Client({ connectionString: db.url });
        await c.connect();
        const rows = (
          await c.query(`SELECT status, cost_yuan::float AS cost FROM ai_usage_records WHERE key_id = $1`, [keyId])
        ).rows;
        await c.end();
        figures[`streams (${label})`] = {
          grace,
          inFlight: results.length,
          completed: done,
          exit,
          ledger: rows.map((r) => r.status),
        };
        expect(exit.code).toBe(0);
        // Each stream either completed or was cut (an error event, or the connection closed): never a 5xx page.
        for (const r of results) if ('status' in r) expect(r.status).toBe(200);
        if (grace > chunkDelay * 12) expect(done).toBe(results.length);
        // The ledger flushed at shutdown (its timer is 60 s here): one ok row per completed stream, one row at most per call.
        expect(rows.filter((r) => r.status === 'ok').length).toBe(done);
        expect(rows.length).toBeLessThanOrEqual(results.length);
      } finally {
        if (child.proc.exitCode === null) child.proc.kill('SIGKILL');
        await upstream.close();
        await db.drop();
      }
    },
    120_000,
  );
});
