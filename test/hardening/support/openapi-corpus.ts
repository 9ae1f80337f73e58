// Bad requests generated from an app's own OpenAPI document (`/v3/api-docs`) with fast-check:
// every operation, every body field, every path and query parameter gets mutated on each run.
import fc from 'fast-check';
import { multipart } from './http';

export interface OpenApiDoc {
  /** The requirements of every operation that states none of its own (both apps: the bearer). */
  security?: Array<Record<string, string[]>>;
  paths: Record<string, Record<string, any>>;
  components?: { schemas?: Record<string, any> };
}

export interface Operation {
  method: string;
  path: string;
  pathParams: string[];
  query: { name: string; required: boolean; schema: any }[];
  /** First request content type the document lists, if any. */
  bodyType?: string;
  bodySchema?: any;
  /** The document marks it as needing a bearer credential. */
  secured: boolean;
}

export interface BadCase {
  kind: string;
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
  chunks?: number;
  chunkDelayMs?: number;
  /** The request is invalid beyond doubt: only a 4xx is acceptable (otherwise: anything but 5xx). */
  mustBe4xx: boolean;
}

type Kind = 'string' | 'number' | 'boolean' | 'array' | 'object' | 'null';

interface Field {
  name: string;
  required: boolean;
  schema: any;
  /** JSON types the field accepts (from example, type, oneOf/anyOf). */
  kinds: Set<Kind>;
  nullable: boolean;
}

const HTTP_METHODS = ['get', 'post', 'put', 'patch', 'delete'];

export function resolve(doc: OpenApiDoc, s: any): any {
  let guard = 0;
  while (s && s.$ref && guard++ < 20) s = doc.components?.schemas?.[String(s.$ref).split('/').pop()!];
  return s ?? {};
}

export function operationsOf(doc: OpenApiDoc): Operation[] {
  const ops: Operation[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const method of HTTP_METHODS) {
      const op = item[method];
      if (!op) continue;
      const params: any[] = op.parameters ?? [];
      const content = op.requestBody?.content ?? {};
      const bodyType = Object.keys(content)[0];
      const security: object[] | undefined = op.security ?? doc.security;
      ops.push({
        method: method.toUpperCase(),
        path,
        pathParams: params.filter((p) => p.in === 'path').map((p) => p.name),
        query: params
          .filter((p) => p.in === 'query')
          .map((p) => ({ name: p.name, required: !!p.required, schema: p.schema ?? {} })),
        bodyType,
        bodySchema: bodyType ? resolve(doc, content[bodyType].schema) : undefined,
        // An operation without requirements of its own has the document's; an empty requirement ({}) makes the
        // credential optional (`@Public()` routes, the actuator's management token).
        secured: Array.isArray(security) && security.length > 0 && !security.some((r) => Object.keys(r).length === 0),
      });
    }
  }
  return ops;
}

function kindOf(v: unknown): Kind {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  return typeof v === 'number'
    ? 'number'
    : typeof v === 'boolean'
      ? 'boolean'
      : typeof v === 'object'
        ? 'object'
        : 'string';
}

function kindsOf(doc: OpenApiDoc, schema: any): Set<Kind> {
  const s = resolve(doc, schema);
  const alts = s.oneOf ?? s.anyOf;
  if (alts) return new Set([...alts].flatMap((a: any) => [...kindsOf(doc, a)]));
  // Swagger writes `type: object` for `string | null` properties: the example tells the truth.
  if (s.example !== undefined && s.example !== null) return new Set([kindOf(s.example)]);
  if (s.enum?.length) return new Set([kindOf(s.enum[0])]);
  const t = s.type === 'integer' ? 'number' : s.type;
  return new Set([(t ?? 'object') as Kind]);
}

export function fieldsOf(doc: OpenApiDoc, schema: any): Field[] {
  const s = resolve(doc, schema);
  const required = new Set<string>(s.required ?? []);
  return Object.entries<any>(s.properties ?? {}).map(([name, p]) => ({
    name,
    required: required.has(name),
    schema: resolve(doc, p),
    kinds: kindsOf(doc, p),
    nullable: !!resolve(doc, p).nullable,
  }));
}

