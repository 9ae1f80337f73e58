// POST /v1/responses request -> the internal chat request (OpenAI Chat Completions wire shape) the
// chat pipeline runs. `item_reference` items and `previous_response_id` are resolved against the
// stored responses first (responses.repository.ts); what arrives here is the whole input. Every refusal is
// a 400 whose `param` names the field or item, as OpenAI answers.
import { GatewayError, GatewayErrorCode, type GatewayValidationCode } from '../errors';
import { KNOWN_CHAT_FIELDS, type ChatCompletionRequest, type ChatMessage } from '@app/llm';
import { checkUnknown } from '../chat/chat-shape';
import type { ResolvedInput } from './responses.repository';

export const MAX_INPUT_ITEMS = 4096;
export const MAX_CONTENT_PARTS = 256;
export const MAX_TOOLS = 128;
export const MAX_SCHEMA_DEPTH = 32;
const MAX_NAME = 64;
const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const IMAGE_URL = /^(https?:|data:image\/)/i;

/** Accepted and not forwarded (`store` decides what the gateway keeps): no hosted tools, no logprobs or reasoning items. */
const IGNORED_FIELDS = new Set([
  'store',
  'metadata',
  'include',
  'truncation',
  'service_tier',
  'prompt_cache_key',
  'prompt_cache_retention',
  'safety_identifier',
  'top_logprobs',
  'max_tool_calls',
  'stream_options',
  'background',
]);
const FIELDS = new Set([
  'model',
  'input',
  'instructions',
  'tools',
  'tool_choice',
  'parallel_tool_calls',
  'max_output_tokens',
  'temperature',
  'top_p',
  'text',
  'reasoning',
  'stream',
  'user',
  'previous_response_id',
  'conversation',
  'prompt',
  ...IGNORED_FIELDS,
]);
/**
 * Chat Completions fields: not Responses fields, and carried into the chat request they would be read
 * by the chat pipeline as its own (`n`, `max_tokens`, `messages`, ...) without chat's checks. Refused as
 * unknown parameters, as OpenAI's Responses API refuses them.
 */
const CHAT_ONLY_FIELDS = new Set<string>(KNOWN_CHAT_FIELDS.filter((f) => !FIELDS.has(f)));

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A 400 naming the field (`param`), as OpenAI answers; the responses folder's one way to refuse a value. */
export function invalid(
  message: string,
  param: string,
  code: GatewayValidationCode = GatewayErrorCode.InvalidValue,
): GatewayError {
  return new GatewayError(code, { message, param });
}

function str(v: unknown, param: string, opts: { min?: number; max?: number } = {}): string {
  if (typeof v !== 'string') throw invalid(`${param} must be a string`, param, GatewayErrorCode.InvalidType);
  if (v.length < (opts.min ?? 0)) throw invalid(`${param} must not be empty`, param);
  if (opts.max !== undefined && v.length > opts.max)
    throw invalid(`${param} must be at most ${opts.max} characters`, param);
  return v;
}

function num(v: unknown, param: string, min: number, max: number, integer = false): number {
  if (typeof v !== 'number' || !Number.isFinite(v) || (integer && !Number.isInteger(v)))
    throw invalid(`${param} must be ${integer ? 'an integer' : 'a number'}`, param, GatewayErrorCode.InvalidType);
  if (v < min || v > max) throw invalid(`${param} must be between ${min} and ${max}`, param);
  return v;
}

function bool(v: unknown, param: string): boolean {
  if (typeof v !== 'boolean') throw invalid(`${param} must be a boolean`, param, GatewayErrorCode.InvalidType);
  return v;
}

/** A JSON schema object no deeper than MAX_SCHEMA_DEPTH (the body's own depth limit is larger). */
function schema(v: unknown, param: string): Obj {
  if (!isObj(v)) throw invalid(`${param} must be a JSON schema object`, param, GatewayErrorCode.InvalidType);
  const stack: Array<[unknown, number]> = [[v, 1]];
  while (stack.length) {
    const [node, depth] = stack.pop()!;
    if (depth > MAX_SCHEMA_DEPTH) throw invalid(`${param} is nested deeper than ${MAX_SCHEMA_DEPTH} levels`, param);
    if (typeof node === 'object' && node !== null)
      for (const child of Object.values(node)) stack.push([child, depth + 1]);
  }
  return v;
}

