import { mkdtempSync, rmSync, existsSync, readdirSync } from 'fs';
import { tmpdir } from 'os';
import * as path from 'path';
import { Readable } from 'stream';
import { LocalDiskStorage } from './local-disk.storage';
import { isSafeKey, ObjectStorage } from './object-storage';
import { S3Storage } from './s3.storage';
// eslint-disable-next-line @typescript-eslint/no-require-imports -- s3rver ships no type declarations
const S3rver = require('s3rver');

async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(Buffer.from(c));
  return Buffer.concat(chunks);
}

describe('isSafeKey', () => {
  it.each(['a.png', '2026/11/abc-def.jpg', 'x_y'])('accepts %s', (k) => expect(isSafeKey(k)).toBe(true));
  it.each(['../etc/passwd', '/abs.png', 'a/../b', 'a\\b', '.hidden', 'a//b', '', 'a/./b', 'a.b.c'])('rejects %s', (k) =>
    expect(isSafeKey(k)).toBe(false),
  );
});

function contract(name: string, make: () => ObjectStorage) {
  describe(`${name} storage contract`, () => {
    it('stores, reads back and deletes bytes', async () => {
      const s = make();
      const bytes = Buffer.from([0, 1, 2, 3, 250, 251]);
      await s.put('2026/ab/file-1.bin', bytes, 'application/octet-stream');
      const got = await s.get('2026/ab/file-1.bin');
      expect(got).not.toBeNull();
      expect(await readAll(got!.body)).toEqual(bytes);
      await s.delete('2026/ab/file-1.bin');
      expect(await s.get('2026/ab/file-1.bin')).toBeNull();
    });
    it('returns null for a missing object', async () => {
      expect(await make().get('missing.png')).toBeNull();
    });
    it('refuses traversal keys', async () => {
      await expect(make().put('../evil.txt', Buffer.from('x'), 'text/plain')).rejects.toThrow(/unsafe/);
      await expect(make().get('../../etc/passwd')).rejects.toThrow(/unsafe/);
    });
  });
}

describe('storage', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'storage-spec-'));
  const s3dir = mkdtempSync(path.join(tmpdir(), 's3rver-spec-'));
  let s3server: { close(): Promise<void> };
  let endpoint = '';
  const s3clients: S3Storage[] = [];

  beforeAll(async () => {
    s3server = new S3rver({
      port: 0,
      address: '127.0.0.1',
      silent: true,
      directory: s3dir,
      configureBuckets: [{ name: 'media' }],
    });
    const addr = await (s3server as unknown as { run(): Promise<{ port: number }> }).run();
    endpoint = `http://127.0.0.1:${addr.port}`;
  });
  afterAll(async () => {
    s3clients.forEach((c) => c.destroy());
    await s3server.close();
    rmSync(dir, { recursive: true, force: true });
    rmSync(s3dir, { recursive: true, force: true });
  });

  contract('local disk', () => new LocalDiskStorage(dir));
  contract('S3 (s3rver)', () => {
    const c = new S3Storage({
      bucket: 'media',
      region: 'us-east-1',
      endpoint,
      accessKeyId: 'S3RVER',
      secretAccessKey: 'S3RVER',
      prefix: 'm',
    });
    s3clients.push(c);
    return c;
  });

  it('local disk leaves no temp files and writes under its root only', async () => {
    const s = new LocalDiskStorage(dir);
    await s.put('k.png', Buffer.from('x'), 'image/png');
    expect(existsSync(path.join(dir, 'k.png'))).toBe(true);
    expect(readdirSync(dir).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });

  it('S3 objects land in the bucket under the prefix', async () => {
    const s = new S3Storage({
      bucket: 'media',
      region: 'us-east-1',
      endpoint,
      accessKeyId: 'S3RVER',
      secretAccessKey: 'S3RVER',
      prefix: 'pre',
    });
    s3clients.push(s);
    await s.put('x.png', Buffer.from('hello'), 'image/png');
    const other = new S3Storage({
      bucket: 'media',
      region: 'us-east-1',
      endpoint,
      accessKeyId: 'S3RVER',
      secretAccessKey: 'S3RVER',
    });
    s3clients.push(other);
    expect(await other.get('x.png')).toBeNull();
    expect(await readAll((await other.get('pre/x.png'))!.body)).toEqual(Buffer.from('hello'));
  });
});
