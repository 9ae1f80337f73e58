import { normalizeError } from './normalize-error';

describe('normalizeError: values PostgreSQL cannot store', () => {
  it.each([['22021'], ['22P05']])('a driver error %s (e.g. a NUL byte in text) is a 400, not a 500', (code) => {
    const queryFailed = Object.assign(new Error('invalid byte sequence for encoding "UTF8": 0x00'), {
      driverError: { code },
    });
    expect(normalizeError(queryFailed)).toEqual({
      status: 400,
      message: expect.stringMatching(/cannot be stored/),
      text: expect.anything(),
    });
  });

  it('other driver errors stay unexpected', () => {
    expect(normalizeError(Object.assign(new Error('x'), { driverError: { code: '23505' } }))).toMatchObject({
      status: 500,
      unexpected: true,
    });
  });
});

describe('normalizeError: a statement PostgreSQL cut', () => {
  it('57014 query_canceled (statement_timeout) is a retryable 503, not a 500', () => {
    const cut = Object.assign(new Error('canceling statement due to statement timeout'), {
      driverError: { code: '57014', severity: 'ERROR' },
    });
    expect(normalizeError(cut)).toEqual({
      status: 503,
      message: 'Service temporarily unavailable, retry shortly',
      text: expect.anything(),
      errorCode: 'database_timeout',
      retryAfterSeconds: 1,
    });
  });
});

describe('normalizeError: bodies the replica will not read now (body-budget.ts, body-arrival.ts in libs/platform)', () => {
  const bodyError = (status: number, type: string, extra: Record<string, unknown>) =>
    Object.assign(new Error('x'), { status, statusCode: status, type, expose: true, ...extra });

  it("a caller's bodies in flight are a 429 with its Retry-After, the replica's a 503 server_busy", () => {
    expect(normalizeError(bodyError(429, 'bodies.caller.busy', { retryAfterSeconds: 1 }))).toEqual({
      status: 429,
      message: 'Too many of your request bodies are being received; retry when one is done',
      text: expect.anything(),
      retryAfterSeconds: 1,
    });
    expect(normalizeError(bodyError(503, 'bodies.replica.busy', { retryAfterSeconds: 1 }))).toEqual({
      status: 503,
      message: 'Too many request bodies are being received; retry shortly',
      text: expect.anything(),
      errorCode: 'server_busy',
      retryAfterSeconds: 1,
    });
  });

  it('a body arriving too slowly is a 408 naming the floor', () => {
    expect(normalizeError(bodyError(408, 'request.too.slow', { minBytesPerSecond: 16 * 1024 }))).toMatchObject({
      status: 408,
      message: 'Request body too slow: it must arrive at 16 KiB/s at least; retry on a faster connection',
    });
  });
});
