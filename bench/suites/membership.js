// Membership figures: profile reads against a NestJS hello-world, logins per second per core with the
// production argon2id parameters (against raw argon2id verifications in a bare process), profile p99
// while logins saturate the server, token refresh rate against profile rate.
'use strict';
const { generateKeyPairSync, randomBytes } = require('crypto');
const os = require('os');
const path = require('path');
const { figure, notAvailable, section } = require('../lib/figures');
const { startApp, startScript, startLoadWorker } = require('../lib/procs');

const M = 'membership';
const BASE = '/api/v1/app/auth';
const PASSWORD = 'bench-password-0123';
const randomIp = (i) => `198.19.255.${i % 250}`; // benchmarking range (RFC 2544), sent only as X-Forwarded-For

async function login(url, i) {
  const res = await fetch(`${url}${BASE}/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-forwarded-for': randomIp(i) },
    body: JSON.stringify({ account: 'bench_member', password: PASSWORD }),
  });
  const body = await res.json();
  if (res.status !== 200 || body.code !== 200)
    throw new Error(`login answered ${res.status}: ${JSON.stringify(body).slice(0, 200)}`);
  return body.data;
}

async function run(ctx) {
  const { mode, load, tmp, log } = ctx;
  const q = mode === 'quick';
  const dur = q ? 2 : 6;
  const warm = q ? 1 : 2;
  const conns = 32;
  const figures = [];
  const raw = {};
  const hello = await startScript(path.join(__dirname, '..', 'lib', 'hello-nest.js'));
  const db = await ctx.createDatabase('mem');
  const second = startLoadWorker();
  let app;
  try {
    app = await startApp(
      'membership',
      {
        ...ctx.appEnv,
        DATABASE_URL: db.url,
        JWT_SECRET: 'bench-jwt-secret-0123456789abcdef0123456789',
        // Production needs its own signing keys and second-factor secret (docs/configuration.md): made per run.
        ACCESS_TOKEN_KEYS: JSON.stringify({
          keys: [generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'jwk' })],
        }),
        MFA_ENCRYPTION_SECRET: randomBytes(24).toString('base64url'),
        // production refuses the log SMS sender; no code is sent during the bench (loopback endpoint, never called)
        SMS_PROVIDER: 'aliyun',
        ALIYUN_SMS_ACCESS_KEY_ID: 'bench',
        ALIYUN_SMS_ACCESS_KEY_SECRET: 'bench',
        ALIYUN_SMS_SIGN_NAME: 'bench',
        ALIYUN_SMS_TEMPLATE_CODE: 'SMS_0',
        ALIYUN_SMS_ENDPOINT: 'http://127.0.0.1:9',
      },
      { logFile: path.join(tmp, 'membership.log'), portVar: 'MEMBERSHIP_PORT', nodeArgs: ctx.nodeArgs('membership') },
    );
    log(`membership pid ${app.pid} on ${app.url}; hello-world ${hello.url}`);
    const reg = await fetch(`${app.url}${BASE}/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'bench_member', password: PASSWORD }),
    });
    const regBody = await reg.json();
    if (reg.status !== 200 || regBody.code !== 200)
      throw new Error(`register answered ${reg.status}: ${JSON.stringify(regBody).slice(0, 200)}`);
    // Registration answers the member without a token (the mortise site logs in afterwards): log in.
    const auth = { authorization: `Bearer ${(await login(app.url, 0)).token}` };
    const profileUrl = `${app.url}${BASE}/profile`;
    const check = await fetch(profileUrl, { headers: auth });
    if (check.status !== 200) throw new Error(`profile answered ${check.status}`);

    // --- profile GET with a valid token vs a Nest hello-world route
    let profileRun = null;
    await section(figures, M, [NAMES[0]], log, async () => {
      const ab = await load.run('abCannon', {
        a: { url: `${hello.url}/hello`, connections: conns },
        b: { url: profileUrl, headers: auth, connections: conns },
        duration: dur,
        rounds: q ? 2 : 3,
        warmup: warm,
      });
      const helloRun = ab.a;
      profileRun = ab.b;
      raw.profile = { hello: helloRun, profile: profileRun };
      figures.push(
        figure({
          group: M,
          name: `profile GET rate, c=${conns}`,
          unit: 'req/s',
          baseline: helloRun.rps,
          baselineLabel: 'Nest hello-world',
          measured: profileRun.rps,
          kind: 'ratio',
          target: { op: '>=', value: 0.4 },
          note: `${profileRun.non2xx} non-2xx`,
        }),
      );
    });

    // --- logins per second per core (production argon2id) vs raw argon2id verifications
    await section(figures, M, [NAMES[1], NAMES[2]], log, async () => {
      const cores = os.cpus().length;
      const argon = await second.run('argon2Rate', { durationS: dur, parallel: 4 });
      const loginBody = { account: 'bench_member', password: PASSWORD };
      const profileLight = { url: profileUrl, headers: auth, connections: 2, duration: dur, overallRate: 50 };
      const quiet = await second.run('cannon', profileLight);
      const [loginRun, busy] = await Promise.all([
        load.run('cannon', {
          url: `${app.url}${BASE}/login`,
          method: 'POST',
          body: loginBody,
          connections: 8,
          duration: dur + 1,
          warmup: 1,
          randomIp: true,
        }),
        new Promise((r) => setTimeout(r, 1500)).then(() => second.run('cannon', profileLight)),
      ]);
      raw.login = { argon, login: loginRun, profileQuiet: quiet, profileUnderLogin: busy };
      figures.push(
        figure({
          group: M,
          name: 'logins/s per core (argon2id m=19 MiB t=2 p=1)',
          unit: '/s/core',
          baseline: argon.perSecond / cores,
          baselineLabel: 'raw argon2id verify',
          measured: loginRun.rps / cores,
          kind: 'ratio',
          note: `${loginRun.non2xx} non-2xx; ${cores} cores`,
        }),
      );
      figures.push(
        figure({
          group: M,
          name: 'profile p99 at 50 req/s while logins saturate',
          unit: 'ms',
          baseline: quiet.latency.p99,
          baselineLabel: 'no login load',
          measured: busy.latency.p99,
          kind: 'diff',
          note: `${busy.non2xx} non-2xx`,
        }),
      );
    });

    // --- token refresh (rotating refresh tokens, one chain per connection) vs profile
    await section(figures, M, [NAMES[3]], log, async () => {
      const tokens = [];
      for (let i = 0; i < conns; i++) tokens.push((await login(app.url, 100 + i)).refreshToken);
      const refreshRun = await load.run('cannon', {
        url: `${app.url}${BASE}/refresh-token`,
        method: 'POST',
        body: {},
        connections: conns,
        duration: dur,
        refreshTokens: tokens,
        randomIp: true,
      });
      raw.refresh = refreshRun;
      figures.push(
        figure({
          group: M,
          name: `token refresh rate vs profile rate, c=${conns}`,
          unit: 'req/s',
          baseline: profileRun ? profileRun.rps : null,
          baselineLabel: 'profile GET',
          measured: refreshRun.rps,
          kind: 'ratio',
          note: `${refreshRun.non2xx} non-2xx, ${refreshRun.badBodies} without a new token`,
        }),
      );
    });
  } finally {
    await second.stop();
    if (app) await app.stop();
    await hello.stop();
    await db.drop().catch(() => undefined);
  }
  return { figures, raw };
}

const NAMES = [
  ['profile GET rate, c=32', '>= 0.4x'],
  ['logins/s per core (argon2id m=19 MiB t=2 p=1)', 'reported'],
  ['profile p99 at 50 req/s while logins saturate', 'reported'],
  ['token refresh rate vs profile rate, c=32', 'reported'],
];

module.exports = { run, unavailable: (reason) => NAMES.map(([n, t]) => notAvailable(M, n, reason, t)) };
