import {
  axeViolations,
  chromiumAvailable,
  chromiumPath,
  DESKTOP,
  Scheme,
  screenshot,
  TABLET,
} from '../../support/chromium';
import { queryRows } from '../../support/database';
import { AccountFixture, Locale, PASSWORD, RUNS, securityPage } from './account-fixture';

// Locally without Chromium this suite is skipped; in CI it must run.
const suite = chromiumAvailable || process.env.CI ? describe : describe.skip;
if (!chromiumAvailable && !process.env.CI)
  console.warn(`account page browser tests skipped: no Chromium at ${chromiumPath}`);

suite('account page (web/) in headless Chromium: sign-in, sessions, password', () => {
  const f = new AccountFixture();
  beforeAll(() => f.start(), 60_000);
  afterEach(async () => expect(await f.closePages()).toEqual([]));
  afterAll(() => f.stop());

  describe.each(RUNS)('in %s, %s', (locale, scheme) => {
    const name = (journey: string) => `${journey}-${locale}-${scheme}`;

    it('signs in with a password, stays signed in across a reload, and keeps the refresh token out of localStorage', async () => {
      const username = await f.newMember();
      const { page, t } = await f.open(locale, scheme);
      await page.goto(`${f.base}/account/`);
      await page.waitForURL(`${f.base}/account/sign-in`);
      await page.getByRole('heading', { level: 1, name: t('signIn.title') }).waitFor();
      expect(await page.evaluate('document.documentElement.lang')).toBe(locale);

      // A wrong password: the envelope's message, in the page's language, announced as an alert.
      await f.submitPassword(page, t, username, 'not the password');
      const alert = page.getByRole('alert').filter({ hasText: /\S/ });
      await alert.waitFor();
      const refusal = await f.call(
        'POST',
        '/api/v1/app/auth/login',
        { account: username, password: 'not the password' },
        undefined,
        locale,
      );
      expect(await alert.textContent()).toBe(refusal.message);
      await screenshot(page, 'account', name('sign-in-error'));

      await page.getByLabel(t('signIn.password'), { exact: true }).fill(PASSWORD);
      await page.getByRole('button', { name: t('signIn.submit'), exact: true }).click();
      await securityPage(page, t);
      expect(page.url()).toBe(`${f.base}/account/security`);
      await page.getByText(t('security.signedInAs', { name: username })).waitFor();

      const storage = await page.evaluate<{ session: string | null; local: number }>(
        `({ session: sessionStorage.getItem('membership.refreshToken'), local: localStorage.length })`,
      );
      expect(storage.session).toMatch(/\S{20,}/);
      expect(storage.local).toBe(0);
      await page.reload();
      await securityPage(page, t);
      // The refresh token was rotated by the reload's exchange.
      const rotated = await page.evaluate<string | null>(`sessionStorage.getItem('membership.refreshToken')`);
      expect(rotated).toMatch(/\S{20,}/);
      expect(rotated).not.toBe(storage.session);
      await screenshot(page, 'account', name('security'));

      // Signing out ends the session on the server and goes back to the sign-in page.
      await page.getByRole('button', { name: t('app.signOut'), exact: true }).click();
      await page.getByRole('heading', { level: 1, name: t('signIn.title') }).waitFor();
      expect((await f.call('POST', '/api/v1/app/auth/refresh-token', { refreshToken: rotated })).code).toBe(401);
      expect(await page.evaluate(`sessionStorage.length`)).toBe(0);
    });

    it('signs in with an SMS code (a new phone is registered)', async () => {
      const phone = f.nextPhone();
      const { page, t } = await f.open(locale, scheme);
      await page.goto(`${f.base}/account/sign-in`);
      await page.getByRole('button', { name: t('signIn.byPhone') }).click();
      await page.getByLabel(t('signIn.phone')).fill(phone);
      await page.getByRole('button', { name: t('signIn.sendCode') }).click();
      await page.getByText(t('signIn.codeSent', { phone })).waitFor();
      // The resend button counts down instead of sending again at once.
      expect(await page.getByRole('button', { name: /\d+/ }).isDisabled()).toBe(true);
      await screenshot(page, 'account', name('sign-in-phone'));
      await page.getByLabel(t('signIn.code')).fill(f.aliyun.lastCode(phone));
      await page.getByRole('button', { name: t('signIn.submit'), exact: true }).click();
      await securityPage(page, t);
      await page
        .locator('#sessions tbody tr')
        .filter({ hasText: t('sessions.current') })
        .filter({ hasText: t('method.phone') })
        .waitFor();

      // A phone sign-up has no password: the first one is set with a code sent to the phone.
      f.clock.advance(61_000); // past send-code's resend interval for this phone
      const form = page.locator('#password');
      await form.getByLabel(t('password.noPassword')).check();
      await form.getByRole('button', { name: t('password.sendCode', { target: phone }) }).click();
      await form.getByText(t('password.codeSent', { target: phone })).waitFor();
      await form.getByLabel(t('password.code')).fill(f.aliyun.lastCode(phone));
      await form.getByLabel(t('password.new'), { exact: true }).fill('a first password');
      await form.getByLabel(t('password.confirm')).fill('a first password');
      await form.getByRole('button', { name: t('password.submit') }).click();
      await form
        .getByRole('status')
        .filter({ hasText: t('password.changed') })
        .waitFor();
      await screenshot(page, 'account', name('first-password'));
      expect(
        (await f.call('POST', '/api/v1/app/auth/login', { account: phone, password: 'a first password' })).code,
      ).toBe(200);
    });

    it('lists the sessions and signs out another device', async () => {
      const username = await f.newMember();
      const other = (await f.login(username)).token;
      const { page, t } = await f.open(locale, scheme);
      await f.signInWithPassword(page, t, username);
      const rows = page.locator('#sessions tbody tr');
      await rows.nth(1).waitFor();
      expect(await rows.count()).toBe(2);
      await screenshot(page, 'account', name('sessions'));
      await rows
        .filter({ hasNotText: t('sessions.current') })
        .getByRole('button', { name: t('sessions.signOut') })
        .click();
      await page
        .locator('#sessions')
        .getByRole('status')
        .filter({ hasText: t('sessions.signedOut') })
        .waitFor();
      expect(await rows.count()).toBe(1);
      expect(await f.profileStatus(other)).toBe(401);
    });

    it('changes the password: the other sessions end, the old password stops working', async () => {
      const username = await f.newMember();
      const other = (await f.login(username)).token;
      const { page, t } = await f.open(locale, scheme);
      await f.signInWithPassword(page, t, username);
      const form = page.locator('#password');
      await form.getByLabel(t('password.old')).fill(PASSWORD);
      await form.getByLabel(t('password.new'), { exact: true }).fill('a brand new password');
      await form.getByLabel(t('password.confirm')).fill('a different one');
      await form.getByRole('button', { name: t('password.submit') }).click();
      await form
        .getByRole('alert')
        .filter({ hasText: t('password.mismatch') })
        .waitFor();
      await form.getByLabel(t('password.confirm')).fill('a brand new password');
      await form.getByRole('button', { name: t('password.submit') }).click();
      await form
        .getByRole('status')
        .filter({ hasText: t('password.changed') })
        .waitFor();
      await screenshot(page, 'account', name('password-changed'));
      expect(await f.profileStatus(other)).toBe(401);
      expect((await f.call('POST', '/api/v1/app/auth/login', { account: username, password: PASSWORD })).code).not.toBe(
        200,
      );
      expect(
        (await f.call('POST', '/api/v1/app/auth/login', { account: username, password: 'a brand new password' })).code,
      ).toBe(200);
      // This device stays signed in.
      await page.reload();
      await securityPage(page, t);
    });
  });

  it.each(RUNS)('lists linked accounts and unlinks one (%s, %s)', async (locale, scheme) => {
    const username = await f.newMember();
    // The link itself is made by the OAuth flow (test/membership/oauth); here the page shows and removes it.
    await queryRows(
      f.app.dbUrl,
      `INSERT INTO member_identities (member_id, provider, subject, registration_id, nickname) SELECT id, 'github', $2, 'github-app', 'octocat' FROM members WHERE username = $1`,
      [username, `gh-${username}`],
    );
    const { page, t } = await f.open(locale, scheme);
    await f.signInWithPassword(page, t, username);
    const section = page.locator('#identities');
    await section.locator('li').filter({ hasText: 'octocat' }).waitFor();
    await screenshot(page, 'account', `identities-${locale}-${scheme}`);
    await section.getByRole('button', { name: t('identities.unlinkLabel', { name: 'github' }) }).click();
    await section
      .getByRole('status')
      .filter({ hasText: t('identities.unlinked') })
      .waitFor();
    await section.getByText(t('identities.none')).waitFor();
    expect(
      await queryRows(f.app.dbUrl, `SELECT 1 FROM member_identities WHERE subject = $1`, [`gh-${username}`]),
    ).toEqual([]);
  });

  const PAIRS: Array<[Locale, Scheme]> = [
    ['en', 'light'],
    ['en', 'dark'],
    ['zh-CN', 'light'],
    ['zh-CN', 'dark'],
  ];
  it.each(PAIRS)(
    'has no serious accessibility violation in %s, %s, at 1280 px and on a tablet',
    async (locale, scheme) => {
      const username = await f.newMember();
      for (const [size, viewport] of [
        ['desktop', DESKTOP],
        ['tablet', TABLET],
      ] as const) {
        const { page, t } = await f.open(locale, scheme, viewport);
        await page.goto(`${f.base}/account/sign-in`);
        await page.getByRole('heading', { level: 1, name: t('signIn.title') }).waitFor();
        expect(await axeViolations(page)).toEqual([]);
        await screenshot(page, 'account', `sign-in-${locale}-${scheme}-${size}`);
        await f.signInWithPassword(page, t, username);
        await page.locator('#sessions tbody tr').first().waitFor();
        await page.locator('#passkeys').waitFor();
        expect(await axeViolations(page)).toEqual([]);
        await screenshot(page, 'account', `security-${locale}-${scheme}-${size}`);
      }
    },
  );
});

suite('account page under a CONTEXT_PATH', () => {
  const f = new AccountFixture();
  beforeAll(() => f.start({ CONTEXT_PATH: '/member' }), 60_000);
  afterEach(async () => expect(await f.closePages()).toEqual([]));
  afterAll(() => f.stop());

  it('signs in, calls the API under the context path, and reloads a deep link', async () => {
    expect(f.base).toMatch(/\/member$/);
    const username = await f.newMember();
    const { page, t } = await f.open('en', 'light');
    await f.signInWithPassword(page, t, username);
    expect(page.url()).toBe(`${f.base}/account/security`);
    await page.locator('#sessions tbody tr').first().waitFor();
    await page.reload();
    await securityPage(page, t);
    await page.locator('#sessions tbody tr').first().waitFor();
  });
});
