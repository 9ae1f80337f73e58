import * as fs from 'fs';
import * as path from 'path';
import { RunningApp, startMembership } from '../../support/apps';
import { webAppDir } from '../../../apps/membership/src/web-app/web-app';

/**
 * How membership serves the web app built into dist/web (the e2e global setup builds it): the page for
 * every path below /account/, its hashed assets cached for good, index.html never, the API's security
 * headers on all of it, and the same under a CONTEXT_PATH.
 */
describe.each([[''], ['/member']])('the account page served by membership (CONTEXT_PATH "%s")', (contextPath) => {
  let app: RunningApp;
  const [script] = /assets\/index-[\w-]+\.js/.exec(fs.readFileSync(path.join(webAppDir(), 'index.html'), 'utf8')) ?? [
    '',
  ];

  beforeAll(async () => {
    app = await startMembership(contextPath ? { CONTEXT_PATH: contextPath } : {});
  });
  afterAll(() => app?.close());

  it.each([['/account/'], ['/account/sign-in'], ['/account/security'], ['/account/a/deep/link?x=1']])(
    'answers %s with the page, not cached, under the security headers',
    async (p) => {
      const res = await fetch(`${app.url}${p}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(res.headers.get('cache-control')).toBe('no-cache');
      expect(res.headers.get('content-security-policy')).toContain("script-src 'self'");
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      const html = await res.text();
      // Asset addresses are absolute, with the context path: they load from any deep link.
      expect(html).toContain(`src="${contextPath}/account/${script}"`);
      expect(html).not.toContain('"./assets/');
      // No inline script: the page runs under the Content-Security-Policy as it is.
      expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    },
  );

  it('serves the hashed assets as immutable files', async () => {
    expect(script).not.toBe('');
    const res = await fetch(`${app.url}/account/${script}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/javascript/);
    expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(res.headers.get('content-security-policy')).toContain("default-src 'self'");
  });

  it('answers a missing asset with the envelope 404, not with the page', async () => {
    const res = await fetch(`${app.url}/account/assets/index-missing.js`);
    expect(res.status).toBe(404);
    expect(((await res.json()) as { code: number }).code).toBe(404);
  });

  it('redirects /account to /account/ and leaves other methods to the API (404)', async () => {
    const redirect = await fetch(`${app.url}/account`, { redirect: 'manual' });
    expect([redirect.status, redirect.headers.get('location')]).toEqual([301, `${contextPath}/account/`]);
    const post = await fetch(`${app.url}/account/security`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(post.status).toBe(404);
    const [head, get] = await Promise.all([
      fetch(`${app.url}/account/security`, { method: 'HEAD' }),
      fetch(`${app.url}/account/security`),
    ]);
    const body = Buffer.from(await get.arrayBuffer());
    expect([head.status, head.headers.get('content-length'), body.length > 0]).toEqual([
      200,
      String(body.length),
      true,
    ]);
  });
});
