import { t } from '../i18n';
import { ApiError, refreshSession } from './client';
import { accessToken, signedOut } from './session';

/**
 * The AI gateway's base URL for the console. Membership writes it into the console's page
 * (apps/membership/src/web-app/web-app.ts: CONSOLE_GATEWAY_URL, else this host with port 8081) and allows
 * it in the page's Content-Security-Policy; the gateway accepts membership's operator tokens on /admin/**
 * and answers CORS for the console's origin (CONSOLE_ORIGIN).
 */
export const gatewayUrl = (): string =>
  document.querySelector<HTMLMetaElement>('meta[name="gateway-url"]')?.content ||
  `${location.protocol}//${location.hostname}:8081`;

type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';

/** A gateway refusal (the OpenAI error shape): `code` is the catalog's code, e.g. `invalid_api_key`. */
async function send<T>(method: Method, path: string, body: unknown): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const token = accessToken();
  if (token) headers.authorization = `Bearer ${token}`;
  let res: Response;
  try {
    res = await fetch(`${gatewayUrl()}${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch {
    throw new ApiError(0, 0, t('error.network'));
  }
  const json = (await res.json().catch(() => null)) as { error?: { message?: string; code?: string } } | null;
  if (!res.ok)
    throw new ApiError(res.status, res.status, json?.error?.message || t('error.generic'), json?.error?.code ?? null);
  return json as T;
}

/** Calls the gateway's admin API as the signed-in operator (a 401 is retried once after refreshing the tokens). */
export async function gateway<T>(method: Method, path: string, body?: unknown): Promise<T> {
  try {
    return await send<T>(method, path, body);
  } catch (e) {
    if (!(e instanceof ApiError) || e.status !== 401) throw e;
    if (!(await refreshSession())) {
      signedOut();
      throw new ApiError(401, 401, t('error.sessionEnded'));
    }
    return send<T>(method, path, body);
  }
}

/**
 * Saves a file the gateway streams (an export): fetched with the operator's token (a link cannot carry it),
 * then handed to the browser as a download.
 */
export async function gatewayDownload(path: string, filename: string): Promise<void> {
  const run = async () =>
    fetch(`${gatewayUrl()}${path}`, { headers: { authorization: `Bearer ${accessToken() ?? ''}` } });
  let res = await run().catch(() => null);
  if (res?.status === 401 && (await refreshSession())) res = await run().catch(() => null);
  if (!res) throw new ApiError(0, 0, t('error.network'));
  if (!res.ok) {
    const json = (await res.json().catch(() => null)) as { error?: { message?: string } } | null;
    throw new ApiError(res.status, res.status, json?.error?.message || t('error.generic'));
  }
  saveBlob(await res.blob(), filename);
}

/** Offers a blob as a download named `filename`. */
export function saveBlob(blob: Blob, filename: string): void {
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = filename;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/** The operator role the access token carries ('admin', 'viewer' or null), read from its claims (the servers check it anyway). */
export function roleOf(token: string | null): 'admin' | 'viewer' | null {
  if (!token) return null;
  try {
    const claims = JSON.parse(atob(token.split('.')[1].replace(/-/g, '+').replace(/_/g, '/'))) as { roles?: string[] };
    if (claims.roles?.includes('admin')) return 'admin';
    if (claims.roles?.includes('viewer')) return 'viewer';
  } catch {
    // not a JWT: no role
  }
  return null;
}
