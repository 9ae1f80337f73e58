/**
 * A local server speaking WeChat's documented open-platform and official-account protocols:
 * browser authorization (qrconnect, oauth2/authorize), sns/oauth2/access_token, sns/userinfo,
 * cgi-bin/token, cgi-bin/qrcode/create, showqrcode, cgi-bin/user/info (errors as HTTP 200 +
 * errcode), and event pushes to the app's server URL with real signatures and AES encryption.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { WechatMessageCrypto, buildWechatXml, parseWechatXml, wechatSignature } from '@app/wechat';

export interface WechatTestApp {
  appId: string;
  secret: string;
  /** `open`: website app (qrconnect); `mp`: official account (oauth2/authorize, tokens, QR, pushes). */
  kind: 'open' | 'mp';
  token?: string;
  encodingAesKey?: string;
  /** Original id of the official account, the ToUserName of pushes. */
  originalId?: string;
  /**
   * Message mode chosen in the console: `plain` (明文模式), `compatible` (兼容模式: plaintext fields plus
   * `Encrypt`, `encrypt_type=aes`) or `safe` (安全模式: only `Encrypt`). Default: safe with a key, else plain.
   */
  mode?: 'plain' | 'compatible' | 'safe';
}

export interface WechatTestUser {
  key: string;
  nickname: string;
  headimgurl?: string;
  /** Present when the apps are bound to one open-platform account. */
  unionid?: string;
}

export interface PushResult {
  status: number;
  body: string;
  /** Decrypted reply XML fields in safe mode (when the server replied with a message). */
  reply?: Record<string, string>;
  /** What was sent, to replay it (as someone who captured the push would). */
  request: { url: string; body: string };
}

export interface PushOptions {
  /** Default: as the app's message mode says. */
  encrypted?: boolean;
  badSignature?: boolean;
  msgTimestamp?: number;
}

interface CodeGrant {
  appId: string;
  user: WechatTestUser;
  scope: string;
  expiresAt: number;
  used: boolean;
}
interface SnsToken {
  appId: string;
  user: WechatTestUser;
  scope: string;
}
interface Ticket {
  appId: string;
  sceneStr: string;
  expiresAt: number;
}

export class WechatTestServer {
  url = '';
  /** The user who "scans" or confirms on the phone in the next browser authorization. */
  user: WechatTestUser = {
    key: 'alice',
    nickname: 'Alice',
    unionid: 'union-alice',
    headimgurl: 'https://wx.qlogo.cn/alice.png',
  };
  /** When true the user refuses in the next authorization (WeChat then redirects without a code). */
  denyNext = false;
  /** One-shot errcode answers per API path, e.g. `failNext.set('sns/oauth2/access_token', {errcode: 40029, ...})`. */
  readonly failNext = new Map<string, { errcode: number; errmsg: string }>();
  readonly calls = new Map<string, number>();
  private readonly gates = new Map<string, { arrived: () => void; released: Promise<void> }>();

  /**
   * Holds the next call of an API path until `release()` (to observe a transient state without timing):
   * `reached` resolves when that call has arrived.
   */
  hold(api: string): { reached: Promise<void>; release: () => void } {
    let arrived!: () => void;
    let release!: () => void;
    const reached = new Promise<void>((r) => (arrived = r));
    const released = new Promise<void>((r) => (release = r));
    this.gates.set(api, { arrived, released });
    return { reached, release };
  }
  private readonly portals = new Map<string, string>();
  private readonly codes = new Map<string, CodeGrant>();
  private readonly snsTokens = new Map<string, SnsToken>();
  private readonly appTokens = new Map<string, string>();
  readonly tickets = new Map<string, Ticket>();
  private server: Server;

