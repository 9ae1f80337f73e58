import { useCallback, useEffect, useState } from 'react';
import { api, messageOf } from '../../api/client';
import { useSession } from '../../api/session';
import type { Factors } from '../../api/types';
import { t } from '../../i18n';
import { Notice, PageTitle, Shell } from '../../ui';
import { IdentitiesSection } from './identities-section';
import { PasskeysSection } from './passkeys-section';
import { PasswordSection } from './password-section';
import { RecoverySection } from './recovery-section';
import { SessionsSection } from './sessions-section';
import { StepUpDialog } from './step-up';
import { TotpSection } from './totp-section';

const SECTIONS = [
  ['password', 'password.title'],
  ['passkeys', 'passkeys.title'],
  ['totp', 'totp.title'],
  ['recovery', 'recovery.title'],
  ['sessions', 'sessions.title'],
  ['identities', 'identities.title'],
] as const;

/** The member's security page: password, passkeys, authenticator app, recovery codes, sessions, linked accounts. */
export function SecurityPage() {
  const { member } = useSession();
  const [factors, setFactors] = useState<Factors | null>(null);
  const [factorsError, setFactorsError] = useState<string | null>(null);
  // A factor change ends the member's other sessions: the sessions list is reloaded with the factors.
  const [sessionsVersion, setSessionsVersion] = useState(0);
  const changed = useCallback(async () => {
    try {
      setFactors(await api<Factors>('GET', '/api/v1/app/security/factors'));
      setFactorsError(null);
    } catch (e) {
      setFactorsError(messageOf(e));
    }
    setSessionsVersion((v) => v + 1);
  }, []);
  useEffect(() => void changed(), [changed]);
  const hasFactor = !!factors && (factors.totp.enabled || factors.passkeys.length > 0);
  return (
    <Shell area="account" wide>
      <PageTitle>{t('security.title')}</PageTitle>
      {member && <p className="intro">{t('security.signedInAs', { name: member.nickname ?? member.username })}</p>}
      <nav aria-label={t('security.nav')} className="toc">
        <ul>
          {SECTIONS.map(([id, key]) => (
            <li key={id}>
              <a href={`#${id}`}>{t(key)}</a>
            </li>
          ))}
        </ul>
      </nav>
      <div className="sections">
        <PasswordSection />
        {factors && <PasskeysSection passkeys={factors.passkeys} changed={changed} />}
        {factors && <TotpSection totp={factors.totp} changed={changed} />}
        {factors && <RecoverySection recovery={factors.recoveryCodes} hasFactor={hasFactor} changed={changed} />}
        {factorsError && <Notice error={factorsError} />}
        <SessionsSection version={sessionsVersion} />
        <IdentitiesSection />
      </div>
      <StepUpDialog factors={factors} />
    </Shell>
  );
}
