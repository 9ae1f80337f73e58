/** Sends a verification code by SMS. Implementations throw `MessageSendError` when the vendor refuses. */
export interface SmsSender {
  /** Short vendor name for logs and health output ("log", "aliyun"). */
  readonly name: string;
  sendCode(phone: string, code: string, ttlMinutes: number): Promise<void>;
}

/** The vendor or server could not deliver the message; `reason` is safe to log (never the code). */
export class MessageSendError extends Error {
  constructor(
    readonly vendor: string,
    readonly reason: string,
  ) {
    super(`${vendor}: ${reason}`);
    this.name = 'MessageSendError';
  }
}
