// Local upstream servers speaking the OpenAI and Anthropic protocols, for tests. Behaviour is
// mutable per server so one test can make it slow, fail, rate-limit or drop a stream mid-way.
//
// OpenAI chat tool calls (deterministic, as OpenAI documents the shapes):
// - `tools` given (tool_choice not 'none') and the last message is role 'user': the answer is an
//   assistant message with `content: null` and one `tool_calls` entry (finish_reason 'tool_calls')
//   calling the tool named by tool_choice {type:'function', function:{name}}, else the first tool, with
//   id `call_<request number>_0` and arguments built from its JSON-schema `parameters.properties`:
//   string -> the last user text, number/integer -> its word count, boolean -> true, others -> null.
//   Streamed: a first chunk with {index:0, id, type:'function', function:{name, arguments:''}}, then
//   the arguments in 8-character fragments ({index:0, function:{arguments}}), then finish_reason.
//   Its "tokens" are 1 + the number of fragments; the honoured completion limit truncates them
//   (finish_reason 'length'), as it truncates text answers (1 token per word).
// - the last message is role 'tool': a text answer `Tool result: <the tool message's text>`.
// - otherwise (and when `behaviour.reply` is set, for text answers): `Echo: <last user text>`.
import { createHash } from 'crypto';
import { createServer, IncomingMessage, Server, ServerResponse } from 'http';
import { AddressInfo, Socket } from 'net';
import { asyncHandler } from '../async-handler';

/** Fake audio output: this many audio tokens per text token of the transcript. */
export const AUDIO_TOKENS_PER_TEXT_TOKEN = 10;

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
  /** Streams write this many content chunks, then wait for `hold` before the rest (an event the test controls). */
  holdAfterChunks?: number;
  hold?: Promise<void>;
  /** Embeddings calls wait for this before answering (an event the test controls). */
  holdEmbeddings?: Promise<void>;
  /** Reply text; defaults to an echo of the last user message. */
  reply?: string;
  /** When set, calls must carry this key (Bearer for OpenAI, x-api-key for Anthropic). */
  apiKey?: string;
  /**
   * OpenAI: the only completion-limit field this server honours (the other is ignored, as servers
   * that predate it do); both at once is refused as OpenAI refuses it. Default: either.
   */
  honoursLimit?: 'max_tokens' | 'max_completion_tokens';
  /** Anthropic: how many tool_use blocks one tool-calling answer holds (default 1; 1 under disable_parallel_tool_use). */
  parallelToolUse?: number;
  /**
   * Usage breakdowns to report, as each protocol does. OpenAI: `prompt_tokens_details.cached_tokens`
   * (and `cache_write_tokens` when set), `completion_tokens_details.reasoning_tokens`. Anthropic:
   * `cache_read_input_tokens` / `cache_creation_input_tokens` (on top of its `input_tokens`, as there).
   */
  usageDetails?: { cachedTokens?: number; cacheWriteTokens?: number; reasoningTokens?: number };
  /** Audio output answered with a bare usage (no `*_tokens_details`), as some OpenAI-compatible upstreams do. */
  audioWithoutDetails?: boolean;
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

const defaults = (): UpstreamBehaviour => ({
  delayMs: 0,
  chunkDelayMs: 0,
  failTimes: 0,
  failStatus: 500,
  rateLimitTimes: 0,
  retryAfterSeconds: 1,
  dropAfterChunks: -1,
});

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

/** An OpenAI chat usage with the breakdowns `behaviour.usageDetails` asks for. */
function openAiUsage(up: FakeUpstream, prompt: number, completion: number): Record<string, unknown> {
  const usage: Record<string, unknown> = {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
  };
  const d = up.behaviour.usageDetails;
  if (d) {
    usage.prompt_tokens_details = {
      cached_tokens: d.cachedTokens ?? 0,
      audio_tokens: 0,
      ...(d.cacheWriteTokens !== undefined ? { cache_write_tokens: d.cacheWriteTokens } : {}),
    };
    usage.completion_tokens_details = {
      reasoning_tokens: d.reasoningTokens ?? 0,
      audio_tokens: 0,
      accepted_prediction_tokens: 0,
      rejected_prediction_tokens: 0,
    };
  }
  return usage;
}