/** A plausible valid value for a schema: its example, default or first enum value. */
export function sample(doc: OpenApiDoc, schema: any, depth = 0): any {
  const s = resolve(doc, schema);
  if (s.example !== undefined) return s.example;
  if (s.default !== undefined) return s.default;
  if (s.enum?.length) return s.enum[0];
  if (s.oneOf?.length) return sample(doc, s.oneOf[0], depth + 1);
  switch (s.type) {
    case 'string':
      return s.format === 'date-time' ? '2030-01-01T00:00:00Z' : 'sample';
    case 'integer':
    case 'number':
      return s.minimum ?? 1;
    case 'boolean':
      return true;
    case 'array':
      return depth > 4 ? [] : [sample(doc, s.items, depth + 1)];
    default: {
      if (depth > 4) return {};
      const out: Record<string, unknown> = {};
      for (const f of fieldsOf(doc, s)) out[f.name] = sample(doc, f.schema, depth + 1);
      return out;
    }
  }
}

// ---------------------------------------------------------------- value generators

const TRAVERSAL = [
  '../../../../etc/passwd',
  '..%2f..%2f..%2f..%2fetc%2fpasswd',
  '%2e%2e%2f%2e%2e%2f%2e%2e%2fetc%2fpasswd',
  '..%252f..%252fetc%252fpasswd',
  '....//....//etc/passwd',
  '..\\..\\..\\windows\\win.ini',
  '%00',
  'a%00.png',
  '%c0%ae%c0%ae%c0%af',
  '%ff%fe',
  '.',
  '..',
  '%2e',
  '~root',
  'null',
  'undefined',
  '-1',
  '0',
  '99999999999999999999999999',
  '1e309',
  '00000000-0000-0000-0000-000000000000',
  "' OR 1=1 --",
  '%27%3B%20DROP%20TABLE%20members%3B--',
  '%3Cscript%3Ealert(1)%3C%2Fscript%3E',
  '%E2%80%AE',
];

/** Raw (already URL-encoded where needed) path segment values meant to break routing or storage. */
const evilSegment = fc.oneof(
  fc.constantFrom(...TRAVERSAL),
  fc.string({ unit: 'binary', maxLength: 40 }).map((s) => encodeURIComponent(s) || '%20'),
  fc.integer({ min: 100, max: 5000 }).map((n) => 'a'.repeat(n)),
);

const anyJson: fc.Arbitrary<unknown> = fc.oneof(
  fc.integer(),
  fc.double({ noNaN: true }),
  fc.boolean(),
  fc.constant(null),
  fc.string({ maxLength: 30 }),
  fc.array(fc.oneof(fc.string({ maxLength: 5 }), fc.integer()), { maxLength: 4 }),
  fc.dictionary(fc.string({ maxLength: 8 }), fc.oneof(fc.string({ maxLength: 5 }), fc.integer()), { maxKeys: 3 }),
  fc.constantFrom(Number.MAX_SAFE_INTEGER, -1, 0, 1e308, -1e308, 2 ** 53 + 1),
);

const SCALAR: Kind[] = ['string', 'number', 'boolean'];

/** Sure to fail validation: null for a required field, a container for a scalar, a scalar for a container. */
function clearlyWrong(field: Field, value: unknown): boolean {
  const k = kindOf(value);
  if (field.kinds.has(k)) return false;
  if (k === 'null') return field.required && !field.nullable;
  const wantsScalar = [...field.kinds].every((x) => SCALAR.includes(x));
  const wantsContainer = [...field.kinds].every((x) => x === 'array' || x === 'object');
  if (wantsScalar && (k === 'array' || k === 'object')) return true;
  if (wantsContainer && SCALAR.includes(k)) return true;
  return false;
}

function nest(depth: number, kind: 'array' | 'object'): string {
  return kind === 'array' ? '['.repeat(depth) + ']'.repeat(depth) : '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);
}

