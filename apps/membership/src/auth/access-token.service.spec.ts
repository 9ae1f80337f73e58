import { createHmac } from 'crypto';
import { Clock } from '@app/platform';
import { MembershipConfig } from '../config/membership.config';
import { TokenSecrets } from '../security/token-secrets';
import { AccessTokenKeys, privateJwkOf } from './access-token-keys';
import { AccessTokenService } from './access-token.service';

function service(
  ttlMs = 60_000,
  clock = new Clock(),
  extra: Partial<MembershipConfig> = {},
): { tokens: AccessTokenService; key: string; keys: AccessTokenKeys } {
  const config = Object.assign(new MembershipConfig(), {
    JWT_SECRET: 'unit-secret-unit-secret-unit-secret-0123',
    ACCESS_TOKEN_TTL: ttlMs,
    ...extra,
  });
  const secrets = new TokenSecrets(config);
  const keys = new AccessTokenKeys(config);
  return { tokens: new AccessTokenService(secrets, keys, config, clock), key: secrets.accessToken, keys };
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
    const { token } = tokens.sign('42', 'sid-1', 'password', ['pwd'], []);
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
    const clock = { now: () => now } as Clock;
    const signer = service(2_000, clock).tokens;
    const { token } = signer.sign('42', 'sid-1', 'password', ['pwd'], []);
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
    const { token } = tokens.sign('7', 'sid-2', 'password', ['pwd'], []);
    expect(tokens.verify(token)).not.toBeNull();
    const [h, p, s] = token.split('.');
    const forged = b64({ ...JSON.parse(Buffer.from(p, 'base64url').toString()), sub: '8', memberId: '8' });
    expect(tokens.verify(`${h}.${forged}.${s}`)).toBeNull();
    expect(tokens.verify(`${token}x`)).toBeNull();
    expect(tokens.verify(`${h}.${p}.${s.slice(0, -2)}`)).toBeNull();
  });

  it('HS256 tokens of before the switch: still pins algorithm, issuer, audience and type', () => {
    const { tokens, key } = service();
    const now = Math.floor(Date.now() / 1000) - 5;
    const claims = {
      sub: '9',
      memberId: '9',
      type: 'member',
      loginType: 'password',
      sid: 's',
      jti: 'j',
      iat: now,
      exp: now + 60,
      iss: 'membership',
      aud: 'membership:member',
    };
    expect(tokens.verify(signWith(key, claims))).not.toBeNull();
    expect(tokens.verify(signWith(key, { ...claims, aud: 'other' }))).toBeNull();
    expect(tokens.verify(signWith(key, { ...claims, iss: 'other' }))).toBeNull();
    expect(tokens.verify(signWith(key, { ...claims, type: 'api-key' }))).toBeNull();
    expect(tokens.verify(signWith(key, claims, { alg: 'none' }).replace(/[^.]+$/, ''))).toBeNull();
    expect(tokens.verify(signWith('another-key', claims))).toBeNull();
  });

  it('does not remember a token with a not-before time (checked again on every use)', () => {
    const { tokens, key } = service();
    const now = Math.floor(Date.now() / 1000) - 5;
    const claims = {
      sub: '9',
      memberId: '9',
      type: 'member',
      loginType: 'password',
      sid: 's',
      jti: 'j',
      iat: now,
      nbf: now - 1,
      exp: now + 60,
      iss: 'membership',
      aud: 'membership:member',
    };
    const token = signWith(key, claims);
    expect(tokens.verify(token)).not.toBeNull();
    expect((tokens as any).verified.has(token)).toBe(false);
  });
});

