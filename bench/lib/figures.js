// Figures of the bench: each compares a measured value with a baseline from the same run.
'use strict';

const fmt = (v, unit, digits) => {
  if (v === null || v === undefined || Number.isNaN(v)) return '-';
  const d = digits ?? (Math.abs(v) >= 100 ? 0 : Math.abs(v) >= 10 ? 1 : 2);
  return `${v.toFixed(d)}${unit ? ` ${unit}` : ''}`;
};

const OPS = { '<=': (a, b) => a <= b, '<': (a, b) => a < b, '>=': (a, b) => a >= b, '>': (a, b) => a > b };

/**
 * kind 'diff': value = measured - baseline; kind 'ratio': value = measured / baseline.
 * target: { op, value, on: 'value' (default) | 'measured' } or null for a reported figure.
 * digits: decimals of baseline and measured in the tables (default: by magnitude), e.g. 0 for counts.
 */
function figure({ group, name, unit = '', baseline, baselineLabel, measured, kind, target = null, note = '', digits }) {
  const value =
    baseline === null || measured === null || baseline === undefined || measured === undefined
      ? null
      : kind === 'ratio'
        ? measured / baseline
        : measured - baseline;
  let met = null;
  if (target && value !== null) met = OPS[target.op](target.on === 'measured' ? measured : value, target.value);
  const targetUnit = target ? (target.on === 'measured' ? unit : kind === 'ratio' ? 'x' : unit) : '';
  return {
    group,
    name,
    unit,
    kind,
    baseline,
    baselineLabel: baselineLabel || '',
    measured,
    value,
    target: target
      ? `${target.on === 'measured' ? 'measured ' : ''}${target.op} ${target.value}${targetUnit ? ` ${targetUnit}`.replace(' x', 'x') : ''}`
      : 'reported',
    met,
    note,
    ...(digits === undefined ? {} : { digits }),
  };
}

function notAvailable(group, name, reason, target = 'n/a') {
  return { group, name, na: reason, target, met: null };
}

function row(f) {
  if (f.na) return [f.group, f.name, '-', '-', `n/a: ${f.na}`, f.target, '-'];
  const value =
    f.value === null
      ? '-'
      : f.kind === 'ratio'
        ? `${f.value.toFixed(2)}x`
        : `${f.value >= 0 ? '+' : ''}${fmt(f.value, f.unit)}`;
  const base = `${fmt(f.baseline, f.unit, f.digits)}${f.baselineLabel ? ` (${f.baselineLabel})` : ''}`;
  return [
    f.group,
    f.name,
    base,
    fmt(f.measured, f.unit, f.digits),
    value,
    f.target,
    f.met === null ? '—' : f.met ? 'yes' : 'NO',
  ];
}

const HEAD = ['group', 'figure', 'baseline', 'measured', 'ratio / difference', 'target', 'met?'];

/** A plain-text table for the terminal. */
function textTable(figures) {
  const rows = [HEAD, ...figures.map(row)];
  const widths = HEAD.map((_, i) => Math.min(70, Math.max(...rows.map((r) => String(r[i]).length))));
  const line = (r) => r.map((c, i) => String(c).padEnd(widths[i])).join(' | ');
  return [line(rows[0]), widths.map((w) => '-'.repeat(w)).join('-|-'), ...rows.slice(1).map(line)].join('\n');
}

/** A Markdown table (docs/operations/performance.md). */
function markdownTable(figures) {
  const esc = (c) => String(c).replace(/\|/g, '\\|');
  return [
    `| ${HEAD.join(' | ')} |`,
    `|${HEAD.map(() => '---').join('|')}|`,
    ...figures.map((f) => `| ${row(f).map(esc).join(' | ')} |`),
  ].join('\n');
}

module.exports = { figure, notAvailable, textTable, markdownTable, fmt };

/**
 * Runs one section of a suite; when it throws, its figures become "n/a: <reason>" and the suite goes on.
 * `names` are [figure name, target] pairs of the section.
 */
async function section(figures, group, names, log, fn) {
  try {
    await fn();
  } catch (e) {
    const reason = String((e && e.message) || e)
      .split('\n')[0]
      .slice(0, 160);
    log(`${group}: section "${names[0][0]}" failed: ${(e && e.stack) || e}`);
    for (const [n, t] of names) if (!figures.some((f) => f.name === n)) figures.push(notAvailable(group, n, reason, t));
  }
}
module.exports.section = section;
