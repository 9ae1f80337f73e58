import { Injectable, Logger } from '@nestjs/common';
import {
  generateAuthenticationOptions,
  generateRegistrationOptions,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
} from '@simplewebauthn/server';
import type {
  AuthenticationResponseJSON,
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
  RegistrationResponseJSON,
} from '@simplewebauthn/server';
import {
  cose,
  decodeAttestationObject,
  decodeCredentialPublicKey,
  isoBase64URL,
  parseAuthenticatorData,
} from '@simplewebauthn/server/helpers';
import { BusinessException, ErrorCode, msg } from '@app/envelope';
import { Clock, SharedState } from '@app/platform';
import type { FactorChangeRecord } from './factor-change';
import { FactorsRepository, PasskeyRow } from './factors.repository';
import { WebauthnSettings } from './webauthn-settings';

/** How long a ceremony's challenge is good for (also the browser's timeout). */
const CHALLENGE_TTL_MS = 300_000;

/**
 * Passkeys one member may keep. Each is listed in every ceremony of the member (sign-in options, the exclude
 * list of a new registration, the account page): without a bound, a member adding passkeys in a loop grew
 * what each of those reads without end.
 */
export const MAX_PASSKEYS_PER_MEMBER = 20;

/**
 * The largest public key a passkey may have (bytes of its COSE map). ES256 and RS256 keys are well under 1 KB,
 * a post-quantum ML-DSA-87 key ~2.6 KB; with attestation 'none' nothing signs the map, so an authenticator
 * (or a script posing as one) could pad it with unknown labels to the body limit, read back in every ceremony.
 */
export const MAX_PASSKEY_PUBLIC_KEY_BYTES = 4096;

/**
 * The RSA keys a passkey may have: public exponent 65537 and a modulus of 2048 to 4096 bits, what authenticators
 * make (Windows Hello: 2048 bits, e = 65537). A verification costs with the exponent's and the modulus's length:
 * a huge exponent or modulus made each sign-in attempt with the passkey tens of times the usual work (~12 ms, not
 * ~0.15 ms), CPU anyone can spend by attempting sign-ins against that credential.
 */
export const RSA_PUBLIC_EXPONENT = 65537;
export const RSA_MODULUS_BITS = { min: 2048, max: 4096 } as const;

/** Why a passkey's public key (COSE_Key) is not taken, or null: an RSA key outside the bounds above. */
export function unfitPublicKey(publicKey: Uint8Array): string | null {
  let key;
  try {
    key = decodeCredentialPublicKey(new Uint8Array(publicKey));
  } catch {
    return 'its public key is not a COSE key';
  }
  if (!(key instanceof Map) || !cose.isCOSEPublicKeyRSA(key)) return null;
  const n: unknown = key.get(cose.COSEKEYS.n);
  const e: unknown = key.get(cose.COSEKEYS.e);
  if (!(n instanceof Uint8Array) || !(e instanceof Uint8Array)) return 'its RSA public key has no modulus or exponent';
  const exponent = withoutLeadingZeros(e);
  if (exponent.length !== 3 || exponent[0] !== 1 || exponent[1] !== 0 || exponent[2] !== 1)
    return `its RSA public exponent is not ${RSA_PUBLIC_EXPONENT}`;
  const modulus = withoutLeadingZeros(n);
  const bits = modulus.length ? (modulus.length - 1) * 8 + (32 - Math.clz32(modulus[0])) : 0;
  if (bits < RSA_MODULUS_BITS.min || bits > RSA_MODULUS_BITS.max)
    return `its RSA modulus has ${bits} bits, not ${RSA_MODULUS_BITS.min} to ${RSA_MODULUS_BITS.max}`;
  return null;
}

/**
 * The public key a registration's attestation carries, read before any signature is checked (so a key refused
 * here costs no verification with it); undefined when it cannot be read (the verification then refuses it).
 */
function attestedPublicKey(credential: RegistrationResponseJSON): Uint8Array | undefined {
  try {
    const attestation = decodeAttestationObject(isoBase64URL.toBuffer(credential.response.attestationObject));
    return parseAuthenticatorData(attestation.get('authData')).credentialPublicKey;
  } catch {
    return undefined;
  }
}

function withoutLeadingZeros(bytes: Uint8Array): Uint8Array {
  let i = 0;
  while (i < bytes.length && bytes[i] === 0) i++;
  return bytes.subarray(i);
}

/** The transports WebAuthn defines (AuthenticatorTransportFuture); anything else a client sends is dropped. */
const TRANSPORTS = new Set(['ble', 'cable', 'hybrid', 'internal', 'nfc', 'smart-card', 'usb']);

/**
 * A credential's transports as stored: the known ones, each once. The client's list is a hint it sends
 * unsigned: stored as sent, 90 000 strings made each passkey a megabyte, read back in every ceremony.
 */
