import { useState } from 'react';
import { api } from '../../api/client';
import type { Factors } from '../../api/types';
import { t } from '../../i18n';
import { Notice, Section } from '../../ui';
import { forgetRecoveryCodes, showRecoveryCodes, useFreshRecoveryCodes } from './recovery-codes';
import { useAction } from './use-action';

/** Recovery codes: how many are left; new ones on request (step-up), shown once with copy and download. */
export function RecoverySection({
  recovery,
  hasFactor,
  changed,
}: {
  recovery: Factors['recoveryCodes'];
  hasFactor: boolean;
  changed: () => Promise<void>;
}) {
  const fresh = useFreshRecoveryCodes();
  const [copied, setCopied] = useState(false);
  const { busy, error, success, run } = useAction();
  const generate = () =>
    run(async () => {
      const { recoveryCodes } = await api<{ recoveryCodes: string[] }>('POST', '/api/v1/app/security/recovery-codes');
      showRecoveryCodes(recoveryCodes);
      await changed();
    });
  const text = fresh ? `${fresh.join('\n')}\n` : '';
  const copy = () =>
    run(async () => {
      await navigator.clipboard.writeText(text);
      setCopied(true);
    });
  const download = () => {
    const url = URL.createObjectURL(new Blob([text], { type: 'text/plain' }));
    const a = Object.assign(document.createElement('a'), { href: url, download: 'recovery-codes.txt' });
    a.click();
    setTimeout(() => URL.revokeObjectURL(url), 0);
  };
  return (
    <Section id="recovery" title={t('recovery.title')} intro={t('recovery.intro')}>
      {fresh ? (
        <div className="fresh-codes">
          <p className="warning">{t('recovery.showOnce')}</p>
          <ol className="codes" aria-label={t('recovery.title')}>
            {fresh.map((c) => (
              <li key={c}>
                <code>{c}</code>
              </li>
            ))}
          </ol>
          <div className="row">
            <button type="button" onClick={() => void copy()}>
              {copied ? t('recovery.copied') : t('recovery.copy')}
            </button>
            <button type="button" onClick={download}>
              {t('recovery.download')}
            </button>
            <button
              type="button"
              className="primary"
              onClick={() => {
                setCopied(false);
                forgetRecoveryCodes();
              }}
            >
              {t('recovery.done')}
            </button>
          </div>
        </div>
      ) : (
        <p>{recovery.remaining > 0 ? t('recovery.remaining', { count: recovery.remaining }) : t('recovery.none')}</p>
      )}
      {hasFactor && !fresh && (
        <button type="button" disabled={busy} onClick={() => void generate()}>
          {t('recovery.generate')}
        </button>
      )}
      <Notice error={error} success={success} />
    </Section>
  );
}
