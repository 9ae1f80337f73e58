import { Repository, ObjectLiteral } from 'typeorm';

/**
 * Reads entities with one plain parameterized SELECT and TypeORM's own column hydration. Used on the
 * per-request reads (profile, authentication): TypeORM's find/findOne builds and parses a query each
 * time, which was ~10 % of a profile read's CPU (npm run bench --cpu-prof membership).
 */
export async function selectEntities<T extends ObjectLiteral>(repo: Repository<T>, where: string, params: unknown[], orderBy = ''): Promise<T[]> {
  const meta = repo.metadata;
  const driver = repo.manager.connection.driver;
  const rows: Record<string, unknown>[] = await repo.query(`SELECT * FROM "${meta.tableName}" WHERE ${where}${orderBy ? ` ORDER BY ${orderBy}` : ''}`, params);
  return rows.map((raw) => {
    const entity = meta.create() as T;
    for (const c of meta.columns) {
      if (!(c.databaseName in raw)) continue;
      (entity as any)[c.propertyName] = driver.prepareHydratedValue(raw[c.databaseName], c);
    }
    return entity;
  });
}
