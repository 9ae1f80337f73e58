import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { messageOf } from '../../api/client';
import { gateway } from '../../api/gateway';
import { formatDateTime, t } from '../../i18n';
import { Notice } from '../../ui';
import { formatCount, formatYuan } from './model';

/** A ledger row of GET /admin/keys/{id}/calls (apps/ai-gateway/src/usage/dtos/key-calls.dto.ts). */
export interface KeyCall {
  id: string;
  created_at: string;
  endpoint: string;
  model: string;
  provider: string | null;
  status: 'ok' | 'failed' | 'aborted' | 'cached';
  http_status: number | null;
  error: string | null;
  prompt_tokens: number;
  completion_tokens: number;
  cost_yuan: number;
  latency_ms: number;
  request_id: string | null;
}

const PAGE = 20;

/** A key's last calls, newest first; older pages by the server's cursor (the cursors seen so far go back). */
export function KeyCalls({ keyId }: { keyId: string }) {
  const [cursors, setCursors] = useState<string[]>([]);
  const cursor = cursors[cursors.length - 1];
  const calls = useQuery({
    queryKey: ['key-calls', keyId, cursor ?? null],
    queryFn: () =>
      gateway<{ data: KeyCall[]; next_cursor: string | null }>(
        'GET',
        `/admin/keys/${encodeURIComponent(keyId)}/calls?limit=${PAGE}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      ),
    placeholderData: keepPreviousData,
  });
  const rows = calls.data?.data ?? [];
  return (
    <section className="card" aria-labelledby="key-calls">
      <h2 id="key-calls">{t('console.calls.title')}</h2>
      <Notice error={calls.error ? messageOf(calls.error) : null} />
      <div className="table-wrap">
        <table data-testid="key-calls">
          <caption className="visually-hidden">{t('console.calls.title')}</caption>
          <thead>
            <tr>
              <th scope="col">{t('console.calls.time')}</th>
              <th scope="col">{t('console.calls.endpoint')}</th>
              <th scope="col">{t('console.calls.model')}</th>
              <th scope="col">{t('console.calls.provider')}</th>
              <th scope="col">{t('console.keys.status')}</th>
              <th scope="col" className="num">
                {t('console.calls.tokens')}
              </th>
              <th scope="col" className="num">
                {t('console.calls.cost')}
              </th>
              <th scope="col" className="num">
                {t('console.calls.latency')}
              </th>
              <th scope="col">{t('console.calls.requestId')}</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((c) => (
              <tr key={c.id}>
                <td>{formatDateTime(c.created_at)}</td>
                <td>{c.endpoint}</td>
                <td>{c.model}</td>
                <td>{c.provider ?? '—'}</td>
                <td title={c.error ?? undefined}>
                  <span className={`badge ${c.status === 'ok' || c.status === 'cached' ? 'on' : 'bad'}`}>
                    {t(`console.calls.status.${c.status}`)}
                  </span>
                  {c.http_status !== null && <span className="meta-inline"> {c.http_status}</span>}
                </td>
                <td className="num">{formatCount(c.prompt_tokens + c.completion_tokens)}</td>
                <td className="num">{formatYuan(c.cost_yuan)}</td>
                <td className="num">{formatCount(c.latency_ms)} ms</td>
                <td>
                  <code>{c.request_id ?? '—'}</code>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
        {calls.data && rows.length === 0 && <p className="empty-note">{t('console.calls.none')}</p>}
      </div>
      <CursorPager
        hasPrevious={cursors.length > 0}
        next={calls.data?.next_cursor ?? null}
        onPrevious={() => setCursors((c) => c.slice(0, -1))}
        onNext={(n) => setCursors((c) => [...c, n])}
      />
    </section>
  );
}

/** Newer / older pages of a cursor-paginated list (the server gives the next cursor only). */
export function CursorPager({
  hasPrevious,
  next,
  onPrevious,
  onNext,
}: {
  hasPrevious: boolean;
  next: string | null;
  onPrevious: () => void;
  onNext: (cursor: string) => void;
}) {
  if (!hasPrevious && !next) return null;
  return (
    <nav className="pager" aria-label={t('console.pager.label')}>
      <button type="button" disabled={!hasPrevious} onClick={onPrevious}>
        {t('console.pager.newer')}
      </button>
      <button type="button" disabled={!next} onClick={() => next && onNext(next)}>
        {t('console.pager.older')}
      </button>
    </nav>
  );
}
