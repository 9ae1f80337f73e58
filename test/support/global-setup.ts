import * as os from 'os';
import * as path from 'path';
import { ensureEmbeddedPostgres } from '../../libs/database/src/embedded-postgres';

/**
 * e2e suites need a PostgreSQL server: DATABASE_URL when set (CI, a real server), otherwise an
 * embedded one for this run. Each app a test starts gets a fresh database on that server.
 */
export default async function globalSetup(): Promise<void> {
  if (process.env.DATABASE_URL) {
    process.env.TEST_SERVER_URL = process.env.DATABASE_URL;
    return;
  }
  const dataDir = path.join(os.tmpdir(), `member-ai-test-pg-${process.getuid?.() ?? 'user'}`);
  const db = await ensureEmbeddedPostgres({ dataDir, port: Number(process.env.TEST_EMBEDDED_PG_PORT || 54339), database: 'postgres' });
  process.env.TEST_SERVER_URL = db.url;
  (globalThis as any).__embeddedPostgres = db;
}
