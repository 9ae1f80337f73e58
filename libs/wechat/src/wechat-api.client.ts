/** Base addresses of WeChat's APIs; configurable so tests can point them at a local server. */
export interface WechatBases {
  /** open.weixin.qq.com: browser authorization pages (qrconnect, oauth2/authorize). */
  openBase: string;
  /** api.weixin.qq.com: server-to-server JSON APIs. */
  apiBase: string;
  /** mp.weixin.qq.com: QR code images (showqrcode). */
  mpBase: string;
}

export const WECHAT_DEFAULT_BASES: WechatBases = {
  openBase: 'https://open.weixin.qq.com',
  apiBase: 'https://api.weixin.qq.com',
  mpBase: 'https://mp.weixin.qq.com',
};

/** WeChat answers errors with HTTP 200 and a non-zero `errcode`; transport failures use errcode -2. */
export class WechatApiError extends Error {
  constructor(
    readonly errcode: number,
    readonly errmsg: string,
    readonly api: string,
  ) {
    super(`WeChat ${api} failed: errcode ${errcode} ${errmsg}`);
  }

  /** 40001 invalid credential, 40014 invalid token, 42001 token expired: the cached token must be dropped. */
  get isAccessTokenInvalid(): boolean {
    return this.errcode === 40001 || this.errcode === 40014 || this.errcode === 42001;
  }
}

export interface WechatOAuthToken {
  access_token: string;
  expires_in: number;
  refresh_token?: string;
  openid: string;
  scope: string;
  unionid?: string;
}

export interface WechatSnsUserInfo {
  openid: string;
  nickname?: string;
  sex?: number;
  headimgurl?: string;
  unionid?: string;
}

export interface WechatMpUserInfo {
  subscribe: number;
  openid: string;
  nickname?: string;
  headimgurl?: string;
  unionid?: string;
}

export interface WechatAccessToken {
  access_token: string;
  expires_in: number;
}

export interface WechatQrcodeTicket {
  ticket: string;
  expire_seconds: number;
  url: string;
}

export type WechatAuthorizeScope = 'snsapi_login' | 'snsapi_userinfo' | 'snsapi_base';

/**
 * A small client for WeChat's non-standard OAuth and official-account calls
 * (appid/secret as query parameters, errors as HTTP 200 with errcode).
 */
export class WechatApiClient {
  private readonly bases: WechatBases;

  constructor(
    bases: Partial<WechatBases> = {},
    private readonly timeoutMs = 10_000,
  ) {
    const pick = (v: string | undefined, d: string) => (v && v.trim() ? v.trim().replace(/\/+$/, '') : d);
    this.bases = {
      openBase: pick(bases.openBase, WECHAT_DEFAULT_BASES.openBase),
      apiBase: pick(bases.apiBase, WECHAT_DEFAULT_BASES.apiBase),
      mpBase: pick(bases.mpBase, WECHAT_DEFAULT_BASES.mpBase),
    };
  }

  /**
   * Browser authorization URL: website QR login (`snsapi_login`, /connect/qrconnect) or
   * in-WeChat authorization (`snsapi_userinfo` / `snsapi_base`, /connect/oauth2/authorize).
   */
  authorizeUrl(p: { appId: string; redirectUri: string; scope: WechatAuthorizeScope; state: string }): string {
    const path = p.scope === 'snsapi_login' ? '/connect/qrconnect' : '/connect/oauth2/authorize';
    // WeChat requires this exact parameter order and the #wechat_redirect fragment.
    const qs = [
      `appid=${encodeURIComponent(p.appId)}`,
      `redirect_uri=${encodeURIComponent(p.redirectUri)}`,
      'response_type=code',
      `scope=${p.scope}`,
      `state=${encodeURIComponent(p.state)}`,
    ].join('&');
    return `${this.bases.openBase}${path}?${qs}#wechat_redirect`;
  }

  /** Exchanges an authorization code (website app or official account) for the user's openid and token. */
  exchangeCode(appId: string, secret: string, code: string): Promise<WechatOAuthToken> {
    return this.getJson('sns/oauth2/access_token', { appid: appId, secret, code, grant_type: 'authorization_code' });
  }

  /** User profile for an `snsapi_login` / `snsapi_userinfo` token. */
  snsUserInfo(accessToken: string, openId: string): Promise<WechatSnsUserInfo> {
    return this.getJson('sns/userinfo', { access_token: accessToken, openid: openId, lang: 'zh_CN' });
  }

  /** The official account's own access token (client_credential); callers cache it centrally. */
  accessToken(appId: string, secret: string): Promise<WechatAccessToken> {
    return this.getJson('cgi-bin/token', { grant_type: 'client_credential', appid: appId, secret });
  }

  /** Creates a temporary parametric QR code carrying a string scene. */
  createTemporaryQrcode(accessToken: string, sceneStr: string, expireSeconds: number): Promise<WechatQrcodeTicket> {
    return this.postJson(
      'cgi-bin/qrcode/create',
      { access_token: accessToken },
      { expire_seconds: expireSeconds, action_name: 'QR_STR_SCENE', action_info: { scene: { scene_str: sceneStr } } },
    );
  }

  /** Image address of a QR ticket. */
  showQrcodeUrl(ticket: string): string {
    return `${this.bases.mpBase}/cgi-bin/showqrcode?ticket=${encodeURIComponent(ticket)}`;
  }

  /** Profile (with unionid) of a user who follows the official account. */
  mpUserInfo(accessToken: string, openId: string): Promise<WechatMpUserInfo> {
    return this.getJson('cgi-bin/user/info', { access_token: accessToken, openid: openId, lang: 'zh_CN' });
  }

  private getJson<T>(api: string, query: Record<string, string>): Promise<T> {
    return this.call<T>(api, query, { method: 'GET' });
  }

  private postJson<T>(api: string, query: Record<string, string>, body: unknown): Promise<T> {
    return this.call<T>(api, query, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  }

  private async call<T>(api: string, query: Record<string, string>, init: RequestInit): Promise<T> {
    const url = `${this.bases.apiBase}/${api}?${new URLSearchParams(query).toString()}`;
    let res: Response;
    let text: string;
    try {
      res = await fetch(url, { ...init, signal: AbortSignal.timeout(this.timeoutMs) });
      text = await res.text();
    } catch (err) {
      throw new WechatApiError(-2, `transport: ${(err as Error).name}`, api);
    }
    if (!res.ok) throw new WechatApiError(-2, `HTTP ${res.status}`, api);
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new WechatApiError(-2, 'response is not JSON', api);
    }
    // Every WeChat API reports a failure as { errcode, errmsg } with a non-zero errcode.
    const { errcode, errmsg } = (json ?? {}) as { errcode?: unknown; errmsg?: unknown };
    if (typeof errcode === 'number' && errcode !== 0) {
      throw new WechatApiError(errcode, typeof errmsg === 'string' ? errmsg : '', api);
    }
    return json as T;
  }
}
