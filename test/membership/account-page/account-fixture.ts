import type { Browser, Page } from 'playwright-core';
import { en } from '../../../web/src/i18n/en';
import { zhCN } from '../../../web/src/i18n/zh-CN';
import { RunningApp, startMembership } from '../../support/apps';
import { DESKTOP, launchChromium, openPage, OpenedPage, Scheme } from '../../support/chromium';
import { FakeClock } from '../../support/clock';
import { freePort } from '../../support/free-port';
import { TcpProxy } from '../../support/tcp-proxy';
import { FakeAliyun, nextIp, startFakeAliyun } from '../fakes';

export type Locale = 'en' | 'zh-CN';
export type Key = keyof typeof en;
export type Texts = (key: Key, values?: Record<string, string | number>) => string;
const TEXTS = { en, 'zh-CN': zhCN } as const;
export const PASSWORD = 'correct horse battery';

/** Each journey runs in both languages, one in light and one in dark (the axe pass covers all four pairs). */
export const RUNS: Array<[Locale, Scheme]> = [
  ['en', 'light'],
  ['zh-CN', 'dark'],
];

export interface Envelope {
  code: number;
  message: string;
  data: any;
}

export type AccountPage = OpenedPage & { t: Texts };

/**
 * The real membership app, an SMS fake and headless Chromium for the account page's journeys. The app is
 * reached as http://localhost:<port> (WebAuthn accepts localhost as a relying party over http) through a
 * pass-through on a port chosen before the app starts, so that WEBAUTHN_ORIGINS can name it.
 */
export class AccountFixture {
  browser!: Browser;
  aliyun!: FakeAliyun;
  app!: RunningApp;
  base = '';
  readonly clock = new FakeClock();
  private proxy?: TcpProxy;
  private opened: OpenedPage[] = [];
  private serial = 0;

  async start(env: Record<string, string> = {}): Promise<void> {
    const port = await freePort();
    [this.browser, this.aliyun] = await Promise.all([launchChromium(), startFakeAliyun()]);
    this.app = await startMembership(
      { ...this.aliyun.env, WEBAUTHN_RP_ID: 'localhost', WEBAUTHN_ORIGINS: `http://localhost:${port}`, ...env },
      { clock: this.clock },
    );
    this.proxy = new TcpProxy('127.0.0.1', Number(new URL(this.app.url).port));
    await this.proxy.start(port);
    this.base = `http://localhost:${port}${new URL(this.app.url).pathname.replace(/\/$/, '')}`;
  }

  /** Closes the pages of the test; returns the script errors and CSP refusals they saw (a test expects none). */
  async closePages(): Promise<string[]> {
    const problems = this.opened.flatMap((o) => o.problems);
    await Promise.all(this.opened.map((o) => o.context.close()));
    this.opened = [];
    return problems;
  }

  async stop(): Promise<void> {
    await this.browser?.close();
    await this.proxy?.stop();
    await this.app?.close();
    await this.aliyun?.close();
  }

  async open(locale: Locale, scheme: Scheme, viewport = DESKTOP): Promise<AccountPage> {
    const o = await openPage(this.browser, { locale, scheme, ip: nextIp(), viewport });
    this.opened.push(o);
    const t: Texts = (key, values = {}) =>
      TEXTS[locale][key].replace(/\{(\w+)\}/g, (_, n: string) => String(values[n]));
    return { ...o, t };
  }

  /** A call to the API from an address of its own. */
  async call(method: string, path: string, body?: object, token?: string, locale = 'en'): Promise<Envelope> {
    const res = await fetch(`${this.app.url}${path}`, {
      method,
      headers: {
        'content-type': 'application/json',
        'accept-language': locale,
        'x-forwarded-for': nextIp(),
        ...(token ? { authorization: `Bearer ${token}` } : {}),
      },
      body: body ? JSON.stringify(body) : undefined,
    });
    return (await res.json()) as Envelope;
  }

  async newMember(): Promise<string> {
    const username = `web_${process.pid % 1000}_${++this.serial}`;
    expect((await this.call('POST', '/api/v1/app/auth/register', { username, password: PASSWORD })).code).toBe(200);
    return username;
  }

  nextPhone(): string {
    return `1390000${String(1000 + ++this.serial).slice(-4)}`;
  }

  /** The login result of another device (tokens, or a second-factor challenge). */
  async login(account: string, password = PASSWORD): Promise<Envelope['data']> {
    const r = await this.call('POST', '/api/v1/app/auth/login', { account, password });
    expect(r.code).toBe(200);
    return r.data;
  }

  async profileStatus(token: string): Promise<number> {
    return (await fetch(`${this.app.url}/api/v1/app/auth/profile`, { headers: { authorization: `Bearer ${token}` } }))
      .status;
  }

  /** Fills and sends the password form; the caller waits for what comes next. */
  async submitPassword(page: Page, t: Texts, account: string, password = PASSWORD): Promise<void> {
    await page.goto(`${this.base}/account/sign-in`);
    await page.getByLabel(t('signIn.account')).fill(account);
    await page.getByLabel(t('signIn.password'), { exact: true }).fill(password);
    await page.getByRole('button', { name: t('signIn.submit'), exact: true }).click();
  }

  async signInWithPassword(page: Page, t: Texts, account: string, password = PASSWORD): Promise<void> {
    await this.submitPassword(page, t, account, password);
    await securityPage(page, t);
  }
}

export const securityPage = (page: Page, t: Texts) =>
  page.getByRole('heading', { level: 1, name: t('security.title') }).waitFor();
