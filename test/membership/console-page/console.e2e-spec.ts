/**
 * The operator console (web/src/areas/console) in headless Chromium against a real membership app, a real
 * gateway (membership's operator tokens verified through its JWKS, CORS for the console's origin) and a
 * fake OpenAI upstream. Admins and viewers sign in with password + authenticator-app code on the
 * console's sign-in pages (the account area's). Screenshots of every page in both languages go to
 * test-output/console/.
 */
import * as fs from 'fs';
import * as path from 'path';
import { gzipSync } from 'zlib';
import { Secret, TOTP } from 'otpauth';
import type { Browser, Page } from 'playwright-core';
import { en } from '../../../web/src/i18n/en';
import { zhCN } from '../../../web/src/i18n/zh-CN';
import { webAppDir } from '../../../apps/membership/src/web-app/web-app';
import { ADMIN_TOKEN, GatewayFixture, startGatewayFixture } from '../../ai-gateway/gateway-fixture';
import { RunningApp, startMembership } from '../../support/apps';
import {
  axeViolations,
  chromiumAvailable,
  DESKTOP,
  launchChromium,
  openPage,
  OpenedPage,
  Scheme,
  screenshot,
  TABLET,
} from '../../support/chromium';
import { FakeClock } from '../../support/clock';
import { queryRows } from '../../support/database';
import { freePort } from '../../support/free-port';
import { TcpProxy } from '../../support/tcp-proxy';
import { nextIp } from '../fakes';

/** A 16×16 PNG (the upload checks the type on the bytes). */
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAABAAAAAQCAIAAACQkWg2AAAAFklEQVR4nGOQz79IEmIY1TCqYfhqAADoeF8QyfEg7wAAAABJRU5ErkJggg==',
  'base64',
);

const suite = chromiumAvailable || process.env.CI ? describe : describe.skip;
type Locale = 'en' | 'zh-CN';
type Key = keyof typeof en;
type Texts = (key: Key, values?: Record<string, string | number>) => string;
const TEXTS = { en, 'zh-CN': zhCN } as const;
const STEP_MS = 30_000;
const AUTH = '/api/v1/app/auth';

