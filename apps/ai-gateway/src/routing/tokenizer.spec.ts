import { readFileSync } from 'fs';
import { getEncoding } from 'js-tiktoken';
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
    const exact = getEncoding('cl100k_base').encode(run, 'all').length;
    const counted = t.count(run, 'cl100k_base');
    expect(Math.abs(counted - exact)).toBeLessThanOrEqual(Math.ceil(run.length / 64));
    expect(splitLongRuns('😀'.repeat(300)).every((p) => !/^[\udc00-\udfff]/.test(p))).toBe(true);
  });

  it('counts exactly as js-tiktoken encode(text, "all") for cl100k_base and o200k_base', () => {
    const texts = [
      readFileSync(__filename, 'utf8'),
      readFileSync(require.resolve('./tokenizer'), 'utf8'),
      'hello world',
      '<|endoftext|>hi<|fim_prefix|> x<|endofprompt|><|endoftext|>',
      "I'm sure you'LL see we've THEY'RE done, isn't it",
      'Привет мир! こんにちは世界 안녕하세요 مرحبا بالعالم 数据库连接失败，请稍后再试。',
      '😀🎉 emoji\u200d👩‍👩‍👧 test, Ünïcödé façade naïve e\u0301',
      '\ud800 lone \udc00 surrogates',
      '  \n\n\t\r\n  spaces   \n x  ',
      '1234567890 3.14159 1e10 -0x1F',
      'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa abababababababababab',
      '\x00\x01\x7f\u00ff',
    ];
    // Random mixes of letters, scripts, digits, punctuation and whitespace: many byte-pair merges and ties.
    const alphabet = ['a', 'b', 'e', ' ', '\n', '字', '数', '😀', 'é', 'ß', '1', '.', "'", 'ab', 'aa', '\t', 'Ж', 'ا', 'ก', '\u0301', 'Q', '-', '{', '<|endoftext|>'];
    let seed = 7;
    const next = (n: number) => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
    for (let i = 0; i < 2000; i++) {
      let s = '';
      for (let j = next(40) + 1; j > 0; j--) s += alphabet[next(alphabet.length)];
      texts.push(s);
    }
    for (const name of ['cl100k_base', 'o200k_base'] as const) {
      const ref = getEncoding(name);
      const mismatches = texts.filter((s) => t.count(s, name) !== ref.encode(s, 'all').length);
      expect(mismatches).toEqual([]);
    }
  });
});