/** Replace one field's value in a JSON text with raw JSON text (for nesting and bad bytes). */
function jsonWithRaw(base: Record<string, unknown>, field: string, raw: Buffer): Buffer {
  const marker = `__RAW_${Math.random().toString(36).slice(2)}__`;
  const text = JSON.stringify({ ...base, [field]: marker });
  const [head, tail] = text.split(JSON.stringify(marker));
  return Buffer.concat([Buffer.from(head), raw, Buffer.from(tail)]);
}

export interface CorpusContext {
  bodyLimit: number;
  /** Headers for every request (credential, X-Forwarded-For). */
  headers: () => Record<string, string>;
  /** Largest upload the app accepts, for multipart operations. */
  uploadLimit?: number;
}

const PNG_1X1 = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
  'base64',
);

/** Every kind of bad request that applies to one operation. */
export function badCases(doc: OpenApiDoc, op: Operation, ctx: CorpusContext): fc.Arbitrary<BadCase> {
  const validParams: Record<string, string> = {};
  for (const p of op.pathParams)
    validParams[p] =
      p.toLowerCase().includes('id') && p !== 'registrationId' ? '00000000-0000-4000-8000-000000000000' : 'unknown-x';
  const pathWith = (params: Record<string, string>) =>
    op.path.replace(/\{(\w+)\}/g, (_, n) => params[n] ?? validParams[n]);
  const validQuery = op.query
    .filter((q) => q.required)
    .map((q) => `${q.name}=${encodeURIComponent(String(sample(doc, q.schema)))}`)
    .join('&');
  const url = (params: Record<string, string> = {}, query = validQuery) =>
    pathWith(params) + (query ? `?${query}` : '');
  // Bytes a client library refuses to put in a request line are percent-encoded; everything else goes as is.
  const safe = (p: string) => p.replace(/[^\x21-\x7e]|[<>"`{}|\\^]/g, (c) => encodeURIComponent(c));
  const make = (
    kind: string,
    body: Buffer | undefined,
    contentType: string | undefined,
    mustBe4xx: boolean,
    extra: Partial<BadCase> = {},
  ): BadCase => ({
    kind,
    method: op.method,
    path: safe(url()),
    headers: { ...ctx.headers(), ...(contentType ? { 'content-type': contentType } : {}) },
    body,
    mustBe4xx,
    ...extra,
    ...(extra.path ? { path: safe(extra.path) } : {}),
  });

  const arbs: fc.Arbitrary<BadCase>[] = [];

  // Path parameters: traversal, encodings, overlong values. Unknown resources must be a 4xx.
  if (op.pathParams.length) {
    arbs.push(
      fc.record({ name: fc.constantFrom(...op.pathParams), value: evilSegment }).map(({ name, value }) =>
        make('path-traversal', undefined, undefined, op.method === 'GET' || op.method === 'DELETE', {
          path: url({ [name]: value }),
        }),
      ),
    );
  }
  // Query strings: wrong types, repeated keys, bracket objects, garbage encodings, overlong values.
  arbs.push(
    fc
      .array(
        fc.record({
          name: op.query.length
            ? fc.oneof(fc.constantFrom(...op.query.map((q) => q.name)), fc.string({ maxLength: 10 }))
            : fc.string({ maxLength: 10 }),
          value: fc.oneof(
            evilSegment,
            fc.constantFrom('', '[]', '{}', 'true', '-5', '1.5', 'NaN', '%', '%zz', 'a[b]=c'),
            fc.string({ maxLength: 20 }).map(encodeURIComponent),
          ),
          bracket: fc.boolean(),
        }),
        { minLength: 1, maxLength: 6 },
      )
      .map((qs) =>
        make('query-garbage', undefined, undefined, false, {
          path: url(
            {},
            [validQuery, ...qs.map((q) => `${encodeURIComponent(q.name)}${q.bracket ? '[x]' : ''}=${q.value}`)]
              .filter(Boolean)
              .join('&'),
          ),
        }),
      ),
  );
  // Garbage credentials on every route (protected ones must answer 401, public ones ignore or refuse).
  arbs.push(
    fc
      .oneof(
        fc.constantFrom(
          'Bearer',
          'Bearer ',
          'Bearer null',
          'Basic Zm9vOmJhcg==',
          'bearer x.y.z',
          'Bearer e30.e30.',
          'Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiIxIn0.',
          'Bearer sk-',
          'Bearer sk-' + 'A'.repeat(60),
        ),
        fc.string({ unit: 'grapheme-ascii', maxLength: 200 }).map((s) => `Bearer ${s.replace(/[\r\n]/g, '')}`),
        fc.integer({ min: 1000, max: 8000 }).map((n) => `Bearer ${'x'.repeat(n)}`),
      )
      .map((auth) => ({
        ...make('bad-credential', undefined, undefined, op.secured),
        headers: { ...ctx.headers(), authorization: auth },
      })),
  );

  if (op.bodyType === 'application/json' && op.bodySchema) {
    const fields = fieldsOf(doc, op.bodySchema);
    const base = sample(doc, op.bodySchema) as Record<string, unknown>;
    const hasRequired = fields.some((f) => f.required);
    const json = (v: unknown) => Buffer.from(JSON.stringify(v));
    arbs.push(
      fc
        .constantFrom(
          'text/plain',
          'application/xml',
          'application/x-www-form-urlencoded',
          'application/octet-stream',
          'application/json; charset=utf-16',
          'application/json; charset=klingon',
          'multipart/form-data; boundary=zz',
          'image/png',
          ';;;',
          'application/jsonx',
        )
        .map((ct) => make('wrong-content-type', json(base), ct, hasRequired || /charset=(utf-16|klingon)/.test(ct))),
      fc
        .oneof(
          fc.integer({ min: 1, max: 1000 }).map((n) => {
            const text = JSON.stringify(base);
            return text.slice(0, 1 + (n % Math.max(1, text.length - 1)));
          }),
          fc.constantFrom(
            '{',
            '{"a":',
            "{'a':1}",
            '{"a":1,}',
            '{a:1}',
            'NaN',
            '{"a":NaN}',
            '{"a":1}}',
            '[1,',
            '\u0000',
            '{"a":"\\u12"}',
            '{"a":"\\x41"}',
            '{"a":01}',
          ),
          fc.string({ maxLength: 60 }).map((s) => `{${s}`),
        )
        .map((text) => make('malformed-json', Buffer.from(text), 'application/json', true)),
      fc
        .constantFrom('[]', '[{}]', '"text"', '123', 'null', 'true', '[' + JSON.stringify(base) + ']')
        .map((text) => make('top-level-wrong-type', Buffer.from(text), 'application/json', hasRequired)),
      fc
        .constantFrom('{"__proto__":{"admin":true,"roles":["admin"]}}', '{"constructor":{"prototype":{"admin":true}}}')
        .map((extra) => {
          const merged = JSON.stringify(base).replace(/}$/, `,${extra.slice(1, -1)}}`);
          return make('prototype-pollution', Buffer.from(merged), 'application/json', false);
        }),
    );
    if (fields.length) {
      const field = fc.constantFrom(...fields);
      arbs.push(
        fc
          .record({ f: field, v: anyJson })
          .map(({ f, v }) =>
            make('wrong-type', json({ ...base, [f.name]: v }), 'application/json', clearlyWrong(f, v)),
          ),
        fc
          .record({
            f: field,
            name: fc
              .string({ minLength: 1, maxLength: 12 })
              .filter((n) => !fields.some((x) => x.name === n) && n !== '__proto__'),
            v: anyJson,
          })
          .map(({ name, v }) => make('extra-field', json({ ...base, [name]: v }), 'application/json', false)),
        fc
          .record({
            f: field,
            n: fc.integer({ min: 1000, max: ctx.bodyLimit * 2 }),
            c: fc.constantFrom('a', '字', '😀', '\u0000'),
          })
          .map(({ f, n, c }) => {
            const body = json({ ...base, [f.name]: c.repeat(Math.ceil(n / Buffer.byteLength(c))) });
            return make('huge-string', body, 'application/json', body.length > ctx.bodyLimit);
          }),
        fc.record({ f: field, n: fc.integer({ min: 1000, max: Math.ceil(ctx.bodyLimit / 1.5) }) }).map(({ f, n }) => {
          const body = json({ ...base, [f.name]: Array.from({ length: n }, (_, i) => i % 10) });
          return make(
            'huge-array',
            body,
            'application/json',
            body.length > ctx.bodyLimit || [...f.kinds].every((k) => SCALAR.includes(k)),
          );
        }),
        fc
          .record({
            f: field,
            depth: fc.integer({ min: 500, max: Math.min(200_000, Math.floor(ctx.bodyLimit / 6)) }),
            k: fc.constantFrom<'array' | 'object'>('array', 'object'),
          })
          .map(({ f, depth, k }) => {
            const body = jsonWithRaw(base, f.name, Buffer.from(nest(depth, k)));
            return make(
              'deep-nesting',
              body,
              'application/json',
              body.length > ctx.bodyLimit || [...f.kinds].every((x) => SCALAR.includes(x)),
            );
          }),
        fc
          .record({
            f: field,
            bytes: fc.constantFrom(
              [0xff],
              [0xc3, 0x28],
              [0xe2, 0x28, 0xa1],
              [0xf0, 0x28, 0x8c, 0xbc],
              [0xed, 0xa0, 0x80],
              [0xc0, 0xaf],
              [0x80],
              [0xf8, 0x88, 0x80, 0x80, 0x80],
            ),
          })
          .map(({ f, bytes }) =>
            make(
              'invalid-utf8',
              jsonWithRaw(base, f.name, Buffer.concat([Buffer.from('"ab'), Buffer.from(bytes), Buffer.from('cd"')])),
              'application/json',
              false,
            ),
          ),
        fc.record({ f: field, where: fc.constantFrom('start', 'middle', 'end', 'escaped') }).map(({ f, where }) => {
          const v = String(typeof base[f.name] === 'string' ? base[f.name] : 'value');
          const s =
            where === 'start' ? `\u0000${v}` : where === 'end' ? `${v}\u0000` : `${v.slice(0, 2)}\u0000${v.slice(2)}`;
          return make(
            'null-bytes',
            json({ ...base, [f.name]: where === 'escaped' ? `${v}%00` : s }),
            'application/json',
            false,
          );
        }),
      );
      const required = fields.filter((f) => f.required);
      if (required.length) {
        arbs.push(
          fc.constantFrom(...required).map((f) => {
            const copy = { ...base };
            delete copy[f.name];
            return make('missing-required', json(copy), 'application/json', true);
          }),
          // Slowloris-style: a request missing a required field, dribbled in small pieces (bounded).
          fc
            .record({
              f: fc.constantFrom(...required),
              chunks: fc.integer({ min: 2, max: 8 }),
              delay: fc.integer({ min: 10, max: 120 }),
            })
            .map(({ f, chunks, delay }) => {
              const copy = { ...base };
              delete copy[f.name];
              return make('slow-body', json(copy), 'application/json', true, { chunks, chunkDelayMs: delay });
            }),
        );
      }
    }
    arbs.push(
      fc
        .integer({ min: ctx.bodyLimit + 1, max: ctx.bodyLimit * 3 })
        .map((n) =>
          make('oversize-body', Buffer.from(JSON.stringify({ ...base, pad: 'x'.repeat(n) })), 'application/json', true),
        ),
      fc.integer({ min: ctx.bodyLimit + 1, max: ctx.bodyLimit * 2 }).map((n) =>
        make('oversize-declared', Buffer.from('{}'), 'application/json', true, {
          headers: { ...ctx.headers(), 'content-type': 'application/json', 'content-length': String(n) },
        }),
      ),
    );
  }

  if (op.bodyType === 'multipart/form-data') {
    const limit = ctx.uploadLimit ?? 10_485_760;
    const fileName = fc.oneof(
      fc.constantFrom(
        '../../../etc/passwd',
        '..\\..\\boot.ini',
        '/etc/shadow',
        'a\u0000.png',
        'CON',
        '.htaccess',
        '',
        ' ',
        '....png',
        'x.png/../../y',
        '%2e%2e%2fa.png',
        'a'.repeat(1000) + '.png',
        '😀.png',
        'a"b.png',
        'a\r\nX-Injected: 1.png',
      ),
      fc.string({ maxLength: 40 }),
    );
    const mp = (
      kind: string,
      parts: Parameters<typeof multipart>[0],
      mustBe4xx: boolean,
      opts: { truncate?: boolean } = {},
    ) => {
      const { body, contentType } = multipart(parts, undefined, opts);
      return make(kind, body, contentType, mustBe4xx);
    };
    arbs.push(
      fileName.map((filename) =>
        mp('zero-byte-file', [{ name: 'file', filename, contentType: 'image/png', data: Buffer.alloc(0) }], true),
      ),
      fileName.map((filename) =>
        mp(
          'traversal-file-name',
          [{ name: 'file', filename: filename.replace(/[\r\n"]/g, '_'), contentType: 'image/png', data: PNG_1X1 }],
          false,
        ),
      ),
      fc.integer({ min: 2, max: 5 }).map((n) =>
        mp(
          'duplicated-parts',
          Array.from({ length: n }, (_, i) => ({
            name: 'file',
            filename: `a${i}.png`,
            contentType: 'image/png',
            data: PNG_1X1,
          })),
          true,
        ),
      ),
      fc
        .string({ maxLength: 10 })
        .filter((n) => n !== 'file')
        .map((name) =>
          mp(
            'wrong-part-name',
            [{ name: name.replace(/["\r\n]/g, '') || 'x', filename: 'a.png', contentType: 'image/png', data: PNG_1X1 }],
            true,
          ),
        ),
      fc.constant(null).map(() => mp('missing-file', [{ name: 'note', data: 'hello' }], true)),
      fc.integer({ min: limit + 1, max: limit + 1_000_000 }).map((n) =>
        mp(
          'oversize-part',
          [
            {
              name: 'file',
              filename: 'big.png',
              contentType: 'image/png',
              data: Buffer.concat([PNG_1X1, Buffer.alloc(n)]),
            },
          ],
          true,
        ),
      ),
      fc.integer({ min: 1, max: 200 }).map((n) =>
        mp(
          'truncated-multipart',
          [
            {
              name: 'file',
              filename: 'a.png',
              contentType: 'image/png',
              data: PNG_1X1.subarray(0, Math.min(n, PNG_1X1.length)),
            },
          ],
          true,
          { truncate: true },
        ),
      ),
      fc
        .uint8Array({ minLength: 1, maxLength: 4096 })
        .map((bytes) =>
          mp(
            'random-bytes-file',
            [{ name: 'file', filename: 'a.png', contentType: 'image/png', data: Buffer.from(bytes) }],
            true,
          ),
        ),
      fc
        .constant(null)
        .map(() => make('multipart-no-boundary', Buffer.from('--x\r\n\r\n'), 'multipart/form-data', true)),
      fc
        .constantFrom('application/json', 'text/plain')
        .map((ct) => make('multipart-wrong-type', Buffer.from('{"file":"x"}'), ct, true)),
      fc.integer({ min: 2, max: 6 }).map((chunks) => ({
        ...mp(
          'slow-multipart',
          [{ name: 'file', filename: 'a.png', contentType: 'image/png', data: Buffer.alloc(10) }],
          true,
        ),
        chunks,
        chunkDelayMs: 80,
      })),
    );
  }

  if (op.bodyType && op.bodyType !== 'application/json' && op.bodyType !== 'multipart/form-data') {
    // e.g. WeChat's text/xml pushes: garbage, truncated and hostile XML.
    arbs.push(
      fc
        .oneof(
          fc.constantFrom(
            '<xml>',
            '<xml><ToUserName>',
            '<!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]><xml>&e;</xml>',
            '<xml>' + '<a>'.repeat(5000) + '</xml>',
            '\u0000',
            '',
          ),
          fc.string({ maxLength: 200 }),
        )
        .map((text) => make('bad-xml', Buffer.from(text), op.bodyType, false)),
    );
  }
  return fc.oneof(...arbs);
}
