#!/usr/bin/env node
// `npm start` (both apps) or `npm start -- membership|ai-gateway`: builds if needed, then runs the
// apps. With no DATABASE_URL both apps share one embedded PostgreSQL under DATA_DIR, started here.
const { spawn } = require('child_process');
const path = require('path');
const { build } = require('./build');

const APPS = ['membership', 'ai-gateway'];
const root = path.resolve(__dirname, '..');
const wanted = process.argv.slice(2).filter((a) => !a.startsWith('-'));
const apps = wanted.length ? wanted : APPS;
for (const a of apps) {
  if (!APPS.includes(a)) {
    process.stderr.write(`unknown app "${a}"; expected one of ${APPS.join(', ')}\n`);
    process.exit(2);
  }
}

build();
require('./register-aliases');
const mainOf = (app) => path.join(root, 'dist', 'apps', app, 'src', 'main.js');

if (apps.length === 1) {
  require(mainOf(apps[0]));
} else {
  runAll().catch((e) => {
    process.stderr.write(`${e && e.stack ? e.stack : e}\n`);
    process.exit(1);
  });
}

async function runAll() {
  let database = { stop: async () => undefined };
  if (!process.env.DATABASE_URL) {
    const { ensureEmbeddedPostgres } = require(path.join(root, 'dist', 'libs', 'database', 'src'));
    database = await ensureEmbeddedPostgres({
      dataDir: process.env.DATA_DIR || './data',
      port: Number(process.env.EMBEDDED_PG_PORT || 54329),
    });
    process.stdout.write(`embedded PostgreSQL ready at ${database.url.replace(/:[^:@/]+@/, ':***@')}\n`);
  }
  const children = apps.map((app) =>
    spawn(process.execPath, ['-r', path.join(__dirname, 'register-aliases.js'), mainOf(app)], { stdio: 'inherit', env: process.env }),
  );
  let exitCode = 0;
  let stopping = false;
  const stopAll = (signal) => {
    stopping = true;
    for (const c of children) if (c.exitCode === null) c.kill(signal);
  };
  process.on('SIGTERM', () => stopAll('SIGTERM'));
  process.on('SIGINT', () => stopAll('SIGTERM'));
  await Promise.all(
    children.map(
      (c) =>
        new Promise((resolve) =>
          c.on('exit', (code) => {
            if (code && !stopping) {
              exitCode = code;
              stopAll('SIGTERM');
            }
            resolve();
          }),
        ),
    ),
  );
  await database.stop();
  process.exit(exitCode);
}
