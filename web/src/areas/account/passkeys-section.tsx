import { startRegistration } from '@simplewebauthn/browser';
import { FormEvent, useState } from 'react';
import { api, ApiError } from '../../api/client';
import type { Passkey, PublicKeyCredentialCreationOptionsJSON } from '../../api/types';
import { formatDateTime, t } from '../../i18n';
import { Field, Notice, Section } from '../../ui';
import { showRecoveryCodes } from './recovery-codes';
import { useAction } from './use-action';

interface Props {
  passkeys: Passkey[];
  /** Reloads the factors (and the sessions: a factor change ends the other ones). */
  changed: () => Promise<void>;
}

/** Passkeys: add (WebAuthn registration), rename, delete (step-up). */
export function PasskeysSection({ passkeys, changed }: Props) {
  const [name, setName] = useState('');
  const [renaming, setRenaming] = useState<string | null>(null);
  const { busy, error, success, run } = useAction();
  const add = (e: FormEvent) => {
    e.preventDefault();
    void run(async () => {
      const optionsJSON = await api<PublicKeyCredentialCreationOptionsJSON>(
        'POST',
        '/api/v1/app/security/passkeys/options',
      );
      const credential = await startRegistration({ optionsJSON }).catch(() => {
        throw new ApiError(0, 0, t('passkeys.failed'));
      });
      const added = await api<{ recoveryCodes: string[] | null }>('POST', '/api/v1/app/security/passkeys', {
        credential,
        ...(name.trim() ? { name: name.trim() } : {}),
      });
      showRecoveryCodes(added.recoveryCodes);
      setName('');
      await changed();
    }, t('passkeys.added'));
  };
  const remove = (p: Passkey) =>
    run(async () => {
      await api('DELETE', `/api/v1/app/security/passkeys/${encodeURIComponent(p.id)}`);
      await changed();
    }, t('passkeys.deleted'));
  return (
    <Section id="passkeys" title={t('passkeys.title')} intro={t('passkeys.intro')}>
      {passkeys.length === 0 ? (
        <p>{t('passkeys.none')}</p>
      ) : (
        <ul className="items">
          {passkeys.map((p) =>
            renaming === p.id ? (
              <li key={p.id} data-passkey={p.id}>
                <RenameForm
                  passkey={p}
                  busy={busy}
                  done={() => setRenaming(null)}
                  save={(to) =>
                    run(
                      async () => (
                        await api('PATCH', `/api/v1/app/security/passkeys/${encodeURIComponent(p.id)}`, { name: to }),
                        await changed()
                      ),
                    )
                  }
                />
              </li>
            ) : (
              <li key={p.id} data-passkey={p.id}>
                <span className="item-main">
                  <strong>{p.name}</strong>
                  {p.backedUp && <span className="badge">{t('passkeys.synced')}</span>}
                  <span className="meta">
                    {t('passkeys.created', { date: formatDateTime(p.createdTime) })}
                    {p.lastUsedTime && ` · ${t('passkeys.lastUsed', { date: formatDateTime(p.lastUsedTime) })}`}
                  </span>
                </span>
                <span className="row">
                  <button
                    type="button"
                    disabled={busy}
                    aria-label={t('passkeys.renameLabel', { name: p.name })}
                    onClick={() => setRenaming(p.id)}
                  >
                    {t('passkeys.rename')}
                  </button>
                  <button
                    type="button"
                    className="danger"
                    disabled={busy}
                    aria-label={t('passkeys.deleteLabel', { name: p.name })}
                    onClick={() => void remove(p)}
                  >
                    {t('passkeys.delete')}
                  </button>
                </span>
              </li>
            ),
          )}
        </ul>
      )}
      <form onSubmit={add} aria-label={t('passkeys.add')} className="inline-form">
        <Field
          label={t('passkeys.name')}
          value={name}
          onChange={setName}
          required={false}
          maxLength={64}
          autoComplete="off"
        />
        <button type="submit" className="primary" disabled={busy}>
          {t('passkeys.add')}
        </button>
      </form>
      <Notice error={error} success={success} />
    </Section>
  );
}

function RenameForm({
  passkey,
  busy,
  save,
  done,
}: {
  passkey: Passkey;
  busy: boolean;
  save: (name: string) => Promise<boolean>;
  done: () => void;
}) {
  const [name, setName] = useState(passkey.name);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (await save(name.trim())) done();
  };
  return (
    <form
      onSubmit={(e) => void submit(e)}
      aria-label={t('passkeys.renameLabel', { name: passkey.name })}
      className="inline-form"
    >
      <Field label={t('passkeys.name')} value={name} onChange={setName} maxLength={64} autoComplete="off" autoFocus />
      <button type="submit" className="primary" disabled={busy}>
        {t('passkeys.save')}
      </button>
      <button type="button" onClick={done}>
        {t('passkeys.cancel')}
      </button>
    </form>
  );
}
