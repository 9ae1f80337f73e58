import { GatewayError, GatewayErrorCode } from '../errors';
import { AbortSource, Usage } from '@app/llm';
import { relayEvents, RelayedChunk, StreamRelay } from './relay-stream';

interface Chunk extends RelayedChunk {
  choices: Array<{ text: string }>;
}

/** Records, in order, what the relay produces and when it settles; reads the events as the transport does (http/call-answer.ts). */
function harness(opts: { wantsUsage?: boolean; closeAfterWrites?: number; endThrows?: boolean } = {}) {
  const log: unknown[] = [];
  const gone = new AbortSource();
  const relay: StreamRelay<Chunk> = {
    wantsUsage: opts.wantsUsage ?? false,
    events: (chunk) => [chunk.choices.map((c) => c.text).join('')],
    generated: (choice) => (choice as { text: string }).text,
    usage: async (upstream, delivered): Promise<Usage> =>
      upstream ?? { prompt_tokens: 1, completion_tokens: delivered.length, total_tokens: 1 + delivered.length },
    end: async (usage) => {
      if (opts.endThrows) throw new Error('could not store');
      return [`end ${usage.completion_tokens}`];
    },
    failed: (error) => [`failed ${error.message}`],
    settle: async (status, usage, error) => void log.push(['settle', status, usage.completion_tokens, error]),
  };
  /** Relays `upstream`; a client that stops after `closeAfterWrites` events aborts the call (the transport does). */
  const run = async (upstream: AsyncIterable<Chunk>) => {
    const relayed = relayEvents(gone, upstream, relay);
    let writes = 0;
    for await (const event of relayed.events) {
      if (gone.aborted) continue;
      log.push(['data', event]);
      if (++writes === opts.closeAfterWrites) gone.abort();
    }
    log.push('end');
    return relayed.settled;
  };
  return { log, run, relay };
}

async function* chunks(items: Chunk[], thenFail?: Error): AsyncGenerator<Chunk> {
  for (const c of items) yield c;
  if (thenFail) throw thenFail;
}

const text = (t: string): Chunk => ({ choices: [{ text: t }] });

describe('relayEvents', () => {
  it('settles as aborted, billing what was delivered, when the transport stops pulling early', async () => {
    const h = harness();
    const relayed = relayEvents(new AbortSource(), chunks([text('a'), text('bc'), text('d')]), h.relay);
    for await (const event of relayed.events) {
      h.log.push(['data', event]);
      if (event === 'bc') break;
    }
    expect(await relayed.settled).toBe('aborted');
    expect(h.log).toEqual([
      ['data', 'a'],
      ['data', 'bc'],
      ['settle', 'aborted', 1, undefined],
    ]);
  });

  it('forwards each chunk, drops usage-only chunks the caller did not ask for, and settles before the closing event', async () => {
    const h = harness();
    const usage = { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 };
    await h.run(chunks([text('a'), text('b'), { choices: [], usage }]));
    expect(h.log).toEqual([['data', 'a'], ['data', 'b'], ['settle', 'ok', 2, undefined], ['data', 'end 2'], 'end']);
  });

  it('forwards usage-only chunks when the caller asked for usage', async () => {
    const h = harness({ wantsUsage: true });
    await h.run(
      chunks([text('a'), { choices: [], usage: { prompt_tokens: 3, completion_tokens: 9, total_tokens: 12 } }]),
    );
    expect(h.log).toEqual([['data', 'a'], ['data', ''], ['settle', 'ok', 9, undefined], ['data', 'end 9'], 'end']);
  });

  it('an upstream failure after the stream started is settled as failed (what was delivered counted) before the error event', async () => {
    const h = harness();
    await h.run(
      chunks(
        [text('abc')],
        new GatewayError(GatewayErrorCode.UpstreamTimeout, { where: 'upstream', detail: 'no answer in 30 s' }),
      ),
    );
    const settle = h.log[1] as [string, string, number, string];
    expect(h.log[0]).toEqual(['data', 'abc']);
    expect(settle.slice(0, 3)).toEqual(['settle', 'failed', 3]);
    expect(h.log[2]).toEqual(['data', `failed ${settle[3]}`]);
    expect(h.log[3]).toBe('end');
    expect(h.log).toHaveLength(4);
  });

  it('a client that left is settled as aborted, billed what was delivered, and gets no closing event', async () => {
    const h = harness({ closeAfterWrites: 2 });
    const settled = await h.run(
      chunks([
        text('ab'),
        text('cd'),
        text('ef'),
        { choices: [], usage: { prompt_tokens: 1, completion_tokens: 99, total_tokens: 100 } },
      ]),
    );
    expect(h.log).toEqual([['data', 'ab'], ['data', 'cd'], ['settle', 'aborted', 2, undefined], 'end']);
    expect(settled).toBe('aborted');
  });

  it('closing events that cannot be made (the Responses API could not store) end the stream with an error event; the call stays settled', async () => {
    const h = harness({ endThrows: true });
    await h.run(chunks([text('a')]));
    expect(h.log.slice(0, 2)).toEqual([
      ['data', 'a'],
      ['settle', 'ok', 1, undefined],
    ]);
    expect(h.log[2]).toEqual(['data', expect.stringMatching(/^failed /)]);
    expect(h.log[3]).toBe('end');
  });
});
