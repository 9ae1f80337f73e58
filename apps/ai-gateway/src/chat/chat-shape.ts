// The structured parts of a Chat Completions request (messages, content parts, tools, tool_choice,
// legacy functions, response_format, ...) checked by hand against OpenAI's current API reference:
// unions (string | null | parts, 'auto' | {type:'function', ...}) are awkward in class-validator, and
// a hand check names the exact offending path (`messages.0.content.1.image_url.url`) as `param`.
// Every check is bounded: list lengths, JSON depth of schemas, and the total of unknown fields.

import { KNOWN_CHAT_FIELDS } from '@app/llm';

export { KNOWN_CHAT_FIELDS };
const KNOWN = new Set<string>(KNOWN_CHAT_FIELDS);

export const MAX_MESSAGES = 4096;
/**
 * Object members a chat (or Responses) body may have (JsonMembersLimit; other routes keep MAX_JSON_MEMBERS,
 * 10 000): room for MAX_MESSAGES messages with their parts and tool calls, MAX_TOOLS tools with their
 * schemas and a structured output schema of OpenAI's 5 000 properties. Validation walks each member.
 */
export const MAX_CHAT_JSON_MEMBERS = 65_536;
/** Content parts in one message. */
export const MAX_PARTS = 256;
/** Tools (and legacy functions) per request: OpenAI's own limit. */
export const MAX_TOOLS = 128;
/** tool_calls in one assistant message. */
export const MAX_TOOL_CALLS = 128;
/** Nesting depth of a JSON schema (`tools[].function.parameters`, `response_format.json_schema.schema`). */
export const MAX_SCHEMA_DEPTH = 32;
/** Unknown top-level fields: how many, their total JSON size and nesting depth. */
export const MAX_UNKNOWN_FIELDS = 32;
export const MAX_UNKNOWN_BYTES = 32 * 1024;
export const MAX_UNKNOWN_DEPTH = 8;
/**
 * Names, at any depth of an unknown field's value, that could make an upstream generate (and bill) more
 * than the completion limit the gateway reserved (length, thinking/reasoning budgets, search), switch
 * the model behind the caller's back (router-style `models` / `route` / `provider` / `plugins` /
 * `transforms`), smuggle such settings in a pass-through bag (`extra_body`, `chat_template_kwargs`,
 * `options`), or are prototype keys: refused with 400 whatever the deployment's policy. Known fields
 * (`reasoning_effort`, `web_search_options`, ...) never come here: they are checked as known fields.
 */
const UNSAFE_UNKNOWN =
  /token|length|predict|eos|best_of|beam|think|reasoning|budget|search|^enable_|^models?$|^rout(?:e|er|ing)$|provider|^plugins?$|^transforms?$|^extra_body$|chat_template|^options$|^__proto__$|^constructor$|^prototype$/i;

export interface ShapeError {
  param: string;
  message: string;
}

type Obj = Record<string, unknown>;
const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const has = (o: Obj, k: string) => Object.prototype.hasOwnProperty.call(o, k) && o[k] !== undefined;

class Fail extends Error {
  constructor(
    readonly param: string,
    message: string,
  ) {
    super(message);
  }
}
const fail = (param: string, message: string): never => {
  throw new Fail(param, `${param}: ${message}`);
};

function str(v: unknown, param: string, max = Infinity, min = 0): string {
  if (typeof v !== 'string') fail(param, 'must be a string');
  const s = v as string;
  if (s.length < min || s.length > max)
    fail(param, min > 0 ? `must be a string of ${min} to ${max} characters` : `must be at most ${max} characters`);
  return s;
}
function oneOf(v: unknown, param: string, allowed: readonly string[]): void {
  if (typeof v !== 'string' || !allowed.includes(v)) fail(param, `must be one of ${allowed.join(', ')}`);
}
function obj(v: unknown, param: string): Obj {
  if (!isObject(v)) fail(param, 'must be an object');
  return v as Obj;
}
function arr(v: unknown, param: string, max: number, min = 0): unknown[] {
  if (!Array.isArray(v)) fail(param, 'must be an array');
  const a = v as unknown[];
  if (a.length < min || a.length > max) fail(param, `must contain ${min} to ${max} elements`);
  return a;
}
function bool(v: unknown, param: string): void {
  if (typeof v !== 'boolean') fail(param, 'must be a boolean');
}
/** Only the listed keys; each unknown one is named. */
function only(o: Obj, param: string, keys: readonly string[]): void {
  for (const k of Object.keys(o)) if (!keys.includes(k)) fail(`${param}.${k}`, 'is not a known field here');
}

