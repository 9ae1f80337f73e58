// Anthropic Messages API behind the OpenAI chat shape: request, response and stream translation.
import { mapTransportError, UpstreamHttp } from './http';
import { LlmClient } from './llm-client';
import { Deployment } from './providers-file';
import { parseSse } from './sse';
import { CallOptions, ChatCompletion, ChatCompletionChunk, ChatCompletionRequest, ChatMessage, EmbeddingsResponse, Usage, UpstreamError } from './types';

/** Anthropic requires max_tokens; used when the client sent none. */
export const ANTHROPIC_DEFAULT_MAX_TOKENS = 4096;

type AnthropicBlock = { type: 'text'; text: string } | { type: 'image'; source: { type: 'base64'; media_type: string; data: string } | { type: 'url'; url: string } };

export interface AnthropicMessagesRequest {
  model: string;
  messages: Array<{ role: 'user' | 'assistant'; content: string | AnthropicBlock[] }>;
  system?: string;
  max_tokens: number;
  temperature?: number;
  top_p?: number;
  stop_sequences?: string[];
  stream?: boolean;
  metadata?: { user_id: string };
}

export interface AnthropicMessage {
  id: string;
  type: 'message';
  role: 'assistant';
  model: string;
  content: Array<{ type: string; text?: string }>;
  stop_reason: string | null;
  usage: { input_tokens: number; output_tokens: number; cache_creation_input_tokens?: number | null; cache_read_input_tokens?: number | null };
}

/** Thrown for OpenAI request features the Messages API cannot express; mapped to a 400 by the gateway. */
export class UnsupportedRequestError extends UpstreamError {
  constructor(message: string, readonly param: string) {
    super(message, 'http', 400, undefined, { message, type: 'invalid_request_error', code: 'unsupported_parameter', param });
  }
}

function blocksOf(content: ChatMessage['content']): string | AnthropicBlock[] {
  if (content == null) return '';
  if (typeof content === 'string') return content;
  return content.map((part): AnthropicBlock => {
    if (part.type === 'text') return { type: 'text', text: String(part.text ?? '') };
    if (part.type === 'image_url') {
      const url = String((part as any).image_url?.url ?? '');
      const m = /^data:([^;,]+);base64,(.*)$/s.exec(url);
      if (m) return { type: 'image', source: { type: 'base64', media_type: m[1], data: m[2] } };
      return { type: 'image', source: { type: 'url', url } };
    }
    throw new UnsupportedRequestError(`content part type "${part.type}" is not supported for this model`, 'messages');
  });
}

function textOf(content: ChatMessage['content']): string {
  const b = blocksOf(content);
  if (typeof b === 'string') return b;
  return b.map((x) => (x.type === 'text' ? x.text : '')).join('');
}

export function toAnthropicRequest(req: ChatCompletionRequest, upstreamModel: string): AnthropicMessagesRequest {
  if (req.n !== undefined && req.n !== 1) throw new UnsupportedRequestError('n > 1 is not supported for this model', 'n');
  const system: string[] = [];
  const messages: AnthropicMessagesRequest['messages'] = [];
  for (const m of req.messages) {
    if (m.role === 'system' || m.role === 'developer') {
      system.push(textOf(m.content));
      continue;
    }
    if (m.role !== 'user' && m.role !== 'assistant') throw new UnsupportedRequestError(`role "${m.role}" is not supported for this model`, 'messages');
    const content = blocksOf(m.content);
    const last = messages[messages.length - 1];
    // The Messages API wants alternating roles: consecutive turns of one role are merged, appended in
    // place (copying the merged blocks per message was quadratic in a run of same-role messages).
    if (last && last.role === m.role) {
      if (typeof last.content === 'string') last.content = [{ type: 'text', text: last.content }];
      if (typeof content === 'string') last.content.push({ type: 'text', text: content });
      else for (const block of content) last.content.push(block);
    } else {
      messages.push({ role: m.role, content });
    }
  }
  const out: AnthropicMessagesRequest = {
    model: upstreamModel,
    messages,
    max_tokens: req.max_completion_tokens ?? req.max_tokens ?? ANTHROPIC_DEFAULT_MAX_TOKENS,
  };
  if (system.length) out.system = system.join('\n\n');
  // OpenAI's range is 0..2, Anthropic's 0..1: values above 1 are clamped to the highest Anthropic allows.
  if (req.temperature !== undefined) out.temperature = Math.min(req.temperature, 1);
  if (req.top_p !== undefined) out.top_p = req.top_p;
  if (req.stop !== undefined) out.stop_sequences = Array.isArray(req.stop) ? req.stop : [req.stop];
  if (req.user !== undefined) out.metadata = { user_id: req.user };
  return out;
}

export function finishReasonOf(stopReason: string | null | undefined): string | null {
  switch (stopReason) {
    case 'end_turn':
    case 'stop_sequence':
    case 'pause_turn':
      return 'stop';
    case 'max_tokens':
      return 'length';
    case 'tool_use':
      return 'tool_calls';
    case 'refusal':
      return 'content_filter';
    case null:
    case undefined:
      return null;
    default:
      return 'stop';
  }
}

