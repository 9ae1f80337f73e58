import { Injectable } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { SharedState } from '@app/platform';
import { WechatApiClient, WechatApiError } from '@app/wechat';
import { OAuth2ClientRegistration } from './clients/oauth2-client-registration';

/** Refresh this long before WeChat's own expiry so no request carries a token about to lapse. */
const REFRESH_MARGIN_MS = 5 * 60_000;

/** A refusal of WeChat's token endpoint is answered from shared state this long, without asking again. */
const FAILURE_MEMORY_MS = 10_000;

/**
 * The official account's access token, cached centrally (SharedState) so every replica shares one
 * token; WeChat invalidates the previous token on each refresh, so only one replica fetches at a time.
 * Anonymous requests reach this (POST mp/qrcode), so their cost is bounded: on a replica, concurrent
 * callers share one wait (not one polling loop each), and a refusal (an IP allow-list problem, a wrong
 * secret) is remembered for FAILURE_MEMORY_MS by every replica, so WeChat's small daily quota of token
 * calls is not spent once per request while it refuses.
 */
@Injectable()
export class WechatAccessTokenService {
  private readonly waiting = new Map<string, Promise<string>>();

  constructor(
    private readonly wechat: WechatApiClient,
    private readonly shared: SharedState,
  ) {}

  async get(reg: OAuth2ClientRegistration): Promise<string> {
    const key = `wechat:access-token:${reg.clientId}`;
    const cached = await this.shared.get(key);
    if (cached) return cached;
    let wait = this.waiting.get(key);
    if (!wait) {
      wait = this.fetch(reg, key).finally(() => this.waiting.delete(key));
      this.waiting.set(key, wait);
    }
    return wait;
  }

  private async fetch(reg: OAuth2ClientRegistration, key: string): Promise<string> {
    for (let attempt = 0; attempt < 50; attempt++) {
      const cached = await this.shared.get(key);
      if (cached) return cached;
      const failed = await this.shared.get(`${key}:failed`);
      if (failed) {
        const { errcode, errmsg } = JSON.parse(failed) as { errcode: number; errmsg: string };
        throw new WechatApiError(errcode, errmsg, 'cgi-bin/token');
      }
      if (await this.shared.setIfAbsent(`${key}:refresh`, '1', 15_000)) {
        try {
          const t = await this.wechat.accessToken(reg.clientId, reg.clientSecret);
          const ttl = Math.max(60_000, t.expires_in * 1000 - REFRESH_MARGIN_MS);
          await this.shared.set(key, t.access_token, ttl);
          return t.access_token;
        } catch (e) {
          const refusal =
            e instanceof WechatApiError
              ? { errcode: e.errcode, errmsg: e.errmsg }
              : { errcode: -1, errmsg: 'WeChat could not be reached' };
          await this.shared.set(`${key}:failed`, JSON.stringify(refusal), FAILURE_MEMORY_MS);
          throw e;
        } finally {
          await this.shared.del(`${key}:refresh`);
        }
      }
      await sleep(100);
    }
    throw new WechatApiError(-2, 'access token refresh is taking too long', 'cgi-bin/token');
  }

  /** Drops a token WeChat reported as invalid (40001/42001) so the next call fetches a new one. */
  async invalidate(reg: OAuth2ClientRegistration, token: string): Promise<void> {
    const key = `wechat:access-token:${reg.clientId}`;
    if ((await this.shared.get(key)) === token) await this.shared.del(key);
  }

  /** Runs a call with the cached token, refreshing once if WeChat says the token is no longer valid. */
  async withToken<T>(reg: OAuth2ClientRegistration, call: (token: string) => Promise<T>): Promise<T> {
    const token = await this.get(reg);
    try {
      return await call(token);
    } catch (e) {
      if (!(e instanceof WechatApiError) || !e.isAccessTokenInvalid) throw e;
      await this.invalidate(reg, token);
      return call(await this.get(reg));
    }
  }
}
