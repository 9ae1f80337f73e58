/** Sends a verification code by email. Implementations throw `MessageSendError` on failure. */
export interface MailSender {
  readonly name: string;
  sendCode(email: string, code: string, ttlMinutes: number): Promise<void>;
}

export function verificationMail(code: string, ttlMinutes: number, siteName = 'Membership') {
  return {
    subject: `${siteName} verification code`,
    text: `Your verification code is ${code}. It expires in ${ttlMinutes} minutes. If you did not ask for it, ignore this email.`,
  };
}
