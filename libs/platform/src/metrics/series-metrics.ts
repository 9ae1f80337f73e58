// Counters and histograms for the per-request hot path, registered in a prom-client Registry and exposed
// exactly as prom-client's own Counter and Histogram expose them (series-metrics.spec.ts compares the text).
// prom-client's observe(labels, value) validates the label names, sorts them and builds a hash string on every
// call: with seven labelled observations per proxied call that was ~5 % of the gateway's CPU at c=64
// (docs/operations/performance.md). Here a series is found by one Map lookup per label value, in the declared
// order (no string made per observation), and a histogram keeps per-bucket counts that are summed only when scraped.
import type { Registry } from 'prom-client';

type LabelValues = Partial<Record<string, string | number>>;

interface MetricOptions {
  name: string;
  help: string;
  labelNames: readonly string[];
  registers: Registry[];
}

/** The labels of a new series, declared names only, in declared order (as prom-client validates them). */
function labelsOf(name: string, labelNames: readonly string[], labels: LabelValues): Record<string, string | number> {
  for (const k of Object.keys(labels))
    if (!labelNames.includes(k)) throw new Error(`Added label "${k}" is not included in initial labelset of ${name}`);
  const out: Record<string, string | number> = {};
  for (const n of labelNames) if (labels[n] !== undefined) out[n] = labels[n]!;
  return out;
}

/** A label absent from an observation (differs from an empty value). */
const ABSENT = Symbol('absent');

/**
 * A label value as SeriesMetric's lookup keys it: its text (a number and its text are one series), or ABSENT. A
 * label not declared is refused when its series is made (labelsOf); a later call with one more such label and the
 * same declared values finds that series.
 */
function valueKey(v: string | number | undefined): string | symbol {
  return v === undefined ? ABSENT : typeof v === 'string' ? v : String(v);
}

/** One level of SeriesMetric's lookup: a declared label's values, each to the next level (or, at the last, the series). */
type Level = Map<string | symbol, unknown>;

abstract class SeriesMetric<S> {
  readonly name: string;
  readonly help: string;
  readonly aggregator = 'sum';
  protected readonly labelNames: readonly string[];
  /** Every series in the order it was first observed, as exposed. */
  protected series: S[] = [];
  /**
   * The series by their label values, a level per declared label: an observation finds its series with one Map
   * lookup per label, of the values it carries (no key string made per observation: seven labelled
   * observations per proxied call, each building and hashing a string of its values, were ~3 us of the call).
   */
  private lookup: Level = new Map();

  constructor(opts: MetricOptions) {
    this.name = opts.name;
    this.help = opts.help;
    this.labelNames = opts.labelNames;
    for (const r of opts.registers) r.registerMetric(this as never);
  }

  protected seriesFor(labels: LabelValues, create: (labels: Record<string, string | number>) => S): S {
    const names = this.labelNames;
    let level: Level | undefined = this.lookup;
    for (let i = 0; i < names.length - 1 && level; i++)
      level = level.get(valueKey(labels[names[i]])) as Level | undefined;
    const last = valueKey(names.length ? labels[names[names.length - 1]] : undefined);
    const found = level?.get(last) as S | undefined;
    if (found !== undefined) return found;
    // A new series: its labels checked first (a label not declared throws), then its path made.
    const s = create(labelsOf(this.name, names, labels));
    level = this.lookup;
    for (let i = 0; i < names.length - 1; i++) {
      const k = valueKey(labels[names[i]]);
      let next = level.get(k) as Level | undefined;
      if (next === undefined) level.set(k, (next = new Map()));
      level = next;
    }
    level.set(last, s);
    this.series.push(s);
    return s;
  }

  reset(): void {
    this.series = [];
    this.lookup = new Map();
  }
}

function checkValue(value: number): void {
  if (!Number.isFinite(value)) throw new TypeError(`Value is not a valid number: ${value}`);
}

/** A labelled counter (`inc(labels, by)`), exposed as prom-client's Counter. */
export class SeriesCounter extends SeriesMetric<{ labels: Record<string, string | number>; value: number }> {
  readonly type = 'counter';

  inc(labels: LabelValues, by = 1): void {
    checkValue(by);
    if (by < 0) throw new Error('It is not possible to decrease a counter');
    this.seriesFor(labels, (l) => ({ labels: l, value: 0 })).value += by;
  }

  get(): Promise<{ name: string; help: string; type: string; values: unknown[]; aggregator: string }> {
    return Promise.resolve({
      name: this.name,
      help: this.help,
      type: this.type,
      values: this.series.map((s) => ({ value: s.value, labels: s.labels })),
      aggregator: this.aggregator,
    });
  }
}

interface HistogramSeries {
  labels: Record<string, string | number>;
  /** Observations per bucket (not cumulative); the last slot is above every bound. */
  counts: Float64Array;
  sum: number;
  count: number;
}

/** A labelled histogram (`observe(labels, value)`), exposed as prom-client's Histogram. */
export class SeriesHistogram extends SeriesMetric<HistogramSeries> {
  readonly type = 'histogram';
  private readonly bounds: readonly number[];

  constructor(opts: MetricOptions & { buckets: readonly number[] }) {
    super(opts);
    this.bounds = [...opts.buckets].sort((a, b) => a - b);
  }

  observe(labels: LabelValues, value: number): void {
    checkValue(value);
    const s = this.seriesFor(labels, (l) => ({
      labels: l,
      counts: new Float64Array(this.bounds.length + 1),
      sum: 0,
      count: 0,
    }));
    let i = 0;
    while (i < this.bounds.length && value > this.bounds[i]) i++;
    s.counts[i]++;
    s.sum += value;
    s.count++;
  }

  /** As prom-client's Histogram: cumulative buckets with `le` first, then the series' labels; sum; count. */
  getForPromString(): Promise<{ name: string; help: string; type: string; values: unknown[]; aggregator: string }> {
    const values: unknown[] = [];
    for (const s of this.series) {
      let acc = 0;
      for (let i = 0; i < this.bounds.length; i++) {
        acc += s.counts[i];
        values.push({
          labels: { le: this.bounds[i] },
          sharedLabels: s.labels,
          value: acc,
          metricName: `${this.name}_bucket`,
        });
      }
      values.push(
        { labels: { le: '+Inf' }, sharedLabels: s.labels, value: s.count, metricName: `${this.name}_bucket` },
        { labels: {}, sharedLabels: s.labels, value: s.sum, metricName: `${this.name}_sum` },
        { labels: {}, sharedLabels: s.labels, value: s.count, metricName: `${this.name}_count` },
      );
    }
    return Promise.resolve({ name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator });
  }

  /** The same values with each series' labels merged in (prom-client's Histogram.get). */
  async get(): Promise<{ name: string; help: string; type: string; values: unknown[]; aggregator: string }> {
    const data = await this.getForPromString();
    data.values = data.values.map((v) => {
      const { sharedLabels, labels, ...rest } = v as {
        sharedLabels: Record<string, unknown>;
        labels: Record<string, unknown>;
      };
      return { ...rest, labels: { ...labels, ...sharedLabels } };
    });
    return data;
  }
}
