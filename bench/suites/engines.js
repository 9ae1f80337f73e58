// Local engines, each in its own process from the compiled build: per-call time (warm median against
// the first call, which loads the model) and RSS (against the same process before the engine started);
// embeddings of 64 sentences in one batch against one by one.
'use strict';
const { spawn } = require('child_process');
const path = require('path');
const { figure, notAvailable } = require('../lib/figures');
const { root, track } = require('../lib/procs');

const E = 'engines';
const LABEL = { ocr: 'OCR 1000x200 text image', tts: 'TTS 100 chars (mp3)', faces: 'faces 1920x1280 photo' };

function measure(kind, calls, timeoutMs) {
  return new Promise((resolve) => {
    const child = track(
      spawn(process.execPath, [path.join(__dirname, '..', 'lib', 'engines-worker.js'), kind, String(calls)], {
        cwd: root,
        stdio: ['ignore', 'pipe', 'pipe'],
      }),
    );
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err = (err + d).slice(-2000)));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('exit', () => {
      clearTimeout(timer);
      const line = out.trim().split('\n').pop();
      try {
        resolve(JSON.parse(line));
      } catch {
        resolve({
          error: `no result (${timeoutMs / 1000} s limit or crash): ${err.trim().split('\n').pop() || ''}`.slice(
            0,
            160,
          ),
        });
      }
    });
  });
}

async function run(ctx) {
  const q = ctx.mode === 'quick';
  const calls = q ? 2 : 5;
  const figures = [];
  const raw = {};
  for (const kind of ['ocr', 'tts', 'faces']) {
    const r = await measure(kind, calls, q ? 40_000 : 90_000);
    raw[kind] = r;
    const name = LABEL[kind];
    if (r.error) {
      figures.push(
        notAvailable(E, `${name}: per call`, r.error, 'reported'),
        notAvailable(E, `${name}: RSS`, r.error, 'reported'),
      );
      continue;
    }
    figures.push(
      figure({
        group: E,
        name: `${name}: per call`,
        unit: 'ms',
        baseline: r.coldMs,
        baselineLabel: 'first call, model load',
        measured: r.warm.p50,
        kind: 'ratio',
        note: `${calls} warm calls; ${r.output}`,
      }),
    );
    figures.push(
      figure({
        group: E,
        name: `${name}: RSS`,
        unit: 'MB',
        baseline: r.rssBeforeMb,
        baselineLabel: 'process before engine',
        measured: r.rssPeakMb,
        kind: 'diff',
      }),
    );
  }
  const r = await measure('embeddings', calls, q ? 40_000 : 120_000);
  raw.embeddings = r;
  if (r.error) {
    figures.push(
      notAvailable(E, 'embeddings 64 sentences: batched vs one by one', r.error, 'reported'),
      notAvailable(E, 'embeddings: RSS', r.error, 'reported'),
    );
  } else {
    figures.push(
      figure({
        group: E,
        name: 'embeddings 64 sentences: batched vs one by one',
        unit: 'ms',
        baseline: r.oneByOne.p50,
        baselineLabel: '64 calls of 1',
        measured: r.batched.p50,
        kind: 'ratio',
      }),
    );
    figures.push(
      figure({
        group: E,
        name: 'embeddings: RSS',
        unit: 'MB',
        baseline: r.rssBeforeMb,
        baselineLabel: 'process before engine',
        measured: r.rssAfterMb,
        kind: 'diff',
      }),
    );
  }
  return { figures, raw };
}

const NAMES = [
  ...['ocr', 'tts', 'faces'].flatMap((k) => [`${LABEL[k]}: per call`, `${LABEL[k]}: RSS`]),
  'embeddings 64 sentences: batched vs one by one',
  'embeddings: RSS',
];

module.exports = { run, unavailable: (reason) => NAMES.map((n) => notAvailable(E, n, reason, 'reported')) };
