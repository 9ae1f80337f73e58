import { pbkdf2 } from 'crypto';
import { createSocket, type Socket } from 'dgram';
import { promisify } from 'util';
import { AddressRefused, addressAllowList, dnsResolver, publicAddressesOf } from './public-address';

/**
 * A name server on loopback UDP speaking just enough of RFC 1035: it answers A and AAAA questions from a
 * table (NXDOMAIN otherwise), and stays silent for the names listed as silent, as a slow or dead
 * server a caller chose would.
 */
class FakeNameServer {
  readonly questions: Array<{ name: string; type: number }> = [];
  private readonly socket: Socket = createSocket('udp4');
  private waiters: Array<{ count: number; resolve: () => void }> = [];

  constructor(
    private readonly records: Record<string, { a?: string[]; aaaa?: string[] }>,
    private readonly silent: Set<string> = new Set(),
  ) {
    this.socket.on('message', (query, from) => {
      const { name, type, end } = readQuestion(query);
      this.questions.push({ name, type });
      this.waiters = this.waiters.filter((w) => (this.questions.length >= w.count ? (w.resolve(), false) : true));
      if (this.silent.has(name)) return;
      const entry = this.records[name];
      const rdata = (type === 1 ? entry?.a : type === 28 ? entry?.aaaa : undefined) ?? [];
      this.socket.send(answer(query.subarray(0, end), !entry, type, rdata), from.port, from.address);
    });
  }

  async start(): Promise<string> {
    await new Promise<void>((r) => this.socket.bind(0, '127.0.0.1', r));
    return `127.0.0.1:${this.socket.address().port}`;
  }

  /** Resolves once this many questions have arrived in all. */
  received(count: number): Promise<void> {
    if (this.questions.length >= count) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ count, resolve }));
  }

  close(): Promise<void> {
    return new Promise((r) => this.socket.close(() => r()));
  }
}

function readQuestion(query: Buffer): { name: string; type: number; end: number } {
  const labels: string[] = [];
  let at = 12;
  while (query[at] !== 0) {
    labels.push(query.subarray(at + 1, at + 1 + query[at]).toString('ascii'));
    at += 1 + query[at];
  }
  return { name: labels.join('.').toLowerCase(), type: query.readUInt16BE(at + 1), end: at + 5 };
}

function answer(question: Buffer, nxdomain: boolean, type: number, rdata: string[]): Buffer {
  const head = Buffer.from(question);
  head.writeUInt16BE(0x8180 | (nxdomain ? 3 : 0), 2); // a response, recursion available, NOERROR or NXDOMAIN
  head.writeUInt16BE(rdata.length, 6); // answer count
  const records = rdata.map((text) => {
    const bytes =
      type === 1
        ? Buffer.from(text.split('.').map(Number))
        : Buffer.from(
            new URL(`http://[${text}]/`).hostname
              .slice(1, -1)
              .split(':')
              .map((g) => g.padStart(4, '0'))
              .join(''),
            'hex',
          );
    const record = Buffer.alloc(12);
    record.writeUInt16BE(0xc00c, 0); // the name: a pointer to the question's
    record.writeUInt16BE(type, 2);
    record.writeUInt16BE(1, 4); // class IN
    record.writeUInt32BE(60, 6); // TTL
    record.writeUInt16BE(bytes.length, 10);
    return Buffer.concat([record, bytes]);
  });
  return Buffer.concat([head, ...records]);
}

describe('dnsResolver (caller-chosen names)', () => {
  const server = new FakeNameServer(
    {
      'images.example.test': { a: ['93.184.215.14'], aaaa: ['2606:2800:21f:cb07:6820:80da:af6b:8b2c'] },
      'v4only.example.test': { a: ['93.184.215.15'] },
      'intranet.example.test': { a: ['93.184.215.16', '10.0.0.7'] },
    },
    new Set(['slow.example.test']),
  );
  let servers: string[];
  beforeAll(async () => {
    servers = [await server.start()];
  });
  afterAll(() => server.close());

  it('answers A and AAAA from DNS, IPv4 first', async () => {
    const resolve = dnsResolver({ servers });
    await expect(publicAddressesOf(new URL('http://images.example.test/a.png'), { resolve })).resolves.toEqual([
      { address: '93.184.215.14', family: 4 },
      { address: '2606:2800:21f:cb07:6820:80da:af6b:8b2c', family: 6 },
    ]);
    await expect(resolve('v4only.example.test')).resolves.toEqual([{ address: '93.184.215.15', family: 4 }]);
  });

  it('refuses a name with any private answer, and a name that does not exist', async () => {
    const resolve = dnsResolver({ servers });
    await expect(publicAddressesOf(new URL('http://intranet.example.test/'), { resolve })).rejects.toEqual(
      new AddressRefused('forbidden'),
    );
    await expect(publicAddressesOf(new URL('http://nowhere.example.test/'), { resolve })).rejects.toEqual(
      new AddressRefused('unresolvable'),
    );
  });

  it('takes localhost names as loopback without asking the name server', async () => {
    const resolve = dnsResolver({ servers });
    const before = server.questions.length;
    for (const host of ['localhost', 'LOCALHOST.', 'printer.localhost'])
      await expect(publicAddressesOf(new URL(`http://${host}:8080/`), { resolve })).rejects.toEqual(
        new AddressRefused('forbidden'),
      );
    // An allowlist of IPv4's loopback takes it, as it took getaddrinfo's answer.
    await expect(
      publicAddressesOf(new URL('http://localhost:8080/'), { resolve, allowed: addressAllowList(['127.0.0.1/32']) }),
    ).resolves.toEqual([{ address: '127.0.0.1', family: 4 }]);
    expect(server.questions.length).toBe(before);
  });

  it('holds no thread of the pool zlib, fs and the password hasher share while a name server is silent', async () => {
    const resolve = dnsResolver({ servers, timeoutMs: 60_000, tries: 1 });
    const before = server.questions.length;
    const controller = new AbortController();
    // Eight lookups (two questions each) wait on the silent server: twice the threadpool's four threads.
    const lookups = Array.from({ length: 8 }, () =>
      publicAddressesOf(new URL('http://slow.example.test/a.png'), { resolve, signal: controller.signal }),
    );
    const settled = lookups.map((l) =>
      l.then(
        () => 'resolved',
        () => 'refused',
      ),
    );
    await server.received(before + 16);
    // Four threadpool jobs at once: each needs a thread, and all four finish while the lookups still wait.
    const hashes = await Promise.all(
      Array.from({ length: 4 }, (_, i) => promisify(pbkdf2)(`p${i}`, 'salt', 1000, 32, 'sha256')),
    );
    expect(hashes).toHaveLength(4);
    const pending = Symbol('pending');
    expect(await Promise.race([settled[0], Promise.resolve(pending)])).toBe(pending);
    // The caller leaving ends every lookup at once, as unresolvable, without the name server's answer.
    controller.abort();
    await expect(Promise.all(lookups.map((l) => l.catch((e: unknown) => e)))).resolves.toEqual(
      Array(8).fill(new AddressRefused('unresolvable')),
    );
    resolve.cancel();
  });

  it('ends a lookup on a silent name server at its own deadline', async () => {
    const resolve = dnsResolver({ servers, timeoutMs: 50, tries: 1 });
    await expect(publicAddressesOf(new URL('http://slow.example.test/'), { resolve })).rejects.toEqual(
      new AddressRefused('unresolvable'),
    );
  });
});
