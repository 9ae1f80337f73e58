import { request as httpRequest, IncomingHttpHeaders } from 'http';

export interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** A request from client address `ip` (X-Forwarded-For, trusted from loopback), its whole answer read. */
export function fetchAs(base: string, method: 'GET' | 'HEAD', path: string, ip: string): Promise<Answer> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: hostname, port, path, method, agent: false, headers: { 'x-forwarded-for': ip } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/**
 * A download from `ip` whose client reads nothing of the body: `started` resolves with the answer's status once its
 * head is in, while the body stays unread (its socket buffers fill, then the server's stream waits).
 */
export function stalledDownload(base: string, path: string, ip: string): { started: Promise<number>; drop(): void } {
  const { hostname, port } = new URL(base);
  const req = httpRequest({ host: hostname, port, path, agent: false, headers: { 'x-forwarded-for': ip } });
  const started = new Promise<number>((resolve, reject) => {
    req.on('response', (res) => resolve(res.statusCode!));
    req.on('error', reject);
  });
  req.end();
  return { started, drop: () => req.destroy() };
}
