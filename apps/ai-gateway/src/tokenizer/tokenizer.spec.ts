import { readFileSync } from 'fs';
import { getEncoding } from 'js-tiktoken';
import { BpeCounter, MAX_PIECE, utf8Into } from './bpe-counter';
import {
  IMAGE_MAX_TOKENS,
  imageSizeOf,
  imageTokens,
  isSpace,
  Pace,
  partTokens,
  SLICE,
  splitLongRuns,
  Tokenizer,
} from './tokenizer';

/** Longest run of characters of one class (whitespace or not) in `s`. */
function longestRun(s: string): number {
  let longest = 0;
  let run = 0;
  let space: boolean | undefined;
  for (let i = 0; i < s.length; i++) {
    const c = isSpace(s.charCodeAt(i));
    run = c === space ? run + 1 : 1;
    space = c;
    longest = Math.max(longest, run);
  }
  return longest;
}

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
    const huge = 'x y '.repeat(4_000_000); // 16 MB
    const before = t.work();
    expect(t.countUpTo(huge, 'cl100k_base', 8192)).toBeGreaterThan(8192);
    // The early stop encodes a few slices, not the 16 MB.
    expect(t.work() - before).toBeLessThan(200_000);
  });

  it('counts one long run without spaces (CJK, emoji, letters) within one token per cut', () => {
    for (const text of ['字'.repeat(20_000), '😀'.repeat(10_000), 'a'.repeat(60_000)])
      expect(t.count(text, 'cl100k_base')).toBeGreaterThan(1000);
    const run = '数据库连接'.repeat(120); // 600 characters: exact encoding is still affordable
    const exact = getEncoding('cl100k_base').encode(run, 'all').length;
    const counted = t.count(run, 'cl100k_base');
    expect(Math.abs(counted - exact)).toBeLessThanOrEqual(Math.ceil(run.length / 64));
    expect(splitLongRuns('😀'.repeat(300)).every((p) => !/^[\udc00-\udfff]/.test(p))).toBe(true);
  });

  // A long run of U+00A0 was one pre-tokenizer piece and its byte-pair merge was quadratic.
  const RUNS: Record<string, string> = {
    'U+00A0': '\u00a0',
    'U+3000': '\u3000',
    newlines: '\n',
    spaces: ' ',
    'CRLF and tabs': '\r\n\t',
    letters: 'a',
    'upper case': 'Q',
    CJK: '字',
    emoji: '😀',
    punctuation: '!',
    'combining marks': 'e\u0301',
    digits: '7',
    mixed: ' \u00a0\n\u3000a字😀!',
  };

  it('cuts every long run of one character class, whitespace included, and keeps the text', () => {
    for (const [name, unit] of Object.entries(RUNS)) {
      const text = unit.repeat(Math.ceil(5000 / unit.length));
      const parts = splitLongRuns(text);
      expect({ name, joined: parts.join('') === text }).toEqual({ name, joined: true });
      // No part holds a run of more than 64 characters of one class (whitespace / not whitespace).
      for (const p of parts) expect({ name, longest: longestRun(p) <= 64 }).toEqual({ name, longest: true });
      expect(parts.every((p) => !/^[\udc00-\udfff]/.test(p))).toBe(true);
    }
  });

  it('does work linear in the input for runs of any character class (counted in work units, both encodings)', () => {
    for (const encoding of ['cl100k_base', 'o200k_base'] as const) {
      for (const [name, unit] of Object.entries(RUNS)) {
        const workFor = (chars: number) => {
          const text = unit.repeat(Math.ceil(chars / unit.length));
          const before = t.work();
          t.count(text, encoding);
          return { work: t.work() - before, bytes: Buffer.byteLength(text) };
        };
        const small = workFor(2_000);
        const large = workFor(8_000);
        // Bytes encoded plus merge steps: a bounded number per input byte, and 4x the input is ~4x the work.
        // (Before the fix an 8 000-character run of U+00A0 was one piece: ~1e8 merge steps, ~8 000 per byte.)
        expect({ encoding, name, perByte: Math.round(large.work / large.bytes) <= 64 }).toEqual({
          encoding,
          name,
          perByte: true,
        });
        expect({ encoding, name, ratio: large.work / small.work <= 4.5 }).toEqual({ encoding, name, ratio: true });
      }
    }
  });

  it('merges long pieces exactly as js-tiktoken (heap merge from 48 bytes, pieces up to MAX_PIECE)', () => {
    const texts = [
      ...Object.values(RUNS).map((u) => u.repeat(Math.floor(MAX_PIECE / u.length))),
      'abcdefghij'.repeat(25),
      'Supercalifragilisticexpialidocious'.repeat(7),
      'ЖЖЖжжжاااกกก'.repeat(20),
    ];
    let seed = 11;
    const next = (n: number) => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
    const letters = ['a', 'b', 'e', 'ab', 'ing', 'tion', 'é', 'ß', 'Ж', 'ا', 'ก', '字', '数'];
    for (let i = 0; i < 60; i++) {
      let s = '';
      while (s.length < 48 + next(200)) s += letters[next(letters.length)];
      texts.push(s);
    }
    for (const name of ['cl100k_base', 'o200k_base'] as const) {
      const ref = getEncoding(name);
      const counter = BpeCounter.load(name);
      const mismatches = texts.filter((s) => counter.count(s) !== ref.encode(s, 'all').length);
      expect(mismatches).toEqual([]);
    }
  });

  it('gives the event loop a turn every slice while counting a large body, with bounded work in between', async () => {
    const marks: number[] = [];
    const pace = new Pace(() => marks.push(t.work()));
    const start = t.work();
    const messages = [
      { role: 'user' as const, content: '\u00a0'.repeat(40_000) },
      ...Array.from({ length: 300 }, () => ({ role: 'user' as const, content: 'x\u3000'.repeat(50) })),
    ];
    const total = await t.countChatAsync(messages, 'cl100k_base', Infinity, pace);
    expect(total).toBe(t.countChat(messages, 'cl100k_base'));
    const chars = messages.reduce((s, m) => s + m.content.length, 0);
    expect(marks.length).toBeGreaterThanOrEqual(Math.floor(chars / 16_384) - 1);
    const steps = [start, ...marks, t.work()].map((w, i, all) => (i ? w - all[i - 1] : 0));
    // At most ~2 slices of 16 384 characters (3 bytes each at most) between two turns, 64 units per byte.
    expect(Math.max(...steps)).toBeLessThanOrEqual(2 * 16_384 * 3 * 64);
    // Embeddings inputs share one pace: many small texts give way too.
    const shared = new Pace();
    let turns = 0;
    const counting = (async () => {
      for (let i = 0; i < 100; i++) await t.countUpToAsync('word '.repeat(400), 'cl100k_base', 8192, shared);
    })();
    const ticker = (async () => {
      while (
        !(await Promise.race([counting.then(() => true), new Promise<false>((r) => setImmediate(() => r(false)))]))
      )
        turns++;
    })();
    await Promise.all([counting, ticker]);
    expect(turns).toBeGreaterThan(5);
  });

  it('counts short texts without a promise until a turn is due (Pace.charge, countPaced), the same counts and turns as spend', async () => {
    const texts = Array.from({ length: 3000 }, (_, i) => `input ${i} of a batch, ${'é'.repeat(i % 7)}`);
    let turns = 0;
    const pace = new Pace(() => turns++);
    let promises = 0;
    let total = 0;
    for (const text of texts) {
      const due = pace.charge(64);
      if (due) {
        promises++;
        await due;
      }
      const n = t.countPaced(text, 'cl100k_base', 8192, pace);
      if (typeof n !== 'number') promises++;
      total += typeof n === 'number' ? n : await n;
    }
    expect(total).toBe(texts.reduce((s, x) => s + t.count(x, 'cl100k_base'), 0));
    // A turn per SLICE of charged characters, and a promise only for those turns.
    const charged = texts.reduce((s, x) => s + 64 + x.length, 0);
    // (each turn carries over at most one charge past the slice: 64 + the longest text)
    const longest = Math.max(...texts.map((x) => 64 + x.length));
    expect(turns).toBeGreaterThanOrEqual(Math.floor(charged / (SLICE + longest)));
    expect(turns).toBeLessThanOrEqual(Math.floor(charged / SLICE));
    expect(promises).toBe(turns);
    // Each slice after a turn reports its time (LoopHeadroom.bulkWorked): one report per turn but the first.
    const reports: number[] = [];
    let reportedTurns = 0;
    const reporting = new Pace(
      () => reportedTurns++,
      () => new Promise<void>((resolve) => setImmediate(resolve)),
      () => false,
      (ms) => reports.push(ms),
    );
    for (const text of texts) await reporting.spend(64 + text.length);
    expect(reportedTurns).toBeGreaterThan(2);
    expect(reports).toHaveLength(reportedTurns - 1);
    expect(reports.every((ms) => ms >= 0)).toBe(true);
    // A text longer than a slice is counted through countUpToAsync, its slices paced.
    const long = 'word '.repeat(10_000);
    const counted = t.countPaced(long, 'cl100k_base', Infinity, new Pace());
    expect(typeof counted).not.toBe('number');
    await expect(counted).resolves.toBe(t.count(long, 'cl100k_base'));
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
    const alphabet = [
      'a',
      'b',
      'e',
      ' ',
      '\n',
      '字',
      '数',
      '😀',
      'é',
      'ß',
      '1',
      '.',
      "'",
      'ab',
      'aa',
      '\t',
      'Ж',
      'ا',
      'ก',
      '\u0301',
      'Q',
      '-',
      '{',
      '<|endoftext|>',
      '\ud800', // lone surrogates: at a piece's edge they must encode as U+FFFD, as TextEncoder does
      '\udfff',
      '\r',
    ];
    let seed = 7;
    const next = (n: number) => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
    for (let i = 0; i < 2000; i++) {
      let s = '';
      for (let j = next(40) + 1; j > 0; j--) s += alphabet[next(alphabet.length)];
      texts.push(s);
    }
    for (const name of ['cl100k_base', 'o200k_base'] as const) {
      const ref = getEncoding(name);
      // A text longer than SLICE is counted slice by slice (a cut inside a word adds at most one token per
      // slice, Tokenizer.countUpTo): exact means the sum of the slices' counts.
      const expected = (s: string) => {
        let n = 0;
        for (let i = 0; i < s.length; i += SLICE) n += ref.encode(s.slice(i, i + SLICE), 'all').length;
        return n;
      };
      const mismatches = texts.filter((s) => t.count(s, name) !== expected(s));
      expect(mismatches).toEqual([]);
    }
  });
});