/** Nesting depth of a JSON value, stopping as soon as it passes `max` (iterative: no stack risk). */
export function jsonDepthExceeds(value: unknown, max: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length) {
    const [v, d] = stack.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    if (d + 1 > max) return true;
    for (const child of Array.isArray(v) ? v : Object.values(v))
      if (typeof child === 'object' && child !== null) stack.push([child, d + 1]);
  }
  return false;
}

function schema(v: unknown, param: string): void {
  obj(v, param);
  if (jsonDepthExceeds(v, MAX_SCHEMA_DEPTH)) fail(param, `must not be nested deeper than ${MAX_SCHEMA_DEPTH} levels`);
}

const NAME = /^[A-Za-z0-9_-]{1,64}$/;
function fnName(v: unknown, param: string): void {
  if (typeof v !== 'string' || !NAME.test(v))
    fail(param, 'must be 1 to 64 characters a-z, A-Z, 0-9, underscore or dash');
}

const DETAIL = ['auto', 'low', 'high'] as const;
const AUDIO_FORMATS = ['wav', 'mp3'] as const;

function textPart(p: Obj, param: string): void {
  only(p, param, ['type', 'text']);
  str(p.text, `${param}.text`);
}

function contentPart(p: unknown, param: string, allowed: readonly string[]): void {
  const o = obj(p, param);
  oneOf(o.type, `${param}.type`, allowed);
  switch (o.type) {
    case 'text':
      return textPart(o, param);
    case 'refusal':
      only(o, param, ['type', 'refusal']);
      str(o.refusal, `${param}.refusal`);
      return;
    case 'image_url': {
      only(o, param, ['type', 'image_url']);
      const img = obj(o.image_url, `${param}.image_url`);
      only(img, `${param}.image_url`, ['url', 'detail']);
      const url = str(img.url, `${param}.image_url.url`, Infinity, 1);
      if (!/^(https?:|data:image\/)/i.test(url))
        fail(`${param}.image_url.url`, 'must be an http(s) URL or a data:image/... URL');
      if (has(img, 'detail')) oneOf(img.detail, `${param}.image_url.detail`, DETAIL);
      return;
    }
    case 'input_audio': {
      only(o, param, ['type', 'input_audio']);
      const a = obj(o.input_audio, `${param}.input_audio`);
      only(a, `${param}.input_audio`, ['data', 'format']);
      str(a.data, `${param}.input_audio.data`, Infinity, 1);
      oneOf(a.format, `${param}.input_audio.format`, AUDIO_FORMATS);
      return;
    }
    case 'file': {
      only(o, param, ['type', 'file']);
      const f = obj(o.file, `${param}.file`);
      only(f, `${param}.file`, ['file_data', 'file_id', 'filename']);
      // The gateway has no /v1/files: an upstream file id is neither the caller's nor countable (docs/ai-gateway/chat.md).
      if (has(f, 'file_id'))
        fail(`${param}.file.file_id`, 'is not supported by this gateway; send the file inline as file_data');
      str(f.file_data, `${param}.file.file_data`, Infinity, 1);
      if (has(f, 'filename')) str(f.filename, `${param}.file.filename`, 256);
      return;
    }
  }
}

function content(
  m: Obj,
  param: string,
  opts: { parts: readonly string[]; nullable: boolean; required: boolean },
): void {
  const c = m.content;
  if (c === undefined || c === null) {
    if (c === null ? opts.nullable : !opts.required) return;
    fail(
      param,
      opts.nullable
        ? 'must be a string, an array of content parts or null'
        : 'must be a string or an array of content parts',
    );
  }
  if (typeof c === 'string') return;
  if (!Array.isArray(c))
    fail(
      param,
      opts.nullable
        ? 'must be a string, an array of content parts or null'
        : 'must be a string or an array of content parts',
    );
  const parts = arr(c, param, MAX_PARTS, 1);
  parts.forEach((p, i) => contentPart(p, `${param}.${i}`, opts.parts));
}

