import type { Browser, Page } from 'playwright-core';
import { en } from '../../../web/src/i18n/en';
import { zhCN } from '../../../web/src/i18n/zh-CN';
import { RunningApp, startMembership } from '../../support/apps';
import { axeViolations, chromiumAvailable, chromiumPath, DESKTOP, launchChromium, openPage, OpenedPage, Scheme, screenshot, TABLET } from '../../support/chromium';
import { FakeAliyun, nextIp, startFakeAliyun } from '../fakes';

// Locally without Chromium this suite is skipped; in CI it must run.
const suite = chromiumAvailable || process.env.CI ? describe : describe.skip;
if (!chromiumAvailable && !process.env.CI) console.warn(`account page browser tests skipped: no Chromium at ${chromiumPath}`);

type Locale = 'en' | 'zh-CN';
const TEXTS = { en, 'zh-CN': zhCN } as const;
type Key = keyof typeof en;
/** Each journey runs in both languages, one in light and one in dark (the axe pass covers all four pairs). */
const RUNS: Array<[Locale, Scheme]> = [
  ['en', 'light'],
  ['zh-CN', 'dark'],
];
const PASSWORD = 'correct horse battery';

suite('account page (web/) in headless Chromium', () => {
  let browser: Browser;
  let aliyun: FakeAliyun;
  let app: RunningApp;
  /** The app at `localhost`, the host WebAuthn accepts as a relying party over http. */
  let base: string;
  let opened: OpenedPage[] = [];
  let serial = 0;

  beforeAll(async () => {
    [browser, aliyun] = await Promise.all([launchChromium(), startFakeAliyun()]);
    app = await startMembership({ ...aliyun.env });
    base = app.url.replace('127.0.0.1', 'localhost');
  }, 60_000);

  afterEach(async () => {
    // Every page of the test ran without a script error or a CSP refusal.
    const problems = opened.flatMap((o) => o.problems);
    await Promise.all(opened.map((o) => o.context.close()));
    opened = [];
    expect(problems).toEqual([]);
  });

  afterAll(async () => {
    await browser?.close();
    await app?.close();
    await aliyun?.close();
  });

  async function open(locale: Locale, scheme: Scheme, viewport = DESKTOP) {
    const o = await openPage(browser, { locale, scheme, ip: nextIp(), viewport });
    opened.push(o);
    const t = (key: Key, values: Record<string, string | number> = {}) => TEXTS[locale][key].replace(/\{(\w+)\}/g, (_, n: string) => String(values[n]));
    return { ...o, t };
  }

  /** POST to the API as a client of its own address; returns the envelope. */
  async function post(path: string, body: object, token?: string) {
    const res = await fetch(`${app.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': nextIp(), ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify(body),
    });
    return (await res.json()) as { code: number; message: string; data: any };
  }

  async function newMember(): Promise<string> {
    const username = `web_${process.pid % 1000}_${++serial}`;
    expect((await post('/api/v1/app/auth/register', { username, password: PASSWORD })).code).toBe(200);
    return username;
  }

  /** Another device's session of the member: its access token. */
  async function otherSession(account: string, password = PASSWORD): Promise<string> {
    const r = await post('/api/v1/app/auth/login', { account, password });
    expect(r.code).toBe(200);
    return r.data.token as string;
  }

  const profileStatus = async (token: string) => (await fetch(`${app.url}/api/v1/app/auth/profile`, { headers: { authorization: `Bearer ${token}` } })).status;

  async function signInWithPassword(page: Page, t: (k: Key) => string, account: string, password = PASSWORD) {
    await page.goto(`${base}/account/sign-in`);
    await page.getByLabel(t('signIn.account')).fill(account);
    await page.getByLabel(t('signIn.password'), { exact: true }).fill(password);
    await page.getByRole('button', { name: t('signIn.submit'), exact: true }).click();
    await page.getByRole('heading', { level: 1, name: t('security.title') }).waitFor();
  }

  describe.each(RUNS)('in %s, %s', (locale, scheme) => {
    const name = (journey: string) => `${journey}-${locale}-${scheme}`;

    it('signs in with a password, stays signed in across a reload, and keeps the refresh token out of localStorage', async () => {
      const username = await newMember();
      const { page, t } = await open(locale, scheme);
      await page.goto(`${base}/account/`);
      await page.waitForURL(`${base}/account/sign-in`);
      await page.getByRole('heading', { level: 1, name: t('signIn.title') }).waitFor();
      expect(await page.evaluate('document.documentElement.lang')).toBe(locale);

      // A wrong password: the envelope's message, in the page's language, announced as an alert.
      await page.getByLabel(t('signIn.account')).fill(username);
      await page.getByLabel(t('signIn.password'), { exact: true }).fill('not the password');
      await page.getByRole('button', { name: t('signIn.submit'), exact: true }).click();
      const wrong = await post('/api/v1/app/auth/login', { account: username, password: 'not the password' });
      const alert = page.getByRole('alert').filter({ hasText: /\S/ });
      await alert.waitFor();
      expect(await alert.textContent()).toBe(locale === 'en' ? wrong.message : (await zhMessage('/api/v1/app/auth/login', { account: username, password: 'not the password' })));
      await screenshot(page, 'account', name('sign-in-error'));

      await page.getByLabel(t('signIn.password'), { exact: true }).fill(PASSWORD);
      await page.getByRole('button', { name: t('signIn.submit'), exact: true }).click();
      await page.getByRole('heading', { level: 1, name: t('security.title') }).waitFor();
      expect(page.url()).toBe(`${base}/account/security`);
      await page.getByText(t('security.signedInAs', { name: username })).waitFor();

      const storage = await page.evaluate<{ session: string | null; local: number }>(`({ session: sessionStorage.getItem('membership.refreshToken'), local: localStorage.length })`);
      expect(storage.session).toMatch(/\S{20,}/);
      expect(storage.local).toBe(0);
      await page.reload();
      await page.getByRole('heading', { level: 1, name: t('security.title') }).waitFor();
      // The refresh token was rotated by the reload's exchange.
      expect(await page.evaluate(`sessionStorage.getItem('membership.refreshToken')`)).not.toBe(storage.session);
      await screenshot(page, 'account', name('security'));
    });

    it('signs in with an SMS code (a new phone is registered)', async () => {
      const phone = `1390000${String(1000 + ++serial).slice(-4)}`;
      const { page, t } = await open(locale, scheme);
      await page.goto(`${base}/account/sign-in`);
      await page.getByRole('button', { name: t('signIn.byPhone') }).click();
      await page.getByLabel(t('signIn.phone')).fill(phone);
      await page.getByRole('button', { name: t('signIn.sendCode') }).click();
      await page.getByText(t('signIn.codeSent', { phone })).waitFor();
      // The resend button counts down instead of sending again at once.
      expect(await page.getByRole('button', { name: /\d+/ }).isDisabled()).toBe(true);
      await screenshot(page, 'account', name('sign-in-phone'));
      await page.getByLabel(t('signIn.code')).fill(aliyun.lastCode(phone));
      await page.getByRole('button', { name: t('signIn.submit'), exact: true }).click();
      await page.getByRole('heading', { level: 1, name: t('security.title') }).waitFor();
      await page.getByRole('row').filter({ hasText: t('sessions.current') }).waitFor();
    });

    it('lists the sessions and signs out another device', async () => {
      const username = await newMember();
      const other = await otherSession(username);
      const { page, t } = await open(locale, scheme);
      await signInWithPassword(page, t, username);
      const rows = page.locator('#sessions tbody tr');
      await rows.nth(1).waitFor();
      expect(await rows.count()).toBe(2);
      const otherRow = rows.filter({ hasNotText: t('sessions.current') });
      await screenshot(page, 'account', name('sessions'));
      await otherRow.getByRole('button', { name: t('sessions.signOut') }).click();
      await page.locator('#sessions').getByRole('status').filter({ hasText: t('sessions.signedOut') }).waitFor();
      expect(await rows.count()).toBe(1);
      expect(await profileStatus(other)).toBe(401);
    });

    it('changes the password: the other sessions end, the old password stops working', async () => {
      const username = await newMember();
      const other = await otherSession(username);
      const { page, t } = await open(locale, scheme);
      await signInWithPassword(page, t, username);
      const form = page.locator('#password');
      await form.getByLabel(t('password.old')).fill(PASSWORD);
      await form.getByLabel(t('password.new'), { exact: true }).fill('a brand new password');
      await form.getByLabel(t('password.confirm')).fill('a different one');
      await form.getByRole('button', { name: t('password.submit') }).click();
      await form.getByRole('alert').filter({ hasText: t('password.mismatch') }).waitFor();
      await form.getByLabel(t('password.confirm')).fill('a brand new password');
      await form.getByRole('button', { name: t('password.submit') }).click();
      await form.getByRole('status').filter({ hasText: t('password.changed') }).waitFor();
      await screenshot(page, 'account', name('password-changed'));
      expect(await profileStatus(other)).toBe(401);
      expect((await post('/api/v1/app/auth/login', { account: username, password: PASSWORD })).code).not.toBe(200);
      expect((await post('/api/v1/app/auth/login', { account: username, password: 'a brand new password' })).code).toBe(200);
      // This device stays signed in.
      await page.reload();
      await page.getByRole('heading', { level: 1, name: t('security.title') }).waitFor();
    });
  });

  /** The login refusal's message as the API gives it in Chinese. */
  async function zhMessage(path: string, body: object): Promise<string> {
    const res = await fetch(`${app.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'accept-language': 'zh-CN', 'x-forwarded-for': nextIp() },
      body: JSON.stringify(body),
    });
    return ((await res.json()) as { message: string }).message;
  }

  const PAIRS: Array<[Locale, Scheme]> = [
    ['en', 'light'],
    ['en', 'dark'],
    ['zh-CN', 'light'],
    ['zh-CN', 'dark'],
  ];
  it.each(PAIRS)('has no serious accessibility violation in %s, %s, at 1280 px and on a tablet', async (locale, scheme) => {
    const username = await newMember();
    for (const [size, viewport] of [['desktop', DESKTOP], ['tablet', TABLET]] as const) {
      const { page, t } = await open(locale, scheme, viewport);
      await page.goto(`${base}/account/sign-in`);
      await page.getByRole('heading', { level: 1, name: t('signIn.title') }).waitFor();
      expect(await axeViolations(page)).toEqual([]);
      await screenshot(page, 'account', `sign-in-${locale}-${scheme}-${size}`);
      await signInWithPassword(page, t, username);
      await page.locator('#sessions tbody tr').first().waitFor();
      expect(await axeViolations(page)).toEqual([]);
      await screenshot(page, 'account', `security-${locale}-${scheme}-${size}`);
    }
  });
});