function usageOf(u: Partial<AnthropicMessage['usage']> | undefined, outputTokens?: number): Usage {
  const prompt = (u?.input_tokens ?? 0) + (u?.cache_creation_input_tokens ?? 0) + (u?.cache_read_input_tokens ?? 0);
  const completion = outputTokens ?? u?.output_tokens ?? 0;
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

export function fromAnthropicMessage(msg: AnthropicMessage, publicModel: string, created = Math.floor(Date.now() / 1000)): ChatCompletion {
  const text = (msg.content ?? []).filter((b) => b.type === 'text').map((b) => b.text ?? '').join('');
  return {
    id: `chatcmpl-${msg.id}`,
    object: 'chat.completion',
    created,
    model: publicModel,
    choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: finishReasonOf(msg.stop_reason) }],
    usage: usageOf(msg.usage),
  };
}

/** Turns a Messages API event stream into OpenAI chunks; the last chunk carries usage and no choices. */
export async function* anthropicEventsToChunks(events: AsyncIterable<{ event: string; data: string }>, publicModel: string): AsyncGenerator<ChatCompletionChunk> {
  const created = Math.floor(Date.now() / 1000);
  let id = 'chatcmpl-anthropic';
  let startUsage: Partial<AnthropicMessage['usage']> | undefined;
  let outputTokens: number | undefined;
  const chunk = (delta: ChatCompletionChunk['choices'][0]['delta'], finish: string | null = null): ChatCompletionChunk => ({
    id,
    object: 'chat.completion.chunk',
    created,
    model: publicModel,
    choices: [{ index: 0, delta, finish_reason: finish }],
  });
  for await (const ev of events) {
    let data: any;
    try {
      data = JSON.parse(ev.data);
    } catch {
      throw new UpstreamError('upstream sent a stream event that is not JSON', 'protocol', 200);
    }
    const type = data?.type ?? ev.event;
    switch (type) {
      case 'message_start':
        id = `chatcmpl-${data.message?.id ?? 'anthropic'}`;
        startUsage = data.message?.usage;
        yield chunk({ role: 'assistant', content: '' });
        break;
      case 'content_block_start':
        if (data.content_block?.type === 'text' && data.content_block.text) yield chunk({ content: data.content_block.text });
        break;
      case 'content_block_delta':
        if (data.delta?.type === 'text_delta' && data.delta.text) yield chunk({ content: data.delta.text });
        break;
      case 'message_delta':
        if (data.usage?.output_tokens !== undefined) outputTokens = data.usage.output_tokens;
        if (data.usage?.input_tokens !== undefined) startUsage = { ...startUsage, input_tokens: data.usage.input_tokens };
        if (data.delta?.stop_reason !== undefined) yield chunk({}, finishReasonOf(data.delta.stop_reason));
        break;
      case 'message_stop':
        yield { id, object: 'chat.completion.chunk', created, model: publicModel, choices: [], usage: usageOf(startUsage, outputTokens) };
        return;
      case 'error':
        throw new UpstreamError(`upstream stream error: ${data.error?.message ?? 'unknown'}`, 'protocol', 200, undefined, data.error);
      default:
        // ping, content_block_stop, and event types added later carry nothing to forward
        break;
    }
  }
  throw new UpstreamError('upstream stream ended before message_stop', 'network', 200);
}

export class AnthropicClient implements LlmClient {
  private readonly http: UpstreamHttp;

  constructor(private readonly deployment: Pick<Deployment, 'baseUrl' | 'apiKey' | 'headers' | 'timeoutMs' | 'connections' | 'anthropicVersion'>) {
    this.http = new UpstreamHttp({
      baseUrl: deployment.baseUrl!,
      connections: deployment.connections,
      timeoutMs: deployment.timeoutMs,
      headers: {
        ...(deployment.apiKey ? { 'x-api-key': deployment.apiKey } : {}),
        'anthropic-version': deployment.anthropicVersion ?? '2023-06-01',
        ...deployment.headers,
      },
    });
  }

  /** `req.model` is the upstream model name; responses report it back unchanged (the router renames). */
  async chat(req: ChatCompletionRequest, opts: CallOptions = {}): Promise<ChatCompletion> {
    const { statusCode, body: msg } = await this.http.callJson<AnthropicMessage>('/messages', toAnthropicRequest(req, req.model), opts);
    if (!msg || !Array.isArray(msg.content)) throw new UpstreamError('upstream message has no content', 'protocol', statusCode);
    return fromAnthropicMessage(msg, req.model);
  }

  async chatStream(req: ChatCompletionRequest, opts: CallOptions = {}): Promise<AsyncIterable<ChatCompletionChunk>> {
    const res = await this.http.postJson('/messages', { ...toAnthropicRequest(req, req.model), stream: true }, opts);
    const timeoutMs = opts.timeoutMs ?? this.deployment.timeoutMs;
    return (async function* () {
      let finished = false;
      try {
        yield* anthropicEventsToChunks(parseSse(res.body), req.model);
        finished = true;
      } catch (e) {
        throw mapTransportError(e, opts.signal, undefined, timeoutMs);
      } finally {
        if (!finished) res.body.destroy();
        else res.body.resume();
      }
    })();
  }

  embeddings(): Promise<EmbeddingsResponse> {
    return Promise.reject(new UnsupportedRequestError('this deployment serves chat models only', 'model'));
  }

  close(): Promise<void> {
    return this.http.close();
  }
}
