import { DataSource, Repository, ObjectLiteral } from 'typeorm';
import { pgPoolOf } from '@app/platform';

/**
 * Reads entities with one plain parameterized SELECT and TypeORM's own column hydration. Used on the
 * per-request reads (profile, authentication): TypeORM's find/findOne builds and parses a query each
 * time, a real share of a profile read's CPU (docs/operations/performance.md).
 */
export async function selectEntities<T extends ObjectLiteral>(
  repo: Repository<T>,
  where: string,
  params: unknown[],
  orderBy = '',
): Promise<T[]> {
  const meta = repo.metadata;
  const rows: Record<string, unknown>[] = await repo.query(
    `SELECT * FROM "${meta.tableName}" WHERE ${where}${orderBy ? ` ORDER BY ${orderBy}` : ''}`,
    params,
  );
  return rows.map((raw) => hydrateEntity(repo, raw));
}

/** An entity from a raw row, with TypeORM's column hydration (columns missing from the row stay unset). */
export function hydrateEntity<T extends ObjectLiteral>(repo: Repository<T>, raw: Record<string, unknown>): T {
  const meta = repo.metadata;
  const driver = repo.manager.connection.driver;
  const entity = meta.create() as T;
  for (const c of meta.columns) {
    if (!(c.databaseName in raw)) continue;
    (entity as Record<string, unknown>)[c.propertyName] = driver.prepareHydratedValue(raw[c.databaseName], c);
  }
  return entity;
}

/**
 * Rows of a fixed hot-path query run straight on the pg pool as a named prepared statement: PostgreSQL
 * parses and plans it once per connection, and TypeORM's query runner (a runner per call, pool
 * acquire/release, broadcaster) is skipped. `text` must be constant for a given `name` and list its
 * columns (not `*`), so a later migration cannot change a cached statement's result type.
 */
export async function preparedRows(
  dataSource: DataSource,
  name: string,
  text: string,
  values: unknown[],
): Promise<Record<string, unknown>[]> {
  return (await pgPoolOf(dataSource).query({ name, text, values })).rows;
}
