#!/usr/bin/env node
// The event loop's longest busy stretches in a .cpuprofile (from `npm run bench -- --cpu-prof ai-gateway`)
// and what ran in them: a stretch is a run of samples with no idle or program-wide GC gap longer than one
// sample interval. For each stretch over the threshold, its length and the functions with the most time on
// the stack in it (inclusive); then, over all such stretches, the same totals.
// Usage: node bench/profile-stalls.js <file.cpuprofile> [thresholdMs=3] [stretches=15] [fromS] [toS]
// (fromS/toS: only stretches starting in that window, seconds since the profile started, e.g. an attack's)
'use strict';
const fs = require('fs');

const file = process.argv[2];
const thresholdMs = Number(process.argv[3] || 3);
const show = Number(process.argv[4] || 15);
const fromS = Number(process.argv[5] || 0);
const toS = Number(process.argv[6] || Infinity);
const prof = JSON.parse(fs.readFileSync(file, 'utf8'));
const byId = new Map(prof.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of prof.nodes) for (const c of n.children || []) parent.set(c, n.id);
const label = (cf) =>
  `${cf.functionName || '(anonymous)'} ${(cf.url || '').replace(/^.*\/(node_modules|dist)\//, '$1/')}:${cf.lineNumber + 1}`;
const isIdle = (id) => byId.get(id).callFrame.functionName === '(idle)';

/** Distinct labels on the stack of a sample (each counted once per sample). */
const stackOf = new Map();
const stack = (id) => {
  let s = stackOf.get(id);
  if (s) return s;
  const labels = new Set();
  for (let n = id; n !== undefined; n = parent.get(n)) {
    const cf = byId.get(n).callFrame;
    if (cf.functionName === '(root)') continue;
    labels.add(label(cf));
  }
  s = [...labels];
  stackOf.set(id, s);
  return s;
};

const stretches = [];
let cur = null;
let t = prof.startTime;
for (let i = 0; i < prof.samples.length; i++) {
  const dt = prof.timeDeltas[i] || 0;
  t += dt;
  const id = prof.samples[i];
  if (isIdle(id)) {
    if (cur) stretches.push(cur);
    cur = null;
    continue;
  }
  if (!cur) cur = { start: t - dt, end: t, samples: [] };
  cur.end = t;
  cur.samples.push([id, dt]);
}
if (cur) stretches.push(cur);
const inWindow = (s) => (s.start - prof.startTime) / 1e6 >= fromS && (s.start - prof.startTime) / 1e6 <= toS;
stretches.splice(0, stretches.length, ...stretches.filter(inWindow));

const long = stretches.filter((s) => (s.end - s.start) / 1000 >= thresholdMs);
const busy = stretches.reduce((a, s) => a + (s.end - s.start), 0);
const inLong = long.reduce((a, s) => a + (s.end - s.start), 0);
process.stdout.write(
  `${stretches.length} busy stretches, ${(busy / 1000).toFixed(0)} ms busy; ${long.length} of at least ${thresholdMs} ms hold ${(inLong / 1000).toFixed(0)} ms\n`,
);
const lengths = long.map((s) => (s.end - s.start) / 1000).sort((a, b) => b - a);
process.stdout.write(
  `longest: ${lengths
    .slice(0, 20)
    .map((x) => x.toFixed(1))
    .join(', ')} ms\n`,
);

const totals = (samples) => {
  const m = new Map();
  let all = 0;
  for (const [id, dt] of samples) {
    all += dt;
    for (const l of stack(id)) m.set(l, (m.get(l) || 0) + dt);
  }
  return { m, all };
};
const print = ({ m, all }, rows) => {
  for (const [k, us] of [...m].sort((a, b) => b[1] - a[1]).slice(0, rows))
    process.stdout.write(`  ${((100 * us) / all).toFixed(0).padStart(3)}%  ${k}\n`);
};
for (const s of [...long].sort((a, b) => b.end - b.start - (a.end - a.start)).slice(0, show)) {
  process.stdout.write(
    `\nstretch of ${((s.end - s.start) / 1000).toFixed(1)} ms at +${((s.start - prof.startTime) / 1e6).toFixed(2)} s\n`,
  );
  print(totals(s.samples), 12);
}
process.stdout.write(`\nall stretches of at least ${thresholdMs} ms together\n`);
print(totals(long.flatMap((s) => s.samples)), 40);
