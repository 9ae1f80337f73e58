import { createTransport, Transporter } from 'nodemailer';
import { MessageSendError } from '../sms/sms-sender';
import { MailContent, MailSender, verificationMail } from './mail-sender';

export interface SmtpOptions {
  host: string;
  port: number;
  /** true = implicit TLS (465); false = plain, upgraded by STARTTLS when the server offers it. */
  secure: boolean;
  user?: string;
  password?: string;
  from: string;
  /** Refuse to send over an unencrypted connection. */
  requireTls?: boolean;
  /** Only for self-signed test servers. */
  allowInvalidCertificates?: boolean;
  siteName?: string;
  timeoutMs?: number;
}

/** Email over SMTP with nodemailer. */
export class SmtpMailSender implements MailSender {
  readonly name = 'smtp';
  private readonly transport: Transporter;

  constructor(private readonly options: SmtpOptions) {
    if (!options.host || !options.from) throw new Error('SMTP: host and from are required');
    const timeout = options.timeoutMs ?? 10_000;
    this.transport = createTransport({
      host: options.host,
      port: options.port,
      secure: options.secure,
      requireTLS: options.requireTls ?? false,
      auth: options.user ? { user: options.user, pass: options.password ?? '' } : undefined,
      tls: options.allowInvalidCertificates ? { rejectUnauthorized: false } : undefined,
      connectionTimeout: timeout,
      greetingTimeout: timeout,
      socketTimeout: timeout,
    });
  }

  sendCode(email: string, code: string, ttlMinutes: number): Promise<void> {
    return this.send(email, verificationMail(code, ttlMinutes, this.options.siteName));
  }

  async send(email: string, mail: MailContent): Promise<void> {
    try {
      await this.transport.sendMail({ from: this.options.from, to: email, subject: mail.subject, text: mail.text });
    } catch (err) {
      const e = err as { code?: string; responseCode?: number };
      throw new MessageSendError(this.name, `${e.code ?? 'ERROR'} ${e.responseCode ?? ''}`.trim());
    }
  }

  close(): void {
    this.transport.close();
  }
}
