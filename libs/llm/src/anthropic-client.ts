// Anthropic Messages API behind the OpenAI chat shape: request, response and stream translation.
// Mapping (Anthropic Messages API reference): function tools -> `tools` {name, description, input_schema};
// assistant `tool_calls` -> `tool_use` blocks; `tool` turns -> `tool_result` blocks at the start of one
// user turn; image parts -> `image` blocks (base64 or url source); system/developer -> `system`;
// `tool_use` back -> `tool_calls`, `input_json_delta` -> argument deltas, one chunk per event.
import { createHash } from 'crypto';
import { mapTransportError, UpstreamHttp, upstreamErrorBody } from './http';
import { LlmClient } from './llm-client';
import { Deployment } from './providers-file';
import { parseSse } from './sse';
import {
  CallOptions,
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionRequest,
  ChatMessage,
  EmbeddingsResponse,
  Usage,
  UpstreamError,
} from './types';

/** Anthropic requires max_tokens; used when the client sent none. */
export const ANTHROPIC_DEFAULT_MAX_TOKENS = 4096;

/** The image media types the Messages API accepts in a base64 source. */
export const ANTHROPIC_IMAGE_TYPES: readonly string[] = ['image/jpeg', 'image/png', 'image/gif', 'image/webp'];

type TextBlock = { type: 'text'; text: string };
type ImageBlock = {
  type: 'image';
  source: { type: 'base64'; media_type: string; data: string } | { type: 'url'; url: string };
};
type DocumentBlock = { type: 'document'; source: { type: 'base64'; media_type: 'application/pdf'; data: string } };
type ToolUseBlock = { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> };
type ToolResultBlock = { type: 'tool_result'; tool_use_id: string; content: string | Array<TextBlock | ImageBlock> };
type AnthropicBlock = TextBlock | ImageBlock | DocumentBlock | ToolUseBlock | ToolResultBlock;

export interface AnthropicTool {
  name: string;
  description?: string;
  input_schema: Record<string, unknown>;
}

export type AnthropicToolChoice =
  | { type: 'auto' | 'any'; disable_parallel_tool_use?: boolean }
  | { type: 'tool'; name: string; disable_parallel_tool_use?: boolean }
  | { type: 'none' };

/** Only these fields are ever sent: a field Anthropic does not know would be refused by the upstream. */
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
  tools?: AnthropicTool[];
  tool_choice?: AnthropicToolChoice;
}

export interface AnthropicMessage {
  id: string;
  type: 'message';
  role: 'assistant';
  model: string;
  content: Array<{ type: string; text?: string; id?: string; name?: string; input?: unknown }>;
  stop_reason: string | null;
  usage: {
    input_tokens: number;
    output_tokens: number;
    cache_creation_input_tokens?: number | null;
    cache_read_input_tokens?: number | null;
  };
}

/** The fields of a Messages API stream event that are read here (all optional: the upstream's JSON is not trusted). */
interface AnthropicStreamEvent {
  type?: string;
  index?: number;
  message?: { id?: string; usage?: Partial<AnthropicMessage['usage']> };
  content_block?: { type?: string; text?: string; id?: string; name?: string };
  delta?: { type?: string; text?: string; partial_json?: unknown; stop_reason?: string | null };
  usage?: {
    input_tokens?: number;
    output_tokens?: number;
    cache_creation_input_tokens?: number | null;
    cache_read_input_tokens?: number | null;
  };
  error?: unknown;
}

/** Thrown for OpenAI request features the Messages API cannot express; mapped to a 400 by the gateway. */
export class UnsupportedRequestError extends UpstreamError {
  constructor(
    message: string,
    readonly param: string,
  ) {
    super(message, 'http', 400, undefined, {
      message,
      type: 'invalid_request_error',
      code: 'unsupported_parameter',
      param,
    });
  }
}

const refuse = (message: string, param: string) => new UnsupportedRequestError(message, param);

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
/** The caller's JSON as text: absent is empty, an object shows as JSON rather than "[object Object]". */
const stringOf = (v: unknown): string => (typeof v === 'string' ? v : v == null ? '' : JSON.stringify(v));

