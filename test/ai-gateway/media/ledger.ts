import { Client } from 'pg';

export interface LedgerRow {
  key_id: string;
  endpoint: string;
  model: string;
  status: string;
  cost_yuan: string;
  seconds: string;
  characters: number;
  images: number;
}

/**
 * Waits until the usage ledger holds at least `count` rows for `endpoint` (writes are batched), however
 * long a loaded machine takes; a write that never comes ends at Jest's timeout. `_timeoutMs` is kept
 * for the callers' argument order and is no longer a deadline (returning fewer rows after 5 s made
 * the callers fail under load).
 */
export async function ledgerRows(
  dbUrl: string,
  endpoint: string,
  count = 1,
  _timeoutMs = 5000,
  keyId?: string,
): Promise<LedgerRow[]> {
  const client = new Client({ connectionString: dbUrl });
  await client.connect();
  try {
    for (;;) {
      const { rows } = await client.query<LedgerRow>(
        'select key_id, endpoint, model, status, cost_yuan, seconds, characters, images from ai_usage_records where endpoint = $1 and ($2::uuid is null or key_id = $2) order by id',
        [endpoint, keyId ?? null],
      );
      if (rows.length >= count) return rows;
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    await client.end();
  }
}
