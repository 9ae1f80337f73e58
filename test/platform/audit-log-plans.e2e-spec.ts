import type { Type } from '@nestjs/common';
import { DataSource, MigrationInterface } from 'typeorm';
import { dataSourceOptions } from '@app/database';
import { AuditFilter, AuditLogRepository } from '@app/audit';
import { MEMBERSHIP_MIGRATIONS } from '../../apps/membership/src/migrations';
import { GATEWAY_MIGRATIONS } from '../../apps/ai-gateway/src/migrations';
import { createTestDatabase } from '../support/database';

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Index Cond'?: string;
  'Parent Relationship'?: string;
  Filter?: string;
  'Actual Rows'?: number;
  'Rows Removed by Filter'?: number;
  Plans?: PlanNode[];
}

const ROWS = 30_000;
const PAGE = 51; // a page of 50 and the row that says there is a next one (audit-log-reader.service.ts)

/** Every node of a plan, depth first. */
const nodesOf = (plan: PlanNode): PlanNode[] => [plan, ...(plan.Plans ?? []).flatMap(nodesOf)];

/**
 * The plan PostgreSQL makes for the page query audit-log.repository.ts sends for `filter`: the repository's own
 * SQL and parameters, run under EXPLAIN on the real database.
 */
async function planOf(ds: DataSource, table: string, filter: AuditFilter, analyze = false): Promise<PlanNode> {
  let plan: PlanNode | undefined;
  const explaining = {
    query: async (sql: string, params: unknown[]) => {
      const [row] = await ds.query(`EXPLAIN (FORMAT JSON${analyze ? ', ANALYZE' : ''}) ${sql}`, params);
      plan = row['QUERY PLAN'][0].Plan;
      return [];
    },
  };
  await new AuditLogRepository(explaining as unknown as DataSource, { table }).page(filter, PAGE);
  return plan!;
}

/**
 * The app's migrations up to and including `last`, as its runners run them (data-source.ts), so a revert is that
 * one's whatever other migrations come after it.
 */
function dataSource(url: string, all: Type<MigrationInterface>[], history: string, last: string) {
  return new DataSource(
    dataSourceOptions(url, {
      entities: [],
      migrations: all.slice(0, all.findIndex((m) => m.name === last) + 1),
      migrationsTableName: history,
      migrationsRun: false,
    }),
  );
}

/**
 * 30 000 rows a minute apart from 2026-01-01 00:01. One actor and one target ('busy') each in 1 row of 150, spread
 * over the table: more than a page, few enough that reading the table newest first for them costs more than their
 * index; cli and site_config rows are rare.
 */
async function insertRows(ds: DataSource, table: string): Promise<void> {
  await ds.query(
    `INSERT INTO ${table} (actor_kind, actor_id, action, target_type, target_id, created_at)
     SELECT CASE WHEN g % 499 = 0 THEN 'cli' ELSE 'member' END,
            CASE WHEN g % 150 = 0 THEN 'busy' ELSE (g % 1000)::text END,
            CASE WHEN g % 499 = 0 THEN 'site_config.updated'
                 ELSE (ARRAY['key.created', 'key.updated', 'project.updated'])[1 + g % 3] END,
            CASE WHEN g % 499 = 0 THEN 'site_config' ELSE 'api_key' END,
            CASE WHEN g % 150 = 1 THEN 'busy' ELSE (g % 5000)::text END,
            timestamptz '2026-01-01' + g * interval '1 minute'
     FROM generate_series(1, $1::int) g`,
    [ROWS],
  );
  await ds.query(`ANALYZE ${table}`);
}

const indexesOf = async (ds: DataSource, table: string): Promise<string[]> =>
  (await ds.query<Array<{ indexname: string }>>(`SELECT indexname FROM pg_indexes WHERE tablename = $1`, [table]))
    .map((r) => r.indexname)
    .sort();