/** An Anthropic usage with the cache figures `behaviour.usageDetails` asks for. */
function anthropicUsage(up: FakeUpstream, input: number, output: number): Record<string, unknown> {
  const d = up.behaviour.usageDetails;
  return d
    ? {
        input_tokens: input,
        output_tokens: output,
        cache_read_input_tokens: d.cachedTokens ?? 0,
        cache_creation_input_tokens: d.cacheWriteTokens ?? 0,
      }
    : { input_tokens: input, output_tokens: output };
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
  const server: Server = createServer(
    asyncHandler(async (req, res) => {
      try {
        const body = await readBody(req);
        up.requests.push({
          method: req.method ?? '',
          path: req.url ?? '',
          headers: req.headers,
          body,
          remotePort: req.socket.remotePort,
        });
        const b = up.behaviour;
        if (b.apiKey) {
          const given = kind === 'openai' ? req.headers.authorization : req.headers['x-api-key'];
          const expected = kind === 'openai' ? `Bearer ${b.apiKey}` : b.apiKey;
          if (given !== expected) {
            return sendJson(
              res,
              401,
              kind === 'openai'
                ? {
                    error: {
                      message: 'Incorrect API key provided',
                      type: 'invalid_request_error',
                      code: 'invalid_api_key',
                      param: null,
                    },
                  }
                : { type: 'error', error: { type: 'authentication_error', message: 'invalid x-api-key' } },
            );
          }
        }
        if (b.delayMs) await sleep(b.delayMs);
        if (res.destroyed) return;
        if (b.rateLimitTimes > 0) {
          b.rateLimitTimes--;
          return sendJson(
            res,
            429,
            kind === 'openai'
              ? {
                  error: {
                    message: 'Rate limit reached for requests',
                    type: 'requests',
                    code: 'rate_limit_exceeded',
                    param: null,
                  },
                }
              : {
                  type: 'error',
                  error: {
                    type: 'rate_limit_error',
                    message: 'Number of request tokens has exceeded your per-minute rate limit',
                  },
                },
            { 'retry-after': String(b.retryAfterSeconds) },
          );
        }
        if (b.failTimes > 0) {
          b.failTimes--;
          return sendJson(
            res,
            b.failStatus,
            kind === 'openai'
              ? {
                  error: {
                    message: `The server had an error while processing your request (fake ${b.failStatus})`,
                    type: 'server_error',
                    code: null,
                    param: null,
                  },
                }
              : {
                  type: 'error',
                  error: {
                    type: b.failStatus === 529 ? 'overloaded_error' : 'api_error',
                    message: `Internal server error (fake ${b.failStatus})`,
                  },
                },
          );
        }
        await handler(req, res, body, up);
      } catch (e) {
        if (!res.headersSent) sendJson(res, 500, { error: { message: String(e), type: 'server_error' } });
        else res.destroy();
      }
    }),
  );
  // Longer than the gateway's pool keeps an idle connection (libs/llm/src/http.ts), as real providers'
  // keep-alive is: with Node's 5 s default, a connection the pool reuses just as this server times it out
  // fails the call (undici does not retry a POST), the router tries again, and a test counting attempts,
  // spans or upstream requests sees one more than the call made (a CI run failed so).
  server.keepAliveTimeout = 120_000;
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
async function streamFrames(
  res: ServerResponse,
  up: FakeUpstream,
  frames: string[],
  contentFrames: Set<number>,
): Promise<void> {
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
    if (contentFrames.has(i) && content === up.behaviour.holdAfterChunks && up.behaviour.hold) await up.behaviour.hold;
  }
  if (closedByClient || res.destroyed) {
    up.stats.streamsAbortedByClient++;
    return;
  }
  res.end();
  up.stats.streamsCompleted++;
}

/**
 * Legacy `/v1/completions`: each prompt (string, or token ids counted as words) answers "Echo: <prompt>"
 * (or `reply`) n times, cut at `max_tokens` words (default 16, as OpenAI); `max_completion_tokens` is
 * refused as OpenAI refuses unknown parameters there. Streams one word per chunk, usage on request.
 */
