// Chat completions (and their stream chunks) as OpenAI Responses API objects and events.
import { randomBytes } from 'crypto';
import type { OpenAiErrorBody } from '../errors';
import type { ChatCompletion, ChatCompletionChunk, Usage } from '@app/llm';
import type { ChatAnswerShape } from '../chat/create-chat-completion.service';

export const RESPONSES_ENDPOINT = 'responses';

type Obj = Record<string, unknown>;
const newId = (prefix: string) => `${prefix}_${randomBytes(24).toString('hex')}`;

interface ChatToolCall {
  id?: string;
  index?: number;
  type?: string;
  function?: { name?: string; arguments?: string };
}

/**
 * The tool calls of a message or delta: only object entries of an array. A misbehaving upstream's
 * `tool_calls` that is not an array (or holds non-objects) carries no call we could answer; it is
 * ignored rather than failing an answer whose usage is already metered.
 */
function toolCallsOf(v: unknown): ChatToolCall[] {
  if (!Array.isArray(v)) return [];
  return v.filter((c): c is ChatToolCall => typeof c === 'object' && c !== null && !Array.isArray(c));
}

const strOr = (v: unknown, fallback: string): string => (typeof v === 'string' ? v : fallback);

/** A count from an upstream's usage breakdown; 0 when it said nothing (the spec requires the field). */
const count = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? Math.floor(v) : 0);

/**
 * The Responses usage of a chat usage: cached (read from the prompt cache) and cache-written tokens are
 * part of the input tokens, reasoning tokens part of the output tokens, as the upstream reported them
 * (OpenAI's prompt/completion_tokens_details; Anthropic's cache reads and writes, anthropic-client.ts).
 */
export function responseUsage(u: Usage): Obj {
  return {
    input_tokens: u.prompt_tokens,
    input_tokens_details: {
      cached_tokens: count(u.prompt_tokens_details?.cached_tokens),
      cache_write_tokens: count(u.prompt_tokens_details?.cache_write_tokens),
    },
    output_tokens: u.completion_tokens,
    output_tokens_details: { reasoning_tokens: count(u.completion_tokens_details?.reasoning_tokens) },
    total_tokens: u.prompt_tokens + u.completion_tokens,
  };
}

/** An `output_text` content part: no annotations or log probabilities come through a chat upstream (both required, empty). */
const outputText = (text: string): Obj => ({ type: 'output_text', text, annotations: [], logprobs: [] });

/**
 * The codes a failed response's `error.code` may take (the Responses spec's enum); any other failure
 * (upstream errors, timeouts) is a `server_error` there, its own code staying in the `error` event.
 */
const RESPONSE_ERROR_CODES = new Set([
  'server_error',
  'rate_limit_exceeded',
  'invalid_prompt',
  'data_residency_mismatch',
  'bio_policy',
  'vector_store_timeout',
  'invalid_image',
  'invalid_image_format',
  'invalid_base64_image',
  'invalid_image_url',
  'image_too_large',
  'image_too_small',
  'image_parse_error',
  'image_content_policy_violation',
  'invalid_image_mode',
  'image_file_too_large',
  'unsupported_image_media_type',
  'empty_image_file',
  'failed_to_download_image',
  'image_file_not_found',
]);

function messageItem(id: string, text: string, status: string): Obj {
  return {
    id,
    type: 'message',
    status,
    role: 'assistant',
    content: status === 'in_progress' ? [] : [outputText(text)],
  };
}

function functionCallItem(id: string, callId: string, name: string, args: string, status: string): Obj {
  return { id, type: 'function_call', status, call_id: callId, name, arguments: args };
}

/**
 * Stores a finished response (ResponsesRepository.save bound to the key and the input); false when it was
 * not stored, and the answer then says store: false.
 */
export type PersistResponse = (response: Obj) => Promise<boolean>;

