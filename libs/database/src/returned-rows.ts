/**
 * The rows of an `UPDATE`/`DELETE ... RETURNING` run through TypeORM's `query()`: its PostgreSQL runner
 * answers those two commands as `[rows, rowCount]` and every other one as the rows alone.
 */
export function returnedRows<T>(result: unknown): T[] {
  if (Array.isArray(result) && result.length === 2 && Array.isArray(result[0]) && typeof result[1] === 'number')
    return result[0] as T[];
  return result as T[];
}
