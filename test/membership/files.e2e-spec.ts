import { mkdtempSync, rmSync, existsSync, readdirSync } from 'fs';
import { tmpdir } from 'os';
import * as path from 'path';
import { createHash } from 'crypto';
import { request as httpRequest } from 'http';
import request from 'supertest';
import {
  UploadAdmission,
  UPLOAD_RATE_GRACE_MS,
  UPLOADS_IN_FLIGHT_PER_MEMBER,
  UPLOADS_IN_FLIGHT_PER_NETWORK,
  UPLOADS_IN_FLIGHT_PER_REPLICA,
} from '../../apps/membership/src/files/upload-admission';
import { FilesService } from '../../apps/membership/src/files/files.service';
import { S3Storage } from '@app/storage';
import { RunningApp, startMembership } from '../support/apps';
import { FakeClock } from '../support/clock';
import { bearer, client } from './fakes';
import { sqlClient } from '../support/database';
import { tinyPng } from '../support/png';
// eslint-disable-next-line @typescript-eslint/no-require-imports -- s3rver ships no type declarations
const S3rver = require('s3rver');

const PDF = Buffer.from('%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n');
// A PE executable header ("MZ" ... "PE\0\0"), disguised below as a PNG.
const EXE = (() => {
  const b = Buffer.alloc(512);
  b.write('MZ', 0);
  b.writeUInt32LE(0x80, 0x3c);
  b.write('PE\0\0', 0x80, 'latin1');
  return b;
})();
const HTML = Buffer.from('<!doctype html><script>alert(document.cookie)</script>');
const SVG = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"><rect width="1" height="1"/></svg>');

const UPLOAD = '/api/v1/app/files';

async function member(app: RunningApp, username: string): Promise<string> {
  await client(app.url).post('/api/v1/app/auth/register').send({ username, password: 'files-password' }).expect(200);
  // Register opens no session: log in as the website does next.
  const res = await client(app.url)
    .post('/api/v1/app/auth/login')
    .send({ account: username, password: 'files-password' })
    .expect(200);
  return res.body.data.token;
}

