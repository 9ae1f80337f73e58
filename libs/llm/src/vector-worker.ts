import { endianness } from 'os';
import { Worker } from 'worker_threads';
import { Base64Vector, EmbeddingVector } from './embedding-vector';
import { CallAbortedError, EmbeddingsResponse, UpstreamError } from './types';

/**
 * Bulk embeddings exchanges run on a worker thread of this process (VectorWorker): the upstream's answer (17 MB
 * for 2048 vectors of 1536 dimensions in base64) is received, parsed and checked there, and its vectors are
 * written into one region of a buffer shared with the main thread (the slab), which the answer to the caller is
 * then written from. The main thread handles none of the answer's bytes: on it, an answer arrived as ~270 socket
 * reads, each a new buffer V8 counts as memory outside its heap, and past ~64 MB of those since the last
 * collection V8 runs a full one, pausing every call of the replica (docs/operations/performance.md, "What
 * stalls key B under embeddings-large"). The slab is allocated once; a view of it is no new memory.
 */

/** How the caller wants its vectors: the slab holds base64 text (written as it is) or float32 bytes. */
export type VectorsAs = 'base64' | 'float';

/** One exchange: a POST of `body` (JSON text) to `url`, its answer an OpenAI embeddings list. */
export interface VectorExchange {
  url: string;
  headers: Record<string, string>;
  body: string;
  /** The whole exchange, sent to body received, is cut past this with a `timeout` UpstreamError. */
  timeoutMs: number;
  /** Connections the worker keeps to the origin at most (the deployment's `connections`), per `pool`. */
  connections: number;
  /** The deployment's client (one UpstreamHttp): each has connections of its own, as its undici pool has. */
  pool: number;
  as: VectorsAs;
}

/** The slab's size: three 2048 x 1536-dimension answers in base64 at once; past it an answer gets a buffer of its own. */
export const SLAB_BYTES = 64 * 2 ** 20;
/** An upstream answer larger than this fails the call (`protocol`): 2048 vectors of 3072 floats as JSON numbers fit. */
export const MAX_ANSWER_BYTES = 256 * 2 ** 20;

/** The worker thread's nice value (Linux): 10 steps below the main thread, a tenth of its share of a busy core. */
const WORKER_NICE = 10;

/** Whether vectors can be handed over as float32 views (the slab holds little-endian float32s, as base64 does). */
export const VECTORS_OFF_THREAD = endianness() === 'LE';

interface Reply {
  id: number;
  ok: boolean;
  // failure
  kind?: 'http' | 'timeout' | 'network' | 'protocol' | 'aborted';
  message?: string;
  status?: number;
  text?: string;
  retryAfter?: string;
  // success
  object?: unknown;
  model?: unknown;
  usage?: EmbeddingsResponse['usage'];
  indexes?: unknown[];
  /** Per entry: [kind (0 in the slab, 1 given as it came in `others`), offset (or index in `others`), bytes, floats]. */
  meta?: Int32Array;
  others?: unknown[];
  at?: number;
  size?: number;
  /** An answer that did not fit the slab: a buffer of its own (nothing to give back). */
  own?: SharedArrayBuffer;
}

interface Pending {
  resolve: (r: Reply) => void;
  reject: (e: Error) => void;
  arrived?: () => void;
  /** The upstream began a 2xx answer: the caller leaving no longer stops the call. */
  answering: () => void;
}

/** The answer's error as the HTTP client would give it (UpstreamHttp.callJson), from the worker's reply. */
export type ErrorOf = (reply: {
  kind: string;
  message: string;
  status: number;
  text: string;
  retryAfter?: string;
}) => Error;

/** The process's worker for bulk embeddings exchanges: started on the first, kept for the process's life. */
export class VectorWorker {
  private worker: Worker | null = null;
  private slab: SharedArrayBuffer | null = null;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();

  /** Exchanges whose upstream began a 2xx answer, not yet answered here. */
  private readonly answering = new Set<number>();
  /** Bytes of the slab handed out in answers and not given back (release). */
  private held = 0;
  /** Exchanges answered with vectors (read by tests: which calls ran here). */
  private answered = 0;
  /** Of them, answers in a buffer of their own (the slab was full). */
  private outside = 0;

