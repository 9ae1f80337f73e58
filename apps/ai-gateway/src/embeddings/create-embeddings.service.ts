import { Injectable, Logger } from '@nestjs/common';
import { createHash } from 'crypto';
import type { Principal } from '@app/auth';
import { GatewayError, GatewayErrorCode } from '../errors';
import { SharedState } from '@app/platform';
import {
  Base64Vector,
  Deployment,
  EmbeddingVector,
  isEmbeddingVector,
  LlmRouter,
  ModelInfo,
  UnsupportedRequestError,
  vectorBase64,
  vectorNumbers,
} from '@app/llm';
import { GatewayConfig } from '../config/gateway.config';
import { assertModel, assertScope, shareOf } from '../keys/key-scopes';
import { MeteringService } from '../usage/metering.service';
import { tokenCost } from '../usage/pricing';
import { OVERHEAD_HEADER } from '../http/call-timer';
import type { CallContext, JsonAnswer } from '../http/call-context';
import { SLICE, Tokenizer } from '../tokenizer/tokenizer';
import { toGatewayError } from '../upstreams/upstream-errors';
import { meteredUpstreamCall } from '../usage/metered-upstream-call';
import { EmbeddingsRequest } from './dtos/embeddings.dto';
import { isTokenInput, tokenInputs } from './token-input';
import { KeyLanes } from '../limits/key-lanes';
import { KeyBytes } from '../limits/key-bytes';

const ENDPOINT = 'embeddings';

/** One input: a text, or the token ids of one (token-array requests). */
type EmbeddingInput = string | number[];

export interface EmbeddingsResult {
  object: 'list';
  model: string;
  data: Array<{ index: number; object: 'embedding'; embedding: number[] | string }>;
  usage: { prompt_tokens: number; total_tokens: number };
}

/**
 * An answer's entry whose base64 vector is the upstream's bytes (Base64Vector): its string is made only when read
 * (nothing on the way out reads it: the answer is written from the bytes); JSON.stringify gives the entry's JSON.
 */
class KeptEntry {
  readonly object = 'embedding' as const;

  constructor(
    readonly index: number,
    private readonly vector: Base64Vector,
  ) {}

  get embedding(): string {
    return this.vector.toString();
  }

  toJSON(): { index: number; object: 'embedding'; embedding: string } {
    return { index: this.index, object: this.object, embedding: this.embedding };
  }
}

/** Dimensions counted for a model whose catalog entry names none (OpenAI's text-embedding-3-small and ada-002). */
const DEFAULT_DIMENSIONS = 1536;

/** Units charged to the pace per entry of an answer besides its characters (see the answer's loop in run). */
const ENTRY_UNITS = 32;

/** Vector bytes of an answer from which its exchange runs on the embeddings worker thread (vectorsOffThread). */
const OFF_THREAD_FROM = 2 ** 20;

/** Closes an entry whose base64 vector was written as the upstream's bytes. */
const CLOSE_RAW_ENTRY = Buffer.from('"}');

/** POST /v1/embeddings: limits, a cache per API key by (model, dimensions, input), budget, metering. */
@Injectable()
export class CreateEmbeddings {
  private readonly log = new Logger('Embeddings');
  /** Each key's counts and answers, one call at a time in this replica (KeyLanes). */
  private readonly lanes = new KeyLanes();
  /** Each key's vectors in flight in this replica, at most AI_EMBEDDINGS_MAX_VECTOR_BYTES_PER_KEY (KeyBytes). */
  private readonly bytes: KeyBytes;

  constructor(
    private readonly router: LlmRouter,
    private readonly tokenizer: Tokenizer,
    private readonly metering: MeteringService,
    private readonly state: SharedState,
    private readonly config: GatewayConfig,
  ) {
    this.bytes = new KeyBytes(config.AI_EMBEDDINGS_MAX_VECTOR_BYTES_PER_KEY);
  }

  /** The vectors as a JSON answer, the call settled; a failure is thrown as a catalog error. */
  async handle(principal: Principal, body: EmbeddingsRequest, ctx: CallContext): Promise<JsonAnswer<EmbeddingsResult>> {
    try {
      const { result, text, release, releaseShare } = await this.run(principal, body, ctx);
      return {
        kind: 'json',
        body: result,
        text,
        headers: [OVERHEAD_HEADER, ctx.timer.overheadMs()],
        settled: Promise.resolve(),
        release,
        releaseShare,
      };
    } catch (e) {
      throw toGatewayError(e);
    }
  }

