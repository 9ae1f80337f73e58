import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { messageOf } from '../../api/client';
import { gateway } from '../../api/gateway';
import { formatDateTime, t } from '../../i18n';
import { Dialog, Notice } from '../../ui';
import { BarFigure } from './charts';
import { ConsolePage, useCanWrite } from './console-area';
import { KeyCalls } from './key-calls';
import { NewSecret } from './keys-page';
import { LimitsForm } from './limits-form';
import { ApiKey, CreatedApiKey, everyDay, formatCount, formatYuan, UsageReport, utcDate } from './model';

/** One key: its details, limits and budget (editable), its usage of the last 30 days, its last calls, revoke. */
export default function KeyPage({ path, id }: { path: string; id: string }) {
  const canWrite = useCanWrite();
  const queries = useQueryClient();
  const key = useQuery({
    queryKey: ['key', id],
    queryFn: () => gateway<ApiKey>('GET', `/admin/keys/${encodeURIComponent(id)}`),
  });
  const today = utcDate(Date.now());
  const from = utcDate(Date.now() - 29 * 86_400_000);
  const usage = useQuery({
    queryKey: ['usage', 'key', id, from, today],
    queryFn: () =>
      gateway<UsageReport>('GET', `/admin/usage?key_id=${encodeURIComponent(id)}&start_date=${from}&end_date=${today}`),
  });
  const revoke = useMutation({
    mutationFn: () => gateway<ApiKey>('DELETE', `/admin/keys/${encodeURIComponent(id)}`),
    onSuccess: (k) => {
      queries.setQueryData(['key', id], k);
      void queries.invalidateQueries({ queryKey: ['keys'] });
    },
  });
  // Rotation: a new secret for the same key, shown once in a dialog; the old one stops working.
  const [secret, setSecret] = useState<string | null>(null);
  const [copied, setCopied] = useState(false);
  const rotate = useMutation({
    mutationFn: () => gateway<CreatedApiKey>('POST', `/admin/keys/${encodeURIComponent(id)}/rotate`),
    onSuccess: ({ key: newSecret, ...k }) => {
      setSecret(newSecret);
      queries.setQueryData(['key', id], k);
      void queries.invalidateQueries({ queryKey: ['keys'] });
    },
  });
  const k = key.data;
  return (
    <ConsolePage path={path} title={k ? t('console.key.title', { name: k.name }) : t('console.nav.keys')}>
      <Notice
        error={
          key.error
            ? messageOf(key.error)
            : revoke.error
              ? messageOf(revoke.error)
              : rotate.error
                ? messageOf(rotate.error)
                : null
        }
        success={revoke.isSuccess ? t('console.key.revoked') : null}
      />
      <Dialog
        title={t('console.key.rotatedTitle')}
        open={secret !== null}
        onClose={() => (setSecret(null), setCopied(false))}
      >
        {secret && (
          <NewSecret
            secret={secret}
            copied={copied}
            onCopied={() => setCopied(true)}
            onDone={() => (setSecret(null), setCopied(false))}
          />
        )}
      </Dialog>
      {k && (
        <div className="grid-2">
          <section className="card" aria-labelledby="key-details">
            <h2 id="key-details">{t('console.key.details')}</h2>
            <dl className="props">
              <dt>{t('console.keys.prefix')}</dt>
              <dd>
                <code>{k.prefix}…</code>
              </dd>
              <dt>{t('console.keys.status')}</dt>
              <dd>
                <span className={`badge ${k.status === 'active' ? 'on' : ''}`} data-testid="key-status">
                  {t(`console.keys.status.${k.status}`)}
                </span>
              </dd>
              <dt>{t('console.keys.spent')}</dt>
              <dd>{formatYuan(k.spent_yuan)}</dd>
              <dt>{t('console.key.remaining')}</dt>
              <dd>{formatYuan(k.remaining_yuan)}</dd>
              <dt>{t('console.key.created')}</dt>
              <dd>{formatDateTime(k.created_at)}</dd>
              <dt>{t('console.keys.lastUsed')}</dt>
              <dd>{formatDateTime(k.last_used_at)}</dd>
            </dl>
            {canWrite && k.status === 'active' && (
              <div className="row end">
                <button
                  type="button"
                  disabled={rotate.isPending}
                  onClick={() => confirm(t('console.key.rotateConfirm')) && rotate.mutate()}
                >
                  {t('console.key.rotate')}
                </button>
                <button
                  type="button"
                  className="danger"
                  disabled={revoke.isPending}
                  onClick={() => confirm(t('console.key.revokeConfirm')) && revoke.mutate()}
                >
                  {t('console.key.revoke')}
                </button>
              </div>
            )}
          </section>
          <LimitsForm owner={k} resource="keys" detail="key" canWrite={canWrite && k.status === 'active'} />
        </div>
      )}
      <Notice error={usage.error ? messageOf(usage.error) : null} />
      {usage.data && (
        <div className="charts">
          <BarFigure
            title={t('console.key.requestsByDay')}
            data={everyDay(from, today, usage.data.totals, (d) => d.requests)}
            format={formatCount}
          />
          <BarFigure
            title={t('console.key.spendByDay')}
            color="var(--chart-2)"
            data={everyDay(from, today, usage.data.totals, (d) => d.cost_yuan)}
            format={formatYuan}
          />
        </div>
      )}
      {k && <KeyCalls keyId={k.id} />}
    </ConsolePage>
  );
}
