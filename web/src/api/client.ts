import { locale, t } from '../i18n';
import { prefix } from '../router';
import { accessToken, MemberLogin, signedIn, signedOut, storedRefreshToken } from './session';

/** A refusal in membership's envelope: `code` is the ErrorCode, `message` is already in the page's language. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: number,
    message: string,
    readonly data: unknown = null,
  ) {
    super(message);
  }
}

interface Envelope<T> {
  code: number;
  message: string;
  data: T;
}

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

async function send<T>(method: Method, path: string, body: unknown, token: string | null): Promise<T> {
  // Accept-Language: the envelope's messages in the language the page shows (i18n/index.ts).
  const headers: Record<string, string> = { accept: 'application/json', 'accept-language': locale };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (token) headers.authorization = `Bearer ${token}`;
  let res: Response;
  try {
    res = await fetch(`${prefix}${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch {
    throw new ApiError(0, 0, t('error.network'));
  }
  const envelope = (await res.json().catch(() => null)) as Envelope<T> | null;
  if (!envelope || typeof envelope.code !== 'number') throw new ApiError(res.status, res.status, t('error.generic'));
  if (envelope.code !== 200)
    throw new ApiError(res.status, envelope.code, envelope.message || t('error.generic'), envelope.data);
  return envelope.data;
}

let refreshing: Promise<boolean> | null = null;

/**
 * Exchanges the stored refresh token for new tokens (membership rotates it: each one works once). One
 * exchange at a time: calls that see an expired access token together wait for the same one.
 */
export function refreshSession(): Promise<boolean> {
  refreshing ??= (async () => {
    const refreshToken = storedRefreshToken();
    if (!refreshToken) return false;
    try {
      signedIn(await send<MemberLogin>('POST', '/api/v1/app/auth/refresh-token', { refreshToken }, null));
      return true;
    } catch (e) {
      // A refused token (expired, revoked, reused) ends the session here; a network failure keeps it for a retry.
      if (e instanceof ApiError && e.status !== 0) signedOut();
      return false;
    }
  })().finally(() => (refreshing = null));
  return refreshing;
}

/** Calls the membership API as the signed-in member (a 401 is retried once after refreshing the tokens). */
export async function api<T>(method: Method, path: string, body?: unknown): Promise<T> {
  try {
    return await send<T>(method, path, body, accessToken());
  } catch (e) {
    if (!(e instanceof ApiError) || e.status !== 401) throw e;
    if (!(await refreshSession())) {
      signedOut();
      throw new ApiError(401, 401, t('error.sessionEnded'));
    }
    return send<T>(method, path, body, accessToken());
  }
}

/** Sends a file as the multipart part `file` (membership's /api/v1/app/files) as the signed-in member. */
export async function uploadFile<T>(path: string, file: File): Promise<T> {
  const run = async () => {
    const form = new FormData();
    form.append('file', file);
    const token = accessToken();
    const res = await fetch(`${prefix}${path}`, {
      method: 'POST',
      headers: {
        accept: 'application/json',
        'accept-language': locale,
        ...(token ? { authorization: `Bearer ${token}` } : {}),
      },
      body: form,
    }).catch(() => null);
    if (!res) throw new ApiError(0, 0, t('error.network'));
    const envelope = (await res.json().catch(() => null)) as Envelope<T> | null;
    if (!envelope || typeof envelope.code !== 'number') throw new ApiError(res.status, res.status, t('error.generic'));
    if (envelope.code !== 200)
      throw new ApiError(res.status, envelope.code, envelope.message || t('error.generic'), envelope.data);
    return envelope.data;
  };
  try {
    return await run();
  } catch (e) {
    if (!(e instanceof ApiError) || e.status !== 401 || !(await refreshSession())) throw e;
    return run();
  }
}

/** Fetches a membership export (CSV) as the signed-in member: the body as a blob. */
export async function apiBlob(path: string): Promise<Blob> {
  const run = () =>
    fetch(`${prefix}${path}`, {
      headers: { 'accept-language': locale, authorization: `Bearer ${accessToken() ?? ''}` },
    }).catch(() => null);
  let res = await run();
  if (res?.status === 401 && (await refreshSession())) res = await run();
  if (!res) throw new ApiError(0, 0, t('error.network'));
  if (!res.ok) {
    const envelope = (await res.json().catch(() => null)) as Envelope<unknown> | null;
    throw new ApiError(res.status, envelope?.code ?? res.status, envelope?.message || t('error.generic'));
  }
  return res.blob();
}

/** Calls an open endpoint (sign-in steps): no token sent, no refresh on 401. */
export const publicApi = <T>(method: Method, path: string, body?: unknown): Promise<T> =>
  send<T>(method, path, body, null);

export const messageOf = (e: unknown): string => (e instanceof ApiError ? e.message : t('error.generic'));
