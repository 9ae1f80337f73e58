import { Injectable } from '@nestjs/common';
import { createECDH, createHash, createHmac, createPrivateKey, createPublicKey, JsonWebKey, KeyObject } from 'crypto';
import * as fs from 'fs';
import { MembershipConfig } from '../config/membership.config';

/** The signing algorithm of access tokens: ECDSA P-256 (jsonwebtoken, under @nestjs/jwt, has no EdDSA). */
export const ACCESS_TOKEN_ALG = 'ES256';

/** A public key as published in the JWKS. */
export interface PublicJwk {
  kty: 'EC';
  crv: 'P-256';
  x: string;
  y: string;
  kid: string;
  alg: typeof ACCESS_TOKEN_ALG;
  use: 'sig';
}

export interface AccessTokenKey {
  kid: string;
  privateKey: KeyObject;
  publicKey: KeyObject;
  jwk: PublicJwk;
}

/**
 * The access-token signing keys: ACCESS_TOKEN_KEYS (a JWK Set of private P-256 keys) or the file named
 * by ACCESS_TOKEN_KEYS_FILE. The first key signs; the others are only published and accepted, so a new
 * key can be put first while tokens signed by the previous one live out their ACCESS_TOKEN_TTL
 * (docs/membership/access-tokens.md). Without either (refused in production by MembershipConfig), one key is
 * derived from JWT_SECRET, which in development is itself generated under DATA_DIR (membership.app.ts):
 * replicas that share JWT_SECRET then sign with the same key, as they did with HS256.
 */
@Injectable()
export class AccessTokenKeys {
  readonly signing: AccessTokenKey;
  private readonly byKid: Map<string, AccessTokenKey>;

  constructor(config: MembershipConfig) {
    const text =
      config.ACCESS_TOKEN_KEYS ??
      (config.ACCESS_TOKEN_KEYS_FILE ? fs.readFileSync(config.ACCESS_TOKEN_KEYS_FILE, 'utf8') : undefined);
    const keys = text !== undefined ? parseKeySet(text) : [developmentKey(config.JWT_SECRET)];
    this.signing = keys[0];
    this.byKid = new Map(keys.map((k) => [k.kid, k]));
  }

  /** The verification key of a `kid`, or undefined. */
  find(kid: unknown): AccessTokenKey | undefined {
    return typeof kid === 'string' ? this.byKid.get(kid) : undefined;
  }

  /** The JSON Web Key Set published at /.well-known/jwks.json: public halves only. */
  jwks(): { keys: PublicJwk[] } {
    return { keys: [...this.byKid.values()].map((k) => k.jwk) };
  }
}

/** Parses a JWK Set of private EC P-256 keys; throws a message naming the problem (the app refuses to boot). */
export function parseKeySet(text: string): AccessTokenKey[] {
  let set: { keys?: unknown };
  try {
    set = JSON.parse(text) as { keys?: unknown };
  } catch {
    throw new Error('ACCESS_TOKEN_KEYS: not JSON (expected {"keys": [private EC P-256 JWKs]})');
  }
  if (!Array.isArray(set?.keys) || set.keys.length === 0)
    throw new Error('ACCESS_TOKEN_KEYS: expected {"keys": [...]} with at least one key');
  const keys = set.keys.map((jwk, i) => keyFromJwk(jwk as JsonWebKey, i));
  if (new Set(keys.map((k) => k.kid)).size !== keys.length)
    throw new Error('ACCESS_TOKEN_KEYS: two keys have the same kid');
  return keys;
}

function keyFromJwk(jwk: JsonWebKey, index: number): AccessTokenKey {
  if (jwk?.kty !== 'EC' || jwk.crv !== 'P-256' || typeof jwk.d !== 'string') {
    throw new Error(`ACCESS_TOKEN_KEYS: key ${index} must be a private EC P-256 JWK (kty EC, crv P-256, d, x, y)`);
  }
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey({ key: jwk, format: 'jwk' });
  } catch {
    throw new Error(`ACCESS_TOKEN_KEYS: key ${index} is not a valid P-256 private key`);
  }
  const kid = typeof jwk.kid === 'string' && jwk.kid ? jwk.kid : undefined;
  return keyOf(privateKey, kid);
}

function keyOf(privateKey: KeyObject, kid?: string): AccessTokenKey {
  const publicKey = createPublicKey(privateKey);
  const pub = publicKey.export({ format: 'jwk' }) as { x: string; y: string };
  const id = kid ?? thumbprint(pub.x, pub.y);
  return {
    kid: id,
    privateKey,
    publicKey,
    jwk: { kty: 'EC', crv: 'P-256', x: pub.x, y: pub.y, kid: id, alg: ACCESS_TOKEN_ALG, use: 'sig' },
  };
}

/** RFC 7638 JWK thumbprint (SHA-256, base64url): the default `kid`, stable for the key. */
export function thumbprint(x: string, y: string): string {
  return createHash('sha256').update(`{"crv":"P-256","kty":"EC","x":"${x}","y":"${y}"}`).digest('base64url');
}

/** A private P-256 JWK with its kid, for ACCESS_TOKEN_KEYS (docs/configuration.md; tests). */
export function privateJwkOf(key: AccessTokenKey): JsonWebKey {
  return { ...key.privateKey.export({ format: 'jwk' }), kid: key.kid, alg: ACCESS_TOKEN_ALG, use: 'sig' };
}

function developmentKey(root: string | undefined): AccessTokenKey {
  if (!root) throw new Error('JWT_SECRET is not resolved');
  // A scalar from the secret; the rare value outside [1, n-1] that ECDH refuses is hashed again.
  for (let round = 0; ; round++) {
    const d = createHmac('sha256', root).update(`membership:access-token-es256:v1:${round}`).digest();
    const ecdh = createECDH('prime256v1');
    try {
      ecdh.setPrivateKey(d);
    } catch {
      continue;
    }
    const pub = ecdh.getPublicKey();
    const jwk = {
      kty: 'EC',
      crv: 'P-256',
      d: d.toString('base64url'),
      x: pub.subarray(1, 33).toString('base64url'),
      y: pub.subarray(33).toString('base64url'),
    };
    return keyOf(createPrivateKey({ key: jwk, format: 'jwk' }));
  }
}
