import { FormEvent, useState } from 'react';
import { api } from '../../api/client';
import { t } from '../../i18n';
import { Field, Notice, Section } from '../../ui';
import { useAction } from './use-action';

/** PUT /api/v1/app/auth/password: the server ends the member's other sessions. */
export function PasswordSection() {
  const [oldPassword, setOld] = useState('');
  const [newPassword, setNew] = useState('');
  const [confirm, setConfirm] = useState('');
  const { busy, error, success, run, setError } = useAction();
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (newPassword !== confirm) return setError(t('password.mismatch'));
    const ok = await run(() => api('PUT', '/api/v1/app/auth/password', { oldPassword, newPassword }), t('password.changed'));
    if (ok) [setOld, setNew, setConfirm].forEach((set) => set(''));
  };
  return (
    <Section id="password" title={t('password.title')} intro={t('password.intro')}>
      <form onSubmit={(e) => void submit(e)} aria-label={t('password.title')}>
        <Field label={t('password.old')} type="password" value={oldPassword} onChange={setOld} autoComplete="current-password" maxLength={128} />
        <Field label={t('password.new')} type="password" value={newPassword} onChange={setNew} autoComplete="new-password" maxLength={128} />
        <Field label={t('password.confirm')} type="password" value={confirm} onChange={setConfirm} autoComplete="new-password" maxLength={128} />
        <button type="submit" className="primary" disabled={busy}>
          {t('password.submit')}
        </button>
      </form>
      <Notice error={error} success={success} />
    </Section>
  );
}
