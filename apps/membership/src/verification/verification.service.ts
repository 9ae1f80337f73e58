import { Inject, Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { createHmac, randomInt } from 'crypto';
import { BusinessException, ErrorCode, Locale, Msg, msg, translate } from '@app/envelope';
import { addressLimitKey, Clock, SharedState, TimedHolds } from '@app/platform';
import type { MailSender } from '@app/messaging';
import type { SmsSender } from '@app/messaging';
import { MembershipConfig } from '../config/membership.config';
import { SiteConfigService } from '../site-config/site-config.service';
import { TokenSecrets } from '../security/token-secrets';
import { CodeChannel } from './verification-code.entity';
import { VerificationCodesRepository } from './verification-codes.repository';
import { MAIL_SENDER, SMS_SENDER } from './verification.tokens';

export interface CodeTarget {
  channel: CodeChannel;
  /** Phone number or lower-cased email. */
  target: string;
}

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * Verification codes (docs/contract/DECISIONS.md): 6 digits, keyed hash at rest, CODE_TTL_MS expiry, CODE_MAX_ATTEMPTS
 * wrong tries per code, resend interval and daily caps per target and per client IP, and a lock of the
 * target after a code is guessed out, during which no new code is sent.
 */
@Injectable()
export class VerificationService implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('Verification');
  private sweeper?: NodeJS.Timeout;

  constructor(
    private readonly codes: VerificationCodesRepository,
    private readonly state: SharedState,
    private readonly holds: TimedHolds,
    private readonly clock: Clock,
    private readonly secrets: TokenSecrets,
    private readonly config: MembershipConfig,
    @Inject(SMS_SENDER) private readonly sms: SmsSender | null,
    @Inject(MAIL_SENDER) private readonly mail: MailSender | null,
    private readonly site: SiteConfigService,
  ) {}

  onModuleInit(): void {
    this.sweeper = setInterval(() => void this.codes.sweep().catch(() => undefined), 60 * 60 * 1000);
    this.sweeper.unref();
  }

  onModuleDestroy(): void {
    if (this.sweeper) clearInterval(this.sweeper);
  }

  private hash(t: CodeTarget, code: string): string {
    return createHmac('sha256', this.secrets.verificationCode).update(`${t.channel}:${t.target}:${code}`).digest('hex');
  }

  private lockKey(t: CodeTarget): string {
    return `code:lock:${t.channel}:${t.target}`;
  }

  private async assertNotLocked(t: CodeTarget): Promise<void> {
    const ttl = await this.holds.remaining(this.lockKey(t));
    if (ttl > 0) {
      throw new BusinessException(ErrorCode.ACCOUNT_LOCKED, msg('verification.locked'), {
        retryAfterSeconds: Math.ceil(ttl / 1000),
      });
    }
  }

  private async limit(key: string, max: number, windowMs: number, message: Msg): Promise<void> {
    const { count, ttlMs } = await this.state.incr(key, windowMs);
    if (count > max)
      throw new BusinessException(ErrorCode.TOO_MANY_REQUESTS, message, { retryAfterSeconds: Math.ceil(ttlMs / 1000) });
  }

  /** `locale`: the language of the mail (the request's Accept-Language, then DEFAULT_LOCALE); SMS use the vendor's approved template. */
  async send(t: CodeTarget, ip: string, locale: Locale): Promise<{ expiresIn: number; resendIn: number }> {
    const sender = t.channel === 'sms' ? this.sms : this.mail;
    if (!sender)
      throw new BusinessException(
        ErrorCode.SEND_FAILED,
        msg(t.channel === 'sms' ? 'verification.smsNotConfigured' : 'verification.emailNotConfigured'),
      );
    await this.assertNotLocked(t);
    const interval = this.config.CODE_RESEND_INTERVAL_MS;
    const intervalKey = `code:interval:${t.channel}:${t.target}`;
    if (!(await this.holds.start(intervalKey, interval))) {
      const ttl = await this.holds.remaining(intervalKey);
      throw new BusinessException(ErrorCode.TOO_MANY_REQUESTS, msg('verification.resendTooSoon'), {
        retryAfterSeconds: Math.max(1, Math.ceil(ttl / 1000)),
      });
    }
    try {
      await this.limit(
        `code:daily:${t.channel}:${t.target}`,
        this.config.CODE_DAILY_LIMIT_PER_TARGET,
        DAY_MS,
        msg('verification.dailyTargetLimit'),
      );
      await this.limit(
        `code:daily-ip:${addressLimitKey(ip, this.config.RATE_LIMIT_IPV6_PREFIX)}`,
        this.config.CODE_DAILY_LIMIT_PER_IP,
        DAY_MS,
        msg('verification.dailyIpLimit'),
      );
    } catch (err) {
      await this.state.del(intervalKey);
      throw err;
    }

    const code = String(randomInt(0, 1_000_000)).padStart(6, '0');
    const ttlMs = this.config.CODE_TTL_MS;
    await this.codes.replace({
      channel: t.channel,
      target: t.target,
      codeHash: this.hash(t, code),
      maxAttempts: this.config.CODE_MAX_ATTEMPTS,
      expiresTime: new Date(this.clock.now() + ttlMs),
      ip: ip.slice(0, 64),
    });
    try {
      const minutes = Math.max(1, Math.round(ttlMs / 60_000));
      if (t.channel === 'sms') await this.sms!.sendCode(t.target, code, minutes);
      else await this.mailCode(t.target, code, minutes, locale);
    } catch (err) {
      // The message never left: let the member retry at once.
      await this.state.del(intervalKey);
      this.logger.warn(`sending a code by ${sender.name} failed: ${(err as Error).message}`);
      throw new BusinessException(ErrorCode.SEND_FAILED, msg('verification.sendFailed'));
    }
    return { expiresIn: ttlMs, resendIn: interval };
  }

  /** The code by mail in the reader's language, naming the site as its settings do (site.name). */
  private async mailCode(email: string, code: string, minutes: number, locale: Locale): Promise<void> {
    const site = await this.site.siteName();
    await this.mail!.send(email, {
      subject: translate(locale, 'verification.mailSubject', { site }),
      text: translate(locale, 'verification.mailText', { site, code, minutes }),
    });
  }

  /** Checks a code; `consume` uses it up (login, reset) while a plain check leaves it usable. Throws 10003 / 10008. */
  async check(t: CodeTarget, code: string, consume: boolean): Promise<void> {
    await this.assertNotLocked(t);
    const { result, attemptsLeft } = await this.codes.attempt(
      t.channel,
      t.target,
      this.hash(t, code),
      consume,
      new Date(this.clock.now()),
    );
    if (result === 'matched') return;
    if ((result === 'wrong' && attemptsLeft <= 0) || result === 'exhausted') {
      await this.holds.start(this.lockKey(t), this.config.CODE_LOCK_MS);
    }
    const text =
      result === 'wrong' && attemptsLeft > 0
        ? msg('verification.codeInvalidTriesLeft', { tries: attemptsLeft })
        : msg('verification.codeInvalid');
    throw new BusinessException(ErrorCode.CODE_INVALID, text);
  }
}