  constructor(readonly apps: WechatTestApp[]) {}

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      this.handle(req, res).catch((err) => {
        res.statusCode = 500;
        res.end(String(err));
      });
    });
    this.server.keepAliveTimeout = 120_000; // as test/support/upstreams/fake-upstream.ts says why
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.server.closeAllConnections?.();
      this.server.close(() => resolve());
    });
  }

  /** The app's server URL configured in the official-account console. */
  setPortal(appId: string, url: string): void {
    this.portals.set(appId, url);
  }

  /** Each app sees its own openid for a user; the unionid is shared. */
  openidOf(appId: string, user: WechatTestUser): string {
    return 'o' + createHash('sha1').update(`${appId}:${user.key}`).digest('base64url').slice(0, 27);
  }

  /** Invalidates every official-account access token issued so far (as a secret reset would). */
  revokeAppTokens(): void {
    this.appTokens.clear();
  }

  /** Makes an issued QR ticket expire now. */
  expireTicket(ticket: string): void {
    const t = this.tickets.get(ticket);
    if (t) t.expiresAt = Date.now() - 1;
  }

  /** The server-URL handshake WeChat performs when the URL is configured. */
  async handshake(
    appId: string,
    opts: { badSignature?: boolean; timestamp?: number } = {},
  ): Promise<{ status: number; body: string; echostr: string }> {
    const app = this.app(appId);
    const timestamp = String(opts.timestamp ?? Math.floor(Date.now() / 1000));
    const nonce = randomBytes(6).toString('hex');
    const echostr = randomBytes(9).toString('hex');
    const signature = opts.badSignature ? '0'.repeat(40) : wechatSignature(app.token!, timestamp, nonce);
    const res = await fetch(
      `${this.portal(appId)}?${new URLSearchParams({ signature, timestamp, nonce, echostr }).toString()}`,
    );
    return { status: res.status, body: await res.text(), echostr };
  }

  /**
   * The user scans a parametric QR code: WeChat pushes a SCAN event (already following) or a
   * subscribe event with EventKey `qrscene_<scene>` (first follow) to the app's server URL.
   */
  async scan(
    ticket: string,
    opts: {
      event?: 'SCAN' | 'subscribe';
      encrypted?: boolean;
      user?: WechatTestUser;
      createTime?: number;
      badSignature?: boolean;
      msgTimestamp?: number;
    } & PushOptions = {},
  ): Promise<PushResult> {
    const t = this.tickets.get(ticket);
    if (!t) throw new Error(`unknown ticket ${ticket}`);
    const user = opts.user ?? this.user;
    const event = opts.event ?? 'SCAN';
    const app = this.app(t.appId);
    const xml = buildWechatXml({
      ToUserName: app.originalId ?? 'gh_test',
      FromUserName: this.openidOf(t.appId, user),
      CreateTime: opts.createTime ?? Math.floor(Date.now() / 1000),
      MsgType: 'event',
      Event: event,
      EventKey: event === 'subscribe' ? `qrscene_${t.sceneStr}` : t.sceneStr,
      Ticket: ticket,
    });
    return this.push(t.appId, xml, this.openidOf(t.appId, user), opts);
  }

  /**
   * Pushes any message XML to the app's server URL, signed as WeChat does and shaped by the app's
   * message mode (encrypted in safe and compatible mode). `encrypted: false` forces a plaintext push
   * with a valid URL signature (what a forger holding one captured push URL could send).
   */
  async push(appId: string, xml: string, openid: string, opts: PushOptions = {}): Promise<PushResult> {
    const app = this.app(appId);
    const mode = app.mode ?? (app.encodingAesKey ? 'safe' : 'plain');
    const encrypt = opts.encrypted ?? mode !== 'plain';
    const timestamp = String(opts.msgTimestamp ?? Math.floor(Date.now() / 1000));
    const nonce = randomBytes(6).toString('hex');
    const query: Record<string, string> = {
      signature: opts.badSignature ? 'f'.repeat(40) : wechatSignature(app.token!, timestamp, nonce),
      timestamp,
      nonce,
      openid,
    };
    let body = xml;
    let crypto: WechatMessageCrypto | undefined;
    if (encrypt) {
      crypto = new WechatMessageCrypto(app.token!, app.encodingAesKey!, appId);
      const encrypted = crypto.encrypt(xml);
      const envelope = buildWechatXml({ ToUserName: app.originalId ?? 'gh_test', Encrypt: encrypted });
      // Compatible mode sends the plaintext fields too, with the encrypted copy beside them.
      body =
        mode === 'compatible' ? xml.replace(/<\/xml>$/, `<Encrypt><![CDATA[${encrypted}]]></Encrypt></xml>`) : envelope;
      query.encrypt_type = 'aes';
      query.msg_signature = crypto.messageSignature(timestamp, nonce, encrypted);
    }
    const url = `${this.portal(appId)}?${new URLSearchParams(query).toString()}`;
    return this.send(url, body, crypto);
  }

  /** Sends a push request as is (a replay of a captured one, possibly with another body). */
  async send(url: string, body: string, crypto?: WechatMessageCrypto): Promise<PushResult> {
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'text/xml' }, body });
    const text = await res.text();
    const result: PushResult = { status: res.status, body: text, request: { url, body } };
    if (crypto && text.startsWith('<xml>')) {
      const envelope = parseWechatXml(text);
      crypto.verifyMessageSignature(envelope.MsgSignature, envelope.TimeStamp, envelope.Nonce, envelope.Encrypt);
      result.reply = parseWechatXml(crypto.decrypt(envelope.Encrypt));
    } else if (text.startsWith('<xml>')) {
      result.reply = parseWechatXml(text);
    }
    return result;
  }

  private app(appId: string): WechatTestApp {
    const app = this.apps.find((a) => a.appId === appId);
    if (!app) throw new Error(`unknown app ${appId}`);
    return app;
  }

  private portal(appId: string): string {
    const url = this.portals.get(appId);
    if (!url) throw new Error(`no server URL configured for ${appId}`);
    return url;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const u = new URL(req.url ?? '/', this.url);
    const q = Object.fromEntries(u.searchParams);
    const api = u.pathname.replace(/^\/+/, '');
    this.calls.set(api, (this.calls.get(api) ?? 0) + 1);
    const gate = this.gates.get(api);
    if (gate) {
      this.gates.delete(api);
      gate.arrived();
      await gate.released;
    }
    const json = (body: unknown) => {
      res.setHeader('content-type', 'application/json; charset=utf-8');
      res.end(JSON.stringify(body));
    };
    const err = (errcode: number, errmsg: string) =>
      json({ errcode, errmsg: `${errmsg} rid: ${randomBytes(4).toString('hex')}` });
    const injected = this.failNext.get(api);
    if (injected) {
      this.failNext.delete(api);
      return err(injected.errcode, injected.errmsg);
    }
    const appOf = (id: string) => this.apps.find((a) => a.appId === id);

    switch (api) {
      case 'connect/qrconnect':
      case 'connect/oauth2/authorize': {
        const app = appOf(q.appid);
        const wantKind = api === 'connect/qrconnect' ? 'open' : 'mp';
        const scopes = api === 'connect/qrconnect' ? ['snsapi_login'] : ['snsapi_userinfo', 'snsapi_base'];
        if (
          !app ||
          app.kind !== wantKind ||
          !scopes.includes(q.scope) ||
          q.response_type !== 'code' ||
          !q.redirect_uri
        ) {
          res.statusCode = 400;
          res.end('参数错误');
          return;
        }
        const target = new URL(q.redirect_uri);
        if (!this.denyNext) {
          const code = randomBytes(16).toString('hex');
          this.codes.set(code, {
            appId: app.appId,
            user: this.user,
            scope: q.scope,
            expiresAt: Date.now() + 5 * 60_000,
            used: false,
          });
          target.searchParams.set('code', code);
        }
        this.denyNext = false;
        if (q.state) target.searchParams.set('state', q.state);
        res.statusCode = 302;
        res.setHeader('location', target.toString());
        res.end();
        return;
      }
      case 'sns/oauth2/access_token': {
        const app = appOf(q.appid);
        if (!app) return err(40013, 'invalid appid');
        if (q.secret !== app.secret) return err(40125, 'invalid appsecret');
        if (q.grant_type !== 'authorization_code') return err(40002, 'invalid grant_type');
        const grant = this.codes.get(q.code ?? '');
        if (!grant || grant.appId !== app.appId || grant.expiresAt < Date.now()) return err(40029, 'invalid code');
        if (grant.used) return err(40163, 'code been used');
        grant.used = true;
        const accessToken = randomBytes(16).toString('hex');
        this.snsTokens.set(accessToken, { appId: app.appId, user: grant.user, scope: grant.scope });
        const openid = this.openidOf(app.appId, grant.user);
        return json({
          access_token: accessToken,
          expires_in: 7200,
          refresh_token: randomBytes(16).toString('hex'),
          openid,
          scope: grant.scope,
          ...(grant.user.unionid && grant.scope !== 'snsapi_base' ? { unionid: grant.user.unionid } : {}),
        });
      }
      case 'sns/userinfo': {
        const t = this.snsTokens.get(q.access_token ?? '');
        if (!t) return err(40001, 'invalid credential, access_token is invalid or not latest');
        if (t.scope === 'snsapi_base') return err(48001, 'api unauthorized');
        if (q.openid !== this.openidOf(t.appId, t.user)) return err(40003, 'invalid openid');
        return json({
          openid: q.openid,
          nickname: t.user.nickname,
          sex: 0,
          province: '',
          city: '',
          country: '',
          headimgurl: t.user.headimgurl ?? '',
          privilege: [],
          ...(t.user.unionid ? { unionid: t.user.unionid } : {}),
        });
      }
      case 'cgi-bin/token': {
        const app = appOf(q.appid);
        if (q.grant_type !== 'client_credential') return err(40002, 'invalid grant_type');
        if (!app) return err(40013, 'invalid appid');
        if (q.secret !== app.secret) return err(40125, 'invalid appsecret');
        const token = randomBytes(24).toString('hex');
        this.appTokens.set(token, app.appId);
        return json({ access_token: token, expires_in: 7200 });
      }
      case 'cgi-bin/qrcode/create': {
        if (req.method !== 'POST') return err(43002, 'require POST method');
        const appId = this.appTokens.get(q.access_token ?? '');
        if (!appId) return err(40001, 'invalid credential, access_token is invalid or not latest');
        const body = JSON.parse((await readBody(req)) || '{}');
        const sceneStr = body?.action_info?.scene?.scene_str;
        if (
          body.action_name !== 'QR_STR_SCENE' ||
          typeof sceneStr !== 'string' ||
          sceneStr.length < 1 ||
          sceneStr.length > 64
        ) {
          return err(40097, 'invalid args');
        }
        const expireSeconds = Math.min(Number(body.expire_seconds) || 60, 2_592_000);
        const ticket = 'gQ' + randomBytes(24).toString('base64');
        this.tickets.set(ticket, { appId, sceneStr, expiresAt: Date.now() + expireSeconds * 1000 });
        return json({
          ticket,
          expire_seconds: expireSeconds,
          url: `http://weixin.qq.com/q/${randomBytes(8).toString('hex')}`,
        });
      }
      case 'cgi-bin/showqrcode': {
        const t = this.tickets.get(q.ticket ?? '');
        if (!t || t.expiresAt < Date.now()) {
          res.statusCode = 404;
          res.end();
          return;
        }
        res.setHeader('content-type', 'image/jpg');
        res.end(Buffer.from([0xff, 0xd8, 0xff, 0xd9]));
        return;
      }
      case 'cgi-bin/user/info': {
        const appId = this.appTokens.get(q.access_token ?? '');
        if (!appId) return err(40001, 'invalid credential, access_token is invalid or not latest');
        const users = [this.user, ...this.knownUsers];
        const user = users.find((x) => this.openidOf(appId, x) === q.openid);
        if (!user) return err(40003, 'invalid openid');
        return json({
          subscribe: 1,
          openid: q.openid,
          nickname: user.nickname,
          headimgurl: user.headimgurl ?? '',
          subscribe_time: Math.floor(Date.now() / 1000),
          ...(user.unionid ? { unionid: user.unionid } : {}),
        });
      }
      default:
        res.statusCode = 404;
        res.end();
    }
  }

  /** Users seen by the official account besides the current one. */
  readonly knownUsers: WechatTestUser[] = [];
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

export function startWechatServer(apps: WechatTestApp[]): Promise<WechatTestServer> {
  return new WechatTestServer(apps).start();
}