/** `data:<type>;base64,<data>` split without a regex over the (possibly megabytes long) payload. */
function dataUrl(url: string): { mediaType: string; data: string } | undefined {
  if (!url.startsWith('data:')) return undefined;
  const comma = url.indexOf(',');
  if (comma < 0) return undefined;
  const meta = url.slice(5, comma);
  if (!meta.endsWith(';base64')) return undefined;
  const mediaType = meta.slice(0, -';base64'.length).toLowerCase();
  // `image/jpg` is common (and OpenAI takes it); Anthropic knows only the registered `image/jpeg`.
  return { mediaType: mediaType === 'image/jpg' ? 'image/jpeg' : mediaType, data: url.slice(comma + 1) };
}

function imageBlock(part: Record<string, unknown>, param: string): ImageBlock {
  const url = (part.image_url as { url?: unknown } | undefined)?.url;
  if (typeof url !== 'string' || url === '')
    throw refuse('image_url.url must be a URL or a data URL', `${param}.image_url.url`);
  const inline = dataUrl(url);
  if (inline) {
    if (!ANTHROPIC_IMAGE_TYPES.includes(inline.mediaType))
      throw refuse(
        `image type ${inline.mediaType} is not supported for this model (${ANTHROPIC_IMAGE_TYPES.join(', ')})`,
        `${param}.image_url.url`,
      );
    return { type: 'image', source: { type: 'base64', media_type: inline.mediaType, data: inline.data } };
  }
  if (url.startsWith('https://') || url.startsWith('http://')) return { type: 'image', source: { type: 'url', url } };
  throw refuse('image_url.url must be an http(s) URL or a base64 data URL', `${param}.image_url.url`);
}

function documentBlock(part: Record<string, unknown>, param: string): DocumentBlock {
  const file = isObject(part.file) ? part.file : {};
  const inline = typeof file.file_data === 'string' ? dataUrl(file.file_data) : undefined;
  if (!inline)
    throw refuse(
      'file parts need file_data as a base64 data URL for this model (file_id is not supported)',
      `${param}.file`,
    );
  if (inline.mediaType !== 'application/pdf')
    throw refuse(
      `file type ${inline.mediaType} is not supported for this model (application/pdf)`,
      `${param}.file.file_data`,
    );
  return { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: inline.data } };
}

/**
 * Content parts of one message as Anthropic blocks; `allowed` limits the part types the role may carry.
 * Empty text parts are dropped (Anthropic refuses empty text blocks), so the result may be `''` or `[]`.
 */
function blocksOf(
  content: ChatMessage['content'],
  param: string,
  allowed: ReadonlySet<string> = USER_PARTS,
): string | Array<TextBlock | ImageBlock | DocumentBlock> {
  if (content == null) return '';
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw refuse('content must be a string or an array of content parts', param);
  const blocks = content.map((part, j): TextBlock | ImageBlock | DocumentBlock => {
    const at = `${param}[${j}]`;
    const type = isObject(part) ? part.type : undefined;
    if (typeof type !== 'string' || !allowed.has(type))
      throw refuse(`content part type "${String(type)}" is not supported for this model in this message`, `${at}.type`);
    if (type === 'text') return { type: 'text', text: stringOf(part.text) };
    // An assistant's refusal part is its text as far as the next turn is concerned.
    if (type === 'refusal') return { type: 'text', text: stringOf((part as { refusal?: unknown }).refusal) };
    if (type === 'image_url') return imageBlock(part, at);
    return documentBlock(part, at);
  });
  return blocks.filter((x) => x.type !== 'text' || x.text !== '');
}

const USER_PARTS: ReadonlySet<string> = new Set(['text', 'image_url', 'file']);
const TEXT_PARTS: ReadonlySet<string> = new Set(['text']);
const ASSISTANT_PARTS: ReadonlySet<string> = new Set(['text', 'refusal']);

function textOf(content: ChatMessage['content'], param: string): string {
  const b = blocksOf(content, param, TEXT_PARTS);
  if (typeof b === 'string') return b;
  return b.map((x) => (x as TextBlock).text).join('');
}

