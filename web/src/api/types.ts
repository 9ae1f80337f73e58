import type {
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
} from '@simplewebauthn/browser';
import type { MemberLogin } from './session';

export type { PublicKeyCredentialCreationOptionsJSON, PublicKeyCredentialRequestOptionsJSON };

/** A sign-in that needs a second factor (or, for roles in MFA_REQUIRED_ROLES, enrolling one) before tokens. */
export interface MfaChallenge {
  mfaRequired: true;
  mfaToken: string;
  methods: Array<'totp' | 'passkey' | 'recovery_code'>;
  enrolmentRequired: boolean;
  expiresIn: number;
}

export type SignInResult = MemberLogin | MfaChallenge;
export const needsSecondFactor = (r: SignInResult): r is MfaChallenge => (r as MfaChallenge).mfaRequired === true;

/** A login completed by enrolling a factor: the recovery codes come with it (shown once). */
export type MfaEnrolmentLogin = MemberLogin & { recoveryCodes?: string[] | null };

export interface ClientSession {
  id: string;
  deviceName: string;
  loginType: string;
  ip: string | null;
  createdTime: string;
  lastActiveTime: string;
  current: boolean;
  amr?: string[];
}

export interface LinkedIdentity {
  id: string;
  provider: string;
  registrationId: string;
  openId: string | null;
  nickname: string | null;
  avatarUrl: string | null;
  createdTime: string;
  lastLoginTime: string | null;
}

export interface OAuth2Provider {
  registrationId: string;
  clientName: string;
  icon: string;
}

export interface Passkey {
  id: string;
  name: string;
  createdTime: string;
  lastUsedTime: string | null;
  backedUp: boolean;
  deviceType: 'multiDevice' | 'singleDevice';
  transports: string[];
}

export interface Factors {
  totp: { enabled: boolean; createdTime: string | null };
  passkeys: Passkey[];
  recoveryCodes: { remaining: number; createdTime: string | null };
  stepUp: { required: 'totp' | 'passkey' | null; satisfiedUntil: string | null };
  mfaRequiredByRole: boolean;
}

export interface TotpEnrolment {
  secret: string;
  otpauthUri: string;
  qrDataUrl: string;
}

/** ErrorCodes the pages react to (libs/envelope ErrorCode; the factor ones from the second-factor API). */
export const ErrorCodes = {
  STEP_UP_REQUIRED: 10010,
  SECOND_FACTOR_INVALID: 10011,
  MFA_CHALLENGE_INVALID: 10012,
} as const;
