import { useEffect, useState } from 'react';
import { api, publicApi } from '../../api/client';
import type { LinkedIdentity, OAuth2Provider } from '../../api/types';
import { formatDateTime, t } from '../../i18n';
import { href } from '../../router';
import { Notice, Section } from '../../ui';
import { useAction } from './use-action';

interface AuthUrl {
  authorizationUrl: string;
}

/** Linked third-party accounts (GET/DELETE /api/v1/app/oauth2/identities) and the providers still to link. */
export function IdentitiesSection() {
  const [identities, setIdentities] = useState<LinkedIdentity[] | null>(null);
  const [providers, setProviders] = useState<OAuth2Provider[]>([]);
  const { busy, error, success, run } = useAction();
  const list = () => api<LinkedIdentity[]>('GET', '/api/v1/app/oauth2/identities');
  useEffect(() => {
    void run(async () => {
      const [mine, all] = await Promise.all([
        list(),
        publicApi<OAuth2Provider[]>('GET', '/api/v1/admin/auth/oauth2-providers'),
      ]);
      setIdentities(mine);
      setProviders(all);
    });
  }, [run]);
  const unlink = (i: LinkedIdentity) =>
    run(async () => {
      await api('DELETE', `/api/v1/app/oauth2/identities/${encodeURIComponent(i.id)}`);
      setIdentities(await list());
    }, t('identities.unlinked'));
  // The provider sends the browser back here; the address must be in membership's redirect allowlist (oauth/redirect-allowlist.ts).
  const link = (p: OAuth2Provider) =>
    run(async () => {
      const back = new URL(href('account', '/security'), location.origin).toString();
      const { authorizationUrl } = await api<AuthUrl>(
        'POST',
        `/api/v1/app/oauth2/identities/link/${encodeURIComponent(p.registrationId)}?redirectUri=${encodeURIComponent(back)}`,
      );
      location.assign(authorizationUrl);
    });
  const nameOf = (i: LinkedIdentity) =>
    providers.find((p) => p.registrationId === i.registrationId)?.clientName ?? i.provider;
  const unlinked = providers.filter((p) => !identities?.some((i) => i.registrationId === p.registrationId));
  return (
    <Section id="identities" title={t('identities.title')} intro={t('identities.intro')}>
      {identities && identities.length === 0 && <p>{t('identities.none')}</p>}
      {identities && identities.length > 0 && (
        <ul className="items">
          {identities.map((i) => (
            <li key={i.id} data-identity={i.id}>
              <span className="item-main">
                <strong>{nameOf(i)}</strong> {i.nickname && <span>{i.nickname}</span>}
                <span className="meta">{t('identities.since', { date: formatDateTime(i.createdTime) })}</span>
              </span>
              <button
                type="button"
                disabled={busy}
                aria-label={t('identities.unlinkLabel', { name: nameOf(i) })}
                onClick={() => void unlink(i)}
              >
                {t('identities.unlink')}
              </button>
            </li>
          ))}
        </ul>
      )}
      {unlinked.length > 0 && (
        <div className="row">
          {unlinked.map((p) => (
            <button key={p.registrationId} type="button" disabled={busy} onClick={() => void link(p)}>
              {t('identities.link', { name: p.clientName })}
            </button>
          ))}
        </div>
      )}
      <Notice error={error} success={success} />
    </Section>
  );
}
