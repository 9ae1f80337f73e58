import { useEffect, useState } from 'react';
import { api } from '../../api/client';
import { signedOut } from '../../api/session';
import type { ClientSession } from '../../api/types';
import { formatDateTime, MessageKey, t } from '../../i18n';
import { navigate } from '../../router';
import { Notice, Section } from '../../ui';
import { useAction } from './use-action';

/** How a session was signed in: its `amr` (RFC 8176 values) when the server gives it, else its login type. */
function methodsOf(s: ClientSession): string {
  const byAmr: Record<string, MessageKey | undefined> = {
    pwd: 'method.password',
    sms: 'method.phone',
    otp: 'method.otp',
    hwk: 'method.passkey',
    swk: 'method.passkey',
    oauth: 'method.oauth',
  };
  const byType: Record<string, MessageKey | undefined> = {
    password: 'method.password',
    phone: 'method.phone',
    register: 'method.register',
    wechat: 'method.wechat',
    'wechat-mp': 'method.wechat',
  };
  if (s.amr?.length)
    return [...new Set(s.amr.map((a) => byAmr[a]).filter((k) => k !== undefined))].map((k) => t(k)).join(' + ');
  const key = byType[s.loginType];
  // A third-party provider's name (github, an OIDC registration) is shown as the server names it.
  return key ? t(key) : s.loginType;
}

/** The member's live sessions (GET /api/v1/app/security/client-sessions) with sign-out per session. */
export function SessionsSection({ version }: { version: number }) {
  const [sessions, setSessions] = useState<ClientSession[] | null>(null);
  const { busy, error, success, run } = useAction();
  const list = () => api<ClientSession[]>('GET', '/api/v1/app/security/client-sessions');
  useEffect(() => void run(async () => setSessions(await list())), [run, version]);
  const signOut = (s: ClientSession) =>
    run(async () => {
      await api('DELETE', `/api/v1/app/security/client-sessions/${encodeURIComponent(s.id)}`);
      if (!s.current) return setSessions(await list());
      // This device's own session: its tokens stopped working.
      signedOut();
      navigate('account', '/sign-in', { replace: true });
    }, t('sessions.signedOut'));
  return (
    <Section id="sessions" title={t('sessions.title')} intro={t('sessions.intro')}>
      {sessions && (
        <div className="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">{t('sessions.device')}</th>
                <th scope="col">{t('sessions.method')}</th>
                <th scope="col">{t('sessions.ip')}</th>
                <th scope="col">{t('sessions.lastActive')}</th>
                <td />
              </tr>
            </thead>
            <tbody>
              {sessions.map((s) => (
                <tr key={s.id} data-session={s.id}>
                  <th scope="row">
                    {s.deviceName}
                    {s.current && <span className="badge">{t('sessions.current')}</span>}
                  </th>
                  <td>{methodsOf(s)}</td>
                  <td>{s.ip ?? '—'}</td>
                  <td>{formatDateTime(s.lastActiveTime)}</td>
                  <td className="actions">
                    <button
                      type="button"
                      disabled={busy}
                      aria-label={t('sessions.signOutLabel', { device: s.deviceName })}
                      onClick={() => void signOut(s)}
                    >
                      {t('sessions.signOut')}
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <Notice error={error} success={success} />
    </Section>
  );
}
