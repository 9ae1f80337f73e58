import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  KeyObject,
  randomBytes,
  sign,
} from 'crypto';
import type {
  AuthenticationResponseJSON,
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
  RegistrationResponseJSON,
} from '@simplewebauthn/server';
import { isoCBOR } from '@simplewebauthn/server/helpers';

/** The relying party a membership app started with WEBAUTHN_ENV binds passkeys to. */
export const WEBAUTHN_ORIGIN = 'https://members.example.test';
export const WEBAUTHN_ENV = { WEBAUTHN_RP_ID: 'members.example.test', WEBAUTHN_ORIGINS: WEBAUTHN_ORIGIN };

/** What the authenticator is and where its answers claim to come from. */
export interface AuthenticatorTraits {
  /** The page origin written into clientDataJSON. */
  origin: string;
  /** Sets the UV flag (a PIN or biometrics was checked); a bare security key does not. */
  userVerified: boolean;
  /** Sets BE and BS: a synced (multi-device) passkey. */
  backedUp: boolean;
  /** Bytes of an extra, unknown label (99) in the public key's COSE map: a key padded to any size. */
  coseExtra?: Uint8Array;
  /**
   * The credential's key: a private key it signs with (a new P-256 one by default; an RSA key makes an RS256
   * credential, see rsaKey), or only a public key for one that registers and never signs (see rsaPublicKey).
   */
  key?: KeyObject;
}

// Authenticator data flags (WebAuthn Level 3, §6.1).
const UP = 0x01;
const UV = 0x04;
const BE = 0x08;
const BS = 0x10;
const AT = 0x40;

/**
 * An RSA private key for an RS256 credential: `exponent` its public exponent (65537 as authenticators make
 * them; a small one such as 3, or 'huge': as long as the modulus, each verification ~30 times the work).
 */
export function rsaKey({
  bits = 2048,
  exponent = 65537,
}: { bits?: number; exponent?: number | 'huge' } = {}): KeyObject {
  if (exponent !== 'huge')
    return generateKeyPairSync('rsa', { modulusLength: bits, publicExponent: exponent }).privateKey;
  // The primes of a generated key, with another exponent (coprime to (p-1)(q-1)) and its private exponent.
  const base = generateKeyPairSync('rsa', { modulusLength: bits }).privateKey.export({ format: 'jwk' });
  const [p, q] = [base.p!, base.q!].map(fromBase64url);
  const n = p * q;
  const phi = (p - 1n) * (q - 1n);
  let e: bigint;
  do e = (fromBase64url(randomBytes(bits / 8).toString('base64url')) % n) | 1n | (1n << BigInt(bits - 2));
  while (gcd(e, phi) !== 1n);
  const d = modInverse(e, phi);
  const jwk = { ...base, e: toBase64url(e), d: toBase64url(d), dp: toBase64url(d % (p - 1n)) };
  return createPrivateKey({ key: { ...jwk, dq: toBase64url(d % (q - 1n)) }, format: 'jwk' });
}

/** The public key of an RSA credential of any modulus size (random, not a product of primes): for a registration only. */
export function rsaPublicKey(bits: number): KeyObject {
  const n = randomBytes(bits / 8);
  n[0] |= 0x80;
  n[n.length - 1] |= 1;
  return createPublicKey({ key: { kty: 'RSA', n: n.toString('base64url'), e: 'AQAB' }, format: 'jwk' });
}

function fromBase64url(s: string): bigint {
  return BigInt(`0x${Buffer.from(s, 'base64url').toString('hex') || '0'}`);
}

function toBase64url(x: bigint): string {
  const hex = x.toString(16);
  return Buffer.from(hex.length % 2 ? `0${hex}` : hex, 'hex').toString('base64url');
}

function gcd(a: bigint, b: bigint): bigint {
  while (b) [a, b] = [b, a % b];
  return a;
}

function modInverse(a: bigint, m: bigint): bigint {
  let [r0, r1, s0, s1] = [a % m, m, 1n, 0n];
  while (r1) {
    const k = r0 / r1;
    [r0, r1, s0, s1] = [r1, r0 - k * r1, s1, s0 - k * s1];
  }
  return ((s0 % m) + m) % m;
}

/**
 * A WebAuthn authenticator in software holding one ES256 (or RS256) credential (attestation "none"), for calling
 * the passkey use cases directly with what a browser would send. Its signature counter grows with each
 * assertion as a real one's does; `clone` copies the key and the counter (a cloned authenticator).
 * test/membership/second-factors-passkeys.e2e-spec.ts drives a real (virtual) one in Chromium over HTTP.
 */
export class SoftwareAuthenticator {
  readonly credentialId: string;
  private readonly traits: AuthenticatorTraits;
  private readonly key: KeyObject;
  private counter: number;
  private userHandle?: string;