  private async run(
    principal: Principal,
    body: EmbeddingsRequest,
    ctx: CallContext,
  ): Promise<{ result: EmbeddingsResult; text: Buffer[]; release?: () => void; releaseShare?: () => void }> {
    const claims = assertScope(principal, 'embeddings');
    const info = this.router.modelInfo(body.model);
    if (!info) throw new GatewayError(GatewayErrorCode.ModelNotFound, { model: body.model });
    if (info.kind !== 'embeddings')
      throw new GatewayError(GatewayErrorCode.ModelKindMismatch, { model: body.model, expected: 'embeddings' });
    assertModel(claims, body.model);
    if (body.dimensions !== undefined && info.dimensions !== undefined && body.dimensions > info.dimensions) {
      throw new GatewayError(GatewayErrorCode.DimensionsTooLarge, { max: info.dimensions, model: body.model });
    }
    if (!this.router.isServed(body.model)) throw new GatewayError(GatewayErrorCode.NoProvider, { model: body.model });

    // Text inputs, or token-array inputs (ids of the model's encoding: counted by their length, no tokenizer run).
    const tokenArrays = isTokenInput(body.input);
    const inputs: EmbeddingInput[] = tokenArrays
      ? tokenInputs(body.input as number[] | number[][])
      : Array.isArray(body.input)
        ? (body.input as string[])
        : [body.input];
    const nameOf = (i: number) =>
      `input${Array.isArray(body.input) && !(tokenArrays && typeof body.input[0] === 'number') ? `[${i}]` : ''}`;
    // Counted with turns given to the event loop: a large body cannot hold it (test/ai-gateway/security-text.e2e-spec.ts).
    const pace = this.tokenizer.pace(shareOf(principal), ctx.clientGone);
    const tokens: number[] = [];
    // Ids for a model no deployment takes them for are decoded (LlmRouter.embeddings) and the engine
    // works on the text, which may be many more tokens than ids: held and billed by the larger count.
    const decodes = tokenArrays && !this.router.takesTokenIds(body.model);
    const texts = new Map<number, string>();
    // Keys for the cache's read and write, hashed with the count of their input (on its pace); none for a
    // batch the cache does not take.
    const keys: string[] | null = this.cacheTakes(inputs.length) ? [] : null;
    // The counts run in the key's lane (KeyLanes): a key's concurrent calls count one at a time in this replica,
    // so another key's call waits for one slice of this key at most, not for one per call of it in flight.
    await this.lanes.run(
      shareOf(principal),
      async () => {
        for (let i = 0; i < inputs.length; i++) {
          const input = inputs[i];
          // Each input costs a fixed amount besides its characters (a count, a cache key): thousands of short
          // inputs give the event loop turns as one long text does (as chat's messages, tokenizer.ts countChatAsync).
          // No promise per input unless a turn is due (Pace.charge): thousands of small awaits cost more than the counts.
          const due = pace.charge(64);
          if (due) await due;
          let n: number;
          if (typeof input === 'string') {
            const counted = this.tokenizer.countPaced(input, info.encoding, info.contextLength, pace);
            n = typeof counted === 'number' ? counted : await counted;
          } else {
            n = input.length;
            const bad = this.tokenizer.unknownTokenAt(input, info.encoding);
            if (bad >= 0) {
              throw new GatewayError(GatewayErrorCode.InvalidValue, {
                param: nameOf(i),
                message: `${nameOf(i)}: ${input[bad]} is not a token of ${body.model}'s encoding ${info.encoding} (ids 0 to ${this.tokenizer.vocabularySize(info.encoding) - 1})`,
              });
            }
            const text = decodes && n <= info.contextLength ? this.tokenizer.decode(input, info.encoding) : undefined;
            if (text !== undefined) {
              texts.set(i, text);
              n = Math.max(n, await this.tokenizer.countUpToAsync(text, info.encoding, info.contextLength, pace));
            }
          }
          if (n > info.contextLength) {
            throw new GatewayError(GatewayErrorCode.EmbeddingInputTooLong, {
              input: nameOf(i),
              tokens: n,
              model: body.model,
              limit: info.contextLength,
            });
          }
          tokens.push(n);
          keys?.push(this.cacheKey(principal.id, info, body.dimensions, input));
        }
      },
      ctx.clientGone.signal,
    );

    const vectors: (EmbeddingVector | undefined)[] = await this.cached(keys, inputs.length);
    const base64 = body.encoding_format === 'base64';
    const missing = inputs.map((_, i) => i).filter((i) => !vectors[i]);
    // Bytes of vectors this call brings back: held against the key's share while they are fetched, parsed and
    // written into the answer, until it is sent (KeyBytes.hold): a key's bulk calls take turns for their memory, not
    // all at once.
    const vectorBytes = missing.length * (body.dimensions ?? info.dimensions ?? DEFAULT_DIMENSIONS) * 4;
    // Vectors that are views of the embeddings worker's buffer (vectorsOffThread): given back once the answer is
    // written (JsonAnswer.release), or at once when the call fails after they came.
    let release: (() => void) | undefined;
    const answered = this.bytes.hold(
      shareOf(principal),
      vectorBytes,
      async () => {
        const billedHits = this.config.AI_EMBEDDINGS_CACHE_HITS_BILLED;
        const hitTokens = inputs.reduce((s, _, i) => s + (vectors[i] ? tokens[i] : 0), 0);
        const missTokens = missing.reduce((s, i) => s + tokens[i], 0);
        const heldTokens = Math.ceil(missTokens * 1.1) + 16 + (billedHits ? hitTokens : 0);
        const reservation = await this.metering.reserve(principal, {
          model: info.name,
          yuan: tokenCost(info, { promptTokens: heldTokens, completionTokens: 0 }),
          tokens: heldTokens,
          headers: ctx.rateLimits,
          alive: ctx.alive,
        });

        let upstreamTokens = 0;
        let deployment: string | undefined;
        if (missing.length) {
          const sent = missing.map((i) => inputs[i]);
          // An answer with the wrong number of vectors fails the call like an upstream error (settled, not billed).
          const routed = await meteredUpstreamCall(
            this.metering,
            reservation,
            ctx,
            { endpoint: ENDPOINT, model: info.name },
            async (opts) => {
              const answer = await this.router.embeddings(
                {
                  model: body.model,
                  input: sent as string[] | number[][],
                  encoding_format: 'float',
                  ...(body.dimensions ? { dimensions: body.dimensions } : {}),
                  ...(body.user ? { user: body.user } : {}),
                },
                // The answer's vectors are parsed a vector at a time on the key's turns (parseSliced in @app/llm), on a
                // pace that goes on if the client leaves: the provider answered, so the call is settled and billed.
                // Megabytes of them are received and parsed on the embeddings worker thread where the deployment
                // allows (vectorsOffThread): none of their bytes on this thread.
                {
                  ...opts,
                  pace: this.tokenizer.pace(shareOf(principal)),
                  ...(vectorBytes >= OFF_THREAD_FROM ? { vectorsOffThread: base64 ? 'base64' : 'float' } : {}),
                },
                (d) => this.decoded(sent as number[][], missing, info, d, nameOf, texts),
              );
              release = answer.value.release;
              const data = [...answer.value.data].sort((a, b) => a.index - b.index);
              if (data.length !== missing.length || data.some((d) => !isEmbeddingVector(d.embedding))) {
                throw new GatewayError(GatewayErrorCode.EmbeddingsCountMismatch, {
                  deployment: answer.deployment,
                  returned: data.length,
                  expected: missing.length,
                });
              }
              return { deployment: answer.deployment, data, usage: answer.value.usage };
            },
          );
          deployment = routed.deployment;
          routed.data.forEach((d, k) => (vectors[missing[k]] = d.embedding));
          upstreamTokens = routed.usage?.prompt_tokens ?? missTokens;
          if (keys)
            await this.store(
              principal.id,
              missing.map((i) => [keys[i], vectors[i]!]),
            );
        }

        const totalTokens = upstreamTokens + hitTokens;
        const billedTokens = upstreamTokens + (billedHits ? hitTokens : 0);
        await this.metering.settle(reservation, {
          endpoint: ENDPOINT,
          model: info.name,
          provider: deployment ?? 'cache',
          status: missing.length ? 'ok' : 'cached',
          costYuan: tokenCost(info, { promptTokens: billedTokens, completionTokens: 0 }),
          promptTokens: totalTokens,
          countedTokens: billedTokens,
          httpStatus: 200,
          requestId: ctx.requestId,
        });
        const result: EmbeddingsResult = {
          object: 'list',
          model: info.name,
          data: [],
          usage: { prompt_tokens: totalTokens, total_tokens: totalTokens },
        };
        // The answer's JSON is built in the key's lane too, a run of entries at a time with turns given to the event
        // loop (thousands of vectors are one JSON.stringify of milliseconds otherwise), each run encoded to bytes as
        // it is built: the pieces are written one after the other (sendJson), never joined into one string.
        const text = await this.lanes.run(
          shareOf(principal),
          async () => {
            // One JSON.stringify per run of about a slice of JSON, not one per entry, and no promise per entry
            // (Pace.charge).
            const pieces: Buffer[] = [Buffer.from(`{"object":"list","model":${JSON.stringify(result.model)},"data":[`)];
            let run: EmbeddingsResult['data'] = [];
            let runChars = 0;
            const flush = () => {
              if (run.length) {
                const json = JSON.stringify(run);
                pieces.push(Buffer.from(pieces.length > 1 ? `,${json.slice(1, -1)}` : json.slice(1, -1)));
              }
              run = [];
              runChars = 0;
            };
            for (let index = 0; index < vectors.length; index++) {
              const vector = vectors[index]!;
              let units = ENTRY_UNITS;
              if (base64 && vector instanceof Base64Vector) {
                // The upstream's base64 bytes, written as they came: no string, decode or encode per vector.
                flush();
                result.data.push(new KeptEntry(index, vector));
                const head = `${pieces.length > 1 ? ',' : ''}{"index":${index},"object":"embedding","embedding":"`;
                pieces.push(Buffer.from(head), vector.text, CLOSE_RAW_ENTRY);
                units += head.length >> 3; // the vector's bytes cost nothing here: they are written as they are
              } else {
                const embedding = base64 ? vectorBase64(vector) : vectorNumbers(vector);
                const entry = { index, object: 'embedding' as const, embedding };
                result.data.push(entry);
                run.push(entry);
                // A float is at most ~24 characters of JSON; a base64 float 4/3 of 4 bytes. JSON.stringify writes a
                // base64 string's characters some 8 times faster than a count goes through characters, a float's some 4
                // times (~4.6 ns a character): charged an eighth and a quarter.
                const numbers = typeof embedding !== 'string';
                const chars = 48 + (numbers ? embedding.length * 24 : embedding.length);
                runChars += chars;
                if (runChars >= SLICE) flush();
                units += numbers ? chars >> 2 : chars >> 3;
              }
              // Each entry costs ~0.5 us besides its characters (its object or pieces, a charge): 2048 entries of small
              // vectors were one slice of 0.7 to 0.9 ms when charged by characters alone (measured with the answers of
              // bench/lib/upstream.js; a BPE count's slice is ~0.3 ms).
              const due = pace.charge(units);
              if (due) {
                flush();
                await due;
              }
            }
            flush();
            pieces.push(Buffer.from(`],"usage":${JSON.stringify(result.usage)}}`));
            return pieces;
          },
          ctx.clientGone.signal,
        );
        // An answer of numbers is a copy of the vectors: their region goes back now, not once it is sent.
        if (!base64 && release) {
          release();
          release = undefined;
        }
        return { result, text, release };
      },
      ctx.clientGone.signal,
    );
    return answered.catch((e: unknown) => {
      release?.();
      throw e;
    });
  }

