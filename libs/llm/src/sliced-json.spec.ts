import { joinSliced, parseSliced } from './sliced-json';

const noTurns = { charge: () => undefined };
const parse = (text: string, key = 'data') => parseSliced(Buffer.from(text), key, noTurns);

describe('parseSliced', () => {
  it('gives what JSON.parse gives, for objects of every kind of member', async () => {
    const docs: unknown[] = [
      {},
      { data: [] },
      { data: [1, 'two', null, true, false, -3.5e-7, { a: [{}] }, [[]]] },
      { object: 'list', data: [{ index: 0, embedding: [0.1, -2, 3e10] }], model: 'm', usage: { total_tokens: 1 } },
      { data: ['quotes " and \\ backslashes \\" ', 'braces } ] { [ in strings', 'unicode é 名前 😀', '\u0000\u001f'] },
      { 'da"ta': [1], data: 'not an array', other: { data: [2] } },
      { data: [{ '}': ']', '"': '\\', nested: { deep: [[[{ x: '}}}' }]]] } }] },
      { n: 0, f: 1.5, neg: -0, big: 1e300, t: true, nul: null, s: '' },
    ];
    for (const doc of docs) {
      const text = JSON.stringify(doc, null, docs.indexOf(doc) % 2 ? 2 : undefined);
      expect(await parse(text)).toEqual(JSON.parse(text));
    }
    // A repeated member: the last wins, as JSON.parse; "__proto__" is an own member, not the prototype.
    expect(await parse('{"data":[1],"data":[2,3]}')).toEqual({ data: [2, 3] });
    const proto = await parse('{"__proto__":{"polluted":true},"data":[]}');
    expect(Object.keys(proto)).toEqual(['__proto__', 'data']);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.getPrototypeOf(proto)).toBe(Object.prototype);
    // Whitespace anywhere JSON allows it.
    expect(await parse(' \n\t{ "data" : [ 1 , { "a" : 2 } ] , "b" : "c" }\r\n')).toEqual({
      data: [1, { a: 2 }],
      b: 'c',
    });
  });

  it("gives an item's `raw` member as the bytes between its quotes when it is a string without escapes, else as JSON.parse would", async () => {
    const text =
      '{"data":[{"index":0,"embedding":"AAAAAAAA","object":"embedding"},{"embedding":"A\\\\/B\\"","index":1},' +
      '{"index":2,"embedding":[1,2]},{"index":3,"embedding":"first","__proto__":{"polluted":true},"embedding":"last"},' +
      '7,"embedding",{},{"embedding" : "AAAA"}]}';
    const bytes = Buffer.from(` ${text}`);
    const got = (await parseSliced(bytes, 'data', noTurns, (v) => v, 'embedding')) as { data: unknown[] };
    const expected = JSON.parse(text) as { data: Array<Record<string, unknown>> };
    const [first, escaped, array, repeated, ...rest] = got.data as Array<Record<string, unknown>>;
    // A view of the bytes it was read from: no copy, no string.
    expect(Buffer.isBuffer(first.embedding)).toBe(true);
    expect((first.embedding as Buffer).buffer).toBe(bytes.buffer);
    expect(String(first.embedding)).toBe('AAAAAAAA');
    expect(Object.keys(first)).toEqual(['index', 'embedding', 'object']);
    expect({ ...first, embedding: String(first.embedding) }).toEqual(expected.data[0]);
    expect(escaped).toEqual(expected.data[1]); // with escapes: the string JSON.parse makes
    expect(array).toEqual(expected.data[2]);
    // Repeated: the last wins; "__proto__" an own member, as JSON.parse.
    expect(String(repeated.embedding)).toBe('last');
    expect(Object.keys(repeated)).toEqual(Object.keys(expected.data[3]));
    expect(Object.getPrototypeOf(repeated)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(rest).toEqual(expected.data.slice(4));
    // Written with spaces around its colon: parsed whole, the string JSON.parse makes.
    expect(typeof (rest.at(-1) as Record<string, unknown>).embedding).toBe('string');
    for (const broken of [
      '{"data":[{"embedding":"AAAA}]}',
      '{"data":[{"embedding" "AAAA"}]}',
      '{"data":[{"a":1,}]}',
      // Items with the raw member, refused in the member-by-member parse.
      '{"data":[{"embedding":"AAAA",}]}',
      '{"data":[{"embedding":"AAAA" "a":1}]}',
      '{"data":[{"embedding":"AAAA","a":tru}]}',
    ])
      await expect(parseSliced(Buffer.from(broken), 'data', noTurns, (v) => v, 'embedding')).rejects.toBeInstanceOf(
        SyntaxError,
      );
  });

  it('refuses what JSON.parse refuses, and anything but one object', async () => {
    for (const text of ['[]', '"data"', '1', 'null']) await expect(parse(text)).rejects.toBeInstanceOf(SyntaxError);
    for (const text of [
      '',
      '{"data":[1,2]',
      '{"data":[1,2,]}',
      '{"data":[1 2]}',
      '{"data":[1],}',
      '{"data":["unterminated]}',
      '{"data":[{"a":1]}',
      '{"data":[tru]}',
      '{data:[1]}',
      '{"data":[1]} x',
      '{"data":[1]}{}',
      '{"a" 1}',
      '{"a":01}',
      '\ufeff{"data":[]}',
    ]) {
      expect(() => JSON.parse(text)).toThrow();
      await expect(parse(text)).rejects.toBeInstanceOf(SyntaxError);
    }
  });

  it('hands each item to `item` and charges the pace for it and its bytes, awaiting the turns it gives between items', async () => {
    const items = Array.from({ length: 200 }, (_, i) => ({
      index: i,
      embedding: Array.from({ length: 32 }, () => i / 3),
    }));
    const text = JSON.stringify({ data: items, model: 'm' });
    const seen: number[] = [];
    let units = 0;
    let turns = 0;
    const atTurn: number[] = [];
    const pace = {
      charge: (n: number) => {
        units += n;
        if (units < 1000) return undefined;
        units = 0;
        turns++;
        atTurn.push(seen.length);
        return Promise.resolve();
      },
    };
    const out = await parseSliced(
      Buffer.from(text),
      'data',
      pace,
      (v, i) => (seen.push(i), { ...(v as object), seen: true }),
    );
    expect(seen).toEqual(items.map((_, i) => i));
    expect(out.data).toEqual(items.map((v) => ({ ...v, seen: true })));
    expect(out.model).toBe('m');
    // Each item is charged 64 units plus a unit per 3 bytes parsed (its size in JSON): the items, charged as they
    // are parsed, give turns between them.
    const charged = items.reduce((sum, v) => sum + 64 + Math.ceil(Buffer.byteLength(JSON.stringify(v)) / 3), 0);
    // This pace starts counting afresh at each turn: what the item that reached 1000 charged beyond it is not carried.
    const most = Math.max(...items.map((v) => 64 + Math.ceil(Buffer.byteLength(JSON.stringify(v)) / 3)));
    expect(turns).toBeGreaterThanOrEqual(Math.floor(charged / (1000 + most)));
    expect(turns).toBeLessThanOrEqual(Math.floor(charged / 1000));
    expect(turns).toBeGreaterThan(3);
    // Turns fall between items, each after a further item than the last.
    expect(atTurn.every((n, i) => n >= 1 && n <= items.length && (i === 0 || n > atTurn[i - 1]))).toBe(true);
    expect(atTurn[0]).toBeLessThan(items.length / 2);
  });

  it('charges small items by their number, not their bytes alone (2048 vectors of 8 floats give turns)', async () => {
    const items = Array.from({ length: 2048 }, (_, index) => ({
      object: 'embedding',
      index,
      embedding: [0.5, 0, 0, 0, 0, 0, 0, 0.5],
    }));
    const text = Buffer.from(JSON.stringify({ object: 'list', data: items }));
    let units = 0;
    const pace = { charge: (n: number) => void (units += n) };
    await parseSliced(text, 'data', pace, (v) => v, 'embedding');
    // 64 units an item besides a unit per 3 bytes: at 16 bytes a unit this 150 KB answer was ~9 000 units, less than
    // one slice (SLICE, 16 384) of a BPE count, and parsed in one turn of ~2.7 ms.
    const itemsCharge = items.reduce((sum, v) => sum + 64 + Math.ceil(Buffer.byteLength(JSON.stringify(v)) / 3), 0);
    // (and its two members, "object" and "data", 64 units each and their names, "object"'s value a few)
    expect(units - itemsCharge).toBeGreaterThanOrEqual(2 * 64);
    expect(units - itemsCharge).toBeLessThan(2 * 64 + 15);
    expect(units).toBeGreaterThan(8 * 16_384);
  });

  it('charges every member for itself and its name: a body of empty members or long names gives turns too', async () => {
    let units = 0;
    const pace = { charge: (n: number) => void (units += n) };
    const empty = `{${Array.from({ length: 10_000 }, () => '"data":[]').join(',')}}`;
    expect(await parseSliced(Buffer.from(empty), 'data', pace)).toEqual({ data: [] });
    // (a review found this body of 15 MB charged nothing: one slice of ~600 ms)
    expect(units).toBeGreaterThanOrEqual(10_000 * 64);
    units = 0;
    const longNames = `{${Array.from({ length: 100 }, (_, i) => `"${'n'.repeat(10_000)}${i}":0`).join(',')}}`;
    await parseSliced([Buffer.from(longNames)], 'data', pace);
    expect(units).toBeGreaterThanOrEqual(100 * (64 + 10_000 / 3));
  });

  it('stops at the first turn that fails (a client gone), parsing no further', async () => {
    const text = JSON.stringify({ data: Array.from({ length: 100 }, (_, i) => 'x'.repeat(100) + i) });
    let parsed = 0;
    const pace = { charge: () => (parsed >= 10 ? Promise.reject(new Error('gone')) : undefined) };
    await expect(parseSliced(Buffer.from(text), 'data', pace, (v) => (parsed++, v))).rejects.toThrow('gone');
    expect(parsed).toBe(10);
  });

  it('finds the end of strings of backslashes and quotes exactly, in one pass', async () => {
    const odd = { data: ['\\'.repeat(10_001), '"'.repeat(5000), '\\"'.repeat(5000), `${'\\'.repeat(9999)}"`] };
    const text = JSON.stringify(odd);
    expect(await parse(text)).toEqual(odd);
  });

  it('parses a body in pieces, cut anywhere, as the same body in one piece: never joined, raw members views of their piece', async () => {
    // Members and items of every kind, strings ending in backslash runs and escaped quotes (cut between a backslash
    // and what it escapes), spaces, numbers: each cut at every byte, then in many random places.
    const docs = [
      '{"object":"list","data":[{"object":"embedding","index":0,"embedding":"QUJDRA=="},{"index":1,"embedding":"AAAA"}],"model":"m","usage":{"prompt_tokens":2}}',
      String.raw`{"data":[{"embedding":"a\\\\","i":"\\\"}"},{"embedding":[1.5,-2e3, 0]} , "s\\\\\\" ,[[{}]],true,null,-0.5],"z":"}]\\"}`,
      ' {"a" : [ 1 , 2 ] , "data" : [ { "embedding" : "AAAA" } , {"embedding":"\\u0041"} ] } ',
      '{"data":[]}',
      '{}',
    ];
    const broken = [
      '{"data":["\\"]}',
      '{"data":[{"embedding":"AAAA}]}',
      '{"data":[1,]}',
      '{"data":[1]} x',
      '{"a":"b\\\\"c"}',
    ];
    let seed = 5;
    const next = (n: number) => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
    const cuts = (bytes: Buffer): Buffer[][] => {
      const out: Buffer[][] = [];
      for (let at = 0; at <= bytes.length; at++) out.push([bytes.subarray(0, at), bytes.subarray(at)]);
      for (let k = 0; k < 200; k++) {
        const points = Array.from({ length: 1 + next(8) }, () => next(bytes.length + 1)).sort((a, b) => a - b);
        const pieces: Buffer[] = [];
        let from = 0;
        for (const p of [...points, bytes.length]) {
          pieces.push(bytes.subarray(from, p)); // empty pieces too
          from = p;
        }
        out.push(pieces);
      }
      return out;
    };
    const shown = (v: unknown): unknown =>
      JSON.parse(JSON.stringify(v, (_, x) => (x?.type === 'Buffer' ? String(Buffer.from(x.data)) : x)));
    for (const doc of docs) {
      const whole = Buffer.from(doc);
      const expected = shown(await parseSliced(whole, 'data', noTurns, (v) => v, 'embedding'));
      expect(expected).toEqual(JSON.parse(doc));
      for (const pieces of cuts(whole)) {
        const got = await parseSliced(pieces, 'data', noTurns, (v) => v, 'embedding');
        expect(shown(got)).toEqual(expected);
        expect(await parseSliced(pieces, 'data', noTurns)).toEqual(JSON.parse(doc));
      }
    }
    for (const doc of broken) {
      expect(() => JSON.parse(doc)).toThrow();
      for (const pieces of cuts(Buffer.from(doc)))
        await expect(parseSliced(pieces, 'data', noTurns, (v) => v, 'embedding')).rejects.toBeInstanceOf(SyntaxError);
    }
    // A run of backslashes one per piece: its length decides whether the quote after it ends the string.
    for (const run of [1, 2, 3, 4, 5]) {
      const text = `{"data":["a${'\\'.repeat(run)}"]}`;
      const onePerPiece = [
        Buffer.from('{"data":["a'),
        ...Array.from({ length: run }, () => Buffer.from('\\')),
        Buffer.from('"]}'),
      ];
      if (run % 2 === 0) expect(await parseSliced(onePerPiece, 'data', noTurns)).toEqual(JSON.parse(text));
      else await expect(parseSliced(onePerPiece, 'data', noTurns)).rejects.toBeInstanceOf(SyntaxError);
    }
    // A raw member of an item within one piece is a view of that piece: its bytes are not copied.
    const pieces = [Buffer.from('{"data":[{"embedding":"AAAA"},'), Buffer.from('{"embedding":"BBBB"}]}')];
    const got = (await parseSliced(pieces, 'data', noTurns, (v) => v, 'embedding')) as {
      data: Array<{ embedding: Buffer }>;
    };
    expect(got.data.map((d) => d.embedding.buffer)).toEqual([pieces[0].buffer, pieces[1].buffer]);
  });

  it('joins the pieces of a body into the same bytes as Buffer.concat, with turns between pieces', async () => {
    const pieces = Array.from({ length: 50 }, (_, i) => Buffer.alloc(20_000 + i, i));
    let turns = 0;
    let units = 0;
    const pace = {
      charge: (n: number) => {
        units += n;
        if (units < 5000) return undefined;
        units = 0;
        turns++;
        return Promise.resolve();
      },
    };
    const size = pieces.reduce((s, p) => s + p.length, 0);
    expect((await joinSliced(pieces, size, pace)).equals(Buffer.concat(pieces))).toBe(true);
    expect(turns).toBeGreaterThanOrEqual(Math.floor(size / 16 / 5000) - 1);
    expect(turns).toBeGreaterThan(5);
    // One piece is the body itself; a size that does not add up is refused.
    expect(await joinSliced([pieces[0]], pieces[0].length, pace)).toBe(pieces[0]);
    await expect(joinSliced(pieces, size + 1, noTurns)).rejects.toBeInstanceOf(SyntaxError);
  });
});
