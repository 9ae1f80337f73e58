#!/usr/bin/env node
// `npm run bench [-- --quick] [-- --only gateway,membership,engines,noisy] [-- --cpu-prof ai-gateway|membership]`
// Builds the apps (scripts/build.js), runs them from dist/ as separate processes on a fresh
// PostgreSQL database, drives load from a separate process (autocannon) over loopback only, and
// prints every figure as a ratio or difference against a baseline measured in this same run.
// Writes bench/results.json. Bounded: each suite has a time limit; a suite that fails or runs out
// of time prints its figures as "n/a: <reason>" and the others still run.
'use strict';
const { execFileSync } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { markdownTable, textTable } = require('./lib/figures');
const { openServer, createDatabase } = require('./lib/database');
const { root, startLoadWorker, killAll } = require('./lib/procs');

const argv = process.argv.slice(2);
const mode = argv.includes('--quick') ? 'quick' : 'full';
const arg = (name) => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : undefined;
};
const SUITES = ['gateway', 'membership', 'engines', 'noisy'];
const SUITE_FILES = { noisy: 'noisy-neighbour' };
const only = (arg('--only') || SUITES.join(',')).split(',').filter(Boolean);
const cpuProf = (arg('--cpu-prof') || '').split(',').filter(Boolean);
// Suite time limits (ms): full < 10 min in all, quick < 3 min.
const LIMITS =
  mode === 'quick'
    ? { gateway: 65_000, membership: 30_000, engines: 40_000, noisy: 40_000 }
    : { gateway: 230_000, membership: 120_000, engines: 180_000, noisy: 90_000 };

const log = (m) => process.stderr.write(`[bench] ${m}\n`);

function withTimeout(promise, ms, what) {
  let t;
  return Promise.race([
    promise,
    new Promise(
      (_, reject) => (t = setTimeout(() => reject(new Error(`${what} did not finish within ${ms / 1000} s`)), ms)),
    ),
  ]).finally(() => clearTimeout(t));
}

async function main() {
  const started = Date.now();
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-'));
  try {
    execFileSync(process.execPath, [path.join(root, 'scripts', 'build.js')], { cwd: root, stdio: 'inherit' });
  } catch (e) {
    if (!fs.existsSync(path.join(root, 'dist', 'apps')))
      throw new Error('build failed and there is no previous build in dist/');
    log('build reported errors; benchmarking the JavaScript tsc emitted anyway');
    require(path.join(root, 'scripts', 'build.js')).linkLibs();
  }
  const server = await openServer();
  log(`PostgreSQL: ${server.kind}; mode ${mode}; work dir ${tmp}`);
  const databases = [];
  const load = startLoadWorker();
  const ctx = {
    mode,
    load,
    server,
    tmp,
    log,
    createDatabase: async (label) => {
      const db = await createDatabase(server.url, label);
      databases.push(db);
      return db;
    },
    appEnv: {
      NODE_ENV: 'production',
      MIGRATIONS_RUN: 'true',
      LOG_LEVEL: process.env.BENCH_LOG_LEVEL || 'info',
      DATA_DIR: path.join(tmp, 'data'),
      RATE_LIMIT_PER_MINUTE: '100000000',
      OTEL_SDK_DISABLED: 'true',
    },
    nodeArgs: (app) =>
      cpuProf.includes(app) ? ['--cpu-prof', `--cpu-prof-dir=${path.join(root, 'bench', 'profiles')}`] : [],
  };
  const figures = [];
  const raw = {};
  try {
    for (const name of SUITES.filter((s) => only.includes(s))) {
      const suite = require(`./suites/${SUITE_FILES[name] || name}`);
      const t0 = Date.now();
      log(`suite ${name}...`);
      try {
        const out = await withTimeout(suite.run(ctx), LIMITS[name], `suite ${name}`);
        figures.push(...out.figures);
        raw[name] = out.raw;
        if (out.missing) figures.push(...out.missing);
      } catch (e) {
        log(`suite ${name} failed: ${(e && e.stack) || e}`);
        figures.push(
          ...suite.unavailable(
            String((e && e.message) || e)
              .split('\n')[0]
              .slice(0, 160),
          ),
        );
      }
      log(`suite ${name} took ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    }
  } finally {
    await load.stop();
    for (const db of databases) await db.drop().catch(() => undefined);
    await server.stop().catch(() => undefined);
    if (!process.env.BENCH_KEEP_TMP) fs.rmSync(tmp, { recursive: true, force: true });
  }
  const machine = {
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0] && os.cpus()[0].model,
    memoryGb: Math.round(os.totalmem() / 2 ** 30),
    node: process.version,
    platform: `${os.platform()} ${os.release()}`,
    postgres: server.kind,
    redis: process.env.REDIS_URL ? 'REDIS_URL' : 'none (shared state in PostgreSQL)',
  };
  const result = {
    date: new Date().toISOString(),
    mode,
    durationS: Math.round((Date.now() - started) / 1000),
    machine,
    figures,
    raw,
  };
  fs.writeFileSync(path.join(__dirname, 'results.json'), `${JSON.stringify(result, null, 2)}\n`);
  fs.writeFileSync(path.join(__dirname, 'results.md'), `${markdownTable(figures)}\n`);
  process.stdout.write(`\n${textTable(figures)}\n\n`);
  process.stdout.write(
    `machine: ${machine.cpus} cores (${machine.cpuModel}), ${machine.memoryGb} GB, Node ${machine.node}, PostgreSQL ${machine.postgres}, Redis ${machine.redis}; ${mode} run in ${result.durationS} s\n`,
  );
  const missed = figures.filter((f) => f.met === false).length;
  const na = figures.filter((f) => f.na).length;
  process.stdout.write(
    `${figures.length} figures: ${figures.filter((f) => f.met === true).length} targets met, ${missed} missed, ${na} n/a. Written: bench/results.json, bench/results.md\n`,
  );
}

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    log(`${signal}: stopping the processes this bench started (databases named bench_* may be left behind)`);
    killAll();
    process.exit(130);
  });
}

main()
  .then(() => process.exit(0))
  .catch((e) => {
    log(`failed: ${(e && e.stack) || e}`);
    killAll();
    process.exit(1);
  });
