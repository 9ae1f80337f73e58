// Stored responses of POST /v1/responses (`store`, OpenAI's default true): the response's input items
// and output items in PostgreSQL, readable only by the API key that created them until they expire.
// `item_reference` input items and `previous_response_id` resolve against them. Nothing is kept in
// process memory: any replica answers any reference.
import { Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { Clock, SharedState } from '@app/platform';
import { GatewayError, GatewayErrorCode } from '../errors';
import { GatewayConfig } from '../config/gateway.config';
import { invalid, MAX_INPUT_ITEMS } from './responses-request';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Output items stored per response (a larger answer is answered and not stored). */
export const MAX_STORED_OUTPUT_ITEMS = 256;
/** Longest id accepted in `item_reference.id` / `previous_response_id` (ours are 53 characters). */
const MAX_ID = 128;
/**
 * What a stored id can look like (ours: prefix, underscore, hex). Anything else (a NUL, which
 * PostgreSQL cannot take in text, or other odd characters) refers to nothing and never reaches SQL.
 */
const ID_SHAPE = /^[A-Za-z0-9_-]{1,128}$/;
/**
 * The output items of the live responses of the key (parameter `key`) that the item ids (parameter `ids`) point into, each response's
 * output unpacked once (`output -> position` per item would read the whole stored column again for every
 * referenced item: 256 ids into one 10 MB output took a second of database time).
 */
const outputElements = (ids: string, key: string) => `SELECT r.id AS response_id, (e.ord - 1)::int AS position, e.item
    FROM ai_responses r CROSS JOIN LATERAL jsonb_array_elements(r.output) WITH ORDINALITY AS e(item, ord)
   WHERE r.id IN (SELECT response_id FROM ai_response_items WHERE id = ANY(${ids}::varchar[])) AND r.key_id = ${key} AND r.expires_at > now()`;

/** Rows deleted per statement by the sweep (short transactions, no long lock). */
const SWEEP_BATCH = 1000;
const SWEEP_EVERY_MS = 5 * 60_000;

function refId(v: unknown, param: string): string {
  if (typeof v !== 'string' || v.length === 0 || v.length > MAX_ID)
    throw invalid(`${param} must be a string of 1 to ${MAX_ID} characters`, param, GatewayErrorCode.InvalidType);
  return v;
}

/** A well-formed id could be stored; any other one is answered like an unknown id (same 400, same field). */
const wellFormed = (id: string): boolean => ID_SHAPE.test(id);

/** What a request refers to: its previous response and the input positions of its item references. */
export interface StoredReferences {
  previousResponseId?: string;
  items: Array<{ index: number; id: string }>;
}

/** The references of a Responses body (validated: ids are bounded strings); empty when there are none. */
export function referencesOf(body: unknown): StoredReferences {
  const refs: StoredReferences = { items: [] };
  if (!isObj(body)) return refs;
  if (body.previous_response_id != null)
    refs.previousResponseId = refId(body.previous_response_id, 'previous_response_id');
  if (Array.isArray(body.input) && body.input.length <= MAX_INPUT_ITEMS) {
    body.input.forEach((item, index) => {
      if (isObj(item) && item.type === 'item_reference')
        refs.items.push({ index, id: refId(item.id, `input[${index}].id`) });
    });
  }
  return refs;
}

/** The input a request means once its references are resolved: previous items first (`prefix` of them). */
export interface ResolvedInput {
  input: unknown[];
  prefix: number;
}

/**
 * Replaces each item reference by the stored item and puts the previous response's input and output
 * before the caller's items. Pure: `previous` and `found` come from the store.
 */
export function expandInput(
  input: unknown,
  refs: StoredReferences,
  previous: { input: unknown[]; output: unknown[] } | undefined,
  found: Map<string, Obj>,
): ResolvedInput {
  const own: unknown[] =
    typeof input === 'string'
      ? input.length
        ? [{ role: 'user', content: input }]
        : []
      : Array.isArray(input)
        ? [...(input as unknown[])]
        : [];
  for (const { index, id } of refs.items) {
    const item = found.get(id);
    // Unknown, expired and another key's ids answer alike (no oracle for other keys' ids).
    if (!item) throw new GatewayError(GatewayErrorCode.InputItemNotFound, { id, param: `input[${index}]` });
    own[index] = item;
  }
  const prior = previous ? [...previous.input, ...previous.output] : [];
  if (prior.length + own.length > MAX_INPUT_ITEMS)
    throw invalid(
      `input has more than ${MAX_INPUT_ITEMS} items together with the items of previous_response_id`,
      'input',
    );
  return { input: [...prior, ...own], prefix: prior.length };
}

/** Rolls back a save that would take its key past AI_RESPONSES_STORE_MAX_BYTES_PER_KEY. */
class OverQuota extends Error {}

@Injectable()
export class ResponsesRepository implements OnModuleInit, OnApplicationShutdown {
  private readonly log = new Logger('ResponsesRepository');
  private timer?: NodeJS.Timeout;

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly config: GatewayConfig,
    private readonly state: SharedState,
    private readonly clock: Clock,
  ) {}

  /** Whether responses are stored at all (AI_RESPONSES_STORE_TTL_HOURS > 0). */
  get enabled(): boolean {
    return this.config.AI_RESPONSES_STORE_TTL_HOURS > 0;
  }

  /**
   * The caller's input with its references resolved against what `keyId` stored and has not expired;
   * undefined when the request refers to nothing (no query). Unknown, expired or another key's ids:
   * 400 naming the field.
   */
  async resolve(
    keyId: string,
    body: Obj,
    refs: StoredReferences = referencesOf(body),
  ): Promise<ResolvedInput | undefined> {
    if (!refs.previousResponseId && refs.items.length === 0) return undefined;
    const previousId =
      refs.previousResponseId !== undefined && wellFormed(refs.previousResponseId) ? refs.previousResponseId : null;
    if (refs.previousResponseId !== undefined && previousId === null)
      throw new GatewayError(GatewayErrorCode.PreviousResponseNotFound, { id: refs.previousResponseId });
    const odd = refs.items.find((r) => !wellFormed(r.id));
    if (odd) throw new GatewayError(GatewayErrorCode.InputItemNotFound, { id: odd.id, param: `input[${odd.index}]` });
    const ids = [...new Set(refs.items.map((r) => r.id))];
    // Sizes first, contents only when they fit: one request loads and parses at most
    // AI_RESPONSES_STORE_MAX_BYTES of stored JSON (an item referred to n times counts n times, as it is
    // translated, counted and forwarded n times), whatever a 100-byte body refers to.
    const sizes: Array<{ kind: 'r' | 'i'; id: string; bytes: string }> = await this.query(
      `SELECT 'r' AS kind, id, bytes::bigint AS bytes FROM ai_responses WHERE id = $1 AND key_id = $2 AND expires_at > now()
       UNION ALL
       SELECT 'i', i.id, octet_length(o.item::text)::bigint FROM ai_response_items i JOIN (${outputElements('$3', '$2')}) o USING (response_id, position)
        WHERE i.id = ANY($3::varchar[])`,
      [previousId, keyId, ids],
    );
    const itemBytes = new Map(sizes.filter((r) => r.kind === 'i').map((r) => [r.id, Number(r.bytes)]));
    const previousBytes = sizes.find((r) => r.kind === 'r')?.bytes;
    if (previousId !== null && previousBytes === undefined)
      throw new GatewayError(GatewayErrorCode.PreviousResponseNotFound, { id: previousId });
    let total = Number(previousBytes ?? 0);
    for (const { index, id } of refs.items) {
      const size = itemBytes.get(id);
      // Unknown, expired and another key's ids answer alike (no oracle for other keys' ids).
      if (size === undefined)
        throw new GatewayError(GatewayErrorCode.InputItemNotFound, { id, param: `input[${index}]` });
      total += size;
    }
    const limit = this.config.AI_RESPONSES_STORE_MAX_BYTES;
    if (total > limit)
      throw invalid(
        `input refers to ${total} bytes of stored items, more than one request may load (${limit}, AI_RESPONSES_STORE_MAX_BYTES)`,
        'input',
      );
    await this.countLoaded(keyId, total, previousId !== null ? 'previous_response_id' : 'input');

    let previous: { input: unknown[]; output: unknown[] } | undefined;
    if (previousId !== null) {
      const rows: Array<{ input: unknown[]; output: unknown[] }> = await this.query(
        `SELECT input, output FROM ai_responses WHERE id = $1 AND key_id = $2 AND expires_at > now()`,
        [previousId, keyId],
      );
      // Expired (or swept) between the two reads: the same answer as an unknown id.
      if (!rows.length) throw new GatewayError(GatewayErrorCode.PreviousResponseNotFound, { id: previousId });
      previous = rows[0];
    }
    const found = new Map<string, Obj>();
    if (ids.length) {
      const rows: Array<{ id: string; item: Obj | null }> = await this.query(
        `SELECT i.id, o.item FROM ai_response_items i JOIN (${outputElements('$1', '$2')}) o USING (response_id, position)
          WHERE i.id = ANY($1::varchar[])`,
        [ids, keyId],
      );
      for (const row of rows) if (isObj(row.item)) found.set(row.id, row.item);
    }
    return expandInput(body.input, refs, previous, found);
  }

  /**
   * Counts `bytes` of stored items about to be loaded against the key's AI_RESPONSES_LOAD_BYTES_PER_MINUTE, in a
   * counter of the current minute of the app's clock shared by every replica: 429 past it (the refused bytes
   * count too, so a caller ignoring Retry-After stays refused until the minute ends).
   */
  private async countLoaded(
    keyId: string,
    bytes: number,
    param: 'previous_response_id' | 'input' | null,
  ): Promise<void> {
    const max = this.config.AI_RESPONSES_LOAD_BYTES_PER_MINUTE;
    if (max === 0 || bytes === 0) return;
    const now = this.clock.now();
    const minute = Math.floor(now / 60_000);
    let used: number;
    try {
      ({ count: used } = await this.state.incr(`responses:loaded:${keyId}:${minute}`, 120_000, bytes));
    } catch (e) {
      this.log.error(`could not count stored bytes loaded: ${(e as Error).message}`);
      throw new GatewayError(GatewayErrorCode.StoreUnavailable);
    }
    if (used > max)
      throw new GatewayError(GatewayErrorCode.StoredBytesRateLimited, {
        max,
        used: used - bytes,
        requested: bytes,
        retryAfterSeconds: Math.max(1, Math.ceil(((minute + 1) * 60_000 - now) / 1000)),
        param,
      });
  }

  /**
   * A read of the stored response `id` of `keyId` (GET /v1/responses/{id}, its input items) counts its stored
   * size against AI_RESPONSES_LOAD_BYTES_PER_MINUTE before anything of it is loaded, as a reference to it does:
   * each such read unpacks the stored columns in the database and parses them here (16 MiB at most a response).
   * False when there is no such live response.
   */
  private async countStored(keyId: string, id: string): Promise<boolean> {
    const rows: Array<{ bytes: number }> = await this.query(
      `SELECT bytes FROM ai_responses WHERE id = $1 AND key_id = $2 AND expires_at > now()`,
      [id, keyId],
    );
    if (!rows.length) return false;
    await this.countLoaded(keyId, Number(rows[0].bytes), null);
    return true;
  }

  /** A read for resolve: a database failure is logged and answered 503 (never the driver's message as a 500). */
  private async query<T>(sql: string, params: unknown[]): Promise<T[]> {
    try {
      return await this.db.query<T[]>(sql, params);
    } catch (e) {
      this.log.error(`could not read stored responses: ${(e as Error).message}`);
      throw new GatewayError(GatewayErrorCode.StoreUnavailable);
    }
  }

  /**
   * Stores a finished response for `keyId` (one transaction). Never throws: a response too large to
   * store, one past the key's AI_RESPONSES_STORE_MAX_BYTES_PER_KEY, or a database failure, is logged
   * and answered `false` (the answer then says store: false, and a later reference to it is a 400 like
   * any unknown id).
   */
  async save(keyId: string, response: Obj, input: unknown[]): Promise<boolean> {
    const output = Array.isArray(response.output) ? (response.output as Obj[]) : [];
    if (output.length > MAX_STORED_OUTPUT_ITEMS) {
      this.log.warn(
        `response ${String(response.id)} not stored: ${output.length} output items (at most ${MAX_STORED_OUTPUT_ITEMS})`,
      );
      return false;
    }
    const inputJson = JSON.stringify(input);
    const outputJson = JSON.stringify(output);
    // The Response object as answered, for GET /v1/responses/{id}; its output is the `output` column.
    const responseJson = JSON.stringify({ ...response, output: undefined });
    const bytes = Buffer.byteLength(inputJson) + Buffer.byteLength(outputJson) + Buffer.byteLength(responseJson);
    if (bytes > this.config.AI_RESPONSES_STORE_MAX_BYTES) {
      this.log.warn(
        `response ${String(response.id)} not stored: ${bytes} bytes (AI_RESPONSES_STORE_MAX_BYTES ${this.config.AI_RESPONSES_STORE_MAX_BYTES})`,
      );
      return false;
    }
    const ids = output.map((o) => o.id);
    if (!ids.every((id) => typeof id === 'string')) return false;
    const quota = this.config.AI_RESPONSES_STORE_MAX_BYTES_PER_KEY;
    try {
      // One transaction: the response first, then the key's total, raised only while it stays within the
      // quota (else rolled back). The total's row lock (concurrent saves of one key cannot both pass) is
      // taken last, so it is held for the commit only, not while megabytes of JSON are written. A key
      // already too full for this response is refused by the insert itself, before anything is written.
      return await this.db.transaction(async (m) => {
        const [{ written }]: Array<{ written: number }> = await m.query(
          `WITH r AS (
             INSERT INTO ai_responses (id, key_id, input, output, bytes, expires_at, response, input_count)
             SELECT $1::varchar, $2::uuid, $3::jsonb, $4::jsonb, $5::int, now() + $6::int * interval '1 hour', $9::jsonb, $10::int
              WHERE NOT EXISTS (SELECT 1 FROM ai_response_store_usage WHERE key_id = $2::uuid AND bytes + $5::int > $8::bigint)
             RETURNING id),
           i AS (
             INSERT INTO ai_response_items (id, response_id, position)
             SELECT x.id, r.id, x.ord - 1 FROM r, unnest($7::varchar[]) WITH ORDINALITY AS x(id, ord))
           SELECT count(*)::int AS written FROM r`,
          [
            response.id,
            keyId,
            inputJson,
            outputJson,
            bytes,
            this.config.AI_RESPONSES_STORE_TTL_HOURS,
            ids,
            quota,
            responseJson,
            input.length,
          ],
        );
        if (written === 0) throw new OverQuota();
        const counted: unknown[] = await m.query(
          `INSERT INTO ai_response_store_usage AS u (key_id, bytes) SELECT $1::uuid, $2::int WHERE $2::int <= $3::bigint
           ON CONFLICT (key_id) DO UPDATE SET bytes = u.bytes + EXCLUDED.bytes WHERE u.bytes + EXCLUDED.bytes <= $3::bigint
           RETURNING 1`,
          [keyId, bytes, quota],
        );
        if (counted.length === 0) throw new OverQuota();
        return true;
      });
    } catch (e) {
      if (e instanceof OverQuota)
        this.log.warn(
          `response ${String(response.id)} not stored: its key keeps AI_RESPONSES_STORE_MAX_BYTES_PER_KEY (${quota}) bytes stored already`,
        );
      else this.log.error(`response ${String(response.id)} not stored: ${(e as Error).message}`);
      return false;
    }
  }

  /**
   * The Response object `keyId` stored under `id` and that has not expired, as it was answered; undefined
   * when there is none (unknown, expired, another key's, or stored before the object was kept: alike).
   */
  async retrieve(keyId: string, id: string): Promise<Obj | undefined> {
    if (!wellFormed(id)) return undefined;
    if (!(await this.countStored(keyId, id))) return undefined;
    const rows: Array<{ response: Obj | null; output: unknown[] }> = await this.query(
      `SELECT response, output FROM ai_responses WHERE id = $1 AND key_id = $2 AND expires_at > now()`,
      [id, keyId],
    );
    const row = rows[0];
    if (!row || !isObj(row.response)) return undefined;
    return { ...row.response, output: row.output };
  }

  /** How many input items the live response `id` of `keyId` has; undefined when there is no such response. */
  async inputCount(keyId: string, id: string): Promise<number | undefined> {
    if (!wellFormed(id)) return undefined;
    const rows: Array<{ n: number }> = await this.query(
      `SELECT coalesce(input_count, jsonb_array_length(input)) AS n FROM ai_responses WHERE id = $1 AND key_id = $2 AND expires_at > now()`,
      [id, keyId],
    );
    return rows[0]?.n;
  }

  /**
   * The input items at `positions` (in that order) of the live response `id` of `keyId`: only those
   * elements leave the database, whatever the size of the whole input. Undefined when the response is
   * gone (expired or deleted since it was counted).
   */
  async inputItems(
    keyId: string,
    id: string,
    positions: number[],
  ): Promise<Array<{ position: number; item: unknown }> | undefined> {
    if (!(await this.countStored(keyId, id))) return undefined;
    const rows: Array<{ position: number; item: unknown }> = await this.query(
      // The input is unpacked once (jsonb_array_elements), not once per position (`input -> position`
      // reads the whole stored column again for each row).
      `SELECT p.position, e.item
         FROM ai_responses r CROSS JOIN LATERAL jsonb_array_elements(r.input) WITH ORDINALITY AS e(item, ord)
         JOIN unnest($3::int[]) WITH ORDINALITY AS p(position, ord) ON p.position = e.ord - 1
        WHERE r.id = $1 AND r.key_id = $2 AND r.expires_at > now()
        ORDER BY p.ord`,
      [id, keyId, positions],
    );
    if (rows.length === 0 && positions.length > 0) return undefined;
    return rows;
  }

  /**
   * Deletes the live response `id` of `keyId` (its items go with it) and frees its bytes from the key's
   * stored total, in one transaction (rows first, then the total, in the order saves and the sweep take
   * them). False when there was none to delete. A database failure is 503.
   */
  async delete(keyId: string, id: string): Promise<boolean> {
    if (!wellFormed(id)) return false;
    try {
      return await this.db.transaction(async (m) => {
        // TypeORM answers a DELETE ... RETURNING as [rows, rowCount].
        const [rows]: [Array<{ bytes: number }>, number] = await m.query(
          `DELETE FROM ai_responses WHERE id = $1 AND key_id = $2 AND expires_at > now() RETURNING bytes`,
          [id, keyId],
        );
        if (rows.length === 0) return false;
        // greatest: a total that drifted below its rows (rolling deploy, see sweep) never goes negative.
        await m.query(`UPDATE ai_response_store_usage SET bytes = greatest(bytes - $2::bigint, 0) WHERE key_id = $1`, [
          keyId,
          rows[0].bytes,
        ]);
        return true;
      });
    } catch (e) {
      this.log.error(`could not delete stored response ${id}: ${(e as Error).message}`);
      throw new GatewayError(GatewayErrorCode.StoreUnavailable);
    }
  }

  /**
   * Deletes expired responses (their items go with them) in short batches, and sets each touched key's
   * stored total to the sum of its rows: a total that drifted (rows written or deleted by a replica
   * older than the quota, during a rolling deploy) is right again after the key's next expiry. Any
   * replica may run it; one batch at a time (a transaction-scoped advisory lock; a sweep that finds
   * another running waits for it, so when it returns every response expired before the call is gone).
   * The keys' totals are locked in key order before they are summed: a save raising a total waits, and
   * one that raised it before is committed and counted.
   */
  async sweep(): Promise<number> {
    let total = 0;
    try {
      for (;;) {
        const deleted = await this.db.transaction(async (m) => {
          await m.query(`SELECT pg_advisory_xact_lock(hashtext('ai_responses_sweep'))`);
          // TypeORM answers a DELETE ... RETURNING as [rows, rowCount].
          const [rows]: [Array<{ key_id: string }>, number] = await m.query(
            `DELETE FROM ai_responses WHERE id IN (SELECT id FROM ai_responses WHERE expires_at <= now() LIMIT ${SWEEP_BATCH} FOR UPDATE SKIP LOCKED) RETURNING key_id`,
          );
          const keys = [...new Set(rows.map((r) => r.key_id))];
          if (keys.length) {
            // A key whose rows were all written by replicas older than the quota has no total yet: made here.
            await m.query(
              `INSERT INTO ai_response_store_usage (key_id, bytes) SELECT k, 0 FROM unnest($1::uuid[]) AS k ORDER BY k ON CONFLICT (key_id) DO NOTHING`,
              [keys],
            );
            await m.query(
              `SELECT 1 FROM ai_response_store_usage WHERE key_id = ANY($1::uuid[]) ORDER BY key_id FOR UPDATE`,
              [keys],
            );
            await m.query(
              `UPDATE ai_response_store_usage u SET bytes = coalesce((SELECT sum(r.bytes) FROM ai_responses r WHERE r.key_id = u.key_id), 0) WHERE u.key_id = ANY($1::uuid[])`,
              [keys],
            );
          }
          return rows.length;
        });
        total += deleted;
        if (deleted < SWEEP_BATCH) return total;
      }
    } catch (e) {
      this.log.error(`could not delete expired stored responses: ${(e as Error).message}`);
      return total;
    }
  }

  onModuleInit(): void {
    this.timer = setInterval(() => void this.sweep(), SWEEP_EVERY_MS);
    this.timer.unref();
  }

  onApplicationShutdown(): void {
    if (this.timer) clearInterval(this.timer);
  }
}
