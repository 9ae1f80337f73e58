import { AddressInfo } from 'net';
import { SMTPServer } from 'smtp-server';
import { LogMailSender } from './log-mail.sender';
import { SmtpMailSender } from './smtp-mail.sender';
import { MessageSendError } from '../sms/sms-sender';

describe('SmtpMailSender against a real SMTP server', () => {
  let server: SMTPServer;
  let port: number;
  const messages: { from: string; to: string[]; raw: string; user?: string }[] = [];

  beforeAll(async () => {
    server = new SMTPServer({
      disabledCommands: ['STARTTLS'],
      allowInsecureAuth: true,
      logger: false,
      onAuth(auth, _session, cb) {
        if (auth.username === 'mailer' && auth.password === 'pw') return cb(null, { user: 'mailer' });
        return cb(new Error('Invalid username or password'));
      },
      onRcptTo(address, _session, cb) {
        if (address.address.endsWith('@rejected.test')) return cb(new Error('mailbox unavailable'));
        cb();
      },
      onData(stream, session, cb) {
        let raw = '';
        stream.on('data', (c) => (raw += c));
        stream.on('end', () => {
          messages.push({
            from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
            to: session.envelope.rcptTo.map((r) => r.address),
            raw,
            user: session.user as string | undefined,
          });
          cb();
        });
      },
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  const sender = (password = 'pw') =>
    new SmtpMailSender({
      host: '127.0.0.1',
      port,
      secure: false,
      user: 'mailer',
      password,
      from: 'Site <no-reply@site.test>',
      siteName: 'Site',
    });

  it('delivers the code to the recipient with authentication', async () => {
    const s = sender();
    await s.sendCode('alice@example.test', '654321', 5);
    s.close();
    const m = messages.at(-1)!;
    expect(m.to).toEqual(['alice@example.test']);
    expect(m.from).toBe('no-reply@site.test');
    expect(m.user).toBe('mailer');
    expect(m.raw).toContain('654321');
    expect(m.raw).toMatch(/Subject: Site verification code/);
  });

  it('throws MessageSendError on bad credentials', async () => {
    const s = sender('wrong');
    await expect(s.sendCode('alice@example.test', '1', 5)).rejects.toBeInstanceOf(MessageSendError);
    s.close();
  });

  it('throws MessageSendError when the server rejects the recipient', async () => {
    const s = sender();
    await expect(s.sendCode('bob@rejected.test', '1', 5)).rejects.toBeInstanceOf(MessageSendError);
    s.close();
  });
});

describe('LogMailSender', () => {
  it('is refused in production', () => {
    expect(() => new LogMailSender('production')).toThrow(/development only/);
  });
});
