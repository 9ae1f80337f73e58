/**
 * The gateway's admin API taken by membership operators: a real membership app and a real gateway on
 * loopback sharing one Clock. Admins sign in with password + authenticator-app code (enrolment enforced
 * by MFA_REQUIRED_ROLES) and call /admin/** with their ES256 access token, verified against
 * membership's JWKS (MEMBERSHIP_JWKS_URL, served here through a counting relay): viewers read only,
 * tokens without a second factor, of another issuer or audience, expired, or foreign are refused, and
 * a rotated signing key is picked up with a bounded number of fetches.
 */
import * as http from 'http';
import { AddressInfo } from 'net';
import { generateKeyPairSync, JsonWebKey, KeyObject, sign as ecSign } from 'crypto';
import request from 'supertest';
import { Secret, TOTP } from 'otpauth';
import { thumbprint } from '../../apps/membership/src/auth/access-token-keys';
import { RunningApp, startGateway, startMembership } from '../support/apps';
import { FakeClock } from '../support/clock';
import { queryRows } from '../support/database';
import { bearer, client } from '../membership/fakes';

const AUTH = '/api/v1/app/auth';
const SEC = '/api/v1/app/security';
const STEP_MS = 30_000;
const ADMIN_TOKEN = 'test-admin-token-0123456789';
const REFRESH_MIN_MS = 120_000;
const CACHE_MS = 300_000;

interface SigningKey {
  kid: string;
  privateKey: KeyObject;
  jwk: JsonWebKey;
}

function newKey(): SigningKey {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const jwk = privateKey.export({ format: 'jwk' });
  const kid = thumbprint(jwk.x!, jwk.y!);
  return { kid, privateKey, jwk: { ...jwk, kid } };
}

const b64 = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
const claimsOf = (token: string) => JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString());
const headerOf = (token: string) => JSON.parse(Buffer.from(token.split('.')[0], 'base64url').toString());

/** A token signed like membership signs them (ES256, JOSE signature encoding), with any claims. */
function signAs(key: { kid: string; privateKey: KeyObject }, payload: object, header: object = {}): string {
  const body = `${b64({ alg: 'ES256', typ: 'JWT', kid: key.kid, ...header })}.${b64(payload)}`;
  return `${body}.${ecSign('sha256', Buffer.from(body), { key: key.privateKey, dsaEncoding: 'ieee-p1363' }).toString('base64url')}`;
}

