import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { FormEvent, useId, useState } from 'react';
import { messageOf } from '../../api/client';
import { saveBlob } from '../../api/gateway';
import { t } from '../../i18n';
import { Field, Notice } from '../../ui';
import { BarFigure } from './charts';
import { ConsolePage } from './console-area';
import { everyDay, formatCount, formatYuan, topBy, UsageLine, UsageReport } from './model';
import { usageReport } from './usage-report';

type Period = 'hour' | 'day';
type GroupBy = 'key' | 'project' | 'model' | 'endpoint';
interface Filters {
  period: Period;
  group_by: GroupBy;
  start: string;
  end: string;
  key_id: string;
  project_id: string;
}
type Report = UsageReport & {
  period: Period | null;
  group_by: GroupBy;
  time_zone: string;
  data: Array<Omit<UsageLine, 'endpoint' | 'model'> & { endpoint: string | null; model: string | null }>;
};

// No dates at first: the gateway answers its last 30 days, counted in its BUDGET_TIMEZONE as `period` days
// are (this browser's UTC date is a day behind Asia/Shanghai's for 8 hours of each day); the fields then show
// the report's dates.
const initial = (): Filters => ({
  period: 'day',
  group_by: 'model',
  start: '',
  end: '',
  key_id: '',
  project_id: '',
});
const nameOf = (g: GroupBy, l: Report['data'][number]): string =>
  (g === 'key' ? l.key_id : g === 'project' ? l.project_id : g === 'model' ? l.model : l.endpoint) ?? '—';

/**
 * Every bucket of the range with the report's value or 0 (a chart shows the quiet days and hours too). The
 * report's dates are labels of its zone's days (YYYY-MM-DD, or YYYY-MM-DDTHH:00 per hour), so they are
 * counted as labels, not as instants.
 */
function buckets(r: Report, value: (d: Report['totals'][number]) => number): Array<{ name: string; value: number }> {
  const days = everyDay(r.start_date, r.end_date, [], () => 0).map((d) => d.name);
  const names =
    r.period === 'hour'
      ? days.flatMap((d) => Array.from({ length: 24 }, (_, h) => `${d}T${String(h).padStart(2, '0')}:00`))
      : days;
  const byName = new Map(r.totals.map((d) => [d.date, value(d)]));
  return names.map((name) => ({ name, value: byName.get(name) ?? 0 }));
}

/** RFC 4180 CSV of the report's lines (the server's aggregates, the same lines the table shows). */
function csv(r: Report): string {
  const cell = (v: string | number | null) => {
    const s = v === null || v === undefined ? '' : String(v);
    return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
  };
  const head = [
    'date',
    'key_id',
    'project_id',
    'endpoint',
    'model',
    'requests',
    'failed',
    'prompt_tokens',
    'completion_tokens',
    'cost_yuan',
  ];
  const lines = r.data.map((l) =>
    [
      l.date,
      l.key_id,
      l.project_id,
      l.endpoint,
      l.model,
      l.requests,
      l.failed,
      l.prompt_tokens,
      l.completion_tokens,
      l.cost_yuan,
    ]
      .map(cell)
      .join(','),
  );
  return [head.join(','), ...lines].join('\r\n') + '\r\n';
}

