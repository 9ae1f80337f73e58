// Local upstream servers speaking the OpenAI and Anthropic protocols, for tests. Behaviour is
// mutable per server so one test can make it slow, fail, rate-limit or drop a stream mid-way.
import { createHash } from 'crypto';
import { createServer, IncomingMessage, Server, ServerResponse } from 'http';
import { AddressInfo, Socket } from 'net';

export interface UpstreamBehaviour {
  /** Wait before sending the response headers. */
  delayMs: number;
  /** Wait between streamed chunks. */
  chunkDelayMs: number;
  /** The next N calls answer `failStatus` with an error body. */
  failTimes: number;
  failStatus: number;
  /** The next N calls answer 429 with `Retry-After: retryAfterSeconds`. */
  rateLimitTimes: number;
  retryAfterSeconds: number;
  /** Streams stop (socket destroyed) after this many content chunks; -1 never. */
  dropAfterChunks: number;
  /** Reply text; defaults to an echo of the last user message. */
  reply?: string;
  /** When set, calls must carry this key (Bearer for OpenAI, x-api-key for Anthropic). */
  apiKey?: string;
  /**
   * OpenAI: the only completion-limit field this server honours (the other is ignored, as servers
   * that predate it do); both at once is refused as OpenAI refuses it. Default: either.
   */
  honoursLimit?: 'max_tokens' | 'max_completion_tokens';
}

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: any;
  /** Client port: the same port on two requests means the connection was kept alive. */
  remotePort?: number;
}

export interface FakeUpstream {
  /** Base URL including /v1, as a providers file wants it. */
  url: string;
  behaviour: UpstreamBehaviour;
  requests: RecordedRequest[];
  /** Streams the client closed before they were finished. */
  stats: { streamsStarted: number; streamsCompleted: number; streamsAbortedByClient: number };
  reset(): void;
  close(): Promise<void>;
}

const defaults = (): UpstreamBehaviour => ({ delayMs: 0, chunkDelayMs: 0, failTimes: 0, failStatus: 500, rateLimitTimes: 0, retryAfterSeconds: 1, dropAfterChunks: -1 });

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function textOf(content: any): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((p) => (typeof p?.text === 'string' ? p.text : '')).join('');
  return '';
}

/** Whitespace-separated words: the fake's deterministic "tokens". */
export function fakeTokens(text: string): number {
  return text.split(/\s+/).filter(Boolean).length;
}

/** Deterministic unit-length vector for a text (same text, same vector). */
export function fakeEmbedding(text: string, dims: number): number[] {
  const out: number[] = [];
  let seed = createHash('sha256').update(text).digest();
  while (out.length < dims) {
    for (let i = 0; i + 4 <= seed.length && out.length < dims; i += 4) out.push(seed.readInt32LE(i) / 2 ** 31);
    seed = createHash('sha256').update(seed).digest();
  }
  const norm = Math.sqrt(out.reduce((s, x) => s + x * x, 0)) || 1;
  return out.map((x) => x / norm);
}

async function readBody(req: IncomingMessage): Promise<any> {
  const parts: Buffer[] = [];
  for await (const c of req) parts.push(c as Buffer);
  const text = Buffer.concat(parts).toString('utf8');
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return { __invalid: text };
  }
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

type Handler = (req: IncomingMessage, res: ServerResponse, body: any, up: FakeUpstream) => Promise<void>;

