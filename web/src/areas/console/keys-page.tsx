import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { FormEvent, useState } from 'react';
import { messageOf } from '../../api/client';
import { gateway } from '../../api/gateway';
import { formatDateTime, t } from '../../i18n';
import { Dialog, Field, Notice } from '../../ui';
import { ConsoleLink, ConsolePage, useCanWrite } from './console-area';
import { ApiKey, CreatedApiKey, formatYuan, List } from './model';

const PAGE = 20;

/** API keys: paginated on the server, newest first; create (the secret shown once) and revoke. */
export default function KeysPage({ path }: { path: string }) {
  const canWrite = useCanWrite();
  const [page, setPage] = useState(0);
  const [showRevoked, setShowRevoked] = useState(false);
  const [search, setSearch] = useState('');
  const [creating, setCreating] = useState(false);
  const keys = useQuery({
    queryKey: ['keys', page, showRevoked, search],
    queryFn: () =>
      gateway<List<ApiKey>>(
        'GET',
        `/admin/keys?limit=${PAGE}&offset=${page * PAGE}&include_revoked=${showRevoked}${search ? `&q=${encodeURIComponent(search)}` : ''}`,
      ),
    placeholderData: keepPreviousData,
  });
  const total = keys.data?.total ?? 0;
  return (
    <ConsolePage
      path={path}
      title={t('console.nav.keys')}
      actions={
        canWrite && (
          <button type="button" className="primary" onClick={() => setCreating(true)}>
            {t('console.keys.create')}
          </button>
        )
      }
    >
      <div className="row">
        <Field
          label={t('console.keys.search')}
          name="q"
          type="search"
          value={search}
          onChange={(v) => (setSearch(v), setPage(0))}
          required={false}
          maxLength={100}
        />
        <label className="check">
          <input
            type="checkbox"
            checked={showRevoked}
            onChange={(e) => (setShowRevoked(e.target.checked), setPage(0))}
          />
          {t('console.keys.showRevoked')}
        </label>
      </div>
      <Notice error={keys.error ? messageOf(keys.error) : null} />
      <div className="table-wrap card">
        <table>
          <caption className="visually-hidden">{t('console.nav.keys')}</caption>
          <thead>
            <tr>
              <th scope="col">{t('console.keys.name')}</th>
              <th scope="col">{t('console.keys.prefix')}</th>
              <th scope="col">{t('console.keys.status')}</th>
              <th scope="col">{t('console.keys.spent')}</th>
              <th scope="col">{t('console.keys.lastUsed')}</th>
            </tr>
          </thead>
          <tbody>
            {(keys.data?.data ?? []).map((k) => (
              <tr key={k.id}>
                <th scope="row">
                  <ConsoleLink to={`/keys/${k.id}`}>{k.name}</ConsoleLink>
                </th>
                <td>
                  <code>{k.prefix}…</code>
                </td>
                <td>
                  <span className={`badge ${k.status === 'active' ? 'on' : ''}`}>
                    {t(`console.keys.status.${k.status}`)}
                  </span>
                </td>
                <td>{formatYuan(k.spent_yuan)}</td>
                <td>{formatDateTime(k.last_used_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
        {keys.data && keys.data.data.length === 0 && <p className="empty-note">{t('console.keys.none')}</p>}
      </div>
      <Pager page={page} total={total} size={PAGE} onPage={setPage} />
      {canWrite && <CreateKeyDialog open={creating} onClose={() => setCreating(false)} />}
    </ConsolePage>
  );
}

/** Previous / next with the range shown; pages come from the server (limit/offset). */
export function Pager({
  page,
  total,
  size,
  onPage,
  more = false,
}: {
  page: number;
  total: number;
  size: number;
  onPage: (p: number) => void;
  /** The server stopped counting at `total`: there may be more (the members list, admin-members.repository.ts). */
  more?: boolean;
}) {
  if (total <= size) return null;
  const last = Math.max(0, Math.ceil(total / size) - 1);
  return (
    <nav className="pager" aria-label={t('console.pager.label')}>
      <button type="button" disabled={page === 0} onClick={() => onPage(page - 1)}>
        {t('console.pager.previous')}
      </button>
      <span>
        {t(more ? 'console.pager.rangeMore' : 'console.pager.range', {
          from: page * size + 1,
          to: Math.min(total, (page + 1) * size),
          total,
        })}
      </span>
      <button type="button" disabled={page >= last} onClick={() => onPage(page + 1)}>
        {t('console.pager.next')}
      </button>
    </nav>
  );
}

/** Optional number field value: '' is no limit. */
export const optionalNumber = (v: string): number | null => (v.trim() === '' ? null : Number(v));

function CreateKeyDialog({ open, onClose }: { open: boolean; onClose: () => void }) {
  const queries = useQueryClient();
  const [name, setName] = useState('');
  const [rpm, setRpm] = useState('');
  const [budget, setBudget] = useState('');
  const [created, setCreated] = useState<CreatedApiKey | null>(null);
  const [copied, setCopied] = useState(false);
  const create = useMutation({
    mutationFn: () =>
      gateway<CreatedApiKey>('POST', '/admin/keys', {
        name,
        requests_per_minute: optionalNumber(rpm),
        budget_yuan: optionalNumber(budget),
      }),
    onSuccess: (key) => {
      setCreated(key);
      void queries.invalidateQueries({ queryKey: ['keys'] });
    },
  });
  const close = () => {
    // The secret is gone once the dialog closes: it is shown only in the creation's answer.
    setCreated(null);
    setCopied(false);
    setName('');
    setRpm('');
    setBudget('');
    create.reset();
    onClose();
  };
  const submit = (e: FormEvent) => {
    e.preventDefault();
    create.mutate();
  };
  return (
    <Dialog title={created ? t('console.keys.createdTitle') : t('console.keys.create')} open={open} onClose={close}>
      {created ? (
        <NewSecret secret={created.key} copied={copied} onCopied={() => setCopied(true)} onDone={close} />
      ) : (
        <form onSubmit={submit}>
          <Field label={t('console.keys.name')} name="name" value={name} onChange={setName} maxLength={100} autoFocus />
          <Field
            label={t('console.keys.rpm')}
            name="rpm"
            type="number"
            inputMode="numeric"
            value={rpm}
            onChange={setRpm}
            required={false}
            hint={t('console.keys.emptyNoLimit')}
          />
          <Field
            label={t('console.keys.budget')}
            name="budget"
            type="number"
            value={budget}
            onChange={setBudget}
            required={false}
            hint={t('console.keys.emptyNoLimit')}
          />
          <Notice error={create.error ? messageOf(create.error) : null} />
          <div className="row end">
            <button type="button" onClick={close}>
              {t('stepUp.cancel')}
            </button>
            <button type="submit" className="primary" disabled={create.isPending}>
              {t('console.keys.createSubmit')}
            </button>
          </div>
        </form>
      )}
    </Dialog>
  );
}

/** A key's secret, shown once (after creating or rotating it), with copy. */
export function NewSecret({
  secret,
  copied,
  onCopied,
  onDone,
}: {
  secret: string;
  copied: boolean;
  onCopied: () => void;
  onDone: () => void;
}) {
  return (
    <>
      <p className="warning">{t('console.keys.showOnce')}</p>
      <p>
        <code className="secret" data-testid="new-key">
          {secret}
        </code>
      </p>
      <div className="row end">
        <button type="button" onClick={() => void navigator.clipboard.writeText(secret).then(onCopied)}>
          {copied ? t('console.keys.copied') : t('console.keys.copy')}
        </button>
        <button type="button" className="primary" onClick={onDone}>
          {t('console.done')}
        </button>
      </div>
    </>
  );
}
