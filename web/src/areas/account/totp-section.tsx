import { useState } from 'react';
import { api } from '../../api/client';
import type { Factors, TotpEnrolment } from '../../api/types';
import { t } from '../../i18n';
import { Notice, Section } from '../../ui';
import { CodeForm, TotpSecret } from './challenge-page';
import { showRecoveryCodes } from './recovery-codes';
import { useAction } from './use-action';

/** The authenticator app: set up (QR + first code), turn off (step-up). */
export function TotpSection({ totp, changed }: { totp: Factors['totp']; changed: () => Promise<void> }) {
  const [enrolment, setEnrolment] = useState<TotpEnrolment | null>(null);
  const { busy, error, success, run } = useAction();
  const start = () => run(async () => setEnrolment(await api<TotpEnrolment>('POST', '/api/v1/app/security/totp')));
  const confirm = async (code: string) => {
    await run(async () => {
      const { recoveryCodes } = await api<{ recoveryCodes: string[] | null }>(
        'POST',
        '/api/v1/app/security/totp/confirm',
        { code },
      );
      setEnrolment(null);
      showRecoveryCodes(recoveryCodes);
      await changed();
    }, t('totp.enabled'));
  };
  const disable = () =>
    run(async () => {
      await api('DELETE', '/api/v1/app/security/totp');
      await changed();
    }, t('totp.disabled'));
  return (
    <Section id="totp" title={t('totp.title')} intro={t('totp.intro')}>
      <p>
        <span className={totp.enabled ? 'badge on' : 'badge'}>{totp.enabled ? t('totp.on') : t('totp.off')}</span>
      </p>
      {totp.enabled ? (
        <button type="button" className="danger" disabled={busy} onClick={() => void disable()}>
          {t('totp.disable')}
        </button>
      ) : enrolment ? (
        <CodeForm
          title={t('totp.enable')}
          label={t('totp.code')}
          action={t('totp.confirm')}
          numeric
          busy={busy}
          submit={confirm}
        >
          <TotpSecret enrolment={enrolment} />
        </CodeForm>
      ) : (
        <button type="button" className="primary" disabled={busy} onClick={() => void start()}>
          {t('totp.enable')}
        </button>
      )}
      <Notice error={error} success={success} />
    </Section>
  );
}
