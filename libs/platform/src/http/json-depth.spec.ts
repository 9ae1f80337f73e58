import { jsonDepthExceeds, MAX_JSON_DEPTH } from './json-depth';

describe('jsonDepthExceeds', () => {
  const nested = (n: number) => Buffer.from('['.repeat(n) + ']'.repeat(n));

  it('accepts ordinary bodies and nesting up to the limit', () => {
    expect(jsonDepthExceeds(Buffer.from('{"a":[1,{"b":{"c":[]}}],"d":"x"}'))).toBe(false);
    expect(jsonDepthExceeds(nested(MAX_JSON_DEPTH))).toBe(false);
  });

  it('refuses one level past the limit and pathological depth', () => {
    expect(jsonDepthExceeds(nested(MAX_JSON_DEPTH + 1))).toBe(true);
    expect(jsonDepthExceeds(Buffer.from('{"a":'.repeat(5000) + '1' + '}'.repeat(5000)))).toBe(true);
  });

  it('ignores brackets inside strings, escaped quotes included', () => {
    const s = JSON.stringify({ text: '['.repeat(500) + '\\"{{{' + '"'.repeat(3) });
    expect(jsonDepthExceeds(Buffer.from(s))).toBe(false);
  });
});
