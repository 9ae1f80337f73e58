import * as http from 'http';
import * as net from 'net';
import type { AddressInfo } from 'net';

/**
 * A server whose first answer on a connection is never sent, and a client that pipelines a second request behind
 * it: resolves with the second answer, queued (no socket of its own), and the client's socket.
 */
export async function queuedAnswer(): Promise<{
  res: http.ServerResponse;
  client: net.Socket;
  close: () => Promise<void>;
}> {
  let second!: (res: http.ServerResponse) => void;
  const queued = new Promise<http.ServerResponse>((resolve) => (second = resolve));
  const server = http.createServer((req, res) => {
    if (req.url === '/second') second(res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const client = net.connect((server.address() as AddressInfo).port, '127.0.0.1');
  client.on('error', () => undefined);
  client.write('GET /first HTTP/1.1\r\nHost: x\r\n\r\nGET /second HTTP/1.1\r\nHost: x\r\n\r\n');
  const res = await queued;
  const close = () => {
    client.destroy();
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return { res, client, close };
}