/** Usage: spend, tokens and requests per hour or day × key / project / model / endpoint, from the gateway's aggregates. */
export default function UsagePage({ path }: { path: string }) {
  const [draft, setDraft] = useState<Filters>(initial);
  const [filters, setFilters] = useState<Filters>(draft);
  const q = new URLSearchParams({ period: filters.period, group_by: filters.group_by });
  if (filters.start) q.set('start_date', filters.start);
  if (filters.end) q.set('end_date', filters.end);
  if (filters.key_id.trim()) q.set('key_id', filters.key_id.trim());
  if (filters.project_id.trim()) q.set('project_id', filters.project_id.trim());
  const report = useQuery({
    queryKey: ['usage-report', q.toString()],
    queryFn: () => usageReport<Report>(q.toString()),
    placeholderData: keepPreviousData,
  });
  const set = (k: keyof Filters) => (v: string) => setDraft((d) => ({ ...d, [k]: v }));
  const r = report.data;
  const apply = (e: FormEvent) => {
    e.preventDefault();
    // Dates left as shown are the report's.
    setFilters({ ...draft, start: draft.start || r?.start_date || '', end: draft.end || r?.end_date || '' });
  };
  const periodId = useId();
  const groupId = useId();
  const lines = r?.data ?? [];
  const asLines = lines.map((l) => ({ ...l, endpoint: l.endpoint ?? '', model: l.model ?? '' }));
  return (
    <ConsolePage
      path={path}
      title={t('console.nav.usage')}
      actions={
        <button
          type="button"
          disabled={!r}
          onClick={() =>
            r && saveBlob(new Blob([csv(r)], { type: 'text/csv' }), `usage-${r.start_date}-${r.end_date}.csv`)
          }
        >
          {t('console.exportCsv')}
        </button>
      }
    >
      <form className="filters" onSubmit={apply} aria-label={t('console.filters')}>
        <div className="field">
          <label htmlFor={periodId}>{t('console.usage.period')}</label>
          <select id={periodId} value={draft.period} onChange={(e) => set('period')(e.target.value)}>
            <option value="day">{t('console.usage.period.day')}</option>
            <option value="hour">{t('console.usage.period.hour')}</option>
          </select>
        </div>
        <div className="field">
          <label htmlFor={groupId}>{t('console.usage.groupBy')}</label>
          <select id={groupId} value={draft.group_by} onChange={(e) => set('group_by')(e.target.value)}>
            {(['key', 'project', 'model', 'endpoint'] as const).map((g) => (
              <option key={g} value={g}>
                {t(`console.usage.groupBy.${g}`)}
              </option>
            ))}
          </select>
        </div>
        <Field
          label={t('console.usage.start')}
          name="start"
          type="date"
          value={draft.start || r?.start_date || ''}
          onChange={set('start')}
        />
        <Field
          label={t('console.usage.end')}
          name="end"
          type="date"
          value={draft.end || r?.end_date || ''}
          onChange={set('end')}
        />
        <Field
          label={t('console.usage.keyId')}
          name="key_id"
          value={draft.key_id}
          onChange={set('key_id')}
          required={false}
          maxLength={36}
        />
        <Field
          label={t('console.usage.projectId')}
          name="project_id"
          value={draft.project_id}
          onChange={set('project_id')}
          required={false}
          maxLength={36}
        />
        <button type="submit">{t('console.apply')}</button>
      </form>
      <Notice error={report.error ? messageOf(report.error) : null} />
      {r && (
        <>
          <p className="intro">
            {t('console.usage.summary', { zone: r.time_zone, total: formatYuan(r.total_cost_yuan) })}
          </p>
          <div className="charts">
            <BarFigure title={t('console.usage.requests')} data={buckets(r, (d) => d.requests)} format={formatCount} />
            <BarFigure
              title={t('console.usage.spend')}
              color="var(--chart-2)"
              data={buckets(r, (d) => d.cost_yuan)}
              format={formatYuan}
            />
            <BarFigure
              title={t('console.usage.tokens')}
              data={buckets(r, (d) => d.prompt_tokens + d.completion_tokens)}
              format={formatCount}
            />
            <BarFigure
              title={t('console.usage.topSpend', { by: t(`console.usage.groupBy.${r.group_by}`) })}
              color="var(--chart-2)"
              layout="vertical"
              data={topBy(
                asLines,
                (l) => nameOf(r.group_by, l),
                (l) => l.cost_yuan,
                8,
              )}
              format={formatYuan}
            />
          </div>
          <div className="table-wrap card">
            <table data-testid="usage">
              <caption className="visually-hidden">{t('console.nav.usage')}</caption>
              <thead>
                <tr>
                  <th scope="col">{t('console.usage.date')}</th>
                  <th scope="col">{t(`console.usage.groupBy.${r.group_by}`)}</th>
                  {r.group_by !== 'model' && r.group_by !== 'endpoint' && (
                    <th scope="col">{t('console.calls.model')}</th>
                  )}
                  <th scope="col" className="num">
                    {t('console.usage.requestsShort')}
                  </th>
                  <th scope="col" className="num">
                    {t('console.usage.failed')}
                  </th>
                  <th scope="col" className="num">
                    {t('console.calls.tokens')}
                  </th>
                  <th scope="col" className="num">
                    {t('console.calls.cost')}
                  </th>
                </tr>
              </thead>
              <tbody>
                {lines.map((l, i) => (
                  <tr key={`${l.date}-${i}`}>
                    <td>{l.date}</td>
                    <td>
                      <code>{nameOf(r.group_by, l)}</code>
                    </td>
                    {r.group_by !== 'model' && r.group_by !== 'endpoint' && <td>{l.model}</td>}
                    <td className="num">{formatCount(l.requests)}</td>
                    <td className="num">{formatCount(l.failed)}</td>
                    <td className="num">{formatCount(l.prompt_tokens + l.completion_tokens)}</td>
                    <td className="num">{formatYuan(l.cost_yuan)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
            {lines.length === 0 && <p className="empty-note">{t('console.usage.none')}</p>}
          </div>
        </>
      )}
    </ConsolePage>
  );
}
