/**
 * The gateway's unmetered reads on the real app and PostgreSQL: at most AI_READS_PER_KEY of a key's reads run at
 * once in a replica (GET /v1/usage, /v1/responses/{id}), and GET /v1/usage answers its lines in pages.
 */
import type { AuditContext } from '@app/audit';
import { RunningApp, startGateway } from '../support/apps';
import { queryRows } from '../support/database';
import { until } from '../support/until';
import { ApiKeysService } from '../../apps/ai-gateway/src/keys/api-keys.service';
import { KeyReads } from '../../apps/ai-gateway/src/limits/key-reads';
import { UsageRepository } from '../../apps/ai-gateway/src/usage/usage.repository';

describe('AI gateway: unmetered reads of a key', () => {
  let app: RunningApp;
  const ctx: AuditContext = { actor: { kind: 'admin-token', id: null }, requestId: null, address: null };
  let run = 0;
  const newKey = async () => {
    const created = await app.app.get(ApiKeysService).create({ name: `reads spec ${++run}` }, ctx);
    return { id: created.id, key: created.key };
  };
  const get = (key: { key: string }, path: string) =>
    fetch(`${app.url}${path}`, { headers: { authorization: `Bearer ${key.key}` } });

  beforeAll(async () => {
    app = await startGateway({ LOG_LEVEL: 'silent' });
  });
  afterAll(() => app?.close());

  it('runs at most AI_READS_PER_KEY (4) reads of a key at once: one more is 429, while another key reads', async () => {
    const [busy, other] = [await newKey(), await newKey()];
    const usage = app.app.get(UsageRepository);
    const summarize = usage.summarize.bind(usage);
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let holding = 0;
    // The busy key's reports wait until the test lets them go, as slow ones would, holding their turns.
    const spy = jest.spyOn(usage, 'summarize').mockImplementation(async (opts) => {
      if (opts.keyId === busy.id) {
        holding++;
        await held;
      }
      return summarize(opts);
    });
    try {
      const reads = Array.from({ length: 4 }, () => get(busy, '/v1/usage'));
      await until(() => holding === 4);

      const over = await get(busy, '/v1/usage');
      expect(over.status).toBe(429);
      expect(over.headers.get('retry-after')).toBe('1');
      expect(await over.json()).toEqual({
        error: {
          message: expect.stringContaining('at most 4 in a replica (AI_READS_PER_KEY)'),
          type: 'rate_limit_error',
          code: 'reads_in_flight',
          param: null,
        },
      });
      // The key's stored-response reads count with them; the other key reads its usage and responses meanwhile.
      expect((await get(busy, '/v1/responses/resp_unknown')).status).toBe(429);
      expect((await get(busy, '/v1/responses/resp_unknown/input_items')).status).toBe(429);
      expect((await get(other, '/v1/usage')).status).toBe(200);
      expect((await get(other, '/v1/responses/resp_unknown')).status).toBe(404);
      expect(holding).toBe(4); // the refused read ran no report

      release();
      expect((await Promise.all(reads)).map((r) => r.status)).toEqual([200, 200, 200, 200]);
      expect(app.app.get(KeyReads).size).toBe(0);
      expect((await get(busy, '/v1/usage')).status).toBe(200);
    } finally {
      release();
      spy.mockRestore();
    }
  });

  describe('GET /v1/usage in pages', () => {
    const range = 'start_date=2027-03-01&end_date=2027-03-04';
    let key: { id: string; key: string };
    let full: any;
    const days = ['01', '02', '03', '04'];
    const models = ['vendor-gpt-4', 'vendor-gpt-4-mini', 'vendor-embed'];

    beforeAll(async () => {
      key = await newKey();
      let cost = 0;
      for (const day of days)
        for (const model of models)
          await queryRows(
            app.dbUrl,
            `INSERT INTO ai_usage_records (key_id, endpoint, model, provider, status, http_status, latency_ms, cost_yuan, prompt_tokens, completion_tokens, created_at)
             VALUES ($1, 'chat.completions', $2, 'primary', 'ok', 200, 100, $3, 1, 1, $4)`,
            [key.id, model, ++cost, `2027-03-${day}T06:00:00Z`],
          );
      const res = await get(key, `/v1/usage?${range}`);
      expect(res.status).toBe(200);
      full = await res.json();
    });

    it('answers a small report whole, as before, with next_cursor null', () => {
      expect(full.data).toHaveLength(days.length * models.length);
      expect(full.next_cursor).toBeNull();
      expect(full.total_cost_yuan).toBe((12 * 13) / 2);
      expect(full.totals.map((t: { date: string }) => t.date)).toEqual(days.map((d) => `2027-03-${d}`));
      expect(Object.keys(full).sort()).toEqual(
        [
          'object',
          'start_date',
          'end_date',
          'period',
          'time_zone',
          'key',
          'data',
          'totals',
          'total_cost_yuan',
          'next_cursor',
        ].sort(),
      );
    });

    it('pages of at most `limit` lines have every line once, in order, and the whole report totals', async () => {
      for (const limit of [1, 5, 12]) {
        const lines: unknown[] = [];
        let cursor: string | null = null;
        let pages = 0;
        do {
          const page: any = await (
            await get(key, `/v1/usage?${range}&limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`)
          ).json();
          expect(page.data.length).toBeLessThanOrEqual(limit);
          expect([page.totals, page.total_cost_yuan]).toEqual([full.totals, full.total_cost_yuan]);
          lines.push(...page.data);
          cursor = page.next_cursor;
          pages++;
        } while (cursor && pages <= 100);
        expect(lines).toEqual(full.data);
        expect(pages).toBe(Math.ceil(full.data.length / limit));
      }
    });

    it('refuses a limit out of 1..5000 and a cursor it did not give out, with 400 and the parameter', async () => {
      for (const [query, param] of [
        ['limit=0', 'limit'],
        ['limit=5001', 'limit'],
        ['limit=many', 'limit'],
        ['cursor=not-a-cursor', 'cursor'],
      ]) {
        const res = await get(key, `/v1/usage?${range}&${query}`);
        const body = (await res.json()) as { error?: { type: string; param: string } };
        expect([query, res.status, body.error?.type, body.error?.param]).toEqual([
          query,
          400,
          'invalid_request_error',
          param,
        ]);
      }
    });
  });
});