describe('utf8Into', () => {
  it('writes what TextEncoder.encodeInto writes for the substring, lone surrogates as U+FFFD', () => {
    const units = [
      'a',
      '\x7f',
      '\x80',
      'é',
      '\u07ff',
      '\u0800',
      '字',
      '\uffff',
      '😀',
      '\ud800',
      '\udc00',
      '\udbff',
      '\udfff',
    ];
    let seed = 11;
    const next = (n: number) => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
    const encoder = new TextEncoder();
    const out = new Uint8Array(256);
    const wrong: string[] = [];
    for (let i = 0; i < 3000; i++) {
      let s = '';
      for (let j = next(20) + 1; j > 0; j--) s += units[next(units.length)];
      // Any range of it, cut between the halves of a pair too.
      const start = next(s.length);
      const end = start + next(s.length - start + 1);
      const n = utf8Into(s, start, end, out);
      const expected = encoder.encode(s.substring(start, end));
      if (Buffer.compare(Buffer.from(out.subarray(0, n)), Buffer.from(expected)) !== 0)
        wrong.push(JSON.stringify([s, start, end]));
    }
    expect(wrong).toEqual([]);
  });
});

describe('Tokenizer: tools, tool calls and non-text parts', () => {
  const t = new Tokenizer();
  beforeAll(() => t.onModuleInit());

  it("images by OpenAI's tile formula: low 85, high/auto 170 per 512 px tile + 85 after scaling", () => {
    expect(imageTokens(4096, 8192, 'low')).toBe(85);
    // OpenAI's worked examples: 1024 x 1024 -> 768 x 768, 4 tiles = 765; 2048 x 4096 -> 768 x 1536, 6 tiles = 1105.
    expect(imageTokens(1024, 1024, 'high')).toBe(765);
    expect(imageTokens(2048, 4096, 'auto')).toBe(1105);
    expect(imageTokens(100, 100)).toBe(255);
    // The bound used when the size is unknown is the largest the formula gives.
    expect(IMAGE_MAX_TOKENS).toBe(1445);
    for (const [w, h] of [
      [1, 1],
      [512, 513],
      [768, 2048],
      [700, 20000],
      [20000, 700],
      [4000, 3000],
    ])
      expect(imageTokens(w, h)).toBeLessThanOrEqual(IMAGE_MAX_TOKENS);
  });

  it('reads PNG and GIF sizes from data URLs; others (and URLs) get the bound', () => {
    const png = Buffer.alloc(33);
    png.writeUInt32BE(0x89504e47, 0);
    png.write('IHDR', 12, 'latin1');
    png.writeUInt32BE(1024, 16);
    png.writeUInt32BE(1024, 20);
    const url = `data:image/png;base64,${png.toString('base64')}`;
    expect(imageSizeOf(url)).toEqual({ width: 1024, height: 1024 });
    expect(partTokens({ type: 'image_url', image_url: { url } })).toBe(765);
    expect(partTokens({ type: 'image_url', image_url: { url: 'https://example.com/a.png' } })).toBe(IMAGE_MAX_TOKENS);
    expect(partTokens({ type: 'image_url', image_url: { url: 'data:image/jpeg;base64,/9j/4AAQSkZJRgABAQ' } })).toBe(
      IMAGE_MAX_TOKENS,
    );
    expect(partTokens({ type: 'image_url', image_url: { url: 'https://example.com/a.png', detail: 'low' } })).toBe(85);
  });

  it("uses the model's image price when the providers file gives one (gpt-4o-mini: 2833 + 5667 per tile)", () => {
    const mini = { base: 2833, tile: 5667 };
    expect(
      partTokens({ type: 'image_url', image_url: { url: 'https://example.com/a.png', detail: 'low' } }, mini),
    ).toBe(2833);
    expect(partTokens({ type: 'image_url', image_url: { url: 'https://example.com/a.png' } }, mini)).toBe(
      2833 + 8 * 5667,
    );
    expect(imageTokens(1024, 1024, 'high', mini)).toBe(2833 + 4 * 5667);
    const msg = [
      { role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://x/y.png', detail: 'low' } }] },
    ];
    expect(t.countChat(msg, 'cl100k_base', Infinity, mini) - t.countChat(msg, 'cl100k_base')).toBe(2833 - 85);
  });

  it('bounds audio and files by their byte size', () => {
    // 8000 bytes of mp3: at most 8 s at 8 kbit/s, 50 tokens a second.
    expect(
      partTokens({ type: 'input_audio', input_audio: { format: 'mp3', data: 'A'.repeat(Math.ceil((8000 * 4) / 3)) } }),
    ).toBeGreaterThanOrEqual(400);
    expect(
      partTokens({ type: 'file', file: { file_data: 'data:application/pdf;base64,' + 'A'.repeat(4000) } }),
    ).toBeGreaterThanOrEqual(3000);
  });

  it('counts wav at the 8000 B/s floor: a forged header byte rate cannot shrink the counted duration', () => {
    const wav = (byteRate: number, sampleRate: number, channels: number, bits: number, dataBytes: number) => {
      const h = Buffer.alloc(44);
      h.write('RIFF', 0, 'latin1');
      h.writeUInt32LE(36 + dataBytes, 4);
      h.write('WAVEfmt ', 8, 'latin1');
      h.writeUInt32LE(16, 16);
      h.writeUInt16LE(1, 20);
      h.writeUInt16LE(channels, 22);
      h.writeUInt32LE(sampleRate, 24);
      h.writeUInt32LE(byteRate, 28);
      h.writeUInt16LE((channels * bits) / 8, 32);
      h.writeUInt16LE(bits, 34);
      h.write('data', 36, 'latin1');
      h.writeUInt32LE(dataBytes, 40);
      return Buffer.concat([h, Buffer.alloc(dataBytes)]).toString('base64');
    };
    const tokens = (data: string) => partTokens({ type: 'input_audio', input_audio: { format: 'wav', data } });
    // 80 000 data bytes: at most 10 s at 8000 B/s, 50 tokens a second.
    const floor = Math.ceil((80_044 / 8000) * 50) + 1;
    expect(tokens(wav(8000, 8000, 1, 8, 80_000))).toBe(floor);
    // The byte-rate field alone forged (inconsistent with the format) ...
    expect(tokens(wav(1_536_000, 8000, 1, 8, 80_000))).toBe(floor);
    // ... or the whole format forged consistently: the same count.
    expect(tokens(wav(1_536_000, 192_000, 2, 32, 80_000))).toBe(floor);
  });

  it('counts tool calls, tool results and content parts of messages, and the tool definitions', async () => {
    const plain = t.countChat([{ role: 'user', content: 'hello world' }], 'cl100k_base');
    expect(t.countChat([{ role: 'user', content: [{ type: 'text', text: 'hello world' }] }], 'cl100k_base')).toBe(
      plain,
    );
    expect(
      t.countChat(
        [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'hello world' },
              { type: 'image_url', image_url: { url: 'https://x/y.png', detail: 'low' } },
            ],
          },
        ],
        'cl100k_base',
      ),
    ).toBe(plain + 85);
    const args = JSON.stringify({ city: 'Paris '.repeat(50) });
    const call = [
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: args } }],
      },
    ];
    expect(t.countChat(call, 'cl100k_base')).toBeGreaterThan(t.count(args, 'cl100k_base'));
    expect(await t.countChatAsync(call, 'cl100k_base')).toBe(t.countChat(call, 'cl100k_base'));
    const tools = [{ type: 'function', function: { name: 'get_weather', description: 'word '.repeat(300) } }];
    expect(await t.countDefinitionsAsync({ tools }, 'cl100k_base')).toBeGreaterThan(300);
    expect(await t.countDefinitionsAsync({}, 'cl100k_base')).toBe(0);
  });
});

