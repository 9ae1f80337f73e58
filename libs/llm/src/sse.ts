// Server-sent events parsing (WHATWG rules: fields, multi-line data, CR/LF/CRLF line ends).
import { UpstreamError } from './types';

/**
 * Longest line, and longest event (its data lines together), taken from an upstream stream, in
 * UTF-16 units. Chat chunks are a few hundred bytes; a stream over this is refused as a protocol
 * error instead of being buffered without bound.
 */
export const MAX_SSE_EVENT_CHARS = 8 * 1024 * 1024;

export interface SseEvent {
  event: string;
  data: string;
  id?: string;
}

/** Turns a byte stream into SSE events, yielding each event as soon as its blank line arrives. */
export async function* parseSse(body: AsyncIterable<Uint8Array | string>): AsyncGenerator<SseEvent> {
  const decoder = new TextDecoder();
  let buffer = '';
  let event = '';
  let data: string[] = [];
  let id: string | undefined;
  let eventChars = 0;

  const takeLine = (line: string): SseEvent | undefined => {
    if (line === '') {
      if (data.length === 0 && event === '') return undefined;
      const out: SseEvent = { event: event || 'message', data: data.join('\n'), ...(id !== undefined ? { id } : {}) };
      event = '';
      data = [];
      eventChars = 0;
      return out;
    }
    if (line.startsWith(':')) return undefined;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') {
      eventChars += value.length + 1;
      if (eventChars > MAX_SSE_EVENT_CHARS) throw tooLong();
      data.push(value);
    } else if (field === 'event') event = value;
    else if (field === 'id') id = value;
    return undefined;
  };

  // buffer[0..scanned) holds no line end: each chunk is scanned once, however long a line grows
  // over many chunks (re-scanning the whole buffer per chunk was quadratic in the line's length).
  let scanned = 0;
  for await (const chunk of body) {
    buffer += typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true });
    let consumed = 0;
    for (let i = scanned; i < buffer.length; i++) {
      const c = buffer.charCodeAt(i);
      if (c !== 0x0a && c !== 0x0d) continue;
      // A lone trailing CR may be the first half of CRLF: wait for more bytes.
      if (c === 0x0d && i === buffer.length - 1) break;
      const out = takeLine(buffer.slice(consumed, i));
      consumed = c === 0x0d && buffer.charCodeAt(i + 1) === 0x0a ? i + 2 : i + 1;
      i = consumed - 1;
      if (out) yield out;
    }
    buffer = buffer.slice(consumed);
    if (buffer.length > MAX_SSE_EVENT_CHARS) throw tooLong();
    scanned = buffer.endsWith('\r') ? buffer.length - 1 : buffer.length;
  }
  // Bytes after the last blank line are an incomplete event: dropped, as the SSE rules say.
}

function tooLong(): UpstreamError {
  return new UpstreamError(
    `upstream sent a stream event longer than ${MAX_SSE_EVENT_CHARS} characters`,
    'protocol',
    200,
  );
}
