import { splitLongRuns, Tokenizer } from './tokenizer';

describe('Tokenizer', () => {
  const t = new Tokenizer();
  beforeAll(() => t.onModuleInit());

  it('counts with the real BPE tables', () => {
    expect(t.count('hello world', 'cl100k_base')).toBe(2);
    expect(t.count('', 'o200k_base')).toBe(0);
    // OpenAI's accounting for chat: 3 per message + role + content, 3 to prime the reply.
    expect(t.countChat([{ role: 'user', content: 'hello world' }], 'cl100k_base')).toBe(3 + 3 + 1 + 2);
  });

  it('stops early on huge texts once over the limit, and stays close on long ones', () => {
    const long = 'lorem ipsum dolor sit amet '.repeat(10_000); // 270 000 chars
    const exact = t.count(long.slice(0, 60_000), 'cl100k_base');
    expect(exact).toBeGreaterThan(10_000);
    const full = t.countUpTo(long, 'cl100k_base', Infinity);
    expect(full).toBeGreaterThan(50_000);
    const started = Date.now();
    const huge = 'x y '.repeat(4_000_000); // 16 MB
    expect(t.countUpTo(huge, 'cl100k_base', 8192)).toBeGreaterThan(8192);
    // The whole text would take many seconds to encode; the early stop reads one slice.
    expect(Date.now() - started).toBeLessThan(3000);
  });

  it('counts one long run without spaces (CJK, emoji, letters) in about a second, not minutes, within one token per cut', () => {
    const started = Date.now();
    for (const text of ['字'.repeat(20_000), '😀'.repeat(10_000), 'a'.repeat(60_000)]) expect(t.count(text, 'cl100k_base')).toBeGreaterThan(1000);
    expect(Date.now() - started).toBeLessThan(3000);
    const run = '数据库连接'.repeat(120); // 600 characters: exact encoding is still affordable
    const exact = (t as any).encoding('cl100k_base').encode(run, 'all').length;
    const counted = t.count(run, 'cl100k_base');
    expect(Math.abs(counted - exact)).toBeLessThanOrEqual(Math.ceil(run.length / 64));
    expect(splitLongRuns('😀'.repeat(300)).every((p) => !/^[\udc00-\udfff]/.test(p))).toBe(true);
  });
});