/** Arguments of an assistant tool call as the object a tool_use block carries; not JSON or not an object: 400. */
function toolInput(args: unknown, param: string): Record<string, unknown> {
  if (isObject(args)) return args;
  if (typeof args !== 'string') throw refuse('function.arguments must be a JSON object in a string', param);
  // A tool without parameters is often called with empty arguments.
  if (args.trim() === '') return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(args);
  } catch {
    throw refuse('function.arguments is not valid JSON', param);
  }
  if (!isObject(parsed)) throw refuse('function.arguments must encode a JSON object', param);
  return parsed;
}

function toolOf(def: unknown, param: string): AnthropicTool {
  if (!isObject(def)) throw refuse('each tool must be an object', param);
  // Legacy `functions` entries are the function object itself.
  const fn =
    def.type === undefined && typeof def.name === 'string'
      ? def
      : def.type === 'function' && isObject(def.function)
        ? def.function
        : undefined;
  if (!fn)
    throw refuse(
      `tool type "${String(def.type)}" is not supported for this model (function tools only)`,
      `${param}.type`,
    );
  if (typeof fn.name !== 'string' || fn.name === '')
    throw refuse('function.name is required', `${param}.function.name`);
  const params = fn.parameters === undefined ? { type: 'object', properties: {} } : fn.parameters;
  if (!isObject(params) || (params.type !== undefined && params.type !== 'object'))
    throw refuse(
      'function.parameters must be a JSON Schema of type object for this model',
      `${param}.function.parameters`,
    );
  const tool: AnthropicTool = {
    name: fn.name,
    input_schema: params.type === undefined ? { type: 'object', ...params } : params,
  };
  if (typeof fn.description === 'string' && fn.description !== '') tool.description = fn.description;
  return tool;
}

function toolChoiceOf(choice: unknown, names: Set<string>, param: string, legacy: boolean): AnthropicToolChoice {
  if (choice === 'none') return { type: 'none' };
  if (choice === 'auto') return { type: 'auto' };
  if (choice === 'required' && !legacy) return { type: 'any' };
  // {type:'function', function:{name}} (tool_choice) or {name} (legacy function_call)
  const name = isObject(choice)
    ? legacy
      ? choice.name
      : choice.type === 'function' && isObject(choice.function)
        ? choice.function.name
        : undefined
    : undefined;
  if (typeof name !== 'string')
    throw refuse(
      `${param} must be ${legacy ? "'none', 'auto' or {name}" : "'none', 'auto', 'required' or {type:'function', function:{name}}"}`,
      param,
    );
  if (!names.has(name)) throw refuse(`${param} names a function that is not among the tools: ${name}`, param);
  return { type: 'tool', name };
}

const ANTHROPIC_TOOL_ID = /^[a-zA-Z0-9_-]+$/;

/**
 * A tool call id as Anthropic takes it (`^[a-zA-Z0-9_-]+$`; it answers 400 otherwise). OpenAI's
 * (`call_...`) pass unchanged; other providers' ids (`functions.get_weather:0`) reach an Anthropic
 * deployment when a conversation began elsewhere (failover, a model switch). Each is rewritten the same
 * way wherever it appears, so a tool_use and its tool_result still pair, and a hash of the original
 * keeps ids that differ only in refused characters apart.
 */
export function anthropicToolId(id: string): string {
  if (ANTHROPIC_TOOL_ID.test(id)) return id;
  const digest = createHash('sha256').update(id).digest('hex').slice(0, 12);
  return `${id.slice(0, 64).replace(/[^a-zA-Z0-9_-]/g, '_')}_${digest}`;
}

/** Fields of the OpenAI request that ask for something the Messages API cannot produce: refused, never dropped. */
function refuseUnsupported(req: ChatCompletionRequest): void {
  if (req.n !== undefined && req.n !== null && req.n !== 1) throw refuse('n > 1 is not supported for this model', 'n');
  if (req.logprobs === true) throw refuse('logprobs is not supported for this model', 'logprobs');
  if (typeof req.top_logprobs === 'number' && req.top_logprobs > 0)
    throw refuse('top_logprobs is not supported for this model', 'top_logprobs');
  if (req.audio != null) throw refuse('audio output is not supported for this model', 'audio');
  if (Array.isArray(req.modalities) && req.modalities.some((m) => m !== 'text'))
    throw refuse('only the text modality is supported for this model', 'modalities');
  if (req.web_search_options != null)
    throw refuse('web_search_options is not supported for this model', 'web_search_options');
  // The Messages API has no JSON mode: dropping it would answer prose to a caller that parses JSON.
  const rf = req.response_format as { type?: unknown } | null | undefined;
  if (rf != null && rf.type !== 'text')
    throw refuse(`response_format ${String(rf.type)} is not supported for this model (only text)`, 'response_format');
}