/** Serves GET /jwks.json from whichever membership app is `target`, counting fetches. */
async function startJwksRelay() {
  const relay = {
    target: '',
    fetches: 0,
    url: '',
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
  const server = http.createServer((req, res) => {
    relay.fetches += 1;
    void fetch(`${relay.target}/.well-known/jwks.json`)
      .then(async (r) => {
        res.writeHead(r.status, { 'content-type': r.headers.get('content-type') ?? 'application/json' });
        res.end(await r.text());
      })
      .catch(() => {
        res.writeHead(502);
        res.end();
      });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  relay.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks.json`;
  return relay;
}

describe('AI gateway admin API with membership operator tokens (JWKS, roles, second factor, rotation)', () => {
  // Mid-step, so "the current TOTP step" cannot change under a test that does not move the clock.
  const clock = new FakeClock(Math.floor(Date.now() / STEP_MS) * STEP_MS + 10_000);
  const k1 = newKey();
  const k2 = newKey();
  let membership: RunningApp;
  let rotated: RunningApp | undefined;
  let gateway: RunningApp;
  let relay: Awaited<ReturnType<typeof startJwksRelay>>;
  let adminSecret = '';
  let adminToken = '';
  let viewerToken = '';
  let memberToken = '';

  const codeAt = (secret: string, at = clock.now()) =>
    new TOTP({ secret: Secret.fromBase32(secret), digits: 6, period: 30, algorithm: 'SHA1' }).generate({
      timestamp: at,
    });
  const gw = (method: 'get' | 'post' | 'patch' | 'delete', path: string, token: string) =>
    request(gateway.url)[method](path).set(bearer(token));
  const errorCode = (res: request.Response) => res.body?.error?.code;
  /** Claims of a valid admin token of now, to vary one at a time. */
  const adminClaims = () => {
    const now = Math.floor(clock.now() / 1000);
    return {
      sub: '1',
      memberId: '1',
      type: 'member',
      loginType: 'password',
      amr: ['pwd', 'otp', 'mfa'],
      roles: ['admin'],
      sid: '00000000-0000-4000-8000-000000000000',
      jti: 'j',
      iss: 'membership',
      aud: ['membership:member', 'ai-gateway'],
      iat: now,
      exp: now + 600,
    };
  };

  /** Signs the admin in with password + current TOTP code on `app` (the admin enrolled already). */
  async function adminSignIn(app: RunningApp): Promise<string> {
    const c = client(app.url);
    const ch = await c.post(`${AUTH}/login`).send({ account: 'op_admin', password: 'admin-password-1' }).expect(200);
    expect(ch.body.data).toMatchObject({ mfaRequired: true, enrolmentRequired: false });
    const done = await c
      .post(`${AUTH}/mfa/verify`)
      .send({ mfaToken: ch.body.data.mfaToken, method: 'totp', code: codeAt(adminSecret) })
      .expect(200);
    return done.body.data.token as string;
  }

  beforeAll(async () => {
    relay = await startJwksRelay();
    membership = await startMembership(
      {
        MFA_REQUIRED_ROLES: 'admin',
        ADMIN_ACCOUNT: 'op_admin',
        ADMIN_PASSWORD: 'admin-password-1',
        ACCESS_TOKEN_KEYS: JSON.stringify({ keys: [k1.jwk] }),
      },
      { clock },
    );
    relay.target = membership.url;
    gateway = await startGateway(
      {
        MEMBERSHIP_JWKS_URL: relay.url,
        MEMBERSHIP_JWKS_REFRESH_MIN_MS: String(REFRESH_MIN_MS),
        MEMBERSHIP_JWKS_CACHE_MS: String(CACHE_MS),
      },
      { clock },
    );

    // The admin must enrol an authenticator app at the first sign-in (MFA_REQUIRED_ROLES=admin).
    const c = client(membership.url);
    const ch = await c.post(`${AUTH}/login`).send({ account: 'op_admin', password: 'admin-password-1' }).expect(200);
    expect(ch.body.data).toMatchObject({ mfaRequired: true, enrolmentRequired: true });
    const begun = await c.post(`${AUTH}/mfa/enrol/totp`).send({ mfaToken: ch.body.data.mfaToken }).expect(200);
    adminSecret = begun.body.data.secret;
    const enrolled = await c
      .post(`${AUTH}/mfa/enrol/totp/confirm`)
      .send({ mfaToken: ch.body.data.mfaToken, code: codeAt(adminSecret) })
      .expect(200);
    adminToken = enrolled.body.data.token;

    // A viewer (role given in the database, as the members admin API does) with an authenticator app.
    await c.post(`${AUTH}/register`).send({ username: 'op_viewer', password: 'viewer-password-1' }).expect(200);
    await c.post(`${AUTH}/register`).send({ username: 'op_member', password: 'member-password-1' }).expect(200);
    await queryRows(membership.dbUrl, `UPDATE members SET roles = '{viewer}' WHERE username = 'op_viewer'`);
    const first = await c
      .post(`${AUTH}/login`)
      .send({ account: 'op_viewer', password: 'viewer-password-1' })
      .expect(200);
    const viewerBegun = await c.post(`${SEC}/totp`).set(bearer(first.body.data.token)).expect(200);
    await c
      .post(`${SEC}/totp/confirm`)
      .set(bearer(first.body.data.token))
      .send({ code: codeAt(viewerBegun.body.data.secret) })
      .expect(200);
    clock.advance(STEP_MS);
    const vch = await c.post(`${AUTH}/login`).send({ account: 'op_viewer', password: 'viewer-password-1' }).expect(200);
    const vdone = await c
      .post(`${AUTH}/mfa/verify`)
      .send({ mfaToken: vch.body.data.mfaToken, method: 'totp', code: codeAt(viewerBegun.body.data.secret) })
      .expect(200);
    viewerToken = vdone.body.data.token;
    memberToken = (
      await c.post(`${AUTH}/login`).send({ account: 'op_member', password: 'member-password-1' }).expect(200)
    ).body.data.token;
  }, 60_000);

  afterAll(async () => {
    await gateway?.close();
    await rotated?.close();
    await membership?.close();
    await relay?.close();
  });

  it('membership publishes its public key set; admin and viewer tokens name its key and carry roles, amr and the gateway audience', async () => {
    const jwks = await request(membership.url).get('/.well-known/jwks.json').expect(200);
    expect(jwks.headers['cache-control']).toBe('public, max-age=300');
    expect(jwks.body).toEqual({
      keys: [{ kty: 'EC', crv: 'P-256', x: k1.jwk.x, y: k1.jwk.y, kid: k1.kid, alg: 'ES256', use: 'sig' }],
    });
    expect(headerOf(adminToken)).toEqual({ alg: 'ES256', typ: 'JWT', kid: k1.kid });
    expect(claimsOf(adminToken)).toMatchObject({
      iss: 'membership',
      aud: ['membership:member', 'ai-gateway'],
      roles: ['admin'],
      amr: ['pwd', 'otp', 'mfa'],
    });
    expect(claimsOf(viewerToken)).toMatchObject({
      aud: ['membership:member', 'ai-gateway'],
      roles: ['viewer'],
      amr: ['pwd', 'otp', 'mfa'],
    });
    expect(claimsOf(memberToken)).toMatchObject({ aud: 'membership:member', roles: [] });
  });

  it('an admin signed in with password + TOTP manages keys with the membership token; ADMIN_TOKEN keeps working; the key set is fetched once', async () => {
    const list = await gw('get', '/admin/keys', adminToken).expect(200);
    expect(list.body.object).toBe('list');
    const created = await gw('post', '/admin/keys', adminToken).send({ name: 'console key' }).expect(201);
    expect(created.body.key).toMatch(/^sk-/);
    await gw('patch', `/admin/keys/${created.body.id}`, adminToken).send({ budget_yuan: 5 }).expect(200);
    await gw('get', '/admin/usage', adminToken).expect(200);
    await gw('get', `/admin/keys/${created.body.id}`, ADMIN_TOKEN).expect(200);
    expect(relay.fetches).toBe(1);
  });

  it('a viewer reads every admin GET and writes nothing', async () => {
    const keys = await gw('get', '/admin/keys', viewerToken).expect(200);
    const id = keys.body.data[0].id as string;
    await gw('get', `/admin/keys/${id}`, viewerToken).expect(200);
    await gw('get', '/admin/projects', viewerToken).expect(200);
    await gw('get', '/admin/usage', viewerToken).expect(200);
    for (const [method, path] of [
      ['post', '/admin/keys'],
      ['patch', `/admin/keys/${id}`],
      ['delete', `/admin/keys/${id}`],
      ['post', '/admin/projects'],
    ] as const) {
      const res = await gw(method, path, viewerToken).send({ name: 'nope' });
      expect({ method, path, status: res.status, code: errorCode(res) }).toEqual({
        method,
        path,
        status: 403,
        code: 'admin_read_only',
      });
    }
    const still = await gw('get', `/admin/keys/${id}`, ADMIN_TOKEN).expect(200);
    expect(still.body.status).toBe('active');
  });

  it('refuses a member without an operator role, a token without a second factor, another issuer or audience, other algorithms and foreign keys', async () => {
    // An ordinary member's token does not name the gateway as its audience.
    expect(errorCode(await gw('get', '/admin/keys', memberToken).expect(401))).toBe('invalid_admin_token');
    // Control: a token built like the ones below with nothing changed is accepted, so each refusal is the change's.
    await gw('get', '/admin/keys', signAs(k1, adminClaims())).expect(200);
    expect(errorCode(await gw('get', '/admin/keys', signAs(k1, { ...adminClaims(), amr: ['pwd'] })).expect(403))).toBe(
      'second_factor_required',
    );
    expect(
      errorCode(await gw('get', '/admin/keys', signAs(k1, { ...adminClaims(), amr: undefined })).expect(403)),
    ).toBe('second_factor_required');
    // A passkey sign-in (hwk) is a second factor on its own.
    await gw('get', '/admin/keys', signAs(k1, { ...adminClaims(), amr: ['hwk', 'mfa'] })).expect(200);
    expect(
      errorCode(await gw('get', '/admin/keys', signAs(k1, { ...adminClaims(), roles: ['member'] })).expect(403)),
    ).toBe('admin_role_required');
    const refused: [string, string][] = [
      ['other issuer', signAs(k1, { ...adminClaims(), iss: 'evil' })],
      ['other audience', signAs(k1, { ...adminClaims(), aud: 'membership:member' })],
      [
        'expired',
        signAs(k1, {
          ...adminClaims(),
          iat: Math.floor(clock.now() / 1000) - 700,
          exp: Math.floor(clock.now() / 1000) - 100,
        }),
      ],
      ['other token type', signAs(k1, { ...adminClaims(), type: 'refresh' })],
      [
        'foreign key under the right kid',
        signAs(
          { kid: k1.kid, privateKey: generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey },
          adminClaims(),
        ),
      ],
      ['alg none', `${b64({ alg: 'none', typ: 'JWT', kid: k1.kid })}.${b64(adminClaims())}.`],
      ['HS256', `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64(adminClaims())}.c2ln`],
      [
        'tampered roles',
        (() => {
          const [h, , s] = signAs(k1, { ...adminClaims(), roles: ['viewer'] }).split('.');
          return `${h}.${b64(adminClaims())}.${s}`;
        })(),
      ],
      ['not a token', 'a.b.c'],
    ];
    for (const [name, token] of refused) {
      const res = await gw('get', '/admin/keys', token);
      expect({ name, status: res.status, code: errorCode(res) }).toEqual({
        name,
        status: 401,
        code: 'invalid_admin_token',
      });
    }
    // Unknown kids are refused without fetching the key set again inside MEMBERSHIP_JWKS_REFRESH_MIN_MS.
    const before = relay.fetches;
    for (let i = 0; i < 5; i++)
      expect(
        errorCode(await gw('get', '/admin/keys', signAs({ ...k1, kid: `guess-${i}` }, adminClaims())).expect(401)),
      ).toBe('invalid_admin_token');
    expect(relay.fetches).toBe(before);
  });

  it("an expired membership token is refused by the gateway's clock", async () => {
    const token = await (async () => {
      clock.advance(STEP_MS);
      return adminSignIn(membership);
    })();
    await gw('get', '/admin/keys', token).expect(200);
    clock.advance(claimsOf(token).exp * 1000 - clock.now());
    expect(errorCode(await gw('get', '/admin/keys', token).expect(401))).toBe('invalid_admin_token');
  });

  it('key rotation: a token of the new kid is picked up by one fetch, no sooner than MEMBERSHIP_JWKS_REFRESH_MIN_MS after the last; tokens of the previous key still work', async () => {
    clock.advance(STEP_MS);
    const oldToken = await adminSignIn(membership);
    // The cached key set is out of date: the next request fetches it (from the app still signing with k1).
    clock.advance(CACHE_MS);
    const before = relay.fetches;
    await gw('get', '/admin/keys', oldToken).expect(200);
    expect(relay.fetches).toBe(before + 1);
    // Membership rolled out with the new key first and the previous one still published.
    rotated = await startMembership(
      { MFA_REQUIRED_ROLES: 'admin', ACCESS_TOKEN_KEYS: JSON.stringify({ keys: [k2.jwk, k1.jwk] }) },
      { clock, dbUrl: membership.dbUrl, keepDatabase: true },
    );
    relay.target = rotated.url;
    clock.advance(STEP_MS);
    const newToken = await adminSignIn(rotated);
    expect(headerOf(newToken).kid).toBe(k2.kid);
    // Inside MEMBERSHIP_JWKS_REFRESH_MIN_MS of that fetch the unknown kid costs no fetch (docs/membership/access-tokens.md: publish a key before it signs).
    expect(errorCode(await gw('get', '/admin/keys', newToken).expect(401))).toBe('invalid_admin_token');
    expect(relay.fetches).toBe(before + 1);
    clock.advance(REFRESH_MIN_MS);
    await gw('get', '/admin/keys', newToken).expect(200);
    expect(relay.fetches).toBe(before + 2);
    await gw('post', '/admin/keys', newToken).send({ name: 'after rotation' }).expect(201);
    await gw('get', '/admin/keys', oldToken).expect(200);
    expect(relay.fetches).toBe(before + 2);
  });

  it("CORS: the console's origin (membership's, from MEMBERSHIP_JWKS_URL) is allowed, another is not", async () => {
    const consoleOrigin = new URL(relay.url).origin;
    const ok = await request(gateway.url)
      .options('/admin/keys')
      .set('Origin', consoleOrigin)
      .set('Access-Control-Request-Method', 'GET')
      .set('Access-Control-Request-Headers', 'authorization');
    expect(ok.headers['access-control-allow-origin']).toBe(consoleOrigin);
    const other = await request(gateway.url)
      .options('/admin/keys')
      .set('Origin', 'https://evil.example')
      .set('Access-Control-Request-Method', 'GET');
    expect(other.headers['access-control-allow-origin']).toBeUndefined();
  });
});
