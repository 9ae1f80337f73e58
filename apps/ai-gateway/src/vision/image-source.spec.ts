import { createServer, Server } from 'http';
import { AddressInfo } from 'net';
import { isForbiddenAddress, loadImageSource, Resolver } from './image-source';

const PNG = Buffer.from(
  '89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d49444154789c6300010000000500010d0a2db40000000049454e44ae426082',
  'hex',
);

describe('loadImageSource', () => {
  let server: Server;
  let base: string;
  let port: number;
  let hits: string[] = [];
  const sockets = new Set<any>();

  beforeAll(async () => {
    server = createServer((req, res) => {
      hits.push(req.url!);
      const [path, query] = req.url!.split('?');
      if (path === '/cat.png') return void res.writeHead(200, { 'content-type': 'image/png' }).end(PNG);
      if (path === '/redirect') return void res.writeHead(302, { location: decodeURIComponent(query) }).end();
      if (path === '/loop') return void res.writeHead(302, { location: '/loop' }).end();
      if (path === '/big-declared') return void res.writeHead(200, { 'content-length': String(10_000_000) }).end();
      if (path === '/big-chunked') {
        res.writeHead(200, { 'content-type': 'image/png' });
        const chunk = Buffer.alloc(64 * 1024);
        let sent = 0;
        const pump = () => {
          while (sent < 40 && res.write(chunk)) sent++;
          if (sent < 40) res.once('drain', pump);
          else res.end();
        };
        return pump();
      }
      if (path === '/slow') return; // never answers
      res.writeHead(404).end();
    });
    server.on('connection', (s) => {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
    base = `http://127.0.0.1:${port}`;
  });
  afterAll(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((r) => server.close(r));
  });
  beforeEach(() => (hits = []));

  const strict = { maxBytes: 1_000_000, timeoutMs: 2000, maxRedirects: 3 };
  // The test server lives on loopback, so the positive path needs 127.0.0.1 allowed explicitly.
  const local = { ...strict, allowedCidrs: ['127.0.0.1/32'] };
  const fakeDns: Resolver = async (host) => {
    const table: Record<string, string> = {
      'intranet.example.test': '10.1.2.3',
      'metadata.example.test': '169.254.169.254',
      'router.example.test': '192.168.1.1',
      'v6.example.test': 'fd00::1',
    };
    if (!table[host]) throw new Error('ENOTFOUND');
    return [{ address: table[host], family: table[host].includes(':') ? 6 : 4 }];
  };

  it('fetches an image from an allowed host', async () => {
    expect((await loadImageSource(`${base}/cat.png`, local)).equals(PNG)).toBe(true);
  });

  it.each([
    ['loopback IPv4', () => `${base}/cat.png`],
    ['loopback IPv6', () => `http://[::1]:${port}/cat.png`],
    ['IPv4-mapped IPv6 loopback', () => `http://[::ffff:127.0.0.1]:${port}/cat.png`],
    ['decimal-encoded loopback', () => `http://2130706433:${port}/cat.png`],
    ['cloud metadata', () => 'http://169.254.169.254/latest/meta-data/'],
    ['localhost by name', () => `http://localhost:${port}/cat.png`],
    ['private 10/8 by name', () => 'http://intranet.example.test/cat.png'],
    ['metadata by name', () => 'http://metadata.example.test/latest/meta-data/'],
    ['private IPv6 by name', () => 'http://v6.example.test/cat.png'],
    ['unspecified address', () => `http://0.0.0.0:${port}/cat.png`],
  ])('refuses %s without connecting', async (_name, url) => {
    await expect(
      loadImageSource(url(), { ...strict, resolve: url().includes('example.test') ? fakeDns : undefined }),
    ).rejects.toMatchObject({
      status: 400,
      errorCode: 'image_url_forbidden',
    });
    expect(hits).toEqual([]);
  });

  it.each([
    ['cloud metadata', 'http://169.254.169.254/latest/meta-data/'],
    ['IPv6 loopback', () => `http://[::1]:${port}/cat.png`],
    ['a name resolving to a private address', 'http://router.example.test/admin'],
    ['another port on loopback by name', () => `http://localhost:${port}/cat.png`],
  ])('refuses a redirect to %s', async (_name, target) => {
    const to = typeof target === 'function' ? target() : target;
    await expect(
      loadImageSource(`${base}/redirect?${encodeURIComponent(to)}`, {
        ...local,
        resolve: async (h) => (h === 'localhost' ? [{ address: '127.0.0.2', family: 4 }] : fakeDns(h)),
      }),
    ).rejects.toMatchObject({
      errorCode: 'image_url_forbidden',
    });
    expect(hits).toEqual([expect.stringMatching(/^\/redirect/)]);
  });

  it('follows a redirect to an allowed image and stops redirect loops', async () => {
    expect((await loadImageSource(`${base}/redirect?${encodeURIComponent('/cat.png')}`, local)).equals(PNG)).toBe(true);
    await expect(loadImageSource(`${base}/loop`, local)).rejects.toMatchObject({
      message: 'image URL could not be fetched',
    });
    expect(hits.filter((h) => h === '/loop')).toHaveLength(4);
  });

  it('caps size by header and while streaming, and caps time', async () => {
    await expect(loadImageSource(`${base}/big-declared`, local)).rejects.toMatchObject({ status: 413 });
    await expect(loadImageSource(`${base}/big-chunked`, local)).rejects.toMatchObject({ status: 413 });
    // /slow never answers: only the time cap can end the call.
    await expect(loadImageSource(`${base}/slow`, { ...local, timeoutMs: 300 })).rejects.toMatchObject({
      errorCode: 'image_fetch_failed',
    });
    await expect(loadImageSource(`${base}/missing.png`, local)).rejects.toMatchObject({
      status: 400,
      errorCode: 'image_fetch_failed',
    });
  });

  it('decodes data URLs and bare base64, refusing other schemes and non-images', async () => {
    const b64 = PNG.toString('base64');
    expect((await loadImageSource(`data:image/png;base64,${b64}`, strict)).equals(PNG)).toBe(true);
    expect((await loadImageSource(b64, strict)).equals(PNG)).toBe(true);
    await expect(loadImageSource('data:text/plain;base64,aGVsbG8=', strict)).rejects.toMatchObject({ status: 400 });
    await expect(loadImageSource('file:///etc/passwd', strict)).rejects.toMatchObject({ status: 400 });
    await expect(loadImageSource('ftp://example.com/a.png', strict)).rejects.toMatchObject({ status: 400 });
    await expect(loadImageSource('not base64 at all!', strict)).rejects.toMatchObject({ status: 400 });
    await expect(
      loadImageSource(Buffer.alloc(2000).toString('base64'), { ...strict, maxBytes: 1000 }),
    ).rejects.toMatchObject({ status: 413 });
  });

  it('classifies addresses', () => {
    for (const a of [
      '127.0.0.1',
      '10.0.0.1',
      '172.16.5.4',
      '192.168.0.1',
      '169.254.169.254',
      '100.64.0.1',
      '::1',
      'fe80::1',
      'fc00::1',
      '::ffff:10.0.0.1',
      '64:ff9b::a9fe:a9fe',
      '224.0.0.1',
    ]) {
      expect([a, isForbiddenAddress(a)]).toEqual([a, true]);
    }
    for (const a of ['8.8.8.8', '1.1.1.1', '2606:4700:4700::1111', '::ffff:8.8.8.8'])
      expect([a, isForbiddenAddress(a)]).toEqual([a, false]);
  });

  // L3: every special-purpose range and every way of hiding an IPv4 address inside IPv6.
  it.each([
    // IPv4 special-purpose registry
    '0.0.0.0',
    '0.1.2.3',
    '10.0.0.1',
    '100.64.0.1',
    '100.127.255.254',
    '127.0.0.1',
    '127.255.255.254',
    '169.254.169.254',
    '172.16.0.1',
    '172.31.255.255',
    '192.0.0.1',
    '192.0.0.9',
    '192.0.0.10',
    '192.0.0.170',
    '192.0.2.1',
    '192.31.196.1',
    '192.52.193.1',
    '192.88.99.1',
    '192.168.0.1',
    '192.175.48.1',
    '198.18.0.1',
    '198.19.255.255',
    '198.51.100.1',
    '203.0.113.1',
    '224.0.0.1',
    '239.255.255.250',
    '240.0.0.1',
    '255.255.255.255',
    // IPv6 special-purpose registry and other non-global space
    '::',
    '::1',
    '100::1',
    '100:0:0:1::1',
    '2001::1',
    '2001:1::1',
    '2001:2::1',
    '2001:3::1',
    '2001:4:112::1',
    '2001:10::1',
    '2001:20::1',
    '2001:30::1',
    '2001:db8::1',
    '2620:4f:8000::1',
    '3fff::1',
    '5f00::1',
    'fc00::1',
    'fd12:3456::1',
    'fe80::1',
    'fe80::1%eth0',
    'fec0::1',
    'ff02::1',
    '4000::1',
    '1::1',
    // embedded IPv4, each form with a loopback, private and metadata address inside
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:10.0.0.1',
    '::ffff:169.254.169.254', // IPv4-mapped
    '::127.0.0.1',
    '::7f00:1',
    '::8.8.8.8', // IPv4-compatible (deprecated)
    '::ffff:0:127.0.0.1',
    '::ffff:0:7f00:1',
    '::ffff:0:8.8.8.8', // IPv4-translated (RFC 6145)
    '64:ff9b::127.0.0.1',
    '64:ff9b::7f00:1',
    '64:ff9b::a9fe:a9fe',
    '64:ff9b::10.0.0.1', // well-known NAT64
    '64:ff9b:1::7f00:1',
    '64:ff9b:1::808:808',
    '64:ff9b:1:ffff::1', // local-use NAT64 (RFC 8215)
    '2002:7f00:1::1',
    '2002:a00:1::1',
    '2002:808:808::1', // 6to4
    '2001:0:4136:e378:8000:63bf:80ff:fffe',
    '2001::ffff:ffff', // Teredo
    // not an address
    'localhost',
    '',
    '127.1',
    '1.2.3.4.5',
  ])('refuses %s', (address) => {
    expect(isForbiddenAddress(address)).toBe(true);
  });

  it.each([
    '8.8.8.8',
    '1.1.1.1',
    '93.184.215.14',
    '2606:4700:4700::1111',
    '2a00:1450:4001:81c::200e',
    '::ffff:8.8.8.8',
    '64:ff9b::8.8.8.8',
    '64:ff9b::808:808',
  ])('allows the public address %s', (address) => {
    expect(isForbiddenAddress(address)).toBe(false);
  });

  it.each([
    ['IPv4-translated loopback', () => `http://[::ffff:0:127.0.0.1]:${port}/cat.png`],
    ['local NAT64 loopback', () => `http://[64:ff9b:1::7f00:1]:${port}/cat.png`],
    ['6to4 loopback', () => `http://[2002:7f00:1::]:${port}/cat.png`],
    ['IPv4-compatible loopback', () => `http://[::127.0.0.1]:${port}/cat.png`],
    ['a name with one public and one 6to4 answer', () => `http://mixed.example.test:${port}/cat.png`],
  ])('refuses a URL with %s before connecting', async (_name, url) => {
    const resolve: Resolver = async () => [
      { address: '93.184.215.14', family: 4 },
      { address: '2002:7f00:1::1', family: 6 },
    ];
    await expect(loadImageSource(url(), { ...strict, resolve })).rejects.toMatchObject({
      status: 400,
      errorCode: 'image_url_forbidden',
    });
    expect(hits).toEqual([]);
  });

  it('answers every fetch failure with one message that names no host, port or cause', async () => {
    // A closed port, an answering 404, an unresolvable name, a redirect loop and a timeout look alike.
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const closedPort = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const failures = await Promise.all(
      [
        loadImageSource(`http://127.0.0.1:${closedPort}/cat.png`, local),
        loadImageSource(`${base}/missing.png`, local),
        loadImageSource('http://nowhere.example.test/cat.png', { ...local, resolve: fakeDns }),
        loadImageSource(`${base}/loop`, local),
        loadImageSource(`${base}/slow`, { ...local, timeoutMs: 200 }),
      ].map((p) =>
        p.then(
          () => null,
          (e) => ({
            status: e.status,
            body: e.getResponse?.() ?? e.message,
            message: e.message,
            errorCode: e.errorCode,
          }),
        ),
      ),
    );
    for (const f of failures) {
      expect(f).toMatchObject({
        status: 400,
        message: 'image URL could not be fetched',
        errorCode: 'image_fetch_failed',
      });
      expect(JSON.stringify(f)).not.toMatch(/ECONNREFUSED|404|nowhere|redirect|\d+ ms|127\.0\.0\.1/);
    }
  });

  it('connects only to the address it checked (a second DNS answer cannot swap in loopback)', async () => {
    let calls = 0;
    // First answer public-looking but allowed for the test; a rebinding resolver would answer loopback next.
    const resolve: Resolver = async () =>
      ++calls === 1 ? [{ address: '127.0.0.1', family: 4 }] : [{ address: '10.0.0.1', family: 4 }];
    expect(
      (await loadImageSource(`http://rebind.example.test:${port}/cat.png`, { ...local, resolve })).equals(PNG),
    ).toBe(true);
    expect(calls).toBe(1);
  });
});
