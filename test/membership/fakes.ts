/**
 * Local stand-ins that speak the real protocols: an Aliyun Dysms endpoint (checks the POP v1
 * signature like Aliyun does) and a real SMTP server (smtp-server). Tests read the codes the
 * app sent from what these servers received, exactly as a member would read their phone or inbox.
 */
import { createServer, Server } from 'http';
import { AddressInfo } from 'net';
import { SMTPServer } from 'smtp-server';
import request from 'supertest';
import { aliyunSignature } from '@app/messaging';

export const ALIYUN_KEY_ID = 'test-access-key';
export const ALIYUN_SECRET = 'test-access-secret';

export interface FakeAliyun {
  url: string;
  sent: { phone: string; code: string }[];
  /** Business error code to answer the next sends with (e.g. "isv.BUSINESS_LIMIT_CONTROL"). */
  failWith: string | null;
  lastCode(phone: string): string;
  env: Record<string, string>;
  close(): Promise<void>;
}

export async function startFakeAliyun(): Promise<FakeAliyun> {
  const fake = { sent: [], failWith: null } as unknown as FakeAliyun;
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const p = Object.fromEntries(new URLSearchParams(body));
      const reply = (obj: object, status = 200) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(obj));
      };
      if (p.AccessKeyId !== ALIYUN_KEY_ID || p.Signature !== aliyunSignature(req.method!, p, ALIYUN_SECRET)) {
        return reply({ Code: 'SignatureDoesNotMatch', Message: 'Specified signature is not matched' }, 400);
      }
      if (p.Action !== 'SendSms') return reply({ Code: 'InvalidAction', Message: p.Action }, 400);
      if (fake.failWith) return reply({ Code: fake.failWith, Message: 'refused' });
      fake.sent.push({ phone: p.PhoneNumbers, code: JSON.parse(p.TemplateParam).code });
      reply({ Code: 'OK', Message: 'OK', BizId: String(fake.sent.length), RequestId: 'req' });
    });
  });
  server.keepAliveTimeout = 120_000; // as test/support/upstreams/fake-upstream.ts says why
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  fake.lastCode = (phone) => {
    const hit = [...fake.sent].reverse().find((s) => s.phone === phone);
    if (!hit) throw new Error(`no SMS sent to ${phone}`);
    return hit.code;
  };
  fake.env = {
    SMS_PROVIDER: 'aliyun',
    ALIYUN_SMS_ACCESS_KEY_ID: ALIYUN_KEY_ID,
    ALIYUN_SMS_ACCESS_KEY_SECRET: ALIYUN_SECRET,
    ALIYUN_SMS_SIGN_NAME: 'TestSite',
    ALIYUN_SMS_TEMPLATE_CODE: 'SMS_0001',
    ALIYUN_SMS_ENDPOINT: fake.url,
  };
  fake.close = () => new Promise<void>((r) => server.close(() => r()));
  return fake;
}

/** Decodes a raw mail as sent over SMTP: headers' encoded words and a base64 or quoted-printable body. */
export function readMail(raw: string): { subject: string; body: string } {
  const [head, ...rest] = raw.split(/\r?\n\r?\n/);
  const unfolded = head.replace(/\r?\n[ \t]+/g, ' ');
  const subjectRaw = /^Subject: (.*)$/im.exec(unfolded)?.[1] ?? '';
  const subject = subjectRaw.replace(/=\?utf-8\?([bq])\?([^?]*)\?=\s*/gi, (_m, enc: string, text: string) =>
    enc.toLowerCase() === 'b' ? Buffer.from(text, 'base64').toString('utf8') : decodeQp(text.replace(/_/g, ' ')),
  );
  const bodyRaw = rest.join('\n\n');
  const body = /content-transfer-encoding: base64/i.test(unfolded)
    ? Buffer.from(bodyRaw.replace(/\s+/g, ''), 'base64').toString('utf8')
    : /quoted-printable/i.test(unfolded)
      ? decodeQp(bodyRaw.replace(/=\r?\n/g, ''))
      : bodyRaw;
  return { subject, body };
}

function decodeQp(s: string): string {
  return Buffer.from(
    s.replace(/=([0-9A-F]{2})/gi, (_m, h: string) => String.fromCharCode(parseInt(h, 16))),
    'latin1',
  ).toString('utf8');
}

export interface FakeSmtp {
  port: number;
  mails: { to: string; text: string }[];
  lastCode(email: string): string;
  env: Record<string, string>;
  close(): Promise<void>;
}

export async function startFakeSmtp(): Promise<FakeSmtp> {
  const mails: FakeSmtp['mails'] = [];
  const server = new SMTPServer({
    disabledCommands: ['STARTTLS'],
    allowInsecureAuth: true,
    logger: false,
    onAuth: (auth, _s, cb) =>
      auth.username === 'mailer' && auth.password === 'mail-pass'
        ? cb(null, { user: 'mailer' })
        : cb(new Error('bad auth')),
    onData(stream, session, cb) {
      let raw = '';
      stream.on('data', (c) => (raw += c));
      stream.on('end', () => {
        for (const r of session.envelope.rcptTo) mails.push({ to: r.address, text: raw });
        cb();
      });
    },
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.server.address() as AddressInfo).port;
  return {
    port,
    mails,
    lastCode(email) {
      const hit = [...mails].reverse().find((m) => m.to === email);
      // The code mail is in the reader's language (verification.mailText): "... code is 123456" or "...验证码为 123456".
      const code = hit && /(?:code is|验证码为) (\d{6})/.exec(readMail(hit.text).body)?.[1];
      if (!code) throw new Error(`no code mailed to ${email}`);
      return code;
    },
    env: {
      SMTP_HOST: '127.0.0.1',
      SMTP_PORT: String(port),
      SMTP_USER: 'mailer',
      SMTP_PASSWORD: 'mail-pass',
      SMTP_FROM: 'no-reply@site.test',
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

let ipCounter = 0;
/** A distinct client address per scenario (the app trusts X-Forwarded-For from loopback), so per-IP limits do not leak between tests. */
export function nextIp(): string {
  ipCounter += 1;
  return `198.51.100.${ipCounter % 250}`;
}

/** supertest agent bound to a base URL and a client IP. */
export function client(url: string, ip = nextIp()) {
  const r = request(url);
  return {
    ip,
    get: (path: string) => r.get(path).set('X-Forwarded-For', ip),
    post: (path: string) => r.post(path).set('X-Forwarded-For', ip),
    put: (path: string) => r.put(path).set('X-Forwarded-For', ip),
    delete: (path: string) => r.delete(path).set('X-Forwarded-For', ip),
  };
}

export const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });
