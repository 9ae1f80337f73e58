import { createHmac } from 'crypto';
import { Clock } from '@app/platform';
import { MembershipConfig } from '../config/membership.config';
import { TokenSecrets } from '../security/token-secrets';
import { AccessTokenService } from './access-token.service';

function service(ttlMs = 60_000, clock = new Clock()): { tokens: AccessTokenService; key: string } {
  const config = Object.assign(new MembershipConfig(), { JWT_SECRET: 'unit-secret-unit-secret-unit-secret-0123', ACCESS_TOKEN_TTL: ttlMs });
  const secrets = new TokenSecrets(config);
  return { tokens: new AccessTokenService(secrets, config, clock), key: secrets.accessToken };
}

const b64 = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
const signWith = (key: string, payload: object, header: object = { alg: 'HS256', typ: 'JWT' }) => {
  const body = `${b64(header)}.${b64(payload)}`;
  return `${body}.${createHmac('sha256', key).update(body).digest('base64url')}`;
};

describe('AccessTokenService.verify (remembers verified tokens)', () => {
  afterEach(() => jest.useRealTimers());

  it('answers the same claims again, and refuses a cached token once it has expired', () => {
    jest.useFakeTimers({ now: new Date('2030-01-01T00:00:00Z') });
    const { tokens } = service(2_000);
    const { token } = tokens.sign('42', 'sid-1', 'password', ['pwd']);
    const first = tokens.verify(token);
    expect(first).toMatchObject({ sub: '42', memberId: '42', sid: 'sid-1', type: 'member' });
    expect(tokens.verify(token)).toEqual(first);
    jest.setSystemTime(new Date('2030-01-01T00:00:01.999Z'));
    expect(tokens.verify(token)).not.toBeNull();
    jest.setSystemTime(new Date('2030-01-01T00:00:02Z')); // exp <= now: expired, as jsonwebtoken decides
    expect(tokens.verify(token)).toBeNull();
    expect(tokens.verify(token)).toBeNull();
  });

  it('signs and checks expiry by the injected Clock, not Date.now (uncached tokens too)', () => {
    let now = Date.UTC(2031, 0, 1);
    const clock: Clock = { now: () => now };
    const signer = service(2_000, clock).tokens;
    const { token } = signer.sign('42', 'sid-1', 'password', ['pwd']);
    const claims = JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString());
    expect(claims.iat).toBe(now / 1000);
    expect(claims.exp).toBe(now / 1000 + 2);
    // A fresh service has nothing cached: jsonwebtoken itself checks against the Clock.
    expect(service(2_000, clock).tokens.verify(token)).not.toBeNull();
    now += 2_000;
    expect(service(2_000, clock).tokens.verify(token)).toBeNull();
  });

  it('a cached token does not vouch for a tampered copy', () => {
    const { tokens } = service();
    const { token } = tokens.sign('7', 'sid-2', 'password', ['pwd']);
    expect(tokens.verify(token)).not.toBeNull();
    const [h, p, s] = token.split('.');
    const forged = b64({ ...JSON.parse(Buffer.from(p, 'base64url').toString()), sub: '8', memberId: '8' });
    expect(tokens.verify(`${h}.${forged}.${s}`)).toBeNull();
    expect(tokens.verify(`${token}x`)).toBeNull();
    expect(tokens.verify(`${h}.${p}.${s.slice(0, -2)}`)).toBeNull();
  });

  it('still pins algorithm, issuer, audience and type', () => {
    const { tokens, key } = service();
    const now = Math.floor(Date.now() / 1000);
    const claims = { sub: '9', memberId: '9', type: 'member', loginType: 'password', sid: 's', jti: 'j', iat: now, exp: now + 60, iss: 'membership', aud: 'membership:member' };
    expect(tokens.verify(signWith(key, claims))).not.toBeNull();
    expect(tokens.verify(signWith(key, { ...claims, aud: 'other' }))).toBeNull();
    expect(tokens.verify(signWith(key, { ...claims, iss: 'other' }))).toBeNull();
    expect(tokens.verify(signWith(key, { ...claims, type: 'api-key' }))).toBeNull();
    expect(tokens.verify(signWith(key, claims, { alg: 'none' }).replace(/[^.]+$/, ''))).toBeNull();
    expect(tokens.verify(signWith('another-key', claims))).toBeNull();
  });

  it('does not remember a token with a not-before time (checked again on every use)', () => {
    const { tokens, key } = service();
    const now = Math.floor(Date.now() / 1000);
    const claims = { sub: '9', memberId: '9', type: 'member', loginType: 'password', sid: 's', jti: 'j', iat: now, nbf: now - 1, exp: now + 60, iss: 'membership', aud: 'membership:member' };
    const token = signWith(key, claims);
    expect(tokens.verify(token)).not.toBeNull();
    expect((tokens as any).verified.has(token)).toBe(false);
  });
});
