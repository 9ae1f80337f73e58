import {
  jsonDepthExceeds,
  jsonShapeExceeds,
  MAX_JSON_DEPTH,
  MAX_JSON_ITEMS,
  MAX_JSON_MEMBERS,
  rejectJsonShape,
} from './json-depth';

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

describe('jsonShapeExceeds: object members', () => {
  const object = (n: number) =>
    Buffer.from(JSON.stringify(Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, [{ a: i }]]))));

  it('counts every object, array and object member, not scalars in arrays or colons inside strings', () => {
    // The outer object and n keys, each holding an array with an object of one member: 1 + 4n.
    expect(jsonShapeExceeds(object(24), MAX_JSON_DEPTH, 97)).toBeNull();
    expect(jsonShapeExceeds(object(24), MAX_JSON_DEPTH, 96)).toBe('members');
    expect(jsonShapeExceeds(Buffer.from(`{"a":[${'{},'.repeat(99)}{}]}`), MAX_JSON_DEPTH, 102)).toBe('members');
    expect(jsonShapeExceeds(Buffer.from(`{"a":[${'{},'.repeat(99)}{}]}`), MAX_JSON_DEPTH, 103)).toBeNull();
    expect(jsonShapeExceeds(Buffer.from(`[${'1,'.repeat(10_000)}1]`), MAX_JSON_DEPTH, 1)).toBeNull();
    // An object, two members and an array: 4, whatever colons and brackets its strings hold.
    expect(
      jsonShapeExceeds(Buffer.from(JSON.stringify({ a: 'x:[y]:{z}'.repeat(1000), b: [1, 2, 3] })), 64, 4),
    ).toBeNull();
    // Escaped quotes and colons inside a key and a value: an object and one member.
    expect(jsonShapeExceeds(Buffer.from(JSON.stringify({ 'a":b': 'c\\":d' })), 64, 2)).toBeNull();
    expect(jsonShapeExceeds(Buffer.from(JSON.stringify({ 'a":b': 'c\\":d', e: 1 })), 64, 2)).toBe('members');
  });

  it('counts array items and object members by the commas outside strings, and refuses past MAX_JSON_ITEMS with 413', () => {
    // A comma per item after each array's or object's first.
    expect(jsonShapeExceeds(Buffer.from(`[${'1,'.repeat(11)}1]`), MAX_JSON_DEPTH, Infinity, 10)).toBe('items');
    expect(jsonShapeExceeds(Buffer.from(`[${'1,'.repeat(10)}1]`), MAX_JSON_DEPTH, Infinity, 10)).toBeNull();
    expect(jsonShapeExceeds(Buffer.from(`{"a":[1,2],"b":[3,4]}`), MAX_JSON_DEPTH, Infinity, 2)).toBe('items');
    // Commas inside strings (escaped quotes too) are not items.
    expect(jsonShapeExceeds(Buffer.from(JSON.stringify(['a,b,c",d', 'e'])), MAX_JSON_DEPTH, Infinity, 1)).toBeNull();
    const atLimit = Buffer.from(`{"model":"m","a":[${'1,'.repeat(MAX_JSON_ITEMS - 1)}1]}`);
    expect(() => rejectJsonShape(atLimit, MAX_JSON_MEMBERS)).not.toThrow();
    const over = Buffer.from(`{"model":"m","a":[${'1,'.repeat(MAX_JSON_ITEMS)}1]}`);
    expect(() => rejectJsonShape(over, MAX_JSON_MEMBERS)).toThrow(
      expect.objectContaining({ status: 413, type: 'entity.too.many.items', limit: MAX_JSON_ITEMS }),
    );
  });

  it('refuses with 413 entity.too.many.members, and still 400 for depth', () => {
    expect(() => rejectJsonShape(object(25), 100)).toThrow(
      expect.objectContaining({ status: 413, type: 'entity.too.many.members', limit: 100 }),
    );
    expect(() => rejectJsonShape(Buffer.from('['.repeat(65) + ']'.repeat(65)), 100)).toThrow(
      expect.objectContaining({ status: 400, type: 'entity.too.deep' }),
    );
  });
});
