import type { INestApplication } from '@nestjs/common';
import { FactorSettingsService } from '../../apps/membership/src/factors/factor-settings.service';
import type { Member } from '../../apps/membership/src/members/member.entity';
import { requesterOf } from './requesters';
import { AuthenticatorTraits, SoftwareAuthenticator } from './software-authenticator';
import { totpCode } from './totp';

/**
 * Gives `member` a confirmed authenticator app the way the security page does (FactorSettingsService),
 * with the code of the step at `now`, which is then used up: move the clock a step before the next code.
 * The recovery codes come when it is the member's first factor.
 */
export async function enrolTotp(
  app: INestApplication,
  member: Member,
  now: number,
): Promise<{ secret: string; recoveryCodes: string[] | null }> {
  const settings = app.get(FactorSettingsService);
  const { secret } = await settings.beginTotp(member);
  const recoveryCodes = await settings.confirmTotp(requesterOf(member), totpCode(secret, now));
  return { secret, recoveryCodes };
}

/**
 * Adds a passkey on a new software authenticator to `member` the way the security page does (the app
 * must run with WEBAUTHN_ENV); the authenticator, the passkey and, for a first factor, the recovery codes.
 */
export async function addPasskey(app: INestApplication, member: Member, traits: Partial<AuthenticatorTraits> = {}) {
  const settings = app.get(FactorSettingsService);
  const authenticator = new SoftwareAuthenticator(traits);
  const credential = authenticator.register(await settings.passkeyOptions(member));
  const added = await settings.addPasskey(requesterOf(member), credential, 'Laptop');
  return { authenticator, ...added };
}