/**
 * One Responses answer: `complete` for a JSON answer, or `chunk`/`end`/`failed` for the event stream
 * (created, in_progress, output items with their parts and deltas, completed), each event numbered.
 * With `persist`, a completed or incomplete response is stored before it is answered (so a follow-up
 * call that refers to it always finds it); a failed or aborted one is not.
 */
export class ResponsesAnswer implements ChatAnswerShape {
  readonly endpoint = RESPONSES_ENDPOINT;
  private readonly id = newId('resp');
  private readonly createdAt = Math.floor(Date.now() / 1000);
  private seq = 0;
  private started = false;
  private finishReason: string | null = null;
  /** Output items in order; `open` ones still receive deltas. */
  private readonly items: Array<{ item: Obj; open: boolean; text?: string }> = [];
  private openMessage: number | undefined;
  private readonly toolItems = new Map<number, number>();

  constructor(
    private readonly model: string,
    private readonly echo: Obj,
    private readonly persist?: PersistResponse,
  ) {}

  /** The response id (resp_...). */
  get responseId(): string {
    return this.id;
  }

  async complete(result: ChatCompletion): Promise<unknown> {
    const choice = result.choices[0];
    const output: Obj[] = [];
    const text = typeof choice?.message?.content === 'string' ? choice.message.content : '';
    if (text) output.push(messageItem(newId('msg'), text, 'completed'));
    for (const call of toolCallsOf(choice?.message?.tool_calls)) {
      output.push(
        functionCallItem(
          newId('fc'),
          strOr(call.id, newId('call')),
          strOr(call.function?.name, ''),
          strOr(call.function?.arguments, ''),
          'completed',
        ),
      );
    }
    this.finishReason = choice?.finish_reason ?? null;
    return this.stored(this.response(this.finalStatus(), output, result.usage));
  }

  chunk(chunk: ChatCompletionChunk): unknown[] {
    const events: Obj[] = [];
    this.start(events);
    const choice = chunk.choices.find((c) => (c?.index ?? 0) === 0);
    if (!choice) return events;
    const delta = choice.delta ?? {};
    if (typeof delta.content === 'string' && delta.content.length > 0) this.text(delta.content, events);
    for (const call of toolCallsOf(delta.tool_calls)) this.toolCall(call, events);
    if (choice.finish_reason) this.finishReason = choice.finish_reason;
    return events;
  }

  async end(usage: Usage): Promise<unknown[]> {
    const events: Obj[] = [];
    this.start(events);
    this.closeAll(events);
    const status = this.finalStatus();
    const response = await this.stored(
      this.response(
        status,
        this.items.map((i) => i.item),
        usage,
      ),
    );
    events.push(this.event(status === 'incomplete' ? 'response.incomplete' : 'response.completed', { response }));
    return events;
  }

  /** The finished response once stored (when asked to); `store` says whether it was. */
  private async stored(response: Obj): Promise<Obj> {
    if (response.store === true) response.store = this.persist ? await this.persist(response) : false;
    return response;
  }

  failed(error: OpenAiErrorBody['error']): unknown[] {
    const events: Obj[] = [];
    this.start(events);
    const code = error.code ?? error.type ?? null;
    events.push(this.event('error', { code, message: error.message, param: error.param ?? null }));
    const failedCode = code !== null && RESPONSE_ERROR_CODES.has(code) ? code : 'server_error';
    events.push(
      this.event('response.failed', {
        response: {
          ...this.response(
            'failed',
            this.items.map((i) => i.item),
            undefined,
          ),
          error: { code: failedCode, message: error.message },
        },
      }),
    );
    return events;
  }

  private event(type: string, fields: Obj): Obj {
    return { type, sequence_number: this.seq++, ...fields };
  }

  private start(events: Obj[]): void {
    if (this.started) return;
    this.started = true;
    const response = this.response('in_progress', [], undefined);
    events.push(this.event('response.created', { response }), this.event('response.in_progress', { response }));
  }

