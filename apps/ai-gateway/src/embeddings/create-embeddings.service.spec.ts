import type { CallContext } from '../http/call-context';
import { Tokenizer } from '../tokenizer/tokenizer';
import type { CallOutcome } from '../usage/metering.service';
import { Base64Vector, EmbeddingVector } from '@app/llm';
import { CreateEmbeddings } from './create-embeddings.service';
import { callContext, keyPrincipal, modelInfo } from '../../../../test/ai-gateway/use-case-fixtures';

// The use case with a real tokenizer and in-memory router, cache and ledger: its answer is a value.
/** The answer, released as the transport releases it once written (KeyBytes.hold keeps a key's bytes until then). */
const sent = <T extends { release?: () => void }>(answer: T): T => {
  answer.release?.();
  return answer;
};

describe('CreateEmbeddings', () => {
  const info = modelInfo({ name: 'e', kind: 'embeddings', price: { inputPer1k: 1, outputPer1k: 0 } });
  const principal = keyPrincipal;
  const context = (): CallContext => callContext('req-2', 'embeddings');
  let settled: CallOutcome[];
  let upstreamInputs: unknown[];
  let useCase: CreateEmbeddings;
  const tokenizer = new Tokenizer();
  /** How many vectors the upstream leaves out of its answer (a broken upstream). */
  let dropped: number;
  /** The upstream's vector for the input at `index` of its request. */
  let vectorFor: (index: number) => EmbeddingVector;

  beforeEach(() => {
    settled = [];
    upstreamInputs = [];
    dropped = 0;
    vectorFor = (index) => [index + 0.5, 1];
    const cache = new Map<string, string>();
    const router = {
      modelInfo: () => info,
      isServed: () => true,
      takesTokenIds: () => true,
      embeddings: async (req: { input: string[] }) => {
        upstreamInputs.push(...req.input);
        return {
          value: {
            data: req.input.slice(dropped).map((_, index) => ({ index, embedding: vectorFor(index) })),
            usage: { prompt_tokens: 3 * req.input.length },
          },
          deployment: 'd1',
        };
      },
    };
    const state = {
      getMany: async (keys: string[]) => keys.map((k) => cache.get(k) ?? null),
      setManyWithin: async (_counter: string, _max: number, rows: Array<[string, string]>) => (
        rows.forEach(([k, v]) => cache.set(k, v)),
        true
      ),
    };
    const metering = {
      reserve: async () => ({ keyId: 'k1', admitted: null, settled: false, startedAt: 0 }),
      settle: async (_r: unknown, outcome: CallOutcome) => void settled.push(outcome),
    };
    const config = {
      AI_EMBEDDINGS_CACHE_TTL_MS: 60_000,
      AI_EMBEDDINGS_CACHE_MAX_BYTES_PER_KEY: 1_000_000,
      AI_EMBEDDINGS_CACHE_MAX_INPUTS: 128,
      AI_EMBEDDINGS_CACHE_HITS_BILLED: false,
    };
    useCase = new CreateEmbeddings(router as never, tokenizer, metering as never, state as never, config as never);
  });

  it('answers the vectors in input order as a JSON value, settled; a repeated input comes from the key cache', async () => {
    const first = await useCase.handle(principal, { model: 'e', input: ['one', 'two'] }, context()).then(sent);
    expect(first).toMatchObject({
      kind: 'json',
      headers: ['X-Gateway-Overhead-Ms', expect.stringMatching(/^\d+\.\d{2}$/)],
    });
    expect(first.body).toEqual({
      object: 'list',
      model: 'e',
      data: [
        { index: 0, object: 'embedding', embedding: [0.5, 1] },
        { index: 1, object: 'embedding', embedding: [1.5, 1] },
      ],
      usage: { prompt_tokens: 6, total_tokens: 6 },
    });
    // Written as built, with turns given to the event loop: the same JSON the body serializes to.
    expect(Buffer.concat(first.text as Buffer[]).toString()).toBe(JSON.stringify(first.body));
    await first.settled;
    expect(settled).toEqual([
      expect.objectContaining({ endpoint: 'embeddings', status: 'ok', provider: 'd1', requestId: 'req-2' }),
    ]);

    const again = await useCase
      .handle(principal, { model: 'e', input: 'two', encoding_format: 'base64' } as never, context())
      .then(sent);
    expect(upstreamInputs).toEqual(['one', 'two']);
    expect(again.body.data[0].embedding).toBe(Buffer.from(new Float32Array([1.5, 1]).buffer).toString('base64'));
    expect(settled[1]).toMatchObject({ status: 'cached', provider: 'cache', costYuan: 0 });
  });

  it('refuses dimensions above the model as a catalog error', async () => {
    const small = { ...info, dimensions: 8 };
    const refusing = new CreateEmbeddings(
      { modelInfo: () => small } as never,
      new Tokenizer(),
      {} as never,
      {} as never,
      {} as never,
    );
    await expect(
      refusing.handle(principal, { model: 'e', input: 'x', dimensions: 9 }, context()),
    ).rejects.toMatchObject({ status: 400 });
  });

  it('fails an upstream answer with fewer vectors than inputs as a 502, settled unbilled, nothing cached', async () => {
    dropped = 1;
    await expect(useCase.handle(principal, { model: 'e', input: ['one', 'two'] }, context())).rejects.toMatchObject({
      status: 502,
    });
    expect(settled).toEqual([
      expect.objectContaining({ endpoint: 'embeddings', status: 'failed', costYuan: 0, httpStatus: 502 }),
    ]);
    dropped = 0;
    await useCase.handle(principal, { model: 'e', input: 'one' }, context()).then(sent);
    expect(upstreamInputs).toEqual(['one', 'two', 'one']);
  });

  it('gives the event loop turns across thousands of short inputs, not only per characters counted', async () => {
    const before = tokenizer.yields;
    const input = Array.from({ length: 2048 }, (_, i) => `w ${i}`);
    await useCase.handle(principal, { model: 'e', input }, context()).then(sent);
    // Each input counts as 64 characters of work besides its own: 2048 of them about 140 000, a turn every
    // 16 384 (8); by their 5 to 6 characters alone, less than one.
    expect(tokenizer.yields - before).toBeGreaterThanOrEqual(8);
  });

  it('writes the JSON of thousands of vectors a run at a time: the same text as the body, floats and base64', async () => {
    const input = Array.from({ length: 1500 }, (_, i) => `w ${i}`);
    for (const encoding_format of ['float', 'base64'] as const) {
      const answer = await useCase.handle(principal, { model: 'e', input, encoding_format }, context()).then(sent);
      expect(answer.body.data).toHaveLength(1500);
      expect(answer.body.data.map((d) => d.index)).toEqual(input.map((_, i) => i));
      // In pieces (runs of entries), which together are the body's JSON.
      expect((answer.text as Buffer[]).length).toBeGreaterThan(3);
      expect(Buffer.concat(answer.text as Buffer[]).toString()).toBe(JSON.stringify(answer.body));
    }
  });

  it("writes an upstream's base64 vectors as their bytes to a base64 answer, and any vector form as numbers or base64", async () => {
    const floats = (i: number) => new Float32Array(Array.from({ length: 1536 }, (_, k) => Math.fround((i - k) / 3)));
    const base64Of = (i: number) => Buffer.from(floats(i).buffer).toString('base64');
    // As the upstream client gives them: base64 kept as the answer's bytes, decoded float32s, plain numbers.
    const kept = new Map<number, Base64Vector>();
    vectorFor = (i) =>
      i % 3 === 0
        ? kept.set(i, Base64Vector.of(Buffer.from(base64Of(i)))!).get(i)!
        : i % 3 === 1
          ? floats(i)
          : Array.from(floats(i));
    const input = Array.from({ length: 300 }, (_, i) => `w ${i}`);
    const b64 = await useCase.handle(principal, { model: 'e', input, encoding_format: 'base64' }, context()).then(sent);
    const text = Buffer.concat(b64.text as Buffer[]).toString();
    expect(text).toBe(JSON.stringify(b64.body));
    const parsed = JSON.parse(text) as { data: Array<{ index: number; embedding: string }> };
    expect(parsed.data.map((d) => d.embedding)).toEqual(input.map((_, i) => base64Of(i)));
    expect(b64.body.data[0]).toMatchObject({ index: 0, object: 'embedding', embedding: base64Of(0) });
    // The kept vectors' bytes are pieces of the answer as they are (no copy), one per kept vector.
    for (const v of kept.values()) expect((b64.text as Buffer[]).filter((p) => p === v.text)).toHaveLength(1);

    const numbers = await useCase
      .handle(principal, { model: 'e', input, encoding_format: 'float' }, context())
      .then(sent);
    const parsedNumbers = JSON.parse(Buffer.concat(numbers.text as Buffer[]).toString()) as {
      data: Array<{ embedding: number[] }>;
    };
    expect(parsedNumbers.data.map((d) => d.embedding)).toEqual(input.map((_, i) => Array.from(floats(i))));

    // A batch the cache takes stores numbers, whatever form the vector came in: a repeat answers the same.
    const few = ['x 0', 'x 1', 'x 2'];
    const fresh = await useCase
      .handle(principal, { model: 'e', input: few, encoding_format: 'base64' }, context())
      .then(sent);
    const cached = await useCase
      .handle(principal, { model: 'e', input: few, encoding_format: 'base64' }, context())
      .then(sent);
    expect(settled.at(-1)).toMatchObject({ status: 'cached' });
    expect(JSON.stringify(cached.body)).toBe(JSON.stringify(fresh.body));
  });

  it("counts one call of a key at a time (its lane), while another key's call counts beside it", async () => {
    const counted: string[] = [];
    const count = tokenizer.countPaced.bind(tokenizer);
    const spy = jest
      .spyOn(tokenizer, 'countPaced')
      .mockImplementation((text, ...rest) => (counted.push(text.split(' ')[0]), count(text, ...rest)));
    try {
      // 600 inputs each: several turns of the event loop per call (an input costs 64 characters of work).
      const batch = (name: string) => Array.from({ length: 600 }, (_, i) => `${name} ${i}`);
      const other = { ...(keyPrincipal as object), id: 'k2' } as never;
      await Promise.all([
        useCase.handle(principal, { model: 'e', input: batch('a1') }, context()).then(sent),
        useCase.handle(principal, { model: 'e', input: batch('a2') }, context()).then(sent),
        useCase.handle(other, { model: 'e', input: batch('b1') }, context()).then(sent),
      ]);
      const first = (name: string) => counted.indexOf(name);
      const last = (name: string) => counted.lastIndexOf(name);
      // Key k1's second call starts counting once its first is done; k2's call counted while k1's first did.
      expect(first('a2')).toBeGreaterThan(last('a1'));
      expect(first('b1')).toBeLessThan(last('a1'));
      expect(counted.filter((c) => c === 'a1')).toHaveLength(600);
    } finally {
      spy.mockRestore();
    }
  });
});
