import { Tokenizer } from './tokenizer';

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
});
