import { FormEvent, useEffect, useId, useState } from 'react';
import { api, messageOf, publicApi } from '../../api/client';
import { t } from '../../i18n';
import { Field, Notice, Section } from '../../ui';
import { useAction } from './use-action';

interface Profile {
  phone: string | null;
  email: string | null;
}

/**
 * PUT /api/v1/app/auth/password: the server ends the member's other sessions. A member without a password
 * (signed up by phone or a third-party account) sets the first one with a code sent to their phone or email.
 */
export function PasswordSection() {
  const [oldPassword, setOld] = useState('');
  const [newPassword, setNew] = useState('');
  const [confirm, setConfirm] = useState('');
  const [first, setFirst] = useState(false);
  const [code, setCode] = useState('');
  const [sentTo, setSentTo] = useState<string | null>(null);
  const [profile, setProfile] = useState<Profile | null>(null);
  const checkboxId = useId();
  const { busy, error, success, run, setError } = useAction();
  useEffect(() => {
    if (first && !profile)
      api<Profile>('GET', '/api/v1/app/auth/profile').then(setProfile, (e) => setError(messageOf(e)));
  }, [first, profile, setError]);
  // The code goes to the phone when there is one (phone sign-ups), else to the email.
  const target = profile?.phone
    ? ({ type: 'sms', phone: profile.phone } as const)
    : profile?.email
      ? ({ type: 'email', email: profile.email } as const)
      : null;
  const targetText = target ? (target.type === 'sms' ? target.phone : target.email) : '';
  const send = () =>
    run(async () => {
      await publicApi('POST', '/api/v1/app/auth/send-code', target);
      setSentTo(targetText);
    });
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (newPassword !== confirm) return setError(t('password.mismatch'));
    const body = first ? { newPassword, type: target?.type, code } : { oldPassword, newPassword };
    const ok = await run(() => api('PUT', '/api/v1/app/auth/password', body), t('password.changed'));
    if (ok) [setOld, setNew, setConfirm, setCode].forEach((set) => set(''));
    if (ok) setFirst(false);
  };
  return (
    <Section id="password" title={t('password.title')} intro={t('password.intro')}>
      <form onSubmit={(e) => void submit(e)} aria-label={t('password.title')}>
        <div className="check">
          <input id={checkboxId} type="checkbox" checked={first} onChange={(e) => setFirst(e.target.checked)} />
          <label htmlFor={checkboxId}>{t('password.noPassword')}</label>
        </div>
        {first ? (
          <>
            {profile && !target && <p className="notice error">{t('password.noTarget')}</p>}
            {target && (
              <div className="row">
                <button type="button" onClick={() => void send()} disabled={busy}>
                  {t('password.sendCode', { target: targetText })}
                </button>
              </div>
            )}
            {sentTo && <p role="status">{t('password.codeSent', { target: sentTo })}</p>}
            <Field
              label={t('password.code')}
              value={code}
              onChange={setCode}
              autoComplete="one-time-code"
              inputMode="numeric"
              pattern="\d{6}"
              maxLength={6}
            />
          </>
        ) : (
          <Field
            label={t('password.old')}
            type="password"
            value={oldPassword}
            onChange={setOld}
            autoComplete="current-password"
            maxLength={128}
          />
        )}
        <Field
          label={t('password.new')}
          type="password"
          value={newPassword}
          onChange={setNew}
          autoComplete="new-password"
          maxLength={128}
        />
        <Field
          label={t('password.confirm')}
          type="password"
          value={confirm}
          onChange={setConfirm}
          autoComplete="new-password"
          maxLength={128}
        />
        <button type="submit" className="primary" disabled={busy}>
          {t('password.submit')}
        </button>
      </form>
      <Notice error={error} success={success} />
    </Section>
  );
}
