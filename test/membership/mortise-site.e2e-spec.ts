/**
 * The mortise website (github:rymcu/mortise, frontend/apps/site) replayed request by request: the same paths,
 * bodies, headers and content types its code sends (plugins/api.ts + @mortise/auth createAuthApi over ofetch,
 * stores/auth.ts + @mortise/auth web-store over fetch, pages/auth/*.vue, pages/profile.vue,
 * composables/useProfile.ts, composables/useOAuth2Providers.ts), and assertions on the fields it reads.
 * Every scenario runs at the root and under a CONTEXT_PATH (the site's apiBase then ends in it).
 */
import { createHmac } from 'crypto';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { tinyPng } from '../support/png';
import { RunningApp, startMembership } from '../support/apps';
import { FakeSmtp, nextIp, startFakeSmtp } from './fakes';

/** What a Chinese browser sends with every request (navigator.languages zh-CN, zh, en). */
const ZH_BROWSER = 'zh-CN,zh;q=0.9,en;q=0.8';

interface Envelope<T = unknown> {
  code: number;
  message: string;
  data: T;
}

class FetchError extends Error {
  constructor(
    readonly status: number,
    readonly body: Envelope,
  ) {
    super(body?.message || `HTTP ${status}`);
  }
}

/**
 * The site as a browser runs it: one client address, one browser language, the auth cookies
 * (token, refresh-token, token-type), `$fetch` (ofetch: JSON body -> content-type application/json,
 * accept application/json, throws on >= 400 with `response.status`) and `$api` (createAuthApi: adds
 * `Authorization: <tokenType> <token>`; on a 401 refreshes once with the refresh-token cookie and retries).
 */
class Site {
  readonly ip = nextIp();
  token: string | null = null;
  refreshToken: string | null = null;
  tokenType: string | null = null;
  user: Record<string, unknown> | null = null;
  /** Every request the site made, in order (method + path), to assert the refresh-and-retry sequence. */
  readonly sent: string[] = [];

  constructor(
    readonly apiBase: string,
    readonly language = ZH_BROWSER,
  ) {}

  private browserHeaders(): Record<string, string> {
    return { 'accept-language': this.language, 'x-forwarded-for': this.ip };
  }

  /** ofetch's `$fetch(path, { baseURL, method, body, query, headers })`. */
  async $fetch<T>(
    path: string,
    opts: { method?: string; body?: unknown; query?: Record<string, string>; headers?: Record<string, string> } = {},
  ): Promise<T> {
    const url = new URL(this.apiBase + path);
    for (const [k, v] of Object.entries(opts.query ?? {})) url.searchParams.set(k, v);
    const headers: Record<string, string> = {
      accept: 'application/json',
      ...this.browserHeaders(),
      ...(opts.headers ?? {}),
    };
    let body: FormData | string | undefined;
    if (opts.body instanceof FormData) body = opts.body;
    else if (opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      headers['content-type'] = 'application/json';
    }
    const method = opts.method ?? 'GET';
    this.sent.push(`${method} ${path}`);
    const res = await fetch(url, { method, headers, body });
    const payload = (await res.json()) as Envelope;
    if (!res.ok) throw new FetchError(res.status, payload);
    return payload as T;
  }

  /** @mortise/auth createAuthApi as wired in plugins/api.ts. */
  async $api<T>(path: string, opts: { method?: string; body?: unknown; _retried?: boolean } = {}): Promise<T> {
    const { _retried, ...fetchOptions } = opts;
    const headers: Record<string, string> = {};
    if (this.token) headers.Authorization = `${this.tokenType ?? 'Bearer'} ${this.token}`;
    try {
      return await this.$fetch<T>(path, { ...fetchOptions, headers });
    } catch (error) {
      if (!(error instanceof FetchError) || error.status !== 401 || _retried) throw error;
      const renewed = await this.refresh();
      if (!renewed) throw error;
      return this.$fetch<T>(path, {
        ...fetchOptions,
        headers: { ...headers, Authorization: `${this.tokenType ?? 'Bearer'} ${this.token}` },
      });
    }
  }

