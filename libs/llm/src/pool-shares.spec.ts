import { FakeUpstream, startFakeOpenAi } from '../../../test/support/upstreams';
import { until } from '../../../test/support/until';
import { OpenAiCompatibleClient } from './openai-client';
import { defaultConnectionsPerKey, PoolShares } from './pool-shares';
import { CallAbortedError, ChatCompletionChunk, UpstreamError } from './types';

describe('PoolShares', () => {
  it('lets a key hold at most its share, and gives a freed connection to the key served longest ago', async () => {
    const pool = new PoolShares(3, 2);
    expect(pool.enter('a')).toBeUndefined();
    expect(pool.enter('a')).toBeUndefined();
    // a's third call waits for its own share though a connection is free; b's call takes that connection.
    const started: string[] = [];
    void pool.enter('a')!.then(() => started.push('a3'));
    void pool.enter('a')!.then(() => started.push('a4'));
    expect(pool.enter('b')).toBeUndefined();
    expect(pool.stats).toEqual({ active: 3, waiting: 2 });
    // The pool is full: b's and c's next calls wait behind a's two, yet go first (a is at its share).
    void pool.enter('b')!.then(() => started.push('b2'));
    void pool.enter('c')!.then(() => started.push('c1'));
    pool.leave('b');
    await Promise.resolve();
    expect(started).toEqual(['b2']);
    pool.leave('a');
    await Promise.resolve();
    // a is under its share again and its turn came before c's.
    expect(started).toEqual(['b2', 'a3']);
    pool.leave('b');
    await Promise.resolve();
    expect(started).toEqual(['b2', 'a3', 'c1']);
    pool.leave('a');
    await Promise.resolve();
    expect(started).toEqual(['b2', 'a3', 'c1', 'a4']);
    for (const k of ['a', 'a', 'c']) pool.leave(k);
    expect(pool.stats).toEqual({ active: 0, waiting: 0 });
  });

  it('drops a waiting call whose signal aborts, which then holds nothing', async () => {
    const pool = new PoolShares(1, 1);
    expect(pool.enter('a')).toBeUndefined();
    const gone = new AbortController();
    const waiting = pool.enter('b', gone.signal)!;
    const next = pool.enter('c')!;
    gone.abort();
    await expect(waiting).rejects.toBeInstanceOf(CallAbortedError);
    expect(pool.stats).toEqual({ active: 1, waiting: 1 });
    pool.leave('a');
    await next;
    expect(pool.stats).toEqual({ active: 1, waiting: 0 });
    // A leave that has no call behind it changes nothing.
    pool.leave('b');
    expect(pool.stats).toEqual({ active: 1, waiting: 0 });
    await expect(pool.enter('d', gone.signal)).rejects.toBeInstanceOf(CallAbortedError);
  });

  it('gives up a wait at its deadline, as busy, holding nothing', async () => {
    jest.useFakeTimers();
    try {
      const pool = new PoolShares(1, 1);
      expect(pool.enter('a')).toBeUndefined();
      const waiting = pool.enter('b', undefined, 1000)!;
      const outcome = waiting.then(
        () => 'started',
        (e: UpstreamError) => e.kind,
      );
      jest.advanceTimersByTime(999);
      expect(pool.stats).toEqual({ active: 1, waiting: 1 });
      jest.advanceTimersByTime(1);
      expect(await outcome).toBe('busy');
      expect(pool.stats).toEqual({ active: 1, waiting: 0 });
      // A turn that comes before the deadline clears it.
      const next = pool.enter('c', undefined, 1000)!;
      pool.leave('a');
      await next;
      jest.advanceTimersByTime(5000);
      expect(pool.stats).toEqual({ active: 1, waiting: 0 });
    } finally {
      jest.useRealTimers();
    }
  });

  it('starts waiting calls one after another, not nested, when each ends at once (a synchronous failure)', () => {
    const pool = new PoolShares(1, 1);
    expect(pool.admit('a', () => undefined)).toBeUndefined();
    let started = 0;
    for (let i = 0; i < 20_000; i++)
      pool.admit(i % 2 ? 'a' : 'b', () => {
        started++;
        pool.leave(i % 2 ? 'a' : 'b');
      });
    pool.leave('a');
    expect(started).toBe(20_000);
    expect(pool.stats).toEqual({ active: 0, waiting: 0 });
  });

  it('leaves every key all but a quarter of the pool by default', () => {
    expect([1, 2, 4, 8, 32].map(defaultConnectionsPerKey)).toEqual([1, 1, 3, 6, 24]);
  });
});

