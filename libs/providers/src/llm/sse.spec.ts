import { parseSse } from './sse';

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
    const events = await collect(['da', 'ta: {"a":1}\r', '\n\r\n: comment\n', 'event: ping\ndata: x\ndata: y\n\n', 'data: [DONE]\n\n']);
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
});
