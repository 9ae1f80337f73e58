import { periodBounds } from './budget-period';

const at = (iso: string) => Date.parse(iso);
const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

describe('periodBounds (budget periods at local midnight)', () => {
  it('starts days, weeks (Monday) and months at midnight in Asia/Shanghai', () => {
    const now = at('2026-11-27T04:00:00Z'); // Friday noon in Shanghai
    const day = periodBounds('daily', now, 'Asia/Shanghai');
    expect([iso(day.start), iso(day.end)]).toEqual(['2026-11-26T16:00:00.000Z', '2026-11-27T16:00:00.000Z']);
    const week = periodBounds('weekly', now, 'Asia/Shanghai');
    expect([iso(week.start), iso(week.end)]).toEqual(['2026-11-22T16:00:00.000Z', '2026-11-29T16:00:00.000Z']);
    const month = periodBounds('monthly', now, 'Asia/Shanghai');
    expect([iso(month.start), iso(month.end)]).toEqual(['2026-10-31T16:00:00.000Z', '2026-11-30T16:00:00.000Z']);
    expect(periodBounds('lifetime', now, 'Asia/Shanghai')).toEqual({ start: 0, end: null });
  });

  it('belongs to the local day: 23:59 and 00:00 in Shanghai are different days, whatever the UTC date', () => {
    expect(iso(periodBounds('daily', at('2026-11-27T15:59:59Z'), 'Asia/Shanghai').start)).toBe(
      '2026-11-26T16:00:00.000Z',
    );
    expect(iso(periodBounds('daily', at('2026-11-27T16:00:00Z'), 'Asia/Shanghai').start)).toBe(
      '2026-11-27T16:00:00.000Z',
    );
    // A Sunday evening is still the week that began on Monday; the year and month roll over.
    expect(iso(periodBounds('weekly', at('2026-11-29T15:00:00Z'), 'Asia/Shanghai').start)).toBe(
      '2026-11-22T16:00:00.000Z',
    );
    const december = periodBounds('monthly', at('2026-12-31T17:00:00Z'), 'Asia/Shanghai');
    expect([iso(december.start), iso(december.end)]).toEqual(['2026-12-31T16:00:00.000Z', '2027-01-31T16:00:00.000Z']);
  });

  it('handles daylight-saving days (23 and 25 hours) where the zone has them', () => {
    // New York springs forward on 2026-03-08 and falls back on 2026-11-01.
    const spring = periodBounds('daily', at('2026-03-08T12:00:00Z'), 'America/New_York');
    expect([iso(spring.start), iso(spring.end)]).toEqual(['2026-03-08T05:00:00.000Z', '2026-03-09T04:00:00.000Z']);
    const autumn = periodBounds('daily', at('2026-11-01T12:00:00Z'), 'America/New_York');
    expect([iso(autumn.start), iso(autumn.end)]).toEqual(['2026-11-01T04:00:00.000Z', '2026-11-02T05:00:00.000Z']);
    expect(iso(periodBounds('daily', at('2026-06-01T02:00:00Z'), 'UTC').start)).toBe('2026-06-01T00:00:00.000Z');
  });

  it('asks Intl once a period: later instants of the same period reuse the bounds, any other instant computes its own', () => {
    const formatToParts = jest.spyOn(Intl.DateTimeFormat.prototype, 'formatToParts');
    try {
      const first = periodBounds('daily', at('2030-05-10T01:00:00Z'), 'Asia/Tokyo');
      const asked = formatToParts.mock.calls.length;
      expect(asked).toBeGreaterThan(0);
      for (const t of ['2030-05-10T01:00:01Z', '2030-05-10T14:59:59Z', '2030-05-09T15:00:00Z'])
        expect(periodBounds('daily', at(t), 'Asia/Tokyo')).toEqual(first);
      expect(formatToParts.mock.calls.length).toBe(asked);
      // The next day, an earlier one (a clock moved back) and another zone or period are their own periods.
      expect(iso(periodBounds('daily', at('2030-05-10T15:00:00Z'), 'Asia/Tokyo').start)).toBe(
        '2030-05-10T15:00:00.000Z',
      );
      expect(iso(periodBounds('daily', at('2030-05-09T14:59:59Z'), 'Asia/Tokyo').start)).toBe(
        '2030-05-08T15:00:00.000Z',
      );
      expect(iso(periodBounds('daily', at('2030-05-10T01:00:00Z'), 'UTC').start)).toBe('2030-05-10T00:00:00.000Z');
      expect(iso(periodBounds('monthly', at('2030-05-10T01:00:00Z'), 'Asia/Tokyo').start)).toBe(
        '2030-04-30T15:00:00.000Z',
      );
      // A caller changing its answer does not change the next one.
      const mine = periodBounds('weekly', at('2030-05-10T01:00:00Z'), 'Asia/Tokyo');
      mine.start = 0;
      expect(iso(periodBounds('weekly', at('2030-05-10T01:00:01Z'), 'Asia/Tokyo').start)).toBe(
        '2030-05-05T15:00:00.000Z',
      );
    } finally {
      formatToParts.mockRestore();
    }
  });
});