function toolCall(v: unknown, param: string): void {
  const o = obj(v, param);
  only(o, param, ['id', 'type', 'function', 'custom']);
  str(o.id, `${param}.id`, 512, 1);
  oneOf(o.type, `${param}.type`, ['function', 'custom']);
  if (o.type === 'function') {
    const f = obj(o.function, `${param}.function`);
    only(f, `${param}.function`, ['name', 'arguments']);
    fnName(f.name, `${param}.function.name`);
    str(f.arguments, `${param}.function.arguments`);
  } else {
    const c = obj(o.custom, `${param}.custom`);
    only(c, `${param}.custom`, ['name', 'input']);
    fnName(c.name, `${param}.custom.name`);
    str(c.input, `${param}.custom.input`);
  }
}

const ROLES = ['developer', 'system', 'user', 'assistant', 'tool', 'function'] as const;

function message(v: unknown, param: string): void {
  const m = obj(v, param);
  oneOf(m.role, `${param}.role`, ROLES);
  const nameOk = () => has(m, 'name') && str(m.name, `${param}.name`, 64, 1);
  switch (m.role) {
    case 'developer':
    case 'system':
      only(m, param, ['role', 'content', 'name']);
      content(m, `${param}.content`, { parts: ['text'], nullable: false, required: true });
      nameOk();
      return;
    case 'user':
      only(m, param, ['role', 'content', 'name']);
      content(m, `${param}.content`, {
        parts: ['text', 'image_url', 'input_audio', 'file'],
        nullable: false,
        required: true,
      });
      nameOk();
      return;
    case 'assistant': {
      only(m, param, ['role', 'content', 'name', 'refusal', 'tool_calls', 'function_call', 'audio', 'annotations']);
      const calls = has(m, 'tool_calls') && m.tool_calls !== null;
      const fc = has(m, 'function_call') && m.function_call !== null;
      // content is required unless tool_calls or function_call is given (then null or absent is fine).
      content(m, `${param}.content`, { parts: ['text', 'refusal'], nullable: true, required: !calls && !fc });
      nameOk();
      if (has(m, 'refusal') && m.refusal !== null) str(m.refusal, `${param}.refusal`);
      if (calls)
        arr(m.tool_calls, `${param}.tool_calls`, MAX_TOOL_CALLS).forEach((c, i) =>
          toolCall(c, `${param}.tool_calls.${i}`),
        );
      if (fc) {
        const f = obj(m.function_call, `${param}.function_call`);
        only(f, `${param}.function_call`, ['name', 'arguments']);
        fnName(f.name, `${param}.function_call.name`);
        str(f.arguments, `${param}.function_call.arguments`);
      }
      if (has(m, 'audio') && m.audio !== null) {
        const a = obj(m.audio, `${param}.audio`);
        only(a, `${param}.audio`, ['id']);
        str(a.id, `${param}.audio.id`, 512, 1);
      }
      if (has(m, 'annotations') && m.annotations !== null) {
        const a = arr(m.annotations, `${param}.annotations`, 1024);
        if (jsonDepthExceeds(a, 8)) fail(`${param}.annotations`, 'is nested too deeply');
      }
      return;
    }
    case 'tool':
      // `name` is not in the reference for tool turns, but LangChain sends the tool's name there and OpenAI accepts it.
      only(m, param, ['role', 'content', 'tool_call_id', 'name']);
      content(m, `${param}.content`, { parts: ['text'], nullable: false, required: true });
      str(m.tool_call_id, `${param}.tool_call_id`, 512, 1);
      if (has(m, 'name')) str(m.name, `${param}.name`, 256, 1);
      return;
    case 'function':
      only(m, param, ['role', 'content', 'name']);
      if (m.content !== null) str(m.content, `${param}.content`);
      fnName(m.name, `${param}.name`);
      return;
  }
}

