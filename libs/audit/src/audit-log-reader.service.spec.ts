import { DataSource } from 'typeorm';
import { RunningApp, startMembership } from '../../../test/support/apps';
import { FakeClock } from '../../../test/support/clock';
import { queryRows } from '../../../test/support/database';
import { decodeAuditCursor } from './audit-cursor';
import { AuditEntry } from './audit-entry';
import { AuditLog } from './audit-log';
import { AuditLogReader } from './audit-log-reader.service';
import { AuditLogEntryView } from './audit-log.dto';

const EXPORT_MAX = 550;

// The reader of both apps' admin audit-log APIs, through membership's app on a real database; rows are
// written by AuditLog (the only writer), stamped by the app's clock, moved here.
describe('AuditLogReader: pages and exports of the audit log', () => {
  const clock = new FakeClock();
  let app: RunningApp;
  let reader: AuditLogReader;

  const record = (...entries: Partial<AuditEntry>[]) =>
    app.app.get(DataSource).transaction(async (m) => {
      for (const e of entries)
        await app.app.get(AuditLog).record(m, {
          actor: { kind: 'system', id: null },
          requestId: null,
          address: null,
          action: 'spec.recorded',
          target: { type: 'spec', id: null },
          ...e,
        });
    });
  const collect = async (lines: AsyncIterable<string>) => {
    let text = '';
    for await (const line of lines) text += line;
    return text;
  };
  const ndjson = (text: string) =>
    text
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as AuditLogEntryView);

  beforeAll(async () => {
    app = await startMembership({ LOG_LEVEL: 'silent', AUDIT_EXPORT_MAX_ROWS: String(EXPORT_MAX) }, { clock });
    reader = app.app.get(AuditLogReader);
  });
  afterAll(() => app?.close());

  it('answers an entry in the API shape: ids as text, the time it was recorded, null for what it lacks', async () => {
    const at = clock.now();
    await record(
      {
        actor: { kind: 'member', id: '42' },
        requestId: 'spec-request',
        address: '198.51.100.3',
        action: 'spec.shaped',
        target: { type: 'spec_shape', id: 'target-1' },
        before: { budget: 1 },
        after: { budget: 2 },
      },
      { action: 'spec.shaped', target: { type: 'spec_shape', id: null } },
    );
    const { data, next_cursor } = await reader.list({ target_type: 'spec_shape' }, 10);
    expect(next_cursor).toBeNull();
    expect(data).toEqual([
      {
        id: expect.stringMatching(/^\d+$/),
        time: new Date(at).toISOString(),
        actor: { kind: 'system', id: null },
        action: 'spec.shaped',
        target: { type: 'spec_shape', id: null },
        before: null,
        after: null,
        request_id: null,
        address: null,
      },
      {
        id: expect.stringMatching(/^\d+$/),
        time: new Date(at).toISOString(),
        actor: { kind: 'member', id: '42' },
        action: 'spec.shaped',
        target: { type: 'spec_shape', id: 'target-1' },
        before: { budget: 1 },
        after: { budget: 2 },
        request_id: 'spec-request',
        address: '198.51.100.3',
      },
    ]);
    expect(Number(data[0].id)).toBeGreaterThan(Number(data[1].id));
  });

  it('pages newest first; following next_cursor answers every row once, and the last page has none', async () => {
    await record(...[1, 2, 3, 4, 5].map((n) => ({ target: { type: 'spec_page', id: String(n) } })));
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 3; page++) {
      const { data, next_cursor } = await reader.list({ target_type: 'spec_page', cursor }, 2);
      seen.push(...data.map((e) => e.target.id!));
      expect(next_cursor === null).toBe(page === 2);
      cursor = next_cursor ?? undefined;
    }
    expect(seen).toEqual(['5', '4', '3', '2', '1']);
  });

  it('filters by actor, exact action or a prefix (its _ and % literal), target, and a time range from inclusive to exclusive', async () => {
    const start = clock.now();
    await record(
      { action: 'spec.a_b', actor: { kind: 'cli', id: 'ops' }, target: { type: 'spec_filter', id: 'x' } },
      { action: 'spec.axb', target: { type: 'spec_filter', id: 'y' } },
    );
    clock.advance(1000);
    await record({ action: 'spec.a_c', target: { type: 'spec_filter', id: 'x' } });
    const actions = async (q: Record<string, string>) =>
      (await reader.list({ target_type: 'spec_filter', ...q }, 50)).data.map((e) => e.action);

    expect(await actions({ action: 'spec.a_*' })).toEqual(['spec.a_c', 'spec.a_b']);
    expect(await actions({ action: 'spec.a%*' })).toEqual([]);
    expect(await actions({ action: 'spec.axb' })).toEqual(['spec.axb']);
    expect(await actions({ actor_kind: 'cli', actor_id: 'ops' })).toEqual(['spec.a_b']);
    expect(await actions({ actor_kind: 'cli', actor_id: 'someone-else' })).toEqual([]);
    expect(await actions({ target_id: 'x' })).toEqual(['spec.a_c', 'spec.a_b']);
    const iso = (ms: number) => new Date(ms).toISOString();
    expect(await actions({ from: iso(start), to: iso(start + 1000) })).toEqual(['spec.axb', 'spec.a_b']);
    expect(await actions({ from: iso(start + 1000) })).toEqual(['spec.a_c']);
  });

  it('with a time bound pages by time, newest first, though ids do not follow times; every cursor, an old one too, answers the rest once', async () => {
    const t0 = clock.now();
    // Recorded in this order at these minutes after t0, as replicas whose clocks differ record them.
    for (const [id, minute] of [
      ['c', 3],
      ['a', 1],
      ['d', 4],
      ['b', 2],
      ['e', 5],
      ['b2', 2],
    ] as const) {
      clock.advance(t0 + minute * 60_000 - clock.now());
      await record({ action: 'spec.timed', target: { type: 'spec_time', id } });
    }
    clock.advance(t0 + 10 * 60_000 - clock.now());
    const query = { target_type: 'spec_time', from: new Date(t0).toISOString() };
    const seen: string[] = [];
    const cursors: string[] = [];
    let cursor: string | undefined;
    do {
      const { data, next_cursor } = await reader.list({ ...query, cursor }, 2);
      seen.push(...data.map((e) => e.target.id!));
      if (next_cursor) cursors.push(next_cursor);
      cursor = next_cursor ?? undefined;
    } while (cursor);
    // Of one time, the later recorded first, as without a time bound.
    expect(seen).toEqual(['e', 'd', 'c', 'b2', 'b', 'a']);
    expect(cursors).toHaveLength(2);
    expect((await reader.list({ target_type: 'spec_time' }, 10)).data.map((e) => e.target.id)).toEqual([
      'b2',
      'e',
      'b',
      'd',
      'a',
      'c',
    ]);

    // A cursor given out before times were in cursors (just the last row's id) goes on from that row in time order.
    const { before } = JSON.parse(Buffer.from(cursors[0], 'base64url').toString()) as { before: string };
    const old = Buffer.from(JSON.stringify({ before })).toString('base64url');
    expect((await reader.list({ ...query, cursor: old }, 10)).data.map((e) => e.target.id)).toEqual([
      'c',
      'b2',
      'b',
      'a',
    ]);
    // A time that is no time is no cursor (the API answers 400 for it: audit-log.dto.ts).
    const bogus = Buffer.from(JSON.stringify({ before, at: '2026-02-30T00:00:00.000000Z' })).toString('base64url');
    expect(decodeAuditCursor(bogus)).toBeNull();
    expect(decodeAuditCursor(cursors[0])).toEqual({ id: before, at: expect.stringMatching(/^\d{4}-.*\.\d{6}Z$/) });
  });

  it('exports at most AUDIT_EXPORT_MAX_ROWS rows across its pages, answering where the next export starts', async () => {
    await queryRows(
      app.dbUrl,
      `INSERT INTO audit_log (actor_kind, action, target_type, target_id, created_at)
       SELECT 'system', 'spec.bulk', 'spec_export', n::text, $1 FROM generate_series(1, 600) n`,
      [new Date(clock.now())],
    );
    const first = await reader.export({ target_type: 'spec_export' }, 'ndjson');
    expect(first).toMatchObject({
      contentType: 'application/x-ndjson; charset=utf-8',
      filename: expect.stringMatching(/^audit-log-.*\.ndjson$/),
    });
    const head = ndjson(await collect(first.lines));
    expect(head).toHaveLength(EXPORT_MAX);
    expect(head.slice(0, 2)).toEqual((await reader.list({ target_type: 'spec_export' }, 2)).data);
    expect(first.nextCursor).toEqual(expect.any(String));

    const rest = await reader.export({ target_type: 'spec_export', cursor: first.nextCursor! }, 'ndjson');
    const tail = ndjson(await collect(rest.lines));
    expect(rest.nextCursor).toBeNull();
    const ids = [...head, ...tail].map((e) => Number(e.target.id));
    expect(ids).toEqual(Array.from({ length: 600 }, (_, i) => 600 - i));

    // With a time bound (time order; one time, so the same rows), its cursor carries on the same way.
    const since = { target_type: 'spec_export', from: new Date(clock.now()).toISOString() };
    const timed = await reader.export(since, 'ndjson');
    expect(ndjson(await collect(timed.lines))).toEqual(head);
    const timedRest = await reader.export({ ...since, cursor: timed.nextCursor! }, 'ndjson');
    expect(ndjson(await collect(timedRest.lines))).toEqual(tail);
  });

  it('exports CSV with its header and one line per row, newest first', async () => {
    await record(
      { action: 'spec.csv', target: { type: 'spec_csv', id: '1' } },
      { action: 'spec.csv', target: { type: 'spec_csv', id: '2' } },
    );
    const csv = await reader.export({ target_type: 'spec_csv' }, 'csv');
    expect(csv).toMatchObject({ contentType: 'text/csv; charset=utf-8', nextCursor: null });
    const lines = (await collect(csv.lines)).split('\r\n');
    expect(lines[0]).toBe('id,time,actor_kind,actor_id,action,target_type,target_id,request_id,address,before,after');
    expect(lines.slice(1, 3).map((l) => l.split(',')[6])).toEqual(['2', '1']);
    expect(lines.slice(3)).toEqual(['']);
  });
});
