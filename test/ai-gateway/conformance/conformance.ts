/**
 * Validates the gateway's answers against our JSON Schemas of OpenAI's API (schemas/, written from the
 * facts of the official OpenAPI document): a JSON body by operation and status, an SSE stream event by
 * event (by its `type` where the operation's events carry one, else by the chunk schema), a binary
 * answer by its content type. Every validation is one counted check, so a run reports passed / total.
 */
import Ajv2020, { ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { ERROR_SCHEMA, OPERATION_SCHEMAS, Schema } from './schemas';

export interface Check {
  name: string;
  ok: boolean;
  problems: string[];
}

const ajv = new Ajv2020({ allErrors: true, strict: false });
addFormats(ajv);
const compiled = new Map<Schema, ValidateFunction>();
const compile = (s: Schema): ValidateFunction => {
  let v = compiled.get(s);
  if (!v) compiled.set(s, (v = ajv.compile(s)));
  return v;
};

/** The `data:` payloads of an SSE text, `[DONE]` left out; each JSON-parsed (a payload that is not JSON stays a string). */
export function sseEvents(text: string): unknown[] {
  const out: unknown[] = [];
  for (const block of text.split(/\r?\n\r?\n/)) {
    const data = block
      .split(/\r?\n/)
      .filter((l) => l.startsWith('data:'))
      .map((l) => l.slice(5).replace(/^ /, ''))
      .join('\n');
    if (!data || data === '[DONE]') continue;
    try {
      out.push(JSON.parse(data));
    } catch {
      out.push(data);
    }
  }
  return out;
}

export class Conformance {
  readonly checks: Check[] = [];

  private record(name: string, schema: Schema | undefined, value: unknown): Check {
    let check: Check;
    if (!schema) check = { name, ok: false, problems: [`no schema for ${name}`] };
    else {
      const validate = compile(schema);
      const ok = validate(value);
      check = { name, ok, problems: ok ? [] : (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message} ${JSON.stringify(e.params)}`) };
    }
    this.checks.push(check);
    return check;
  }

  /** A JSON answer of `operation` (`POST /v1/chat/completions`): the operation's schema for 2xx, the error body otherwise. */
  answer(operation: string, status: number, body: unknown, label = ''): Check {
    const name = `${operation} ${status}${label ? ` (${label})` : ''}`;
    return this.record(name, status < 400 ? OPERATION_SCHEMAS[operation] : ERROR_SCHEMA, body);
  }

  /** Each event of an SSE answer: by `type` (`operation#event:<type>`) when it has one, an `{error}` event by the error body, else `operation#chunk`. */
  stream(operation: string, events: unknown[], label = ''): Check[] {
    if (events.length === 0) return [this.record(`${operation} stream${label ? ` (${label})` : ''}: no events`, undefined, null)];
    return events.map((e, i) => {
      const type = typeof e === 'object' && e !== null ? (e as { type?: unknown }).type : undefined;
      const isError = typeof e === 'object' && e !== null && 'error' in e && !('object' in e) && type === undefined;
      const key = isError ? undefined : typeof type === 'string' ? `${operation}#event:${type}` : `${operation}#chunk`;
      const name = `${operation} event ${i}${typeof type === 'string' ? ` ${type}` : ''}${label ? ` (${label})` : ''}`;
      return this.record(name, isError ? ERROR_SCHEMA : OPERATION_SCHEMAS[key!], e);
    });
  }

  /** A binary answer (audio, images): its content type only. */
  binary(operation: string, contentType: string | null, expected: RegExp): Check {
    const ok = !!contentType && expected.test(contentType);
    const check = { name: `${operation} content-type`, ok, problems: ok ? [] : [`content-type ${contentType} does not match ${expected}`] };
    this.checks.push(check);
    return check;
  }

  /** A counted check decided by the caller (a spec example request accepted, or refused as documented). */
  decided(name: string, ok: boolean, problem = ''): Check {
    const check = { name, ok, problems: ok ? [] : [problem] };
    this.checks.push(check);
    return check;
  }

  failed(): Check[] {
    return this.checks.filter((c) => !c.ok);
  }

  summary(): string {
    const passed = this.checks.length - this.failed().length;
    return `${passed}/${this.checks.length} conformance checks passed (${((100 * passed) / Math.max(1, this.checks.length)).toFixed(1)} %)`;
  }
}
