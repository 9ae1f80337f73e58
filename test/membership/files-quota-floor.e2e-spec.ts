/**
 * POST /api/v1/app/files: a file counts at least UPLOAD_MIN_CHARGED_BYTES (default 4 KiB) against the
 * member's UPLOAD_MAX_BYTES_PER_MEMBER, so a quota of bytes also bounds the rows and objects a member
 * makes: tiny images cannot fill the database and the bucket ten million at a time.
 */
import request from 'supertest';
import { RunningApp, startMembership } from '../support/apps';
import { sqlClient } from '../support/database';
import { tinyPng } from '../support/png';
import { bearer, client } from './fakes';

const UPLOAD = '/api/v1/app/files';
const FLOOR = 4096;
const QUOTA = 10 * FLOOR;

async function member(app: RunningApp, username: string): Promise<string> {
  await client(app.url).post('/api/v1/app/auth/register').send({ username, password: 'files-password' }).expect(200);
  const res = await client(app.url)
    .post('/api/v1/app/auth/login')
    .send({ account: username, password: 'files-password' })
    .expect(200);
  return res.body.data.token;
}

describe('membership: every file counts at least UPLOAD_MIN_CHARGED_BYTES against the quota', () => {
  let app: RunningApp;
  beforeAll(async () => {
    // The floor is the default: only the quota is set.
    app = await startMembership({ UPLOAD_MAX_BYTES_PER_MEMBER: String(QUOTA) });
  });
  afterAll(() => app?.close());

  const upload = (token: string, png: Buffer) =>
    request(app.url)
      .post(UPLOAD)
      .set(bearer(token))
      .attach('file', png, { filename: 'p.png', contentType: 'image/png' });
  const usage = async (username: string) => {
    const db = await sqlClient(app.dbUrl);
    try {
      const { rows } = await db.query(
        `SELECT (SELECT count(*) FROM member_files f WHERE f.member_id = m.id)::int AS files,
                (SELECT bytes FROM member_file_usage u WHERE u.member_id = m.id)::int AS charged
           FROM members m WHERE m.username = $1`,
        [username],
      );
      return rows[0];
    } finally {
      await db.end();
    }
  };

  it('takes QUOTA / 4 KiB tiny files and refuses the next (413); a larger file counts its size', async () => {
    const tiny = tinyPng();
    expect(tiny.length).toBeLessThan(100);
    const token = await member(app, 'floor_tiny');
    for (let i = 0; i < QUOTA / FLOOR; i++) await upload(token, tiny).expect(200);
    const refused = await upload(token, tiny);
    expect(refused.status).toBe(413);
    expect(refused.body).toMatchObject({
      code: 413,
      message: `Upload limit reached: a member keeps at most ${QUOTA} bytes of files`,
    });
    expect(await usage('floor_tiny')).toEqual({ files: 10, charged: QUOTA });

    const other = await member(app, 'floor_mixed');
    const big = tinyPng(20_000);
    await upload(other, big).expect(200);
    await upload(other, tiny).expect(200);
    expect(await usage('floor_mixed')).toEqual({ files: 2, charged: big.length + FLOOR });
  });
});
