import { LedgerEntry, LedgerWriter } from './ledger.writer';

function entry(i: number): LedgerEntry {
  return { keyId: 'k', endpoint: 'chat.completions', model: 'm', provider: 'p', promptTokens: i, completionTokens: 0, seconds: '0', characters: 0, images: 0, calls: 1, costYuan: '0', status: 'ok', httpStatus: 200, error: null, latencyMs: 1, requestId: null };
}

describe('LedgerWriter', () => {
  function setup(failFirst = 0) {
    const inserted: LedgerEntry[][] = [];
    let failures = failFirst;
    // Column metadata as TypeORM gives it (property = column name here); the batch arrives as one JSON parameter.
    const columns = ['id', ...Object.keys(entry(0)), 'createdAt'].map((p) => ({
      propertyName: p,
      databaseName: p,
      type: 'text',
      isGenerated: p === 'id',
      isCreateDate: p === 'createdAt',
    }));
    const db = {
      getMetadata: () => ({ tableName: 'ai_usage_records', columns }),
      driver: { normalizeType: (c: { type: string }) => c.type },
      query: async (sql: string, params: unknown[]) => {
        expect(sql).toMatch(/^INSERT INTO "ai_usage_records" \(.*"promptTokens".*\) SELECT .* FROM json_to_recordset\(\$1::json\)/);
        expect(sql).not.toContain('"id"');
        if (failures-- > 0) throw new Error('db down');
        inserted.push(JSON.parse(params[0] as string));
      },
    };
    const writer = new LedgerWriter(db as any, { AI_LEDGER_FLUSH_MS: 60_000, AI_LEDGER_BATCH_SIZE: 3 } as any);
    (writer as any).log = { error: jest.fn() };
    return { writer, inserted };
  }

  it('writes in batches of the configured size, nothing on the request path', async () => {
    const { writer, inserted } = setup();
    writer.append(entry(1));
    writer.append(entry(2));
    expect(inserted).toHaveLength(0);
    writer.append(entry(3)); // a full batch goes at once
    await writer.flush();
    writer.append(entry(4));
    await writer.flush();
    expect(inserted.map((b) => b.map((e) => e.promptTokens))).toEqual([[1, 2, 3], [4]]);
    expect(Number.isNaN(Date.parse(inserted[0][0].createdAt as any))).toBe(false);
  });

  it('keeps entries when the database refuses them and writes them on the next flush', async () => {
    const { writer, inserted } = setup(1);
    writer.append(entry(1));
    await writer.flush();
    expect(writer.pending).toBe(1);
    await writer.flush();
    expect(writer.pending).toBe(0);
    expect(inserted).toEqual([[expect.objectContaining({ promptTokens: 1 })]]);
  });

  it('flushes everything on shutdown', async () => {
    const { writer, inserted } = setup();
    writer.onModuleInit();
    for (let i = 0; i < 7; i++) writer.append(entry(i));
    await writer.onApplicationShutdown();
    expect(inserted.flat()).toHaveLength(7);
  });

  it('charges keys without a budget once per key per flush, keeping a refused charge for the next flush', async () => {
    const updates: unknown[][] = [];
    let fail = 1;
    const db = {
      getRepository: () => ({ insert: async () => undefined }),
      query: async (_sql: string, params: unknown[]) => {
        if (params[0] === 'b' && fail-- > 0) throw new Error('db down');
        updates.push(params);
      },
    };
    const writer = new LedgerWriter(db as any, { AI_LEDGER_FLUSH_MS: 60_000, AI_LEDGER_BATCH_SIZE: 3 } as any);
    (writer as any).log = { error: jest.fn() };
    writer.chargeLater('a', 0.009);
    writer.chargeLater('a', 0.009);
    writer.chargeLater('a', 0.009);
    writer.chargeLater('b', 0.5);
    writer.chargeLater('c', 0); // nothing to charge
    expect(updates).toHaveLength(0);
    await writer.flush();
    expect(updates).toEqual([['a', '0.0270000000']]);
    writer.chargeLater('b', 0.25);
    await writer.flush();
    expect(updates).toEqual([['a', '0.0270000000'], ['b', '0.7500000000']]);
    await writer.flush();
    expect(updates).toHaveLength(2);
  });
});
