// Authentication attacks on both apps: forged and tampered JWTs (fast-check mutations), refresh
// reuse and races, brute force and code guessing spread over many client IPs, code-send floods,
// OAuth redirect and state abuse, forged WeChat pushes, API key guessing, revoked and expired keys,
// admin endpoints with the wrong credentials. The owners' suites (test/membership, test/ai-gateway)
// cover the happy paths and the real-provider flows; this one pushes the same doors with volume.
import { createHmac, generateKeyPairSync, randomBytes } from 'crypto';
import { mkdtempSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import fc from 'fast-check';
import { RunningApp, startMembership } from '../support/apps';
import { FakeClock } from '../support/clock';
import { startFakeAliyun, FakeAliyun } from '../membership/fakes';
import { startGatewayFixture, GatewayFixture } from '../ai-gateway/gateway-fixture';
import { wechatSignature } from '@app/wechat';
import { rawRequest } from './support/http';
import { membershipShapeProblem, openAiShapeProblem } from './support/shapes';
import { report, RUNS, SEED } from './support/runs';

const b64 = (v: unknown) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url');
const unb64 = (s: string) => JSON.parse(Buffer.from(s, 'base64url').toString());
const hs = (alg: string, secret: string | Buffer, header: object, payload: object) => {
  const input = `${b64(header)}.${b64(payload)}`;
  const h = { HS256: 'sha256', HS384: 'sha384', HS512: 'sha512' }[alg] ?? 'sha256';
  return `${input}.${createHmac(h, secret).update(input).digest('base64url')}`;
};

let ip = 0;
const nextIp = () => `172.16.${(++ip >> 8) & 255}.${ip & 255}`;

const MP = 'wxmp000000000001';
const PORTAL_TOKEN = 'portalToken1';

describe('hardening: authentication attacks on membership', () => {
  let app: RunningApp;
  // The app's time stands still (parallel refreshes race inside the grace) until the test moves it past.
  const clock = new FakeClock();
  const REUSE_GRACE_MS = 1000;
  let sms: FakeAliyun;
  const tried: Record<string, number> = {};
  const count = (k: string, n = 1) => (tried[k] = (tried[k] ?? 0) + n);

  const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const res = await rawRequest(app.url, {
      method,
      path,
      headers: {
        'x-forwarded-for': nextIp(),
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...headers,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      timeoutMs: 15_000,
    });
    const problem = membershipShapeProblem(res, path);
    if (problem) throw new Error(`${method} ${path}: ${problem}`);
    return res;
  };
  const register = async (username: string, password = 'attack-test-password') => {
    const res = await call('POST', '/api/v1/app/auth/register', { username, password });
    expect(res.status).toBe(200);
    return (await call('POST', '/api/v1/app/auth/login', { account: username, password })).json.data;
  };
  const profile = (token: string) =>
    call('GET', '/api/v1/app/auth/profile', undefined, { authorization: `Bearer ${token}` });

  beforeAll(async () => {
    sms = await startFakeAliyun();
    const dir = mkdtempSync(join(tmpdir(), 'hardening-oauth-'));
    const clients = join(dir, 'clients.json');
    writeFileSync(
      clients,
      JSON.stringify({
        clients: [
          {
            registrationId: 'corp-oauth2',
            provider: 'oauth2',
            clientId: 'c1',
            clientSecret: 's1-0123456789',
            authorizationUri: 'https://idp.example.com/auth',
            tokenUri: 'https://idp.example.com/token',
            userInfoUri: 'https://idp.example.com/me',
            userNameAttribute: 'sub',
            scopes: ['openid'],
            redirectUri: 'https://www.example.com/oauth/callback',
          },
          {
            registrationId: 'wechat-mp',
            provider: 'wechat-mp',
            clientId: MP,
            clientSecret: 'mp-secret-1',
            token: PORTAL_TOKEN,
            redirectUri: 'https://www.example.com/oauth/callback',
          },
        ],
      }),
    );
    app = await startMembership(
      {
        ...sms.env,
        RATE_LIMIT_PER_MINUTE: '100000',
        OAUTH2_CLIENTS_FILE: clients,
        OAUTH2_REDIRECT_ALLOWLIST: 'https://app.example.com',
        LOGIN_ACCOUNT_MAX_FAILURES: '10',
        REFRESH_REUSE_GRACE_MS: String(REUSE_GRACE_MS),
        CODE_DAILY_LIMIT_PER_IP: '5',
      },
      { clock },
    );
  }, 60_000);

  afterAll(async () => {
    report('auth-attacks membership', { seed: SEED, tried });
    await app?.close();
    await sms?.close();
  });

  it('forged and tampered access tokens are all refused with a 401 envelope', async () => {
    const t = await register('jwt_target');
    expect((await profile(t.token)).status).toBe(200);
    const [h, p, s] = t.token.split('.');
    const header = unb64(h);
    const claims = unb64(p);
    const now = Math.floor(clock.now() / 1000);
    const { publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const pem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
    const forged: [string, string][] = [
      ['alg none', `${b64({ alg: 'none', typ: 'JWT' })}.${p}.`],
      ['alg None', `${b64({ alg: 'None', typ: 'JWT' })}.${p}.`],
      ['alg none with signature', `${b64({ alg: 'none' })}.${p}.${s}`],
      ['HS/RS confusion: RS256 header, HMAC with a public key', hs('HS256', pem, { alg: 'RS256', typ: 'JWT' }, claims)],
      ['HS256 with a public key as secret', hs('HS256', pem, header, claims)],
      ['wrong kid', `${b64({ ...header, kid: '../../dev/null' })}.${p}.${s}`],
      ['kid pointing at an empty key', hs('HS256', '', { ...header, kid: '/dev/null' }, claims)],
      ['guessed secret', hs('HS256', 'secret', header, claims)],
      [
        'expired',
        hs('HS256', 'test-secret-test-secret-test-secret-0123456789', header, {
          ...claims,
          iat: now - 7200,
          exp: now - 3600,
        }),
      ],
      [
        'not yet valid',
        hs('HS256', 'test-secret-test-secret-test-secret-0123456789', header, { ...claims, nbf: now + 3600 }),
      ],
      [
        'other audience',
        hs('HS256', 'test-secret-test-secret-test-secret-0123456789', header, { ...claims, aud: 'ai-gateway' }),
      ],
      [
        'other issuer',
        hs('HS256', 'test-secret-test-secret-test-secret-0123456789', header, { ...claims, iss: 'evil' }),
      ],
      [
        'other token type',
        hs('HS256', 'test-secret-test-secret-test-secret-0123456789', header, { ...claims, type: 'refresh' }),
      ],
      ['no exp', hs('HS256', 'test-secret-test-secret-test-secret-0123456789', header, { ...claims, exp: undefined })],
      [
        'another member id, old signature',
        `${h}.${b64({ ...claims, sub: String(Number(claims.sub) + 1000), memberId: String(Number(claims.sub) + 1000) })}.${s}`,
      ],
      [
        'session of nobody',
        hs('HS256', 'test-secret-test-secret-test-secret-0123456789', header, {
          ...claims,
          sid: '00000000-0000-4000-8000-000000000000',
        }),
      ],
      [
        'HS512 with the right key',
        hs('HS512', 'test-secret-test-secret-test-secret-0123456789', { ...header, alg: 'HS512' }, claims),
      ],
      ['two dots only', '..'],
      ['huge', `${h}.${b64({ ...claims, pad: 'x'.repeat(6000) })}.${s}`],
    ];
    for (const [name, token] of forged) {
      const res = await profile(token);
      expect({ name, status: res.status, code: res.json?.code }).toEqual({ name, status: 401, code: 401 });
    }
    count('forged-jwt', forged.length);
    // Random single-character edits anywhere in a valid token: none may be accepted.
    const edits = fc.sample(
      fc.record({
        at: fc.nat({ max: t.token.length - 1 }),
        ch: fc.constantFrom(...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.='),
      }),
      { numRuns: RUNS * 3, seed: SEED },
    );
    let accepted = 0;
    for (const { at, ch } of edits) {
      if (t.token[at] === ch) continue;
      const mutated = t.token.slice(0, at) + ch + t.token.slice(at + 1);
      const res = await profile(mutated);
      count('tampered-jwt');
      // base64url's last character can carry unused bits: an edit there may decode to the same bytes.
      if (
        res.status === 200 &&
        Buffer.from(mutated.split('.')[2] ?? '', 'base64url').equals(Buffer.from(s, 'base64url')) &&
        mutated
          .split('.')
          .slice(0, 2)
          .every((x, i) => Buffer.from(x, 'base64url').equals(Buffer.from(t.token.split('.')[i], 'base64url')))
      )
        continue;
      if (res.status !== 401) accepted++;
    }
    expect(accepted).toBe(0);
    expect((await profile(t.token)).status).toBe(200);
  });

  it('refresh: reuse of a rotated token ends the session; parallel refreshes leave one live chain', async () => {
    const t = await register('refresh_target');
    const first = await call('POST', '/api/v1/app/auth/refresh-token', { refreshToken: t.refreshToken });
    expect(first.status).toBe(200);
    // Parallel refreshes with the successor: every success must carry the same new refresh token.
    const successor = first.json.data.refreshToken;
    const racers = await Promise.all(
      Array.from({ length: 8 }, () => call('POST', '/api/v1/app/auth/refresh-token', { refreshToken: successor })),
    );
    count('concurrent-refresh', racers.length);
    expect(racers.every((r) => r.status < 500)).toBe(true);
    const distinct = new Set(racers.filter((r) => r.status === 200).map((r) => r.json.data.refreshToken));
    expect(distinct.size).toBeLessThanOrEqual(1);
    // Reuse of the first token after the grace window (moved past on the app's clock): refused, and the whole session dies.
    clock.advance(REUSE_GRACE_MS + 1);
    const reuse = await call('POST', '/api/v1/app/auth/refresh-token', { refreshToken: t.refreshToken });
    count('refresh-reuse');
    expect(reuse.status).toBe(401);
    const live = [...distinct][0] as string | undefined;
    if (live) expect((await call('POST', '/api/v1/app/auth/refresh-token', { refreshToken: live })).status).toBe(401);
    expect((await profile(first.json.data.token)).status).toBe(401);
    // Random refresh tokens never work.
    for (const guess of fc.sample(fc.string({ minLength: 0, maxLength: 80 }), { numRuns: RUNS, seed: SEED })) {
      const res = await call('POST', '/api/v1/app/auth/refresh-token', { refreshToken: guess });
      count('refresh-guess');
      expect([400, 401]).toContain(res.status);
    }
  }, 60_000);

  it('password brute force spread over many client IPs still locks the account', async () => {
    await register('brute_target', 'the-right-password-1');
    const statuses: number[] = [];
    for (let i = 0; i < 14; i++)
      statuses.push(
        (await call('POST', '/api/v1/app/auth/login', { account: 'brute_target', password: `wrong-${i}-password` }))
          .status,
      );
    count('brute-force-logins', statuses.length);
    expect(statuses.every((s) => s === 401 || s === 423)).toBe(true);
    expect(statuses).toContain(423);
    // The right password from yet another IP is refused while the lock lasts.
    const right = await call('POST', '/api/v1/app/auth/login', {
      account: 'brute_target',
      password: 'the-right-password-1',
    });
    expect(right.status).toBe(423);
    expect(right.json.code).toBe(10008);
  }, 60_000);

  it('X-Forwarded-For is believed only from a trusted proxy: with TRUST_PROXY=false rotating it does not dodge limits', async () => {
    const strict = await startMembership({ TRUST_PROXY: 'false' });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 14; i++) {
        const res = await rawRequest(strict.url, {
          method: 'POST',
          path: '/api/v1/app/auth/register',
          headers: { 'content-type': 'application/json', 'x-forwarded-for': `203.0.113.${i}` },
          body: JSON.stringify({ username: `xff_${i}_user`, password: 'xff-test-password' }),
        });
        statuses.push(res.status);
      }
      count('xff-spoof', statuses.length);
      expect(statuses.filter((s) => s === 200).length).toBeLessThanOrEqual(10);
      expect(statuses).toContain(429);
    } finally {
      await strict.close();
    }
  }, 60_000);

  it('verification codes: guesses from many IPs cannot beat the per-code budget; send floods per phone and per IP are refused', async () => {
    const phone = '13900000001';
    expect((await call('POST', '/api/v1/app/auth/send-code', { type: 'sms', phone })).status).toBe(200);
    const code = sms.lastCode(phone);
    const wrong = fc.sample(
      fc
        .integer({ min: 0, max: 999_999 })
        .map((n) => String(n).padStart(6, '0'))
        .filter((c) => c !== code),
      { numRuns: 8, seed: SEED },
    );
    const answers = await Promise.all(
      wrong.map((c) => call('POST', '/api/v1/app/auth/login-by-phone', { phone, code: c })),
    );
    count('code-guesses', answers.length);
    expect(answers.every((r) => r.status === 400 || r.status === 423 || r.status === 429)).toBe(true);
    const right = await call('POST', '/api/v1/app/auth/login-by-phone', { phone, code });
    expect(right.status).not.toBe(200);
    // Send flood on one phone from many IPs: resend interval holds.
    const flood = await Promise.all(
      Array.from({ length: 6 }, () =>
        call('POST', '/api/v1/app/auth/send-code', { type: 'sms', phone: '13900000002' }),
      ),
    );
    count('send-flood-phone', flood.length);
    expect(flood.filter((r) => r.status === 200).length).toBe(1);
    expect(flood.filter((r) => r.status === 429).every((r) => Number(r.headers['retry-after']) > 0)).toBe(true);
    // Send flood from one IP across phones: CODE_DAILY_LIMIT_PER_IP (5 here) holds.
    const oneIp = '198.51.100.7';
    const perIp: number[] = [];
    for (let i = 0; i < 8; i++)
      perIp.push(
        (
          await call(
            'POST',
            '/api/v1/app/auth/send-code',
            { type: 'sms', phone: `1370000000${i}` },
            { 'x-forwarded-for': oneIp },
          )
        ).status,
      );
    count('send-flood-ip', perIp.length);
    expect(perIp.filter((s) => s === 200).length).toBe(5);
    expect(perIp.slice(5)).toEqual([429, 429, 429]);
  }, 60_000);

  it('OAuth: open-redirect variants, forged and replayed states, unknown registrations are refused without a 5xx', async () => {
    const variants = [
      'https://evil.example.com',
      '//evil.example.com',
      '///evil.example.com',
      '/\\evil.example.com',
      'https://app.example.com.evil.example.com',
      'https://app.example.com@evil.example.com',
      'https://evil.example.com/?https://app.example.com',
      'https://evil.example.com#https://app.example.com',
      'javascript:alert(1)',
      'data:text/html,<script>alert(1)</script>',
      'http://app.example.com',
      'https://app.example.com:8443',
      'https:app.example.com',
      'https://app.example.com%2f@evil.example.com',
      '\thttps://evil.example.com',
      'HTTPS://EVIL.EXAMPLE.COM',
      'https://xn--pple-43d.com',
    ];
    for (const v of variants) {
      const res = await call('GET', `/api/v1/app/oauth2/auth-url/corp-oauth2?redirectUri=${encodeURIComponent(v)}`);
      count('open-redirect');
      expect({ v, status: res.status }).toEqual({ v, status: 400 });
    }
    const ok = await call(
      'GET',
      `/api/v1/app/oauth2/auth-url/corp-oauth2?redirectUri=${encodeURIComponent('https://app.example.com/after')}`,
    );
    expect(ok.status).toBe(200);
    // The authorization URL is this server's browser-binding hop, which redirects to the provider.
    const hopUrl = new URL(ok.json.data.authorizationUrl);
    const hop = await call('GET', hopUrl.pathname + hopUrl.search);
    expect(hop.status).toBe(302);
    const url = new URL(String(hop.headers.location));
    expect(url.searchParams.get('code_challenge_method')).toBe('S256');
    const state = ok.json.data.state as string;
    // The state belongs to corp-oauth2: presenting it at another registration's callback is refused and burns nothing there.
    const foreign = await call('GET', `/login/oauth2/code/wechat-mp?code=abc&state=${encodeURIComponent(state)}`);
    count('foreign-state');
    expect(foreign.status === 400 || (foreign.status === 302 && !/token=/.test(String(foreign.headers.location)))).toBe(
      true,
    );
    // A state never issued, and an unauthorized state, cannot be exchanged for a login.
    for (const s of [...fc.sample(fc.string({ minLength: 1, maxLength: 64 }), { numRuns: RUNS, seed: SEED }), state]) {
      const res = await call('GET', `/api/v1/app/oauth2/callback?state=${encodeURIComponent(s)}`);
      count('forged-state');
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
    }
    // Missing PKCE verifier / code at the provider callback: a redirect with an error or a 400, never a login.
    const noCode = await call('GET', `/login/oauth2/code/corp-oauth2?state=${encodeURIComponent(state)}`);
    expect(noCode.status < 500 && !/token=/.test(String(noCode.headers.location ?? ''))).toBe(true);
  }, 60_000);

  it('WeChat portal: bad signatures, stale timestamps and replayed handshakes are refused', async () => {
    const ts = () => String(Math.floor(Date.now() / 1000));
    const portal = (q: Record<string, string>, body?: string) =>
      rawRequest(app.url, {
        method: body === undefined ? 'GET' : 'POST',
        path: `/api/v1/wechat/portal/${MP}?${new URLSearchParams(q).toString()}`,
        headers: body === undefined ? {} : { 'content-type': 'text/xml' },
        body,
      });
    const good = { timestamp: ts(), nonce: 'n-good', echostr: 'echo-1' };
    const ok = await portal({ ...good, signature: wechatSignature(PORTAL_TOKEN, good.timestamp, good.nonce) });
    expect(ok.status).toBe(200);
    expect(ok.text).toBe('echo-1');
    const cases = fc.sample(
      fc.oneof(
        fc.record({
          kind: fc.constant('bad-signature'),
          sig: fc.string({ unit: fc.constantFrom(...'0123456789abcdef'), maxLength: 40 }),
        }),
        fc.record({ kind: fc.constant('stale-timestamp'), age: fc.integer({ min: 301, max: 10 ** 7 }) }),
        fc.record({ kind: fc.constant('future-timestamp'), age: fc.integer({ min: -(10 ** 7), max: -301 }) }),
      ),
      { numRuns: RUNS * 2, seed: SEED },
    ) as any[];
    for (const c of cases) {
      const timestamp = c.kind === 'bad-signature' ? ts() : String(Math.floor(Date.now() / 1000) - c.age);
      const nonce = randomBytes(4).toString('hex');
      const signature = c.kind === 'bad-signature' ? c.sig : wechatSignature(PORTAL_TOKEN, timestamp, nonce);
      const body = `<xml><ToUserName><![CDATA[gh_x]]></ToUserName><FromUserName><![CDATA[o-attacker]]></FromUserName><CreateTime>${timestamp}</CreateTime><MsgType><![CDATA[event]]></MsgType><Event><![CDATA[SCAN]]></Event><EventKey><![CDATA[scene]]></EventKey></xml>`;
      const res = await portal({ timestamp, nonce, signature }, body);
      count(`wechat-${c.kind}`);
      expect({ kind: c.kind, status: res.status }).toEqual({ kind: c.kind, status: 403 });
    }
  }, 60_000);

  it('admin endpoints: 401 without a token, 403 with a member token', async () => {
    const t = await register('not_an_admin');
    const put = { values: { 'site.name': 'Owned' } };
    expect((await call('PUT', '/api/v1/admin/system/site-config', put)).status).toBe(401);
    expect((await call('GET', '/api/v1/admin/system/site-config')).status).toBe(401);
    expect(
      (await call('PUT', '/api/v1/admin/system/site-config', put, { authorization: `Bearer ${t.token}` })).status,
    ).toBe(403);
    expect(
      (await call('GET', '/api/v1/admin/system/site-config', undefined, { authorization: `Bearer ${t.token}` })).status,
    ).toBe(403);
    count('admin-without-rights', 4);
    const pub = await call('GET', '/api/v1/admin/system/site-config/public');
    expect(pub.json.data.values['site.name']).not.toBe('Owned');
  });
});

describe('hardening: authentication attacks on the AI gateway', () => {
  let fx: GatewayFixture;
  const tried: Record<string, number> = {};
  const count = (k: string, n = 1) => (tried[k] = (tried[k] ?? 0) + n);
  const call = async (method: string, path: string, auth?: string, body?: unknown) => {
    const res = await rawRequest(fx.gw.url, {
      method,
      path,
      headers: {
        ...(auth !== undefined ? { authorization: auth } : {}),
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const problem = openAiShapeProblem(res);
    if (problem) throw new Error(`${method} ${path}: ${problem}`);
    return res;
  };
  const chat = (auth?: string) =>
    call('POST', '/v1/chat/completions', auth, {
      model: 'vendor-gpt-4-mini',
      messages: [{ role: 'user', content: 'hi' }],
    });

  beforeAll(async () => {
    Object.assign(process.env, { FAKE_OPENAI_KEY: 'sk-upstream-openai', FAKE_ANTHROPIC_KEY: 'sk-upstream-anthropic' });
    fx = await startGatewayFixture();
  }, 60_000);
  afterAll(async () => {
    report('auth-attacks ai-gateway', { seed: SEED, tried });
    await fx?.close();
  });

  it('guessed keys, keys one character off and keys of the right shape are refused; no upstream call is made', async () => {
    const { key } = await fx.createKey({ name: 'real' });
    expect((await chat(`Bearer ${key}`)).status).toBe(200);
    const upstreamCalls = fx.openai.requests.length;
    const guesses = fc.sample(
      fc.oneof(
        fc.base64String({ minLength: 44, maxLength: 44 }).map((s) => `sk-${s.slice(0, 43).replace(/[+/=]/g, 'A')}`),
        fc
          .record({ at: fc.integer({ min: 3, max: key.length - 1 }), ch: fc.constantFrom(...'ABCxyz019-_') })
          .map(({ at, ch }) => key.slice(0, at) + (key[at] === ch ? 'Q' : ch) + key.slice(at + 1)),
        fc.constantFrom(key.slice(0, 11), key + 'A', key.toUpperCase(), key.slice(0, -1), 'sk-' + 'A'.repeat(43)),
      ),
      { numRuns: RUNS * 3, seed: SEED },
    );
    for (const g of guesses) {
      if (g === key) continue;
      const res = await chat(`Bearer ${g}`);
      count('key-guess');
      expect({ guess: g, status: res.status }).toEqual({ guess: g, status: 401 });
      expect(res.json.error.code).toBe('invalid_api_key');
    }
    expect(fx.openai.requests.length).toBe(upstreamCalls);
  }, 120_000);

  it('revoked and expired keys are refused at once', async () => {
    const revoked = await fx.createKey({ name: 'to-revoke' });
    expect((await chat(`Bearer ${revoked.key}`)).status).toBe(200);
    expect((await fx.admin('DELETE', `/admin/keys/${revoked.id}`)).status).toBeLessThan(300);
    expect((await chat(`Bearer ${revoked.key}`)).status).toBe(401);
    // Both sides of the expiry without waiting for one: an hour ahead works, a second ago is refused.
    const expiring = await fx.createKey({ name: 'later', expires_at: new Date(Date.now() + 3_600_000).toISOString() });
    expect((await chat(`Bearer ${expiring.key}`)).status).toBe(200);
    const expired = await fx.createKey({ name: 'past', expires_at: new Date(Date.now() - 1000).toISOString() });
    expect((await chat(`Bearer ${expired.key}`)).status).toBe(401);
    count('revoked-expired', 2);
  });

  it('admin API: 401 without the admin token, refused with an API key or a member JWT', async () => {
    const { key } = await fx.createKey({ name: 'not-admin' });
    const memberJwt = hs(
      'HS256',
      'test-secret-test-secret-test-secret-0123456789',
      { alg: 'HS256', typ: 'JWT' },
      { sub: '1', type: 'member', roles: ['admin'] },
    );
    for (const [method, path, body] of [
      ['GET', '/admin/keys'],
      ['POST', '/admin/keys', { name: 'x' }],
      ['GET', '/admin/usage'],
      ['DELETE', '/admin/keys/00000000-0000-4000-8000-000000000000'],
    ] as [string, string, unknown?][]) {
      for (const auth of [
        undefined,
        `Bearer ${key}`,
        `Bearer ${memberJwt}`,
        'Bearer test-admin-token-012345678',
        'Basic dGVzdC1hZG1pbi10b2tlbi0wMTIzNDU2Nzg5',
      ]) {
        const res = await call(method, path, auth, body);
        count('admin-without-rights');
        expect({ method, path, auth: auth?.slice(0, 16), status: res.status }).toEqual({
          method,
          path,
          auth: auth?.slice(0, 16),
          status: auth?.startsWith('Bearer sk-') ? expect.any(Number) : 401,
        });
        expect([401, 403]).toContain(res.status);
      }
    }
  });
});