describe('membership: file upload and public media (local disk)', () => {
  let app: RunningApp;
  let token: string;

  beforeAll(async () => {
    app = await startMembership({ UPLOAD_MAX_BYTES: '65536' });
    token = await member(app, 'uploader');
  });
  afterAll(() => app?.close());

  it('stores a PNG under a generated name and serves it inline with nosniff', async () => {
    const bytes = tinyPng();
    const res = await request(app.url)
      .post(UPLOAD)
      .set(bearer(token))
      .attach('file', bytes, { filename: 'my avatar.png', contentType: 'image/png' })
      .expect(200);
    const data = res.body.data;
    expect(data).toEqual({
      id: expect.any(String),
      url: expect.stringMatching(/^\/files\/\d{4}\/\d{2}\/[0-9a-f]{32}\.png$/),
      filename: expect.stringMatching(/^\d{4}\/\d{2}\/[0-9a-f]{32}\.png$/),
      originalFilename: 'my avatar.png',
      size: bytes.length,
      contentType: 'image/png',
      ext: 'png',
      sha256: createHash('sha256').update(bytes).digest('hex'),
      createdTime: expect.any(String),
    });
    expect(existsSync(path.join(app.dataDir, 'files', data.filename))).toBe(true);
    const served = await request(app.url)
      .get(data.url)
      .buffer(true)
      .parse((r, cb) => {
        const chunks: Buffer[] = [];
        r.on('data', (c: Buffer) => chunks.push(c));
        r.on('end', () => cb(null, Buffer.concat(chunks)));
      })
      .expect(200);
    expect(served.headers['content-type']).toBe('image/png');
    expect(served.headers['x-content-type-options']).toBe('nosniff');
    expect(served.headers['content-disposition']).toMatch(/^inline;/);
    expect(Buffer.compare(served.body, bytes)).toBe(0);
  });

  it('serves a PDF as an attachment', async () => {
    const res = await request(app.url)
      .post(UPLOAD)
      .set(bearer(token))
      .attach('file', PDF, { filename: 'report.pdf', contentType: 'application/pdf' })
      .expect(200);
    expect(res.body.data.contentType).toBe('application/pdf');
    const served = await request(app.url).get(res.body.data.url).expect(200);
    expect(served.headers['content-type']).toBe('application/pdf');
    expect(served.headers['content-disposition']).toMatch(/^attachment; filename="report.pdf"/);
    expect(served.headers['x-content-type-options']).toBe('nosniff');
  });

  it('refuses a disguised executable, HTML and SVG with 415, whatever the name and header say', async () => {
    for (const [bytes, filename, contentType] of [
      [EXE, 'cute-cat.png', 'image/png'],
      [HTML, 'page.jpg', 'image/jpeg'],
      [SVG, 'logo.svg', 'image/svg+xml'],
    ] as const) {
      const res = await request(app.url)
        .post(UPLOAD)
        .set(bearer(token))
        .attach('file', bytes, { filename, contentType })
        .expect(415);
      expect(res.body).toEqual({ code: 415, message: expect.stringMatching(/not allowed/), data: null });
    }
  });

  it('refuses an oversize file with a 413 envelope and stores nothing', async () => {
    const before = existsSync(path.join(app.dataDir, 'files')) ? countFiles(path.join(app.dataDir, 'files')) : 0;
    const res = await request(app.url)
      .post(UPLOAD)
      .set(bearer(token))
      .attach('file', tinyPng(70_000), { filename: 'big.png', contentType: 'image/png' });
    expect(res.status).toBe(413);
    expect(res.body.code).toBe(413);
    expect(countFiles(path.join(app.dataDir, 'files'))).toBe(before);
  });

  it('a path-traversal file name is only a label; the stored name is generated', async () => {
    const res = await request(app.url)
      .post(UPLOAD)
      .set(bearer(token))
      .attach('file', tinyPng(), { filename: '../../../etc/passwd.png', contentType: 'image/png' })
      .expect(200);
    expect(res.body.data.originalFilename).toBe('passwd.png');
    expect(res.body.data.filename).toMatch(/^\d{4}\/\d{2}\/[0-9a-f]{32}\.png$/);
    const evil = await request(app.url)
      .post(UPLOAD)
      .set(bearer(token))
      .attach('file', tinyPng(), { filename: '..\\..\\windows\\win.ini', contentType: 'image/png' })
      .expect(200);
    expect(evil.body.data.originalFilename).toBe('win.ini');
  });

  it('media paths that try to leave the storage root are 404', async () => {
    for (const p of [
      '/files/..%2F..%2Fpackage.json',
      '/files/%2e%2e/%2e%2e/package.json',
      '/files/2026/11/..%2f..%2f..%2fpackage.json',
      '/files/nope.png',
      '/files/',
    ]) {
      const res = await request(app.url).get(p);
      expect([404]).toContain(res.status);
      expect(res.body.code).toBe(404);
    }
  });

  it('needs a token (401) and a part named file (10000)', async () => {
    await request(app.url).post(UPLOAD).attach('file', tinyPng(), 'a.png').expect(401);
    const none = await request(app.url).post(UPLOAD).set(bearer(token)).field('other', 'x').expect(400);
    expect(none.body.code).toBe(10000);
    expect(none.body.message).toMatch(/file/);
    const wrongName = await request(app.url).post(UPLOAD).set(bearer(token)).attach('upload', tinyPng(), 'a.png');
    expect(wrongName.status).toBe(400);
    const json = await request(app.url).post(UPLOAD).set(bearer(token)).send({ file: 'x' }).expect(400);
    expect(json.body.code).toBe(10000);
  });

  it('refuses two files in one request', async () => {
    const res = await request(app.url)
      .post(UPLOAD)
      .set(bearer(token))
      .attach('file', tinyPng(), 'a.png')
      .attach('file', tinyPng(), 'b.png');
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
  });
});

