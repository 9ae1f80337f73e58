/**
 * Bulk `/v1/embeddings` calls to a deployment asking base64 (as api.openai.com is asked) run their upstream exchange
 * on the embeddings worker thread (libs/llm/src/vector-worker.ts): the answer's megabytes are received and parsed
 * there and written to the caller from a buffer shared with it. What the callers get is what they got before; the
 * shared buffer's regions are given back once each answer is written, or its client left.
 */
import { IncomingMessage, request } from 'http';
import OpenAI from 'openai';
import { vectorWorker } from '@app/llm';
import { CreateEmbeddings } from '../../apps/ai-gateway/src/embeddings/create-embeddings.service';
import { fakeEmbedding } from '../support/upstreams';
import { until } from '../support/until';
import { GatewayFixture, providersDoc, startGatewayFixture } from './gateway-fixture';

describe('/v1/embeddings on the embeddings worker thread', () => {
  let f: GatewayFixture;
  let client: OpenAI;
  let key: string;
  const salt = `${Date.now() % 100_000}`;
  // 200 inputs of 1536 dimensions: 1.2 MB of vectors, past the 1 MiB from which a call runs on the worker, and
  // past AI_EMBEDDINGS_CACHE_MAX_INPUTS (128): not cached.
  const texts = (n: number, tag: string) => Array.from({ length: n }, (_, i) => `${tag} ${salt} text ${i}`);
  const float32 = (text: string) => fakeEmbedding(text, 1536).map(Math.fround);

  beforeAll(async () => {
    f = await startGatewayFixture({}, ({ openai, backup, anthropic }) => {
      const doc = providersDoc(openai, backup, anthropic) as any;
      doc.models['bulk-embed'] = { kind: 'embeddings', dimensions: 1536, price: { inputPer1k: 0.1, outputPer1k: 0 } };
      doc.deployments.push({
        name: 'bulk',
        type: 'openai',
        baseUrl: openai.url,
        apiKeyEnv: 'FAKE_OPENAI_KEY',
        timeoutMs: 10_000,
        embeddingsEncoding: 'base64',
        models: ['bulk-embed'],
      });
      return doc;
    });
    key = (await f.createKey({ name: 'off-thread' })).key;
    client = new OpenAI({ apiKey: key, baseURL: `${f.gw.url}/v1`, maxRetries: 0 });
  });
  afterAll(async () => {
    await f?.close();
  });

  it('answers the openai SDK (base64, decoded by it) with the upstream vectors, through the worker, and gives its region back', async () => {
    const input = texts(200, 'sdk');
    const before = vectorWorker().exchanges;
    const res = await client.embeddings.create({ model: 'bulk-embed', input });
    expect(vectorWorker().exchanges).toBe(before + 1);
    expect(f.openai.requests.at(-1)!.body.encoding_format).toBe('base64');
    expect(res.data).toHaveLength(200);
    expect(res.data.map((d) => d.index)).toEqual(input.map((_, i) => i));
    for (const i of [0, 77, 199]) expect(res.data[i].embedding).toEqual(float32(input[i]));
    expect(res.usage.prompt_tokens).toBeGreaterThan(0);
    await until(() => vectorWorker().heldBytes === 0);
    expect(f.gw.app.get(CreateEmbeddings)['bytes'].size).toBe(0);
    // The shared buffer in the Prometheus registry: nothing held now, no answer outside it.
    const metrics = await (await fetch(`${f.gw.url}/actuator/prometheus`)).text();
    expect(metrics).toMatch(/^ai_gateway_embeddings_worker_held_bytes 0$/m);
    expect(metrics).toMatch(/^ai_gateway_embeddings_worker_own_buffers_total 0$/m);
  });

  it('answers numbers to a caller asking floats, and base64 as the upstream wrote it to one asking base64', async () => {
    const input = texts(200, 'formats');
    const before = vectorWorker().exchanges;
    const floats = await client.embeddings.create({ model: 'bulk-embed', input, encoding_format: 'float' });
    expect(floats.data[5].embedding).toEqual(float32(input[5]));

    const raw = await fetch(`${f.gw.url}/v1/embeddings`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'bulk-embed', input, encoding_format: 'base64' }),
    });
    expect(raw.status).toBe(200);
    const body = (await raw.json()) as { data: Array<{ index: number; embedding: string }> };
    expect(body.data[9].embedding).toBe(
      Buffer.from(new Float32Array(fakeEmbedding(input[9], 1536)).buffer).toString('base64'),
    );
    expect(vectorWorker().exchanges).toBe(before + 2);
    await until(() => vectorWorker().heldBytes === 0);
  });

  it('keeps small calls on the main thread', async () => {
    const before = vectorWorker().exchanges;
    const res = await client.embeddings.create({ model: 'bulk-embed', input: texts(3, 'small') });
    expect(res.data[2].embedding).toHaveLength(1536);
    expect(vectorWorker().exchanges).toBe(before);
  });

  it("keeps an answer's bytes intact while its client reads slowly and other calls come and go", async () => {
    // Key A's 17 MB answer: more than the sockets hold, so most of it is still written from the shared buffer when
    // key B's calls, one after the other, take buffer regions and give them back. Were A's region given back
    // before its last byte was written, B's first call would be written into it (first fit) and A would read B's.
    const other = new OpenAI({
      apiKey: (await f.createKey({ name: 'off-thread-b' })).key,
      baseURL: `${f.gw.url}/v1`,
      maxRetries: 0,
    });
    const input = texts(2048, 'slow');
    const url = new URL(`${f.gw.url}/v1/embeddings`);
    const res = await new Promise<IncomingMessage>((resolve, reject) => {
      const req = request(
        {
          host: url.hostname,
          port: url.port,
          path: url.pathname,
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        },
        resolve,
      );
      req.on('error', reject);
      req.end(JSON.stringify({ model: 'bulk-embed', input, encoding_format: 'base64' }));
    });
    res.pause();
    expect(res.statusCode).toBe(200);
    for (let k = 0; k < 3; k++) {
      const b = await other.embeddings.create({ model: 'bulk-embed', input: texts(2048, `other ${k}`) });
      expect(b.data[2047].embedding).toEqual(float32(texts(2048, `other ${k}`)[2047]));
    }
    expect(vectorWorker().heldBytes).toBeGreaterThan(0); // A's answer is still being written
    const chunks: Buffer[] = [];
    for await (const chunk of res) chunks.push(chunk as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString()) as { data: Array<{ index: number; embedding: string }> };
    expect(body.data).toHaveLength(2048);
    body.data.forEach((d, i) => {
      expect(d.index).toBe(i);
      expect(d.embedding).toBe(Buffer.from(new Float32Array(fakeEmbedding(input[i], 1536)).buffer).toString('base64'));
    });
    await until(() => vectorWorker().heldBytes === 0);
  });

  it('gives the region back when the client leaves in the middle of the answer', async () => {
    // 1500 vectors: 12 MB of base64, more than the sockets hold: the answer is still being written when the client goes.
    const body = JSON.stringify({ model: 'bulk-embed', input: texts(1500, 'gone'), encoding_format: 'base64' });
    const url = new URL(`${f.gw.url}/v1/embeddings`);
    const before = vectorWorker().exchanges;
    let heldThen = 0;
    let status: number | undefined;
    await new Promise<void>((resolve, reject) => {
      const req = request(
        {
          host: url.hostname,
          port: url.port,
          path: url.pathname,
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        },
        (res) => {
          status = res.statusCode;
          res.once('data', () => {
            heldThen = vectorWorker().heldBytes;
            req.destroy();
            resolve();
          });
        },
      );
      req.on('error', (e) => (req.destroyed ? undefined : reject(e)));
      req.end(body);
    });
    expect(status).toBe(200);
    expect(heldThen).toBeGreaterThan(0);
    expect(vectorWorker().exchanges).toBe(before + 1);
    await until(() => vectorWorker().heldBytes === 0);
    // The key's vectors in flight (KeyBytes) were given back with it.
    expect(f.gw.app.get(CreateEmbeddings)['bytes'].size).toBe(0);
  });
});
