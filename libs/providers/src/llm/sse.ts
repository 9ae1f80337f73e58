// Server-sent events parsing (WHATWG rules: fields, multi-line data, CR/LF/CRLF line ends).

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

  const takeLine = (line: string): SseEvent | undefined => {
    if (line === '') {
      if (data.length === 0 && event === '') return undefined;
      const out: SseEvent = { event: event || 'message', data: data.join('\n'), ...(id !== undefined ? { id } : {}) };
      event = '';
      data = [];
      return out;
    }
    if (line.startsWith(':')) return undefined;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') data.push(value);
    else if (field === 'event') event = value;
    else if (field === 'id') id = value;
    return undefined;
  };

  for await (const chunk of body) {
    buffer += typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true });
    let match: RegExpExecArray | null;
    const lineEnd = /\r\n|\r|\n/g;
    let consumed = 0;
    while ((match = lineEnd.exec(buffer)) !== null) {
      // A lone trailing CR may be the first half of CRLF: wait for more bytes.
      if (match[0] === '\r' && match.index === buffer.length - 1) break;
      const out = takeLine(buffer.slice(consumed, match.index));
      consumed = match.index + match[0].length;
      if (out) yield out;
    }
    buffer = buffer.slice(consumed);
  }
  // Bytes after the last blank line are an incomplete event: dropped, as the SSE rules say.
}