describe('membership: uploads per member are bounded (UPLOAD_MAX_BYTES_PER_MEMBER)', () => {
  let app: RunningApp;
  const files = () => (existsSync(path.join(app.dataDir, 'files')) ? countFiles(path.join(app.dataDir, 'files')) : 0);
  const upload = (token: string) =>
    request(app.url)
      .post(UPLOAD)
      .set(bearer(token))
      .attach('file', tinyPng(30_000), { filename: 'big.png', contentType: 'image/png' });

  beforeAll(async () => {
    app = await startMembership({ UPLOAD_MAX_BYTES_PER_MEMBER: '100000' });
  });
  afterAll(() => app?.close());

  it('past the quota an upload is a 413 envelope and nothing is stored; another member is not affected', async () => {
    const token = await member(app, 'quota_one');
    for (let i = 0; i < 3; i++) await upload(token).expect(200);
    const before = files();
    const res = await upload(token);
    expect(res.status).toBe(413);
    expect(res.body).toMatchObject({
      code: 413,
      message: 'Upload limit reached: a member keeps at most 100000 bytes of files',
    });
    expect(files()).toBe(before);
    const zh = await upload(token).set('Accept-Language', 'zh-CN');
    expect(zh.body.message).toBe('上传已达上限：每位会员最多保存 100000 字节的文件');
    // What still fits is taken.
    await request(app.url)
      .post(UPLOAD)
      .set(bearer(token))
      .attach('file', tinyPng(), { filename: 'small.png', contentType: 'image/png' })
      .expect(200);
    await upload(await member(app, 'quota_two')).expect(200);
  });

  it('concurrent uploads of one member cannot pass the quota together; the total is the sum of the files recorded', async () => {
    const token = await member(app, 'quota_race');
    const before = files();
    const statuses = (await Promise.all(Array.from({ length: 8 }, () => upload(token)))).map((r) => r.status);
    // Two of a member's uploads are read at once in a replica (the others 429); whichever run, at most three fit.
    expect(statuses.every((s) => [200, 413, 429].includes(s))).toBe(true);
    const stored = statuses.filter((s) => s === 200).length;
    expect(stored).toBeGreaterThanOrEqual(1);
    expect(stored).toBeLessThanOrEqual(3);
    // The losers' bytes are not kept either.
    expect(files()).toBe(before + stored);
    // Past this replica's upload slots (the race across replicas): eight recorded at once, exactly three fit.
    const raced = await sqlClient(app.dbUrl);
    let memberId: string;
    try {
      memberId = (await raced.query(`SELECT id FROM members WHERE username = 'quota_race'`)).rows[0].id as string;
      await raced.query(`DELETE FROM member_files WHERE member_id = $1`, [memberId]);
      await raced.query(`UPDATE member_file_usage SET bytes = 0 WHERE member_id = $1`, [memberId]);
    } finally {
      await raced.end();
    }
    const service = app.app.get(FilesService);
    const png = tinyPng(30_000);
    const direct = await Promise.allSettled(
      Array.from({ length: 8 }, () =>
        service.upload(memberId, { buffer: png, originalname: 'r.png', size: png.length }),
      ),
    );
    expect(direct.filter((r) => r.status === 'fulfilled')).toHaveLength(3);
    const db = await sqlClient(app.dbUrl);
    try {
      const { rows } = await db.query(
        `SELECT u.bytes::int AS counted, (SELECT sum(size)::int FROM member_files f WHERE f.member_id = u.member_id) AS stored
           FROM member_file_usage u JOIN members m ON m.id = u.member_id WHERE m.username = 'quota_race'`,
      );
      expect(rows).toEqual([{ counted: rows[0].stored, stored: expect.any(Number) }]);
      expect(rows[0].counted).toBeLessThanOrEqual(100_000);
    } finally {
      await db.end();
    }
  });
});

describe('membership: an upload is admitted before its body is read', () => {
  let app: RunningApp;
  beforeAll(async () => {
    app = await startMembership({ UPLOAD_MAX_BYTES_PER_MEMBER: '100000' });
  });
  afterAll(() => app?.close());

  /** An upload whose head is sent, announcing `length` bytes, with none of its body yet. */
  const begun = (token: string, length: number) => {
    const url = new URL(app.url);
    const req = httpRequest({
      host: url.hostname,
      port: url.port,
      method: 'POST',
      path: UPLOAD,
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'multipart/form-data; boundary=x',
        'content-length': String(length),
      },
    });
    const answer = new Promise<{ status: number; body: any }>((resolve, reject) => {
      req.on('response', (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : null }));
      });
      req.on('error', reject);
    });
    req.flushHeaders();
    return { req, answer };
  };

  it('an upload that cannot fit what is left of the quota is 413 before its body is sent', async () => {
    const token = await member(app, 'admit_quota');
    await request(app.url)
      .post(UPLOAD)
      .set(bearer(token))
      .attach('file', tinyPng(60_000), { filename: 'a.png', contentType: 'image/png' })
      .expect(200);
    const big = begun(token, 1_000_000);
    const { status, body } = await big.answer;
    big.req.destroy();
    expect([status, body.message]).toEqual([413, 'Upload limit reached: a member keeps at most 100000 bytes of files']);
  });

  it("a member's third upload while two are being received is 429; one ended frees its place", async () => {
    const token = await member(app, 'admit_slots');
    const first = begun(token, 50_000);
    const second = begun(token, 50_000);
    const admission = app.app.get(UploadAdmission);
    while (admission.inFlight < 2) await new Promise((resolve) => setImmediate(resolve));
    const third = await request(app.url)
      .post(UPLOAD)
      .set(bearer(token))
      .attach('file', tinyPng(), { filename: 'c.png', contentType: 'image/png' });
    expect(third.status).toBe(429);
    expect(third.headers['retry-after']).toBe('1');
    expect(third.body.code).toBe(429);
    first.req.destroy();
    second.req.destroy();
    await Promise.allSettled([first.answer, second.answer]);
    while (admission.inFlight > 0) await new Promise((resolve) => setImmediate(resolve));
    await request(app.url)
      .post(UPLOAD)
      .set(bearer(token))
      .attach('file', tinyPng(), { filename: 'd.png', contentType: 'image/png' })
      .expect(200);
  });
});

