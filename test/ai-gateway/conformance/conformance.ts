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
  /** The operation (`METHOD /path`) the check belongs to, for the per-operation breakdown. */
  operation: string;
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

  private record(operation: string, name: string, schema: Schema | undefined, value: unknown): Check {
    let check: Check;
    if (!schema) check = { operation, name, ok: false, problems: [`no schema for ${name}`] };
    else {
      const validate = compile(schema);
      const ok = validate(value);
      check = {
        operation,
        name,
        ok,
        problems: ok
          ? []
          : (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message} ${JSON.stringify(e.params)}`),
      };
    }
    this.checks.push(check);
    return check;
  }

  /**
   * A JSON answer of `operation` (`POST /v1/chat/completions`, or a keyed variant such as
   * `POST /v1/audio/transcriptions#format:verbose_json`): the operation's schema for 2xx, the error body
   * otherwise. With `expectOk`, an error answer (a 404 of an operation that does not exist, say) is held
   * to the operation's schema, so it counts as a failed check.
   */
  answer(operation: string, status: number, body: unknown, label = '', expectOk = false): Check {
    const name = `${operation} ${status}${label ? ` (${label})` : ''}`;
    return this.record(
      operationOf(operation),
      name,
      status < 400 || expectOk ? OPERATION_SCHEMAS[operation] : ERROR_SCHEMA,
      body,
    );
  }

  /** Each event of an SSE answer: by `type` (`operation#event:<type>`) when it has one, an `{error}` event by the error body, else `operation#chunk`. */
  stream(operation: string, events: unknown[], label = ''): Check[] {
    if (events.length === 0)
      return [this.record(operation, `${operation} stream${label ? ` (${label})` : ''}: no events`, undefined, null)];
    return events.map((e, i) => {
      const type = typeof e === 'object' && e !== null ? (e as { type?: unknown }).type : undefined;
      const isError = typeof e === 'object' && e !== null && 'error' in e && !('object' in e) && type === undefined;
      const key = isError ? undefined : typeof type === 'string' ? `${operation}#event:${type}` : `${operation}#chunk`;
      const name = `${operation} event ${i}${typeof type === 'string' ? ` ${type}` : ''}${label ? ` (${label})` : ''}`;
      return this.record(operation, name, isError ? ERROR_SCHEMA : OPERATION_SCHEMAS[key!], e);
    });
  }

  /** A binary answer (audio, images): its content type only. */
  binary(operation: string, contentType: string | null, expected: RegExp): Check {
    const ok = !!contentType && expected.test(contentType);
    const check = {
      operation,
      name: `${operation} content-type`,
      ok,
      problems: ok ? [] : [`content-type ${contentType} does not match ${expected}`],
    };
    this.checks.push(check);
    return check;
  }

  /** A counted check decided by the caller (a spec example request accepted, or refused as documented). */
  decided(operation: string, name: string, ok: boolean, problem = ''): Check {
    const check = { operation: operationOf(operation), name, ok, problems: ok ? [] : [problem] };
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

  /** passed/total per operation, in the order the operations were first checked. */
  breakdown(): string {
    const by = new Map<string, { passed: number; total: number }>();
    for (const c of this.checks) {
      const row = by.get(c.operation) ?? { passed: 0, total: 0 };
      row.total++;
      if (c.ok) row.passed++;
      by.set(c.operation, row);
    }
    return [...by].map(([op, r]) => `  ${`${r.passed}/${r.total}`.padStart(9)}  ${op}`).join('\n');
  }
}

/** `POST /v1/audio/speech#event:x` -> `POST /v1/audio/speech`. */
function operationOf(key: string): string {
  return key.split('#')[0];
}
