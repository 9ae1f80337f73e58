import { useQuery } from '@tanstack/react-query';
import { messageOf } from '../../api/client';
import { gateway } from '../../api/gateway';
import { formatDateTime, t } from '../../i18n';
import { Notice } from '../../ui';
import { ConsolePage } from './console-area';
import { formatCount, ms, UpstreamsReport } from './model';

const percent = (v: number | null) => (v === null ? '—' : `${(v * 100).toFixed(1)}%`);

/** The deployments of the providers file: cooldowns (of the replica that answered) and the last hour's errors and latency (all replicas). */
export default function UpstreamsPage({ path }: { path: string }) {
  const upstreams = useQuery({
    queryKey: ['upstreams'],
    queryFn: () => gateway<UpstreamsReport>('GET', '/admin/upstreams'),
    refetchInterval: 30_000,
  });
  const u = upstreams.data;
  return (
    <ConsolePage path={path} title={t('console.nav.upstreams')}>
      <Notice error={upstreams.error ? messageOf(upstreams.error) : null} />
      {u && (
        <p className="intro">
          {t('console.upstreams.intro', {
            replica: u.replica,
            from: formatDateTime(u.window_start),
            to: formatDateTime(u.window_end),
          })}
        </p>
      )}
      <div className="table-wrap card">
        <table data-testid="upstreams">
          <caption className="visually-hidden">{t('console.nav.upstreams')}</caption>
          <thead>
            <tr>
              <th scope="col">{t('console.upstreams.name')}</th>
              <th scope="col">{t('console.upstreams.type')}</th>
              <th scope="col">{t('console.upstreams.models')}</th>
              <th scope="col" className="num">
                {t('console.upstreams.weight')}
              </th>
              <th scope="col">{t('console.upstreams.health')}</th>
              <th scope="col" className="num">
                {t('console.upstreams.requests')}
              </th>
              <th scope="col" className="num">
                {t('console.upstreams.errorRate')}
              </th>
              <th scope="col" className="num">
                p50
              </th>
              <th scope="col" className="num">
                p95
              </th>
            </tr>
          </thead>
          <tbody>
            {(u?.data ?? []).map((d) => (
              <tr key={d.name}>
                <th scope="row">{d.name}</th>
                <td>{d.type}</td>
                <td>{d.models.join(', ')}</td>
                <td className="num">{d.weight}</td>
                <td>
                  {d.cooldown.cooling_down ? (
                    <span className="badge bad">
                      {t('console.upstreams.coolingUntil', { time: formatDateTime(d.cooldown.until) })}
                    </span>
                  ) : (
                    <span className="badge on">{t('console.upstreams.healthy')}</span>
                  )}
                </td>
                <td className="num">{formatCount(d.last_hour.requests)}</td>
                <td className="num">{percent(d.last_hour.error_rate)}</td>
                <td className="num">{ms(d.last_hour.latency_p50_ms)}</td>
                <td className="num">{ms(d.last_hour.latency_p95_ms)}</td>
              </tr>
            ))}
          </tbody>
        </table>
        {u && u.data.length === 0 && <p className="empty-note">{t('console.upstreams.none')}</p>}
      </div>
    </ConsolePage>
  );
}