export function toAnthropicRequest(req: ChatCompletionRequest, upstreamModel: string): AnthropicMessagesRequest {
  refuseUnsupported(req);
  const legacy = req.tools == null && req.functions != null;
  const defs = legacy ? req.functions : req.tools;
  const defsParam = legacy ? 'functions' : 'tools';
  const tools =
    defs == null ? [] : Array.isArray(defs) ? defs.map((d, i) => toolOf(d, `${defsParam}[${i}]`)) : undefined;
  if (!tools) throw refuse(`${defsParam} must be an array`, defsParam);
  const names = new Set(tools.map((t) => t.name));

  const system: string[] = [];
  const messages: AnthropicMessagesRequest['messages'] = [];
  // Legacy function turns carry no ids: each assistant function_call gets one, its function reply uses it.
  let legacyCallId: string | undefined;
  const push = (role: 'user' | 'assistant', content: string | AnthropicBlock[]) => {
    // Anthropic refuses empty content: a turn with nothing in it is left out, and the merge below
    // keeps the roles alternating around it (user "a", assistant "", user "b" is one user turn).
    if (content.length === 0) return;
    const last = messages[messages.length - 1];
    // The Messages API wants alternating roles: consecutive turns of one role are merged, appended in
    // place (copying the merged blocks per message was quadratic in a run of same-role messages).
    if (last && last.role === role) {
      if (typeof last.content === 'string') last.content = [{ type: 'text', text: last.content }];
      if (typeof content === 'string') last.content.push({ type: 'text', text: content });
      else for (const block of content) last.content.push(block);
    } else {
      messages.push({ role, content });
    }
  };
  req.messages.forEach((m, i) => {
    const at = `messages[${i}]`;
    const role: string = m.role;
    switch (role) {
      case 'system':
      case 'developer':
        {
          const text = textOf(m.content, `${at}.content`);
          if (text !== '') system.push(text);
        }
        return;
      case 'user':
        push('user', blocksOf(m.content, `${at}.content`));
        return;
      case 'assistant': {
        const text = blocksOf(m.content, `${at}.content`, ASSISTANT_PARTS);
        const calls: ToolUseBlock[] = [];
        if (Array.isArray(m.tool_calls)) {
          m.tool_calls.forEach((c: unknown, k: number) => {
            const cp = `${at}.tool_calls[${k}]`;
            if (!isObject(c) || !isObject(c.function)) throw refuse('each tool call needs a function', cp);
            if (c.type !== undefined && c.type !== 'function')
              throw refuse(`tool call type "${stringOf(c.type)}" is not supported for this model`, `${cp}.type`);
            if (typeof c.id !== 'string' || c.id === '') throw refuse('tool call id is required', `${cp}.id`);
            if (typeof c.function.name !== 'string' || c.function.name === '')
              throw refuse('function.name is required', `${cp}.function.name`);
            calls.push({
              type: 'tool_use',
              id: anthropicToolId(c.id),
              name: c.function.name,
              input: toolInput(c.function.arguments, `${cp}.function.arguments`),
            });
          });
        } else if (isObject(m.function_call)) {
          const fc = m.function_call;
          if (typeof fc.name !== 'string' || fc.name === '')
            throw refuse('function_call.name is required', `${at}.function_call.name`);
          legacyCallId = `call_fn${i}`;
          calls.push({
            type: 'tool_use',
            id: legacyCallId,
            name: fc.name,
            input: toolInput(fc.arguments, `${at}.function_call.arguments`),
          });
        }
        if (calls.length === 0) {
          push('assistant', text);
          return;
        }
        // Anthropic refuses empty text blocks: a tool-calling turn without text is tool_use blocks only.
        const blocks: AnthropicBlock[] =
          typeof text === 'string'
            ? text === ''
              ? []
              : [{ type: 'text', text }]
            : text.filter((b) => b.type !== 'text' || b.text !== '');
        push('assistant', [...blocks, ...calls]);
        return;
      }
      case 'tool':
      case 'function': {
        const id = role === 'tool' ? m.tool_call_id : legacyCallId;
        if (typeof id !== 'string' || id === '') {
          throw refuse(
            role === 'tool'
              ? 'tool messages need tool_call_id'
              : 'a function message must follow an assistant function_call',
            role === 'tool' ? `${at}.tool_call_id` : at,
          );
        }
        const parts = blocksOf(m.content, `${at}.content`, TEXT_PARTS) as string | TextBlock[];
        const content = parts.length === 0 ? '' : parts;
        // Consecutive tool turns become one user turn whose tool_result blocks come first.
        push('user', [{ type: 'tool_result', tool_use_id: anthropicToolId(id), content }]);
        return;
      }
      default:
        throw refuse(`role "${role}" is not supported for this model`, `${at}.role`);
    }
  });

  if (messages.length === 0)
    throw refuse('messages must carry some non-empty user or assistant content for this model', 'messages');
  const out: AnthropicMessagesRequest = {
    model: upstreamModel,
    messages,
    max_tokens: req.max_completion_tokens ?? req.max_tokens ?? ANTHROPIC_DEFAULT_MAX_TOKENS,
  };
  if (system.length) out.system = system.join('\n\n');
  // OpenAI's range is 0..2, Anthropic's 0..1: values above 1 are clamped to the highest Anthropic allows.
  if (req.temperature != null) out.temperature = Math.min(req.temperature, 1);
  if (req.top_p != null) out.top_p = req.top_p;
  if (req.stop != null) {
    const stops = Array.isArray(req.stop) ? req.stop : [req.stop];
    // Anthropic refuses stop sequences of whitespace only ("\n\n"): a stop the answer would not honour is refused here.
    if (stops.some((x) => typeof x !== 'string' || x.trim() === ''))
      throw refuse('stop sequences made only of whitespace are not supported for this model', 'stop');
    out.stop_sequences = stops;
  }
  if (req.user != null) out.metadata = { user_id: req.user };

  const choiceParam = legacy ? 'function_call' : 'tool_choice';
  const choice = legacy ? req.function_call : req.tool_choice;
  if (tools.length) {
    out.tools = tools;
    // 'none' keeps the tools: Anthropic refuses tool_use/tool_result blocks in a request that defines none.
    const tc: AnthropicToolChoice =
      choice == null ? { type: 'auto' } : toolChoiceOf(choice, names, choiceParam, legacy);
    // A legacy function_call answer holds one call; parallel_tool_calls: false asks for at most one.
    if (tc.type !== 'none' && (legacy || req.parallel_tool_calls === false)) tc.disable_parallel_tool_use = true;
    if (choice != null || tc.type !== 'auto' || tc.disable_parallel_tool_use) out.tool_choice = tc;
  } else if (choice != null && choice !== 'none') {
    throw refuse(`${choiceParam} is only allowed when ${defsParam} are specified`, choiceParam);
  } else {
    // OpenAI takes a history with tool calls and no tools; Anthropic refuses tool blocks in a request
    // that defines no tools. The tools named in the history are declared, and none may be called.
    const used = new Set<string>();
    let toolBlocks = false;
    for (const msg of messages) {
      if (typeof msg.content === 'string') continue;
      for (const b of msg.content) {
        if (b.type === 'tool_use') used.add(b.name);
        if (b.type === 'tool_use' || b.type === 'tool_result') toolBlocks = true;
      }
    }
    if (toolBlocks) {
      out.tools = (used.size ? [...used] : ['tool']).map((name) => ({ name, input_schema: { type: 'object' } }));
      out.tool_choice = { type: 'none' };
    }
  }
  return out;
}

