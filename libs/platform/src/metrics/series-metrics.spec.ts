import { Counter, Histogram, Registry } from 'prom-client';
import { SeriesCounter, SeriesHistogram } from './series-metrics';

describe('SeriesCounter and SeriesHistogram', () => {
  const buckets = [0.001, 0.01, 0.1, 1];
  const labelNames = ['method', 'route', 'status', 'optional'];
  /** The same observations into prom-client's types and into ours, each in its own registry. */
  const both = () => {
    const theirs = new Registry();
    const ours = new Registry();
    const opts = (registry: Registry) => ({ labelNames, registers: [registry] });
    return {
      theirs,
      ours,
      counters: [
        new Counter({ name: 'calls_total', help: 'Calls', ...opts(theirs) }),
        new SeriesCounter({ name: 'calls_total', help: 'Calls', ...opts(ours) }),
      ] as const,
      histograms: [
        new Histogram({ name: 'call_seconds', help: 'Call time', buckets, ...opts(theirs) }),
        new SeriesHistogram({ name: 'call_seconds', help: 'Call time', buckets, ...opts(ours) }),
      ] as const,
    };
  };

  it('exposes exactly the text prom-client exposes, Prometheus and OpenMetrics, bounds and absent labels included', async () => {
    const m = both();
    const seen: Array<[Record<string, string | number>, number]> = [
      [{ method: 'POST', route: '/v1/chat/completions', status: '200' }, 0.0004],
      [{ method: 'POST', route: '/v1/chat/completions', status: '200' }, 0.001],
      [{ method: 'POST', route: '/v1/chat/completions', status: '200' }, 0.05],
      [{ method: 'GET', route: '/v1/models', status: '401', optional: '' }, 2],
      [{ method: 'GET', route: '/v1/models', status: '401' }, 1],
      // A number and its text: one series, as in prom-client.
      [{ method: 'GET', route: '/v1/models', status: 401 }, 3],
      [{ method: 'GET', route: 'quote"and\\back\nslash', status: 500 }, 0.1],
      // Values that would run into each other if joined: two series.
      [{ method: '1:a', route: 'b' }, 1],
      [{ method: '1', route: 'a1:b' }, 1],
      [{ method: 'x\u0002', route: 'y' }, 1],
      [{ method: 'x', route: '\u0002y' }, 1],
    ];
    for (const [labels, v] of seen) {
      for (const c of m.counters) c.inc(labels, v);
      for (const h of m.histograms) h.observe(labels, v);
    }
    expect(await m.ours.metrics()).toBe(await m.theirs.metrics());
    // The JSON form too, but for prom-client's exemplar slot (always null here: exemplars are not enabled).
    const withoutExemplars = (metrics: object[]) =>
      JSON.parse(JSON.stringify(metrics, (k, v: unknown) => (k === 'exemplar' ? undefined : v)));
    expect(withoutExemplars(await m.ours.getMetricsAsJSON())).toEqual(
      withoutExemplars(await m.theirs.getMetricsAsJSON()),
    );
    m.ours.setContentType(Registry.OPENMETRICS_CONTENT_TYPE as never);
    m.theirs.setContentType(Registry.OPENMETRICS_CONTENT_TYPE as never);
    expect(await m.ours.metrics()).toBe(await m.theirs.metrics());
    // Eight label sets (an absent label and an empty one are two series), as prom-client counts them.
    expect((await m.ours.metrics()).match(/^calls_total/gm)).toHaveLength(8);
  });

  it('refuses what prom-client refuses: a label not declared, a value that is not a finite number, a negative increment', () => {
    const [, counter] = both().counters;
    const [, histogram] = both().histograms;
    expect(() => histogram.observe({ method: 'GET', nope: 'x' }, 1)).toThrow('Added label "nope"');
    // Refused before anything is kept: the same call is refused again, and the declared labels alone make a series.
    expect(() => histogram.observe({ method: 'GET', nope: 'x' }, 1)).toThrow('Added label "nope"');
    histogram.observe({ method: 'GET' }, 1);
    expect(() => histogram.observe({ method: 'GET' }, NaN)).toThrow('not a valid number');
    expect(() => counter.inc({ method: 'GET' }, -1)).toThrow('not possible to decrease');
  });

  it('starts over on reset', async () => {
    const m = both();
    m.histograms[1].observe({ method: 'GET' }, 1);
    m.ours.resetMetrics();
    expect(await m.ours.metrics()).not.toContain('call_seconds_count');
  });
});
