import { RefusedUntil } from './call-admission';
import type { WindowCounter } from './call-limits';

const window = (limit: number): WindowCounter => ({
  key: 'rpm:k:k1',
  name: 'key:k1:requests_per_minute',
  field: 'requests_per_minute',
  limit,
  window_ms: 60_000,
  bucket_ms: 1_000,
  amount: 1,
});
const refused = (retry_ms: number | null) => ({
  allowed: false,
  refused: { name: 'key:k1:requests_per_minute', kind: 'window' as const, retry_ms },
  windows: [{ name: 'key:k1:requests_per_minute', limit: 2, used: 2, reset_ms: 60_500 }],
});

describe('RefusedUntil', () => {
  it('answers a remembered refusal with times counted from now until its retry time, for the same windows only', () => {
    const memory = new RefusedUntil();
    memory.remember('k1', [window(2)], 100_500, refused(30_000));
    expect(memory.answer('k1', [window(2)], 110_500)).toEqual({
      allowed: false,
      refused: { name: 'key:k1:requests_per_minute', kind: 'window', retry_ms: 20_000 },
      // The current bucket (110 s) leaves the window at 171 s.
      windows: [{ name: 'key:k1:requests_per_minute', limit: 2, used: 2, reset_ms: 60_500 }],
    });
    expect(memory.answer('k2', [window(2)], 110_500)).toBeNull();
    expect(memory.answer('k1', [window(3)], 110_500)).toBeNull(); // another limit: forgotten
    expect(memory.size).toBe(0);
    memory.remember('k1', [window(2)], 100_500, refused(30_000));
    expect(memory.answer('k1', [window(2)], 130_500)).toBeNull(); // the retry time: asked again
    expect(memory.size).toBe(0);
  });

  it('keeps no refusal that waiting does not end, and at most MAX_REMEMBERED keys', () => {
    const memory = new RefusedUntil();
    memory.remember('k1', [window(2)], 0, refused(null));
    memory.remember('k1', [window(2)], 0, { ...refused(1), refused: { ...refused(1).refused, kind: 'budget' } });
    expect(memory.size).toBe(0);
    for (let i = 0; i < RefusedUntil.MAX_REMEMBERED + 5; i++) memory.remember(`k${i}`, [window(2)], 0, refused(1000));
    expect(memory.size).toBe(RefusedUntil.MAX_REMEMBERED);
    // Full of live entries: the oldest went first; expired ones are dropped before any live one.
    expect(memory.answer('k0', [window(2)], 1)).toBeNull();
    expect(memory.answer(`k${RefusedUntil.MAX_REMEMBERED + 4}`, [window(2)], 1)).not.toBeNull();
    memory.remember('late', [window(2)], 2000, refused(1000));
    expect(memory.size).toBe(1);
  });
});
