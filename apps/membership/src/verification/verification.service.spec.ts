import { ErrorCode } from '@app/envelope';
import { RunningApp, startMembership } from '../../../../test/support/apps';
import { FakeClock } from '../../../../test/support/clock';
import { queryRows } from '../../../../test/support/database';
import { FakeAliyun, startFakeAliyun } from '../../../../test/membership/fakes';
import { CodeTarget, VerificationService } from './verification.service';

const TTL_MS = 300_000;
const RESEND_MS = 60_000;
// Shorter than a code's life, so a guessed-out code is still there when the lock ends.
const LOCK_MS = 120_000;

const wrong = (code: string) => String((Number(code) + 1) % 1_000_000).padStart(6, '0');

// The real use case with SMS through a protocol-true Aliyun fake (test/membership/fakes.ts); cooldowns,
// locks and code expiry by the app's clock, moved here; the daily counters run on real time (a day).
describe('VerificationService: codes by SMS', () => {
  const clock = new FakeClock();
  let sms: FakeAliyun;
  let app: RunningApp;
  let codes: VerificationService;
  let seq = 0;
  /** A fresh phone, and a fresh client address so no test shares another's daily counter. */
  const fresh = (): { t: CodeTarget; ip: string } => {
    seq += 1;
    return { t: { channel: 'sms', target: `1361234${String(seq).padStart(4, '0')}` }, ip: `198.51.100.${seq}` };
  };
  const refusal = (p: Promise<unknown>) =>
    p.then(
      () => null,
      (e: { code: ErrorCode; message: string; extras: { retryAfterSeconds?: number } }) => ({
        code: e.code,
        message: e.message,
        retryAfter: e.extras.retryAfterSeconds,
      }),
    );

  beforeAll(async () => {
    sms = await startFakeAliyun();
    app = await startMembership(
      {
        ...sms.env,
        LOG_LEVEL: 'silent',
        CODE_TTL_MS: String(TTL_MS),
        CODE_RESEND_INTERVAL_MS: String(RESEND_MS),
        CODE_MAX_ATTEMPTS: '3',
        CODE_LOCK_MS: String(LOCK_MS),
        CODE_DAILY_LIMIT_PER_TARGET: '3',
        CODE_DAILY_LIMIT_PER_IP: '2',
      },
      { clock },
    );
    codes = app.app.get(VerificationService);
  });
  afterAll(async () => {
    await app?.close();
    await sms?.close();
  });

  it('sends a code that a check leaves usable and a consuming check uses up; it expires after CODE_TTL_MS by the app clock', async () => {
    const { t, ip } = fresh();
    expect(await codes.send(t, ip, 'en')).toEqual({ expiresIn: TTL_MS, resendIn: RESEND_MS });
    const code = sms.lastCode(t.target);
    const [row] = await queryRows(app.dbUrl, `SELECT code_hash, ip FROM verification_codes WHERE target = $1`, [
      t.target,
    ]);
    expect(row).toEqual({ code_hash: expect.stringMatching(/^[0-9a-f]{64}$/), ip });
    await codes.check(t, code, false);
    await codes.check(t, code, true);
    expect(await refusal(codes.check(t, code, false))).toMatchObject({ code: ErrorCode.CODE_INVALID });

    clock.advance(RESEND_MS);
    await codes.send(t, ip, 'en');
    const next = sms.lastCode(t.target);
    clock.advance(TTL_MS - 1);
    await codes.check(t, next, false);
    clock.advance(1);
    expect(await refusal(codes.check(t, next, true))).toMatchObject({ code: ErrorCode.CODE_INVALID });
  });

  it('counts wrong codes down, and the last one locks the target for CODE_LOCK_MS: checks refused, no code sent', async () => {
    const { t, ip } = fresh();
    await codes.send(t, ip, 'en');
    const code = sms.lastCode(t.target);
    for (const left of [2, 1])
      expect(await refusal(codes.check(t, wrong(code), false))).toEqual({
        code: ErrorCode.CODE_INVALID,
        message: `Verification code is wrong, expired or used up (${left} tries left)`,
        retryAfter: undefined,
      });
    expect(await refusal(codes.check(t, wrong(code), false))).toMatchObject({
      code: ErrorCode.CODE_INVALID,
      message: 'Verification code is wrong, expired or used up',
    });
    const sent = sms.sent.length;
    clock.advance(RESEND_MS);
    for (const locked of [() => codes.check(t, code, true), () => codes.send(t, ip, 'en')])
      expect(await refusal(locked())).toEqual({
        code: ErrorCode.ACCOUNT_LOCKED,
        message: expect.any(String),
        retryAfter: (LOCK_MS - RESEND_MS) / 1000,
      });
    expect(sms.sent.length).toBe(sent);
  });

  it('locks the target again when its guessed-out code is tried after the lock, even with the right code', async () => {
    const { t, ip } = fresh();
    await codes.send(t, ip, 'en');
    const code = sms.lastCode(t.target);
    for (let i = 0; i < 3; i++) await refusal(codes.check(t, wrong(code), false));
    clock.advance(LOCK_MS);
    expect(await refusal(codes.check(t, code, true))).toMatchObject({ code: ErrorCode.CODE_INVALID });
    expect(await refusal(codes.check(t, code, true))).toMatchObject({
      code: ErrorCode.ACCOUNT_LOCKED,
      retryAfter: LOCK_MS / 1000,
    });
  });

  it('refuses any code for a target that was sent none, without ever locking it', async () => {
    const { t } = fresh();
    for (let i = 0; i < 5; i++)
      expect(await refusal(codes.check(t, '123456', false))).toMatchObject({
        code: ErrorCode.CODE_INVALID,
        message: 'Verification code is wrong, expired or used up',
      });
  });

  it('refuses a second code to a target within CODE_RESEND_INTERVAL_MS, from any address', async () => {
    const { t, ip } = fresh();
    await codes.send(t, ip, 'en');
    clock.advance(RESEND_MS - 1000);
    expect(await refusal(codes.send(t, fresh().ip, 'en'))).toMatchObject({
      code: ErrorCode.TOO_MANY_REQUESTS,
      retryAfter: 1,
    });
    clock.advance(1000);
    await codes.send(t, ip, 'en');
  });

  it('a send refused by the daily cap of the address, or by the vendor, leaves the target free to be sent a code at once', async () => {
    const { ip } = fresh();
    await codes.send(fresh().t, ip, 'en');
    await codes.send(fresh().t, ip, 'en');
    const { t, ip: elsewhere } = fresh();
    expect(await refusal(codes.send(t, ip, 'en'))).toMatchObject({
      code: ErrorCode.TOO_MANY_REQUESTS,
      message: 'Daily code limit reached for this client',
    });
    sms.failWith = 'isv.BUSINESS_LIMIT_CONTROL';
    try {
      expect(await refusal(codes.send(t, elsewhere, 'en'))).toMatchObject({ code: ErrorCode.SEND_FAILED });
    } finally {
      sms.failWith = null;
    }
    await codes.send(t, elsewhere, 'en');
    await codes.check(t, sms.lastCode(t.target), true);
  });

  it('counts the addresses of one IPv6 /64 as one client for the daily cap', async () => {
    await codes.send(fresh().t, '2001:db8:7:1::1', 'en');
    await codes.send(fresh().t, '2001:db8:7:1::2', 'en');
    expect(await refusal(codes.send(fresh().t, '2001:db8:7:1:abcd::3', 'en'))).toMatchObject({
      code: ErrorCode.TOO_MANY_REQUESTS,
    });
    await codes.send(fresh().t, '2001:db8:7:2::1', 'en');
  });

  it('refuses more than CODE_DAILY_LIMIT_PER_TARGET codes a day to one target', async () => {
    const { t } = fresh();
    for (let i = 0; i < 3; i++) {
      await codes.send(t, fresh().ip, 'en');
      clock.advance(RESEND_MS);
    }
    expect(await refusal(codes.send(t, fresh().ip, 'en'))).toMatchObject({
      code: ErrorCode.TOO_MANY_REQUESTS,
      message: 'Daily code limit reached for this target',
    });
  });
});
