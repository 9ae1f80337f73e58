import { randomBytes } from 'crypto';
import { Client } from 'pg';

function serverUrl(): string {
  const url = process.env.TEST_SERVER_URL || process.env.DATABASE_URL;
  if (!url) throw new Error('TEST_SERVER_URL is not set: run e2e suites through jest (globalSetup starts a server)');
  return url;
}

function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

/** Creates an empty database for one app under test; `drop()` removes it. */
export async function createTestDatabase(): Promise<{ url: string; name: string; drop(): Promise<void> }> {
  const name = `t_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
  const admin = new Client({ connectionString: serverUrl() });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  return {
    name,
    url: withDatabase(serverUrl(), name),
    drop: async () => {
      const c = new Client({ connectionString: serverUrl() });
      await c.connect();
      try {
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await c.end();
      }
    },
  };
}

/** A plain pg client on a test database, for assertions on what was stored. */
export async function sqlClient(url: string): Promise<Client> {
  const c = new Client({ connectionString: url });
  await c.connect();
  return c;
}

/** Runs one statement on a test database with a short-lived client and returns its rows (assertions on what was stored). */
export async function queryRows(url: string, sql: string, params: unknown[] = []): Promise<any[]> {
  const c = await sqlClient(url);
  try {
    return (await c.query(sql, params)).rows;
  } finally {
    await c.end();
  }
}