export function knownTransports(list: unknown): string[] {
  if (!Array.isArray(list)) return [];
  return [...new Set(list.filter((t): t is string => typeof t === 'string' && TRANSPORTS.has(t)))];
}

const tooMany = () =>
  new BusinessException(
    ErrorCode.PASSKEY_REGISTRATION_FAILED,
    msg('factors.passkeyRegistrationFailed', {
      reason: `a member keeps at most ${MAX_PASSKEYS_PER_MEMBER} passkeys; remove one first`,
    }),
  );

/**
 * What a challenge was issued for: registering a passkey for a member, signing in without a password
 * (no member yet), a second factor or a step-up of a given member. Kept in shared state, used once.
 */
export type MemberAssertionPurpose = { kind: 'second-factor' | 'step-up'; memberId: string; bind?: string };
export type PasskeyPurpose = { kind: 'register'; memberId: string } | { kind: 'passwordless' } | MemberAssertionPurpose;

export interface VerifiedPasskey {
  passkey: PasskeyRow;
  backedUp: boolean;
  userVerified: boolean;
}

/** Passkeys (WebAuthn) through @simplewebauthn/server: options, registration and assertions. */
@Injectable()
export class PasskeysService {
  private readonly logger = new Logger('Passkeys');

  constructor(
    private readonly factors: FactorsRepository,
    private readonly state: SharedState,
    private readonly settings: WebauthnSettings,
    private readonly clock: Clock,
  ) {}

  async registrationOptions(
    memberId: string,
    userName: string,
    displayName: string,
    rpName: string,
  ): Promise<PublicKeyCredentialCreationOptionsJSON> {
    const existing = await this.factors.listPasskeys(memberId);
    if (existing.length >= MAX_PASSKEYS_PER_MEMBER) throw tooMany();
    const options = await generateRegistrationOptions({
      rpName,
      rpID: this.settings.rpId,
      userName,
      userDisplayName: displayName,
      // A stable, opaque user handle: the member id (never shown to the user).
      userID: new TextEncoder().encode(`m:${memberId}`),
      timeout: CHALLENGE_TTL_MS,
      attestationType: 'none',
      excludeCredentials: existing.map((p) => ({ id: p.credentialId, transports: p.transports })),
      authenticatorSelection: { residentKey: 'required', userVerification: 'preferred' },
    });
    await this.remember(options.challenge, { kind: 'register', memberId });
    return options;
  }

  /** Verifies and stores a new passkey of the member; 10013 when it does not verify or is already registered. */
  async register(
    memberId: string,
    credential: RegistrationResponseJSON,
    name: string,
    record: FactorChangeRecord,
  ): Promise<PasskeyRow> {
    const refused = (reason: string) =>
      new BusinessException(
        ErrorCode.PASSKEY_REGISTRATION_FAILED,
        msg('factors.passkeyRegistrationFailed', { reason }),
      );
    const checkKey = (publicKey: Uint8Array) => {
      if (publicKey.length > MAX_PASSKEY_PUBLIC_KEY_BYTES)
        throw refused(`its public key is larger than ${MAX_PASSKEY_PUBLIC_KEY_BYTES} bytes`);
      const unfit = unfitPublicKey(publicKey);
      if (unfit) throw refused(unfit);
    };
    // The key's size and kind first: a self-attested RSA key with a huge exponent would cost its verification.
    const attested =
      typeof credential?.response?.attestationObject === 'string' ? attestedPublicKey(credential) : undefined;
    if (attested) checkKey(attested);
    let verification;
    try {
      verification = await verifyRegistrationResponse({
        response: credential,
        expectedChallenge: (challenge) =>
          this.takeFor(challenge, (p) => p.kind === 'register' && p.memberId === memberId),
        expectedOrigin: this.settings.origins,
        expectedRPID: this.settings.rpId,
        requireUserVerification: false,
      });
    } catch (err) {
      throw refused((err as Error).message.slice(0, 200));
    }
    if (!verification.verified || !verification.registrationInfo) throw refused('not verified');
    const info = verification.registrationInfo;
    // Checked once: here only when the attestation could not be read before (the verification read it).
    if (!attested) checkKey(info.credential.publicKey);
    const stored = await this.factors.insertPasskey(
      {
        memberId,
        credentialId: info.credential.id,
        publicKey: Buffer.from(info.credential.publicKey),
        signCount: info.credential.counter,
        transports: knownTransports(credential.response?.transports ?? info.credential.transports),
        deviceType: info.credentialDeviceType,
        backedUp: info.credentialBackedUp,
        name,
      },
      record,
      MAX_PASSKEYS_PER_MEMBER,
    );
    if (stored === 'full') throw tooMany();
    if (!stored) throw refused('this passkey is already registered');
    return stored;
  }