  /**
   * Token arrays for a deployment that takes text only (local engine, non-OpenAI types): the model's
   * tokenizer decodes them; ids that do not make whole UTF-8 characters are refused naming the deployment.
   */
  private decoded(
    ids: number[][],
    indexes: number[],
    info: ModelInfo,
    deployment: Deployment,
    nameOf: (i: number) => string,
    texts: Map<number, string>,
  ): string[] {
    return ids.map((one, k) => {
      const text = texts.get(indexes[k]) ?? this.tokenizer.decode(one, info.encoding);
      if (text === undefined || text === '') {
        throw new UnsupportedRequestError(
          `${nameOf(indexes[k])}: deployment ${deployment.name} (type ${deployment.type}) takes text only, and these token ids do not decode to whole UTF-8 text in ${info.encoding}; send the text instead`,
          nameOf(indexes[k]),
        );
      }
      // The engines refuse blank text (TextEmbeddingEngine.embed): ids of spaces alone are the caller's bad input.
      if (text.trim() === '') {
        throw new UnsupportedRequestError(
          `${nameOf(indexes[k])}: deployment ${deployment.name} (type ${deployment.type}) takes text only, and these token ids decode to whitespace only, which it cannot embed; send text with words`,
          nameOf(indexes[k]),
        );
      }
      return text;
    });
  }

