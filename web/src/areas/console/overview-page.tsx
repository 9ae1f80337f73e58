import { useQuery } from '@tanstack/react-query';
import { gateway } from '../../api/gateway';
import { messageOf } from '../../api/client';
import { t } from '../../i18n';
import { Notice } from '../../ui';
import { BarFigure } from './charts';
import { ConsolePage } from './console-area';
import {
  ApiKey,
  everyDay,
  formatCount,
  formatYuan,
  List,
  ms,
  topBy,
  UpstreamsReport,
  UsageReport,
  utcDate,
} from './model';
import { usageReport } from './usage-report';

/**
 * Spend today and this month (UTC days, as the admin usage report counts them), requests, errors, the last hour's
 * latency (p50/p95 over every deployment, from /admin/upstreams); top keys and models.
 */
export default function OverviewPage({ path }: { path: string }) {
  const today = utcDate(Date.now());
  const monthStart = `${today.slice(0, 8)}01`;
  const usage = useQuery({
    queryKey: ['usage', monthStart, today],
    queryFn: () => usageReport<UsageReport>(`start_date=${monthStart}&end_date=${today}`),
  });
  const upstreams = useQuery({
    queryKey: ['upstreams'],
    queryFn: () => gateway<UpstreamsReport>('GET', '/admin/upstreams'),
  });
  const keys = useQuery({
    queryKey: ['keys', 'names'],
    queryFn: () => gateway<List<ApiKey>>('GET', '/admin/keys?include_revoked=true&limit=100'),
  });
  const lines = usage.data?.data ?? [];
  const todayLines = lines.filter((l) => l.date === today);
  const sum = (ls: typeof lines, f: (l: (typeof lines)[number]) => number) => ls.reduce((s, l) => s + f(l), 0);
  const names = new Map((keys.data?.data ?? []).map((k) => [k.id, k.name]));
  const stats: Array<[string, string]> = [
    [t('console.overview.spendToday'), formatYuan(sum(todayLines, (l) => l.cost_yuan))],
    [t('console.overview.spendMonth'), formatYuan(usage.data?.total_cost_yuan ?? 0)],
    [t('console.overview.requestsToday'), formatCount(sum(todayLines, (l) => l.requests))],
    [t('console.overview.errorsToday'), formatCount(sum(todayLines, (l) => l.failed))],
    [t('console.overview.latencyP50'), ms(upstreams.data?.overall.latency_p50_ms ?? null)],
    [t('console.overview.latencyP95'), ms(upstreams.data?.overall.latency_p95_ms ?? null)],
  ];
  return (
    <ConsolePage path={path} title={t('console.nav.overview')}>
      <Notice error={usage.error ? messageOf(usage.error) : null} />
      {usage.isPending ? (
        <p role="status">{t('app.loading')}</p>
      ) : (
        <>
          <dl className="stats">
            {stats.map(([label, value]) => (
              <div className="stat card" key={label}>
                <dt>{label}</dt>
                <dd>{value}</dd>
              </div>
            ))}
          </dl>
          <div className="charts">
            <BarFigure
              title={t('console.overview.spendByDay')}
              data={everyDay(
                monthStart,
                today,
                usage.data?.totals ?? [],
                (d) => d.cost_yuan,
                (d) => d.slice(8),
              )}
              format={formatYuan}
            />
            <BarFigure
              title={t('console.overview.requestsByDay')}
              color="var(--chart-2)"
              data={everyDay(
                monthStart,
                today,
                usage.data?.totals ?? [],
                (d) => d.requests,
                (d) => d.slice(8),
              )}
              format={formatCount}
            />
            <BarFigure
              title={t('console.overview.topKeys')}
              layout="vertical"
              data={topBy(
                lines,
                (l) => (l.key_id ? (names.get(l.key_id) ?? l.key_id.slice(0, 8)) : '—'),
                (l) => l.cost_yuan,
              )}
              format={formatYuan}
            />
            <BarFigure
              title={t('console.overview.topModels')}
              layout="vertical"
              color="var(--chart-2)"
              data={topBy(
                lines,
                (l) => l.model,
                (l) => l.requests,
              )}
              format={formatCount}
            />
          </div>
        </>
      )}
    </ConsolePage>
  );
}