/** The text of content parts that may only carry text (assistant turns, system, tool output). */
function joinText(parts: Obj[], param: string, allowed: readonly string[]): string {
  return parts
    .map((p, j) => {
      if (!allowed.includes(p.type as string))
        throw invalid(
          `${param}[${j}].type ${JSON.stringify(p.type)} is not allowed here (expected ${allowed.join(', ')})`,
          `${param}[${j}].type`,
        );
      return str(
        p.type === 'refusal' ? p.refusal : p.text,
        `${param}[${j}].${p.type === 'refusal' ? 'refusal' : 'text'}`,
      );
    })
    .join('');
}

function partsOf(content: unknown, param: string): Obj[] {
  if (!Array.isArray(content) || content.length === 0)
    throw invalid(
      `${param} must be a string or a non-empty array of content parts`,
      param,
      GatewayErrorCode.InvalidType,
    );
  if (content.length > MAX_CONTENT_PARTS) throw invalid(`${param} has more than ${MAX_CONTENT_PARTS} parts`, param);
  content.forEach((p, j) => {
    if (!isObj(p) || typeof p.type !== 'string')
      throw invalid(
        `${param}[${j}] must be a content part object with a type`,
        `${param}[${j}]`,
        GatewayErrorCode.InvalidType,
      );
  });
  return content as Obj[];
}

/**
 * User content as forwarded (chat form) and as stored (Responses form, only the fields that were
 * forwarded): text stays a string when that is all there is; images and files become chat parts.
 * Adjacent text parts are one stored part, so a stored row holds no more objects than the images
 * and files it carries (each paid for as image or file tokens).
 */
function userContent(content: unknown, param: string): { chat: ChatMessage['content']; stored: string | Obj[] } {
  if (typeof content === 'string') return { chat: content, stored: content };
  const parts = partsOf(content, param);
  if (parts.every((p) => p.type === 'input_text')) {
    const text = joinText(parts, param, ['input_text']);
    return { chat: text, stored: text };
  }
  const stored: Obj[] = [];
  const chat = parts.map((p, j) => {
    const at = `${param}[${j}]`;
    switch (p.type) {
      case 'input_text': {
        const text = str(p.text, `${at}.text`);
        const last = stored[stored.length - 1];
        if (last?.type === 'input_text') last.text = (last.text as string) + text;
        else stored.push({ type: 'input_text', text });
        return { type: 'text', text };
      }
      case 'input_image': {
        if (p.file_id != null)
          throw invalid(
            `${at}.file_id is not supported (this gateway stores no files): send image_url as an https URL or a data:image/... URL instead`,
            `${at}.file_id`,
            GatewayErrorCode.UnsupportedParameter,
          );
        const url = str(p.image_url, `${at}.image_url`, { min: 1 });
        // Same rule as chat image parts (chat-shape.ts): no file:, ftp: or other schemes reach an upstream.
        if (!IMAGE_URL.test(url))
          throw invalid(`${at}.image_url must be an http(s) URL or a data:image/... URL`, `${at}.image_url`);
        const detail = p.detail ?? 'auto';
        if (!['auto', 'low', 'high'].includes(detail as string))
          throw invalid(`${at}.detail must be one of auto, low, high`, `${at}.detail`);
        stored.push({ type: 'input_image', image_url: url, detail });
        return { type: 'image_url', image_url: { url, detail } };
      }
      case 'input_file': {
        if (p.file_id != null)
          throw invalid(
            `${at}.file_id is not supported (this gateway stores no files): send file_data (the file as a base64 data URL) instead`,
            `${at}.file_id`,
            GatewayErrorCode.UnsupportedParameter,
          );
        if (p.file_url != null)
          throw invalid(
            `${at}.file_url is not supported (the gateway fetches no files for the model): send file_data (the file as a base64 data URL) instead`,
            `${at}.file_url`,
            GatewayErrorCode.UnsupportedParameter,
          );
        const file: Obj = { file_data: str(p.file_data, `${at}.file_data`, { min: 1 }) };
        if (p.filename != null) file.filename = str(p.filename, `${at}.filename`, { max: 256 });
        stored.push({ type: 'input_file', ...file });
        return { type: 'file', file };
      }
      default:
        throw invalid(
          `${at}.type ${JSON.stringify(p.type)} is not a supported input content part (input_text, input_image, input_file)`,
          `${at}.type`,
        );
    }
  });
  return { chat, stored };
}

