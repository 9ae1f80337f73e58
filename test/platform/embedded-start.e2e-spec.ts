import { ChildProcess, execFileSync, spawn } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Client } from 'pg';
import { freePort } from '../support/free-port';

const root = path.resolve(__dirname, '../..');

/** Runs `node scripts/start.js` (what `npm start` runs) with the embedded default: no DATABASE_URL. */
let output = '';

function start(
  dataDir: string,
  pgPort: number,
  ports: { membership: number; gateway: number },
  apps: string[] = [],
): ChildProcess {
  const env = { ...process.env };
  delete env.DATABASE_URL;
  delete env.TEST_SERVER_URL;
  const child = spawn(process.execPath, [path.join(root, 'scripts/start.js'), ...apps], {
    cwd: root,
    env: {
      ...env,
      NODE_ENV: 'development',
      LOG_LEVEL: 'info',
      DATA_DIR: dataDir,
      EMBEDDED_PG_PORT: String(pgPort),
      MEMBERSHIP_PORT: String(ports.membership),
      AI_GATEWAY_PORT: String(ports.gateway),
      ADMIN_TOKEN: 'test-admin-token-0123456789',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // Drain the pipes (a full pipe would block the child); keep the tail for failure messages.
  for (const stream of [child.stdout, child.stderr])
    stream.on('data', (d) => (output = (output + d).slice(-1_000_000)));
  return child;
}

/** Until the app answers healthy or exits (no deadline of its own: Jest's timeout is the limit). */
async function waitHealthy(url: string, child: ChildProcess): Promise<void> {
  for (;;) {
    if (child.exitCode !== null) throw new Error(`exited with ${child.exitCode} before ${url} was healthy\n${output}`);
    const healthy = await fetch(url).then(
      (res) => res.status === 200,
      () => false,
    );
    if (healthy) return;
    await new Promise((r) => setTimeout(r, 300));
  }
}

function exited(child: ChildProcess, ms = 30_000): Promise<number | null> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error('process did not exit in time')), ms);
    child.once('exit', (code) => {
      clearTimeout(t);
      resolve(code);
    });
  });
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('npm start on the embedded default', () => {
  let pgPort = 0;
  const ports = { membership: 0, gateway: 0 };
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'start-e2e-'));
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    pgPort = await freePort();
    ports.membership = await freePort();
    ports.gateway = await freePort();
    execFileSync(process.execPath, [path.join(root, 'scripts/build.js')], { cwd: root, stdio: 'inherit' });
  }, 240_000);

  afterAll(async () => {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
    const pidFile = path.join(dataDir, 'postgres', 'postmaster.pid');
    if (fs.existsSync(pidFile)) {
      const pid = Number(fs.readFileSync(pidFile, 'utf8').split('\n')[0]);
      if (pid && pidAlive(pid)) process.kill(pid, 'SIGINT');
    }
  });

  it('runs both apps on one embedded PostgreSQL, keeps data across a restart, and recovers from a hard kill', async () => {
    // 1. first start: both apps answer health on the same embedded server
    let child = start(dataDir, pgPort, ports);
    children.push(child);
    await waitHealthy(`http://127.0.0.1:${ports.membership}/actuator/health`, child);
    await waitHealthy(`http://127.0.0.1:${ports.gateway}/actuator/health`, child);
    // The superuser password is generated per data directory (never postgres/postgres).
    const superuserUrl = `postgres://postgres:${encodeURIComponent(fs.readFileSync(path.join(dataDir, 'postgres.password'), 'utf8').trim())}@127.0.0.1:${pgPort}/app`;
    const pg = new Client({ connectionString: superuserUrl });
    await pg.connect();
    const tables = await pg.query(
      `SELECT count(*)::int AS n FROM information_schema.tables WHERE table_name IN ('membership_migrations', 'ai_gateway_migrations')`,
    );
    expect(tables.rows[0].n).toBe(2);
    // logs are JSON lines with the request id; credentials never reach them
    const secret = 'Bearer eyJhbGciOiJIUzI1NiJ9.c2VjcmV0LXRva2Vu.c2lnbmF0dXJl';
    const logged = await fetch(`http://127.0.0.1:${ports.membership}/api/v1/app/auth/login?token=query-secret-123`, {
      method: 'POST',
      headers: { Authorization: secret, 'Content-Type': 'application/json', 'X-Request-Id': 'log-probe-1' },
      body: JSON.stringify({ account: 'someone', password: 'password-secret-456' }),
    });
    expect(logged.headers.get('x-request-id')).toBe('log-probe-1');
    // The access line is written after the response: wait for it to appear (an event, however late).
    while (!output.includes('log-probe-1')) await new Promise((r) => setTimeout(r, 50));
    const line = output.split('\n').find((l) => l.includes('log-probe-1'));
    expect(line).toBeDefined();
    expect(() => JSON.parse(line!)).not.toThrow();
    expect(output).not.toContain('c2VjcmV0LXRva2Vu');
    expect(output).not.toContain('query-secret-123');
    expect(output).not.toContain('password-secret-456');
    await pg.query(
      `INSERT INTO shared_state (key, value, expires_at) VALUES ('restart-probe', 'kept', now() + interval '1 day')`,
    );
    await pg.end();

    // 2. graceful stop on SIGTERM: exits 0 and stops the embedded server it started
    child.kill('SIGTERM');
    expect(await exited(child)).toBe(0);
    expect(fs.existsSync(path.join(dataDir, 'postgres', 'postmaster.pid'))).toBe(false);

    // 3. start again: the data is still there
    child = start(dataDir, pgPort, ports, ['membership']);
    children.push(child);
    await waitHealthy(`http://127.0.0.1:${ports.membership}/actuator/health`, child);
    const again = new Client({ connectionString: superuserUrl });
    await again.connect();
    expect((await again.query(`SELECT value FROM shared_state WHERE key = 'restart-probe'`)).rows).toEqual([
      { value: 'kept' },
    ]);
    await again.end();

    // 4. hard kill: the postmaster is left behind; the next start detects and replaces it
    const postmaster = Number(fs.readFileSync(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);
    child.kill('SIGKILL');
    await exited(child);
    expect(pidAlive(postmaster)).toBe(true);
    child = start(dataDir, pgPort, ports, ['membership']);
    children.push(child);
    await waitHealthy(`http://127.0.0.1:${ports.membership}/actuator/health`, child);
    expect(pidAlive(postmaster)).toBe(false);
    child.kill('SIGTERM');
    expect(await exited(child)).toBe(0);
  }, 240_000);

  it('stops with a clear message on a bad configuration value', async () => {
    const child = spawn(process.execPath, [path.join(root, 'scripts/start.js'), 'ai-gateway'], {
      cwd: root,
      env: { ...process.env, AI_GATEWAY_PORT: 'eighty', DATA_DIR: dataDir },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    expect(await exited(child)).toBe(1);
    expect(stderr).toMatch(/AI_GATEWAY_PORT: "eighty" is not a number/);
  }, 60_000);
});