  /**
   * Entries are scoped to the calling key: a shared entry would tell key B, by latency
   * and usage, whether another key had embedded the exact same text. Token-array inputs are keyed by
   * their ids under their own tag: `[1, 2]` and the text "1,2" never share an entry.
   */
  private cacheKey(keyId: string, info: ModelInfo, dimensions: number | undefined, input: EmbeddingInput): string {
    const hash = createHash('sha256')
      .update(typeof input === 'string' ? input : input.join(','))
      .digest('hex');
    return `ai:emb:${keyId}:${info.name}:${dimensions ?? 'native'}:${typeof input === 'string' ? '' : 'ids:'}${hash}`;
  }

  /**
   * Whether a request of `inputs` inputs is read from and written to the cache: only while the cache is on
   * and the batch is at most AI_EMBEDDINGS_CACHE_MAX_INPUTS. Repeats are queries and small batches; a bulk
   * ingestion batch is rarely sent twice, and reading and writing thousands of entries per call would take
   * the shared state's time from other keys' calls (bench/suites/noisy-neighbour.js).
   */
  private cacheTakes(inputs: number): boolean {
    return (
      this.config.AI_EMBEDDINGS_CACHE_TTL_MS > 0 &&
      this.config.AI_EMBEDDINGS_CACHE_MAX_BYTES_PER_KEY > 0 &&
      inputs <= this.config.AI_EMBEDDINGS_CACHE_MAX_INPUTS
    );
  }

