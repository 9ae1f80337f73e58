// Child processes of the bench: servers under test, baselines, load workers; and their RSS.
'use strict';
const { fork, spawn } = require('child_process');
const { NODE_FLAGS } = require('../../scripts/node-flags');
/** BENCH_APP_FLAGS: more V8 flags for the apps (e.g. --trace-gc), space-separated (docs/operations/performance.md). */
const EXTRA_FLAGS = (process.env.BENCH_APP_FLAGS || '').split(' ').filter(Boolean);
const fs = require('fs');
const net = require('net');
const path = require('path');

const root = path.resolve(__dirname, '..', '..');
const children = new Set();

function track(child) {
  children.add(child);
  child.on('exit', () => children.delete(child));
  return child;
}

/** Kills every child this bench started (by pid), e.g. on failure. */
function killAll() {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
}
process.on('exit', killAll);

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** Starts a script that prints {"port":N} as its first stdout line. */
function startScript(script, args = [], opts = {}) {
  const child = track(
    spawn(process.execPath, [...(opts.nodeArgs || []), script, ...args], {
      cwd: root,
      env: { ...process.env, ...(opts.env || {}) },
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
  let stderr = '';
  child.stderr.on('data', (d) => (stderr = (stderr + d).slice(-4000)));
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(
      () => reject(new Error(`${path.basename(script)} did not start in time: ${stderr}`)),
      opts.timeoutMs || 30_000,
    );
    child.stdout.on('data', (d) => {
      out += d;
      const nl = out.indexOf('\n');
      if (nl >= 0 && out.startsWith('{')) {
        clearTimeout(timer);
        const { port } = JSON.parse(out.slice(0, nl));
        child.stdout.resume();
        resolve({ child, pid: child.pid, port, url: `http://127.0.0.1:${port}`, stop: () => stop(child) });
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${path.basename(script)} exited with ${code}: ${stderr}`));
    });
  });
}

function stop(child, graceMs = 5000) {
  if (child.exitCode !== null || child.signalCode) return Promise.resolve();
  return new Promise((resolve) => {
    const t = setTimeout(() => child.kill('SIGKILL'), graceMs);
    child.once('exit', () => {
      clearTimeout(t);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

/**
 * Starts an app from the compiled build (`node dist/apps/<app>/src/main.js`)
 * on a free port; resolves once /actuator/health/readiness answers 200. Its log goes to `logFile`.
 */
async function startApp(app, env, { logFile, portVar, nodeArgs = [], timeoutMs = 60_000 }) {
  const port = await freePort();
  const out = fs.openSync(logFile, 'a');
  const child = track(
    spawn(
      process.execPath,
      [...NODE_FLAGS, ...EXTRA_FLAGS, ...nodeArgs, path.join(root, 'dist', 'apps', app, 'src', 'main.js')],
      {
        cwd: root,
        env: { ...process.env, ...env, [portVar]: String(port), HOST: '127.0.0.1' },
        stdio: ['ignore', out, out],
      },
    ),
  );
  fs.closeSync(out);
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null)
      throw new Error(`${app} exited with ${child.exitCode}; see ${logFile}:\n${tail(logFile)}`);
    try {
      const res = await fetch(`${url}/actuator/health/readiness`);
      if (res.status === 200) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`${app} not ready within ${timeoutMs} ms; see ${logFile}:\n${tail(logFile)}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return { child, pid: child.pid, port, url, stop: () => stop(child, 15_000) };
}

function tail(file, chars = 2000) {
  try {
    const t = fs.readFileSync(file, 'utf8');
    return t.slice(-chars);
  } catch {
    return '';
  }
}

/** Resident set size of a process in MB (Linux /proc). */
function rssMb(pid) {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : null;
  } catch {
    return null;
  }
}

/** A forked load worker (bench/lib/load-worker.js): `run(kind, opts)` returns its result. */
function startLoadWorker() {
  const child = track(
    fork(path.join(__dirname, 'load-worker.js'), [], { cwd: root, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }),
  );
  let next = 1;
  const pending = new Map();
  child.on('message', (m) => {
    const p = pending.get(m.id);
    if (!p) return;
    if (m.event) {
      if (p.onEvent) p.onEvent(m.event);
      return;
    }
    pending.delete(m.id);
    if (m.error) p.reject(new Error(m.error));
    else p.resolve(m.result);
  });
  child.on('exit', (code) => {
    for (const p of pending.values()) p.reject(new Error(`load worker exited with ${code}`));
    pending.clear();
  });
  return {
    pid: child.pid,
    /** `onEvent(name)` hears progress events of the run (e.g. 'allOpen' of openStreams). */
    run(kind, opts, onEvent) {
      const id = next++;
      return new Promise((resolve, reject) => {
        pending.set(id, { resolve, reject, onEvent });
        child.send({ id, kind, opts });
      });
    },
    stop: () => stop(child, 2000),
  };
}

module.exports = { root, track, freePort, startScript, startApp, startLoadWorker, rssMb, stop, killAll, tail };
