import { createHash, generateKeyPairSync, KeyObject, randomBytes, sign } from 'crypto';
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
}

// Authenticator data flags (WebAuthn Level 3, §6.1).
const UP = 0x01;
const UV = 0x04;
const BE = 0x08;
const BS = 0x10;
const AT = 0x40;

/**
 * A WebAuthn authenticator in software holding one ES256 credential (attestation "none"), for calling
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
    this.key = copied?.key ?? generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
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
    const jwk = this.key.export({ format: 'jwk' });
    // COSE_Key of an EC2 P-256 ES256 key: kty 2, alg -7, crv 1, x, y.
    const coseKey = isoCBOR.encode(
      new Map<number, number | Uint8Array>([
        [1, 2],
        [3, -7],
        [-1, 1],
        [-2, Buffer.from(jwk.x!, 'base64url')],
        [-3, Buffer.from(jwk.y!, 'base64url')],
        ...(this.traits.coseExtra ? [[99, this.traits.coseExtra] as [number, Uint8Array]] : []),
      ]),
    );
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

  /** The answer of navigator.credentials.get to `options`: authenticator data and a signature over it and the client data. */
  assert(options: PublicKeyCredentialRequestOptionsJSON): AuthenticationResponseJSON {
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
