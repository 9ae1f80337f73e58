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

/** Waits until the usage ledger holds at least `count` rows for `endpoint` (writes are batched). */
export async function ledgerRows(dbUrl: string, endpoint: string, count = 1, timeoutMs = 5000, keyId?: string): Promise<LedgerRow[]> {
  const client = new Client({ connectionString: dbUrl });
  await client.connect();
  try {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const { rows } = await client.query<LedgerRow>(
        'select key_id, endpoint, model, status, cost_yuan, seconds, characters, images from ai_usage_records where endpoint = $1 and ($2::uuid is null or key_id = $2) order by id',
        [endpoint, keyId ?? null],
      );
      if (rows.length >= count || Date.now() > deadline) return rows;
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    await client.end();
  }
}
