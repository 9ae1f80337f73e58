import type { AuditContext } from '@app/audit';
import { RunningApp, startGateway } from '../support/apps';
import { FakeClock } from '../support/clock';
import { apiKeyPrincipal } from '../../apps/ai-gateway/src/keys/gateway.authenticator';
import { ApiKeysService } from '../../apps/ai-gateway/src/keys/api-keys.service';
import { LedgerEntry, LedgerRepository } from '../../apps/ai-gateway/src/usage/ledger.repository';
import { MeteringService } from '../../apps/ai-gateway/src/usage/metering.service';

// GET /v1/usage and the admin reads on the real gateway and database: what reading usage makes this replica's
// ledger write.
describe('usage reads and the buffered ledger', () => {
  let app: RunningApp;
  const clock = new FakeClock();
  const FLUSH_MS = 1000;
  let ledger: LedgerRepository;
  let writes: jest.SpyInstance;
  let run = 0;
  const ctx: AuditContext = { actor: { kind: 'admin-token', id: null }, requestId: null, address: null };

  const newKey = async () => {
    const keys = app.app.get(ApiKeysService);
    const created = await keys.create({ name: `usage spec ${++run}` }, ctx);
    return { id: created.id, key: created.key, principal: apiKeyPrincipal(await keys.resolve(created.key)) };
  };
  /** A call of the key settled on this replica: its entry is in the ledger's buffer. */
  const call = async (key: Awaited<ReturnType<typeof newKey>>) => {
    const metering = app.app.get(MeteringService);
    const reservation = await metering.reserve(key.principal, { model: 'm', yuan: 0 });
    await metering.settle(reservation, {
      endpoint: 'chat.completions',
      model: 'm',
      provider: 'd1',
      status: 'ok',
      costYuan: 0.01,
      promptTokens: 3,
      completionTokens: 4,
    });
  };
  const usageOf = async (key: { key: string }) => {
    const res = await fetch(`${app.url}/v1/usage`, { headers: { authorization: `Bearer ${key.key}` } });
    expect(res.status).toBe(200);
    return (await res.json()) as { data: { requests: number }[] };
  };
  const requests = (usage: { data: { requests: number }[] }) => usage.data.reduce((n, d) => n + d.requests, 0);

  beforeAll(async () => {
    app = await startGateway({ LOG_LEVEL: 'silent', AI_LEDGER_FLUSH_MS: String(FLUSH_MS) }, { clock });
    ledger = app.app.get(LedgerRepository);
    // Only the reads write here: the timed flush is stopped (the tests count the writes).
    clearInterval((ledger as unknown as { timer: NodeJS.Timeout }).timer);
  });
  beforeEach(async () => {
    await ledger.flush();
    writes = jest.spyOn(ledger as unknown as { write(batch: LedgerEntry[]): Promise<void> }, 'write');
  });
  afterEach(() => writes.mockRestore());
  afterAll(() => app?.close());

  it("writes nothing for a key with none of its calls buffered, however often it reads, while other keys' calls wait for their batch", async () => {
    const reader = await newKey();
    const busy = await newKey();
    const reads = 8;
    for (let i = 0; i < reads; i++) {
      await call(busy); // another key's traffic, buffered between the reads
      expect(requests(await usageOf(reader))).toBe(0);
    }
    expect(writes).not.toHaveBeenCalled();
    expect(ledger.pending).toBe(reads);
    // The busy key reading its own usage sees all its calls: one write, of the whole batch.
    expect(requests(await usageOf(busy))).toBe(reads);
    expect(writes).toHaveBeenCalledTimes(1);
    expect(ledger.pending).toBe(0);
  });

  it('has a call of the key answered before its read in that answer; reads asked at once share one write', async () => {
    const key = await newKey();
    const other = await newKey();
    await call(other);
    await call(key);
    // As many as a key may run at once (AI_READS_PER_KEY, 4 by default: test/ai-gateway/key-reads.e2e-spec.ts).
    const answers = await Promise.all(Array.from({ length: 4 }, () => usageOf(key)));
    expect(answers.map(requests)).toEqual([1, 1, 1, 1]);
    expect(writes).toHaveBeenCalledTimes(1);
    await call(key);
    expect(requests(await usageOf(key))).toBe(2);
    expect(writes).toHaveBeenCalledTimes(2);
    // Written: nothing of the key is left, and its next reads write nothing.
    await usageOf(key);
    await usageOf(key);
    expect(writes).toHaveBeenCalledTimes(2);
  });

  describe('reads of every key (GET /admin/usage without key_id, GET /admin/upstreams)', () => {
    const admin = async (path: string) => {
      const res = await fetch(`${app.url}${path}`, {
        headers: { authorization: 'Bearer test-admin-token-0123456789' },
      });
      expect(res.status).toBe(200);
      return res.json();
    };
    const reportRequests = async () => requests(await admin('/admin/usage'));

    it('write at most once per AI_LEDGER_FLUSH_MS of the clock, however many read, one after another or at once', async () => {
      clock.advance(FLUSH_MS); // the interval of an earlier test's reads is over
      const key = await newKey();
      await call(key);
      // The first read has the call settled before it: one write.
      const before = await reportRequests();
      expect(writes).toHaveBeenCalledTimes(1);
      const reads = 10;
      for (let i = 0; i < reads; i++) {
        await call(key); // traffic between the reads, buffered
        expect(await reportRequests()).toBe(before);
        await admin('/admin/upstreams');
      }
      await Promise.all(Array.from({ length: reads }, (_, i) => admin(i % 2 ? '/admin/usage' : '/admin/upstreams')));
      expect(writes).toHaveBeenCalledTimes(1);
      expect(ledger.pending).toBe(reads);
      // An interval later the next read writes the batch, once, whoever reads at the same time.
      clock.advance(FLUSH_MS);
      const after = await Promise.all([reportRequests(), reportRequests(), admin('/admin/upstreams')]);
      expect(after.slice(0, 2)).toEqual([before + reads, before + reads]);
      expect(writes).toHaveBeenCalledTimes(2);
      expect(ledger.pending).toBe(0);
      // Nothing buffered: reads write nothing, and leave the interval unspent for the next call's read.
      clock.advance(FLUSH_MS);
      await reportRequests();
      await call(key);
      expect(await reportRequests()).toBe(before + reads + 1);
      expect(writes).toHaveBeenCalledTimes(3);
    });

    it("with key_id the key's buffered calls are written first, as GET /v1/usage does", async () => {
      const key = await newKey();
      const other = await newKey();
      await call(other);
      // Within the interval of the last test's reads: a report of every key does not write.
      await admin('/admin/usage');
      expect(writes).not.toHaveBeenCalled();
      await call(key);
      expect(requests(await admin(`/admin/usage?key_id=${key.id}`))).toBe(1);
      expect(writes).toHaveBeenCalledTimes(1);
      await admin(`/admin/usage?key_id=${key.id}`);
      expect(writes).toHaveBeenCalledTimes(1);
    });
  });
});