// libs/audit/src/audit-migrations.ts: the first indexes led with actor_kind and target_type, so a filter on
// actor_id or target_id alone (an operator following one member or one key) read the whole audit table.
describe.each([
  ['membership', 'audit_log', MEMBERSHIP_MIGRATIONS, 'membership_migrations'],
  ['ai-gateway', 'ai_audit_log', GATEWAY_MIGRATIONS as Type<MigrationInterface>[], 'ai_gateway_migrations'],
])('%s audit log: a filter on one column walks its index newest first', (_app, table, migrations, history) => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let ds: DataSource;
  const named = (...suffixes: string[]) => [`${table}_pkey`, ...suffixes.map((s) => `idx_${table}_${s}`)].sort();
  const first = named('action', 'actor', 'created', 'target');
  const filters = named('action_pattern', 'actor_id', 'actor_kind', 'created', 'target_id', 'target_type');

  beforeAll(async () => {
    db = await createTestDatabase();
    ds = dataSource(db.url, migrations, history, 'AuditLogFilterIndexes1797020000000');
    await ds.initialize();
    await ds.runMigrations();
    await insertRows(ds, table);
  });
  afterAll(async () => {
    await ds?.destroy();
    await db?.drop();
  });

  it('replaces the first indexes outside a transaction, reverts in one, and runs again', async () => {
    expect(await indexesOf(ds, table)).toEqual(filters);
    // npm run migration:revert: TypeORM's revert runs down() in a transaction, whatever the migration says.
    await ds.undoLastMigration({ transaction: 'each' });
    expect(await indexesOf(ds, table)).toEqual(first);
    expect((await ds.runMigrations()).map((m) => m.name)).toEqual(['AuditLogFilterIndexes1797020000000']);
    expect(await indexesOf(ds, table)).toEqual(filters);
    const invalid = await ds.query(
      `SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid WHERE c.relname = $1 AND NOT i.indisvalid`,
      [table],
    );
    expect(invalid).toEqual([]);
  });

  it.each([
    ['actor_id', { actorId: 'busy' }],
    ['actor_id', { actorId: 'busy', beforeId: '20000' }],
    ['target_id', { targetId: 'busy' }],
    ['target_id', { targetId: 'busy', beforeId: '20000' }],
    ['actor_kind', { actorKind: 'cli' }],
    ['target_type', { targetType: 'site_config' }],
  ])('a filter on %s (%j): Limit over an Index Scan of its index, no Sort, no Seq Scan', async (column, filter) => {
    const plan = await planOf(ds, table, filter);
    expect(plan['Node Type']).toBe('Limit');
    expect(plan.Plans![0]).toMatchObject({ 'Node Type': 'Index Scan', 'Index Name': `idx_${table}_${column}` });
    if ('beforeId' in filter) expect(plan.Plans![0]['Index Cond']).toContain('id <');
    expect(nodesOf(plan).map((n) => n['Node Type'])).not.toEqual(
      expect.arrayContaining([expect.stringMatching(/^(Seq Scan|Sort|Incremental Sort)$/)]),
    );
  });

  it.each([
    ['an exact action', { action: 'site_config.updated' }],
    ['an action prefix', { action: 'site_config.*' }],
    ['an actor of one kind', { actorKind: 'member', actorId: 'busy' }],
    ['a target of one type', { targetType: 'api_key', targetId: 'busy' }],
  ])('%s (%j) is read through an index, not the whole table', async (_what, filter) => {
    const nodes = nodesOf(await planOf(ds, table, filter));
    expect(nodes.map((n) => n['Node Type'])).not.toContain('Seq Scan');
    const used = nodes.map((n) => n['Index Name']).filter(Boolean);
    expect(used.length).toBeGreaterThan(0);
    expect(used).not.toContain(`${table}_pkey`);
  });
});

/** A time `minutes` after 2026-01-01 00:00: row g of insertRows is at minute g. */
const minute = (minutes: number) => new Date(Date.UTC(2026, 0, 1) + minutes * 60_000);