describe('Tokenizer.decode (token-array embeddings for text-only upstreams)', () => {
  const tokenizer = new Tokenizer();

  it.each(['cl100k_base', 'o200k_base'] as const)(
    'decodes what js-tiktoken encodes, specials included, in %s',
    (encoding) => {
      const enc = getEncoding(encoding);
      for (const text of ['The cat sits on the mat.', '今天天气很好 🌤️', '  spaces\n\ttabs', '<|endoftext|> after']) {
        expect(tokenizer.decode(enc.encode(text, 'all'), encoding)).toBe(text);
      }
    },
  );

  it('knows the vocabulary: ids past it or in its gaps are not tokens', () => {
    expect(tokenizer.vocabularySize('cl100k_base')).toBe(100_277);
    expect(tokenizer.vocabularySize('o200k_base')).toBe(200_019);
    expect(tokenizer.unknownTokenAt([1, 2, 100_257], 'cl100k_base')).toBe(-1);
    expect(tokenizer.unknownTokenAt([1, 100_277], 'cl100k_base')).toBe(1);
    expect(tokenizer.unknownTokenAt([100_256], 'cl100k_base')).toBe(0); // unused id between the ranks and the specials
    expect(tokenizer.decode([1, 100_277], 'cl100k_base')).toBeUndefined();
  });

  it('gives no text for ids that end inside a character', () => {
    const ids = getEncoding('cl100k_base').encode('猫');
    expect(ids.length).toBeGreaterThan(1);
    expect(tokenizer.decode(ids.slice(0, 1), 'cl100k_base')).toBeUndefined();
    expect(tokenizer.decode(ids, 'cl100k_base')).toBe('猫');
  });
});

describe('Pace.idle', () => {
  it('leaves the time it was told was idle (waiting for the network) out of the slice it reports as work', async () => {
    jest.useFakeTimers({ doNotFake: ['setImmediate', 'nextTick', 'queueMicrotask'] });
    try {
      const reports: number[] = [];
      const pace = new Pace(
        () => undefined,
        () => new Promise<void>((resolve) => setImmediate(resolve)),
        () => false,
        (ms) => reports.push(ms),
      );
      const slice = async () => {
        const due = pace.charge(SLICE);
        if (due) await due;
      };
      await slice(); // the first slice's characters
      await slice(); // a turn: the work resumes after it
      jest.advanceTimersByTime(40); // working
      await slice(); // a turn: 40 ms reported
      jest.advanceTimersByTime(50); // waiting for the next piece of an answer
      pace.idle();
      jest.advanceTimersByTime(5); // working
      await slice(); // a turn: 5 ms reported, not 55
      expect(reports.map(Math.round)).toEqual([40, 5]);
    } finally {
      jest.useRealTimers();
    }
  });
});
