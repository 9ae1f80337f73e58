// Machine instructions per chat call through the gateway, counted by valgrind's callgrind: a figure that
// does not move with the machine's load, for comparing two builds where a throughput A/B cannot see a few
// per cent (docs/operations/performance.md, "Instructions per call").
//
//   node bench/instructions.js [--calls N] [--warm N] [--concurrency N] [checkout ...]
//
// Each checkout (default: this one) must hold a build (`npm run build`: its dist/). For each, the gateway
// runs from that build under callgrind (instrumentation off), on a fresh database, against the bench's
// upstream (bench/lib/upstream.js); after `--warm` calls (5000) instrumentation is switched on for
// `--calls` calls (3000), `--concurrency` at a time (8), and the counts are dumped. V8 runs with
// --predictable (no compiler or collector threads, so every instruction is counted on the main thread);
// the optimizing compiler's share still varies from run to run with when V8 decides to optimize, so the
// figure to compare is `net`: every instruction of the process but those spent inside V8's optimizing
// compiler, per call. Two runs of one build differ by ~1.5 %. The checkouts run at the same time (the
// counts do not depend on how busy the machine is); each takes 2 to 4 minutes. Needs valgrind (Debian's
// package) and PostgreSQL as the bench finds it (DATABASE_URL, else 127.0.0.1:5432).
'use strict';
const { spawn, execFileSync } = require('child_process');
const fs = require('fs');
const http = require('http');
const os = require('os');
const path = require('path');
const { NODE_FLAGS } = require('../scripts/node-flags');
const { openServer, createDatabase } = require('./lib/database');
const { freePort, startScript } = require('./lib/procs');

const ADMIN_TOKEN = 'bench-admin-token-0123456789abcdef';
const CHAT = JSON.stringify({ model: 'bench-model', messages: [{ role: 'user', content: 'Say hello.' }] });

function options(argv) {
  const o = { calls: 3000, warm: 5000, concurrency: 8, checkouts: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--calls') o.calls = Number(argv[++i]);
    else if (a === '--warm') o.warm = Number(argv[++i]);
    else if (a === '--concurrency') o.concurrency = Number(argv[++i]);
    else o.checkouts.push(path.resolve(a));
  }
  if (o.checkouts.length === 0) o.checkouts.push(path.join(__dirname, '..'));
  for (const n of [o.calls, o.warm, o.concurrency])
    if (!(n > 0)) throw new Error('--calls, --warm, --concurrency: positive numbers');
  return o;
}

/** Sends `count` chat calls, `concurrency` at a time, over kept-alive connections; resolves with the non-200 count. */
function drive(url, key, count, concurrency) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const target = new URL('/v1/chat/completions', url);
  let left = count;
  let failed = 0;
  const one = () =>
    new Promise((resolve) => {
      const req = http.request(
        target,
        {
          method: 'POST',
          agent,
          headers: {
            authorization: `Bearer ${key}`,
            'content-type': 'application/json',
            'content-length': CHAT.length,
          },
        },
        (res) => {
          if (res.statusCode !== 200) failed++;
          res.resume();
          res.on('end', resolve);
        },
      );
      req.on('error', () => {
        failed++;
        resolve();
      });
      req.end(CHAT);
    });
  const loop = async () => {
    while (left-- > 0) await one();
  };
  return Promise.all(Array.from({ length: concurrency }, loop)).then(() => {
    agent.destroy();
    return failed;
  });
}

