/**
 * Passkeys in headless Chromium with a virtual authenticator (DevTools protocol, WebAuthn domain):
 * the page runs on an origin of the membership app (http://localhost:<port>, the RP ID localhost) and
 * calls navigator.credentials through @simplewebauthn/browser with options from the app's endpoints.
 * Registration, passwordless sign-in, passkey as the second factor, user verification off, a forged
 * signature, a cloned authenticator, step-up and deletion, enforced enrolment with a passkey.
 */
import * as fs from 'fs';
import * as path from 'path';
import { chromium, Browser, BrowserContext, CDPSession, Page } from 'playwright-core';
import request from 'supertest';
import { isoCBOR } from '@simplewebauthn/server/helpers';
import { RunningApp, startMembership } from '../support/apps';
import { queryRows } from '../support/database';
import { freePort } from '../support/free-port';
import { TcpProxy } from '../support/tcp-proxy';
import { bearer, client } from './fakes';
import { rsaKey, SoftwareAuthenticator } from './software-authenticator';

const executablePath = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
const available = fs.existsSync(executablePath);
// Locally without Chromium this suite is skipped; in CI (.ci/run installs Chromium) it must run.
const suite = available || process.env.CI ? describe : describe.skip;
if (!available && !process.env.CI)
  console.warn(`passkey browser test skipped: no Chromium at ${executablePath} (apt-get install chromium)`);

const AUTH = '/api/v1/app/auth';
const SEC = '/api/v1/app/security';
const SHOTS = path.join(__dirname, '../../test-output/passkeys');
const WEBAUTHN_BUNDLE = path.join(__dirname, '../../node_modules/@simplewebauthn/browser/dist/bundle/index.umd.min.js');

type Json = Record<string, any>;

function claimsOf(token: string): Json {
  return JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString('utf8'));
}

