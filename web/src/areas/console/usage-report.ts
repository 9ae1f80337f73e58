import { gateway } from '../../api/gateway';
import type { UsageReport } from './model';

/** Lines per request: the gateway's largest page (USAGE_LIMIT in apps/ai-gateway/src/usage/dtos/usage.dto.ts). */
const PAGE = 5000;

/**
 * The whole admin usage report for a query (`start_date=…&group_by=…`). The gateway answers its lines in pages
 * (`next_cursor`), each with the whole report's `totals`, so the lines of every page are read and joined: the
 * console's tables, top lists and CSV export show every line, not the first page's.
 */
export async function usageReport<R extends UsageReport>(query: string): Promise<R> {
  const q = new URLSearchParams(query);
  q.set('limit', String(PAGE));
  const first = await gateway<R>('GET', `/admin/usage?${q.toString()}`);
  const data: R['data'] = [...first.data];
  for (let next = first.next_cursor; next;) {
    q.set('cursor', next);
    const page = await gateway<R>('GET', `/admin/usage?${q.toString()}`);
    data.push(...page.data);
    next = page.next_cursor;
  }
  return { ...first, data, next_cursor: null };
}