  private text(delta: string, events: Obj[]): void {
    if (this.openMessage === undefined) {
      // Open function calls stay open: a later delta of theirs may still come (they close at the end).
      const item = messageItem(newId('msg'), '', 'in_progress');
      this.openMessage = this.items.push({ item, open: true, text: '' }) - 1;
      events.push(this.event('response.output_item.added', { output_index: this.openMessage, item: { ...item } }));
      events.push(
        this.event('response.content_part.added', {
          item_id: item.id,
          output_index: this.openMessage,
          content_index: 0,
          part: outputText(''),
        }),
      );
    }
    const entry = this.items[this.openMessage];
    entry.text += delta;
    events.push(
      this.event('response.output_text.delta', {
        item_id: entry.item.id,
        output_index: this.openMessage,
        content_index: 0,
        delta,
        logprobs: [],
      }),
    );
  }

  /** Chat tool-call deltas arrive by `index`: the first names the call, later ones carry argument fragments. */
  private toolCall(call: ChatToolCall, events: Obj[]): void {
    const index = typeof call.index === 'number' ? call.index : 0;
    let at = this.toolItems.get(index);
    if (at === undefined) {
      // Only the text message closes here; calls may interleave (index 0, 1, 0), so every function
      // call stays open until the end and no arguments delta can follow its item's .done event.
      this.closeMessage(events);
      const item = functionCallItem(
        newId('fc'),
        strOr(call.id, newId('call')),
        strOr(call.function?.name, ''),
        '',
        'in_progress',
      );
      at = this.items.push({ item, open: true }) - 1;
      this.toolItems.set(index, at);
      events.push(this.event('response.output_item.added', { output_index: at, item: { ...item } }));
    }
    const entry = this.items[at];
    const fragment = call.function?.arguments;
    if (typeof fragment === 'string' && fragment.length > 0) {
      entry.item.arguments = `${entry.item.arguments as string}${fragment}`;
      events.push(
        this.event('response.function_call_arguments.delta', {
          item_id: entry.item.id,
          output_index: at,
          delta: fragment,
        }),
      );
    }
  }

  private closeMessage(events: Obj[]): void {
    if (this.openMessage !== undefined) this.close(this.openMessage, events);
  }

  private closeAll(events: Obj[]): void {
    this.items.forEach((_, index) => this.close(index, events));
  }

  private close(index: number, events: Obj[]): void {
    const entry = this.items[index];
    if (!entry.open) return;
    entry.open = false;
    if (entry.item.type === 'message') {
      const text = entry.text ?? '';
      const part = outputText(text);
      events.push(
        this.event('response.output_text.done', {
          item_id: entry.item.id,
          output_index: index,
          content_index: 0,
          text,
          logprobs: [],
        }),
      );
      events.push(
        this.event('response.content_part.done', {
          item_id: entry.item.id,
          output_index: index,
          content_index: 0,
          part,
        }),
      );
      entry.item = messageItem(entry.item.id as string, text, 'completed');
      this.openMessage = undefined;
    } else {
      entry.item = { ...entry.item, status: 'completed' };
      events.push(
        this.event('response.function_call_arguments.done', {
          item_id: entry.item.id,
          output_index: index,
          name: entry.item.name,
          arguments: entry.item.arguments,
        }),
      );
    }
    events.push(this.event('response.output_item.done', { output_index: index, item: entry.item }));
  }

  private finalStatus(): string {
    return this.finishReason === 'length' || this.finishReason === 'content_filter' ? 'incomplete' : 'completed';
  }

  private response(status: string, output: Obj[], usage: Usage | undefined): Obj {
    return {
      id: this.id,
      object: 'response',
      created_at: this.createdAt,
      status,
      error: null,
      incomplete_details:
        status === 'incomplete'
          ? { reason: this.finishReason === 'length' ? 'max_output_tokens' : 'content_filter' }
          : null,
      model: this.model,
      output,
      previous_response_id: null,
      reasoning: { effort: null, summary: null },
      ...this.echo,
      // Absent until known (created, in_progress, failed): the spec's usage is an object, never null.
      ...(usage ? { usage: responseUsage(usage) } : {}),
    };
  }
}