export function finishReasonOf(stopReason: string | null | undefined): string | null {
  switch (stopReason) {
    case 'end_turn':
    case 'stop_sequence':
    case 'pause_turn':
      return 'stop';
    case 'max_tokens':
    case 'model_context_window_exceeded':
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
  const usage: Usage = { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
  // Anthropic's cache reads and writes are OpenAI's cached_tokens / cache_write_tokens (both inside prompt_tokens).
  if (u?.cache_read_input_tokens != null || u?.cache_creation_input_tokens != null) {
    usage.prompt_tokens_details = {
      cached_tokens: u?.cache_read_input_tokens ?? 0,
      cache_write_tokens: u?.cache_creation_input_tokens ?? 0,
    };
  }
  return usage;
}

/** How the caller asked for tools: legacy `functions` get a `function_call` answer, anything else `tool_calls`. */
export type ToolCallStyle = 'tools' | 'functions';

export function toolCallStyleOf(req: ChatCompletionRequest): ToolCallStyle {
  return req.tools == null && req.functions != null ? 'functions' : 'tools';
}

export function fromAnthropicMessage(
  msg: AnthropicMessage,
  publicModel: string,
  created = Math.floor(Date.now() / 1000),
  style: ToolCallStyle = 'tools',
): ChatCompletion {
  const blocks = Array.isArray(msg.content) ? msg.content : [];
  const text = blocks
    .filter((b) => b.type === 'text')
    .map((b) => b.text ?? '')
    .join('');
  const calls = blocks
    .filter((b) => b.type === 'tool_use')
    .map((b) => ({
      id: String(b.id ?? ''),
      type: 'function' as const,
      function: { name: String(b.name ?? ''), arguments: JSON.stringify(b.input ?? {}) },
    }));
  const message: ChatCompletion['choices'][0]['message'] = {
    role: 'assistant',
    content: calls.length && text === '' ? null : text,
  };
  let finish = finishReasonOf(msg.stop_reason);
  if (calls.length && style === 'functions') {
    message.function_call = calls[0].function;
    if (finish === 'tool_calls') finish = 'function_call';
  } else if (calls.length) {
    message.tool_calls = calls;
  }
  return {
    id: `chatcmpl-${msg.id}`,
    object: 'chat.completion',
    created,
    model: publicModel,
    choices: [{ index: 0, message, finish_reason: finish }],
    usage: usageOf(msg.usage),
  };
}

/**
 * Turns a Messages API event stream into OpenAI chunks; the last chunk carries usage and no choices.
 * Each tool_use block becomes a `tool_calls` entry numbered 0, 1, ... in block order (not Anthropic's
 * block index, which also counts text blocks); its argument fragments are forwarded as they come.
 */
export async function* anthropicEventsToChunks(
  events: AsyncIterable<{ event: string; data: string }>,
  publicModel: string,
  style: ToolCallStyle = 'tools',
): AsyncGenerator<ChatCompletionChunk> {
  const created = Math.floor(Date.now() / 1000);
  let id = 'chatcmpl-anthropic';
  let startUsage: Partial<AnthropicMessage['usage']> | undefined;
  let outputTokens: number | undefined;
  /** Anthropic block index -> tool call index, for the tool_use blocks of this message. */
  const toolIndex = new Map<number, number>();
  const chunk = (
    delta: ChatCompletionChunk['choices'][0]['delta'],
    finish: string | null = null,
  ): ChatCompletionChunk => ({
    id,
    object: 'chat.completion.chunk',
    created,
    model: publicModel,
    choices: [{ index: 0, delta, finish_reason: finish }],
  });
  for await (const ev of events) {
    let data: AnthropicStreamEvent | null;
    try {
      data = JSON.parse(ev.data) as AnthropicStreamEvent | null;
    } catch {
      throw new UpstreamError('upstream sent a stream event that is not JSON', 'protocol', 200);
    }
    if (!data || typeof data !== 'object')
      throw new UpstreamError('upstream sent a stream event that is not a JSON object', 'protocol', 200);
    switch (data.type ?? ev.event) {
      case 'message_start':
        id = `chatcmpl-${data.message?.id ?? 'anthropic'}`;
        startUsage = data.message?.usage;
        yield chunk({ role: 'assistant', content: '' });
        break;
      case 'content_block_start': {
        const block = data.content_block;
        if (block?.type === 'text' && block.text) yield chunk({ content: block.text });
        if (block?.type === 'tool_use') {
          const index = toolIndex.size;
          toolIndex.set(Number(data.index), index);
          // A legacy function_call answer holds one call: later tool_use blocks have no place in it.
          if (style === 'functions') {
            if (index === 0) yield chunk({ function_call: { name: String(block.name ?? ''), arguments: '' } });
          } else {
            yield chunk({
              tool_calls: [
                {
                  index,
                  id: String(block.id ?? ''),
                  type: 'function',
                  function: { name: String(block.name ?? ''), arguments: '' },
                },
              ],
            });
          }
        }
        break;
      }
      case 'content_block_delta':
        if (data.delta?.type === 'text_delta' && data.delta.text) yield chunk({ content: data.delta.text });
        if (
          data.delta?.type === 'input_json_delta' &&
          typeof data.delta.partial_json === 'string' &&
          data.delta.partial_json !== ''
        ) {
          const index = toolIndex.get(Number(data.index));
          if (index === undefined)
            throw new UpstreamError('upstream sent tool input for a block that is not a tool_use', 'protocol', 200);
          if (style === 'functions') {
            if (index === 0) yield chunk({ function_call: { arguments: data.delta.partial_json } });
          } else {
            yield chunk({ tool_calls: [{ index, function: { arguments: data.delta.partial_json } }] });
          }
        }
        break;
      case 'message_delta':
        if (data.usage?.output_tokens !== undefined) outputTokens = data.usage.output_tokens;
        if (data.usage?.input_tokens !== undefined)
          startUsage = { ...startUsage, input_tokens: data.usage.input_tokens };
        // message_delta's usage is cumulative: cache figures it carries replace message_start's.
        if (data.usage?.cache_read_input_tokens != null)
          startUsage = { ...startUsage, cache_read_input_tokens: data.usage.cache_read_input_tokens };
        if (data.usage?.cache_creation_input_tokens != null)
          startUsage = { ...startUsage, cache_creation_input_tokens: data.usage.cache_creation_input_tokens };
        if (data.delta?.stop_reason !== undefined) {
          const finish = finishReasonOf(data.delta.stop_reason);
          yield chunk({}, style === 'functions' && finish === 'tool_calls' ? 'function_call' : finish);
        }
        break;
      case 'message_stop':
        yield {
          id,
          object: 'chat.completion.chunk',
          created,
          model: publicModel,
          choices: [],
          usage: usageOf(startUsage, outputTokens),
        };
        return;
      case 'error': {
        const err = upstreamErrorBody(data.error);
        throw new UpstreamError(`upstream stream error: ${err?.message ?? 'unknown'}`, 'protocol', 200, undefined, err);
      }
      default:
        // ping, content_block_stop, and event types added later carry nothing to forward
        break;
    }
  }
  throw new UpstreamError('upstream stream ended before message_stop', 'network', 200);
}

export class AnthropicClient implements LlmClient {
  private readonly http: UpstreamHttp;

  constructor(
    private readonly deployment: Pick<
      Deployment,
      'baseUrl' | 'apiKey' | 'headers' | 'timeoutMs' | 'connections' | 'anthropicVersion'
    > & { connectionsPerKey?: number },
  ) {
    this.http = new UpstreamHttp({
      baseUrl: deployment.baseUrl!,
      connections: deployment.connections,
      connectionsPerKey: deployment.connectionsPerKey,
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
    const { statusCode, body: msg } = await this.http.callJson<AnthropicMessage>(
      '/messages',
      toAnthropicRequest(req, req.model),
      opts,
    );
    if (!msg || !Array.isArray(msg.content))
      throw new UpstreamError('upstream message has no content', 'protocol', statusCode);
    return fromAnthropicMessage(msg, req.model, undefined, toolCallStyleOf(req));
  }

  async chatStream(req: ChatCompletionRequest, opts: CallOptions = {}): Promise<AsyncIterable<ChatCompletionChunk>> {
    const res = await this.http.postJson('/messages', { ...toAnthropicRequest(req, req.model), stream: true }, opts);
    const timeoutMs = opts.timeoutMs ?? this.deployment.timeoutMs;
    const style = toolCallStyleOf(req);
    return (async function* () {
      let finished = false;
      try {
        yield* anthropicEventsToChunks(parseSse(res.body), req.model, style);
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