async function legacyCompletions(res: ServerResponse, body: any, up: FakeUpstream): Promise<void> {
  if (body?.prompt === undefined)
    return sendJson(res, 400, {
      error: { message: "'prompt' is a required property", type: 'invalid_request_error', param: 'prompt', code: null },
    });
  if (body.max_completion_tokens !== undefined)
    return sendJson(res, 400, {
      error: {
        message: 'Unrecognized request argument supplied: max_completion_tokens',
        type: 'invalid_request_error',
        param: null,
        code: null,
      },
    });
  const prompts: string[] =
    typeof body.prompt === 'string'
      ? [body.prompt]
      : body.prompt.every((t: unknown) => typeof t === 'number')
        ? [body.prompt.join(' ')]
        : body.prompt.map((p: any) => (typeof p === 'string' ? p : p.join(' ')));
  const n = body.n ?? 1;
  const limit = body.max_tokens ?? 16;
  const choices = prompts.flatMap((p, i) =>
    Array.from({ length: n }, (_, k) => ({ index: i * n + k, ...pieces(up.behaviour.reply ?? `Echo: ${p}`, limit) })),
  );
  const promptTokens = prompts.reduce((s, p) => s + fakeTokens(p), 0);
  const completionTokens = choices.reduce((s, c) => s + c.parts.length, 0);
  const usage = {
    prompt_tokens: promptTokens,
    completion_tokens: completionTokens,
    total_tokens: promptTokens + completionTokens,
  };
  const base = {
    id: `cmpl-fake${up.requests.length}`,
    object: 'text_completion',
    created: Math.floor(Date.now() / 1000),
    model: body.model,
  };
  if (!body.stream) {
    return sendJson(res, 200, {
      ...base,
      choices: choices.map((c) => ({
        text: c.parts.join(''),
        index: c.index,
        logprobs: null,
        finish_reason: c.truncated ? 'length' : 'stop',
      })),
      usage,
    });
  }
  const frame = (o: unknown) => `data: ${JSON.stringify(o)}\n\n`;
  const frames: string[] = [];
  const contentFrames = new Set<number>();
  for (const c of choices) {
    for (const part of c.parts) {
      contentFrames.add(frames.length);
      frames.push(frame({ ...base, choices: [{ text: part, index: c.index, logprobs: null, finish_reason: null }] }));
    }
    frames.push(
      frame({
        ...base,
        choices: [{ text: '', index: c.index, logprobs: null, finish_reason: c.truncated ? 'length' : 'stop' }],
      }),
    );
  }
  if (body.stream_options?.include_usage) frames.push(frame({ ...base, choices: [], usage }));
  frames.push('data: [DONE]\n\n');
  await streamFrames(res, up, frames, contentFrames);
}

/** The tool call the fake OpenAI makes for this request (see the top of the file), or undefined. */
function openAiToolCall(
  body: any,
  callId: string,
): { id: string; type: 'function'; function: { name: string; arguments: string } } | undefined {
  const tools: any[] = Array.isArray(body.tools)
    ? body.tools.filter((t: any) => t?.type === 'function' && typeof t.function?.name === 'string')
    : [];
  const last = body.messages[body.messages.length - 1];
  if (!tools.length || body.tool_choice === 'none' || last?.role !== 'user') return undefined;
  const named =
    body.tool_choice?.type === 'function'
      ? tools.find((t) => t.function.name === body.tool_choice.function?.name)
      : undefined;
  const fn = (named ?? tools[0]).function;
  const userText = textOf(last.content);
  const args: Record<string, unknown> = {};
  for (const [k, schema] of Object.entries<any>(fn.parameters?.properties ?? {})) {
    const type = Array.isArray(schema?.type) ? schema.type[0] : schema?.type;
    args[k] =
      type === 'string'
        ? userText
        : type === 'number' || type === 'integer'
          ? fakeTokens(userText)
          : type === 'boolean'
            ? true
            : null;
  }
  return { id: callId, type: 'function', function: { name: fn.name, arguments: JSON.stringify(args) } };
}

