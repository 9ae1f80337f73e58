import * as fs from 'fs';
import { Secret, TOTP } from 'otpauth';
import type { Page } from 'playwright-core';
import { axeViolations, chromiumAvailable, screenshot } from '../../support/chromium';
import { queryRows } from '../../support/database';
import { AccountFixture, RUNS, securityPage, Texts } from './account-fixture';

const suite = chromiumAvailable || process.env.CI ? describe : describe.skip;
const MINUTE = 60_000;

suite('account page (web/) in headless Chromium: authenticator app, recovery codes, passkeys, step-up', () => {
  const f = new AccountFixture();
  // Test apps default to no enforced second factor (test/support/apps.ts); the enrolment journey needs it for admins.
  beforeAll(() => f.start({ MFA_REQUIRED_ROLES: 'admin' }), 60_000);
  afterEach(async () => expect(await f.closePages()).toEqual([]));
  afterAll(() => f.stop());

  /** The code an authenticator app shows at the app's (fake) time, one 30 s step later than the last one used. */
  function nextCode(secret: string): string {
    f.clock.advance(30_000);
    return new TOTP({ secret: Secret.fromBase32(secret), algorithm: 'SHA1', digits: 6, period: 30 }).generate({
      timestamp: f.clock.now(),
    });
  }

  /** A WebAuthn authenticator built into the browser (DevTools protocol), with user verification. */
  /** A platform authenticator on the page; `presence(false)` makes it wait for a user instead of answering every request. */
  async function addAuthenticator(page: Page): Promise<{ presence(on: boolean): Promise<void> }> {
    const cdp = await page.context().newCDPSession(page);
    await cdp.send('WebAuthn.enable');
    const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
      options: {
        protocol: 'ctap2',
        transport: 'internal',
        hasResidentKey: true,
        hasUserVerification: true,
        isUserVerified: true,
        automaticPresenceSimulation: true,
      },
    });
    return {
      presence: async (enabled) =>
        void (await cdp.send('WebAuthn.setAutomaticPresenceSimulation', { authenticatorId, enabled })),
    };
  }

  const signOut = async (page: Page, t: Texts) => {
    await page.getByRole('button', { name: t('app.signOut'), exact: true }).click();
    await page.getByRole('heading', { level: 1, name: t('signIn.title') }).waitFor();
  };

  /** The recovery codes shown once, after checking that copy and download give exactly them; then dismissed. */
  async function saveRecoveryCodes(page: Page, t: Texts): Promise<string[]> {
    const section = page.locator('#recovery');
    await section.getByText(t('recovery.showOnce')).waitFor();
    const codes = (await section.locator('ol.codes li').allTextContents()).map((c) => c.trim());
    expect(codes).toHaveLength(10);
    expect(new Set(codes).size).toBe(10);
    await section.getByRole('button', { name: t('recovery.copy') }).click();
    await section.getByRole('button', { name: t('recovery.copied') }).waitFor();
    expect(await page.evaluate('navigator.clipboard.readText()')).toBe(`${codes.join('\n')}\n`);
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      section.getByRole('button', { name: t('recovery.download') }).click(),
    ]);
    expect(download.suggestedFilename()).toBe('recovery-codes.txt');
    expect(fs.readFileSync(await download.path(), 'utf8')).toBe(`${codes.join('\n')}\n`);
    await section.getByRole('button', { name: t('recovery.done') }).click();
    await section.getByText(t('recovery.remaining', { count: 10 })).waitFor();
    expect(await section.locator('ol.codes').count()).toBe(0);
    return codes;
  }

  describe.each(RUNS)('in %s, %s', (locale, scheme) => {
    const name = (journey: string) => `${journey}-${locale}-${scheme}`;

    it('sets up the authenticator app, signs in with a code and with a recovery code, and turns it off after a step-up', async () => {
      const username = await f.newMember();
      const { page, context, t } = await f.open(locale, scheme);
      await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: f.base });
      await f.signInWithPassword(page, t, username);

      const totp = page.locator('#totp');
      await totp.getByRole('button', { name: t('totp.enable') }).click();
      await totp.getByRole('img', { name: t('totp.qrAlt') }).waitFor();
      const secret = (await totp.locator('code.secret').textContent())!.trim();
      expect(secret).toMatch(/^[A-Z2-7]{16,}$/);
      await screenshot(page, 'account', name('totp-enrol'));
      // A wrong code first: refused with the envelope's message, the set-up stays open.
      await totp.getByLabel(t('totp.code')).fill('000000');
      await totp.getByRole('button', { name: t('totp.confirm') }).click();
      await totp.getByRole('alert').filter({ hasText: /\S/ }).waitFor();
      await totp.getByLabel(t('totp.code')).fill(nextCode(secret));
      await totp.getByRole('button', { name: t('totp.confirm') }).click();
      await totp
        .getByRole('status')
        .filter({ hasText: t('totp.enabled') })
        .waitFor();
      await totp.getByText(t('totp.on'), { exact: true }).waitFor();
      await screenshot(page, 'account', name('recovery-codes'));
      const codes = await saveRecoveryCodes(page, t);

      // Signing in by password now asks for the second factor.
      await signOut(page, t);
      await f.submitPassword(page, t, username);
      await page.getByRole('heading', { level: 1, name: t('challenge.title') }).waitFor();
      expect(page.url()).toBe(`${f.base}/account/sign-in/second-factor`);
      expect(await axeViolations(page)).toEqual([]);
      await screenshot(page, 'account', name('challenge'));
      await page.getByLabel(t('challenge.totpCode')).fill(nextCode(secret));
      await page
        .getByRole('form', { name: t('challenge.totp') })
        .getByRole('button', { name: t('challenge.verify') })
        .click();
      await securityPage(page, t);

      await signOut(page, t);
      await f.submitPassword(page, t, username);
      await page.getByLabel(t('challenge.recoveryCode')).fill(codes[0]);
      await page
        .getByRole('form', { name: t('challenge.recovery') })
        .getByRole('button', { name: t('challenge.verify') })
        .click();
      await securityPage(page, t);
      await page
        .locator('#recovery')
        .getByText(t('recovery.remaining', { count: 9 }))
        .waitFor();

      // Past the step-up window, turning the app off asks for a code first.
      f.clock.advance(11 * MINUTE);
      await totp.getByRole('button', { name: t('totp.disable') }).click();
      const dialog = page.getByRole('dialog', { name: t('stepUp.title') });
      await dialog.waitFor();
      // Only the factors this member has are offered (the server would also take a passkey).
      expect(await dialog.getByRole('button', { name: t('challenge.passkey') }).count()).toBe(0);
      expect(await axeViolations(page)).toEqual([]);
      await screenshot(page, 'account', name('step-up'));
      await dialog.getByLabel(t('challenge.totpCode')).fill(nextCode(secret));
      await dialog
        .getByRole('form', { name: t('challenge.totp') })
        .getByRole('button', { name: t('challenge.verify') })
        .click();
      await totp
        .getByRole('status')
        .filter({ hasText: t('totp.disabled') })
        .waitFor();
      await totp.getByText(t('totp.off'), { exact: true }).waitFor();
      expect(await dialog.isVisible()).toBe(false);
    });

    it('adds a passkey, signs in with it without a password and as a second factor, renames it and deletes it after a step-up', async () => {
      const username = await f.newMember();
      const { page, context, t } = await f.open(locale, scheme);
      await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: f.base });
      const authenticator = await addAuthenticator(page);
      await f.signInWithPassword(page, t, username);

      const passkeys = page.locator('#passkeys');
      await passkeys.getByLabel(t('passkeys.name')).fill('Laptop');
      await passkeys.getByRole('button', { name: t('passkeys.add') }).click();
      await passkeys
        .getByRole('status')
        .filter({ hasText: t('passkeys.added') })
        .waitFor();
      await passkeys.locator('li').filter({ hasText: 'Laptop' }).waitFor();
      await saveRecoveryCodes(page, t);

      await passkeys.getByRole('button', { name: t('passkeys.renameLabel', { name: 'Laptop' }) }).click();
      await passkeys.getByLabel(t('passkeys.name')).first().fill('Work laptop');
      await passkeys.getByRole('button', { name: t('passkeys.save') }).click();
      await passkeys.locator('li').filter({ hasText: 'Work laptop' }).waitFor();
      await screenshot(page, 'account', name('passkeys'));

      // Without a password, offered in the account field's autofill (conditional mediation): the sign-in form asks
      // for options as it shows, and the authenticator (answering at once, as a user picking the passkey would)
      // signs the member in; the discoverable passkey names them.
      const conditionalAsked = page.waitForRequest((r) => r.url().endsWith('/api/v1/app/auth/passkey/options'));
      await signOut(page, t);
      expect(await page.evaluate('PublicKeyCredential.isConditionalMediationAvailable()')).toBe(true);
      await conditionalAsked;
      await securityPage(page, t);
      await page.getByText(t('security.signedInAs', { name: username })).waitFor();

      // As the second factor after a password (the authenticator waits for a user on the sign-in form, so the
      // autofill offer stays pending; it answers the challenge page's request).
      await authenticator.presence(false);
      await signOut(page, t);
      expect(await page.getByLabel(t('signIn.account')).getAttribute('autocomplete')).toBe('username webauthn');
      await f.submitPassword(page, t, username);
      await page.getByRole('heading', { level: 1, name: t('challenge.title') }).waitFor();
      await authenticator.presence(true);
      await page.getByRole('button', { name: t('challenge.passkey') }).click();
      await securityPage(page, t);

      f.clock.advance(11 * MINUTE);
      await passkeys.getByRole('button', { name: t('passkeys.deleteLabel', { name: 'Work laptop' }) }).click();
      const dialog = page.getByRole('dialog', { name: t('stepUp.title') });
      await dialog.getByRole('button', { name: t('challenge.passkey') }).click();
      await passkeys
        .getByRole('status')
        .filter({ hasText: t('passkeys.deleted') })
        .waitFor();
      await passkeys.getByText(t('passkeys.none')).waitFor();
    });

    it('makes an admin without a factor set one up before signing in (MFA_REQUIRED_ROLES)', async () => {
      const username = await f.newMember();
      await queryRows(f.app.dbUrl, `UPDATE members SET roles = '{admin}' WHERE username = $1`, [username]);
      const { page, context, t } = await f.open(locale, scheme);
      await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: f.base });
      await f.submitPassword(page, t, username);
      await page.getByRole('heading', { level: 1, name: t('challenge.enrolTitle') }).waitFor();
      await page.getByRole('button', { name: t('totp.enable') }).click();
      const secret = (await page.locator('code.secret').textContent())!.trim();
      expect(await axeViolations(page)).toEqual([]);
      await screenshot(page, 'account', name('enrol'));
      await page.getByLabel(t('totp.code')).fill(nextCode(secret));
      await page.getByRole('button', { name: t('challenge.verify') }).click();
      await securityPage(page, t);
      await saveRecoveryCodes(page, t);
      await page.locator('#totp').getByText(t('totp.on'), { exact: true }).waitFor();
    });
  });
});