function functionDef(v: unknown, param: string): void {
  const f = obj(v, param);
  only(f, param, ['name', 'description', 'parameters', 'strict']);
  fnName(f.name, `${param}.name`);
  if (has(f, 'description')) str(f.description, `${param}.description`);
  if (has(f, 'parameters')) schema(f.parameters, `${param}.parameters`);
  if (has(f, 'strict') && f.strict !== null) bool(f.strict, `${param}.strict`);
}

function tool(v: unknown, param: string): void {
  const t = obj(v, param);
  oneOf(t.type, `${param}.type`, ['function', 'custom']);
  if (t.type === 'function') {
    only(t, param, ['type', 'function']);
    functionDef(t.function, `${param}.function`);
  } else {
    only(t, param, ['type', 'custom']);
    const c = obj(t.custom, `${param}.custom`);
    only(c, `${param}.custom`, ['name', 'description', 'format']);
    fnName(c.name, `${param}.custom.name`);
    if (has(c, 'description')) str(c.description, `${param}.custom.description`);
    if (has(c, 'format')) schema(c.format, `${param}.custom.format`);
  }
}

function toolChoice(v: unknown, param: string): void {
  if (typeof v === 'string') return oneOf(v, param, ['none', 'auto', 'required']);
  const o = obj(v, param);
  oneOf(o.type, `${param}.type`, ['function', 'custom', 'allowed_tools']);
  if (o.type === 'function' || o.type === 'custom') {
    only(o, param, ['type', o.type]);
    const f = obj(o[o.type], `${param}.${o.type}`);
    only(f, `${param}.${o.type}`, ['name']);
    fnName(f.name, `${param}.${o.type}.name`);
  } else {
    only(o, param, ['type', 'allowed_tools']);
    const a = obj(o.allowed_tools, `${param}.allowed_tools`);
    only(a, `${param}.allowed_tools`, ['mode', 'tools']);
    oneOf(a.mode, `${param}.allowed_tools.mode`, ['auto', 'required']);
    const list = arr(a.tools, `${param}.allowed_tools.tools`, MAX_TOOLS, 1);
    if (jsonDepthExceeds(list, 4)) fail(`${param}.allowed_tools.tools`, 'is nested too deeply');
  }
}

function responseFormat(v: unknown, param: string): void {
  const o = obj(v, param);
  oneOf(o.type, `${param}.type`, ['text', 'json_object', 'json_schema']);
  if (o.type === 'json_schema') {
    const s = obj(o.json_schema, `${param}.json_schema`);
    fnName(s.name, `${param}.json_schema.name`);
    if (has(s, 'schema')) schema(s.schema, `${param}.json_schema.schema`);
  }
  if (jsonDepthExceeds(o, MAX_SCHEMA_DEPTH + 2))
    fail(param, `must not be nested deeper than ${MAX_SCHEMA_DEPTH} levels`);
}

