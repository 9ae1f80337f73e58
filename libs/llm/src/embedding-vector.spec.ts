import { Base64Vector, float32sOf, isEmbeddingVector, vectorBase64, vectorNumbers } from './embedding-vector';

/** The rule the upstream client applied before (a regular expression, then the decoded length): the reference. */
function reference(s: string): 'floats' | 'partial' | 'refused' {
  if (s.length === 0 || s.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(s)) return 'refused';
  return Buffer.from(s, 'base64').length % 4 === 0 ? 'floats' : 'partial';
}

const kind = (v: ReturnType<typeof float32sOf>) => (v === undefined ? 'refused' : v === 'partial' ? v : 'floats');

describe('embedding vectors', () => {
  it('refuses exactly what is not base64, as strings and as bytes, over random strings of base64 and other characters', () => {
    // A small alphabet, so that valid strings, padding in every place and stray characters all come up often.
    // 'Ł' and 'į' are 'A' and '/' in their low byte, all Buffer.from reads of a character.
    const chars = ['A', 'Q', 'z', '0', '+', '/', '=', '-', '_', ' ', '\n', '!', 'é', '"', 'Ł', 'į'];
    let seed = 7;
    // A linear congruential generator's high bits (its low bits repeat with short periods).
    const random = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), Math.floor((seed / 2 ** 31) * n));
    const seen = { floats: 0, partial: 0, refused: 0, setBits: 0 };
    for (let i = 0; i < 20_000; i++) {
      const length = random(3) === 0 ? random(13) : 4 * (1 + random(4));
      // Mostly base64 characters, with a stray one now and then, and padding at the end half the time.
      let s = Array.from({ length }, () => chars[random(10) === 0 ? random(chars.length) : random(6)]).join('');
      if (random(2) === 0) s = s.slice(0, Math.max(0, length - 1 - random(2))).padEnd(length, '=');
      const expected = reference(s);
      seen[expected]++;
      expect([s, kind(float32sOf(s))]).toEqual([s, expected]);
      // As bytes of an answer (UTF-8), kept only as an encoder writes it: the padded group's unused bits zero.
      const kept = Base64Vector.of(Buffer.from(s, 'utf8'));
      const canonical = Buffer.from(s, 'base64').toString('base64') === s;
      seen.setBits += expected === 'floats' && !canonical ? 1 : 0;
      expect([s, kept ? 'kept' : 'not kept']).toEqual([s, expected === 'floats' && canonical ? 'kept' : 'not kept']);
      if (kept) expect(Array.from(kept.floats())).toEqual(Array.from(float32sOf(s) as Float32Array));
    }
    // Each outcome came up often enough to mean something.
    expect(Math.min(seen.floats, seen.partial, seen.refused)).toBeGreaterThan(500);
    expect(seen.setBits).toBeGreaterThan(100);
  });

  it('checks long vectors at every alignment in their buffer, a stray byte anywhere refused', () => {
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
    // Bytes outside the alphabet, those next to its ranges and those whose low bits match one of its characters.
    const strays = [0x00, 0x2a, 0x2c, 0x2d, 0x2e, 0x3a, 0x3d, 0x40, 0x5b, 0x5f, 0x60, 0x7b, 0x80, 0xc1, 0xff];
    let seed = 11;
    const random = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), Math.floor((seed / 2 ** 31) * n));
    let refused = 0;
    for (let i = 0; i < 4_000; i++) {
      const length = 4 * (1 + random(40));
      const text = Buffer.from(Array.from({ length }, () => alphabet[random(64)]).join(''), 'latin1');
      const stray = random(2) === 0 ? random(length) : -1;
      if (stray >= 0) text[stray] = strays[random(strays.length)];
      // In a larger buffer at any offset, as a vector sits in an upstream's answer.
      const offset = random(8);
      const host = Buffer.alloc(offset + length + random(8), 0x22);
      text.copy(host, offset);
      const view = host.subarray(offset, offset + length);
      const expected = stray < 0 || text[stray] === 0x3d ? reference(text.toString('latin1')) : 'refused';
      const kept = Base64Vector.of(view);
      const canonical = Buffer.from(text.toString('latin1'), 'base64').toString('base64') === text.toString('latin1');
      expect([i, kept ? 'kept' : 'not kept']).toEqual([i, expected === 'floats' && canonical ? 'kept' : 'not kept']);
      refused += kept ? 0 : 1;
    }
    expect(refused).toBeGreaterThan(1_500);
  });

  it('reads little-endian float32s back to the same values in every form, and writes them as OpenAI does', () => {
    for (const n of [1, 7, 1024, 1536]) {
      const values = Array.from({ length: n }, (_, k) => Math.fround(Math.sin(k) * 1e3) / 7);
      const floats = new Float32Array(values);
      const base64 = Buffer.from(floats.buffer).toString('base64');
      const decoded = float32sOf(base64) as Float32Array;
      const kept = Base64Vector.of(Buffer.from(base64))!;
      expect(kept.length).toBe(n);
      for (const v of [decoded, kept, Array.from(floats)]) {
        expect(isEmbeddingVector(v)).toBe(true);
        expect(vectorNumbers(v)).toEqual(Array.from(floats));
        expect(vectorBase64(v)).toBe(base64);
      }
      // A vector of its own memory is a view of the decoded bytes; a small one a copy, not a view of the shared pool.
      expect(decoded).toHaveLength(n);
      if (n * 4 >= Buffer.poolSize >>> 1) expect(decoded.byteOffset).toBe(0);
      else expect(decoded.buffer.byteLength).toBe(n * 4);
    }
    // A character whose low byte is base64's: refused (Buffer.from alone would read 'Ł' as 'A').
    expect(float32sOf('ŁAAAAA==')).toBeUndefined();
    // Unused bits set in the padded group: decoded from a string (and encoded anew for the caller), not kept as bytes.
    expect(Array.from(float32sOf('AAAAAB==') as Float32Array)).toEqual(
      Array.from(float32sOf('AAAAAA==') as Float32Array),
    );
    expect(Base64Vector.of(Buffer.from('AAAAAB=='))).toBeUndefined();
    expect(Base64Vector.of(Buffer.from('AAAAAA=='))).toBeInstanceOf(Base64Vector);
    expect(isEmbeddingVector('AAAA')).toBe(false);
    expect(isEmbeddingVector({ length: 1 })).toBe(false);
  });
});
