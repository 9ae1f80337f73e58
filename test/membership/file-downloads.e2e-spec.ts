/**
 * Public downloads of /files from S3 (a local s3rver behind a byte-counting proxy): a HEAD reads nothing from the
 * storage, and slow downloads of one network cannot take the replica's S3 sockets.
 */
import { randomBytes } from 'crypto';
import { mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import * as path from 'path';
import request from 'supertest';
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { DownloadSlots } from '@app/storage';
import { RunningApp, startMembership } from '../support/apps';
import { fetchAs, stalledDownload } from '../support/downloads';
import { tinyPng } from '../support/png';
import { TcpProxy } from '../support/tcp-proxy';
import { until } from '../support/until';
import { bearer, client } from './fakes';
// eslint-disable-next-line @typescript-eslint/no-require-imports -- s3rver ships no type declarations
const S3rver = require('s3rver');

const BUCKET = 'member-media';
const PER_NETWORK = 4;
const REPLICA = 6;

describe('membership /files downloads from S3', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'file-downloads-'));
  let s3server: { run(): Promise<{ port: number }>; close(): Promise<void> };
  let proxy: TcpProxy;
  let s3: S3Client;
  let app: RunningApp;
  let slots: DownloadSlots;
  let small: { url: string; bytes: Buffer };
  /** A file whose stored object is 16 MB: far more than the sockets to a client reading nothing can hold. */
  let large: string;

  const upload = async (token: string, bytes: Buffer): Promise<{ url: string; filename: string }> =>
    (
      await request(app.url)
        .post('/api/v1/app/files')
        .set(bearer(token))
        .attach('file', bytes, { filename: 'photo.png', contentType: 'image/png' })
        .expect(200)
    ).body.data;

  beforeAll(async () => {
    s3server = new S3rver({
      port: 0,
      address: '127.0.0.1',
      silent: true,
      directory: dir,
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
    app = await startMembership({
      STORAGE_DRIVER: 's3',
      S3_BUCKET: BUCKET,
      S3_ENDPOINT: `http://127.0.0.1:${await proxy.start()}`,
      S3_ACCESS_KEY_ID: 'S3RVER',
      S3_SECRET_ACCESS_KEY: 'S3RVER',
      S3_PREFIX: 'uploads',
      DOWNLOADS_PER_NETWORK: String(PER_NETWORK),
      DOWNLOADS_IN_FLIGHT_MAX: String(REPLICA),
    });
    slots = app.app.get(DownloadSlots);
    await client(app.url).post('/api/v1/app/auth/register').send({ username: 'downloads', password: 'files-password' });
    const login = await client(app.url)
      .post('/api/v1/app/auth/login')
      .send({ account: 'downloads', password: 'files-password' })
      .expect(200);
    const token = login.body.data.token as string;
    const bytes = tinyPng(2000);
    small = { url: (await upload(token, bytes)).url, bytes };
    const big = await upload(token, tinyPng());
    await s3.send(
      new PutObjectCommand({ Bucket: BUCKET, Key: `uploads/${big.filename}`, Body: randomBytes(16 * 1024 * 1024) }),
    );
    large = big.url;
  });
  afterAll(async () => {
    await app?.close();
    await proxy?.stop();
    s3?.destroy();
    await s3server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('HEAD answers the headers GET gives from the file record, without a byte to or from the storage', async () => {
    const before = [proxy.bytesToTarget, proxy.bytesFromTarget];
    const head = await fetchAs(app.url, 'HEAD', small.url, '198.51.100.1');
    expect([proxy.bytesToTarget, proxy.bytesFromTarget]).toEqual(before);
    const get = await fetchAs(app.url, 'GET', small.url, '198.51.100.1');
    expect(get.status).toBe(200);
    expect(Buffer.compare(get.body, small.bytes)).toBe(0);
    expect([head.status, head.body.length]).toEqual([200, 0]);
    const same = [
      'content-type',
      'content-length',
      'content-disposition',
      'content-security-policy',
      'cache-control',
      'x-content-type-options',
      'etag',
      'last-modified',
    ];
    const pick = (h: Record<string, unknown>) => Object.fromEntries(same.map((k) => [k, h[k]]));
    expect(pick(head.headers)).toEqual(pick(get.headers));
    expect((await fetchAs(app.url, 'HEAD', '/files/2026/01/nope.png', '198.51.100.1')).status).toBe(404);
  });

  it("a network's downloads past DOWNLOADS_PER_NETWORK get 429 while another network still downloads", async () => {
    const crowd = Array.from({ length: PER_NETWORK }, () => stalledDownload(app.url, large, '203.0.113.7'));
    try {
      expect(await Promise.all(crowd.map((d) => d.started))).toEqual(Array(PER_NETWORK).fill(200));
      const refused = await fetchAs(app.url, 'GET', large, '203.0.113.7');
      expect([refused.status, refused.headers['retry-after'], JSON.parse(refused.body.toString())]).toEqual([
        429,
        '1',
        {
          code: 429,
          message: 'Too many downloads from your network are in progress; retry when one is done',
          data: null,
        },
      ]);
      const elsewhere = await fetchAs(app.url, 'GET', large, '203.0.113.8');
      expect([elsewhere.status, elsewhere.body.length]).toEqual([200, 16 * 1024 * 1024]);
      expect(slots.inFlight).toBe(PER_NETWORK);
    } finally {
      crowd.forEach((d) => d.drop());
    }
    await until(() => slots.inFlight === 0);
    expect((await fetchAs(app.url, 'GET', small.url, '203.0.113.7')).status).toBe(200);
  });

  it('past DOWNLOADS_IN_FLIGHT_MAX, all networks together, a download gets 503', async () => {
    const held = [
      ...Array.from({ length: PER_NETWORK }, () => stalledDownload(app.url, large, '203.0.113.20')),
      ...Array.from({ length: REPLICA - PER_NETWORK }, () => stalledDownload(app.url, large, '203.0.113.21')),
    ];
    try {
      expect(await Promise.all(held.map((d) => d.started))).toEqual(Array(REPLICA).fill(200));
      const refused = await fetchAs(app.url, 'GET', small.url, '203.0.113.22');
      expect([refused.status, refused.headers['retry-after'], JSON.parse(refused.body.toString())]).toEqual([
        503,
        '1',
        { code: 503, message: 'This server is serving too many downloads; retry shortly', data: null },
      ]);
    } finally {
      held.forEach((d) => d.drop());
    }
    await until(() => slots.inFlight === 0);
    expect((await fetchAs(app.url, 'GET', small.url, '203.0.113.22')).status).toBe(200);
  });
});