async function openAiToolCallAnswer(
  res: ServerResponse,
  up: FakeUpstream,
  body: any,
  id: string,
  created: number,
  call: NonNullable<ReturnType<typeof openAiToolCall>>,
  limit?: number,
): Promise<void> {
  // "Tokens": 1 for the call's name, 1 per 8-character argument fragment; the honoured limit truncates (finish_reason 'length').
  let fragments: string[] = [];
  for (let i = 0; i < call.function.arguments.length; i += 8) fragments.push(call.function.arguments.slice(i, i + 8));
  const truncated = limit != null && fragments.length + 1 > limit;
  if (truncated) fragments = fragments.slice(0, Math.max(0, limit - 1));
  const finish = truncated ? 'length' : 'tool_calls';
  const usage = openAiUsage(up, promptTokens(body), fragments.length + 1);
  if (!body.stream) {
    const message = {
      role: 'assistant',
      content: null,
      tool_calls: [{ ...call, function: { ...call.function, arguments: fragments.join('') } }],
      refusal: null,
    };
    return sendJson(res, 200, {
      id,
      object: 'chat.completion',
      created,
      model: body.model,
      choices: [{ index: 0, message, finish_reason: finish, logprobs: null }],
      usage,
    });
  }
  const frame = (o: unknown) => `data: ${JSON.stringify(o)}\n\n`;
  const base = { id, object: 'chat.completion.chunk', created, model: body.model };
  const frames = [
    frame({
      ...base,
      choices: [
        {
          index: 0,
          delta: {
            role: 'assistant',
            content: null,
            tool_calls: [
              { index: 0, id: call.id, type: 'function', function: { name: call.function.name, arguments: '' } },
            ],
          },
          finish_reason: null,
        },
      ],
    }),
  ];
  const contentFrames = new Set<number>();
  for (const f of fragments) {
    contentFrames.add(frames.length);
    frames.push(
      frame({
        ...base,
        choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: f } }] }, finish_reason: null }],
      }),
    );
  }
  frames.push(frame({ ...base, choices: [{ index: 0, delta: {}, finish_reason: finish }] }));
  if (body.stream_options?.include_usage) frames.push(frame({ ...base, choices: [], usage }));
  frames.push('data: [DONE]\n\n');
  await streamFrames(res, up, frames, contentFrames);
}

