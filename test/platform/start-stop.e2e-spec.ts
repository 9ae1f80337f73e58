import { ChildProcess, execFileSync, spawn } from 'child_process';
import { randomUUID } from 'crypto';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { freePort } from '../support/free-port';

/**
 * `npm start` (scripts/start.js, both apps, embedded PostgreSQL) stopped at several moments of its
 * start-up: every process start-up began (initdb, the PostgreSQL server, the apps) must be gone once
 * the parent has exited. The signal is sent on an observed event (a process appearing, a log line),
 * never after a delay. Every process start-up spawns inherits the environment, so a unique marker
 * variable finds all of them (and their children) in /proc, whichever parent they ended up with.
 */
const root = path.resolve(__dirname, '../..');
const linux = process.platform === 'linux' && fs.existsSync('/proc/self/environ');
const d = linux ? describe : describe.skip;

interface Proc {
  pid: number;
  cmdline: string;
}

/** Live (non-zombie) processes whose environment carries `START_STOP_PROBE=<marker>`. */
function processesWith(marker: string): Proc[] {
  const found: Proc[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const environ = fs.readFileSync(`/proc/${entry}/environ`, 'utf8');
      if (!environ.split('\0').includes(`START_STOP_PROBE=${marker}`)) continue;
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')) continue;
      found.push({
        pid: Number(entry),
        cmdline: fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').join(' ').trim(),
      });
    } catch {
      // gone meanwhile, or not readable
    }
  }
  return found;
}

interface Run {
  child: ChildProcess;
  marker: string;
  output: () => string;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

d('npm start stopped during start-up leaves no process behind', () => {
  const ports = { pg: 0, membership: 0, gateway: 0 };
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'start-stop-e2e-'));
  const markers: string[] = [];

  beforeAll(async () => {
    ports.pg = await freePort();
    ports.membership = await freePort();
    ports.gateway = await freePort();
    execFileSync(process.execPath, [path.join(root, 'scripts/build.js')], { cwd: root, stdio: 'inherit' });
  }, 240_000);

  afterAll(() => {
    // Whatever a failed case left behind must not outlive the suite.
    for (const m of markers) for (const p of processesWith(m)) process.kill(p.pid, 'SIGKILL');
  });

  function start(dir: string): Run {
    const marker = randomUUID();
    markers.push(marker);
    const env: NodeJS.ProcessEnv = { ...process.env };
    delete env.DATABASE_URL;
    delete env.TEST_SERVER_URL;
    const child = spawn(process.execPath, [path.join(root, 'scripts/start.js')], {
      cwd: root,
      env: {
        ...env,
        START_STOP_PROBE: marker,
        NODE_ENV: 'development',
        LOG_LEVEL: 'info',
        DATA_DIR: dir,
        EMBEDDED_PG_PORT: String(ports.pg),
        MEMBERSHIP_PORT: String(ports.membership),
        AI_GATEWAY_PORT: String(ports.gateway),
        ADMIN_TOKEN: 'test-admin-token-0123456789',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    for (const stream of [child.stdout, child.stderr])
      stream.on('data', (chunk) => (output = (output + chunk).slice(-200_000)));
    const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.once('exit', (code, signal) => resolve({ code, signal })),
    );
    return { child, marker, output: () => output, exit };
  }

  /** Resolves once `seen()` holds (checked every few ms: an observation, not a delay); fails if the parent exits first. */
  async function when(run: Run, what: string, seen: () => boolean): Promise<void> {
    let exited = false;
    void run.exit.then(() => (exited = true));
    while (!seen()) {
      if (exited) throw new Error(`start.js exited before ${what}\n${run.output()}`);
      await new Promise((r) => setTimeout(r, 5));
    }
  }

  const hasProcess = (run: Run, pattern: RegExp) => () =>
    processesWith(run.marker).some((p) => pattern.test(p.cmdline));
  const hasOutput = (run: Run, pattern: RegExp) => () => pattern.test(run.output());

  /** Sends the signal, waits for the parent, and checks that nothing it started is still running. */
  async function stopAndCheck(run: Run, signal: NodeJS.Signals, dir: string): Promise<void> {
    run.child.kill(signal);
    const { code } = await run.exit;
    const left = processesWith(run.marker);
    expect({ code, left, output: left.length || code !== 0 ? run.output() : '' }).toEqual({
      code: 0,
      left: [],
      output: '',
    });
    // The embedded server was shut down cleanly, not abandoned.
    expect(fs.existsSync(path.join(dir, 'postgres', 'postmaster.pid'))).toBe(false);
  }

  it('SIGTERM as soon as the process exists', async () => {
    const dir = fs.mkdtempSync(path.join(dataDir, 'at-once-'));
    const run = start(dir);
    await when(run, 'the process exists', () => run.child.pid !== undefined);
    run.child.kill('SIGTERM');
    await run.exit;
    expect(processesWith(run.marker)).toEqual([]);
  }, 60_000);

  it('SIGINT while initdb creates the embedded database', async () => {
    const run = start(dataDir);
    await when(run, 'initdb runs', hasProcess(run, /\binitdb\b/));
    await stopAndCheck(run, 'SIGINT', dataDir);
  }, 120_000);

  it('SIGTERM while the embedded PostgreSQL server is starting', async () => {
    const run = start(dataDir);
    // Usually before it is ready (start.js prints that line); a slower observation lands a bit later, which is a valid moment too.
    await when(run, 'the server process exists', hasProcess(run, /\/postgres -D /));
    await stopAndCheck(run, 'SIGTERM', dataDir);
  }, 120_000);

  it('SIGTERM right after the apps were spawned', async () => {
    const run = start(dataDir);
    await when(run, 'an app process exists', hasProcess(run, /dist\/apps\/[a-z-]+\/src\/main\.js/));
    await stopAndCheck(run, 'SIGTERM', dataDir);
  }, 120_000);

  it('SIGINT while the apps are bootstrapping', async () => {
    const run = start(dataDir);
    await when(run, 'an app starts Nest', hasOutput(run, /Starting Nest application/));
    await stopAndCheck(run, 'SIGINT', dataDir);
  }, 120_000);

  it('SIGTERM once both apps listen still stops everything', async () => {
    const run = start(dataDir);
    await when(run, 'both apps listen', () => (run.output().match(/listening on http/g) ?? []).length === 2);
    await stopAndCheck(run, 'SIGTERM', dataDir);
  }, 120_000);
});