/** Checks of the structured known fields (scalars are left to the DTO's class-validator decorators). */
const FIELD_CHECKS: Record<string, (v: unknown, param: string) => void> = {
  messages: (v, p) => arr(v, p, MAX_MESSAGES, 1).forEach((m, i) => message(m, `${p}.${i}`)),
  tools: (v, p) => arr(v, p, MAX_TOOLS).forEach((t, i) => tool(t, `${p}.${i}`)),
  functions: (v, p) => arr(v, p, MAX_TOOLS, 1).forEach((f, i) => functionDef(f, `${p}.${i}`)),
  tool_choice: toolChoice,
  function_call: (v, p) => {
    if (typeof v === 'string') return oneOf(v, p, ['none', 'auto']);
    const o = obj(v, p);
    only(o, p, ['name']);
    fnName(o.name, `${p}.name`);
  },
  response_format: responseFormat,
  audio: (v, p) => {
    const o = obj(v, p);
    only(o, p, ['voice', 'format']);
    if (typeof o.voice === 'string') str(o.voice, `${p}.voice`, 64, 1);
    else {
      const voice = obj(o.voice, `${p}.voice`);
      only(voice, `${p}.voice`, ['id']);
      str(voice.id, `${p}.voice.id`, 128, 1);
    }
    oneOf(o.format, `${p}.format`, ['wav', 'aac', 'mp3', 'flac', 'opus', 'pcm16']);
  },
  modalities: (v, p) => arr(v, p, 2, 1).forEach((m, i) => oneOf(m, `${p}.${i}`, ['text', 'audio'])),
  prediction: (v, p) => {
    const o = obj(v, p);
    only(o, p, ['type', 'content']);
    oneOf(o.type, `${p}.type`, ['content']);
    if (typeof o.content === 'string') return;
    arr(o.content, `${p}.content`, MAX_PARTS, 1).forEach((part, i) => {
      const q = obj(part, `${p}.content.${i}`);
      oneOf(q.type, `${p}.content.${i}.type`, ['text']);
      textPart(q, `${p}.content.${i}`);
    });
  },
  metadata: (v, p) => {
    const o = obj(v, p);
    const keys = Object.keys(o);
    if (keys.length > 16) fail(p, 'must have at most 16 keys');
    for (const k of keys) {
      if (k.length > 64) fail(p, 'keys must be at most 64 characters');
      str(o[k], `${p}.${k}`, 512);
    }
  },
  logit_bias: (v, p) => {
    const o = obj(v, p);
    const keys = Object.keys(o);
    if (keys.length > 1024) fail(p, 'must have at most 1024 entries');
    for (const k of keys) {
      if (!/^\d{1,10}$/.test(k)) fail(p, 'keys must be token ids');
      const b = o[k];
      if (typeof b !== 'number' || !Number.isFinite(b) || b < -100 || b > 100)
        fail(`${p}.${k}`, 'must be a number from -100 to 100');
    }
  },
  web_search_options: (v, p) => {
    const o = obj(v, p);
    only(o, p, ['search_context_size', 'user_location']);
    if (has(o, 'search_context_size'))
      oneOf(o.search_context_size, `${p}.search_context_size`, ['low', 'medium', 'high']);
    if (has(o, 'user_location') && o.user_location !== null) {
      const loc = obj(o.user_location, `${p}.user_location`);
      if (jsonDepthExceeds(loc, 3) || JSON.stringify(loc).length > 4096) fail(`${p}.user_location`, 'is too large');
    }
  },
  stream_options: (v, p) => {
    const o = obj(v, p);
    only(o, p, ['include_usage', 'include_obfuscation']);
    if (has(o, 'include_usage')) bool(o.include_usage, `${p}.include_usage`);
    if (has(o, 'include_obfuscation')) bool(o.include_obfuscation, `${p}.include_obfuscation`);
  },
};

/** One structured field's problem, or null (used by the DTO's decorators too). */
export function checkChatField(field: string, value: unknown): ShapeError | null {
  const check = FIELD_CHECKS[field];
  if (!check || value === undefined) return null;
  try {
    check(value, field);
    return null;
  } catch (e) {
    if (e instanceof Fail) return { param: e.param, message: e.message };
    throw e;
  }
}

/** The first problem of the structured fields of `body` (an object), or null. Also cross-field rules. */
export function checkChatShape(body: Obj): ShapeError | null {
  for (const field of Object.keys(FIELD_CHECKS)) {
    if (!has(body, field) || (body[field] === null && field !== 'messages')) continue;
    const e = checkChatField(field, body[field]);
    if (e) return e;
  }
  if (
    has(body, 'tool_choice') &&
    body.tool_choice !== 'none' &&
    body.tool_choice !== null &&
    !(Array.isArray(body.tools) && body.tools.length > 0)
  ) {
    return { param: 'tool_choice', message: 'tool_choice: is only allowed when tools are specified' };
  }
  if (
    has(body, 'parallel_tool_calls') &&
    body.parallel_tool_calls !== null &&
    !(Array.isArray(body.tools) && body.tools.length > 0)
  ) {
    return { param: 'parallel_tool_calls', message: 'parallel_tool_calls: is only allowed when tools are specified' };
  }
  if (has(body, 'top_logprobs') && body.top_logprobs !== null && body.logprobs !== true) {
    return { param: 'top_logprobs', message: 'top_logprobs: logprobs must be true when top_logprobs is set' };
  }
  return unmetered(body);
}

