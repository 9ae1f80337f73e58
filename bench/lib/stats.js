'use strict';

/** Nearest-rank percentile of an ascending array. */
function percentile(sorted, p) {
  if (!sorted.length) return null;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i];
}

/** Count, mean and p50/p90/p99/max of numbers (ms or whatever unit they are in). */
function summarize(values) {
  if (!values.length) return { n: 0, mean: null, p50: null, p90: null, p99: null, max: null };
  const s = Float64Array.from(values).sort();
  let sum = 0;
  for (const v of s) sum += v;
  return {
    n: s.length,
    mean: sum / s.length,
    p50: percentile(s, 50),
    p90: percentile(s, 90),
    p99: percentile(s, 99),
    max: s[s.length - 1],
  };
}

function median(values) {
  return summarize(values).p50;
}

module.exports = { percentile, summarize, median };