describe('an upstream pool shared out per key', () => {
  let up: FakeUpstream;
  let client: OpenAiCompatibleClient;
  beforeAll(async () => {
    up = await startFakeOpenAi();
    // Four connections, three of them at most for one key.
    client = new OpenAiCompatibleClient({ baseUrl: up.url, headers: {}, timeoutMs: 60_000, connections: 4 });
  });
  afterAll(async () => {
    await client.close();
    await up.close();
  });

  it("answers another key's call while one key's slow streams hold their share, and runs that key's next stream once one ends", async () => {
    let release!: () => void;
    up.behaviour.holdAfterChunks = 1;
    up.behaviour.hold = new Promise<void>((r) => (release = r));
    const ask = { model: 'm', messages: [{ role: 'user' as const, content: 'one two three' }], stream: true };
    const firstChunk = async (stream: AsyncIterable<ChatCompletionChunk>) => {
      const it = stream[Symbol.asyncIterator]();
      await it.next();
      return it;
    };
    // Key a opens four slow streams: three take connections, the fourth waits for one of a's.
    const opened = [0, 1, 2].map(() => client.chatStream(ask, { key: 'a' }).then(firstChunk));
    const held = await Promise.all(opened);
    const fourth = client.chatStream(ask, { key: 'a' }).then(firstChunk);
    expect(client['http'].shares.stats).toEqual({ active: 3, waiting: 1 });
    // A call of a's that waits and whose caller leaves holds nothing.
    const gone = new AbortController();
    const left = client.chat(
      { model: 'm', messages: [{ role: 'user', content: 'x' }] },
      { key: 'a', signal: gone.signal },
    );
    expect(client['http'].shares.stats).toEqual({ active: 3, waiting: 2 });
    gone.abort();
    await expect(left).rejects.toBeInstanceOf(CallAbortedError);
    expect(client['http'].shares.stats).toEqual({ active: 3, waiting: 1 });
    // A call of a's waits no longer than its timeout (the upstream's own deadline), and fails busy, having sent nothing.
    const sent = up.requests.length;
    await expect(
      client.chat({ model: 'm', messages: [{ role: 'user', content: 'x' }] }, { key: 'a', timeoutMs: 50 }),
    ).rejects.toMatchObject({ kind: 'busy', status: 0 });
    await expect(client.chatStream(ask, { key: 'a', timeoutMs: 50 })).rejects.toMatchObject({ kind: 'busy' });
    expect(client['http'].shares.stats).toEqual({ active: 3, waiting: 1 });
    expect(up.requests.length).toBe(sent);
    // Key b's call goes at once over the connection left (it waited for all of a's streams before).
    const b = await client.chat({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }, { key: 'b' });
    expect(b.choices[0].message.content).toBe('Echo: hi');
    expect(up.stats.streamsStarted).toBe(3);
    // One of a's streams ends: its fourth starts.
    release();
    for await (const chunk of { [Symbol.asyncIterator]: () => held[0] }) void chunk;
    const last = await fourth;
    for (const it of [...held.slice(1), last])
      for await (const chunk of { [Symbol.asyncIterator]: () => it }) void chunk;
    expect(up.stats.streamsStarted).toBe(4);
    // Each stream's connection is left once its body closes (read to its end).
    await until(() => client['http'].shares.stats.active === 0);
    expect(client['http'].shares.stats).toEqual({ active: 0, waiting: 0 });
  });
});