/** service_tier values the gateway's prices hold (flex is cheaper than default, never dearer). */
export const METERED_SERVICE_TIERS = ['auto', 'default', 'flex'] as const;

/**
 * Known fields whose upstream price the gateway does not meter: priority/scale processing (about 2x at
 * OpenAI). Refused rather than forwarded, so a call never costs the upstream account more than it
 * reserved. Web search and audio output are metered where the model declares their prices: that is
 * checked with the model's catalog entry (assertPriced, chat-pricing.ts).
 */
function unmetered(body: Obj): ShapeError | null {
  const st = body.service_tier;
  if (has(body, 'service_tier') && st !== null && !(METERED_SERVICE_TIERS as readonly unknown[]).includes(st)) {
    return {
      param: 'service_tier',
      message: `service_tier: ${JSON.stringify(st)} is not metered by this gateway; use ${METERED_SERVICE_TIERS.join(', ')}`,
    };
  }
  return null;
}

/** Splits a body's own keys into the known fields and the unknown ones (fresh objects, no prototype tricks). */
export function splitKnown(body: Obj): { known: Obj; unknown: Obj } {
  const known: Obj = {};
  const unknown = Object.create(null) as Obj;
  for (const k of Object.keys(body)) {
    const target = KNOWN.has(k) ? known : unknown;
    Object.defineProperty(target, k, { value: body[k], enumerable: true, writable: true, configurable: true });
  }
  return { known, unknown };
}

/** Unknown top-level fields: allowed through to the deployment's policy, but bounded and never a length/cost lever. */
export function checkUnknown(unknown: Obj): ShapeError | null {
  const keys = Object.keys(unknown);
  if (keys.length === 0) return null;
  if (keys.length > MAX_UNKNOWN_FIELDS)
    return {
      param: keys[MAX_UNKNOWN_FIELDS],
      message: `${keys[MAX_UNKNOWN_FIELDS]}: at most ${MAX_UNKNOWN_FIELDS} unknown fields are accepted`,
    };
  for (const k of keys) {
    if (UNSAFE_UNKNOWN.test(k)) return unsafe(k);
    if (k.length > 64) return { param: k.slice(0, 64), message: 'unknown field names must be at most 64 characters' };
    if (jsonDepthExceeds(unknown[k], MAX_UNKNOWN_DEPTH))
      return { param: k, message: `${k}: unknown fields must not be nested deeper than ${MAX_UNKNOWN_DEPTH} levels` };
  }
  if (JSON.stringify(unknown).length > MAX_UNKNOWN_BYTES)
    return { param: keys[0], message: `unknown fields must total at most ${MAX_UNKNOWN_BYTES} bytes of JSON` };
  return unsafeNested(unknown);
}

const unsafe = (param: string): ShapeError => ({
  param,
  message: `${param}: unknown field not accepted (it could change the completion length, the model or the cost the gateway reserved)`,
});

/**
 * The first key, at any depth below the top level, whose name is a cost or routing lever (the top-level
 * names are checked by the caller). Iterative and linear: each value is visited once (the caller has
 * already bounded depth and total size); a path is built only for the key that fails.
 */
function unsafeNested(unknown: Obj): ShapeError | null {
  interface Node {
    key: string;
    parent: Node | null;
  }
  const pathOf = (n: Node): string => {
    const parts: string[] = [];
    for (let c: Node | null = n; c; c = c.parent) parts.push(c.key);
    return parts.reverse().join('.');
  };
  const stack: Array<[unknown, Node]> = Object.keys(unknown).map((k) => [unknown[k], { key: k, parent: null }]);
  while (stack.length) {
    const [v, at] = stack.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++)
        if (typeof v[i] === 'object' && v[i] !== null) stack.push([v[i], { key: String(i), parent: at }]);
      continue;
    }
    for (const k of Object.keys(v)) {
      const node = { key: k, parent: at };
      if (UNSAFE_UNKNOWN.test(k)) return unsafe(pathOf(node));
      const child = (v as Obj)[k];
      if (typeof child === 'object' && child !== null) stack.push([child, node]);
    }
  }
  return null;
}
