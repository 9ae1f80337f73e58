import { randomBytes } from 'crypto';
import pino from 'pino';
import { AccessLog } from '../../libs/platform/src/logging/logging';
import { RunningApp, startMembership } from '../support/apps';

// L6: values that can be exchanged for a login (QR login states, WeChat scenes/tickets, OAuth codes and
// states) never reach the access log, whether they ride in the path or in the query string.
describe('access log redaction (membership)', () => {
  let app: RunningApp;
  const lines: string[] = [];
  const waiting = new Map<string, (line: string) => void>();

  beforeAll(async () => {
    app = await startMembership({ LOG_LEVEL: 'info' });
    // Capture what the access log writes instead of printing it.
    const stream = (app.app.get(AccessLog).logger as any)[pino.symbols.streamSym];
    stream.write = (line: string) => {
      lines.push(line);
      for (const [id, done] of waiting) if (line.includes(id)) done(line);
      return true;
    };
  });
  afterAll(() => app?.close());

  /** The access line of one request, awaited by its request id (written when the response finishes). */
  async function logged(path: string): Promise<string> {
    const id = `redact-${randomBytes(6).toString('hex')}`;
    const line = new Promise<string>((resolve) => waiting.set(id, resolve));
    await (await fetch(`${app.url}${path}`, { headers: { 'x-request-id': id } })).text();
    return line;
  }

  it('redacts the QR login state in the polled path', async () => {
    const state = `qrstate${randomBytes(12).toString('hex')}`;
    const line = await logged(`/api/v1/app/oauth2/qrcode/state/${state}`);
    expect(line).not.toContain(state);
    expect(JSON.parse(line).req.url).toBe('/api/v1/app/oauth2/qrcode/state/[redacted]');
  });

  it('drops codes, states, tickets and scenes from query strings', async () => {
    const secrets = Array.from({ length: 4 }, () => `sec${randomBytes(10).toString('hex')}`);
    for (const path of [
      `/api/v1/app/oauth2/wechat/silent/openid?code=${secrets[0]}&state=${secrets[1]}`,
      `/login/oauth2/code/github?code=${secrets[2]}&state=${secrets[1]}`,
      `/api/v1/wechat/portal/wx0000?ticket=${secrets[3]}&scene=${secrets[0]}`,
    ]) {
      const line = await logged(path);
      expect(JSON.parse(line).req.url).toBe(path.split('?')[0]);
    }
    for (const s of secrets) expect(lines.join('')).not.toContain(s);
  });
});