/** A message item as the chat message forwarded and the item stored (`{role, content}`, nothing else of what was sent). */
function messageItem(item: Obj, param: string): { message: ChatMessage; stored: Obj } {
  const role = item.role;
  const content = item.content;
  switch (role) {
    case 'user': {
      const c = userContent(content, `${param}.content`);
      return { message: { role: 'user', content: c.chat }, stored: { role, content: c.stored } };
    }
    case 'system':
    case 'developer': {
      // Developer and system instructions mean the same to a chat model; `system` is what every upstream type knows.
      const text =
        typeof content === 'string'
          ? content
          : joinText(partsOf(content, `${param}.content`), `${param}.content`, ['input_text']);
      return { message: { role: 'system', content: text }, stored: { role, content: text } };
    }
    case 'assistant': {
      const text =
        typeof content === 'string'
          ? content
          : joinText(partsOf(content, `${param}.content`), `${param}.content`, [
              'output_text',
              'refusal',
              'input_text',
            ]);
      return { message: { role: 'assistant', content: text }, stored: { role, content: text } };
    }
    default:
      throw invalid(`${param}.role must be one of user, assistant, system, developer`, `${param}.role`);
  }
}

function toolOutput(output: unknown, param: string): string {
  if (typeof output === 'string') return output;
  return joinText(partsOf(output, param), param, ['input_text', 'output_text']);
}

/** The input as chat messages (forwarded) and as the items stored with the response. */
export interface TranslatedInput {
  messages: ChatMessage[];
  /**
   * The input items reduced to what was forwarded (messages as `{role, content}` with text joined,
   * calls and outputs with their forwarded fields; reasoning items dropped): a stored response keeps
   * nothing the upstream did not receive and bill.
   */
  items: Obj[];
}

/**
 * `input` items -> chat messages: function calls join the assistant turn before them; outputs become
 * tool turns. The first `prefix` items came from previous_response_id (refusals name that field);
 * the rest are the caller's, numbered as the caller sent them.
 */
export function translateInput(input: unknown, prefix = 0): TranslatedInput {
  if (typeof input === 'string') {
    if (input.length === 0) throw invalid('input must not be empty', 'input');
    return { messages: [{ role: 'user', content: input }], items: [{ role: 'user', content: input }] };
  }
  if (!Array.isArray(input) || input.length === 0)
    throw invalid(
      'input must be a string or a non-empty array of items',
      'input',
      input === undefined ? GatewayErrorCode.MissingParameter : GatewayErrorCode.InvalidType,
    );
  if (input.length > MAX_INPUT_ITEMS) throw invalid(`input has more than ${MAX_INPUT_ITEMS} items`, 'input');
  const messages: ChatMessage[] = [];
  const items: Obj[] = [];
  const calls = new Set<string>();
  input.forEach((item, i) => {
    const param = i < prefix ? `previous_response_id` : `input[${i - prefix}]`;
    if (!isObj(item)) throw invalid(`${param} must be an object`, param, GatewayErrorCode.InvalidType);
    const type = item.type ?? (item.role !== undefined ? 'message' : undefined);
    switch (type) {
      case 'message': {
        const { message, stored } = messageItem(item, param);
        messages.push(message);
        items.push(stored);
        return;
      }
      case 'function_call': {
        const callId = str(item.call_id, `${param}.call_id`, { min: 1, max: 256 });
        const name = str(item.name, `${param}.name`, { min: 1, max: MAX_NAME });
        const args = str(item.arguments, `${param}.arguments`);
        const call = { id: callId, type: 'function', function: { name, arguments: args } };
        calls.add(callId);
        items.push({ type: 'function_call', call_id: callId, name, arguments: args });
        const last = messages[messages.length - 1];
        // One assistant turn may say something and call several tools: consecutive items join it.
        // push, not a copy per call: a run of MAX_INPUT_ITEMS calls stays linear.
        if (last?.role === 'assistant') {
          if (Array.isArray(last.tool_calls)) (last.tool_calls as unknown[]).push(call);
          else last.tool_calls = [call];
        } else messages.push({ role: 'assistant', content: null, tool_calls: [call] });
        return;
      }
      case 'function_call_output': {
        const callId = str(item.call_id, `${param}.call_id`, { min: 1, max: 256 });
        if (!calls.has(callId))
          throw invalid(
            `No tool call found for function call output with call_id ${callId} (${param}); the function_call item must come earlier in input`,
            `${param}.call_id`,
          );
        const output = toolOutput(item.output, `${param}.output`);
        messages.push({ role: 'tool', tool_call_id: callId, content: output });
        items.push({ type: 'function_call_output', call_id: callId, output });
        return;
      }
      case 'reasoning':
        // A chat upstream reasons afresh; earlier reasoning items carry nothing it could read (nor are they stored).
        return;
      case 'item_reference':
        // Resolved before translation (CreateResponse); one left here refers to nothing stored.
        throw new GatewayError(GatewayErrorCode.InputItemNotFound, { id: String(item.id), param });
      default:
        throw invalid(
          `${param}: item type ${JSON.stringify(type)} is not supported (message, function_call, function_call_output, reasoning)`,
          `${param}.type`,
        );
    }
  });
  if (!messages.some((m) => m.role !== 'system'))
    throw invalid('input must contain at least one message that is not system or developer', 'input');
  return { messages, items };
}

