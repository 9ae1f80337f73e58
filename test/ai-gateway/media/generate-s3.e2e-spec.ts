/**
 * Image generation with STORAGE_DRIVER=s3: the generated images land in an S3-compatible bucket (a local
 * s3rver), and every gateway replica (same database, its own DATA_DIR) serves them under {cdn_url}.
 */
import { randomBytes, randomUUID } from 'crypto';
import { existsSync, mkdtempSync, rmSync } from 'fs';
import { request as httpRequest } from 'http';
import { tmpdir } from 'os';
import { join } from 'path';
import {
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import OpenAI from 'openai';
import { RunningApp, startGateway } from '../../support/apps';
import { GatewayFixture, startGatewayFixture } from '../gateway-fixture';
import { ledgerRows } from './ledger';
import { MediaUpstream, startMediaUpstream } from './media-upstream';
// eslint-disable-next-line @typescript-eslint/no-require-imports -- s3rver ships no type declarations
const S3rver = require('s3rver');

const BUCKET = 'gateway-media';
const PREFIX = 'gw';

/**
 * Starts a GET from client address `ip` (X-Forwarded-For, trusted from loopback), reads the first chunk of the body,
 * then drops the connection (a client that goes away).
 */
function abortAfterFirstChunk(base: string, path: string, ip: string): Promise<void> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const headers = { 'x-forwarded-for': ip };
    const req = httpRequest({ host: hostname, port, path, method: 'GET', agent: false, headers }, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`GET ${path}: ${res.statusCode}`));
      res.once('data', () => {
        req.destroy();
        resolve();
      });
    });
    req.on('error', reject); // after resolve() this is a no-op
    req.setTimeout(10_000, () => req.destroy(new Error(`timeout: GET ${path}`)));
    req.end();
  });
}

/** GET with the path sent exactly as written (fetch would normalise `..` segments away). */
function rawGet(
  base: string,
  path: string,
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: hostname, port, path, method: 'GET' }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.setTimeout(10_000, () => req.destroy(new Error(`timeout: GET ${path}`)));
    req.end();
  });
}

