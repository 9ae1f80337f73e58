import { Injectable } from '@nestjs/common';
import type { PublicKeyCredentialCreationOptionsJSON, RegistrationResponseJSON } from '@simplewebauthn/server';
import type { AuditContext } from '@app/audit';
import { BusinessException, ErrorCode, Locale, msg } from '@app/envelope';
import { MembershipConfig } from '../config/membership.config';
import { Member } from '../members/member.entity';
import { SiteConfigService } from '../site-config/site-config.service';
import { PasskeyAddedView, PasskeyView, passkeyView, FactorsView, TotpEnrolmentView } from './dtos/factor-views.dto';
import { FactorChange, FactorChangeRecord } from './factor-change';
import { FactorNotices } from './factor-notices';
import { FactorStrength } from './factor-strength';
import { FactorsRepository } from './factors.repository';
import { PasskeysService } from './passkeys.service';
import { RecoveryCodesService } from './recovery-codes.service';
import { SecondFactorsService } from './second-factors.service';
import { StepUpService } from './step-up.service';
import { TotpService } from './totp.service';

/**
 * Who asks for a change: the member, the session making the request (kept; others end), the language of
 * notices, and the request's audit facts (the actor is the member: memberActing in requester.ts).
 */
export interface Requester {
  member: Member;
  sessionId?: string;
  locale: Locale;
  audit: AuditContext;
}

/**
 * Adding and removing a member's factors. Every change ends the member's other sessions and is
 * announced (FactorNotices); removing needs a step-up (StepUpService), checked here so the enrolment
 * at sign-in (auth/'s enforcement) and the security endpoints share one rule. The first factor a
 * member adds comes with recovery codes; removing the last one drops them.
 */
@Injectable()
export class FactorSettingsService {
  constructor(
    private readonly totp: TotpService,
    private readonly passkeys: PasskeysService,
    private readonly recovery: RecoveryCodesService,
    private readonly factors: SecondFactorsService,
    private readonly repo: FactorsRepository,
    private readonly stepUp: StepUpService,
    private readonly notices: FactorNotices,
    private readonly site: SiteConfigService,
    private readonly config: MembershipConfig,
  ) {}

  async overview(member: Member, sessionId: string): Promise<FactorsView> {
    const [summary, passkeys, stepUp] = await Promise.all([
      this.factors.of(member.id),
      this.passkeys.list(member.id),
      this.stepUp.status(member.id, sessionId),
    ]);
    return {
      totp: { enabled: summary.totp, createdTime: summary.totpTime },
      passkeys: passkeys.map(passkeyView),
      recoveryCodes:
        summary.strength === FactorStrength.NONE
          ? { remaining: 0, createdTime: null }
          : { remaining: summary.recoveryCodes, createdTime: summary.recoveryCodesTime },
      stepUp,
      mfaRequiredByRole: this.mfaRequiredByRole(member),
    };
  }

  /** Whether the member holds a role of MFA_REQUIRED_ROLES. */
  mfaRequiredByRole(member: Member): boolean {
    const required = this.config.MFA_REQUIRED_ROLES.split(',')
      .map((r) => r.trim())
      .filter((r) => r && r !== 'none');
    return member.roles.some((r) => required.includes(r));
  }

  async beginTotp(member: Member): Promise<TotpEnrolmentView> {
    return this.totp.begin(member.id, accountLabel(member), await this.site.siteName());
  }

  async confirmTotp(who: Requester, code: string): Promise<string[] | null> {
    const before = await this.factors.of(who.member.id);
    await this.totp.confirm(who.member.id, code, {
      ...changeOf(who, 'totp_enabled'),
      firstFactor: before.strength === FactorStrength.NONE,
    });
    const codes = before.strength === FactorStrength.NONE ? await this.recovery.regenerate(who.member.id) : null;
    await this.notices.factorChanged(who.member, 'notice.totpEnabled', who.locale, who.sessionId);
    return codes;
  }

  async disableTotp(who: Requester): Promise<void> {
    await this.stepUp.assert(who.member.id, who.sessionId);
    if (!(await this.totp.disable(who.member.id, changeOf(who, 'totp_disabled'))))
      throw new BusinessException(ErrorCode.CONFLICT, msg('factors.totpNotEnabled'));
    await this.afterRemoval(who.member.id);
    await this.notices.factorChanged(who.member, 'notice.totpDisabled', who.locale, who.sessionId);
  }

  async passkeyOptions(member: Member): Promise<PublicKeyCredentialCreationOptionsJSON> {
    const label = accountLabel(member);
    return this.passkeys.registrationOptions(member.id, label, member.nickname ?? label, await this.site.siteName());
  }

  async addPasskey(
    who: Requester,
    credential: RegistrationResponseJSON,
    name: string | undefined,
  ): Promise<PasskeyAddedView> {
    const before = await this.factors.of(who.member.id);
    const added = await this.passkeys.register(who.member.id, credential, name ?? 'Passkey', {
      ...changeOf(who, 'passkey_added'),
      firstFactor: before.strength === FactorStrength.NONE,
    });
    const codes = before.strength === FactorStrength.NONE ? await this.recovery.regenerate(who.member.id) : null;
    await this.notices.factorChanged(who.member, 'notice.passkeyAdded', who.locale, who.sessionId, {
      name: added.name,
    });
    return { passkey: passkeyView(added), recoveryCodes: codes };
  }

  async listPasskeys(member: Member): Promise<PasskeyView[]> {
    return (await this.passkeys.list(member.id)).map(passkeyView);
  }

  async renamePasskey(member: Member, id: string, name: string): Promise<PasskeyView> {
    const renamed = await this.passkeys.rename(member.id, id, name);
    if (!renamed) throw new BusinessException(ErrorCode.NOT_FOUND, msg('factors.passkeyNotFound'));
    return passkeyView(renamed);
  }

  async removePasskey(who: Requester, id: string): Promise<void> {
    await this.stepUp.assert(who.member.id, who.sessionId);
    const name = await this.passkeys.remove(who.member.id, id, changeOf(who, 'passkey_removed'));
    if (name === null) throw new BusinessException(ErrorCode.NOT_FOUND, msg('factors.passkeyNotFound'));
    await this.afterRemoval(who.member.id);
    await this.notices.factorChanged(who.member, 'notice.passkeyRemoved', who.locale, who.sessionId, { name });
  }

  async regenerateRecoveryCodes(who: Requester): Promise<string[]> {
    if ((await this.factors.of(who.member.id)).strength === FactorStrength.NONE)
      throw new BusinessException(ErrorCode.CONFLICT, msg('factors.noFactor'));
    await this.stepUp.assert(who.member.id, who.sessionId);
    const codes = await this.recovery.regenerate(who.member.id, changeOf(who, 'recovery_codes_regenerated'));
    await this.notices.factorChanged(who.member, 'notice.recoveryCodesRegenerated', who.locale, who.sessionId);
    return codes;
  }

  /** Recovery codes stand in for a factor; with none left they would be a way in on their own. */
  private async afterRemoval(memberId: string): Promise<void> {
    if ((await this.factors.of(memberId)).strength === FactorStrength.NONE)
      await this.repo.deleteRecoveryCodes(memberId);
  }
}

function changeOf(who: Requester, change: FactorChange): FactorChangeRecord {
  return { ctx: who.audit, memberId: who.member.id, change };
}

/** The account name shown in the authenticator app and the passkey prompt. */
function accountLabel(m: Member): string {
  return m.username ?? m.email ?? m.phone ?? `member ${m.id}`;
}