// libs/audit/src/audit-migrations.ts createAuditLogTimeIndex: `from`/`to` were read newest first by id through the
// primary key, so a `to` far in the past read every newer row (29 000 here) before the first one of its page.
describe.each([
  ['membership', 'audit_log', MEMBERSHIP_MIGRATIONS, 'membership_migrations'],
  ['ai-gateway', 'ai_audit_log', GATEWAY_MIGRATIONS as Type<MigrationInterface>[], 'ai_gateway_migrations'],
])('%s audit log: a time range is read in time order through its index', (_app, table, migrations, history) => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let ds: DataSource;
  const timeIndex = `idx_${table}_created_id`;

  beforeAll(async () => {
    db = await createTestDatabase();
    ds = dataSource(db.url, migrations, history, 'AuditLogTimeIndex1797060000000');
    await ds.initialize();
    await ds.runMigrations();
    await insertRows(ds, table);
  });
  afterAll(async () => {
    await ds?.destroy();
    await db?.drop();
  });

  it('replaces the created_at index outside a transaction, reverts in one, and runs again', async () => {
    const created = async () => (await indexesOf(ds, table)).filter((n) => n.startsWith(`idx_${table}_created`));
    expect(await created()).toEqual([timeIndex]);
    await ds.undoLastMigration({ transaction: 'each' });
    expect(await created()).toEqual([`idx_${table}_created`]);
    expect((await ds.runMigrations()).map((m) => m.name)).toEqual(['AuditLogTimeIndex1797060000000']);
    expect(await created()).toEqual([timeIndex]);
  });

  it.each([
    ['a `to` far in the past', { to: minute(1000) }],
    ['a recent `from`', { from: minute(29_000) }],
    ['both', { from: minute(500), to: minute(1000) }],
    ['a `to` and a cursor', { to: minute(1000), beforeId: '900', beforeAt: '2026-01-01T15:00:00.000000Z' }],
    ['a `to` and a cursor from before 1797060000000 (no time)', { to: minute(1000), beforeId: '900' }],
  ])('%s: Limit over an Index Scan of the time index, no Sort, no Seq Scan', async (_what, filter) => {
    const plan = await planOf(ds, table, filter);
    expect(plan['Node Type']).toBe('Limit');
    // The Limit's input (an old cursor's row is looked up by an InitPlan beside it).
    const scan = plan.Plans!.find((n) => n['Parent Relationship'] === 'Outer')!;
    expect(scan['Node Type']).toBe('Index Scan');
    expect(scan).toMatchObject({ 'Index Name': timeIndex, 'Index Cond': expect.stringContaining('created_at') });
    if ('beforeId' in filter) expect(scan['Index Cond']).toMatch(/ROW\(created_at, id\) </);
    expect(nodesOf(plan).map((n) => n['Node Type'])).not.toEqual(
      expect.arrayContaining([expect.stringMatching(/^(Seq Scan|Sort|Incremental Sort)$/)]),
    );
  });

  it('a `to` far in the past reads one page of rows, not the rows after it', async () => {
    const plan = await planOf(ds, table, { to: minute(1000) }, true);
    const scan = nodesOf(plan).find((n) => n['Index Name'])!;
    expect(scan).toMatchObject({ 'Index Name': timeIndex, 'Actual Rows': PAGE });
    expect(scan['Rows Removed by Filter'] ?? 0).toBe(0);
  });

  it.each([
    ['an action prefix', { action: 'key.*', to: minute(1000) }],
    ['one actor', { actorId: 'busy', to: minute(1000) }],
  ])('%s and a `to` far in the past (%j) reads through an index, not the whole table', async (_what, filter) => {
    const nodes = nodesOf(await planOf(ds, table, filter, true));
    expect(nodes.map((n) => n['Node Type'])).not.toContain('Seq Scan');
    const read = nodes.reduce((sum, n) => sum + (n['Actual Rows'] ?? 0) + (n['Rows Removed by Filter'] ?? 0), 0);
    expect(read).toBeLessThan(ROWS / 10);
  });
});
