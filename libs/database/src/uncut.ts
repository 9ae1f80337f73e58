import { DataSource, EntityManager, Migration, MigrationExecutor } from 'typeorm';

/**
 * Runs the pending migrations, each in its own transaction, on one connection whose statement_timeout is off: the
 * pool's (DATABASE_STATEMENT_TIMEOUT_MS, database.module.ts) bounds what callers cause, and a migration rewriting a
 * large table or building an index concurrently may rightly take longer.
 */
export async function runMigrationsUncut(ds: DataSource): Promise<Migration[]> {
  const runner = ds.createQueryRunner();
  try {
    await runner.query('SET statement_timeout = 0');
    const executor = new MigrationExecutor(ds, runner);
    executor.transaction = 'each';
    return await executor.executePendingMigrations();
  } finally {
    // Back to the value the connection started with (the pool's) before the pool hands it out again; a connection
    // that cannot answer this is broken and leaves the pool on its error.
    await runner.query('RESET statement_timeout').catch(() => undefined);
    await runner.release();
  }
}

/**
 * Runs `work` in a transaction whose statements the pool's statement_timeout does not cut (SET LOCAL): for sweeps
 * the app runs of its own accord with one statement per table, which after a backlog (a replica down for days) may
 * rightly run long, and would otherwise be cut and rolled back on every pass, never catching up.
 */
export function withoutStatementTimeout<T>(db: DataSource, work: (m: EntityManager) => Promise<T>): Promise<T> {
  return db.transaction(async (m) => {
    await m.query('SET LOCAL statement_timeout = 0');
    return work(m);
  });
}
