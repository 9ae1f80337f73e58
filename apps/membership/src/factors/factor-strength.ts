/**
 * How strong a second factor is, for step-up (factors/step-up.service.ts): a member must show their
 * strongest one. A recovery code counts as the strongest, as it is the way back in when the device
 * holding the factor is lost.
 */
export const FactorStrength = { NONE: 0, TOTP: 1, PASSKEY: 2 } as const;
export type FactorStrength = (typeof FactorStrength)[keyof typeof FactorStrength];

/** What a member answers a second-factor challenge with. */
export type FactorMethod = 'totp' | 'passkey' | 'recovery_code';
export const FACTOR_METHODS: FactorMethod[] = ['totp', 'passkey', 'recovery_code'];

/** The RFC 8176 `amr` value of a factor; a passkey is hwk when bound to one device, swk when synced. */
export function amrOf(method: FactorMethod, passkeyBackedUp?: boolean): string {
  if (method === 'passkey') return passkeyBackedUp ? 'swk' : 'hwk';
  return 'otp';
}

export function strengthOf(method: FactorMethod): FactorStrength {
  return method === 'totp' ? FactorStrength.TOTP : FactorStrength.PASSKEY;
}

/** `amr` of a session: the first factor, the second, and `mfa` when there are two. */
export function combineAmr(...values: string[]): string[] {
  const distinct = [...new Set(values.filter((v) => v && v !== 'mfa'))];
  return distinct.length >= 2 ? [...distinct, 'mfa'] : distinct;
}

/** The amr of a first factor by login type (auth/login.service.ts LoginType). */
export function firstFactorAmr(loginType: string): string {
  if (loginType === 'password' || loginType === 'register') return 'pwd';
  if (loginType === 'phone') return 'sms';
  return 'oauth';
}