export function startFakeOpenAi(): Promise<FakeUpstream> {
  return start('openai', async (req, res, body, up) => {
    const path = (req.url ?? '').split('?')[0];
    if (req.method === 'GET' && path === '/v1/models') {
      return sendJson(res, 200, {
        object: 'list',
        data: [{ id: 'fake-model', object: 'model', created: 0, owned_by: 'fake' }],
      });
    }
    if (req.method !== 'POST')
      return sendJson(res, 404, { error: { message: 'not found', type: 'invalid_request_error' } });
    if (body?.__invalid !== undefined)
      return sendJson(res, 400, {
        error: {
          message: 'We could not parse the JSON body of your request.',
          type: 'invalid_request_error',
          code: null,
          param: null,
        },
      });
    if (path === '/v1/embeddings') {
      if (up.behaviour.holdEmbeddings) await up.behaviour.holdEmbeddings;
      // As OpenAI reads `input`: a text, texts, one token array, or token arrays (a token array counts its ids).
      const raw: unknown[] = Array.isArray(body.input) ? body.input : [body.input];
      const inputs: Array<string | number[]> =
        typeof raw[0] === 'number' ? [raw as number[]] : (raw as Array<string | number[]>);
      const dims = body.dimensions ?? 1536;
      const tokens = inputs.reduce((s: number, t) => s + (Array.isArray(t) ? t.length : fakeTokens(String(t))), 0);
      const data = inputs.map((t, index) => {
        const v = fakeEmbedding(Array.isArray(t) ? `ids:${t.join(',')}` : String(t), dims);
        const embedding =
          body.encoding_format === 'base64' ? Buffer.from(new Float32Array(v).buffer).toString('base64') : v;
        return { object: 'embedding', index, embedding };
      });
      return sendJson(res, 200, {
        object: 'list',
        model: body.model,
        data,
        usage: { prompt_tokens: tokens, total_tokens: tokens },
      });
    }
    if (path === '/v1/completions') return legacyCompletions(res, body, up);
    if (path !== '/v1/chat/completions')
      return sendJson(res, 404, { error: { message: `unknown path ${path}`, type: 'invalid_request_error' } });
    if (!Array.isArray(body?.messages))
      return sendJson(res, 400, {
        error: {
          message: "'messages' is a required property",
          type: 'invalid_request_error',
          param: 'messages',
          code: null,
        },
      });
    const id = `chatcmpl-fake${up.requests.length}`;
    const created = Math.floor(Date.now() / 1000);
    if (body.max_tokens != null && body.max_completion_tokens != null) {
      return sendJson(res, 400, {
        error: {
          message: "Setting 'max_tokens' and 'max_completion_tokens' at the same time is not supported.",
          type: 'invalid_request_error',
          param: 'max_tokens',
          code: 'invalid_parameter_combination',
        },
      });
    }
    const honours = up.behaviour.honoursLimit;
    const limit = honours ? body[honours] : (body.max_tokens ?? body.max_completion_tokens);
    const last = body.messages[body.messages.length - 1];
    const call = openAiToolCall(body, `call_${up.requests.length}_0`);
    if (call) return openAiToolCallAnswer(res, up, body, id, created, call, limit);
    const text =
      last?.role === 'tool' && up.behaviour.reply === undefined
        ? `Tool result: ${textOf(last.content)}`
        : replyFor(body.messages, up.behaviour);
    const { parts, truncated } = pieces(text, limit);
    const usage = openAiUsage(up, promptTokens(body), parts.length);
    const finish = truncated ? 'length' : 'stop';
    // Audio output (modalities ["text", "audio"]), as OpenAI answers it: the reply as `message.audio`
    // (base64 audio, its transcript), content null, and the audio tokens in the usage details.
    const audioOut = Array.isArray(body.modalities) && body.modalities.includes('audio');
    if (audioOut) {
      const audioTokens = parts.length * AUDIO_TOKENS_PER_TEXT_TOKEN;
      usage.completion_tokens = parts.length + audioTokens;
      usage.total_tokens = (usage.prompt_tokens as number) + (usage.completion_tokens as number);
      if (!up.behaviour.audioWithoutDetails)
        Object.assign(usage, {
          prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
          completion_tokens_details: {
            reasoning_tokens: 0,
            audio_tokens: audioTokens,
            accepted_prediction_tokens: 0,
            rejected_prediction_tokens: 0,
          },
        });
    }
    const audio = {
      id: `audio_fake${up.requests.length}`,
      data: Buffer.from(`RIFF${parts.join('')}`).toString('base64'),
      expires_at: created + 3600,
      transcript: parts.join(''),
    };
    if (!body.stream) {
      const message = audioOut
        ? { role: 'assistant', content: null, refusal: null, audio }
        : { role: 'assistant', content: parts.join('') };
      return sendJson(res, 200, {
        id,
        object: 'chat.completion',
        created,
        model: body.model,
        choices: [{ index: 0, message, finish_reason: finish, logprobs: null }],
        usage,
      });
    }
    const frame = (o: unknown) => `data: ${JSON.stringify(o)}\n\n`;
    const base = { id, object: 'chat.completion.chunk', created, model: body.model };
    const frames = [
      frame({ ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] }),
    ];
    const contentFrames = new Set<number>();
    if (audioOut)
      frames.push(
        frame({
          ...base,
          choices: [
            {
              index: 0,
              delta: { audio: { id: audio.id, data: audio.data, expires_at: audio.expires_at } },
              finish_reason: null,
            },
          ],
        }),
      );
    for (const p of parts) {
      contentFrames.add(frames.length);
      frames.push(
        frame({
          ...base,
          choices: [{ index: 0, delta: audioOut ? { audio: { transcript: p } } : { content: p }, finish_reason: null }],
        }),
      );
    }
    frames.push(frame({ ...base, choices: [{ index: 0, delta: {}, finish_reason: finish }] }));
    if (body.stream_options?.include_usage) frames.push(frame({ ...base, choices: [], usage }));
    frames.push('data: [DONE]\n\n');
    await streamFrames(res, up, frames, contentFrames);
  });
}

