import { MAX_SSE_EVENT_CHARS, parseSse } from './sse';
import { UpstreamError } from './types';

async function collect(parts: string[]) {
  async function* gen() {
    for (const p of parts) yield new TextEncoder().encode(p);
  }
  const out = [];
  for await (const e of parseSse(gen())) out.push(e);
  return out;
}

describe('parseSse', () => {
  it('yields events split across chunks, with CRLF, comments and multi-line data', async () => {
    const events = await collect([
      'da',
      'ta: {"a":1}\r',
      '\n\r\n: comment\n',
      'event: ping\ndata: x\ndata: y\n\n',
      'data: [DONE]\n\n',
    ]);
    expect(events).toEqual([
      { event: 'message', data: '{"a":1}' },
      { event: 'ping', data: 'x\ny' },
      { event: 'message', data: '[DONE]' },
    ]);
  });

  it('drops an incomplete trailing event (stream cut mid-way)', async () => {
    const events = await collect(['data: one\n\n', 'data: {"partial"']);
    expect(events).toEqual([{ event: 'message', data: 'one' }]);
  });

  it('decodes multi-byte characters split between chunks', async () => {
    const bytes = new TextEncoder().encode('data: 你好\n\n');
    async function* gen() {
      yield bytes.slice(0, 8);
      yield bytes.slice(8);
    }
    const out = [];
    for await (const e of parseSse(gen())) out.push(e.data);
    expect(out).toEqual(['你好']);
  });

  it('reassembles a long line sent in many small chunks, each chunk scanned once', async () => {
    const line = 'x'.repeat(200_000);
    const parts = ['data: '];
    for (let i = 0; i < line.length; i += 100) parts.push(line.slice(i, i + 100));
    parts.push('\r', '\n', '\r\n', 'data: next\n\n');
    expect(await collect(parts)).toEqual([
      { event: 'message', data: line },
      { event: 'message', data: 'next' },
    ]);
  });

  it('refuses a line or an event longer than MAX_SSE_EVENT_CHARS instead of buffering it without bound', async () => {
    const big = 'y'.repeat(1024 * 1024);
    const line = ['data: ', ...Array.from({ length: MAX_SSE_EVENT_CHARS / big.length + 1 }, () => big)];
    await expect(collect(line)).rejects.toBeInstanceOf(UpstreamError);
    const lines = Array.from({ length: MAX_SSE_EVENT_CHARS / big.length + 1 }, () => `data: ${big}\n`);
    await expect(collect(lines)).rejects.toThrow(/longer than/);
  });
});
