#!/usr/bin/env node
// Summarizes a .cpuprofile (from `npm run bench -- --cpu-prof ai-gateway`): self time by function and
// by package. Usage: node bench/profile-top.js <file.cpuprofile> [rows] [fromS] [toS] (seconds from the
// profile's start: only the samples of that window, e.g. one noisy-neighbour attack)
'use strict';
const fs = require('fs');

const file = process.argv[2];
const rows = Number(process.argv[3] || 25);
const fromS = Number(process.argv[4] || 0);
const toS = Number(process.argv[5] || Infinity);
const prof = JSON.parse(fs.readFileSync(file, 'utf8'));
const byId = new Map(prof.nodes.map((n) => [n.id, n]));
const self = new Map();
const dt = prof.timeDeltas;
let at = prof.startTime;
for (let i = 0; i < prof.samples.length; i++) {
  at += dt[i] || 0;
  const s = (at - prof.startTime) / 1e6;
  if (s >= fromS && s <= toS) self.set(prof.samples[i], (self.get(prof.samples[i]) || 0) + (dt[i] || 0));
}
const total = [...self.values()].reduce((a, b) => a + b, 0);
const fn = new Map();
const pkg = new Map();
for (const [id, us] of self) {
  const cf = byId.get(id).callFrame;
  const url = cf.url || '';
  const key = `${cf.functionName || '(anonymous)'} ${url.replace(/^.*\/(node_modules|dist)\//, '$1/')}:${cf.lineNumber + 1}`;
  fn.set(key, (fn.get(key) || 0) + us);
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  const p = m
    ? m[1]
    : url.includes('/dist/')
      ? `dist/${url.split('/dist/')[1].split('/').slice(0, 3).join('/')}`
      : url.startsWith('node:')
        ? 'node:' + url.slice(5).split('/')[0]
        : cf.functionName || '(native)';
  pkg.set(p, (pkg.get(p) || 0) + us);
}
const show = (title, map) => {
  process.stdout.write(`\n${title} (of ${(total / 1000).toFixed(0)} ms sampled)\n`);
  for (const [k, us] of [...map].sort((a, b) => b[1] - a[1]).slice(0, rows))
    process.stdout.write(`${((100 * us) / total).toFixed(1).padStart(5)}%  ${k}\n`);
};
show('self time by package', pkg);
show('self time by function', fn);