const ANTHROPIC_REQUEST_FIELDS = new Set([
  'model',
  'messages',
  'max_tokens',
  'system',
  'temperature',
  'top_p',
  'top_k',
  'stop_sequences',
  'stream',
  'metadata',
  'tools',
  'tool_choice',
  'thinking',
  'service_tier',
]);
const ANTHROPIC_IMAGE_TYPES = new Set(['image/jpeg', 'image/png', 'image/gif', 'image/webp']);

/** What the Messages API refuses about a request (roles, blocks, tool pairing, unknown fields), or undefined. */
function anthropicRequestProblem(body: any): string | undefined {
  for (const k of Object.keys(body ?? {}))
    if (!ANTHROPIC_REQUEST_FIELDS.has(k)) return `${k}: Extra inputs are not permitted`;
  if (typeof body?.max_tokens !== 'number') return 'max_tokens: Field required';
  if (
    Array.isArray(body.stop_sequences) &&
    body.stop_sequences.some((x: unknown) => typeof x !== 'string' || x.trim() === '')
  )
    return 'stop_sequences: each stop sequence must contain non-whitespace';
  if (!Array.isArray(body?.messages) || body.messages.length === 0) return 'messages: at least one message is required';
  if (body.system !== undefined && typeof body.system !== 'string' && !Array.isArray(body.system))
    return 'system: Input should be a valid string or list';
  const tools: any[] = body.tools ?? [];
  if (!Array.isArray(tools)) return 'tools: Input should be a valid list';
  for (const [i, t] of tools.entries()) {
    for (const k of Object.keys(t ?? {}))
      if (!['name', 'description', 'input_schema', 'cache_control', 'type'].includes(k))
        return `tools.${i}.custom.${k}: Extra inputs are not permitted`;
    if (typeof t?.name !== 'string' || !/^[a-zA-Z0-9_-]{1,128}$/.test(t.name))
      return `tools.${i}.custom.name: String should match pattern`;
    if (t.input_schema?.type !== 'object') return `tools.${i}.custom.input_schema.type: Input should be 'object'`;
  }
  const toolNames = new Set(tools.map((t) => t.name));
  const tc = body.tool_choice;
  if (tc !== undefined) {
    if (!['auto', 'any', 'tool', 'none'].includes(tc?.type))
      return 'tool_choice.type: Input tag does not match any of the expected tags';
    if (tc.type === 'tool' && !toolNames.has(tc.name))
      return `tool_choice.name: Tool '${tc.name}' not found in provided tools`;
    if (tc.type === 'none' && tc.disable_parallel_tool_use !== undefined)
      return 'tool_choice.none.disable_parallel_tool_use: Extra inputs are not permitted';
    if (!tools.length) return 'tool_choice may only be specified while providing tools';
  }
  let previousToolUses: string[] = [];
  for (const [i, m] of body.messages.entries()) {
    if (m?.role !== 'user' && m?.role !== 'assistant')
      return `messages.${i}.role: Input should be 'user' or 'assistant'`;
    if (i === 0 && m.role !== 'user') return 'messages: first message must use the "user" role';
    if (i > 0 && body.messages[i - 1].role === m.role)
      return 'messages: roles must alternate between "user" and "assistant"';
    const blocks: any[] =
      typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : Array.isArray(m.content) ? m.content : [];
    if (!blocks.length || (typeof m.content === 'string' && m.content === '' && i !== body.messages.length - 1))
      return `messages.${i}: all messages must have non-empty content except for the optional final assistant message`;
    const uses: string[] = [];
    let results = 0;
    let seenOther = false;
    for (const [j, b] of blocks.entries()) {
      const at = `messages.${i}.content.${j}`;
      switch (b?.type) {
        case 'text':
          if (typeof b.text !== 'string' || (b.text === '' && typeof m.content !== 'string'))
            return `${at}.text: text content blocks must be non-empty`;
          seenOther = true;
          break;
        case 'image':
          if (m.role !== 'user') return `${at}: image blocks are only allowed in user messages`;
          if (b.source?.type === 'base64') {
            if (!ANTHROPIC_IMAGE_TYPES.has(b.source.media_type))
              return `${at}.image.source.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'`;
            if (typeof b.source.data !== 'string' || !b.source.data)
              return `${at}.image.source.base64.data: Field required`;
          } else if (b.source?.type === 'url') {
            if (typeof b.source.url !== 'string' || !/^https?:\/\//.test(b.source.url))
              return `${at}.image.source.url.url: invalid URL`;
          } else return `${at}.image.source: Input tag does not match any of the expected tags`;
          seenOther = true;
          break;
        case 'document':
          if (b.source?.type !== 'base64' || b.source.media_type !== 'application/pdf')
            return `${at}.document.source: invalid source`;
          seenOther = true;
          break;
        case 'tool_use':
          if (m.role !== 'assistant') return `${at}: tool_use blocks are only allowed in assistant messages`;
          if (
            typeof b.id !== 'string' ||
            typeof b.name !== 'string' ||
            typeof b.input !== 'object' ||
            b.input === null ||
            Array.isArray(b.input)
          )
            return `${at}.tool_use: id, name and an input object are required`;
          if (!/^[a-zA-Z0-9_-]+$/.test(b.id))
            return `${at}.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'`;
          uses.push(b.id);
          break;
        case 'tool_result':
          if (m.role !== 'user') return `${at}: tool_result blocks are only allowed in user messages`;
          if (seenOther) return `messages.${i}: tool_result blocks must come first in the content`;
          if (!previousToolUses.includes(b.tool_use_id))
            return `${at}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${b.tool_use_id}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`;
          results++;
          break;
        default:
          return `${at}.type: Input tag '${b?.type}' does not match any of the expected tags`;
      }
    }
    if (previousToolUses.length && results !== previousToolUses.length) {
      return `messages.${i - 1}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${previousToolUses.join(', ')}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`;
    }
    if ((uses.length || results) && !tools.length)
      return 'Requests which include `tool_use` or `tool_result` blocks must define tools.';
    previousToolUses = uses;
  }
  return undefined;
}

/** Deterministic tool input: the tool's first required (or first) property set to the user's text. */
function toolInputFor(tool: any, userText: string): Record<string, unknown> {
  const props = Object.keys(tool?.input_schema?.properties ?? {});
  const key = (Array.isArray(tool?.input_schema?.required) && tool.input_schema.required[0]) || props[0];
  return key ? { [key]: userText } : {};
}

function toolResultText(content: any): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((c) => (typeof c?.text === 'string' ? c.text : '')).join('');
  return '';
}