  constructor(
    private readonly slabBytes = SLAB_BYTES,
    private readonly maxAnswerBytes = MAX_ANSWER_BYTES,
  ) {}

  /** Exchanges sent and not answered. */
  get pendingCalls(): number {
    return this.pending.size;
  }

  /** Exchanges whose upstream began a 2xx answer, being received or parsed (read by tests). */
  get answeringCalls(): number {
    return this.answering.size;
  }

  /** Bytes of the slab held by answers not released yet. */
  get heldBytes(): number {
    return this.held;
  }

  /** Exchanges answered with vectors since the process started. */
  get exchanges(): number {
    return this.answered;
  }

  /** Answers that did not fit the slab (a buffer of their own each) since the process started. */
  get ownBuffers(): number {
    return this.outside;
  }

  /**
   * The exchange's vectors, each a view of the slab (Base64Vector for `as: 'base64'`, Float32Array for 'float'),
   * and `release`, which gives their region back: call it once nothing reads them any more (the answer written).
   * A 2xx answer is the call's once it began (the caller leaving no longer stops it: the provider bills it); before,
   * `signal` stops it with CallAbortedError.
   */
  async embeddings(
    exchange: VectorExchange,
    signal: AbortSignal | undefined,
    errorOf: ErrorOf,
    arrived?: () => void,
  ): Promise<EmbeddingsResponse & { release: () => void }> {
    if (signal?.aborted) throw new CallAbortedError();
    const worker = this.ensureWorker();
    const slab = this.slab!;
    const id = this.nextId++;
    let bodyIn = false;
    const reply = await new Promise<Reply>((resolve, reject) => {
      const onAbort = () => worker.postMessage({ cancel: id });
      signal?.addEventListener('abort', onAbort, { once: true });
      // The worker's own deadline ends when the body is in; its parsing (on a thread below the others' priority)
      // is bounded here: past twice the deadline more, the call fails and its answer is dropped when it comes.
      const backstop = setTimeout(() => {
        if (!this.pending.delete(id)) return;
        if (this.pending.size === 0) worker.unref();
        worker.postMessage({ cancel: id, force: true });
        done();
        // Once the body was in, the upstream answered in time: this replica's worker is slow, not the deployment
        // (`busy`: no cooldown).
        reject(
          new UpstreamError(
            `embeddings worker did not answer within ${3 * exchange.timeoutMs} ms`,
            bodyIn ? 'busy' : 'timeout',
            0,
          ),
        );
      }, 3 * exchange.timeoutMs);
      const done = () => {
        clearTimeout(backstop);
        this.answering.delete(id);
        signal?.removeEventListener('abort', onAbort);
      };
      this.pending.set(id, {
        resolve: (r) => {
          done();
          resolve(r);
        },
        reject: (e) => {
          done();
          reject(e);
        },
        arrived: () => {
          bodyIn = true;
          arrived?.();
        },
        answering: () => {
          this.answering.add(id);
          signal?.removeEventListener('abort', onAbort);
        },
      });
      worker.ref();
      worker.postMessage({ id, ...exchange, maxBytes: this.maxAnswerBytes });
    });
    if (!reply.ok) {
      if (reply.kind === 'aborted') throw new CallAbortedError();
      throw errorOf({
        kind: reply.kind ?? 'network',
        message: reply.message ?? 'vector worker failed',
        status: reply.status ?? 0,
        text: reply.text ?? '',
        retryAfter: reply.retryAfter,
      });
    }
    const buffer = reply.own ?? slab;
    this.answered++;
    if (reply.own) this.outside++;
    const size = reply.size ?? 0;
    this.held += size;
    const from = this.worker;
    let given = size === 0;
    const release = () => {
      if (given) return;
      given = true;
      this.held -= size;
      // A worker started since (the last one failed) has a slab of its own: the region is nobody's now.
      if (this.worker === from) from?.postMessage({ free: [reply.at, size] });
    };
    const meta = reply.meta!;
    const indexes = reply.indexes!;
    const data: EmbeddingsResponse['data'] = [];
    for (let i = 0; i < indexes.length; i++) {
      const kind = meta[i * 4];
      const at = meta[i * 4 + 1];
      let embedding: EmbeddingVector;
      if (kind === 1) embedding = reply.others![at] as EmbeddingVector;
      else if (exchange.as === 'base64')
        embedding = Base64Vector.checked(Buffer.from(buffer, at, meta[i * 4 + 2]), meta[i * 4 + 3]);
      else embedding = new Float32Array(buffer, at, meta[i * 4 + 3]);
      data.push({ index: indexes[i] as number, object: 'embedding', embedding });
    }
    return {
      object: reply.object as 'list',
      model: reply.model as string,
      data,
      usage: reply.usage!,
      release,
    };
  }