async function ready(url, child, log) {
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the gateway exited with ${child.exitCode}; see ${log}`);
    try {
      if ((await fetch(`${url}/actuator/health/readiness`)).status === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 1000));
  }
}

/** callgrind_control finds the process by files named after $HOST; the gateway's environment sets HOST. */
function control(prefix, pid, flag) {
  execFileSync('callgrind_control', [`--vgdb-prefix=${prefix}`, flag, String(pid)], {
    env: { ...process.env, HOST: '127.0.0.1' },
    stdio: 'ignore',
  });
}

/** Inclusive instructions of V8's optimizing compiler in a callgrind dump. */
function compilerShare(file) {
  const text = execFileSync('callgrind_annotate', ['--inclusive=yes', '--threshold=100', file], {
    maxBuffer: 256 * 2 ** 20,
  }).toString();
  const line = text.split('\n').find((l) => l.includes('Compiler::CompileOptimized('));
  return line ? Number(line.trim().split(/\s+/)[0].replace(/,/g, '')) : 0;
}

async function measure(checkout, o, server, work, index) {
  const upstream = await startScript(path.join(__dirname, 'lib', 'upstream.js'));
  const db = await createDatabase(server.url, `instr${index}`);
  const providers = path.join(work, `providers-${index}.json`);
  fs.writeFileSync(
    providers,
    JSON.stringify({
      models: { 'bench-model': { kind: 'chat', price: { inputPer1k: 1, outputPer1k: 2 } } },
      deployments: [
        { name: 'bench', type: 'openai', baseUrl: `${upstream.url}/v1`, timeoutMs: 600_000, models: ['bench-model'] },
      ],
    }),
  );
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const prefix = path.join(work, `vgdb-${index}`);
  const out = path.join(work, `callgrind-${index}.out`);
  const log = path.join(work, `gateway-${index}.log`);
  const logFd = fs.openSync(log, 'a');
  const child = spawn(
    'valgrind',
    [
      '--tool=callgrind',
      '--instr-atstart=no',
      `--vgdb-prefix=${prefix}`,
      `--callgrind-out-file=${out}`,
      process.execPath,
      ...NODE_FLAGS,
      '--predictable',
      path.join(checkout, 'dist', 'apps', 'ai-gateway', 'src', 'main.js'),
    ],
    {
      cwd: checkout,
      env: {
        ...process.env,
        NODE_ENV: 'production',
        MIGRATIONS_RUN: 'true',
        LOG_LEVEL: 'info',
        DATA_DIR: path.join(work, `data-${index}`),
        RATE_LIMIT_PER_MINUTE: '100000000',
        OTEL_SDK_DISABLED: 'true',
        DATABASE_URL: db.url,
        AI_PROVIDERS_FILE: providers,
        ADMIN_TOKEN,
        AI_LOCAL_ENGINES: 'false',
        AI_LOCAL_STT: 'false',
        AI_GATEWAY_PORT: String(port),
        HOST: '127.0.0.1',
        REQUEST_TIMEOUT_MS: '600000',
      },
      stdio: ['ignore', logFd, logFd],
    },
  );
  fs.closeSync(logFd);
  try {
    await ready(url, child, log);
    const created = await fetch(`${url}/admin/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'instructions' }),
    });
    if (created.status !== 201) throw new Error(`POST /admin/keys answered ${created.status}`);
    const { key } = await created.json();
    if ((await drive(url, key, o.warm, o.concurrency)) > 0) throw new Error(`warm-up calls failed; see ${log}`);
    control(prefix, child.pid, '--instr=on');
    const failed = await drive(url, key, o.calls, o.concurrency);
    control(prefix, child.pid, '--instr=off');
    control(prefix, child.pid, '--dump');
    if (failed > 0) throw new Error(`${failed} measured calls failed; see ${log}`);
    const dump = fs
      .readdirSync(work)
      .filter((f) => f.startsWith(`callgrind-${index}.out.`))
      .map((f) => path.join(work, f))
      .sort((a, b) => fs.statSync(b).size - fs.statSync(a).size)[0];
    const totals = /^totals: (\d+)/m.exec(fs.readFileSync(dump, 'utf8'));
    const total = Number(totals?.[1] ?? 0);
    const compiler = compilerShare(dump);
    return {
      checkout,
      calls: o.calls,
      perCall: Math.round(total / o.calls),
      compilerPerCall: Math.round(compiler / o.calls),
      netPerCall: Math.round((total - compiler) / o.calls),
    };
  } finally {
    child.kill('SIGKILL');
    upstream.child.kill('SIGKILL');
    await db.drop().catch(() => undefined);
  }
}

async function main() {
  const o = options(process.argv.slice(2));
  for (const c of o.checkouts)
    if (!fs.existsSync(path.join(c, 'dist', 'apps', 'ai-gateway', 'src', 'main.js')))
      throw new Error(`${c}: no build (run npm run build there)`);
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-instr-'));
  const server = await openServer();
  try {
    const results = await Promise.all(o.checkouts.map((c, i) => measure(c, o, server, work, i)));
    for (const r of results)
      console.log(
        `${r.checkout}: ${r.netPerCall} instructions a call net (${r.perCall} in all, ${r.compilerPerCall} in V8's optimizing compiler; ${r.calls} calls)`,
      );
    fs.rmSync(work, { recursive: true, force: true });
  } finally {
    await server.stop();
  }
}

main().catch((e) => {
  console.error(e instanceof Error ? e.message : e);
  process.exit(1);
});
