import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, messageOf } from '../../api/client';
import { formatDateTime, t } from '../../i18n';
import { Notice } from '../../ui';
import { ConsolePage, useCanWrite } from './console-area';
import type { AdminMember } from './members-page';

interface AdminSession {
  id: string;
  loginType: string;
  deviceName: string | null;
  ip: string | null;
  amr: string[];
  createdTime: string;
  lastActiveTime: string;
}
interface AdminIdentity {
  id: string;
  provider: string;
  nickname: string | null;
  createdTime: string;
}
interface AdminFactors {
  totp: { enabled: boolean };
  passkeys: Array<{ id: string; name: string }>;
  recoveryCodes: { remaining: number };
}

/** One member: profile, sessions (sign out one or all), linked identities, factors (reset), disable/enable. */
export default function MemberPage({ path, id }: { path: string; id: string }) {
  const canWrite = useCanWrite();
  const queries = useQueryClient();
  const base = `/api/v1/admin/members/${encodeURIComponent(id)}`;
  const member = useQuery({ queryKey: ['member', id], queryFn: () => api<AdminMember>('GET', base) });
  const sessions = useQuery({
    queryKey: ['member', id, 'sessions'],
    queryFn: () => api<AdminSession[]>('GET', `${base}/sessions`),
  });
  const identities = useQuery({
    queryKey: ['member', id, 'identities'],
    queryFn: () => api<AdminIdentity[]>('GET', `${base}/identities`),
  });
  const factors = useQuery({
    queryKey: ['member', id, 'factors'],
    queryFn: () => api<AdminFactors>('GET', `${base}/factors`),
  });
  const act = useMutation({
    mutationFn: ({ method, to }: { method: 'POST' | 'DELETE'; to: string; done: string }) =>
      api<unknown>(method, `${base}${to}`),
    onSuccess: () => void queries.invalidateQueries({ queryKey: ['member', id] }),
  });
  const run = (method: 'POST' | 'DELETE', to: string, done: string, question?: string) => {
    if (question && !confirm(question)) return;
    act.mutate({ method, to, done });
  };
  const m = member.data;
  const error = [member.error, act.error].find(Boolean);
  return (
    <ConsolePage path={path} title={m ? t('console.member.title', { name: m.username }) : t('console.nav.members')}>
      <Notice error={error ? messageOf(error) : null} success={act.isSuccess ? act.variables.done : null} />
      {m && (
        <div className="grid-2">
          <section className="card" aria-labelledby="profile">
            <h2 id="profile">{t('console.member.profile')}</h2>
            <dl className="props">
              <dt>ID</dt>
              <dd>{m.id}</dd>
              <dt>{t('console.members.username')}</dt>
              <dd>{m.username}</dd>
              <dt>{t('console.member.nickname')}</dt>
              <dd>{m.nickname ?? '—'}</dd>
              <dt>{t('console.member.email')}</dt>
              <dd>{m.email ?? '—'}</dd>
              <dt>{t('console.member.phone')}</dt>
              <dd>{m.phone ?? '—'}</dd>
              <dt>{t('console.members.roles')}</dt>
              <dd>{m.roles.join(', ') || '—'}</dd>
              <dt>{t('console.keys.status')}</dt>
              <dd>
                <span className={`badge ${m.status === 'active' ? 'on' : ''}`} data-testid="member-status">
                  {t(`console.members.status.${m.status}`)}
                </span>
              </dd>
              <dt>{t('console.key.created')}</dt>
              <dd>{formatDateTime(m.createdTime)}</dd>
            </dl>
            {canWrite && (
              <div className="row end">
                {m.status === 'active' ? (
                  <button
                    type="button"
                    className="danger"
                    disabled={act.isPending}
                    onClick={() =>
                      run('POST', '/disable', t('console.member.disabled'), t('console.member.disableConfirm'))
                    }
                  >
                    {t('console.member.disable')}
                  </button>
                ) : (
                  <button
                    type="button"
                    disabled={act.isPending}
                    onClick={() => run('POST', '/enable', t('console.member.enabled'))}
                  >
                    {t('console.member.enable')}
                  </button>
                )}
              </div>
            )}
          </section>
          <section className="card" aria-labelledby="factors">
            <h2 id="factors">{t('console.member.factors')}</h2>
            {factors.data && (
              <ul className="plain-list">
                <li>
                  {t('console.member.totp')}: {factors.data.totp.enabled ? t('totp.on') : t('console.member.off')}
                </li>
                <li>
                  {t('console.member.passkeys')}: {factors.data.passkeys.length}
                </li>
                <li>
                  {t('console.member.recoveryCodes')}: {factors.data.recoveryCodes.remaining}
                </li>
              </ul>
            )}
            {canWrite && (
              <div className="row end">
                <button
                  type="button"
                  className="danger"
                  disabled={act.isPending}
                  onClick={() =>
                    run('DELETE', '/factors', t('console.member.factorsReset'), t('console.member.resetConfirm'))
                  }
                >
                  {t('console.member.resetFactors')}
                </button>
              </div>
            )}
          </section>
        </div>
      )}
      <section className="card" aria-labelledby="sessions">
        <div className="page-head">
          <h2 id="sessions">{t('console.member.sessions')}</h2>
          {canWrite && (sessions.data?.length ?? 0) > 0 && (
            <button
              type="button"
              className="danger"
              disabled={act.isPending}
              onClick={() =>
                run('DELETE', '/sessions', t('console.member.signedOutAll'), t('console.member.signOutAllConfirm'))
              }
            >
              {t('console.member.signOutAll')}
            </button>
          )}
        </div>
        <ul className="items">
          {(sessions.data ?? []).map((s) => (
            <li key={s.id}>
              <div className="item-main">
                <strong>{s.deviceName ?? s.loginType}</strong>
                <span className="meta">
                  {s.ip ?? '—'} · {s.amr.join(', ')} ·{' '}
                  {t('console.member.lastActive', { time: formatDateTime(s.lastActiveTime) })}
                </span>
              </div>
              {canWrite && (
                <button
                  type="button"
                  disabled={act.isPending}
                  onClick={() => run('DELETE', `/sessions/${s.id}`, t('console.member.signedOut'))}
                >
                  {t('console.member.signOut')}
                </button>
              )}
            </li>
          ))}
        </ul>
        {sessions.data?.length === 0 && <p className="empty-note">{t('console.member.noSessions')}</p>}
      </section>
      <section className="card" aria-labelledby="identities">
        <h2 id="identities">{t('console.member.identities')}</h2>
        <ul className="items">
          {(identities.data ?? []).map((i) => (
            <li key={i.id}>
              <div className="item-main">
                <strong>{i.provider}</strong>
                <span className="meta">
                  {i.nickname ?? '—'} · {formatDateTime(i.createdTime)}
                </span>
              </div>
            </li>
          ))}
        </ul>
        {identities.data?.length === 0 && <p className="empty-note">{t('console.member.noIdentities')}</p>}
      </section>
    </ConsolePage>
  );
}
