import { ErrorCode } from '@app/envelope';
import { RunningApp, startMembership } from '../../../../test/support/apps';
import { FakeClock } from '../../../../test/support/clock';
import { clientFacts } from '../../../../test/membership/client-facts';
import { FakeAliyun, startFakeAliyun } from '../../../../test/membership/fakes';
import { SessionsService } from '../sessions/sessions.service';
import { VerificationService } from '../verification/verification.service';
import { MemberLoginResponse } from './dtos/member-login.dto';
import { PasswordLoginService } from './password-login.service';
import { PhoneLoginService } from './phone-login.service';

// The real use case on a real database, with the SMS sent to a protocol-true fake (test/membership/fakes.ts).
describe('PhoneLoginService: login with an SMS code', () => {
  const clock = new FakeClock();
  let sms: FakeAliyun;
  let app: RunningApp;
  let phoneLogin: PhoneLoginService;
  let passwordLogin: PasswordLoginService;
  const password = 'correct horse battery';

  const codeFor = async (phone: string, ip: string) => {
    // Past the resend interval of the phone's previous code.
    clock.advance(61_000);
    await app.app.get(VerificationService).send({ channel: 'sms', target: phone }, ip, 'en');
    return sms.lastCode(phone);
  };

  beforeAll(async () => {
    sms = await startFakeAliyun();
    app = await startMembership(
      { ...sms.env, LOG_LEVEL: 'silent', LOGIN_MAX_FAILURES: '10', LOGIN_ACCOUNT_MAX_FAILURES: '2' },
      { clock },
    );
    phoneLogin = app.app.get(PhoneLoginService);
    passwordLogin = app.app.get(PasswordLoginService);
  });
  afterAll(async () => {
    await app?.close();
    await sms?.close();
  });

  it('registers an unknown phone on its first login and opens a session recording the client address and device', async () => {
    const phone = '13800138001';
    const here = clientFacts({ ip: '198.51.100.40' });
    const result = (await phoneLogin.loginByPhone(
      { phone, code: await codeFor(phone, here.ip) },
      here,
    )) as MemberLoginResponse;
    expect(result.token).toEqual(expect.any(String));
    const [session] = await app.app.get(SessionsService).list(result.memberId);
    expect(session).toMatchObject({
      ip: '198.51.100.40',
      deviceName: 'Firefox on Linux',
      loginType: 'phone',
      amr: ['sms'],
    });
  });

  it('makes the client address a known origin of the account: it gets past an account-wide password lock, others do not', async () => {
    const phone = '13800138002';
    const member = await passwordLogin.register({
      username: 'phone_spec_b',
      phone,
      phoneCode: await codeFor(phone, '198.51.100.50'),
      password,
    });
    for (const ip of ['198.51.100.51', '198.51.100.52']) {
      await expect(
        passwordLogin.loginWithPassword({ account: phone, password: 'wrong password' }, clientFacts({ ip })),
      ).rejects.toMatchObject({ code: ErrorCode.BAD_CREDENTIALS });
    }
    const owner = clientFacts({ ip: '198.51.100.53' });
    await expect(passwordLogin.loginWithPassword({ account: phone, password }, owner)).rejects.toMatchObject({
      code: ErrorCode.ACCOUNT_LOCKED,
    });

    expect(await phoneLogin.loginByPhone({ phone, code: await codeFor(phone, owner.ip) }, owner)).toMatchObject({
      memberId: member.memberId,
    });
    expect(await passwordLogin.loginWithPassword({ account: phone, password }, owner)).toMatchObject({
      memberId: member.memberId,
    });
    await expect(
      passwordLogin.loginWithPassword({ account: phone, password }, clientFacts({ ip: '198.51.100.54' })),
    ).rejects.toMatchObject({ code: ErrorCode.ACCOUNT_LOCKED });
  });

  it('refuses a wrong code', async () => {
    const code = await codeFor('13800138003', '198.51.100.60');
    const wrong = `${(Number(code[0]) + 1) % 10}${code.slice(1)}`;
    await expect(phoneLogin.loginByPhone({ phone: '13800138003', code: wrong }, clientFacts())).rejects.toMatchObject({
      code: ErrorCode.CODE_INVALID,
    });
  });
});