  constructor(traits: Partial<AuthenticatorTraits> = {}, copied?: SoftwareAuthenticator) {
    this.traits = { origin: WEBAUTHN_ORIGIN, userVerified: true, backedUp: false, ...traits };
    this.credentialId = copied?.credentialId ?? randomBytes(16).toString('base64url');
    this.key = copied?.key ?? traits.key ?? generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
    this.counter = copied?.counter ?? 0;
    this.userHandle = copied?.userHandle;
  }

  /** Another authenticator with this one's key and current counter; `traits` may differ (e.g. its origin). */
  clone(traits: Partial<AuthenticatorTraits> = {}): SoftwareAuthenticator {
    return new SoftwareAuthenticator({ ...this.traits, ...traits }, this);
  }

  /** The answer of navigator.credentials.create to `options`, as @simplewebauthn/browser returns it. */
  register(options: PublicKeyCredentialCreationOptionsJSON): RegistrationResponseJSON {
    this.userHandle = options.user.id;
    const id = Buffer.from(this.credentialId, 'base64url');
    const coseKey = this.publicKey();
    const idLength = Buffer.alloc(2);
    idLength.writeUInt16BE(id.length);
    const attested = Buffer.concat([Buffer.alloc(16) /* AAGUID */, idLength, id, coseKey]);
    const authData = this.authenticatorData(options.rp.id!, AT, attested);
    const attestationObject = isoCBOR.encode(
      new Map<string, string | Uint8Array | Map<string, never>>([
        ['fmt', 'none'],
        ['attStmt', new Map<string, never>()],
        ['authData', authData],
      ]),
    );
    return {
      id: this.credentialId,
      rawId: this.credentialId,
      type: 'public-key',
      response: {
        clientDataJSON: this.clientData('webauthn.create', options.challenge),
        attestationObject: Buffer.from(attestationObject).toString('base64url'),
        transports: ['internal'],
      },
      clientExtensionResults: {},
      authenticatorAttachment: 'platform',
    };
  }

  /** The credential's public key as the authenticator data carries it (a COSE_Key). */
  publicKey(): Uint8Array {
    const jwk = this.key.export({ format: 'jwk' });
    const bytes = (b64: string | undefined) => Buffer.from(b64!, 'base64url');
    const labels: [number, number | Uint8Array][] =
      jwk.kty === 'RSA'
        ? // An RSA RS256 key: kty 3, alg -257, n, e.
          [
            [1, 3],
            [3, -257],
            [-1, bytes(jwk.n)],
            [-2, bytes(jwk.e)],
          ]
        : // An EC2 P-256 ES256 key: kty 2, alg -7, crv 1, x, y.
          [
            [1, 2],
            [3, -7],
            [-1, 1],
            [-2, bytes(jwk.x)],
            [-3, bytes(jwk.y)],
          ];
    if (this.traits.coseExtra) labels.push([99, this.traits.coseExtra]);
    return isoCBOR.encode(new Map(labels));
  }

  /** The answer of navigator.credentials.get to `options`: authenticator data and a signature over it and the client data. */
  assert(options: PublicKeyCredentialRequestOptionsJSON): AuthenticationResponseJSON {
    if (this.key.type !== 'private') throw new Error('this authenticator holds no private key: it only registers');
    this.counter += 1;
    const authData = this.authenticatorData(options.rpId!, 0);
    const clientDataJSON = this.clientData('webauthn.get', options.challenge);
    const signed = Buffer.concat([
      authData,
      createHash('sha256').update(Buffer.from(clientDataJSON, 'base64url')).digest(),
    ]);
    return {
      id: this.credentialId,
      rawId: this.credentialId,
      type: 'public-key',
      response: {
        clientDataJSON,
        authenticatorData: authData.toString('base64url'),
        signature: sign('sha256', signed, this.key).toString('base64url'),
        userHandle: this.userHandle,
      },
      clientExtensionResults: {},
      authenticatorAttachment: 'platform',
    };
  }

  private clientData(type: 'webauthn.create' | 'webauthn.get', challenge: string): string {
    const data = { type, challenge, origin: this.traits.origin, crossOrigin: false };
    return Buffer.from(JSON.stringify(data)).toString('base64url');
  }

  private authenticatorData(rpId: string, extraFlags: number, attested = Buffer.alloc(0)): Buffer {
    const flags = UP | extraFlags | (this.traits.userVerified ? UV : 0) | (this.traits.backedUp ? BE | BS : 0);
    const count = Buffer.alloc(4);
    count.writeUInt32BE(this.counter);
    return Buffer.concat([createHash('sha256').update(rpId).digest(), Buffer.from([flags]), count, attested]);
  }
}
