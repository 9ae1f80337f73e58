import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { ensureEmbeddedPostgres } from '../../libs/database/src/embedded-postgres';
import { freePort } from './free-port';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { buildWeb } = require('../../scripts/build.js') as { buildWeb: () => boolean };

/**
 * e2e suites need a PostgreSQL server: DATABASE_URL when set (CI, a real server), otherwise an
 * embedded one for this run only (own directory and port, so parallel runs never share it).
 * Each app a test starts gets a fresh database on that server.
 */
export default async function globalSetup(globalConfig: { maxWorkers: number }): Promise<void> {
  // Membership serves the web app from dist/web (apps/membership/src/web-app/web-app.ts): built here when
  // missing or older than web/ (a clean checkout in CI), once for all workers.
  buildWeb();
  // One id for this run's port blocks (test/support/free-port.ts), and how many workers share them; inherited by the workers.
  process.env.TEST_PORTS_RUN ??= String(process.pid);
  process.env.TEST_PORTS_WORKERS ??= String(globalConfig.maxWorkers);
  if (process.env.DATABASE_URL) {
    process.env.TEST_SERVER_URL = process.env.DATABASE_URL;
    return;
  }
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'test-pg-'));
  const db = await ensureEmbeddedPostgres({ dataDir, port: await freePort(), database: 'postgres' });
  process.env.TEST_SERVER_URL = db.url;
  (globalThis as any).__embeddedPostgres = { db, dataDir };
}