describe("membership: the replica's upload slots are not held by trickled bodies nor by one network", () => {
  // REQUEST_TIMEOUT_MS far away: only the upload's own receive-rate floor can cut a trickle here.
  const clock = new FakeClock();
  let app: RunningApp;
  let admission: UploadAdmission;
  beforeAll(async () => {
    app = await startMembership({ REQUEST_TIMEOUT_MS: '600000' }, { clock });
    admission = app.app.get(UploadAdmission);
  });
  afterAll(() => app?.close());

  /** Until the replica reads `n` uploads (a turn of the event loop at a time; no time limit of its own). */
  const inFlight = async (n: number) => {
    while (admission.inFlight !== n) await new Promise((resolve) => setImmediate(resolve));
  };

  /**
   * An upload from `ip` (X-Forwarded-For, trusted from loopback) announcing 50 000 bytes, of which only the
   * multipart head and a few bytes of a PNG are sent: the rest never comes.
   */
  const trickle = (token: string, ip: string) => {
    const url = new URL(app.url);
    const req = httpRequest({
      host: url.hostname,
      port: url.port,
      method: 'POST',
      path: UPLOAD,
      headers: {
        authorization: `Bearer ${token}`,
        'x-forwarded-for': ip,
        'content-type': 'multipart/form-data; boundary=x',
        'content-length': '50000',
      },
    });
    const answer = new Promise<{ status: number; body: any }>((resolve, reject) => {
      req.on('response', (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : null }));
      });
      req.on('error', reject);
    });
    req.write(
      '--x\r\nContent-Disposition: form-data; name="file"; filename="slow.png"\r\nContent-Type: image/png\r\n\r\n',
    );
    req.write(tinyPng().subarray(0, 16));
    return { req, answer };
  };

  const upload = (token: string, ip: string) =>
    request(app.url)
      .post(UPLOAD)
      .set(bearer(token))
      .set('X-Forwarded-For', ip)
      .attach('file', tinyPng(), { filename: 'ok.png', contentType: 'image/png' });

  it("trickled uploads are cut with 408 after the grace and their slots go to another member's upload", async () => {
    // Free accounts on four networks, each network at its share: every slot of the replica taken.
    const networks = UPLOADS_IN_FLIGHT_PER_REPLICA / UPLOADS_IN_FLIGHT_PER_NETWORK;
    const membersPerNetwork = UPLOADS_IN_FLIGHT_PER_NETWORK / UPLOADS_IN_FLIGHT_PER_MEMBER;
    const trickles: ReturnType<typeof trickle>[] = [];
    try {
      for (let n = 0; n < networks; n++)
        for (let m = 0; m < membersPerNetwork; m++) {
          const token = await member(app, `trickler_${n}_${m}`);
          for (let u = 0; u < UPLOADS_IN_FLIGHT_PER_MEMBER; u++) trickles.push(trickle(token, `203.0.113.${10 + n}`));
        }
      await inFlight(UPLOADS_IN_FLIGHT_PER_REPLICA);
      const victim = await member(app, 'slot_victim');
      const refused = await upload(victim, '203.0.113.99');
      expect([refused.status, refused.headers['retry-after']]).toEqual([503, '1']);

      clock.advance(UPLOAD_RATE_GRACE_MS);
      const stored = await upload(victim, '203.0.113.99');
      expect(stored.status).toBe(200);
      const answers = await Promise.all(trickles.map((t) => t.answer));
      for (const { status, body } of answers)
        expect({ status, body }).toEqual({
          status: 408,
          body: {
            code: 408,
            message: 'Upload too slow: the file must arrive at 16 KiB/s at least; retry on a faster connection',
            data: null,
          },
        });
      expect(admission.inFlight).toBe(0);
    } finally {
      trickles.forEach((t) => t.req.destroy());
    }
  });

  it('one network holds at most its share of the slots, whatever accounts it uses; another network is admitted', async () => {
    const crowd = '203.0.113.50';
    const trickles: ReturnType<typeof trickle>[] = [];
    try {
      for (let m = 0; m < UPLOADS_IN_FLIGHT_PER_NETWORK / UPLOADS_IN_FLIGHT_PER_MEMBER; m++) {
        const token = await member(app, `crowd_${m}`);
        for (let u = 0; u < UPLOADS_IN_FLIGHT_PER_MEMBER; u++) trickles.push(trickle(token, crowd));
      }
      await inFlight(UPLOADS_IN_FLIGHT_PER_NETWORK);
      const fresh = await member(app, 'crowd_fresh');
      const refused = await upload(fresh, crowd).set('Accept-Language', 'zh-CN');
      expect([refused.status, refused.headers['retry-after'], refused.body]).toEqual([
        429,
        '1',
        { code: 429, message: '你所在网络正在上传的文件过多，请等其中一个完成后重试', data: null },
      ]);
      const elsewhere = await upload(fresh, '203.0.113.51');
      expect(elsewhere.status).toBe(200);
      trickles.forEach((t) => t.req.destroy());
      await Promise.allSettled(trickles.map((t) => t.answer));
      await inFlight(0);
      expect((await upload(fresh, crowd)).status).toBe(200);
    } finally {
      trickles.forEach((t) => t.req.destroy());
    }
  });
});

