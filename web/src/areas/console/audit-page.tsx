import { keepPreviousData, useMutation, useQuery } from '@tanstack/react-query';
import { FormEvent, useId, useState } from 'react';
import { api, apiBlob, messageOf } from '../../api/client';
import { gateway, gatewayDownload, saveBlob } from '../../api/gateway';
import { formatDateTime, t } from '../../i18n';
import { Field, Notice } from '../../ui';
import { ConsolePage } from './console-area';
import { CursorPager } from './key-calls';

/** An entry of either app's audit log (libs/audit/src/audit-log.dto.ts). */
interface AuditEntry {
  id: string;
  time: string;
  actor: { kind: string; id: string | null };
  action: string;
  target: { type: string; id: string | null };
  request_id: string | null;
  address: string | null;
}
type App = 'membership' | 'gateway';
interface Filters {
  actor_kind: string;
  actor_id: string;
  action: string;
  from: string;
  to: string;
}
const EMPTY: Filters = { actor_kind: '', actor_id: '', action: '', from: '', to: '' };
const ACTOR_KINDS = ['member', 'admin-token', 'cli', 'system'];
const PAGE = 50;

/** The filters as the audit API's query (datetime-local fields are the browser's local time). */
function query(f: Filters): string {
  const q = new URLSearchParams();
  if (f.actor_kind) q.set('actor_kind', f.actor_kind);
  if (f.actor_id.trim()) q.set('actor_id', f.actor_id.trim());
  if (f.action.trim()) q.set('action', f.action.trim());
  if (f.from) q.set('from', new Date(f.from).toISOString());
  if (f.to) q.set('to', new Date(f.to).toISOString());
  return q.toString();
}

/** Both apps' audit logs: who changed what, when and from where; filters, cursor pages, CSV export. */
export default function AuditPage({ path }: { path: string }) {
  const [app, setApp] = useState<App>('gateway');
  const [draft, setDraft] = useState<Filters>(EMPTY);
  const [filters, setFilters] = useState<Filters>(EMPTY);
  const [cursors, setCursors] = useState<string[]>([]);
  const cursor = cursors[cursors.length - 1];
  const qs = query(filters);
  const list = useQuery({
    queryKey: ['audit', app, qs, cursor ?? null],
    queryFn: () => {
      const q = `limit=${PAGE}${qs ? `&${qs}` : ''}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      type Page = { data: AuditEntry[]; next_cursor: string | null };
      return app === 'gateway'
        ? gateway<Page>('GET', `/admin/audit-log?${q}`)
        : api<Page>('GET', `/api/v1/admin/audit-log?${q}`);
    },
    placeholderData: keepPreviousData,
  });
  const exportCsv = useMutation({
    mutationFn: async () => {
      const q = `format=csv${qs ? `&${qs}` : ''}`;
      const name = `audit-${app}.csv`;
      if (app === 'gateway') return gatewayDownload(`/admin/audit-log/export?${q}`, name);
      saveBlob(await apiBlob(`/api/v1/admin/audit-log/export?${q}`), name);
    },
  });
  const apply = (e: FormEvent) => {
    e.preventDefault();
    setFilters(draft);
    setCursors([]);
  };
  const set = (k: keyof Filters) => (v: string) => setDraft((d) => ({ ...d, [k]: v }));
  const appId = useId();
  const kindId = useId();
  const rows = list.data?.data ?? [];
  return (
    <ConsolePage
      path={path}
      title={t('console.nav.audit')}
      actions={
        <button type="button" onClick={() => exportCsv.mutate()} disabled={exportCsv.isPending}>
          {t('console.exportCsv')}
        </button>
      }
    >
      <form className="filters" onSubmit={apply} aria-label={t('console.filters')}>
        <div className="field">
          <label htmlFor={appId}>{t('console.audit.app')}</label>
          <select
            id={appId}
            value={app}
            onChange={(e) => {
              setApp(e.target.value as App);
              setCursors([]);
            }}
          >
            <option value="gateway">{t('console.audit.app.gateway')}</option>
            <option value="membership">{t('console.audit.app.membership')}</option>
          </select>
        </div>
        <div className="field">
          <label htmlFor={kindId}>{t('console.audit.actorKind')}</label>
          <select id={kindId} value={draft.actor_kind} onChange={(e) => set('actor_kind')(e.target.value)}>
            <option value="">{t('console.all')}</option>
            {ACTOR_KINDS.map((k) => (
              <option key={k} value={k}>
                {k}
              </option>
            ))}
          </select>
        </div>
        <Field
          label={t('console.audit.actorId')}
          name="actor_id"
          value={draft.actor_id}
          onChange={set('actor_id')}
          required={false}
          maxLength={100}
        />
        <Field
          label={t('console.audit.action')}
          name="action"
          value={draft.action}
          onChange={set('action')}
          required={false}
          maxLength={100}
        />
        <Field
          label={t('console.audit.from')}
          name="from"
          type="datetime-local"
          value={draft.from}
          onChange={set('from')}
          required={false}
        />
        <Field
          label={t('console.audit.to')}
          name="to"
          type="datetime-local"
          value={draft.to}
          onChange={set('to')}
          required={false}
        />
        <button type="submit">{t('console.apply')}</button>
      </form>
      <p className="hint">{t('console.audit.actionHint')}</p>
      <Notice error={list.error ? messageOf(list.error) : exportCsv.error ? messageOf(exportCsv.error) : null} />
      <div className="table-wrap card">
        <table data-testid="audit">
          <caption className="visually-hidden">{t('console.nav.audit')}</caption>
          <thead>
            <tr>
              <th scope="col">{t('console.calls.time')}</th>
              <th scope="col">{t('console.audit.actor')}</th>
              <th scope="col">{t('console.audit.action')}</th>
              <th scope="col">{t('console.audit.target')}</th>
              <th scope="col">{t('console.audit.address')}</th>
              <th scope="col">{t('console.calls.requestId')}</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((e) => (
              <tr key={e.id}>
                <td>{formatDateTime(e.time)}</td>
                <td>
                  {e.actor.kind}
                  {e.actor.id && <span className="meta-inline"> {e.actor.id}</span>}
                </td>
                <td>
                  <code className="nowrap">{e.action}</code>
                </td>
                <td>
                  {e.target.type}
                  {e.target.id && (
                    <>
                      {' '}
                      <code>{e.target.id}</code>
                    </>
                  )}
                </td>
                <td>{e.address ?? '—'}</td>
                <td>
                  <code>{e.request_id ?? '—'}</code>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
        {list.data && rows.length === 0 && <p className="empty-note">{t('console.audit.none')}</p>}
      </div>
      <CursorPager
        hasPrevious={cursors.length > 0}
        next={list.data?.next_cursor ?? null}
        onPrevious={() => setCursors((c) => c.slice(0, -1))}
        onNext={(n) => setCursors((c) => [...c, n])}
      />
    </ConsolePage>
  );
}