function tools(v: unknown): unknown[] {
  if (!Array.isArray(v)) throw invalid('tools must be an array', 'tools', GatewayErrorCode.InvalidType);
  if (v.length > MAX_TOOLS) throw invalid(`tools has more than ${MAX_TOOLS} entries`, 'tools');
  return v.map((t, i) => {
    const param = `tools[${i}]`;
    if (!isObj(t)) throw invalid(`${param} must be an object`, param, GatewayErrorCode.InvalidType);
    if (t.type !== 'function')
      throw invalid(
        `${param}.type ${JSON.stringify(t.type)} is not supported: hosted tools (web_search, file_search, code_interpreter, ...) run only at OpenAI; define a function tool and run it yourself instead`,
        `${param}.type`,
        GatewayErrorCode.UnsupportedParameter,
      );
    const name = str(t.name, `${param}.name`, { min: 1 });
    if (!TOOL_NAME.test(name))
      throw invalid(`${param}.name must be 1 to 64 letters, digits, underscores or dashes`, `${param}.name`);
    const fn: Obj = { name };
    if (t.description != null) fn.description = str(t.description, `${param}.description`, { max: 16_384 });
    if (t.parameters != null) fn.parameters = schema(t.parameters, `${param}.parameters`);
    if (t.strict != null) fn.strict = bool(t.strict, `${param}.strict`);
    return { type: 'function', function: fn };
  });
}

function toolChoice(v: unknown): unknown {
  if (v === 'none' || v === 'auto' || v === 'required') return v;
  if (isObj(v) && v.type === 'function')
    return { type: 'function', function: { name: str(v.name, 'tool_choice.name', { min: 1, max: MAX_NAME }) } };
  throw invalid('tool_choice must be none, auto, required or {"type":"function","name":...}', 'tool_choice');
}

/** Up to 16 string values of at most 512 characters under keys of at most 64 (OpenAI's limits): it is echoed and stored, never forwarded. */
function metadata(v: unknown): void {
  if (!isObj(v)) throw invalid('metadata must be an object', 'metadata', GatewayErrorCode.InvalidType);
  const keys = Object.keys(v);
  if (keys.length > 16) throw invalid('metadata must have at most 16 keys', 'metadata');
  for (const k of keys) {
    if (k.length > 64) throw invalid('metadata keys must be at most 64 characters', 'metadata');
    str(v[k], `metadata.${k}`, { max: 512 });
  }
}

/** The `text.format` an answer echoes: the checked format's own fields only (it is stored with the response). */
function echoFormat(text: unknown): Obj {
  const f = isObj(text) && isObj(text.format) ? text.format : undefined;
  if (!f || f.type === 'text') return { type: 'text' };
  if (f.type === 'json_object') return { type: 'json_object' };
  const out: Obj = { type: 'json_schema', name: f.name, schema: f.schema };
  if (f.description != null) out.description = f.description;
  out.strict = f.strict ?? null;
  return out;
}

