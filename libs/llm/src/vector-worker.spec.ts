import { readdirSync, readFileSync } from 'fs';
import { createServer, IncomingMessage, Server, ServerResponse } from 'http';
import { AddressInfo } from 'net';
import { Base64Vector } from './embedding-vector';
import { UpstreamHttp } from './http';
import { OpenAiCompatibleClient } from './openai-client';
import { CallAbortedError, UpstreamError } from './types';
import { VectorWorker, vectorWorker } from './vector-worker';

/** A float32 vector of `dims` values, different per `seed`, and its base64 (OpenAI's encoding_format=base64). */
const floats = (seed: number, dims: number) => Float32Array.from({ length: dims }, (_, i) => Math.sin(seed * 31 + i));
const base64 = (f: Float32Array) => Buffer.from(f.buffer, f.byteOffset, f.byteLength).toString('base64');

type Handler = (req: IncomingMessage, body: string, res: ServerResponse) => void;

describe('VectorWorker (embeddings exchanges on a worker thread)', () => {
  let server: Server;
  let url: string;
  let handler: Handler;
  const requests: Array<{ headers: IncomingMessage['headers']; body: string }> = [];
  const closed: string[] = [];
  const worker = new VectorWorker(1024 * 1024, 2 * 1024 * 1024);

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        requests.push({ headers: req.headers, body });
        handler(req, body, res);
      });
      res.on('close', () => closed.push(req.url ?? ''));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await worker.close();
    await vectorWorker().close();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });
  beforeEach(() => (requests.length = 0));

  /** Answers each POST with `dims`-dimension vectors, one per input, base64 as asked (else numbers). */
  const vectors = (dims: number, tweak?: (data: any[]) => void): Handler => {
    return (_req, body, res) => {
      const req = JSON.parse(body) as { input: string[]; encoding_format?: string };
      const data: any[] = req.input.map((_, i) => {
        const f = floats(i, dims);
        return {
          object: 'embedding',
          index: i,
          embedding: req.encoding_format === 'base64' ? base64(f) : Array.from(f),
        };
      });
      tweak?.(data);
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ object: 'list', model: 'm', data, usage: { prompt_tokens: 7, total_tokens: 7 } }));
    };
  };

  const exchange = (input: string[], as: 'base64' | 'float' = 'base64', timeoutMs = 10_000) => ({
    url: `${url}/v1/embeddings`,
    headers: { 'content-type': 'application/json', authorization: 'Bearer sk-up' },
    body: JSON.stringify({ model: 'm', input, encoding_format: 'base64' }),
    timeoutMs,
    connections: 4,
    pool: 1,
    as,
  });
  const errorOf = (r: { kind: string; message: string; status: number; text: string; retryAfter?: string }) =>
    Object.assign(new Error(r.message), r);

  it('hands back base64 vectors as views of the shared slab, as the upstream sent them, and reuses released regions', async () => {
    handler = vectors(1536);
    const input = Array.from({ length: 40 }, (_, i) => `text ${i}`);
    const first = await worker.embeddings(exchange(input), undefined, errorOf);
    expect(requests[0].headers.authorization).toBe('Bearer sk-up');
    expect(first.usage).toEqual({ prompt_tokens: 7, total_tokens: 7 });
    expect(first.data).toHaveLength(40);
    first.data.forEach((d, i) => {
      expect(d.index).toBe(i);
      const v = d.embedding as Base64Vector;
      expect(v).toBeInstanceOf(Base64Vector);
      expect(v.text.buffer).toBeInstanceOf(SharedArrayBuffer);
      expect(v.length).toBe(1536);
      expect(v.toString()).toBe(base64(floats(i, 1536)));
    });
    const slab = (first.data[0].embedding as Base64Vector).text.buffer;
    // The worker's thread runs 10 nice steps below the others (Linux): bulk work yields a busy core to the calls.
    const nice = (task: string) =>
      Number(readFileSync(`/proc/self/task/${task}/stat`, 'utf8').split(') ')[1].split(' ')[16]);
    if (process.platform === 'linux') expect(readdirSync('/proc/self/task').map(nice)).toContain(10);
    expect(worker.heldBytes).toBeGreaterThanOrEqual(40 * 8192);

    // Held: the next answer goes elsewhere in the slab; released: its region is used again.
    const second = await worker.embeddings(exchange(input.slice(0, 2)), undefined, errorOf);
    const at = (r: typeof first) => (r.data[0].embedding as Base64Vector).text.byteOffset;
    expect(at(second)).not.toBe(at(first));
    first.release();
    second.release();
    first.release(); // twice is once
    expect(worker.heldBytes).toBe(0);
    const third = await worker.embeddings(exchange(input.slice(0, 1)), undefined, errorOf);
    expect(at(third)).toBe(at(first));
    expect((third.data[0].embedding as Base64Vector).text.buffer).toBe(slab);
    third.release();
  });

  it('hands back float32 views when the caller wants numbers, and canonical base64 for base64 with unused bits set', async () => {
    handler = vectors(8);
    const asFloats = await worker.embeddings(exchange(['a', 'b'], 'float'), undefined, errorOf);
    expect(asFloats.data[1].embedding).toBeInstanceOf(Float32Array);
    expect(Array.from(asFloats.data[1].embedding as Float32Array)).toEqual(Array.from(floats(1, 8)));
    asFloats.release();

    // 3 floats: 12 bytes, 16 characters, no padding; 1 float: 4 bytes, "xxxxxx==" where the 6th's low 4 bits are unused.
    const canonical = base64(floats(0, 1));
    const loose = canonical.slice(0, 5) + String.fromCharCode(canonical.charCodeAt(5) + 1) + '==';
    handler = vectors(1, (data) => (data[0].embedding = loose));
    const fixed = await worker.embeddings(exchange(['a']), undefined, errorOf);
    expect((fixed.data[0].embedding as Base64Vector).toString()).toBe(Buffer.from(loose, 'base64').toString('base64'));
    fixed.release();
  });

  it('passes entries that are not base64 text as they came (the use case refuses them), and refuses bad base64 as the parser does', async () => {
    // Numbers to a base64 ask: float32s for a base64 answer (as the main thread encodes them), as they came for numbers.
    handler = vectors(4, (data) => (data[1].embedding = [0.5, 0.1]));
    const mixed = await worker.embeddings(exchange(['a', 'b']), undefined, errorOf);
    expect((mixed.data[1].embedding as Base64Vector).toString()).toBe(base64(Float32Array.of(0.5, 0.1)));
    expect(mixed.data[0].embedding).toBeInstanceOf(Base64Vector);
    mixed.release();
    const asNumbers = await worker.embeddings(exchange(['a', 'b'], 'float'), undefined, errorOf);
    expect(asNumbers.data[1].embedding).toEqual([0.5, 0.1]);
    asNumbers.release();
    handler = vectors(4, (data) => (data[1].embedding = [0.5, 'x']));
    const odd = await worker.embeddings(exchange(['a', 'b']), undefined, errorOf);
    expect(odd.data[1].embedding).toEqual([0.5, 'x']);
    odd.release();

    handler = vectors(4, (data) => (data[0].embedding = 'not*base64=='));
    await expect(worker.embeddings(exchange(['a']), undefined, errorOf)).rejects.toMatchObject({
      kind: 'protocol',
      status: 200,
      message: 'upstream sent an embedding that is not base64',
    });
    handler = vectors(4, (data) => (data[0].embedding = 'AAAAAAA=')); // 5 bytes
    await expect(worker.embeddings(exchange(['a']), undefined, errorOf)).rejects.toMatchObject({
      kind: 'protocol',
      message: 'upstream sent a base64 embedding that is not whole float32 values',
    });
    handler = (_r, _b, res) => res.end('{"data": [');
    await expect(worker.embeddings(exchange(['a']), undefined, errorOf)).rejects.toMatchObject({
      kind: 'protocol',
      message: 'upstream sent a body that is not JSON',
    });
    handler = (_r, _b, res) => res.end('{"object":"list"}');
    await expect(worker.embeddings(exchange(['a']), undefined, errorOf)).rejects.toMatchObject({
      kind: 'protocol',
      message: 'upstream embeddings response has no data',
    });
    // Larger than the worker takes (2 MiB here): cut, not collected.
    handler = (_r, _b, res) => res.end(JSON.stringify({ data: [], pad: 'x'.repeat(3 * 1024 * 1024) }));
    await expect(worker.embeddings(exchange(['a']), undefined, errorOf)).rejects.toMatchObject({
      kind: 'protocol',
      message: 'upstream answer larger than 2097152 bytes',
    });
    expect(worker.heldBytes).toBe(0);
  });

  it('checks long base64 on its bytes as the parser does: alphabet, whole floats, canonical form, escapes', async () => {
    const long = base64(floats(3, 24)); // 128 characters: kept as bytes of the answer
    const refused = async (embedding: string, message: string) => {
      handler = vectors(24, (data) => (data[0].embedding = embedding));
      await expect(worker.embeddings(exchange(['a']), undefined, errorOf)).rejects.toMatchObject({
        kind: 'protocol',
        message,
      });
    };
    await refused(long.slice(0, 60) + '*' + long.slice(61), 'upstream sent an embedding that is not base64');
    await refused(long.slice(0, 60) + '\u0001' + long.slice(61), 'upstream sent an embedding that is not base64');
    await refused(long.slice(0, 60) + '-' + long.slice(61), 'upstream sent an embedding that is not base64');
    await refused(long.slice(0, 124) + 'AA==', 'upstream sent a base64 embedding that is not whole float32 values');
    await refused(long.slice(0, 126), 'upstream sent an embedding that is not base64');

    // 26 floats: 104 bytes, padded once, the last character's low 2 bits unused: set, the same floats, answered canonical.
    const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
    const padded = base64(floats(4, 26));
    const loose = padded.slice(0, -2) + ALPHABET[ALPHABET.indexOf(padded.at(-2)!) | 1] + '=';
    expect(loose).not.toBe(padded);
    for (const as of ['base64', 'float'] as const) {
      handler = vectors(26, (data) => (data[0].embedding = loose));
      const r = await worker.embeddings(exchange(['a'], as), undefined, errorOf);
      const expected = Buffer.from(loose, 'base64');
      const v = r.data[0].embedding;
      if (as === 'base64') expect((v as Base64Vector).toString()).toBe(expected.toString('base64'));
      else
        expect(Buffer.from(new Uint8Array((v as Float32Array).buffer, (v as Float32Array).byteOffset, 104))).toEqual(
          expected,
        );
      r.release();
    }

    // Slashes escaped (as PHP's json_encode writes them) are read as JSON reads them.
    handler = (_r, _b, res) =>
      res.end(`{"data":[{"index":0,"embedding":"${long.replace(/\//g, '\\/')}"}],"usage":{"prompt_tokens":1}}`);
    const escaped = await worker.embeddings(exchange(['a']), undefined, errorOf);
    expect((escaped.data[0].embedding as Base64Vector).toString()).toBe(long);
    escaped.release();
  });

  it('reads the rest of the answer as JSON.parse does, and refuses what it refuses', async () => {
    const long = base64(floats(5, 32));
    // Seeded values of every JSON kind, written with odd but valid spacing and escapes.
    let seed = 7;
    const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const pick = <T>(xs: T[]) => xs[Math.floor(rand() * xs.length)];
    const any = (depth: number): unknown => {
      const kind = depth > 3 ? Math.floor(rand() * 4) : Math.floor(rand() * 6);
      if (kind === 0) return pick([0, -0.5, 1e21, 1234567890123456, -3.25e-7, 42]);
      if (kind === 1)
        return pick(['', 'é "quoted" \\ back', 'tab\tline\n', '\u2028 \ud83d\ude00', 'x'.repeat(100), '__proto__']);
      if (kind === 2) return pick([true, false, null]);
      if (kind === 3) return pick(['model-a', 'embedding']);
      if (kind === 4) return Array.from({ length: Math.floor(rand() * 4) }, () => any(depth + 1));
      const o: Record<string, unknown> = {};
      for (let k = Math.floor(rand() * 4); k > 0; k--)
        o[pick(['a', 'embedding', 'data', '__proto__', 'ü', ''])] = any(depth + 1);
      return o;
    };
    for (let round = 0; round < 40; round++) {
      const usage = any(0);
      const extra = any(0);
      const text = JSON.stringify(
        { object: 'list', data: [{ index: 0, embedding: long, extra }], model: 'm\u00e9', usage },
        null,
        round % 2 ? 1 : 0,
      );
      handler = (_r, _b, res) => res.end(text);
      const r = await worker.embeddings(exchange(['a']), undefined, errorOf);
      const parsed = JSON.parse(text) as { usage: unknown; model: string };
      expect(r.usage).toEqual(parsed.usage);
      expect(r.model).toBe(parsed.model);
      expect((r.data[0].embedding as Base64Vector).toString()).toBe(long);
      r.release();
    }
    const entry = `{"index":0,"embedding":"${long}"}`;
    for (const bad of [
      `{"data":[${entry}]} x`,
      `{"data":[${entry},]}`,
      `{"data":[${entry}]`,
      `\ufeff{"data":[${entry}]}`,
      `{'data':[${entry}]}`,
      `{"data":[${entry}],"n":01}`,
      `{"data":[${entry}],"n":-}`,
      `{"data":[${entry}],"n":NaN}`,
      `{"data":[${entry}],"n":1.}`,
      `{"data":[${entry}],"s":"a\x01b"}`,
      `{"data":[${entry}],"s":"\\q"}`,
      `{"data":[${entry}] "n":1}`,
      `{"data":[{"index":0,"embedding":"${long}}]}`,
      // A kept embedding given twice or under a \`data\` given twice is still checked: a raw control character.
      `{"data":[{"index":0,"embedding":"${long}\u0001"}],"data":[]}`,
      `{"data":[{"index":0,"embedding":"${long}\u0001","embedding":"${long}"}]}`,
    ]) {
      handler = (_r, _b, res) => res.end(bad.replace('\\x01', '\u0001'));
      await expect(worker.embeddings(exchange(['a']), undefined, errorOf)).rejects.toMatchObject({
        message: 'upstream sent a body that is not JSON',
      });
    }
    // Vectors as numbers to a base64 ask, and nesting past 64 levels: read by JSON.parse.
    const deep = '['.repeat(100) + ']'.repeat(100);
    handler = (_r, _b, res) => res.end(`{"data":[{"index":0,"embedding":[0.5,1e-3]},${entry}],"usage":${deep}}`);
    const numbers = await worker.embeddings(exchange(['a', 'b']), undefined, errorOf);
    expect((numbers.data[0].embedding as Base64Vector).toString()).toBe(base64(Float32Array.of(0.5, 0.001)));
    expect((numbers.data[1].embedding as Base64Vector).toString()).toBe(long);
    expect(numbers.usage).toEqual(JSON.parse(deep));
    numbers.release();
    expect(worker.heldBytes).toBe(0);
  });

  it('gives an answer that does not fit the slab a buffer of its own', async () => {
    handler = vectors(1536);
    const small = new VectorWorker(64 * 1024);
    try {
      const big = await small.embeddings(exchange(Array.from({ length: 20 }, (_, i) => `t${i}`)), undefined, errorOf);
      expect((big.data[19].embedding as Base64Vector).toString()).toBe(base64(floats(19, 1536)));
      expect(small.heldBytes).toBe(0);
      big.release();
    } finally {
      await small.close();
    }
  });

  it('maps statuses, timeouts and a caller leaving as the HTTP client does (through UpstreamHttp)', async () => {
    const http = new UpstreamHttp({ baseUrl: `${url}/v1`, connections: 2, headers: {}, timeoutMs: 10_000 });
    try {
      handler = (_r, _b, res) => {
        res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '3' });
        res.end(JSON.stringify({ error: { message: 'slow down', type: 'rate_limit', code: 'rate_limited' } }));
      };
      const refused = http.embeddingsOffThread('/embeddings', { input: ['a'] }, { as: 'base64', key: 'k' });
      await expect(refused).rejects.toBeInstanceOf(UpstreamError);
      await expect(refused).rejects.toMatchObject({
        kind: 'http',
        status: 429,
        retryAfterMs: 3000,
        message: 'upstream returned 429: slow down',
      });
      expect(http.shares.stats).toEqual({ active: 0, waiting: 0 });

      // Never answered: the deadline cuts it.
      handler = () => undefined;
      await expect(
        http.embeddingsOffThread('/embeddings', { input: ['a'] }, { as: 'base64', timeoutMs: 200 }),
      ).rejects.toMatchObject({ kind: 'timeout', message: 'upstream did not answer within 200 ms' });

      // The caller leaves before the answer: the exchange stops, its connection is closed.
      const gone = new AbortController();
      handler = () => gone.abort();
      const before = closed.length;
      await expect(
        http.embeddingsOffThread('/embeddings', { input: ['a'] }, { as: 'base64', signal: gone.signal }),
      ).rejects.toBeInstanceOf(CallAbortedError);
      await until(() => closed.length > before);
    } finally {
      await http.close();
    }
  });

  it("gives each deployment's client connections of its own, and keeps a 2xx answer whose caller left once it began", async () => {
    // Two clients of one connection each to the same server, which answers once both requests are in: with one
    // set of connections for both, the second would wait for the first's, which waits for it.
    const waiting: ServerResponse[] = [];
    handler = (_req, body, res) => {
      waiting.push(res);
      if (waiting.length === 2) for (const r of waiting.splice(0)) vectors(8)(_req, body, r);
    };
    const one = new UpstreamHttp({ baseUrl: `${url}/v1`, connections: 1, headers: {}, timeoutMs: 10_000 });
    const two = new UpstreamHttp({ baseUrl: `${url}/v1`, connections: 1, headers: {}, timeoutMs: 10_000 });
    try {
      const both = await Promise.all(
        [one, two].map((h) =>
          h.embeddingsOffThread('/embeddings', { input: ['a'], encoding_format: 'base64' }, { as: 'base64' }),
        ),
      );
      both.forEach((r) => r.release());
      expect(both.map((r) => (r.data[0].embedding as Base64Vector).length)).toEqual([8, 8]);

      // The upstream began its 2xx answer: the caller leaving no longer stops the call (the provider bills it).
      const gone = new AbortController();
      const answer = JSON.stringify({
        object: 'list',
        data: [{ index: 0, embedding: base64(floats(0, 8)) }],
        usage: { prompt_tokens: 1, total_tokens: 1 },
      });
      let begun: ServerResponse | undefined;
      handler = (_req, _body, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write(answer.slice(0, 10));
        begun = res;
      };
      const call = one.embeddingsOffThread('/embeddings', { input: ['a'] }, { as: 'base64', signal: gone.signal });
      await until(() => vectorWorker().answeringCalls === 1);
      gone.abort();
      begun!.end(answer.slice(10));
      const kept = await call;
      expect((kept.data[0].embedding as Base64Vector).toString()).toBe(base64(floats(0, 8)));
      kept.release();
      expect(one.shares.stats).toEqual({ active: 0, waiting: 0 });
    } finally {
      await Promise.all([one.close(), two.close()]);
    }
  });

  it('is where an OpenAI-type client asking base64 runs a call that asks for it, and only such a call', async () => {
    handler = vectors(16);
    const client = new OpenAiCompatibleClient({
      baseUrl: `${url}/v1`,
      apiKey: 'sk-up',
      headers: {},
      timeoutMs: 10_000,
      connections: 2,
      embeddingsEncoding: 'base64',
    });
    try {
      const before = vectorWorker().exchanges;
      const off = await client.embeddings({ model: 'm', input: ['a', 'b'] }, { vectorsOffThread: 'base64' });
      expect(vectorWorker().exchanges).toBe(before + 1);
      expect((off.data[1].embedding as Base64Vector).text.buffer).toBeInstanceOf(SharedArrayBuffer);
      expect(JSON.parse(requests[0].body).encoding_format).toBe('base64');
      off.release!();
      const on = await client.embeddings({ model: 'm', input: ['a', 'b'] });
      expect(vectorWorker().exchanges).toBe(before + 1);
      expect(on.release).toBeUndefined();
      expect(Array.from(on.data[1].embedding as Float32Array)).toEqual(Array.from(floats(1, 16)));
    } finally {
      await client.close();
    }
  });
});

async function until(ok: () => boolean): Promise<void> {
  while (!ok()) await new Promise((r) => setImmediate(r));
}
