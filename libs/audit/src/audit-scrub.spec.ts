import { scrubSecrets } from './audit-scrub';

describe('scrubSecrets', () => {
  it('drops secret fields at any depth and keeps limits whose names mention tokens', () => {
    const at = new Date('2026-11-01T00:00:00Z');
    expect(
      scrubSecrets({
        name: 'demo',
        key: 'sk-live-123',
        keyHash: 'abc',
        key_hash: 'abc',
        budget_tokens: 5,
        tokens_per_minute: 10,
        nested: {
          secret: 'whsec_x',
          secret_sealed: 'v1.x',
          passwordHash: 'h',
          refreshToken: 't',
          recovery_codes: ['a'],
          ok: [1, { token: 'x', keep: true }],
        },
        at,
      }),
    ).toEqual({
      name: 'demo',
      budget_tokens: 5,
      tokens_per_minute: 10,
      nested: { ok: [1, { keep: true }] },
      at: '2026-11-01T00:00:00.000Z',
    });
  });

  it('answers null for nothing', () => {
    expect(scrubSecrets(undefined)).toBeNull();
    expect(scrubSecrets(null)).toBeNull();
  });
});