  /** @mortise/auth createAuthClient: fetch with Content-Type application/json, unwrapGlobalResult. */
  private async authClient<T>(path: string, init: { method: string; body?: string }): Promise<T> {
    this.sent.push(`${init.method} ${path}`);
    const res = await fetch(this.apiBase + path, {
      ...init,
      headers: { 'Content-Type': 'application/json', ...this.browserHeaders() },
    });
    const payload = (await res.json()) as Envelope<T>;
    if (!res.ok) throw new Error(payload?.message || 'Request failed');
    if (payload.code !== 200) throw new Error(payload.message || 'Business request failed');
    return payload.data;
  }

  private saveTokens(p: Record<string, unknown>) {
    if (!p?.token) throw new Error('登录响应缺少 token');
    this.token = p.token as string;
    this.refreshToken = (p.refreshToken as string) ?? null;
    this.tokenType = (p.tokenType as string) ?? 'Bearer';
    this.user = {
      ...(this.user ?? {}),
      memberId: p.memberId,
      username: p.username,
      nickname: p.nickname,
      avatarUrl: p.avatarUrl,
    };
  }

  /** web-store login(): POST loginPath {account, password}, then fetchCurrentUser (GET mePath through $api). */
  async login(account: string, password: string) {
    this.saveTokens(
      await this.authClient('/api/v1/app/auth/login', { method: 'POST', body: JSON.stringify({ account, password }) }),
    );
    await this.fetchCurrentUser();
  }

  /** web-store refresh(): POST refreshPath {refreshToken}; on failure logs out. */
  async refresh(): Promise<boolean> {
    if (!this.refreshToken) return false;
    try {
      this.saveTokens(
        await this.authClient('/api/v1/app/auth/refresh-token', {
          method: 'POST',
          body: JSON.stringify({ refreshToken: this.refreshToken }),
        }),
      );
      return true;
    } catch {
      this.token = this.refreshToken = this.tokenType = this.user = null;
      return false;
    }
  }

  /** core-sdk fetchSiteCurrentUser via $api, merged into the user cookie. */
  async fetchCurrentUser() {
    const res = await this.$api<Envelope<Record<string, unknown>>>('/api/v1/app/auth/profile', { method: 'GET' });
    if (res.code !== 200) throw new Error(res.message || '获取当前用户失败');
    this.user = { ...(this.user ?? {}), ...res.data };
    return this.user;
  }
}

/** The clients file shape of docs/configuration.md: display name and icon defaults per provider, `appTypes` per client. */
const CLIENTS_YAML = `
clients:
  - registrationId: github-app
    provider: github
    clientId: Iv1.8a61f9b3a7aba766
    clientSecret: gh-secret-value
    redirectUri: https://www.example.com/auth/callback
  - registrationId: gitee-app
    provider: gitee
    clientName: 码云
    appTypes: [site]
    clientId: 6f2d0c0e5a1b4f0d9a7c
    clientSecret: gitee-secret-value
    redirectUri: https://www.example.com/auth/callback
  - registrationId: corp-sso
    provider: oauth2
    clientName: Example SSO
    icon: i-lucide-building-2
    appTypes: site
    clientId: member-site
    clientSecret: sso-secret-value
    authorizationUri: https://sso.example.com/oauth2/authorize
    tokenUri: https://sso.example.com/oauth2/token
    userInfoUri: https://sso.example.com/oauth2/userinfo
    redirectUri: https://www.example.com/auth/callback
  - registrationId: admin-sso
    provider: oauth2
    appTypes: [admin]
    clientId: member-admin
    clientSecret: admin-secret-value
    authorizationUri: https://sso.example.com/oauth2/authorize
    tokenUri: https://sso.example.com/oauth2/token
    userInfoUri: https://sso.example.com/oauth2/userinfo
    redirectUri: https://admin.example.com/auth/callback
`;

/** The app's access-token key as the tests' JWT_SECRET derives it (see tokens.e2e-spec.ts). */
const ACCESS_KEY = createHmac('sha256', 'test-secret-test-secret-test-secret-0123456789')
  .update('membership:access-token:v1')
  .digest('base64url');
/** The same access token with its lifetime over: what the site's cookie holds after the JWT expired. */
function expiredCopyOf(token: string): string {
  const [header, payload] = token.split('.');
  const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
  const now = Math.floor(Date.now() / 1000);
  const body = `${header}.${Buffer.from(JSON.stringify({ ...claims, iat: now - 3600, exp: now - 60 })).toString('base64url')}`;
  return `${body}.${createHmac('sha256', ACCESS_KEY).update(body).digest('base64url')}`;
}