async function start(kind: 'openai' | 'anthropic', handler: Handler): Promise<FakeUpstream> {
  const sockets = new Set<Socket>();
  const up: FakeUpstream = {
    url: '',
    behaviour: defaults(),
    requests: [],
    stats: { streamsStarted: 0, streamsCompleted: 0, streamsAbortedByClient: 0 },
    reset() {
      up.behaviour = defaults();
      up.requests.length = 0;
      up.stats = { streamsStarted: 0, streamsCompleted: 0, streamsAbortedByClient: 0 };
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
  const server: Server = createServer(async (req, res) => {
    try {
      const body = await readBody(req);
      up.requests.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers, body, remotePort: req.socket.remotePort });
      const b = up.behaviour;
      if (b.apiKey) {
        const given = kind === 'openai' ? req.headers.authorization : req.headers['x-api-key'];
        const expected = kind === 'openai' ? `Bearer ${b.apiKey}` : b.apiKey;
        if (given !== expected) {
          return sendJson(res, 401, kind === 'openai' ? { error: { message: 'Incorrect API key provided', type: 'invalid_request_error', code: 'invalid_api_key', param: null } } : { type: 'error', error: { type: 'authentication_error', message: 'invalid x-api-key' } });
        }
      }
      if (b.delayMs) await sleep(b.delayMs);
      if (res.destroyed) return;
      if (b.rateLimitTimes > 0) {
        b.rateLimitTimes--;
        return sendJson(res, 429, kind === 'openai' ? { error: { message: 'Rate limit reached for requests', type: 'requests', code: 'rate_limit_exceeded', param: null } } : { type: 'error', error: { type: 'rate_limit_error', message: 'Number of request tokens has exceeded your per-minute rate limit' } }, { 'retry-after': String(b.retryAfterSeconds) });
      }
      if (b.failTimes > 0) {
        b.failTimes--;
        return sendJson(res, b.failStatus, kind === 'openai' ? { error: { message: `The server had an error while processing your request (fake ${b.failStatus})`, type: 'server_error', code: null, param: null } } : { type: 'error', error: { type: b.failStatus === 529 ? 'overloaded_error' : 'api_error', message: `Internal server error (fake ${b.failStatus})` } });
      }
      await handler(req, res, body, up);
    } catch (e) {
      if (!res.headersSent) sendJson(res, 500, { error: { message: String(e), type: 'server_error' } });
      else res.destroy();
    }
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  up.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  return up;
}

function replyFor(messages: any[], b: UpstreamBehaviour): string {
  if (b.reply !== undefined) return b.reply;
  const lastUser = [...(messages ?? [])].reverse().find((m) => m?.role === 'user');
  return `Echo: ${textOf(lastUser?.content)}`;
}

function promptTokens(body: any): number {
  const sys = typeof body?.system === 'string' ? fakeTokens(body.system) : 0;
  return sys + (body?.messages ?? []).reduce((s: number, m: any) => s + fakeTokens(textOf(m?.content)) + 1, 0);
}

/** Splits a reply into word chunks, truncated at max_tokens words. */
function pieces(text: string, maxTokens?: number): { parts: string[]; truncated: boolean } {
  const words = text.split(/(?<=\s)/).filter(Boolean);
  const limit = maxTokens ?? Infinity;
  return { parts: words.slice(0, limit), truncated: words.length > limit };
}

/** Streams SSE frames honouring chunkDelayMs and dropAfterChunks; returns false when the client went away. */
async function streamFrames(res: ServerResponse, up: FakeUpstream, frames: string[], contentFrames: Set<number>): Promise<void> {
  up.stats.streamsStarted++;
  let closedByClient = false;
  res.on('close', () => {
    if (!res.writableFinished) closedByClient = true;
  });
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  let content = 0;
  for (let i = 0; i < frames.length; i++) {
    if (closedByClient || res.destroyed) {
      up.stats.streamsAbortedByClient++;
      return;
    }
    if (contentFrames.has(i)) {
      if (up.behaviour.dropAfterChunks >= 0 && content >= up.behaviour.dropAfterChunks) {
        // Let the chunks already written reach the client, then cut the connection without ending the body.
        await new Promise<void>((r) => res.write('', () => r()));
        await sleep(20);
        res.socket?.destroy();
        return;
      }
      content++;
    }
    res.write(frames[i]);
    if (up.behaviour.chunkDelayMs && contentFrames.has(i)) await sleep(up.behaviour.chunkDelayMs);
  }
  if (closedByClient || res.destroyed) {
    up.stats.streamsAbortedByClient++;
    return;
  }
  res.end();
  up.stats.streamsCompleted++;
}

export function startFakeOpenAi(): Promise<FakeUpstream> {
  return start('openai', async (req, res, body, up) => {
    const path = (req.url ?? '').split('?')[0];
    if (req.method === 'GET' && path === '/v1/models') {
      return sendJson(res, 200, { object: 'list', data: [{ id: 'fake-model', object: 'model', created: 0, owned_by: 'fake' }] });
    }
    if (req.method !== 'POST') return sendJson(res, 404, { error: { message: 'not found', type: 'invalid_request_error' } });
    if (body?.__invalid !== undefined) return sendJson(res, 400, { error: { message: 'We could not parse the JSON body of your request.', type: 'invalid_request_error', code: null, param: null } });
    if (path === '/v1/embeddings') {
      const inputs: string[] = Array.isArray(body.input) ? body.input : [body.input];
      const dims = body.dimensions ?? 1536;
      const tokens = inputs.reduce((s, t) => s + fakeTokens(String(t)), 0);
      const data = inputs.map((t, index) => {
        const v = fakeEmbedding(String(t), dims);
        const embedding = body.encoding_format === 'base64' ? Buffer.from(new Float32Array(v).buffer).toString('base64') : v;
        return { object: 'embedding', index, embedding };
      });
      return sendJson(res, 200, { object: 'list', model: body.model, data, usage: { prompt_tokens: tokens, total_tokens: tokens } });
    }
    if (path !== '/v1/chat/completions') return sendJson(res, 404, { error: { message: `unknown path ${path}`, type: 'invalid_request_error' } });
    if (!Array.isArray(body?.messages)) return sendJson(res, 400, { error: { message: "'messages' is a required property", type: 'invalid_request_error', param: 'messages', code: null } });
    const id = `chatcmpl-fake${up.requests.length}`;
    const created = Math.floor(Date.now() / 1000);
    if (body.max_tokens != null && body.max_completion_tokens != null) {
      return sendJson(res, 400, { error: { message: "Setting 'max_tokens' and 'max_completion_tokens' at the same time is not supported.", type: 'invalid_request_error', param: 'max_tokens', code: 'invalid_parameter_combination' } });
    }
    const honours = up.behaviour.honoursLimit;
    const limit = honours ? body[honours] : (body.max_tokens ?? body.max_completion_tokens);
    const { parts, truncated } = pieces(replyFor(body.messages, up.behaviour), limit);
    const usage = { prompt_tokens: promptTokens(body), completion_tokens: parts.length, total_tokens: promptTokens(body) + parts.length };
    const finish = truncated ? 'length' : 'stop';
    if (!body.stream) {
      return sendJson(res, 200, { id, object: 'chat.completion', created, model: body.model, choices: [{ index: 0, message: { role: 'assistant', content: parts.join('') }, finish_reason: finish, logprobs: null }], usage });
    }
    const frame = (o: unknown) => `data: ${JSON.stringify(o)}\n\n`;
    const base = { id, object: 'chat.completion.chunk', created, model: body.model };
    const frames = [frame({ ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] })];
    const contentFrames = new Set<number>();
    for (const p of parts) {
      contentFrames.add(frames.length);
      frames.push(frame({ ...base, choices: [{ index: 0, delta: { content: p }, finish_reason: null }] }));
    }
    frames.push(frame({ ...base, choices: [{ index: 0, delta: {}, finish_reason: finish }] }));
    if (body.stream_options?.include_usage) frames.push(frame({ ...base, choices: [], usage }));
    frames.push('data: [DONE]\n\n');
    await streamFrames(res, up, frames, contentFrames);
  });
}

export function startFakeAnthropic(): Promise<FakeUpstream> {
  return start('anthropic', async (req, res, body, up) => {
    const path = (req.url ?? '').split('?')[0];
    if (req.method !== 'POST' || path !== '/v1/messages') return sendJson(res, 404, { type: 'error', error: { type: 'not_found_error', message: `unknown path ${path}` } });
    if (!req.headers['anthropic-version']) return sendJson(res, 400, { type: 'error', error: { type: 'invalid_request_error', message: 'anthropic-version header is required' } });
    if (typeof body?.max_tokens !== 'number') return sendJson(res, 400, { type: 'error', error: { type: 'invalid_request_error', message: 'max_tokens: Field required' } });
    if (!Array.isArray(body?.messages) || body.messages.some((m: any) => m.role !== 'user' && m.role !== 'assistant')) {
      return sendJson(res, 400, { type: 'error', error: { type: 'invalid_request_error', message: 'messages: roles must be user or assistant' } });
    }
    const id = `msg_fake${up.requests.length}`;
    const { parts, truncated } = pieces(replyFor(body.messages, up.behaviour), body.max_tokens);
    const input = promptTokens(body);
    const stop = truncated ? 'max_tokens' : 'end_turn';
    if (!body.stream) {
      return sendJson(res, 200, { id, type: 'message', role: 'assistant', model: body.model, content: [{ type: 'text', text: parts.join('') }], stop_reason: stop, stop_sequence: null, usage: { input_tokens: input, output_tokens: parts.length } });
    }
    const ev = (event: string, data: unknown) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
    const frames = [
      ev('message_start', { type: 'message_start', message: { id, type: 'message', role: 'assistant', model: body.model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: input, output_tokens: 1 } } }),
      ev('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }),
      ev('ping', { type: 'ping' }),
    ];
    const contentFrames = new Set<number>();
    for (const p of parts) {
      contentFrames.add(frames.length);
      frames.push(ev('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: p } }));
    }
    frames.push(ev('content_block_stop', { type: 'content_block_stop', index: 0 }));
    frames.push(ev('message_delta', { type: 'message_delta', delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: parts.length } }));
    frames.push(ev('message_stop', { type: 'message_stop' }));
    await streamFrames(res, up, frames, contentFrames);
  });
}