function responseFormat(text: unknown): unknown {
  if (!isObj(text)) throw invalid('text must be an object', 'text', GatewayErrorCode.InvalidType);
  for (const k of Object.keys(text))
    if (k !== 'format' && k !== 'verbosity')
      throw invalid(`Unknown parameter: 'text.${k}'.`, `text.${k}`, GatewayErrorCode.UnknownParameter);
  if (text.verbosity != null && !['low', 'medium', 'high'].includes(text.verbosity as string))
    throw invalid('text.verbosity must be one of low, medium, high', 'text.verbosity');
  const f = text.format;
  if (f == null) return undefined;
  if (!isObj(f)) throw invalid('text.format must be an object', 'text.format', GatewayErrorCode.InvalidType);
  switch (f.type) {
    case 'text':
      return undefined;
    case 'json_object':
      return { type: 'json_object' };
    case 'json_schema': {
      const name = str(f.name, 'text.format.name', { min: 1 });
      if (!TOOL_NAME.test(name))
        throw invalid('text.format.name must be 1 to 64 letters, digits, underscores or dashes', 'text.format.name');
      const js: Obj = { name, schema: schema(f.schema, 'text.format.schema') };
      if (f.description != null) js.description = str(f.description, 'text.format.description', { max: 16_384 });
      if (f.strict != null) js.strict = bool(f.strict, 'text.format.strict');
      return { type: 'json_schema', json_schema: js };
    }
    default:
      throw invalid('text.format.type must be one of text, json_object, json_schema', 'text.format.type');
  }
}

/** The function tools as a Response object lists them: `parameters` and `strict` are always there (null when not given). */
/** The checked tool_choice in the Responses shape (`{type:'function', name}`), `auto` when none was sent. */
function echoToolChoice(v: unknown): unknown {
  if (isObj(v) && isObj(v.function)) return { type: 'function', name: v.function.name };
  return v ?? 'auto';
}

function echoTools(v: unknown): Obj[] {
  if (!Array.isArray(v)) return [];
  return (v as Obj[]).map((t) => {
    const tool: Obj = { type: 'function', name: t.name };
    if (t.description != null) tool.description = t.description;
    tool.parameters = t.parameters ?? null;
    tool.strict = t.strict ?? null;
    return tool;
  });
}

/** The validated Responses request as the internal chat request, plus what the answer echoes back. */
export interface TranslatedResponsesRequest {
  chat: ChatCompletionRequest;
  echo: Obj;
  /** The input items to store with the response (TranslatedInput.items). */
  items: Obj[];
}

/** The chat request without its messages. */
type ChatParams = Partial<ChatCompletionRequest> & { model: string };

/** Every field of a Responses request but `input`, validated: the chat request without its messages. */
export interface ResponsesParams {
  chat: ChatParams;
  body: Obj;
}

/**
 * Checks every field but `input` (no stored data needed): run before references to stored responses
 * are resolved, so a request refused for a field, its model, scope or budget never loads them.
 */
export function responsesParams(body: unknown): ResponsesParams {
  if (!isObj(body)) throw invalid('The request body must be a JSON object', 'body', GatewayErrorCode.InvalidType);
  const unknown = unknownFields(body);
  if (body.conversation != null)
    throw new GatewayError(GatewayErrorCode.ConversationNotStored, { param: 'conversation' });
  if (body.prompt != null)
    throw invalid(
      "prompt (stored prompt templates) is not supported: send the template's text as instructions and input",
      'prompt',
      GatewayErrorCode.UnsupportedParameter,
    );
  if (body.background != null && bool(body.background, 'background'))
    throw invalid(
      'background: true is not supported (no background runs to poll here): send the request without background, with stream: true for a long answer',
      'background',
      GatewayErrorCode.UnsupportedParameter,
    );
  if (body.store != null) bool(body.store, 'store');
  if (body.metadata != null) metadata(body.metadata);
  if (body.truncation != null && body.truncation !== 'auto' && body.truncation !== 'disabled')
    throw invalid('truncation must be one of auto, disabled', 'truncation');
  if (body.include != null && !Array.isArray(body.include))
    throw invalid('include must be an array', 'include', GatewayErrorCode.InvalidType);

  const chat: ChatParams = { model: str(body.model, 'model', { min: 1, max: 128 }) };
  if (body.instructions != null) str(body.instructions, 'instructions');
  if (body.tools != null) {
    const t = tools(body.tools);
    if (t.length) chat.tools = t;
  }
  if (body.tool_choice != null) chat.tool_choice = toolChoice(body.tool_choice);
  if (body.parallel_tool_calls != null)
    chat.parallel_tool_calls = bool(body.parallel_tool_calls, 'parallel_tool_calls');
  if (body.max_output_tokens != null)
    chat.max_completion_tokens = num(body.max_output_tokens, 'max_output_tokens', 1, Number.MAX_SAFE_INTEGER, true);
  if (body.temperature != null) chat.temperature = num(body.temperature, 'temperature', 0, 2);
  if (body.top_p != null) chat.top_p = num(body.top_p, 'top_p', 0, 1);
  if (body.user != null) chat.user = str(body.user, 'user', { max: 256 });
  if (body.text != null) {
    const format = responseFormat(body.text);
    if (format) chat.response_format = format;
  }
  if (body.reasoning != null) {
    if (!isObj(body.reasoning)) throw invalid('reasoning must be an object', 'reasoning', GatewayErrorCode.InvalidType);
    const effort = body.reasoning.effort;
    if (effort != null) {
      if (!['none', 'minimal', 'low', 'medium', 'high'].includes(effort as string))
        throw invalid('reasoning.effort must be one of none, minimal, low, medium, high', 'reasoning.effort');
      chat.reasoning_effort = effort;
    }
  }
  if (body.stream != null) chat.stream = bool(body.stream, 'stream');
  // Carried into the chat request as chat carries its own unknown fields: each OpenAI-type deployment's
  // unknownFields policy forwards or drops them (openai-client.ts); the Anthropic translation never sends them.
  for (const k of Object.keys(unknown))
    Object.defineProperty(chat, k, { value: unknown[k], enumerable: true, writable: true, configurable: true });
  return { chat, body };
}