  /** Stops the worker (tests); pending exchanges fail, the next one starts a fresh worker and slab. */
  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = null;
    if (worker) await worker.terminate();
  }

  private ensureWorker(): Worker {
    if (this.worker) return this.worker;
    const slab = new SharedArrayBuffer(this.slabBytes);
    const worker = new Worker(WORKER_BODY, {
      eval: true,
      // Its heap takes the process's V8 flags: --max-semi-space-size=64 (scripts/node-flags.js) gives it a young
      // generation of up to 128 MB as the main thread's (a worker's resourceLimits do not override a flag).
      workerData: { slab, nice: WORKER_NICE },
    });
    worker.unref();
    worker.on('message', (reply: Reply & { arrived?: boolean; answering?: boolean }) => {
      const p = this.pending.get(reply.id);
      if (!p) {
        // An answer that came after its call failed (the backstop): its region is nobody's.
        if (reply.ok && reply.size && this.worker === worker) worker.postMessage({ free: [reply.at, reply.size] });
        return;
      }
      if (reply.arrived) return p.arrived?.();
      if (reply.answering) return p.answering();
      this.pending.delete(reply.id);
      if (this.pending.size === 0) worker.unref();
      p.resolve(reply);
    });
    // The worker failing is not the deployment's fault: `busy` (no cooldown, as a wait for a connection that ran out).
    const gone = (reason: string) => {
      if (this.worker === worker) this.worker = null;
      // Its thread, buffer and sockets end with it (after an unreadable message it may still run).
      void worker.terminate();
      for (const [id, p] of this.pending) {
        this.pending.delete(id);
        p.reject(new UpstreamError(`embeddings worker ${reason}`, 'busy', 0));
      }
    };
    worker.on('error', (e) => gone(`failed: ${e.message}`));
    worker.on('messageerror', (e) => gone(`sent an unreadable message: ${e.message}`));
    worker.on('exit', () => gone('exited'));
    this.worker = worker;
    this.slab = slab;
    return worker;
  }
}

let shared: VectorWorker | undefined;
/** The process's VectorWorker. */
export function vectorWorker(): VectorWorker {
  return (shared ??= new VectorWorker());
}

/**
 * The worker: one HTTP exchange per message (keep-alive agents per origin), the answer parsed with one JSON.parse
 * (on this thread, apart from the replica's calls), each vector checked as the main thread's parser checks it
 * (base64 of whole float32 values; vectorOf in openai-client.ts) and written into the slab; the slab's free
 * regions kept here (first fit, neighbours joined), given back by `free` messages.
 */
