/** A mail's words, already in the reader's language. */
export interface MailContent {
  subject: string;
  text: string;
}

/** Sends mail: verification codes and notices. Implementations throw `MessageSendError` on failure. */
export interface MailSender {
  readonly name: string;
  /** The default English wording (verificationMail); callers that know the reader's language use `send`. */
  sendCode(email: string, code: string, ttlMinutes: number): Promise<void>;
  send(email: string, mail: MailContent): Promise<void>;
}

export function verificationMail(code: string, ttlMinutes: number, siteName = 'Membership') {
  return {
    subject: `${siteName} verification code`,
    text: `Your verification code is ${code}. It expires in ${ttlMinutes} minutes. If you did not ask for it, ignore this email.`,
  };
}
