import { ErrorCode } from '@app/envelope';
import { RunningApp, startMembership } from '../../../../test/support/apps';
import { FakeClock } from '../../../../test/support/clock';
import { queryRows } from '../../../../test/support/database';
import { clientFacts } from '../../../../test/membership/client-facts';
import { principalOf } from '../../../../test/membership/requesters';
import { MembershipConfig } from '../config/membership.config';
import { FactorStrength } from '../factors/factor-strength';
import { MembersService } from '../members/members.service';
import { SessionsService } from '../sessions/sessions.service';
import { AccessTokenClaims, AccessTokenService } from './access-token.service';
import { LoginService } from './login.service';
import { TokenRefreshService } from './token-refresh.service';

// The real use case on a real database, with the app's clock moved to the end of a token's life.
describe('TokenRefreshService: a new access token by refresh token or by a nearly expired one', () => {
  const clock = new FakeClock();
  let app: RunningApp;
  let refreshes: TokenRefreshService;
  let members: MembersService;
  let config: MembershipConfig;
  let run = 0;

  /** A member signed in with a phone code and an authenticator app (the session's amr and login type are what refresh keeps). */
  const signedIn = async (roles: string[] = []) => {
    const member = await members.create({ username: `refresh_spec_${++run}`, roles }, { method: 'password' });
    const login = await app.app.get(LoginService).completeLogin(member, 'phone', clientFacts(), undefined, {
      amr: ['sms', 'otp', 'mfa'],
      factorStrength: FactorStrength.TOTP,
    });
    return { member, login };
  };
  const claimsOf = (token: string) => app.app.get(AccessTokenService).verify(token)!;

  beforeAll(async () => {
    app = await startMembership({ LOG_LEVEL: 'silent' }, { clock });
    refreshes = app.app.get(TokenRefreshService);
    members = app.app.get(MembersService);
    config = app.app.get(MembershipConfig);
  });
  afterAll(() => app?.close());

  it("rotates the refresh token and answers the session's sign-in for the member as they are now", async () => {
    const { member, login } = await signedIn();
    await members.updateProfile(member.id, { nickname: 'Renamed' });
    await members.addRole(member.id, 'viewer');
    const refreshed = await refreshes.refresh(login.refreshToken);
    expect(refreshed).toEqual({
      memberId: member.id,
      username: member.username,
      nickname: 'Renamed',
      avatarUrl: null,
      token: expect.any(String),
      refreshToken: expect.any(String),
      tokenType: 'Bearer',
      expiresIn: config.ACCESS_TOKEN_TTL,
      refreshExpiresIn: config.REFRESH_TOKEN_TTL,
    });
    expect(refreshed.refreshToken).not.toBe(login.refreshToken);
    expect(claimsOf(refreshed.token)).toMatchObject({
      sid: claimsOf(login.token).sid,
      loginType: 'phone',
      amr: ['sms', 'otp', 'mfa'],
      roles: ['viewer'],
    });
    expect((await refreshes.refresh(refreshed.refreshToken)).memberId).toBe(member.id);
  });

  it('refuses a member no longer active and ends the session', async () => {
    const { member, login } = await signedIn();
    await queryRows(app.dbUrl, `UPDATE members SET status = 'disabled' WHERE id = $1`, [member.id]);
    await expect(refreshes.refresh(login.refreshToken)).rejects.toMatchObject({
      code: ErrorCode.UNAUTHORIZED,
      message: 'Refresh token is invalid, expired or revoked',
    });
    const [session] = await queryRows(app.dbUrl, `SELECT revoked_reason FROM member_sessions WHERE id = $1`, [
      claimsOf(login.token).sid,
    ]);
    expect(session.revoked_reason).toBe('member_disabled');
    // Enabled again, the member signs in anew: the ended session stays ended.
    await queryRows(app.dbUrl, `UPDATE members SET status = 'active' WHERE id = $1`, [member.id]);
    await expect(refreshes.refresh(login.refreshToken)).rejects.toMatchObject({ code: ErrorCode.UNAUTHORIZED });
    expect(await app.app.get(SessionsService).list(member.id)).toEqual([]);
  });

  it('renews an access token only in the last REFRESH_BY_JWT_WINDOW of its life, for the same session, sign-in and roles', async () => {
    const { login } = await signedIn(['viewer']);
    const principal = principalOf(app.app, login.token);
    const before = claimsOf(login.token);
    const endsAt = before.exp * 1000;
    clock.advance(endsAt - config.REFRESH_BY_JWT_WINDOW - 1 - clock.now());
    expect(() => refreshes.refreshByJwt(principal)).toThrow(
      expect.objectContaining({
        code: ErrorCode.BAD_REQUEST,
        message: `The token can be renewed only in the last ${config.REFRESH_BY_JWT_WINDOW / 1000} s of its lifetime`,
      }),
    );
    clock.advance(1);
    const renewed = refreshes.refreshByJwt(principal);
    expect(renewed).toEqual({ token: expect.any(String), tokenType: 'Bearer', expiresIn: config.ACCESS_TOKEN_TTL });
    const after = claimsOf(renewed.token);
    expect(after).toMatchObject({
      sub: before.sub,
      sid: before.sid,
      loginType: 'phone',
      amr: ['sms', 'otp', 'mfa'],
      roles: ['viewer'],
    });
    expect(after.jti).not.toBe(before.jti);
    expect(after.exp).toBeGreaterThan(before.exp);
  });

  it('renews a token issued before second factors (no amr) with an empty amr', async () => {
    const { login } = await signedIn();
    const principal = principalOf(app.app, login.token);
    const { amr: _issuedWith, ...older } = principal.claims as AccessTokenClaims;
    clock.advance(older.exp * 1000 - clock.now());
    const renewed = refreshes.refreshByJwt({ ...principal, claims: older });
    expect(claimsOf(renewed.token)).toMatchObject({ sid: older.sid, amr: [], roles: [] });
  });
});