describe('image generation stored in S3 (s3rver), served by two gateway replicas', () => {
  const s3dir = mkdtempSync(join(tmpdir(), 'gw-s3rver-'));
  let s3server: { run(): Promise<{ port: number }>; close(): Promise<void> };
  let s3: S3Client;
  let media: MediaUpstream;
  let f: GatewayFixture;
  let second: RunningApp;
  let key: string;

  const post = (path: string, body: unknown) =>
    fetch(`${f.gw.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  const fromBucket = async (objectKey: string): Promise<Buffer> => {
    const out = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: objectKey }));
    return Buffer.from(await out.Body!.transformToByteArray());
  };
  /** `{cdn_url}/images/...` -> the key inside the bucket. */
  const objectKeyOf = (url: string, cdn: string) => `${PREFIX}/${url.slice(cdn.length + 1)}`;

  beforeAll(async () => {
    s3server = new S3rver({
      port: 0,
      address: '127.0.0.1',
      silent: true,
      directory: s3dir,
      configureBuckets: [{ name: BUCKET }],
    });
    const endpoint = `http://127.0.0.1:${(await s3server.run()).port}`;
    s3 = new S3Client({
      region: 'us-east-1',
      endpoint,
      forcePathStyle: true,
      credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
    });
    media = await startMediaUpstream();
    const env = {
      AI_IMAGES_BASE_URL: media.url,
      AI_IMAGES_API_KEY: 'sk-media-upstream',
      STORAGE_DRIVER: 's3',
      S3_BUCKET: BUCKET,
      S3_ENDPOINT: endpoint,
      S3_ACCESS_KEY_ID: 'S3RVER',
      S3_SECRET_ACCESS_KEY: 'S3RVER',
      S3_PREFIX: PREFIX,
    };
    f = await startGatewayFixture(env);
    // The second replica joins the first one's database, with its own (empty) DATA_DIR.
    second = await startGateway(
      { ...env, AI_PROVIDERS_FILE: f.providersFile, AI_LEDGER_FLUSH_MS: '100' },
      { dbUrl: f.gw.dbUrl },
    );
    expect(second.dataDir).not.toBe(f.gw.dataDir);
    key = (await f.createKey({ name: 'images' })).key;
  });
  afterAll(async () => {
    await second?.close();
    await f?.close(); // drops the database
    await media?.close();
    s3?.destroy();
    await s3server?.close();
    for (const d of [s3dir, f?.gw.dataDir, second?.dataDir]) if (d) rmSync(d, { recursive: true, force: true });
  });

  it('puts /v1/vision/generate images into the bucket; both replicas serve the same bytes with Content-Type and nosniff', async () => {
    const res = await post('/v1/vision/generate', { prompt: 'a lighthouse at dawn', size: '256x256', n: 2 });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { images: Array<{ url: string; revised_prompt: string }> };
    expect(body.images).toHaveLength(2);
    const cdn = `${f.gw.url}/cdn`;
    const listed = await s3.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: `${PREFIX}/images/` }));
    const inBucket = (listed.Contents ?? []).map((o) => o.Key);
    for (const image of body.images) {
      expect(image.url).toMatch(new RegExp(`^${cdn}/images/\\d{4}/\\d{2}/\\d{2}/[0-9a-f-]{36}\\.png$`));
      const objectKey = objectKeyOf(image.url, cdn);
      expect(inBucket).toContain(objectKey);
      const head = await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: objectKey }));
      expect(head.ContentType).toBe('image/png');
      const stored = await fromBucket(objectKey);
      expect(stored.subarray(1, 4).toString('ascii')).toBe('PNG');
      // Nothing on the local disk of either replica.
      for (const dir of [f.gw.dataDir, second.dataDir])
        expect(existsSync(join(dir, 'media', image.url.slice(cdn.length + 1)))).toBe(false);

      const path = image.url.slice(f.gw.url.length);
      for (const base of [f.gw.url, second.url]) {
        const served = await fetch(`${base}${path}`); // public, no key
        expect([base, served.status]).toEqual([base, 200]);
        expect(served.headers.get('content-type')).toBe('image/png');
        expect(served.headers.get('x-content-type-options')).toBe('nosniff');
        expect(served.headers.get('content-length')).toBe(String(stored.length));
        expect(Buffer.compare(Buffer.from(await served.arrayBuffer()), stored)).toBe(0);
      }
    }
    // The two images are different objects (different colours from the upstream).
    const [a, b] = await Promise.all(body.images.map((i) => fromBucket(objectKeyOf(i.url, cdn))));
    expect(Buffer.compare(a, b)).not.toBe(0);
    const [row] = await ledgerRows(f.gw.dbUrl, '/v1/vision/generate');
    expect({ status: row.status, images: row.images }).toEqual({ status: 'ok', images: 2 });
  });

  it('stores /v1/images/generations (openai SDK) in the bucket too, generated on the second replica and served by the first', async () => {
    const client = new OpenAI({ apiKey: key, baseURL: `${second.url}/v1`, maxRetries: 0, timeout: 20_000 });
    const out = await client.images.generate({ prompt: 'a red kite', n: 1, size: '1024x1024' });
    const url = out.data![0].url!;
    expect(url.startsWith(`${second.url}/cdn/images/`)).toBe(true);
    const stored = await fromBucket(objectKeyOf(url, `${second.url}/cdn`));
    const served = await fetch(`${f.gw.url}${url.slice(second.url.length)}`);
    expect(served.status).toBe(200);
    expect(served.headers.get('content-type')).toBe('image/png');
    expect(Buffer.compare(Buffer.from(await served.arrayBuffer()), stored)).toBe(0);
  });

  it('answers 404 in the OpenAI error shape for unknown and traversal keys under /cdn/images (401 for paths no route serves), on both replicas', async () => {
    // An object in the same bucket outside images/ (say, a membership upload) must not be reachable.
    await s3.send(
      new PutObjectCommand({
        Bucket: BUCKET,
        Key: `${PREFIX}/2026/01/secret.png`,
        Body: Buffer.from('private'),
        ContentType: 'image/png',
      }),
    );
    await s3.send(
      new PutObjectCommand({
        Bucket: BUCKET,
        Key: 'secret.png',
        Body: Buffer.from('private'),
        ContentType: 'image/png',
      }),
    );
    const paths = [
      '/cdn/images/2026/01/01/00000000-0000-0000-0000-000000000000.png',
      '/cdn/images/nope.png',
      '/cdn/images/2026/01/01/x.exe',
      '/cdn/images/..%2F2026%2F01%2Fsecret.png',
      '/cdn/images/..%2F..%2Fsecret.png',
      '/cdn/images/%2e%2e/2026/01/secret.png',
      '/cdn/images/../2026/01/secret.png',
      '/cdn/images/..%5C2026%5C01%5Csecret.png',
      '/cdn/images/2026/01/01/%00.png',
    ];
    // Paths no route of the gateway serves: like every path but health and docs, they need a key first
    // (libs/platform/src/http/authenticate-first.ts), so a stranger gets 401 without learning more.
    const unrouted = ['/cdn/2026/01/secret.png', '/cdn/secret.png', '/cdn/images/'];
    for (const base of [f.gw.url, second.url]) {
      for (const path of [...paths, ...unrouted]) {
        const res = await rawGet(base, path);
        const status = unrouted.includes(path) ? 401 : 404;
        expect([path, res.status]).toEqual([path, status]);
        expect(String(res.headers['content-type'])).toMatch(/^application\/json/);
        const json = JSON.parse(res.body.toString('utf8'));
        if (status === 404)
          expect([path, json]).toEqual([
            path,
            { error: { message: expect.any(String), type: 'invalid_request_error', code: 'not_found', param: null } },
          ]);
        expect(res.body.toString('utf8')).not.toContain('private');
      }
    }
  });

  it('keeps serving after many clients drop a large image mid-download (no S3 connections left hanging)', async () => {
    // 8 MB of noise: far more than the socket buffers, so each S3 read is still in flight when its client goes away.
    const path = `/cdn/images/2026/01/01/${randomUUID()}.png`;
    const big = randomBytes(8 * 1024 * 1024);
    await s3.send(
      new PutObjectCommand({
        Bucket: BUCKET,
        Key: `${PREFIX}${path.slice('/cdn'.length)}`,
        Body: big,
        ContentType: 'image/png',
      }),
    );
    // More dropped downloads than the S3 client's download pool (DOWNLOADS_IN_FLIGHT_MAX, 32 sockets), each from an
    // address of its own (one network takes DOWNLOADS_PER_NETWORK at once: test/ai-gateway/media/cdn-downloads.e2e-spec.ts).
    for (let i = 0; i < 60; i += 10)
      await Promise.all(
        Array.from({ length: 10 }, (_, j) => abortAfterFirstChunk(f.gw.url, path, `203.0.113.${i + j + 1}`)),
      );
    const res = await rawGet(f.gw.url, path);
    expect(res.status).toBe(200);
    expect(Buffer.compare(res.body, big)).toBe(0);
  }, 30_000);
});