/**
 * Messages API stand-in. Validates the request as Anthropic does (answers 400 otherwise). With tools and a
 * last user turn without tool_result it calls a tool (tool_choice's, else the first; `parallelToolUse`
 * calls that many, unless disable_parallel_tool_use) with stop_reason tool_use, preceded by a short text
 * block unless the tool choice forces a tool, as Claude does; with tool_result it answers
 * "Result: <results>"; otherwise it echoes the last user text.
 */
export function startFakeAnthropic(): Promise<FakeUpstream> {
  return start('anthropic', async (req, res, body, up) => {
    const path = (req.url ?? '').split('?')[0];
    if (req.method !== 'POST' || path !== '/v1/messages')
      return sendJson(res, 404, { type: 'error', error: { type: 'not_found_error', message: `unknown path ${path}` } });
    if (!req.headers['anthropic-version'])
      return sendJson(res, 400, {
        type: 'error',
        error: { type: 'invalid_request_error', message: 'anthropic-version header is required' },
      });
    const problem = body?.__invalid !== undefined ? 'invalid JSON body' : anthropicRequestProblem(body);
    if (problem)
      return sendJson(res, 400, { type: 'error', error: { type: 'invalid_request_error', message: problem } });
    const id = `msg_fake${up.requests.length}`;
    const input = promptTokens(body);
    const lastUser = body.messages[body.messages.length - 1];
    const lastBlocks: any[] = lastUser.role === 'user' && Array.isArray(lastUser.content) ? lastUser.content : [];
    const results = lastBlocks.filter((b) => b.type === 'tool_result');
    const tools: any[] = body.tools ?? [];
    const choice = body.tool_choice?.type ?? 'auto';
    type Block =
      { type: 'text'; text: string } | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> };
    const blocks: Block[] = [];
    let stop: string;
    if (tools.length && choice !== 'none' && !results.length && lastUser.role === 'user') {
      const userText = textOf(lastUser.content);
      const first = choice === 'tool' ? tools.findIndex((t) => t.name === body.tool_choice.name) : 0;
      const count =
        body.tool_choice?.disable_parallel_tool_use || choice === 'tool'
          ? 1
          : Math.min(Math.max(1, up.behaviour.parallelToolUse ?? 1), tools.length);
      if (choice === 'auto') blocks.push({ type: 'text', text: `Calling ${tools[first].name}.` });
      for (let k = 0; k < count; k++) {
        const tool = tools[(first + k) % tools.length];
        blocks.push({
          type: 'tool_use',
          id: `toolu_fake${up.requests.length}_${k}`,
          name: tool.name,
          input: toolInputFor(tool, userText),
        });
      }
      stop = 'tool_use';
    } else {
      const text = results.length
        ? `Result: ${results.map((r) => toolResultText(r.content)).join('; ')}`
        : replyFor(body.messages, up.behaviour);
      const { parts, truncated } = pieces(up.behaviour.reply ?? text, body.max_tokens);
      blocks.push({ type: 'text', text: parts.join('') });
      stop = truncated ? 'max_tokens' : 'end_turn';
    }
    const outputTokens = blocks.reduce(
      (s, b) =>
        s + (b.type === 'text' ? fakeTokens(b.text) : fakeTokens(JSON.stringify(b.input).replace(/[{}":,]/g, ' '))),
      0,
    );
    if (!body.stream) {
      return sendJson(res, 200, {
        id,
        type: 'message',
        role: 'assistant',
        model: body.model,
        content: blocks,
        stop_reason: stop,
        stop_sequence: null,
        usage: anthropicUsage(up, input, outputTokens),
      });
    }
    const ev = (event: string, data: unknown) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
    const frames = [
      ev('message_start', {
        type: 'message_start',
        message: {
          id,
          type: 'message',
          role: 'assistant',
          model: body.model,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: anthropicUsage(up, input, 1),
        },
      }),
      ev('ping', { type: 'ping' }),
    ];
    const contentFrames = new Set<number>();
    blocks.forEach((b, index) => {
      if (b.type === 'text') {
        frames.push(
          ev('content_block_start', { type: 'content_block_start', index, content_block: { type: 'text', text: '' } }),
        );
        for (const p of b.text.split(/(?<=\s)/).filter(Boolean)) {
          contentFrames.add(frames.length);
          frames.push(
            ev('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'text_delta', text: p } }),
          );
        }
      } else {
        frames.push(
          ev('content_block_start', {
            type: 'content_block_start',
            index,
            content_block: { type: 'tool_use', id: b.id, name: b.name, input: {} },
          }),
        );
        // As Anthropic does: an empty first fragment, then the JSON in small pieces.
        const json = JSON.stringify(b.input);
        const fragments = [''];
        for (let at = 0; at < json.length; at += 7) fragments.push(json.slice(at, at + 7));
        for (const f of fragments) {
          contentFrames.add(frames.length);
          frames.push(
            ev('content_block_delta', {
              type: 'content_block_delta',
              index,
              delta: { type: 'input_json_delta', partial_json: f },
            }),
          );
        }
      }
      frames.push(ev('content_block_stop', { type: 'content_block_stop', index }));
    });
    frames.push(
      ev('message_delta', {
        type: 'message_delta',
        delta: { stop_reason: stop, stop_sequence: null },
        usage: { output_tokens: outputTokens },
      }),
    );
    frames.push(ev('message_stop', { type: 'message_stop' }));
    await streamFrames(res, up, frames, contentFrames);
  });
}