const WORKER_BODY = `
'use strict';
const { parentPort, workerData } = require('worker_threads');
const http = require('http');
const https = require('https');
const slab = Buffer.from(workerData.slab);
// This thread's work is bulk: below the replica's calls on the main thread when both want a core (os.setPriority
// without a pid sets the calling thread's nice value on Linux; elsewhere it may be the process's: not done there).
if (process.platform === 'linux') {
  try {
    require('os').setPriority(workerData.nice);
  } catch {
    // not permitted: the default priority
  }
}
let free = [{ at: 0, size: slab.length }];
const agents = new Map();
const calls = new Map();
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

function alloc(size) {
  for (let i = 0; i < free.length; i++) {
    const f = free[i];
    if (f.size < size) continue;
    const at = f.at;
    f.at += size;
    f.size -= size;
    if (f.size === 0) free.splice(i, 1);
    return at;
  }
  return -1;
}

function giveBack(at, size) {
  let i = 0;
  while (i < free.length && free[i].at < at) i++;
  free.splice(i, 0, { at, size });
  if (i + 1 < free.length && at + size === free[i + 1].at) {
    free[i].size += free[i + 1].size;
    free.splice(i + 1, 1);
  }
  if (i > 0 && free[i - 1].at + free[i - 1].size === at) {
    free[i - 1].size += free[i].size;
    free.splice(i, 1);
  }
}

// Each deployment's client (pool) its own connections, at most its \`connections\`, closed after 30 s idle (as undici's).
function agentFor(url, m) {
  const key = m.pool + ' ' + url.origin;
  let agent = agents.get(key);
  if (!agent) {
    agent = new (url.protocol === 'https:' ? https : http).Agent({ keepAlive: true, maxSockets: m.connections, timeout: 30000 });
    agents.set(key, agent);
  }
  return agent;
}

/** The decoded byte length of base64 text of length n whose last two characters are c1, c2 (-1: no base64 has n). */
function shapeBytes(n, c2, c1) {
  if (n === 0 || n % 4 !== 0) return -1;
  return (n / 4) * 3 - (c1 === 61 ? (c2 === 61 ? 2 : 1) : 0);
}

const NOT_BASE64 = 'upstream sent an embedding that is not base64';
const PARTIAL = 'upstream sent a base64 embedding that is not whole float32 values';

/** Each byte's value in base64's alphabet plus one (0: not in it); PAIRS: 1 where both bytes of a 16-bit value are. */
const VALUE = new Uint8Array(256);
[...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'].forEach((c, i) => (VALUE[c.charCodeAt(0)] = i + 1));
const PAIRS = new Uint8Array(65536);
for (let a = 0; a < 256; a++) for (let b = 0; b < 256; b++) PAIRS[a | (b << 8)] = VALUE[a] && VALUE[b] ? 1 : 0;

/** Whether bytes [from, to) of buf are all in the alphabet: four at a time where aligned (embedding-vector.ts's check). */
function inAlphabet(buf, from, to) {
  let i = from;
  while (i < to && ((buf.byteOffset + i) & 3) !== 0) if (VALUE[buf[i++]] === 0) return false;
  const words = (to - i) >>> 2;
  if (words > 0) {
    const w = new Uint32Array(buf.buffer, buf.byteOffset + i, words);
    for (let k = 0; k < words; k++) if ((PAIRS[w[k] & 0xffff] & PAIRS[w[k] >>> 16]) === 0) return false;
    i += words * 4;
  }
  while (i < to) if (VALUE[buf[i++]] === 0) return false;
  return true;
}

/** An embedding's base64 kept as bytes [from, to) of the answer's body: never made a string. */
class Span {
  constructor(from, to) {
    this.from = from;
    this.to = to;
    this.used = false;
  }
}

/** Thrown by parseBody for what it leaves to JSON.parse (numbers for vectors, deep nesting). */
const FALLBACK = new Error('JSON.parse');

/**
 * The answer's body (a Buffer) parsed as JSON.parse parses its text, except that the \`embedding\` of an entry of
 * \`data\` that is a string of 64 bytes or more without escapes is a Span of the body: 17 MB of base64 is neither
 * decoded to one text nor copied into 2048 strings (three quarters of this thread's time, and most of its garbage,
 * with JSON.parse). A string is found by indexOf (memchr), not a byte at a time. Throws SyntaxError where JSON.parse
 * would, FALLBACK for a vector of numbers or nesting past 64 levels (JSON.parse then reads the text).
 */
function parseBody(buf, spans) {
  const n = buf.length;
  let i = 0;
  // The next backslash at or after the string being read (-1: none left): one search for the whole body.
  let nextSlash = -2;
  const bad = () => {
    throw new SyntaxError('not JSON');
  };
  const digit = (c) => c >= 0x30 && c <= 0x39;
  const ws = () => {
    for (let c = buf[i]; c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09; c = buf[++i]);
  };
  const digits = () => {
    if (!digit(buf[i])) bad();
    while (digit(buf[i])) i++;
  };
  function value(depth, role, span) {
    if (depth > 64) throw FALLBACK;
    ws();
    const c = buf[i];
    if (c === 0x22) return string(span);
    if (span && c === 0x5b) throw FALLBACK;
    if (c === 0x7b) return object(depth, role);
    if (c === 0x5b) return array(depth, role);
    if (c === 0x74) return word('true', true);
    if (c === 0x66) return word('false', false);
    if (c === 0x6e) return word('null', null);
    if (c === 0x2d || digit(c)) return number();
    return bad();
  }
  function word(w, v) {
    if (buf.toString('latin1', i, i + w.length) !== w) bad();
    i += w.length;
    return v;
  }
  function number() {
    const from = i;
    if (buf[i] === 0x2d) i++;
    if (buf[i] === 0x30) i++;
    else digits();
    if (buf[i] === 0x2e) {
      i++;
      digits();
    }
    if (buf[i] === 0x65 || buf[i] === 0x45) {
      i++;
      if (buf[i] === 0x2b || buf[i] === 0x2d) i++;
      digits();
    }
    return Number(buf.toString('latin1', from, i));
  }
  function string(span) {
    const from = i + 1;
    const end = buf.indexOf(0x22, from);
    if (end < 0) bad();
    if (nextSlash !== -1 && nextSlash < from) nextSlash = buf.indexOf(0x5c, from);
    if (nextSlash !== -1 && nextSlash < end) {
      // Escapes: its end is the first quote not escaped, and JSON.parse reads it (its rules exactly).
      let j = nextSlash;
      while (j < n && buf[j] !== 0x22) j += buf[j] === 0x5c ? 2 : 1;
      if (j >= n) bad();
      const text = JSON.parse(buf.toString('utf8', i, j + 1));
      i = j + 1;
      return text;
    }
    i = end + 1;
    // A control character in a Span fails the alphabet's check (answer).
    if (span && end - from >= 64) {
      const kept = new Span(from, end);
      spans.push(kept);
      return kept;
    }
    for (let j = from; j < end; j++) if (buf[j] < 0x20) bad();
    return buf.toString('utf8', from, end);
  }
  // role: 1 the top object's \`data\` array, 2 an entry of it.
  function object(depth, role) {
    i++;
    const o = {};
    ws();
    if (buf[i] === 0x7d) {
      i++;
      return o;
    }
    for (;;) {
      ws();
      if (buf[i] !== 0x22) bad();
      const key = string(false);
      ws();
      if (buf[i] !== 0x3a) bad();
      i++;
      const v = value(depth + 1, depth === 0 && key === 'data' ? 1 : 0, role === 2 && key === 'embedding');
      if (key === '__proto__') Object.defineProperty(o, key, { value: v, writable: true, enumerable: true, configurable: true });
      else o[key] = v;
      ws();
      if (buf[i] === 0x2c) i++;
      else if (buf[i] === 0x7d) {
        i++;
        return o;
      } else bad();
    }
  }
  function array(depth, role) {
    i++;
    const a = [];
    ws();
    if (buf[i] === 0x5d) {
      i++;
      return a;
    }
    for (;;) {
      a.push(value(depth + 1, role === 1 ? 2 : 0, false));
      ws();
      if (buf[i] === 0x2c) i++;
      else if (buf[i] === 0x5d) {
        i++;
        return a;
      } else bad();
    }
  }
  const body = value(0, 0, false);
  ws();
  if (i < n) bad();
  return body;
}

function answer(m, status, buf, done) {
  let body;
  const spans = [];
  try {
    body = parseBody(buf, spans);
  } catch (e) {
    try {
      if (e !== FALLBACK) throw e;
      body = JSON.parse(buf.toString('utf8'));
    } catch {
      return done({ kind: 'protocol', message: 'upstream sent a body that is not JSON', status });
    }
  }
  if (!body || !Array.isArray(body.data))
    return done({ kind: 'protocol', message: 'upstream embeddings response has no data', status });
  const n = body.data.length;
  const meta = new Int32Array(n * 4);
  const indexes = new Array(n);
  const others = [];
  let total = 0;
  // Sizes first (from each text's length), so that the answer takes one region of the slab.
  for (let i = 0; i < n; i++) {
    const d = body.data[i];
    indexes[i] = d == null ? undefined : d.index;
    const v = d == null ? undefined : d.embedding;
    const isSpan = v instanceof Span;
    if (isSpan) v.used = true;
    // Numbers to a base64 ask (an upstream that ignores encoding_format): for a base64 answer, float32s as the main
    // thread would encode them (vectorBase64); for a numbers answer they go as they came (their decimals kept).
    if (m.as === 'base64' && Array.isArray(v) && v.length > 0 && v.every((x) => typeof x === 'number')) {
      const size = Math.ceil((v.length * 4) / 3) * 4;
      meta[i * 4] = 2;
      meta[i * 4 + 1] = total;
      meta[i * 4 + 2] = size;
      meta[i * 4 + 3] = v.length;
      total += (size + 7) & ~7;
      continue;
    }
    if (!isSpan && typeof v !== 'string') {
      meta[i * 4] = 1;
      meta[i * 4 + 1] = others.length;
      others.push(v);
      continue;
    }
    const length = isSpan ? v.to - v.from : v.length;
    const bytes = isSpan
      ? shapeBytes(length, buf[v.to - 2], buf[v.to - 1])
      : shapeBytes(length, v.charCodeAt(length - 2), v.charCodeAt(length - 1));
    if (bytes < 0) return done({ kind: 'protocol', status, message: NOT_BASE64 });
    if (bytes % 4 !== 0 || bytes === 0) {
      const pad = (length / 4) * 3 - bytes;
      const ok = isSpan ? inAlphabet(buf, v.from, v.to - pad) : BASE64.test(v);
      return done({ kind: 'protocol', status, message: ok ? PARTIAL : NOT_BASE64 });
    }
    const size = m.as === 'base64' ? length : bytes;
    meta[i * 4 + 1] = total;
    meta[i * 4 + 2] = size;
    meta[i * 4 + 3] = bytes / 4;
    total += (size + 7) & ~7;
  }
  // A span the answer does not use (its member given twice, the last one kept) is still checked as JSON.parse
  // checks a string: no control characters.
  for (const span of spans) {
    if (span.used) continue;
    for (let j = span.from; j < span.to; j++)
      if (buf[j] < 0x20) return done({ kind: 'protocol', message: 'upstream sent a body that is not JSON', status });
  }
  let at = total > 0 ? alloc(total) : 0;
  let own;
  let target = slab;
  if (at < 0) {
    own = new SharedArrayBuffer(total);
    target = Buffer.from(own);
    at = 0;
  }
  const refuse = () => {
    if (!own && total > 0) giveBack(at, total);
    done({ kind: 'protocol', status, message: NOT_BASE64 });
  };
  for (let i = 0; i < n; i++) {
    if (meta[i * 4] === 1) continue;
    const v = body.data[i].embedding;
    const to = (meta[i * 4 + 1] += at);
    if (meta[i * 4] === 2) {
      const f = Float32Array.from(v);
      target.write(Buffer.from(f.buffer, 0, f.byteLength).toString('base64'), to, 'latin1');
      meta[i * 4] = 0;
      continue;
    }
    if (v instanceof Span) {
      // Checked on its bytes: the alphabet up to its padding, then the padded group's unused bits (zero as every
      // encoder writes them; else it is decoded and answered in its canonical form, the same floats).
      const pad = buf[v.to - 1] === 61 ? (buf[v.to - 2] === 61 ? 2 : 1) : 0;
      if (!inAlphabet(buf, v.from, v.to - pad)) return refuse();
      const last = VALUE[buf[v.to - 1 - pad]] - 1;
      const canonical = pad === 0 || (last & (pad === 2 ? 0x0f : 0x03)) === 0;
      if (m.as === 'base64' && canonical) buf.copy(target, to, v.from, v.to);
      else {
        const decoded = Buffer.from(buf.toString('latin1', v.from, v.to), 'base64');
        if (m.as === 'base64') target.write(decoded.toString('base64'), to, 'latin1');
        else decoded.copy(target, to);
      }
      continue;
    }
    // A short text: decoded and encoded again; it is base64 as every encoder writes it when the two are the same,
    // else it is matched against the alphabet, and base64 with unused bits set is answered in its canonical form.
    const decoded = Buffer.from(v, 'base64');
    const canonical = decoded.toString('base64');
    if (canonical !== v && !BASE64.test(v)) return refuse();
    if (m.as === 'base64') target.write(canonical, to, 'latin1');
    else decoded.copy(target, to);
  }
  done(
    null,
    { object: body.object, model: body.model, usage: body.usage, indexes, meta, others, at, size: own ? 0 : total, own },
    [meta.buffer],
  );
}

function start(m) {
  const call = { answering: false };
  const done = (failure, result, transfer) => {
    if (!calls.delete(m.id)) return;
    clearTimeout(call.timer);
    parentPort.postMessage(failure ? { id: m.id, ok: false, ...failure } : { id: m.id, ok: true, ...result }, transfer);
  };
  call.done = done;
  calls.set(m.id, call);
  let url;
  try {
    url = new URL(m.url);
  } catch {
    return done({ kind: 'network', message: 'upstream connection failed: bad URL', status: 0 });
  }
  const lib = url.protocol === 'https:' ? https : http;
  const req = lib.request(url, {
    method: 'POST',
    agent: agentFor(url, m),
    headers: { ...m.headers, 'content-length': Buffer.byteLength(m.body) },
  });
  call.req = req;
  call.timer = setTimeout(() => {
    req.destroy();
    done({ kind: 'timeout', message: 'upstream did not answer within ' + m.timeoutMs + ' ms', status: 0 });
  }, m.timeoutMs);
  req.on('error', (e) =>
    done({ kind: 'network', message: 'upstream connection failed: ' + (e.code || e.message), status: 0 }),
  );
  req.on('response', (res) => {
    const status = res.statusCode;
    call.answering = status >= 200 && status < 300;
    if (call.answering) parentPort.postMessage({ id: m.id, answering: true });
    const chunks = [];
    let size = 0;
    res.on('data', (chunk) => {
      size += chunk.length;
      if (size > m.maxBytes) {
        req.destroy();
        return done({ kind: 'protocol', message: 'upstream answer larger than ' + m.maxBytes + ' bytes', status });
      }
      chunks.push(chunk);
    });
    res.on('error', () => {});
    res.on('close', () => {
      if (!res.complete) done({ kind: 'network', message: 'upstream connection failed: answer cut', status: 0 });
    });
    res.on('end', () => {
      if (!calls.has(m.id)) return;
      // The body is in, within the deadline: parsing it is this replica's work, not the upstream's time; its
      // connection goes back to the key's share now (UpstreamHttp.embeddingsOffThread).
      clearTimeout(call.timer);
      if (call.answering) parentPort.postMessage({ id: m.id, arrived: true });
      const body = Buffer.concat(chunks, size);
      if (!call.answering) {
        const text = body.toString('utf8');
        const retry = res.headers['retry-after'];
        return done({ kind: 'http', status, text, message: 'HTTP ' + status, retryAfter: Array.isArray(retry) ? retry[0] : retry });
      }
      answer(m, status, body, done);
    });
  });
  req.end(m.body);
}

parentPort.on('message', (m) => {
  if (m.free) return giveBack(m.free[0], m.free[1]);
  if (m.cancel !== undefined) {
    const call = calls.get(m.cancel);
    // A 2xx answer under way is the call's (the provider bills it): it goes on.
    if (!call || (call.answering && !m.force)) return;
    call.req?.destroy();
    return call.done({ kind: 'aborted', message: 'the caller left', status: 0 });
  }
  // A request Node refuses at once (a header it cannot send) fails its call alone, not the thread.
  try {
    start(m);
  } catch (e) {
    calls.get(m.id)?.done({ kind: 'network', message: 'upstream connection failed: ' + (e.code || e.message), status: 0 });
  }
});
`;
