import { Injectable } from '@nestjs/common';
import { BusinessException, ErrorCode, msg } from '@app/envelope';
import { Clock, networkLimitKey, SharedState } from '@app/platform';
import { MembershipConfig } from '../config/membership.config';
import { OAuth2ClientRegistration } from './clients/oauth2-client-registration';

const HOUR_MS = 60 * 60_000;
/** The counter outlives its hour by a few minutes: the replicas' clocks differ a little. */
const COUNTER_SLACK_MS = 5 * 60_000;

/**
 * The official account's `qrcode/create` calls per hour of the Clock, counted in shared state by every
 * replica (one atomic increment per call, so exact with any number of them). WeChat gives an account
 * 100,000 such calls a day, shared with everything else that account does; strangers reach this through
 * POST mp/qrcode, so WECHAT_QR_MAX_PER_HOUR (default 2000, 48,000 a day) keeps them from spending the
 * day's quota and locking everyone out of scan login until WeChat's next day. Asked after the route's
 * per-address limit (wechat-oauth2.controller.ts), which counts an IPv6 caller by its /64: a caller
 * holding many /64s (one /56 is 256 of them) would still spend the hour alone, so each client network
 * (IPv4 /24, IPv6 /48: networkLimitKey) has its own share of the hour, WECHAT_QR_NETWORK_SHARE_PERCENT
 * of it, counted the same way and checked first: a network past its share does not spend the account's.
 */
@Injectable()
export class WechatQrcodeBudget {
  constructor(
    private readonly state: SharedState,
    private readonly clock: Clock,
    private readonly config: MembershipConfig,
  ) {}

  /**
   * Counts one call for the account and the caller's network, or refuses it (429 with Retry-After: the
   * hour's end) once the network's share or the account's hour is spent.
   */
  async spend(reg: OAuth2ClientRegistration, clientIp: string): Promise<void> {
    const now = this.clock.now();
    const hour = Math.floor(now / HOUR_MS);
    const leftMs = HOUR_MS - (now % HOUR_MS);
    const key = `wechat:qrcode-budget:${reg.clientId}:${hour}`;
    const network = await this.state.incr(`${key}:net:${networkLimitKey(clientIp)}`, leftMs + COUNTER_SLACK_MS);
    if (network.count > this.networkShare) refuse(leftMs);
    const { count } = await this.state.incr(key, leftMs + COUNTER_SLACK_MS);
    if (count > this.config.WECHAT_QR_MAX_PER_HOUR) refuse(leftMs);
  }

  /** Codes one client network may make in an hour: its percent of the account's hour, at least one. */
  private get networkShare(): number {
    const { WECHAT_QR_MAX_PER_HOUR: max, WECHAT_QR_NETWORK_SHARE_PERCENT: percent } = this.config;
    return Math.max(1, Math.floor((max * percent) / 100));
  }
}

function refuse(leftMs: number): never {
  const retryAfterSeconds = Math.max(1, Math.ceil(leftMs / 1000));
  throw new BusinessException(
    ErrorCode.TOO_MANY_REQUESTS,
    msg('wechat.qrBudgetSpent', { seconds: retryAfterSeconds }),
    {
      retryAfterSeconds,
    },
  );
}