describe('AccessTokenService: ES256 with a kid, rotation, the HS256 window', () => {
  const legacyClaims = (iat: number) => ({
    sub: '9',
    memberId: '9',
    type: 'member',
    loginType: 'password',
    sid: 's',
    jti: 'j',
    iat,
    exp: iat + 3600,
    iss: 'membership',
    aud: 'membership:member',
  });
  const headerOf = (token: string) => JSON.parse(Buffer.from(token.split('.')[0], 'base64url').toString());
  const claimsOf = (token: string) => JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString());

  it("signs ES256 naming the signing key; operators' tokens add the gateway audience and carry roles", () => {
    const { tokens, keys } = service();
    const member = tokens.sign('1', 's', 'password', ['pwd'], []).token;
    expect(headerOf(member)).toEqual({ alg: 'ES256', typ: 'JWT', kid: keys.signing.kid });
    expect(claimsOf(member)).toMatchObject({ iss: 'membership', aud: 'membership:member', roles: [] });
    const admin = tokens.sign('2', 's', 'password', ['pwd', 'otp', 'mfa'], ['admin']).token;
    expect(claimsOf(admin)).toMatchObject({
      aud: ['membership:member', 'ai-gateway'],
      roles: ['admin'],
      amr: ['pwd', 'otp', 'mfa'],
    });
    expect(tokens.verify(admin)).toMatchObject({ sub: '2' });
  });

  it('after a rotation, tokens of the previous key still verify; a key no longer configured does not', () => {
    const first = service().keys;
    const second = service(60_000, new Clock(), { JWT_SECRET: 'other-secret-other-secret-other-secret-01' }).keys;
    const jwk = (k: AccessTokenKeys) => privateJwkOf(k.signing);
    const before = service(60_000, new Clock(), { ACCESS_TOKEN_KEYS: JSON.stringify({ keys: [jwk(first)] }) }).tokens;
    const old = before.sign('1', 's', 'password', ['pwd'], []).token;
    const rotated = service(60_000, new Clock(), {
      ACCESS_TOKEN_KEYS: JSON.stringify({ keys: [jwk(second), jwk(first)] }),
    });
    expect(rotated.keys.jwks().keys.map((k) => k.kid)).toEqual([second.signing.kid, first.signing.kid]);
    expect(rotated.keys.jwks().keys[0]).not.toHaveProperty('d');
    const fresh = rotated.tokens.sign('1', 's', 'password', ['pwd'], []).token;
    expect(headerOf(fresh).kid).toBe(second.signing.kid);
    expect(rotated.tokens.verify(old)).not.toBeNull();
    const after = service(60_000, new Clock(), { ACCESS_TOKEN_KEYS: JSON.stringify({ keys: [jwk(second)] }) }).tokens;
    expect(after.verify(fresh)).not.toBeNull();
    expect(after.verify(old)).toBeNull();
  });

  it('refuses an HS256 token signed with the public key (algorithm confusion) and one with an unknown kid', () => {
    const { tokens, keys } = service();
    const now = Math.floor(Date.now() / 1000) - 5;
    const pem = keys.signing.publicKey.export({ format: 'pem', type: 'spki' }).toString();
    expect(tokens.verify(signWith(pem, legacyClaims(now)))).toBeNull();
    const good = tokens.sign('1', 's', 'password', ['pwd'], []).token;
    const [h, p, s] = good.split('.');
    const otherKid = b64({ ...JSON.parse(Buffer.from(h, 'base64url').toString()), kid: 'unknown' });
    expect(tokens.verify(`${otherKid}.${p}.${s}`)).toBeNull();
  });

  it('accepts HS256 only for tokens issued before the process started, and only until the window closes', () => {
    let now = Date.UTC(2031, 0, 1);
    const clock = { now: () => now } as Clock;
    const { tokens, key } = service(600_000, clock);
    const issuedBefore = signWith(key, legacyClaims(now / 1000 - 10));
    const issuedAfter = signWith(key, legacyClaims(now / 1000 + 1));
    expect(tokens.verify(issuedBefore)).not.toBeNull();
    now += 2_000;
    expect(tokens.verify(issuedAfter)).toBeNull();
    now += 600_000; // past ACCESS_TOKEN_TTL after boot: the window is closed, the token itself unexpired for most of an hour
    expect(tokens.verify(issuedBefore)).toBeNull();
    const until = service(600_000, clock, { ACCESS_TOKEN_HS256_ACCEPT_UNTIL: new Date(now - 1).toISOString() }).tokens;
    expect(until.verify(signWith(key, legacyClaims(now / 1000 - 10)))).toBeNull();
    const open = service(600_000, clock, {
      ACCESS_TOKEN_HS256_ACCEPT_UNTIL: new Date(now + 60_000).toISOString(),
    }).tokens;
    expect(open.verify(signWith(key, legacyClaims(now / 1000 - 10)))).not.toBeNull();
  });
});