  /** Every input's cached vector (none without `keys`), read in one round trip whatever the number of inputs. */
  private async cached(keys: string[] | null, count: number): Promise<(number[] | undefined)[]> {
    const none = () => Array.from({ length: count }, (): number[] | undefined => undefined);
    if (!keys) return none();
    try {
      const hits = await this.state.getMany(keys);
      return hits.map((hit) => (hit ? (JSON.parse(hit) as number[]) : undefined));
    } catch (e) {
      this.log.warn(`embeddings cache read failed: ${(e as Error).message}`);
      return none();
    }
  }

  /**
   * The new vectors in one write, counted against the key's AI_EMBEDDINGS_CACHE_MAX_BYTES_PER_KEY
   * (a counter living as long as the entries: see SharedState.setManyWithin); a batch that does
   * not fit is not cached. One statement per request keeps a large batch from taking the pool's
   * connections (libs/database/src/database.module.ts) from other keys' calls.
   */
  private async store(keyId: string, entries: Array<[key: string, vector: EmbeddingVector]>): Promise<void> {
    try {
      const rows = entries.map(([key, v]): [string, string] => [key, JSON.stringify(vectorNumbers(v))]);
      const stored = await this.state.setManyWithin(
        `ai:emb-bytes:${keyId}`,
        this.config.AI_EMBEDDINGS_CACHE_MAX_BYTES_PER_KEY,
        rows,
        this.config.AI_EMBEDDINGS_CACHE_TTL_MS,
      );
      if (!stored) this.log.debug(`embeddings cache of key ${keyId} full: ${rows.length} vectors not cached`);
    } catch (e) {
      this.log.warn(`embeddings cache write failed: ${(e as Error).message}`);
    }
  }
}