/**
 * Top-level fields the gateway does not know (newer Responses fields such as `moderation`,
 * `prompt_cache_options`, `context_management`): bounded exactly as chat's are (count, size, depth, no
 * length, cost or routing levers; chat-shape.ts checkUnknown), refused when they are Chat Completions fields.
 */
function unknownFields(body: Obj): Obj {
  const unknown = Object.create(null) as Obj;
  for (const k of Object.keys(body)) {
    if (FIELDS.has(k)) continue;
    if (CHAT_ONLY_FIELDS.has(k))
      throw invalid(
        `Unknown parameter: '${k}'. (a Chat Completions field; the Responses API does not take it)`,
        k,
        GatewayErrorCode.UnknownParameter,
      );
    Object.defineProperty(unknown, k, { value: body[k], enumerable: true, writable: true, configurable: true });
  }
  const problem = checkUnknown(unknown);
  if (problem) throw invalid(problem.message, problem.param);
  return unknown;
}

/**
 * The checked request with its input: `resolved` is the input with its item references and previous
 * response expanded (ResponsesRepository); `stored`: whether this response will be stored (echoed as `store`).
 */
export function withInput(
  params: ResponsesParams,
  opts: { resolved?: ResolvedInput; stored?: boolean } = {},
): TranslatedResponsesRequest {
  const { body } = params;
  if (body.previous_response_id != null && !opts.resolved)
    throw new GatewayError(GatewayErrorCode.PreviousResponseNotFound, {
      id:
        typeof body.previous_response_id === 'string'
          ? body.previous_response_id
          : JSON.stringify(body.previous_response_id),
    });
  const { messages, items } = opts.resolved
    ? translateInput(opts.resolved.input, opts.resolved.prefix)
    : translateInput(body.input);
  if (body.instructions != null) messages.unshift({ role: 'system', content: body.instructions as string });
  const chat: ChatCompletionRequest = { ...params.chat, messages };
  const echo: Obj = {
    instructions: body.instructions ?? null,
    max_output_tokens: body.max_output_tokens ?? null,
    metadata: body.metadata ?? {},
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    previous_response_id: body.previous_response_id ?? null,
    store: opts.stored === true,
    temperature: body.temperature ?? 1,
    // Echoed from the checked values, never the caller's objects as sent: the echo is stored with the response.
    text: { format: echoFormat(body.text) },
    tool_choice: echoToolChoice(params.chat.tool_choice),
    tools: echoTools(body.tools),
    top_p: body.top_p ?? 1,
    truncation: body.truncation ?? 'disabled',
  };
  // `user` is a string in a Response object when given, absent otherwise (never null).
  if (body.user != null) echo.user = body.user;
  return { chat, echo, items };
}

/** responsesParams and withInput in one step (a request without stored references, and the unit specs). */
export function translateResponsesRequest(
  body: unknown,
  opts: { resolved?: ResolvedInput; stored?: boolean } = {},
): TranslatedResponsesRequest {
  return withInput(responsesParams(body), opts);
}