suite('membership: passkeys in headless Chromium with a virtual authenticator', () => {
  let app: RunningApp;
  let proxy: TcpProxy;
  let origin: string;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let cdp: CDPSession;
  let authenticatorId: string | undefined;
  let run = 0;

  /** A fresh virtual authenticator (the one before is removed with its credentials). */
  async function newAuthenticator(options: Json = {}): Promise<string> {
    if (authenticatorId) await cdp.send('WebAuthn.removeVirtualAuthenticator', { authenticatorId });
    const res = await cdp.send('WebAuthn.addVirtualAuthenticator', {
      options: {
        protocol: 'ctap2',
        transport: 'internal',
        hasResidentKey: true,
        hasUserVerification: true,
        isUserVerified: true,
        automaticPresenceSimulation: true,
        ...options,
      },
    });
    authenticatorId = res.authenticatorId;
    return authenticatorId;
  }

  const create = (optionsJSON: Json): Promise<Json> =>
    page.evaluate((o) => (globalThis as any).SimpleWebAuthnBrowser.startRegistration({ optionsJSON: o }), optionsJSON);
  const get = (optionsJSON: Json): Promise<Json> =>
    page.evaluate(
      (o) => (globalThis as any).SimpleWebAuthnBrowser.startAuthentication({ optionsJSON: o }),
      optionsJSON,
    );

  /** A screenshot of the ceremony's outcome: the page (an app origin, no UI of its own) shows what the app answered. */
  async function shot(name: string, facts: Json): Promise<void> {
    await page.evaluate(
      (text) => {
        const doc = (globalThis as any).document;
        doc.body.textContent = '';
        const pre = doc.createElement('pre');
        pre.textContent = text;
        doc.body.appendChild(pre);
      },
      JSON.stringify(facts, null, 2),
    );
    await page.screenshot({ path: path.join(SHOTS, `${name}.png`) });
  }

  async function newMember(prefix = 'pk') {
    run += 1;
    const username = `${prefix}_${run}_${Date.now().toString(36)}`.slice(0, 20);
    const c = client(app.url);
    await c.post(`${AUTH}/register`).send({ username, password: 'passkey-password' }).expect(200);
    const login = await c.post(`${AUTH}/login`).send({ account: username, password: 'passkey-password' }).expect(200);
    return { c, username, token: login.body.data.token as string, memberId: login.body.data.memberId as string };
  }

  async function registerPasskey(m: { c: ReturnType<typeof client>; token: string }, name = 'Laptop') {
    const options = await m.c.post(`${SEC}/passkeys/options`).set(bearer(m.token)).expect(200);
    const credential = await create(options.body.data);
    return m.c.post(`${SEC}/passkeys`).set(bearer(m.token)).send({ credential, name });
  }

  async function passwordless(c = client(app.url)) {
    const options = await c.post(`${AUTH}/passkey/options`).expect(200);
    const credential = await get(options.body.data);
    return c.post(`${AUTH}/passkey/login`).send({ credential });
  }

  beforeAll(async () => {
    // The page's origin must be one of WEBAUTHN_ORIGINS before the app boots: a fixed port forwarded to the app's.
    const port = await freePort();
    origin = `http://localhost:${port}`;
    app = await startMembership({
      WEBAUTHN_RP_ID: 'localhost',
      WEBAUTHN_ORIGINS: origin,
      MFA_REQUIRED_ROLES: 'admin',
      ADMIN_ACCOUNT: 'pk_admin',
      ADMIN_PASSWORD: 'admin-password-1',
    });
    proxy = new TcpProxy('127.0.0.1', Number(new URL(app.url).port));
    await proxy.start(port);
    browser = await chromium.launch({
      executablePath,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
    });
    // The bundle is added to a page of the app, whose CSP (libs/platform http setup) allows no inline script.
    context = await browser.newContext({ bypassCSP: true });
    page = await context.newPage();
    await page.goto(`${origin}/actuator/health`);
    await page.addScriptTag({ content: fs.readFileSync(WEBAUTHN_BUNDLE, 'utf8') });
    cdp = await context.newCDPSession(page);
    await cdp.send('WebAuthn.enable');
    fs.mkdirSync(SHOTS, { recursive: true });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await proxy?.stop();
    await app?.close();
  });

  it('registers named passkeys (first factor brings recovery codes), lists, renames them; the passkey is then a second factor', async () => {
    await newAuthenticator();
    const m = await newMember();
    const elsewhere = await m.c
      .post(`${AUTH}/login`)
      .send({ account: m.username, password: 'passkey-password' })
      .expect(200);
    const first = await registerPasskey(m, 'Laptop');
    expect(first.status).toBe(200);
    // A factor added ends the member's other sessions; the one that added it lives on.
    await m.c.get(`${AUTH}/profile`).set(bearer(elsewhere.body.data.token)).expect(401);
    await m.c.get(`${AUTH}/profile`).set(bearer(m.token)).expect(200);
    expect(first.body.data.recoveryCodes).toHaveLength(10);
    expect(first.body.data.passkey).toEqual({
      id: expect.any(String),
      name: 'Laptop',
      createdTime: expect.any(String),
      lastUsedTime: null,
      backedUp: false,
      deviceType: 'singleDevice',
      transports: ['internal'],
    });
    // The same authenticator again is excluded by the browser (excludeCredentials); another one is a second passkey.
    await newAuthenticator();
    const second = await registerPasskey(m, 'Phone');
    expect(second.status).toBe(200);
    expect(second.body.data.recoveryCodes).toBeNull();
    const list = await m.c.get(`${SEC}/passkeys`).set(bearer(m.token)).expect(200);
    expect(list.body.data.map((p: Json) => p.name)).toEqual(['Laptop', 'Phone']);
    const patched = await request(app.url)
      .patch(`${SEC}/passkeys/${second.body.data.passkey.id}`)
      .set(bearer(m.token))
      .send({ name: 'Work phone' })
      .expect(200);
    expect(patched.body.data.name).toBe('Work phone');

    // Password sign-in now asks for the second factor; the passkey answers it.
    const ch = await m.c.post(`${AUTH}/login`).send({ account: m.username, password: 'passkey-password' }).expect(200);
    expect(ch.body.data).toMatchObject({ mfaRequired: true, methods: ['passkey', 'recovery_code'] });
    const options = await m.c.post(`${AUTH}/mfa/passkey-options`).send({ mfaToken: ch.body.data.mfaToken }).expect(200);
    expect(options.body.data.allowCredentials).toHaveLength(2);
    await request(app.url)
      .patch(`${SEC}/passkeys/${second.body.data.passkey.id}`)
      .set(bearer(m.token))
      .send({ name: '' })
      .expect(400);
    const assertion = await get(options.body.data);
    const done = await m.c
      .post(`${AUTH}/mfa/verify`)
      .send({ mfaToken: ch.body.data.mfaToken, method: 'passkey', credential: assertion })
      .expect(200);
    expect(claimsOf(done.body.data.token).amr).toEqual(['pwd', 'hwk', 'mfa']);
    await shot('second-factor', {
      step: 'password, then passkey as second factor',
      passkeys: list.body.data,
      amr: claimsOf(done.body.data.token).amr,
    });
  });

  it('signs in without a password with a discoverable passkey (options list no credentials); amr hwk + mfa', async () => {
    await newAuthenticator();
    const m = await newMember();
    expect((await registerPasskey(m)).status).toBe(200);
    const c = client(app.url);
    const options = await c.post(`${AUTH}/passkey/options`).expect(200);
    expect(options.body.data.allowCredentials).toBeUndefined();
    expect(options.body.data.userVerification).toBe('required');
    expect(options.body.data.rpId).toBe('localhost');
    const credential = await get(options.body.data);
    const res = await c.post(`${AUTH}/passkey/login`).send({ credential }).expect(200);
    expect(res.body.data.memberId).toBe(m.memberId);
    expect(claimsOf(res.body.data.token)).toMatchObject({ amr: ['hwk', 'mfa'], loginType: 'passkey' });
    // The challenge was used: replaying the same assertion is refused.
    const replay = await c.post(`${AUTH}/passkey/login`).send({ credential }).expect(401);
    expect(replay.body.code).toBe(10011);
    const passkeys = await c.get(`${SEC}/passkeys`).set(bearer(res.body.data.token)).expect(200);
    expect(passkeys.body.data[0].lastUsedTime).toEqual(expect.any(String));
    await shot('passwordless', {
      step: 'passwordless sign-in, discoverable credential',
      options: options.body.data,
      amr: claimsOf(res.body.data.token).amr,
    });
  });

  it('refuses a passwordless sign-in without user verification, but accepts the same passkey as a second factor', async () => {
    // A security key without a PIN or biometrics: presence only, never user verification.
    await newAuthenticator({ hasUserVerification: false, isUserVerified: false });
    const m = await newMember();
    const creation = await m.c.post(`${SEC}/passkeys/options`).set(bearer(m.token)).expect(200);
    const registered = await create(creation.body.data);
    await m.c.post(`${SEC}/passkeys`).set(bearer(m.token)).send({ credential: registered }).expect(200);
    const c = client(app.url);
    const options = await c.post(`${AUTH}/passkey/options`).expect(200);
    // The browser itself refuses: the options require user verification.
    await expect(get(options.body.data)).rejects.toThrow(/NotAllowedError/);
    // A client that asks the authenticator for less gets an assertion without the UV flag: the app refuses it.
    const fresh = await c.post(`${AUTH}/passkey/options`).expect(200);
    const unverified = await get({
      ...fresh.body.data,
      userVerification: 'discouraged',
      allowCredentials: [{ id: registered.id, type: 'public-key' }],
    });
    expect(Buffer.from(unverified.response.authenticatorData, 'base64url')[32] & 0x04).toBe(0);
    const refused = await c.post(`${AUTH}/passkey/login`).send({ credential: unverified });
    expect(refused.status).toBe(401);
    expect(refused.body).toEqual({ code: 10011, message: 'The passkey was not accepted', data: null });
    const ch = await m.c.post(`${AUTH}/login`).send({ account: m.username, password: 'passkey-password' }).expect(200);
    const second = await m.c.post(`${AUTH}/mfa/passkey-options`).send({ mfaToken: ch.body.data.mfaToken }).expect(200);
    const assertion = await get(second.body.data);
    expect(Buffer.from(assertion.response.authenticatorData, 'base64url')[32] & 0x04).toBe(0);
    await m.c
      .post(`${AUTH}/mfa/verify`)
      .send({ mfaToken: ch.body.data.mfaToken, method: 'passkey', credential: assertion })
      .expect(200);
  });

  it('takes the RS256 passkey a virtual authenticator makes (2048 bits, e = 65537) and signs in with it; refuses an RSA key with e = 3 (400, 10013)', async () => {
    await newAuthenticator();
    const m = await newMember();
    const options = await m.c.post(`${SEC}/passkeys/options`).set(bearer(m.token)).expect(200);
    // The page asks for RS256 only, as a site would for Windows Hello's keys.
    const credential = await create({ ...options.body.data, pubKeyCredParams: [{ type: 'public-key', alg: -257 }] });
    await m.c.post(`${SEC}/passkeys`).set(bearer(m.token)).send({ credential, name: 'RSA' }).expect(200);
    const [stored] = await queryRows(app.dbUrl, `SELECT public_key FROM member_passkeys WHERE member_id = $1`, [
      m.memberId,
    ]);
    const key = isoCBOR.decodeFirst<Map<number, unknown>>(stored.public_key);
    expect([key.get(1), key.get(3), (key.get(-1) as Uint8Array).length * 8]).toEqual([3, -257, 2048]);
    expect(Buffer.from(key.get(-2) as Uint8Array).toString('hex')).toBe('010001');
    const c = client(app.url);
    const signIn = await c.post(`${AUTH}/passkey/options`).expect(200);
    const res = await c
      .post(`${AUTH}/passkey/login`)
      .send({ credential: await get(signIn.body.data) })
      .expect(200);
    expect(res.body.data.memberId).toBe(m.memberId);

    const again = await m.c.post(`${SEC}/passkeys/options`).set(bearer(m.token)).expect(200);
    const small = new SoftwareAuthenticator({ origin, key: rsaKey({ exponent: 3 }) }).register(again.body.data);
    const refused = await m.c.post(`${SEC}/passkeys`).set(bearer(m.token)).send({ credential: small, name: 'e=3' });
    expect(refused.status).toBe(400);
    expect(refused.body).toEqual({
      code: 10013,
      message: 'The passkey could not be registered: its RSA public exponent is not 65537',
      data: null,
    });
  });

  it('refuses a forged signature', async () => {
    await newAuthenticator();
    const m = await newMember();
    expect((await registerPasskey(m)).status).toBe(200);
    const c = client(app.url);
    const options = await c.post(`${AUTH}/passkey/options`).expect(200);
    const credential = await get(options.body.data);
    const signature = Buffer.from(credential.response.signature, 'base64url');
    signature[signature.length - 1] ^= 0xff;
    const forged = { ...credential, response: { ...credential.response, signature: signature.toString('base64url') } };
    const res = await c
      .post(`${AUTH}/passkey/login`)
      .set('Accept-Language', 'zh-CN')
      .send({ credential: forged })
      .expect(401);
    expect(res.body).toEqual({ code: 10011, message: '通行密钥未通过验证', data: null });
  });

  it('refuses a cloned authenticator: its sign count does not grow past the one stored', async () => {
    const id = await newAuthenticator();
    const m = await newMember();
    expect((await registerPasskey(m)).status).toBe(200);
    const { credentials } = await cdp.send('WebAuthn.getCredentials', { authenticatorId: id });
    expect(credentials).toHaveLength(1);
    const copied = credentials[0];
    // The original is used twice: the stored count moves on.
    expect((await passwordless()).status).toBe(200);
    expect((await passwordless()).status).toBe(200);
    // The clone holds the same key with the count it had when copied.
    const cloneId = await newAuthenticator();
    await cdp.send('WebAuthn.addCredential', { authenticatorId: cloneId, credential: copied });
    const cloned = await passwordless();
    expect(cloned.status).toBe(401);
    expect(cloned.body.code).toBe(10011);
    await shot('cloned-refused', {
      step: 'assertion of a cloned authenticator (sign count behind)',
      answer: cloned.body,
    });
    // The control: with the stored count set back to the copy's, the same clone is accepted, so the count was the reason.
    await queryRows(app.dbUrl, 'UPDATE member_passkeys SET sign_count = $2 WHERE member_id = $1', [
      m.memberId,
      copied.signCount,
    ]);
    expect((await passwordless()).status).toBe(200);
  });

  it('step-up with a passkey, then delete one; without a step-up deleting is refused with 10010', async () => {
    await newAuthenticator();
    const m = await newMember();
    const added = await registerPasskey(m);
    // This session signed in with a password only: no step-up yet.
    const refused = await m.c.delete(`${SEC}/passkeys/${added.body.data.passkey.id}`).set(bearer(m.token)).expect(403);
    expect(refused.body.data).toEqual({ required: 'passkey', methods: ['passkey', 'recovery_code'] });
    // A TOTP-strength answer would not do for a passkey holder; the passkey does.
    const options = await m.c.post(`${AUTH}/step-up/passkey-options`).set(bearer(m.token)).expect(200);
    const assertion = await get(options.body.data);
    const stepped = await m.c
      .post(`${AUTH}/step-up`)
      .set(bearer(m.token))
      .send({ method: 'passkey', credential: assertion })
      .expect(200);
    expect(stepped.body.data.amr).toEqual(['pwd', 'hwk', 'mfa']);
    await m.c.delete(`${SEC}/passkeys/${added.body.data.passkey.id}`).set(bearer(stepped.body.data.token)).expect(200);
    await m.c.delete(`${SEC}/passkeys/${added.body.data.passkey.id}`).set(bearer(stepped.body.data.token)).expect(404);
    // The last factor gone: plain password sign-in again.
    const plain = await m.c
      .post(`${AUTH}/login`)
      .send({ account: m.username, password: 'passkey-password' })
      .expect(200);
    expect(plain.body.data.token).toEqual(expect.any(String));
  });

  it('an admin enrols a passkey at sign-in (enforcement) and gets tokens', async () => {
    await newAuthenticator();
    const c = client(app.url);
    const ch = await c.post(`${AUTH}/login`).send({ account: 'pk_admin', password: 'admin-password-1' }).expect(200);
    expect(ch.body.data).toMatchObject({ mfaRequired: true, enrolmentRequired: true, methods: ['totp', 'passkey'] });
    const options = await c
      .post(`${AUTH}/mfa/enrol/passkey/options`)
      .send({ mfaToken: ch.body.data.mfaToken })
      .expect(200);
    const credential = await create(options.body.data);
    const done = await c
      .post(`${AUTH}/mfa/enrol/passkey`)
      .send({ mfaToken: ch.body.data.mfaToken, credential, name: 'Admin key' })
      .expect(200);
    expect(done.body.data.recoveryCodes).toHaveLength(10);
    expect(claimsOf(done.body.data.token).amr).toEqual(['pwd', 'hwk', 'mfa']);
    await shot('admin-enrolled', {
      step: 'admin enrolled a passkey at sign-in',
      recoveryCodes: done.body.data.recoveryCodes.length,
      amr: claimsOf(done.body.data.token).amr,
    });
  });

  it('refuses a registration answering a challenge the app did not issue, and a malformed one', async () => {
    await newAuthenticator();
    const m = await newMember();
    const options = await m.c.post(`${SEC}/passkeys/options`).set(bearer(m.token)).expect(200);
    const credential = await create({
      ...options.body.data,
      challenge: Buffer.from('not-the-challenge-we-issued').toString('base64url'),
    });
    const res = await m.c.post(`${SEC}/passkeys`).set(bearer(m.token)).send({ credential }).expect(400);
    expect(res.body.code).toBe(10013);
    const bad = await m.c.post(`${SEC}/passkeys`).set(bearer(m.token)).send({ credential: 'nope' }).expect(400);
    expect(bad.body.code).toBe(10000);
  });
});
