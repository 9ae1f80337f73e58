/**
 * Public downloads of /cdn/images from S3 (a local s3rver behind a byte-counting proxy): a HEAD reads no object,
 * and slow downloads of one network cannot take the replica's S3 sockets.
 */
import { randomBytes, randomUUID } from 'crypto';
import { mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { DownloadSlots } from '@app/storage';
import { RunningApp, startGateway } from '../../support/apps';
import { fetchAs, stalledDownload } from '../../support/downloads';
import { TcpProxy } from '../../support/tcp-proxy';
import { until } from '../../support/until';
// eslint-disable-next-line @typescript-eslint/no-require-imports -- s3rver ships no type declarations
const S3rver = require('s3rver');

const BUCKET = 'gateway-media';
const PER_NETWORK = 4;
const REPLICA = 6;

describe('gateway /cdn/images downloads from S3', () => {
  const s3dir = mkdtempSync(join(tmpdir(), 'cdn-downloads-'));
  let s3server: { run(): Promise<{ port: number }>; close(): Promise<void> };
  let proxy: TcpProxy;
  let s3: S3Client;
  let gw: RunningApp;
  let slots: DownloadSlots;
  /** 16 MB: far more than the sockets between the gateway and a client reading nothing can hold. */
  const big = randomBytes(16 * 1024 * 1024);
  const path = `/cdn/images/2026/01/01/${randomUUID()}.png`;

  beforeAll(async () => {
    s3server = new S3rver({
      port: 0,
      address: '127.0.0.1',
      silent: true,
      directory: s3dir,
      configureBuckets: [{ name: BUCKET }],
    });
    const port = (await s3server.run()).port;
    proxy = new TcpProxy('127.0.0.1', port);
    s3 = new S3Client({
      region: 'us-east-1',
      endpoint: `http://127.0.0.1:${port}`,
      forcePathStyle: true,
      credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
    });
    await s3.send(
      new PutObjectCommand({
        Bucket: BUCKET,
        Key: `gw${path.slice('/cdn'.length)}`,
        Body: big,
        ContentType: 'image/png',
      }),
    );
    gw = await startGateway({
      STORAGE_DRIVER: 's3',
      S3_BUCKET: BUCKET,
      S3_ENDPOINT: `http://127.0.0.1:${await proxy.start()}`,
      S3_ACCESS_KEY_ID: 'S3RVER',
      S3_SECRET_ACCESS_KEY: 'S3RVER',
      S3_PREFIX: 'gw',
      DOWNLOADS_PER_NETWORK: String(PER_NETWORK),
      DOWNLOADS_IN_FLIGHT_MAX: String(REPLICA),
    });
    slots = gw.app.get(DownloadSlots);
  });
  afterAll(async () => {
    await gw?.close();
    await proxy?.stop();
    s3?.destroy();
    await s3server?.close();
    rmSync(s3dir, { recursive: true, force: true });
  });

  it('HEAD answers the headers GET gives, and the storage sends no byte of the object for it', async () => {
    const before = proxy.bytesFromTarget;
    const head = await fetchAs(gw.url, 'HEAD', path, '198.51.100.1');
    // The answer has ended on the gateway's side too (its download slot given back).
    await until(() => slots.inFlight === 0);
    const headBytes = proxy.bytesFromTarget - before;
    const get = await fetchAs(gw.url, 'GET', path, '198.51.100.1');
    expect(get.status).toBe(200);
    expect(Buffer.compare(get.body, big)).toBe(0);
    expect(head.status).toBe(200);
    expect(head.body.length).toBe(0);
    const same = ['content-type', 'content-length', 'cache-control', 'x-content-type-options', 'etag', 'last-modified'];
    const pick = (h: Record<string, unknown>) => Object.fromEntries(same.map((k) => [k, h[k]]));
    expect(pick(head.headers)).toEqual(pick(get.headers));
    expect(head.headers['content-length']).toBe(String(big.length));
    // A HeadObject's answer is a head of a few hundred bytes; a GetObject drained for Node to discard was 16 MB.
    expect(headBytes).toBeLessThan(4096);
    const missing = await fetchAs(gw.url, 'HEAD', '/cdn/images/2026/01/01/nope.png', '198.51.100.1');
    expect(missing.status).toBe(404);
  });

  it("a network's downloads past DOWNLOADS_PER_NETWORK get 429 while another network still downloads", async () => {
    const crowd = Array.from({ length: PER_NETWORK }, () => stalledDownload(gw.url, path, '203.0.113.7'));
    try {
      expect(await Promise.all(crowd.map((d) => d.started))).toEqual(Array(PER_NETWORK).fill(200));
      const refused = await fetchAs(gw.url, 'GET', path, '203.0.113.7');
      expect([refused.status, refused.headers['retry-after'], JSON.parse(refused.body.toString())]).toEqual([
        429,
        '1',
        {
          error: {
            message: `Too many downloads from your network in progress at once: at most ${PER_NETWORK} (DOWNLOADS_PER_NETWORK); retry when one has finished`,
            type: 'rate_limit_error',
            code: 'downloads_in_flight',
            param: null,
          },
        },
      ]);
      const elsewhere = await fetchAs(gw.url, 'GET', path, '203.0.113.8');
      expect(elsewhere.status).toBe(200);
      expect(Buffer.compare(elsewhere.body, big)).toBe(0);
      expect(slots.inFlight).toBe(PER_NETWORK);
    } finally {
      crowd.forEach((d) => d.drop());
    }
    await until(() => slots.inFlight === 0);
    expect((await fetchAs(gw.url, 'HEAD', path, '203.0.113.7')).status).toBe(200);
  });

  it('past DOWNLOADS_IN_FLIGHT_MAX, all networks together, a download gets 503', async () => {
    const held = [
      ...Array.from({ length: PER_NETWORK }, () => stalledDownload(gw.url, path, '203.0.113.20')),
      ...Array.from({ length: REPLICA - PER_NETWORK }, () => stalledDownload(gw.url, path, '203.0.113.21')),
    ];
    try {
      expect(await Promise.all(held.map((d) => d.started))).toEqual(Array(REPLICA).fill(200));
      const refused = await fetchAs(gw.url, 'GET', path, '203.0.113.22');
      expect([refused.status, refused.headers['retry-after'], JSON.parse(refused.body.toString()).error.code]).toEqual([
        503,
        '1',
        'downloads_busy',
      ]);
    } finally {
      held.forEach((d) => d.drop());
    }
    await until(() => slots.inFlight === 0);
    expect((await fetchAs(gw.url, 'GET', path, '203.0.113.22')).status).toBe(200);
  });
});