suite('operator console (web/) in headless Chromium with membership, the gateway and a fake upstream', () => {
  // Mid-step, so a code of "the current step" cannot change under a test that does not move the clock.
  const clock = new FakeClock(Math.floor(Date.now() / STEP_MS) * STEP_MS + 10_000);
  let browser: Browser;
  let membership: RunningApp;
  let gw: GatewayFixture;
  let proxy: TcpProxy;
  let base = '';
  const secrets: Record<string, string> = {};
  const opened: OpenedPage[] = [];

  /** The code an authenticator app shows, one step after the last one used (codes are single use). */
  const nextCode = (username: string) => {
    clock.advance(STEP_MS);
    return new TOTP({
      secret: Secret.fromBase32(secrets[username]),
      digits: 6,
      period: 30,
      algorithm: 'SHA1',
    }).generate({ timestamp: clock.now() });
  };

  async function call(method: string, p: string, body?: object, token?: string) {
    const res = await fetch(`${membership.url}${p}`, {
      method,
      headers: {
        'content-type': 'application/json',
        'x-forwarded-for': nextIp(),
        ...(token ? { authorization: `Bearer ${token}` } : {}),
      },
      body: body ? JSON.stringify(body) : undefined,
    });
    return { status: res.status, body: (await res.json()) as { code: number; data: any } };
  }

  /** A member with an authenticator app (enrolled through the API), optionally with an operator role. */
  async function operator(username: string, role: 'viewer' | null): Promise<void> {
    expect((await call('POST', `${AUTH}/register`, { username, password: 'operator-password-1' })).body.code).toBe(200);
    if (role)
      await queryRows(membership.dbUrl, `UPDATE members SET roles = '{${role}}' WHERE username = $1`, [username]);
    const login = (await call('POST', `${AUTH}/login`, { account: username, password: 'operator-password-1' })).body
      .data;
    const begun = (await call('POST', '/api/v1/app/security/totp', undefined, login.token)).body.data;
    secrets[username] = begun.secret;
    expect(
      (await call('POST', '/api/v1/app/security/totp/confirm', { code: nextCode(username) }, login.token)).body.code,
    ).toBe(200);
  }

  beforeAll(async () => {
    const port = await freePort();
    base = `http://localhost:${port}`;
    browser = await launchChromium();
    gw = await startGatewayFixture(
      {
        MEMBERSHIP_JWKS_URL: `http://127.0.0.1:${port}/.well-known/jwks.json`,
        CONSOLE_ORIGIN: base,
        AI_KEY_CACHE_TTL_MS: '0',
      },
      undefined,
      { clock },
    );
    membership = await startMembership(
      {
        MFA_REQUIRED_ROLES: 'admin',
        ADMIN_ACCOUNT: 'op_admin',
        ADMIN_PASSWORD: 'admin-password-1',
        CONSOLE_GATEWAY_URL: gw.gw.url,
      },
      { clock },
    );
    proxy = new TcpProxy('127.0.0.1', Number(new URL(membership.url).port));
    await proxy.start(port);
    // The admin enrols an authenticator app at the first sign-in (MFA_REQUIRED_ROLES=admin).
    const ch = (await call('POST', `${AUTH}/login`, { account: 'op_admin', password: 'admin-password-1' })).body.data;
    expect(ch).toMatchObject({ mfaRequired: true, enrolmentRequired: true });
    secrets.op_admin = (await call('POST', `${AUTH}/mfa/enrol/totp`, { mfaToken: ch.mfaToken })).body.data.secret;
    expect(
      (await call('POST', `${AUTH}/mfa/enrol/totp/confirm`, { mfaToken: ch.mfaToken, code: nextCode('op_admin') })).body
        .code,
    ).toBe(200);
    await operator('op_viewer', 'viewer');
    // An active key with a call today, for the viewer's and the screenshots' pages.
    const team = await gw.createKey({ name: 'team key' });
    expect((await chat(team.key)).status).toBe(200);
    await call('POST', `${AUTH}/register`, { username: 'op_member', password: 'member-password-1' });
  }, 120_000);

  afterEach(async () => {
    const problems = opened.flatMap((o) => o.problems);
    await Promise.all(opened.splice(0).map((o) => o.context.close()));
    expect(problems).toEqual([]);
  });

  afterAll(async () => {
    await browser?.close();
    await proxy?.stop();
    await membership?.close();
    await gw?.close();
  });

  async function open(locale: Locale, scheme: Scheme, viewport = DESKTOP): Promise<{ page: Page; t: Texts }> {
    const o = await openPage(browser, { locale, scheme, ip: nextIp(), viewport });
    opened.push(o);
    // Confirmations (revoke, disable) are accepted, as an operator who means it would.
    o.page.on('dialog', (d) => void d.accept());
    const t: Texts = (key, values = {}) =>
      TEXTS[locale][key].replace(/\{(\w+)\}/g, (_, n: string) => String(values[n]));
    return { page: o.page, t };
  }

  const heading = (page: Page, name: string) => page.getByRole('heading', { level: 1, name, exact: true }).waitFor();

  /** Signs in on the console's own sign-in page with password + authenticator code; lands on the overview. */
  async function signIn(page: Page, t: Texts, username: string, password: string) {
    await page.goto(`${base}/console/`);
    await heading(page, t('signIn.title'));
    await page.getByLabel(t('signIn.account')).fill(username);
    await page.getByLabel(t('signIn.password'), { exact: true }).fill(password);
    await page.getByRole('button', { name: t('signIn.submit'), exact: true }).click();
    await page.getByLabel(t('challenge.totpCode')).fill(nextCode(username));
    await page
      .getByRole('form', { name: t('challenge.totp') })
      .getByRole('button', { name: t('challenge.verify') })
      .click();
    await heading(page, t('console.nav.overview'));
    expect(new URL(page.url()).pathname).toBe('/console/');
  }

  const goTo = async (page: Page, t: Texts, nav: Key) => {
    await page
      .getByRole('navigation', { name: t('console.nav.label') })
      .getByRole('link', { name: t(nav) })
      .click();
    await heading(page, t(nav));
  };

  function chat(key: string) {
    return fetch(`${gw.gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'vendor-gpt-4', messages: [{ role: 'user', content: 'hello' }] }),
    });
  }

  it('serves /console/ with the gateway URL and a connect-src for it; the initial script is under 300 KB gzipped', async () => {
    const res = await fetch(`${membership.url}/console/keys`);
    expect(res.status).toBe(200);
    const html = await res.text();
    expect(html).toContain(`<meta name="gateway-url" content="${gw.gw.url}" />`);
    expect(res.headers.get('content-security-policy')).toContain(`connect-src 'self' ${gw.gw.url}`);
    // The account page's policy is the platform's as it is.
    expect((await fetch(`${membership.url}/account/`)).headers.get('content-security-policy')).not.toContain(
      'connect-src',
    );
    const scripts = [...html.matchAll(/<script[^>]*src="\/console\/(assets\/[^"]+\.js)"/g)].map((m) => m[1]);
    expect(scripts).toHaveLength(1);
    const gzipped = gzipSync(fs.readFileSync(path.join(webAppDir(), scripts[0]))).length;
    process.stdout.write(`initial JavaScript: ${scripts[0]} ${gzipped} bytes gzipped\n`);
    expect(gzipped).toBeLessThan(300 * 1024);
  });

  it('an admin creates a key, finds it by search, sees its call in the key chart, rotates it (old secret 401, new 200), revokes it (401); disables a member (token refused)', async () => {
    const { page, t } = await open('en', 'light');
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
    await signIn(page, t, 'op_admin', 'admin-password-1');

    await goTo(page, t, 'console.nav.keys');
    await page.getByRole('button', { name: t('console.keys.create') }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByLabel(t('console.keys.name')).fill('browser key');
    await dialog.getByLabel(t('console.keys.budget')).fill('5');
    await dialog.getByRole('button', { name: t('console.keys.createSubmit') }).click();
    const secret = (await dialog.getByTestId('new-key').textContent())!.trim();
    expect(secret).toMatch(/^sk-/);
    await dialog.getByRole('button', { name: t('console.keys.copy') }).click();
    await dialog.getByRole('button', { name: t('console.keys.copied') }).waitFor();
    expect(await page.evaluate('navigator.clipboard.readText()')).toBe(secret);
    await dialog.getByRole('button', { name: t('console.done') }).click();

    expect((await chat(secret)).status).toBe(200);
    // The list's search finds it by a part of its name.
    await page.getByLabel(t('console.keys.search')).fill('rowser k');
    await page.getByRole('link', { name: 'browser key' }).waitFor();
    await page.getByRole('link', { name: 'browser key' }).click();
    await heading(page, t('console.key.title', { name: 'browser key' }));
    const today = new Date(clock.now()).toISOString().slice(0, 10);
    // The requests chart's values (its accessible list): the one call, today.
    const chart = page.locator('figure', { hasText: t('console.key.requestsByDay') });
    await chart.locator('li', { hasText: `${today}: 1` }).waitFor({ state: 'attached' });
    expect(await page.locator('svg.recharts-surface').count()).toBeGreaterThan(0);

    // Rotated: a new secret, shown once; the old one is refused, the new one works, the call history stays.
    await page.getByRole('button', { name: t('console.key.rotate') }).click();
    const rotatedDialog = page.getByRole('dialog', { name: t('console.key.rotatedTitle') });
    const rotated = (await rotatedDialog.getByTestId('new-key').textContent())!.trim();
    expect(rotated).toMatch(/^sk-/);
    expect(rotated).not.toBe(secret);
    await rotatedDialog.getByRole('button', { name: t('console.done') }).click();
    expect((await chat(secret)).status).toBe(401);
    expect((await chat(rotated)).status).toBe(200);

    await page.getByRole('button', { name: t('console.key.revoke') }).click();
    await page
      .getByRole('status')
      .filter({ hasText: t('console.key.revoked') })
      .waitFor();
    await page
      .getByTestId('key-status')
      .filter({ hasText: t('console.keys.status.revoked') })
      .waitFor();
    const refused = await chat(rotated);
    expect(refused.status).toBe(401);

    // A member with a live session: disabled in the console, their token is refused.
    const memberToken = (await call('POST', `${AUTH}/login`, { account: 'op_member', password: 'member-password-1' }))
      .body.data.token as string;
    expect((await call('GET', `${AUTH}/profile`, undefined, memberToken)).status).toBe(200);
    await goTo(page, t, 'console.nav.members');
    await page.getByLabel(t('console.members.search')).fill('op_mem');
    await page.getByRole('button', { name: t('console.members.searchSubmit') }).click();
    await page.getByRole('link', { name: 'op_member' }).click();
    await heading(page, t('console.member.title', { name: 'op_member' }));
    await page.getByRole('button', { name: t('console.member.disable') }).click();
    await page
      .getByTestId('member-status')
      .filter({ hasText: t('console.members.status.disabled') })
      .waitFor();
    expect((await call('GET', `${AUTH}/profile`, undefined, memberToken)).status).toBe(401);
    await page.getByRole('button', { name: t('console.member.enable') }).waitFor();
  });

  it('a viewer sees no write controls, and the APIs refuse their writes', async () => {
    const { page, t } = await open('en', 'dark');
    await signIn(page, t, 'op_viewer', 'operator-password-1');
    await goTo(page, t, 'console.nav.keys');
    await page.getByRole('link', { name: 'team key' }).waitFor();
    expect(await page.getByRole('button', { name: t('console.keys.create') }).count()).toBe(0);
    await page.getByRole('link', { name: 'team key' }).click();
    await heading(page, t('console.key.title', { name: 'team key' }));
    expect(await page.getByRole('button', { name: t('console.key.revoke') }).count()).toBe(0);
    expect(await page.getByRole('button', { name: t('console.save') }).count()).toBe(0);
    await goTo(page, t, 'console.nav.members');
    await page.getByRole('link', { name: 'op_admin' }).click();
    await heading(page, t('console.member.title', { name: 'op_admin' }));
    expect(await page.getByRole('button', { name: t('console.member.disable') }).count()).toBe(0);
    expect(await page.getByRole('button', { name: t('console.member.resetFactors') }).count()).toBe(0);
    // The new pages: settings shown read-only, no upload, no project creation.
    await goTo(page, t, 'console.nav.settings');
    await page.getByLabel(t('console.settings.name')).waitFor();
    expect(await page.getByLabel(t('console.settings.name')).isDisabled()).toBe(true);
    expect(await page.getByRole('button', { name: t('console.save') }).count()).toBe(0);
    expect(await page.getByTestId('upload-site.logo').count()).toBe(0);
    await goTo(page, t, 'console.nav.projects');
    expect(await page.getByRole('button', { name: t('console.projects.create') }).count()).toBe(0);
    await goTo(page, t, 'console.nav.audit');
    await page.getByTestId('audit').locator('tbody tr').first().waitFor();

    // The same session's token, straight at both APIs.
    const token = await page.evaluate<{ data: { token: string } }>(
      `fetch('/api/v1/app/auth/refresh-token', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ refreshToken: sessionStorage.getItem('membership.refreshToken') }) }).then((r) => r.json())`,
    );
    const write = await fetch(`${gw.gw.url}/admin/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token.data.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'nope' }),
    });
    expect(write.status).toBe(403);
    const members = (await call('GET', '/api/v1/admin/members?q=op_member', undefined, token.data.token)).body.data
      .items as Array<{ id: string }>;
    expect(
      (await call('POST', `/api/v1/admin/members/${members[0].id}/enable`, undefined, token.data.token)).status,
    ).toBe(403);
    const keys = await fetch(`${gw.gw.url}/admin/keys`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(((await keys.json()) as { data: Array<{ name: string }> }).data.map((k) => k.name)).not.toContain('nope');
  });

  it('an admin changes the site name and logo (uploaded, previewed) and the public site config returns them', async () => {
    const { page, t } = await open('en', 'light');
    await signIn(page, t, 'op_admin', 'admin-password-1');
    await goTo(page, t, 'console.nav.settings');
    await page.getByLabel(t('console.settings.name')).fill('Console Renamed Site');
    const previewLoaded = page.waitForResponse((r) => /^\/files\/.+\.png$/.test(new URL(r.url()).pathname));
    await page.getByTestId('upload-site.logo').setInputFiles({ name: 'logo.png', mimeType: 'image/png', buffer: PNG });
    await page
      .getByRole('status')
      .filter({ hasText: t('console.settings.uploaded') })
      .waitFor();
    const logo = await page.getByLabel(t('console.settings.logo'), { exact: true }).inputValue();
    expect(logo).toMatch(/^\/files\/.+\.png$/);
    // The preview shows the uploaded image: fetched, and decoded (decode() rejects for a broken image).
    expect((await previewLoaded).status()).toBe(200);
    expect(
      await page.getByTestId('preview-site.logo').evaluate(async (img: any) => {
        await img.decode();
        return img.naturalWidth as number;
      }),
    ).toBe(16);
    await page.getByRole('button', { name: t('console.save'), exact: true }).click();
    await page
      .getByRole('status')
      .filter({ hasText: t('console.saved') })
      .waitFor();
    const pub = await call('GET', '/api/v1/admin/system/site-config/public');
    expect(pub.body.data.values).toMatchObject({ 'site.name': 'Console Renamed Site', 'site.logo': logo });
    expect((await fetch(`${membership.url}${logo}`)).status).toBe(200);
  });

  it('the audit page lists a key created in the console with the member as actor; exactly one gateway audit row', async () => {
    const { page, t } = await open('en', 'light');
    await signIn(page, t, 'op_admin', 'admin-password-1');
    await goTo(page, t, 'console.nav.keys');
    await page.getByRole('button', { name: t('console.keys.create') }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByLabel(t('console.keys.name')).fill('audited key');
    await dialog.getByRole('button', { name: t('console.keys.createSubmit') }).click();
    await dialog.getByTestId('new-key').waitFor();
    await dialog.getByRole('button', { name: t('console.done') }).click();
    const all = (await gw.admin('GET', '/admin/keys?limit=100')).body.data as Array<{ id: string; name: string }>;
    const keyId = all.find((k) => k.name === 'audited key')!.id;
    const [{ id: adminId }] = await queryRows(
      membership.dbUrl,
      `SELECT id::text AS id FROM members WHERE username = 'op_admin'`,
    );

    // Exactly one row for that creation, with the member (not the ADMIN_TOKEN) as actor.
    const rows = (await gw.admin('GET', `/admin/audit-log?target_id=${keyId}`)).body.data as Array<{
      action: string;
      actor: { kind: string; id: string };
    }>;
    expect(rows.map((r) => [r.action, r.actor.kind, r.actor.id])).toEqual([['key.created', 'member', adminId]]);

    await goTo(page, t, 'console.nav.audit');
    await page.getByLabel(t('console.audit.action')).fill('key.created');
    await page.getByRole('button', { name: t('console.apply') }).click();
    const row = page.getByTestId('audit').locator('tbody tr', { hasText: keyId });
    await row.waitFor();
    expect(await row.textContent()).toContain(`member ${adminId}`);
    expect(await page.getByTestId('audit').locator('tbody tr', { hasText: keyId }).count()).toBe(1);
  });

  it('a key page lists its last calls; the upstreams page shows the deployments', async () => {
    const { page, t } = await open('en', 'light');
    await signIn(page, t, 'op_admin', 'admin-password-1');
    await goTo(page, t, 'console.nav.keys');
    await page.getByRole('link', { name: 'team key' }).click();
    await heading(page, t('console.key.title', { name: 'team key' }));
    const calls = page.getByTestId('key-calls');
    await calls.locator('tbody tr', { hasText: 'vendor-gpt-4' }).first().waitFor();
    expect(await calls.locator('tbody tr').first().textContent()).toContain('primary');
    await goTo(page, t, 'console.nav.upstreams');
    const table = page.getByTestId('upstreams');
    await table.locator('tbody tr', { hasText: 'primary' }).waitFor();
    expect(await table.locator('tbody th').allTextContents()).toEqual(['primary', 'backup', 'claude']);
  });

  it('an admin creates a project and edits its limits; the gateway keeps them', async () => {
    const { page, t } = await open('en', 'light');
    await signIn(page, t, 'op_admin', 'admin-password-1');
    await goTo(page, t, 'console.nav.projects');
    await page.getByLabel(t('console.projects.newName')).fill('console project');
    await page.getByRole('button', { name: t('console.projects.create') }).click();
    await page.getByRole('link', { name: 'console project' }).click();
    await heading(page, t('console.project.title', { name: 'console project' }));
    await page.getByLabel(t('console.keys.rpm')).fill('30');
    await page.getByLabel(t('console.keys.budget')).fill('12.5');
    await page.getByLabel(t('console.projects.period')).selectOption('monthly');
    await page.getByRole('button', { name: t('console.save'), exact: true }).click();
    await page
      .getByRole('status')
      .filter({ hasText: t('console.saved') })
      .waitFor();
    const list = (await gw.admin('GET', '/admin/projects?q=console%20project')).body.data as Array<
      Record<string, unknown>
    >;
    expect(
      list.map((p) => [p.name, p.requests_per_minute, p.budget_yuan, p.budget_period, p.tokens_per_minute]),
    ).toEqual([['console project', 30, 12.5, 'monthly', null]]);
  });

  it('the usage page shows a day per hour and endpoint, and exports those lines as CSV; the audit log exports too', async () => {
    const { page, t } = await open('en', 'light');
    await signIn(page, t, 'op_admin', 'admin-password-1');
    await goTo(page, t, 'console.nav.usage');
    // The gateway's days are BUDGET_TIMEZONE's with a period: ask for the days around the clock's instant.
    const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
    await page.getByLabel(t('console.usage.period')).selectOption('hour');
    await page.getByLabel(t('console.usage.groupBy')).selectOption('endpoint');
    await page.getByLabel(t('console.usage.start')).fill(day(clock.now() - 86_400_000));
    await page.getByLabel(t('console.usage.end')).fill(day(clock.now() + 86_400_000));
    await page.getByRole('button', { name: t('console.apply') }).click();
    const row = page.getByTestId('usage').locator('tbody tr', { hasText: 'chat.completions' }).first();
    await row.waitFor();
    expect(await row.locator('td').first().textContent()).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:00$/);
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: t('console.exportCsv') }).click(),
    ]);
    const text = fs.readFileSync(await download.path(), 'utf8');
    const lines = text.trim().split('\r\n');
    expect(lines[0]).toBe(
      'date,key_id,project_id,endpoint,model,requests,failed,prompt_tokens,completion_tokens,cost_yuan',
    );
    expect(lines.slice(1).every((l) => /^\d{4}-\d{2}-\d{2}T\d{2}:00,,,chat\.completions,,\d+,/.test(l))).toBe(true);
    expect(lines.length).toBeGreaterThan(1);

    await goTo(page, t, 'console.nav.audit');
    await page.getByTestId('audit').locator('tbody tr').first().waitFor();
    const [audit] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: t('console.exportCsv') }).click(),
    ]);
    const csv = fs.readFileSync(await audit.path(), 'utf8');
    expect(csv.split('\r\n')[0]).toBe(
      'id,time,actor_kind,actor_id,action,target_type,target_id,request_id,address,before,after',
    );
    expect(csv).toContain('key.created');
  });

  describe.each<[Locale, Scheme]>([
    ['en', 'light'],
    ['zh-CN', 'dark'],
  ])('every page in %s, %s', (locale, scheme) => {
    it('passes axe with no serious or critical violations; screenshots at 1280 px and tablet width', async () => {
      const { page, t } = await open(locale, scheme);
      await page.goto(`${base}/console/`);
      await heading(page, t('signIn.title'));
      expect(await axeViolations(page)).toEqual([]);
      await screenshot(page, 'console', `sign-in-${locale}-${scheme}`);
      await signIn(page, t, 'op_admin', 'admin-password-1');
      const shots: Array<[string, () => Promise<void>]> = [
        ['overview', async () => page.locator('figure svg.recharts-surface').first().waitFor()],
        ['keys', () => goTo(page, t, 'console.nav.keys')],
        [
          'key',
          async () => {
            await page.getByRole('link', { name: 'team key' }).click();
            await heading(page, t('console.key.title', { name: 'team key' }));
            await page.locator('figure svg.recharts-surface').first().waitFor();
          },
        ],
        ['key-calls', async () => page.getByTestId('key-calls').locator('tbody tr').first().scrollIntoViewIfNeeded()],
        [
          'projects',
          async () => {
            await goTo(page, t, 'console.nav.projects');
            await page.getByRole('link', { name: 'console project' }).waitFor();
          },
        ],
        [
          'project',
          async () => {
            await page.getByRole('link', { name: 'console project' }).click();
            await heading(page, t('console.project.title', { name: 'console project' }));
          },
        ],
        [
          'usage',
          async () => {
            await goTo(page, t, 'console.nav.usage');
            await page.getByTestId('usage').locator('tbody tr').first().waitFor();
            await page.locator('figure svg.recharts-surface').first().waitFor();
          },
        ],
        [
          'upstreams',
          async () => {
            await goTo(page, t, 'console.nav.upstreams');
            await page.getByTestId('upstreams').locator('tbody tr').first().waitFor();
          },
        ],
        [
          'settings',
          async () => {
            await goTo(page, t, 'console.nav.settings');
            await page.getByLabel(t('console.settings.name')).waitFor();
          },
        ],
        [
          'audit',
          async () => {
            await goTo(page, t, 'console.nav.audit');
            await page.getByTestId('audit').locator('tbody tr').first().waitFor();
          },
        ],
        [
          'members',
          async () => {
            await goTo(page, t, 'console.nav.members');
            await page.getByRole('link', { name: 'op_member' }).waitFor();
          },
        ],
        [
          'member',
          async () => {
            await page.getByRole('link', { name: 'op_admin' }).click();
            await heading(page, t('console.member.title', { name: 'op_admin' }));
            await page.getByText(t('console.member.recoveryCodes'), { exact: false }).waitFor();
          },
        ],
      ];
      for (const [name, show] of shots) {
        await show();
        // The pointer away from the charts: a tooltip left open by the last click would hide a chart.
        await page.mouse.move(0, 0);
        expect({ name, violations: await axeViolations(page) }).toEqual({ name, violations: [] });
        await screenshot(page, 'console', `${name}-${locale}-${scheme}`);
      }
      await page.setViewportSize(TABLET);
      await screenshot(page, 'console', `member-tablet-${locale}-${scheme}`);
      await goTo(page, t, 'console.nav.overview');
      await page.locator('figure svg.recharts-surface').first().waitFor();
      await screenshot(page, 'console', `overview-tablet-${locale}-${scheme}`);
    });
  });
});
