import request from 'supertest';
import { RunningApp, startMembership } from '../support/apps';
import { bearer, client } from './fakes';
import { tinyPng } from '../support/png';

describe('membership: the website journey under a context path', () => {
  let app: RunningApp;

  beforeAll(async () => {
    app = await startMembership({ CONTEXT_PATH: '/member' });
  });
  afterAll(() => app?.close());

  it('register, login, profile, upload avatar, set avatarUrl, refresh, logout, old refresh token refused', async () => {
    const browser = client(app.url);

    // The site shell loads public settings first.
    const site = await browser.get('/api/v1/admin/system/site-config/public').expect(200);
    expect(site.body.data.values['site.name']).toBeDefined();

    await browser
      .post('/api/v1/app/auth/register')
      .send({ username: 'journey_1', email: 'journey@example.com', password: 'journey-password' })
      .expect(200);
    const login = await browser
      .post('/api/v1/app/auth/login')
      .set('Content-Type', 'application/json')
      .send({ account: 'journey_1', password: 'journey-password' })
      .expect(200);
    const { token, refreshToken, memberId } = login.body.data;

    const profile = await browser.get('/api/v1/app/auth/profile').set(bearer(token)).expect(200);
    expect(profile.body.data).toMatchObject({
      id: memberId,
      username: 'journey_1',
      email: 'journey@example.com',
      avatarUrl: null,
      status: 'active',
    });
    expect(JSON.stringify(profile.body)).not.toMatch(/password|argon2/i);

    const upload = await request(app.url)
      .post('/api/v1/app/files')
      .set(bearer(token))
      .attach('file', tinyPng(), { filename: 'me.png', contentType: 'image/png' })
      .expect(200);
    const avatarUrl = upload.body.data.url as string;
    expect(avatarUrl).toMatch(/^\/files\//);
    // The client turns the relative media path into an address with its base URL (context path included).
    const media = await request(app.url).get(avatarUrl).expect(200);
    expect(media.headers['content-type']).toBe('image/png');

    const updated = await browser
      .put('/api/v1/app/auth/profile')
      .set(bearer(token))
      .send({ avatarUrl, nickname: 'Journey', gender: 'other', birthDate: '1995-02-28' })
      .expect(200);
    expect(updated.body.data).toMatchObject({
      avatarUrl,
      nickname: 'Journey',
      gender: 'other',
      birthDate: '1995-02-28',
    });

    // Unknown fields and bad values are refused with 10000 naming each field.
    const bad = await browser
      .put('/api/v1/app/auth/profile')
      .set(bearer(token))
      .send({ nickname: 'x', points: 9999, gender: 'robot', birthDate: '1995-02-30', avatarUrl: 'javascript:alert(1)' })
      .expect(400);
    expect(bad.body.code).toBe(10000);
    for (const field of ['points', 'gender', 'birthDate', 'avatarUrl']) expect(bad.body.message).toContain(field);
    const future = await browser
      .put('/api/v1/app/auth/profile')
      .set(bearer(token))
      .send({ birthDate: '2999-01-01' })
      .expect(400);
    expect(future.body.message).toContain('birthDate');
    const traversal = await browser
      .put('/api/v1/app/auth/profile')
      .set(bearer(token))
      .send({ avatarUrl: '/files/../../etc/passwd' })
      .expect(400);
    expect(traversal.body.message).toContain('avatarUrl');
    expect((await browser.get('/api/v1/app/auth/profile').set(bearer(token)).expect(200)).body.data.points).toBe(0);
    // null keeps a field (the website sends avatarUrl: null for "unchanged"); "" clears it.
    expect(
      (
        await browser
          .put('/api/v1/app/auth/profile')
          .set(bearer(token))
          .send({ gender: null, avatarUrl: null })
          .expect(200)
      ).body.data,
    ).toMatchObject({ gender: 'other', avatarUrl });
    expect(
      (await browser.put('/api/v1/app/auth/profile').set(bearer(token)).send({ gender: '' }).expect(200)).body.data
        .gender,
    ).toBeNull();

    const refreshed = await browser.post('/api/v1/app/auth/refresh-token').send({ refreshToken }).expect(200);
    expect(refreshed.body.data).toMatchObject({ memberId, username: 'journey_1', nickname: 'Journey', avatarUrl });
    const token2 = refreshed.body.data.token;
    await browser.get('/api/v1/app/auth/profile').set(bearer(token2)).expect(200);

    await browser.post('/api/v1/app/auth/logout').set(bearer(token2)).expect(200);
    await browser.get('/api/v1/app/auth/profile').set(bearer(token2)).expect(401);
    const old = await browser.post('/api/v1/app/auth/refresh-token').send({ refreshToken }).expect(401);
    expect(old.body).toEqual({ code: 401, message: expect.any(String), data: null });
    await browser
      .post('/api/v1/app/auth/refresh-token')
      .send({ refreshToken: refreshed.body.data.refreshToken })
      .expect(401);

    // Without the context path nothing is served.
    const root = app.url.replace(/\/member$/, '');
    await request(root).get('/api/v1/admin/system/site-config/public').expect(404);
  });

  it('documents every account endpoint in Swagger with the envelope', async () => {
    const doc = (await request(app.url).get('/v3/api-docs').expect(200)).body;
    const paths = Object.keys(doc.paths).map((p) => p.replace(/^\/member/, ''));
    const expected: [string, string][] = [
      ['/api/v1/app/auth/register', 'post'],
      ['/api/v1/app/auth/login', 'post'],
      ['/api/v1/app/auth/login-by-phone', 'post'],
      ['/api/v1/app/auth/send-code', 'post'],
      ['/api/v1/app/auth/verify-code', 'post'],
      ['/api/v1/app/auth/refresh-token', 'post'],
      ['/api/v1/app/auth/refresh-token-by-jwt', 'post'],
      ['/api/v1/app/auth/profile', 'get'],
      ['/api/v1/app/auth/profile', 'put'],
      ['/api/v1/app/auth/password', 'put'],
      ['/api/v1/app/auth/reset-password', 'post'],
      ['/api/v1/app/auth/logout', 'post'],
      ['/api/v1/app/security/client-sessions', 'get'],
      ['/api/v1/app/security/client-sessions/{id}', 'delete'],
      ['/api/v1/app/files', 'post'],
      ['/api/v1/admin/system/site-config/public', 'get'],
      ['/api/v1/admin/system/site-config', 'put'],
    ];
    for (const [p, method] of expected) {
      expect(paths).toContain(p);
      const key = Object.keys(doc.paths).find((k) => k.replace(/^\/member/, '') === p)!;
      const op = doc.paths[key][method];
      expect(op).toBeDefined();
      const ok = op.responses['200'].content['application/json'].schema;
      expect(ok.required).toEqual(['code', 'message', 'data']);
    }
    expect(doc.components.schemas.MemberLoginResponse.properties).toEqual(
      expect.objectContaining({
        memberId: expect.anything(),
        token: expect.anything(),
        refreshToken: expect.anything(),
        expiresIn: expect.anything(),
        refreshExpiresIn: expect.anything(),
      }),
    );
  });
});
