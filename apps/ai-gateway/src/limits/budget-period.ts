import type { BudgetPeriod } from './limit-set';

/** A budget period: [start, end) in epoch ms; a lifetime period starts at 0 and never ends (end null). */
export interface PeriodBounds {
  start: number;
  end: number | null;
}

/**
 * The period of `period` holding `nowMs`, its boundaries at local midnight in `timeZone` (an IANA name):
 * days, weeks starting on Monday (ISO 8601), calendar months. Daylight-saving days are 23 or 25 hours long.
 */
export function periodBounds(period: BudgetPeriod, nowMs: number, timeZone: string): PeriodBounds {
  if (period === 'lifetime') return { start: 0, end: null };
  // The last answer per period and zone holds until its end: five Intl formatToParts (~35 us each) are
  // paid once a period, not on every budgeted call's admission and settlement.
  const id = `${period} ${timeZone}`;
  const last = recent.get(id);
  if (last && nowMs >= last.start && nowMs < last.end) return { start: last.start, end: last.end };
  const bounds = computeBounds(period, nowMs, timeZone);
  recent.set(id, bounds);
  return { start: bounds.start, end: bounds.end };
}

/** The last bounds computed per `${period} ${timeZone}` (a handful of entries: three periods per configured zone). */
const recent = new Map<string, { start: number; end: number }>();

function computeBounds(period: Exclude<BudgetPeriod, 'lifetime'>, nowMs: number, timeZone: string) {
  const { year, month, day, weekday } = localDate(nowMs, timeZone);
  if (period === 'daily')
    return { start: localMidnight(year, month, day, timeZone), end: localMidnight(year, month, day + 1, timeZone) };
  if (period === 'weekly') {
    const back = (weekday + 6) % 7; // days since Monday
    return {
      start: localMidnight(year, month, day - back, timeZone),
      end: localMidnight(year, month, day - back + 7, timeZone),
    };
  }
  return { start: localMidnight(year, month, 1, timeZone), end: localMidnight(year, month + 1, 1, timeZone) };
}

const formats = new Map<string, Intl.DateTimeFormat>();

function format(timeZone: string): Intl.DateTimeFormat {
  let f = formats.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
      weekday: 'short',
    });
    formats.set(timeZone, f);
  }
  return f;
}

const WEEKDAYS: Record<string, number> = { Sun: 0, Mon: 1, Tue: 2, Wed: 3, Thu: 4, Fri: 5, Sat: 6 };

function parts(
  ms: number,
  timeZone: string,
): { year: number; month: number; day: number; hour: number; minute: number; second: number; weekday: number } {
  const p: Record<string, string> = {};
  for (const { type, value } of format(timeZone).formatToParts(ms)) p[type] = value;
  return {
    year: +p.year,
    month: +p.month,
    day: +p.day,
    hour: +p.hour,
    minute: +p.minute,
    second: +p.second,
    weekday: WEEKDAYS[p.weekday],
  };
}

function localDate(ms: number, timeZone: string) {
  return parts(ms, timeZone);
}

/** Offset of `timeZone` from UTC at instant `ms`, in ms (Shanghai: +8 h). */
function offsetAt(ms: number, timeZone: string): number {
  const p = parts(ms, timeZone);
  return Date.UTC(p.year, p.month - 1, p.day, p.hour, p.minute, p.second) - Math.floor(ms / 1000) * 1000;
}

/** The instant of 00:00 local time on the given day (month 1-based; day and month may overflow, as Date.UTC allows). */
function localMidnight(year: number, month: number, day: number, timeZone: string): number {
  const wall = Date.UTC(year, month - 1, day);
  // Two passes settle the offset also across a daylight-saving change.
  let t = wall - offsetAt(wall, timeZone);
  t = wall - offsetAt(t, timeZone);
  return t;
}
