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