function countFiles(dir: string): number {
  if (!existsSync(dir)) return 0;
  let n = 0;
  for (const e of readdirSync(dir, { withFileTypes: true }))
    n += e.isDirectory() ? countFiles(path.join(dir, e.name)) : 1;
  return n;
}

describe('membership: file storage on S3-compatible object storage', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 's3rver-e2e-'));
  let s3: { run(): Promise<{ port: number }>; close(): Promise<void> };
  let endpoint: string;
  let app: RunningApp;

  beforeAll(async () => {
    s3 = new S3rver({
      port: 0,
      address: '127.0.0.1',
      silent: true,
      directory: dir,
      configureBuckets: [{ name: 'member-media' }],
    });
    endpoint = `http://127.0.0.1:${(await s3.run()).port}`;
    app = await startMembership({
      STORAGE_DRIVER: 's3',
      S3_BUCKET: 'member-media',
      S3_ENDPOINT: endpoint,
      S3_ACCESS_KEY_ID: 'S3RVER',
      S3_SECRET_ACCESS_KEY: 'S3RVER',
      S3_PREFIX: 'uploads',
    });
  });
  afterAll(async () => {
    await app?.close();
    await s3?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('uploads into the bucket and serves from it; nothing lands on local disk', async () => {
    const token = await member(app, 's3_uploader');
    const bytes = tinyPng();
    const res = await request(app.url)
      .post(UPLOAD)
      .set(bearer(token))
      .attach('file', bytes, { filename: 'a.png', contentType: 'image/png' })
      .expect(200);
    const { filename, url } = res.body.data;
    const reader = new S3Storage({
      bucket: 'member-media',
      region: 'us-east-1',
      endpoint,
      accessKeyId: 'S3RVER',
      secretAccessKey: 'S3RVER',
    });
    const obj = await reader.get(`uploads/${filename}`);
    expect(obj).not.toBeNull();
    const chunks: Buffer[] = [];
    for await (const c of obj!.body) chunks.push(Buffer.from(c));
    expect(Buffer.compare(Buffer.concat(chunks), bytes)).toBe(0);
    reader.destroy();
    const served = await request(app.url).get(url).expect(200);
    expect(served.headers['content-type']).toBe('image/png');
    expect(Number(served.headers['content-length'])).toBe(bytes.length);
    expect(existsSync(path.join(app.dataDir, 'files'))).toBe(false);
  });
});