describe.each([
  ['at the root', ''],
  ['under CONTEXT_PATH=/mortise', '/mortise'],
])('membership serves the mortise website %s', (_label, contextPath) => {
  let app: RunningApp;
  let smtp: FakeSmtp;
  let seq = 0;
  const unique = (prefix: string) => `${prefix}${++seq}${contextPath ? 'c' : 'r'}`;

  beforeAll(async () => {
    smtp = await startFakeSmtp();
    const clientsFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'site-clients-')), 'clients.yaml');
    fs.writeFileSync(clientsFile, CLIENTS_YAML);
    app = await startMembership({
      ...smtp.env,
      ADMIN_ACCOUNT: 'site_admin',
      ADMIN_PASSWORD: 'admin-password-1',
      OAUTH2_CLIENTS_FILE: clientsFile,
      ...(contextPath ? { CONTEXT_PATH: contextPath } : {}),
    });
  });
  afterAll(async () => {
    await app?.close();
    await smtp?.close();
  });

  /** pages/auth/register.vue then login.vue: register {username, email, password} (as the form posts it); log in. */
  async function signedIn(site: Site) {
    const username = unique('site_user_');
    const password = 'site-password-1';
    const email = `${username}@example.com`;
    const registered = await site.$fetch<Envelope<unknown>>('/api/v1/app/auth/register', {
      method: 'POST',
      body: { username, email, password },
    });
    expect(registered.code).toBe(200);
    await site.login(username, password);
    return { username, email, password };
  }

  it('forgot-password.vue: send-code {type, email}, reset-password {type, account, code, newPassword}, then log in', async () => {
    const member = await signedIn(new Site(app.url));
    const site = new Site(app.url);
    // Step 1: the email typed into the "account" field.
    const sent = await site.$fetch<Envelope<unknown>>('/api/v1/app/auth/send-code', {
      method: 'POST',
      body: { type: 'email', email: member.email },
    });
    expect(sent.code).toBe(200);
    // Step 2: exactly the body the page posts.
    const code = smtp.lastCode(member.email);
    const reset = await site.$fetch<Envelope<unknown>>('/api/v1/app/auth/reset-password', {
      method: 'POST',
      body: { type: 'email', account: member.email, code, newPassword: 'brand-new-secret' },
    });
    expect(reset.code).toBe(200);
    // The page navigates to the login page; the new password works, the old one does not.
    await site.login(member.username, 'brand-new-secret');
    expect(site.user).toMatchObject({ username: member.username });
    await expect(new Site(app.url).login(member.username, member.password)).rejects.toThrow();
  });

  it('reset-password: account must fit type and must not contradict phone/email (clear 400, code 10000)', async () => {
    const site = new Site(app.url, 'en');
    const refused = async (body: object) => {
      const err = await site
        .$fetch('/api/v1/app/auth/reset-password', { method: 'POST', body })
        .catch((e: FetchError) => e);
      expect(err).toBeInstanceOf(FetchError);
      expect((err as FetchError).status).toBe(400);
      expect((err as FetchError).body.code).toBe(10000);
      return (err as FetchError).body.message;
    };
    const base = { code: '123456', newPassword: 'brand-new-secret' };
    expect(await refused({ ...base, type: 'email', account: 'a@example.com', email: 'b@example.com' })).toMatch(
      /account and email name different targets/,
    );
    expect(await refused({ ...base, type: 'sms', account: '13800138000', phone: '13900139000' })).toMatch(
      /account and phone name different targets/,
    );
    expect(await refused({ ...base, type: 'email', account: '13800138000' })).toMatch(
      /account must be an email address/,
    );
    expect(await refused({ ...base, type: 'sms', account: 'a@example.com' })).toMatch(
      /account must be a mobile number/,
    );
    expect(await refused({ ...base, type: 'email' })).toMatch(/email/);
    // The same target twice is fine (reaches the code check: 10003).
    const err = await site
      .$fetch('/api/v1/app/auth/reset-password', {
        method: 'POST',
        body: { ...base, type: 'email', account: 'A@Example.com', email: 'a@example.com' },
      })
      .catch((e: FetchError) => e);
    expect((err as FetchError).body.code).toBe(10003);
  });

  it('app.vue: usePublicSiteConfig titles pages with seo.title_template; renaming the site renames the titles', async () => {
    const site = new Site(app.url);
    // composables/usePublicSiteConfig.ts: $fetch(public, { baseURL }); tpl.replace('{page}', '%s').replace('{site}', siteName).
    const titleOf = async (page: string) => {
      const res = await site.$fetch<Envelope<{ values: Record<string, string> }>>(
        '/api/v1/admin/system/site-config/public',
      );
      const values = res.data?.values ?? {};
      const siteName = values['site.name'] ?? 'Mortise';
      const tpl = values['seo.title_template'] ?? '{page} - {site}';
      return tpl.replace('{page}', '%s').replace('{site}', siteName).replace('%s', page);
    };
    expect(await titleOf('登录')).toBe('登录 - Membership');
    const admin = new Site(app.url);
    await admin.login('site_admin', 'admin-password-1');
    await admin.$api('/api/v1/admin/system/site-config', {
      method: 'PUT',
      body: { values: { 'site.name': '创客社区' } },
    });
    expect(await titleOf('登录')).toBe('登录 - 创客社区');
  });

  it('login.vue: useOAuth2Providers("site") lists the configured clients as buttons; a click gets the authorization URL', async () => {
    const site = new Site(app.url);
    // composables/useOAuth2Providers.ts: $fetch(path, { baseURL, query: { appType } }), no Authorization header.
    const result = await site.$fetch<Envelope<{ registrationId: string; clientName: string; icon?: string }[]>>(
      '/api/v1/admin/auth/oauth2-providers',
      {
        query: { appType: 'site' },
      },
    );
    expect(result.code).toBe(200);
    // The buttons the page renders: label "使用 {clientName} 登录", icon p.icon (or its own guess), onClick(registrationId).
    const buttons = (result.data ?? []).map((p) => ({
      label: `使用 ${p.clientName} 登录`,
      icon: p.icon,
      registrationId: p.registrationId,
    }));
    expect(buttons).toEqual([
      { label: '使用 GitHub 登录', icon: 'i-simple-icons-github', registrationId: 'github-app' },
      { label: '使用 码云 登录', icon: 'i-simple-icons-gitee', registrationId: 'gitee-app' },
      { label: '使用 Example SSO 登录', icon: 'i-lucide-building-2', registrationId: 'corp-sso' },
    ]);
    // Nothing but the three display fields: no client ids, secrets or endpoints.
    for (const p of result.data) expect(Object.keys(p).sort()).toEqual(['clientName', 'icon', 'registrationId']);
    expect(JSON.stringify(result)).not.toMatch(/secret|Iv1\.|clientId|authorize/i);
    // appType filter: the admin-only client shows on the admin login page, not on the site's.
    const admin = await site.$fetch<Envelope<{ registrationId: string }[]>>('/api/v1/admin/auth/oauth2-providers', {
      query: { appType: 'admin' },
    });
    expect(admin.data.map((p) => p.registrationId)).toEqual(['github-app', 'admin-sso']);
    const all = await site.$fetch<Envelope<{ registrationId: string }[]>>('/api/v1/admin/auth/oauth2-providers');
    expect(all.data.map((p) => p.registrationId)).toEqual(['github-app', 'gitee-app', 'corp-sso', 'admin-sso']);
    const bad = await site
      .$fetch('/api/v1/admin/auth/oauth2-providers', { query: { appType: '<script>' } })
      .catch((e: FetchError) => e);
    expect((bad as FetchError).status).toBe(400);
    expect((bad as FetchError).body.code).toBe(10000);

    // Clicking a button: web-store startOAuthLogin -> fetch(`${apiBase}${oauthAuthUrlPath}/${id}`, GET, Content-Type json).
    const res = await fetch(`${app.url}/api/v1/app/oauth2/auth-url/${encodeURIComponent(buttons[0].registrationId)}`, {
      method: 'GET',
      headers: { 'Content-Type': 'application/json', 'x-forwarded-for': site.ip },
    });
    const payload = (await res.json()) as Envelope<{ authorizationUrl: string }>;
    expect(payload.code).toBe(200);
    // The page only needs an absolute address to navigate to (GitHub's, or this server's hop that leads there).
    expect(new URL(payload.data.authorizationUrl).protocol).toMatch(/^https?:$/);
    expect(payload.data.authorizationUrl).toMatch(/github/);
  });

  it('plugins/api.ts: an expired access token -> 401 -> refresh-token -> the same request retried with the new token', async () => {
    const site = new Site(app.url);
    const { username } = await signedIn(site);
    const firstRefresh = site.refreshToken;
    // The access cookie outlives the JWT: the same token with its exp in the past (signed with the app's key).
    site.token = expiredCopyOf(site.token!);
    site.sent.length = 0;
    const res = await site.$api<Envelope<{ username: string }>>('/api/v1/app/auth/profile', { method: 'GET' });
    expect(res.data.username).toBe(username);
    expect(site.sent).toEqual([
      'GET /api/v1/app/auth/profile',
      'POST /api/v1/app/auth/refresh-token',
      'GET /api/v1/app/auth/profile',
    ]);
    // Rotation: new tokens saved; the old refresh token is spent.
    expect(site.refreshToken).not.toBe(firstRefresh);
    expect(site.user).toMatchObject({ username });
    // A refresh that fails logs the site out and the original 401 reaches the page (onUnauthorized -> /auth/login).
    site.token = expiredCopyOf(site.token);
    site.refreshToken = 'not-a-refresh-token';
    const err = await site.$api('/api/v1/app/auth/profile').catch((e: FetchError) => e);
    expect((err as FetchError).status).toBe(401);
    expect(site.token).toBeNull();
  });

  it("messages in the member's language: zh-CN browsers get Chinese envelope messages, the code stays the same", async () => {
    const zh = new Site(app.url);
    const en = new Site(app.url, 'en-US,en;q=0.9');
    const member = await signedIn(zh);

    // login.vue shows error.message from @mortise/auth's unwrapGlobalResult (payload.message).
    await expect(new Site(app.url).login(member.username, 'wrong-password-1')).rejects.toThrow('账号或密码错误');
    await expect(new Site(app.url, 'en').login(member.username, 'wrong-password-1')).rejects.toThrow(
      'Wrong account or password',
    );

    const both = async (path: string, opts: Parameters<Site['$fetch']>[1]) => {
      const [a, b] = await Promise.all([
        zh.$fetch(path, opts).catch((e: FetchError) => e),
        en.$fetch(path, opts).catch((e: FetchError) => e),
      ]);
      expect(a).toBeInstanceOf(FetchError);
      expect(b).toBeInstanceOf(FetchError);
      const [x, y] = [a as FetchError, b as FetchError];
      expect(x.status).toBe(y.status);
      expect(x.body.code).toBe(y.body.code);
      return { zh: x.body.message, en: y.body.message, code: x.body.code };
    };
    // forgot-password.vue with a wrong code.
    await zh.$fetch('/api/v1/app/auth/send-code', { method: 'POST', body: { type: 'email', email: member.email } });
    const code = smtp.lastCode(member.email);
    const wrong = String((Number(code) + 1) % 1_000_000).padStart(6, '0');
    const badCode = await both('/api/v1/app/auth/reset-password', {
      method: 'POST',
      body: { type: 'email', account: member.email, code: wrong, newPassword: 'brand-new-secret' },
    });
    expect(badCode.code).toBe(10003);
    expect(badCode.zh).toMatch(/^验证码错误、已过期或已被使用（还可尝试 \d 次）$/);
    expect(badCode.en).toMatch(/^Verification code is wrong, expired or used up \(\d tries left\)$/);
    // Validation (10000): field names stay, the text is Chinese.
    const invalid = await both('/api/v1/app/auth/register', {
      method: 'POST',
      body: { username: 'ab', email: 'not-mail', password: 'short-pw-1', extra: 1 },
    });
    expect(invalid.code).toBe(10000);
    expect(invalid.zh).toContain('username：格式不正确');
    expect(invalid.zh).toContain('email：必须是有效的邮箱地址');
    expect(invalid.zh).toContain('extra：不允许的字段');
    expect(invalid.en).toContain('property extra should not exist');
    // Taken (10005) names the field in the member's language.
    const taken = await both('/api/v1/app/auth/register', {
      method: 'POST',
      body: { username: member.username, password: 'long-enough-pw-1' },
    });
    expect(taken).toEqual({ code: 10005, zh: '用户名已被占用', en: 'username is already taken' });
    // Without a token (the guard's own message), an unknown route, malformed JSON.
    expect(await both('/api/v1/app/auth/profile', {})).toEqual({
      code: 401,
      zh: '请先登录',
      en: 'Authentication required',
    });
    const noRoute = await both('/api/v1/app/nothing-here', {});
    expect(noRoute.zh).toMatch(/^接口不存在：GET /);
    const res = await fetch(`${app.url}/api/v1/app/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'accept-language': ZH_BROWSER, 'x-forwarded-for': zh.ip },
      body: '{"account":',
    });
    // A library's own English (the JSON parser's) is not shown to a Chinese reader: the body reader's error is translated.
    expect(await res.json()).toEqual({ code: 400, message: 'JSON 请求体格式错误', data: null });
    expect(res.headers.get('content-language')).toBe('zh-CN');
    expect(res.headers.get('vary')).toMatch(/Accept-Language/i);
    // Success envelopes too.
    const ok = await zh.$api<Envelope<unknown>>('/api/v1/app/auth/profile');
    expect(ok.message).toBe('操作成功');
    expect((await en.$fetch<Envelope<unknown>>('/api/v1/admin/system/site-config/public')).message).toBe('success');
  });

  it('profile.vue: a nickname-only save sends avatarUrl null and keeps the avatar; "" clears it', async () => {
    const site = new Site(app.url);
    await signedIn(site);

    // useAppFileUpload: multipart POST /api/v1/app/files with the field "file"; the page keeps data.url.
    const form = new FormData();
    form.append('file', new Blob([tinyPng()], { type: 'image/png' }), 'avatar.png');
    const upload = await site.$api<Envelope<{ url: string }>>('/api/v1/app/files', { method: 'POST', body: form });
    const avatarUrl = upload.data.url;
    // The first save with the uploaded avatar, as onProfileSubmit sends it.
    await site.$api('/api/v1/app/auth/profile', {
      method: 'PUT',
      body: { nickname: 'First', avatarUrl, gender: 'female', birthDate: '1992-03-04' },
    });

    // The member edits only the nickname: pendingAvatar is null, the selects send what the form holds.
    const saved = await site.$api<Envelope<unknown>>('/api/v1/app/auth/profile', {
      method: 'PUT',
      body: { nickname: 'Renamed', avatarUrl: null, gender: 'female', birthDate: '1992-03-04' },
    });
    expect(saved.code).toBe(200);
    // useProfile refetches the profile and the page renders avatarUrl, nickname, gender, birthDate.
    const profile = await site.fetchCurrentUser();
    expect(profile).toMatchObject({ nickname: 'Renamed', avatarUrl, gender: 'female', birthDate: '1992-03-04' });

    // "保密" gender and an empty birthday are sent as null: left as they are.
    await site.$api('/api/v1/app/auth/profile', {
      method: 'PUT',
      body: { nickname: 'Renamed', avatarUrl: null, gender: null, birthDate: null },
    });
    expect(await site.fetchCurrentUser()).toMatchObject({ avatarUrl, gender: 'female', birthDate: '1992-03-04' });

    // Clearing is an explicit empty string (documented in Swagger and docs/membership/auth.md).
    await site.$api('/api/v1/app/auth/profile', { method: 'PUT', body: { avatarUrl: '', gender: '', birthDate: '' } });
    expect(await site.fetchCurrentUser()).toMatchObject({
      nickname: 'Renamed',
      avatarUrl: null,
      gender: null,
      birthDate: null,
    });
  });
});

describe('membership with DEFAULT_LOCALE=zh-CN', () => {
  let app: RunningApp;
  beforeAll(async () => {
    app = await startMembership({ DEFAULT_LOCALE: 'zh-CN', CONTEXT_PATH: '/mortise' });
  });
  afterAll(() => app?.close());

  it('answers in Chinese without an Accept-Language or with none we have; an English browser still gets English', async () => {
    const message = async (language?: string) => {
      const headers: Record<string, string> = { accept: 'application/json', 'x-forwarded-for': nextIp() };
      if (language !== undefined) headers['accept-language'] = language;
      const res = await fetch(`${app.url}/api/v1/app/auth/profile`, { headers });
      expect(res.status).toBe(401);
      return ((await res.json()) as Envelope).message;
    };
    expect(await message()).toBe('请先登录');
    expect(await message('fr-FR,fr;q=0.9')).toBe('请先登录');
    expect(await message('*')).toBe('请先登录');
    expect(await message('en-GB,en;q=0.8')).toBe('Authentication required');
    expect(await message('zh-TW,zh;q=0.9')).toBe('请先登录');
  });
});
