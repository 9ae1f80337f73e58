import { Injectable } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { SharedState } from '@app/platform';

/** QR / authorization state of docs/contract/DECISIONS.md. */
export enum QrcodeState {
  WAITED = 0,
  SCANNED = 1,
  AUTHORIZED = 2,
  CANCELED = 3,
  EXPIRED = 4,
}

export type OAuth2FlowKind = 'standard' | 'wechat-qrconnect' | 'wechat-mobile' | 'wechat-silent' | 'wechat-mp-scan';

/** What the server remembers between sending the browser to a provider and its return. */
export interface AuthorizationState {
  registrationId: string;
  kind: OAuth2FlowKind;
  /** The redirect_uri sent to the provider (must be repeated verbatim at the token exchange). */
  callbackUrl: string;
  /** Frontend page that receives `?state=` afterwards (allowlisted). */
  frontendUrl: string;
  codeVerifier?: string;
  nonce?: string;
  /** Set when a logged-in member links this identity instead of logging in. */
  linkMemberId?: string;
  /** The session that started the link: the callback links only while it is live (a reset or logout ends the state too). */
  linkSessionId?: string;
  /** SHA-256 of the starting browser's binding cookie (browser-binding.ts); the callback must show it. */
  browserHash?: string;
  /** The provider URL, when the browser is sent there through `/login/oauth2/authorize/{id}` (login states). */
  authorizationUrl?: string;
}

/** Polling record of a QR login (website QR or official-account scene). */
export interface QrcodeRecord {
  status: QrcodeState;
  registrationId: string;
  kind: OAuth2FlowKind;
  expiresAt: number;
  appId?: string;
  /** SHA-256 of the binding cookie of the browser that created the QR code. */
  browserHash?: string;
  /** Official-account codes: what WeChat answered, to give the same code again to the browser that asks again. */
  ticket?: string;
  qrCodeUrl?: string;
  createdAt?: number;
}

/** A finished third-party login waiting for its single exchange at GET /callback. */
export interface PendingLogin {
  memberId: string;
  registrationId: string;
  provider: string;
  loginType: string;
  openId: string;
  unionId: string | null;
  nickname: string | null;
  avatarUrl: string | null;
  isNewUser: boolean;
  isBound: boolean;
  /** SHA-256 of the binding cookie of the browser that may exchange this login. */
  browserHash?: string;
  /** QR logins (polled by state): the exchange must always show the binding cookie. */
  strictBinding?: boolean;
}

/** Every state is random, single use and expires after 10 minutes. */
export const STATE_TTL_MS = 10 * 60_000;
/** Expired QR records stay answerable (as EXPIRED) for a day before they become unknown. */
const QR_RECORD_GRACE_MS = 24 * 3600_000;

export function randomState(): string {
  return randomBytes(24).toString('base64url');
}

/** A state value we could have issued (so junk never reaches the store). */
export function isWellFormedState(s: unknown): s is string {
  return typeof s === 'string' && /^[A-Za-z0-9_-]{16,64}$/.test(s);
}

/** OAuth states, QR records and pending logins in SharedState (Redis or PostgreSQL) with expiry. */
@Injectable()
export class OAuth2StateRepository {
  constructor(private readonly shared: SharedState) {}

  async saveAuthorization(state: string, value: AuthorizationState): Promise<void> {
    if (!(await this.shared.setIfAbsent(`oauth2:authz:${state}`, JSON.stringify(value), STATE_TTL_MS))) {
      throw new Error('state collision');
    }
  }

  /** Single use: the state is gone after this call whatever the outcome. */
  async takeAuthorization(state: string): Promise<AuthorizationState | null> {
    if (!isWellFormedState(state)) return null;
    return parse(await this.shared.take(`oauth2:authz:${state}`));
  }

  async getAuthorization(state: string): Promise<AuthorizationState | null> {
    if (!isWellFormedState(state)) return null;
    return parse(await this.shared.get(`oauth2:authz:${state}`));
  }

  /** Rewrites a live state keeping its remaining lifetime; false when it is gone. */
  async updateAuthorization(state: string, value: AuthorizationState): Promise<boolean> {
    const ttl = await this.shared.ttl(`oauth2:authz:${state}`);
    if (ttl <= 0) return false;
    await this.shared.set(`oauth2:authz:${state}`, JSON.stringify(value), ttl);
    return true;
  }

  async createQrcode(state: string, record: Omit<QrcodeRecord, 'status'>): Promise<void> {
    const value: QrcodeRecord = { ...record, status: QrcodeState.WAITED };
    await this.shared.set(
      `oauth2:qr:${state}`,
      JSON.stringify(value),
      record.expiresAt - Date.now() + QR_RECORD_GRACE_MS,
    );
  }

  /** The record with its effective status (EXPIRED once past expiry unless already finished), or null. */
  async getQrcode(state: string): Promise<QrcodeRecord | null> {
    if (!isWellFormedState(state)) return null;
    const record = parse<QrcodeRecord>(await this.shared.get(`oauth2:qr:${state}`));
    if (record && record.expiresAt <= Date.now() && record.status !== QrcodeState.AUTHORIZED)
      record.status = QrcodeState.EXPIRED;
    return record;
  }

  /** Remembers the official-account QR code last made for a browser (its binding hash), for `ttlMs`. */
  async saveBrowserQrcode(appId: string, browserHash: string, state: string, ttlMs: number): Promise<void> {
    await this.shared.set(`oauth2:qr-of:${appId}:${browserHash}`, state, ttlMs);
  }

  /** The scene of the QR code last made for this browser and account, or null. */
  browserQrcode(appId: string, browserHash: string): Promise<string | null> {
    return this.shared.get(`oauth2:qr-of:${appId}:${browserHash}`);
  }

  async setQrcodeStatus(state: string, status: QrcodeState): Promise<void> {
    const record = parse<QrcodeRecord>(await this.shared.get(`oauth2:qr:${state}`));
    if (!record) return;
    record.status = status;
    await this.shared.set(
      `oauth2:qr:${state}`,
      JSON.stringify(record),
      Math.max(1000, record.expiresAt - Date.now() + QR_RECORD_GRACE_MS),
    );
  }

  /** First caller wins (one scanner per scene, one processing per pushed message). */
  claim(key: string, ttlMs: number): Promise<boolean> {
    return this.shared.setIfAbsent(`oauth2:claim:${key}`, '1', ttlMs);
  }

  /** Gives a claim back (the work it guarded failed and may be retried). */
  async release(key: string): Promise<void> {
    await this.shared.del(`oauth2:claim:${key}`);
  }

  async savePendingLogin(state: string, login: PendingLogin): Promise<void> {
    await this.shared.set(`oauth2:result:${state}`, JSON.stringify(login), STATE_TTL_MS);
  }

  async peekPendingLogin(state: string): Promise<PendingLogin | null> {
    if (!isWellFormedState(state)) return null;
    return parse(await this.shared.get(`oauth2:result:${state}`));
  }

  /** Exchange once: a second call for the same state returns null. */
  async takePendingLogin(state: string): Promise<PendingLogin | null> {
    if (!isWellFormedState(state)) return null;
    return parse(await this.shared.take(`oauth2:result:${state}`));
  }
}

function parse<T>(value: string | null): T | null {
  if (!value) return null;
  try {
    return JSON.parse(value) as T;
  } catch {
    return null;
  }
}
