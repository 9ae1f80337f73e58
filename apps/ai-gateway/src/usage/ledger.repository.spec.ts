import { Registry } from 'prom-client';
import { Clock, GenAiMetrics } from '@app/platform';
import { LedgerEntry, LedgerRepository } from './ledger.repository';

function entry(i: number): LedgerEntry {
  return {
    keyId: 'k',
    endpoint: 'chat.completions',
    model: 'm',
    provider: 'p',
    promptTokens: i,
    completionTokens: 0,
    seconds: '0',
    characters: 0,
    images: 0,
    calls: 1,
    costYuan: '0',
    status: 'ok',
    httpStatus: 200,
    error: null,
    latencyMs: 1,
    requestId: null,
  };
}

describe('LedgerRepository', () => {
  function setup(failFirst = 0, duringWrite?: () => void | Promise<void>, clock: Clock = new Clock()) {
    const inserted: LedgerEntry[][] = [];
    let failures = failFirst;
    // Column metadata as TypeORM gives it (property = column name here); the batch arrives as one JSON parameter.
    const columns = ['id', 'entryId', ...Object.keys(entry(0)), 'createdAt'].map((p) => ({
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
        expect(sql).toMatch(
          /^INSERT INTO "ai_usage_records" \(.*"entryId".*"promptTokens".*\) SELECT .* FROM json_to_recordset\(\$1::json\)/,
        );
        expect(sql).not.toContain('"id"');
        if (failures-- > 0) throw new Error('db down');
        inserted.push(JSON.parse(params[0] as string));
        await duringWrite?.();
      },
    };
    const writer = new LedgerRepository(
      db as any,
      { AI_LEDGER_FLUSH_MS: 60_000, AI_LEDGER_BATCH_SIZE: 3 } as any,
      new GenAiMetrics(new Registry()),
      clock,
    );
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

  it('writes what was queued when the flush began: calls answered during its write wait for the next', async () => {
    let next = 10;
    // Two calls settle while each write is in flight, as under steady load (for three writes: a flush that
    // wrote until the queue was empty would otherwise never end).
    const { writer, inserted } = setup(0, () => {
      if (next >= 16) return;
      writer.append(entry(next++));
      writer.append(entry(next++));
    });
    writer.append(entry(1));
    writer.append(entry(2));
    await writer.flush();
    expect(inserted.map((b) => b.map((e) => e.promptTokens))).toEqual([[1, 2]]);
    expect(writer.pending).toBe(2);
    await writer.flush();
    expect(inserted.map((b) => b.map((e) => e.promptTokens))).toEqual([
      [1, 2],
      [10, 11],
    ]);
    expect(writer.pending).toBe(2);
  });

  it('writes the full batches at once and leaves the rest for the next flush', async () => {
    const { writer, inserted } = setup();
    for (let i = 1; i <= 7; i++) writer.append(entry(i)); // batches of 3: the third, sixth append fill one
    await (writer as unknown as { flushing: Promise<void> }).flushing;
    expect(inserted.map((b) => b.map((e) => e.promptTokens))).toEqual([
      [1, 2, 3],
      [4, 5, 6],
    ]);
    expect(writer.pending).toBe(1);
    await writer.flush();
    expect(inserted.flat()).toHaveLength(7);
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

  it('a flush asked for during a write writes everything appended before it (what the usage reads rely on)', async () => {
    let asked: Promise<void> | undefined;
    const { writer, inserted } = setup(0, () => {
      if (asked) return;
      writer.append(entry(2));
      asked = writer.flush();
    });
    writer.append(entry(1));
    await writer.flush();
    await asked;
    expect(inserted.map((b) => b.map((e) => e.promptTokens))).toEqual([[1], [2]]);
  });

  it('flushes asked for before the first begins share its write, which takes what each of them queued', async () => {
    let next = 3;
    // A call settles while the shared write runs: it is for the next flush, not a second write of this one.
    const { writer, inserted } = setup(0, () => {
      if (next === 3) writer.append(entry(next++));
    });
    writer.append(entry(1));
    const first = writer.flush();
    writer.append(entry(2));
    const second = writer.flush();
    await Promise.all([first, second]);
    expect(inserted.map((b) => b.map((e) => e.promptTokens))).toEqual([[1, 2]]);
    expect(writer.pending).toBe(1);
  });

  it("flushes for a key only while one of that key's entries is unwritten (queued or being written)", async () => {
    let during: (() => void) | undefined;
    const { writer, inserted } = setup(0, () => during?.());
    const of = (keyId: string, i: number) => ({ ...entry(i), keyId });
    writer.append(of('other', 1));
    await writer.flushFor('reader');
    expect(inserted).toEqual([]);
    expect(writer.pending).toBe(1);

    writer.append(of('reader', 2));
    let asked: Promise<void> | undefined;
    // While the reader's entry is being written, a read of its usage waits for that write.
    during = () => {
      during = undefined;
      writer.append(of('other', 3));
      asked = writer.flushFor('reader');
    };
    await writer.flushFor('reader');
    await asked;
    expect(inserted.flat().map((e) => e.promptTokens)).toEqual([1, 2, 3]);
    // Written: reading it again writes nothing, whatever other keys have queued.
    writer.append(of('other', 4));
    await writer.flushFor('reader');
    expect(inserted.flat()).toHaveLength(3);
    expect(writer.pending).toBe(1);
  });

  it("keeps a key's entries unwritten after a refused write: a read of its usage still flushes them", async () => {
    const { writer, inserted } = setup(1);
    writer.append({ ...entry(1), keyId: 'reader' });
    await writer.flushFor('reader');
    expect(inserted).toEqual([]);
    await writer.flushFor('reader');
    expect(inserted.flat().map((e) => e.promptTokens)).toEqual([1]);
  });

  it("reads of everyone's usage write at most once per AI_LEDGER_FLUSH_MS of the clock, sharing that write", async () => {
    let now = 1_000_000;
    const clock = Object.assign(new Clock(), { now: () => now });
    const { writer, inserted } = setup(0, undefined, clock);
    // Nothing queued: no write, and the interval is not spent on it.
    await writer.flushForReport();
    expect(inserted).toEqual([]);
    writer.append(entry(1));
    await Promise.all(Array.from({ length: 5 }, () => writer.flushForReport()));
    expect(inserted.map((b) => b.map((e) => e.promptTokens))).toEqual([[1]]);
    // Within the interval (60 s here): calls settled since wait for the timed flush or the next interval's read.
    for (const i of [2, 3]) {
      writer.append(entry(i));
      now += 29_999;
      await writer.flushForReport();
    }
    expect(inserted).toHaveLength(1);
    expect(writer.pending).toBe(2);
    now += 2; // 60 s after the first
    await Promise.all([writer.flushForReport(), writer.flushForReport()]);
    expect(inserted.map((b) => b.map((e) => e.promptTokens))).toEqual([[1], [2, 3]]);
  });

  it("a read of everyone's usage shares a flush already asked for, and waits for a write under way", async () => {
    let during: (() => Promise<void>) | undefined;
    const { writer, inserted } = setup(0, () => during?.());
    writer.append(entry(1));
    const asked = writer.flush();
    expect(writer.flushForReport()).toBe(asked); // asked, not begun: the same write
    await asked;
    expect(inserted).toHaveLength(1);

    // A read while a write is under way (its commit not yet answered) resolves only after it, and writes nothing.
    let commit!: () => void;
    let read: Promise<void> | undefined;
    const order: string[] = [];
    during = () => {
      during = undefined;
      read = writer.flushForReport().then(() => void order.push('read'));
      return new Promise<void>((r) => (commit = r));
    };
    writer.append(entry(2));
    const writing = writer.flush().then(() => void order.push('written'));
    await new Promise((r) => setImmediate(r));
    expect(order).toEqual([]);
    commit();
    await Promise.all([writing, read]);
    expect(order).toEqual(['written', 'read']);
    expect(inserted).toHaveLength(2);
  });

  it('on shutdown also writes calls that settle while the last write runs', async () => {
    let next = 10;
    const { writer, inserted } = setup(0, () => {
      if (next < 14) writer.append(entry(next++));
    });
    writer.onModuleInit();
    writer.append(entry(1));
    await writer.onApplicationShutdown();
    expect(inserted.flat().map((e) => e.promptTokens)).toEqual([1, 10, 11, 12, 13]);
    expect(writer.pending).toBe(0);
  });

  it('stops at shutdown when a write fails, the entries kept and named in the log', async () => {
    const { writer, inserted } = setup(5);
    writer.onModuleInit();
    writer.append(entry(1));
    await writer.onApplicationShutdown();
    expect(inserted).toEqual([]);
    expect(writer.pending).toBe(1);
  });

  it('charges keys without a budget with their new entries, once per key per batch, in key order', async () => {
    const { writer, updates } = table();
    const charged = (key: string, cost: string) => ({ ...entry(0), keyId: key, costYuan: cost, chargeKey: true });
    writer.append(charged('b', '0.5000000000'));
    writer.append(charged('a', '0.0090000000'));
    writer.append(charged('a', '0.0090000000'));
    writer.append({ ...entry(0), keyId: 'c', costYuan: '0.2000000000' }); // budgeted: charged when it settled
    await writer.flush();
    expect(updates).toEqual([
      ['a', '0.0180000000'],
      ['b', '0.5000000000'],
    ]);
  });

  it('writes a batch again after a failure past its commit without doubling rows or charges', async () => {
    const { writer, rows, updates, loseAck } = table();
    writer.append({ ...entry(1), keyId: 'a', costYuan: '0.0100000000', chargeKey: true });
    writer.append(entry(2));
    loseAck(1);
    await writer.flush(); // committed, but the writer saw an error
    expect(writer.pending).toBe(2);
    writer.append({ ...entry(3), keyId: 'a', costYuan: '0.0200000000', chargeKey: true });
    await writer.flush();
    expect(writer.pending).toBe(0);
    expect(rows.map((r) => r.promptTokens).sort()).toEqual([1, 2, 3]);
    expect(updates).toEqual([
      ['a', '0.0100000000'],
      ['a', '0.0200000000'],
    ]);
  });
});

/** A ledger table with a unique entry id, in memory; `loseAck(n)`: the next n writes commit, then throw. */
function table() {
  const rows: LedgerEntry[] = [];
  const updates: unknown[][] = [];
  let lost = 0;
  const run = async (work: (q: (sql: string, params: unknown[]) => Promise<any>) => Promise<unknown>) => {
    const staged: LedgerEntry[] = [];
    const stagedUpdates: unknown[][] = [];
    const result = await work(async (sql, params) => {
      if (sql.startsWith('UPDATE')) return void stagedUpdates.push(params);
      expect(sql).toMatch(/ON CONFLICT \("entryId"\) DO NOTHING RETURNING "entryId" AS entry_id$/);
      const fresh = (JSON.parse(params[0] as string) as LedgerEntry[]).filter(
        (e) => !rows.some((r) => r.entryId === e.entryId) && !staged.some((r) => r.entryId === e.entryId),
      );
      staged.push(...fresh);
      return fresh.map((e) => ({ entry_id: e.entryId }));
    });
    rows.push(...staged);
    updates.push(...stagedUpdates);
    if (lost-- > 0) throw new Error('Connection terminated unexpectedly');
    return result;
  };
  const columns = ['id', 'entryId', ...Object.keys(entry(0)), 'createdAt'].map((p) => ({
    propertyName: p,
    databaseName: p,
    type: 'text',
    isGenerated: p === 'id',
    isCreateDate: p === 'createdAt',
  }));
  const db = {
    getMetadata: () => ({ tableName: 'ai_usage_records', columns }),
    driver: { normalizeType: (c: { type: string }) => c.type },
    query: (sql: string, params: unknown[]) => run((q) => q(sql, params)),
    transaction: (f: (m: { query: (sql: string, params: unknown[]) => Promise<any> }) => Promise<unknown>) =>
      run((q) => f({ query: q })),
  };
  const writer = new LedgerRepository(
    db as any,
    { AI_LEDGER_FLUSH_MS: 60_000, AI_LEDGER_BATCH_SIZE: 3 } as any,
    new GenAiMetrics(new Registry()),
    new Clock(),
  );
  (writer as any).log = { error: jest.fn() };
  return { writer, rows, updates, loseAck: (n: number) => (lost = n) };
}
