import { sendJson } from './json-response';

/** What sendJson gave the response: its status, head and body. */
function capture() {
  const sent: { status?: number; head?: string[]; body?: string | Buffer } = {};
  const res = {
    writeHead: (status: number, head: string[]) => ((sent.status = status), (sent.head = head), res),
    end: (body: string | Buffer) => ((sent.body = body), res),
  };
  return { res: res as never, sent };
}

const header = (head: string[] | undefined, name: string) => head?.[head.indexOf(name) + 1];

describe('sendJson', () => {
  it('writes a small answer as its text, with its length in bytes and the extra headers in one head', () => {
    const { res, sent } = capture();
    sendJson(res, 201, { name: 'café' }, ['X-Extra', '1']);
    expect(sent.status).toBe(201);
    expect(sent.body).toBe('{"name":"café"}');
    expect(header(sent.head, 'X-Extra')).toBe('1');
    expect(header(sent.head, 'Content-Type')).toBe('application/json; charset=utf-8');
    expect(header(sent.head, 'Content-Length')).toBe(String(Buffer.byteLength('{"name":"café"}')));
  });

  it('writes a large answer as its UTF-8 bytes (what Node writes fastest), the same bytes and length', () => {
    const { res, sent } = capture();
    const text = JSON.stringify({ data: Array.from({ length: 2000 }, (_, i) => `entrée ${i} 名前`) });
    expect(text.length).toBeGreaterThan(16_384);
    sendJson(res, 200, undefined, undefined, text);
    expect(Buffer.isBuffer(sent.body)).toBe(true);
    expect((sent.body as Buffer).toString('utf8')).toBe(text);
    expect(header(sent.head, 'Content-Length')).toBe(String(Buffer.byteLength(text)));
  });
});