  /**
   * Options for an assertion. Passwordless sign-in lists no credentials (discoverable ones, so the
   * browser's autofill, conditional mediation, can offer them) and requires user verification; for a
   * known member the member's passkeys are listed.
   */
  async authenticationOptions(
    purpose: Exclude<PasskeyPurpose, { kind: 'register' }>,
  ): Promise<PublicKeyCredentialRequestOptionsJSON> {
    const allow =
      purpose.kind === 'passwordless'
        ? undefined
        : (await this.factors.listPasskeys(purpose.memberId)).map((p) => ({
            id: p.credentialId,
            transports: p.transports as never,
          }));
    const options = await generateAuthenticationOptions({
      rpID: this.settings.rpId,
      timeout: CHALLENGE_TTL_MS,
      allowCredentials: allow,
      userVerification: purpose.kind === 'passwordless' ? 'required' : 'preferred',
    });
    await this.remember(options.challenge, purpose);
    return options;
  }

  /**
   * Verifies an assertion against the challenge issued for `expected` (its kind and member, and the
   * binding such as the mfaToken) and records the new sign count. Null when anything is wrong: an
   * unknown credential, another member's, a bad signature, user verification missing where required,
   * a sign count that did not grow (a cloned authenticator), a challenge unknown, expired or used.
   */
  async verifyAssertion(
    credential: AuthenticationResponseJSON,
    expected: Exclude<PasskeyPurpose, { kind: 'register' }>,
  ): Promise<VerifiedPasskey | null> {
    const passkey = typeof credential?.id === 'string' ? await this.factors.passkeyByCredentialId(credential.id) : null;
    if (!passkey) return null;
    if (expected.kind !== 'passwordless' && passkey.memberId !== expected.memberId) return null;
    // Registration refuses such keys; one stored before it did is never verified (its cost is the attacker's to choose).
    const unfit = unfitPublicKey(passkey.publicKey);
    if (unfit) {
      this.logger.warn(`passkey ${passkey.id} of member ${passkey.memberId} refused: ${unfit}`);
      return null;
    }
    const requireUV = expected.kind === 'passwordless';
    let result;
    try {
      result = await verifyAuthenticationResponse({
        response: credential,
        expectedChallenge: (challenge) => this.takeFor(challenge, (p) => samePurpose(p, expected)),
        expectedOrigin: this.settings.origins,
        expectedRPID: this.settings.rpId,
        credential: {
          id: passkey.credentialId,
          publicKey: new Uint8Array(passkey.publicKey),
          counter: passkey.signCount,
          transports: passkey.transports,
        },
        requireUserVerification: requireUV,
      });
    } catch (err) {
      this.logger.warn(
        `passkey ${passkey.id} of member ${passkey.memberId} refused: ${(err as Error).message.slice(0, 200)}`,
      );
      return null;
    }
    if (!result.verified) return null;
    const info = result.authenticationInfo;
    const recorded = await this.factors.recordPasskeyUse(
      passkey.id,
      passkey.signCount,
      info.newCounter,
      info.credentialBackedUp,
      new Date(this.clock.now()),
    );
    if (!recorded) return null;
    return { passkey, backedUp: info.credentialBackedUp, userVerified: info.userVerified };
  }

  list(memberId: string): Promise<PasskeyRow[]> {
    return this.factors.listPasskeys(memberId);
  }

  rename(memberId: string, id: string, name: string): Promise<PasskeyRow | null> {
    return this.factors.renamePasskey(memberId, id, name);
  }

  remove(memberId: string, id: string, record: FactorChangeRecord): Promise<string | null> {
    return this.factors.deletePasskey(memberId, id, record);
  }

  private async remember(challenge: string, purpose: PasskeyPurpose): Promise<void> {
    await this.state.set(challengeKey(challenge), JSON.stringify(purpose), CHALLENGE_TTL_MS);
  }

  /** Takes the challenge (single use, whatever the outcome) and says whether it was issued for this purpose. */
  private async takeFor(challenge: string, matches: (p: PasskeyPurpose) => boolean): Promise<boolean> {
    if (typeof challenge !== 'string' || challenge.length > 256) return false;
    const raw = await this.state.take(challengeKey(challenge));
    return raw !== null && matches(JSON.parse(raw) as PasskeyPurpose);
  }
}

function challengeKey(challenge: string): string {
  return `webauthn:challenge:${challenge}`;
}

function samePurpose(p: PasskeyPurpose, expected: PasskeyPurpose): boolean {
  if (p.kind !== expected.kind) return false;
  if (
    p.kind === 'passwordless' ||
    expected.kind === 'passwordless' ||
    p.kind === 'register' ||
    expected.kind === 'register'
  )
    return p.kind === expected.kind;
  return p.memberId === expected.memberId && (p.bind ?? null) === (expected.bind ?? null);
}
