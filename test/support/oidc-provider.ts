import { ChildProcess, fork } from 'node:child_process';
import { join } from 'node:path';

export interface OidcTestClient {
  client_id: string;
  client_secret: string;
  redirect_uris: string[];
  token_endpoint_auth_method?: 'client_secret_basic' | 'client_secret_post';
  grant_types?: string[];
  response_types?: string[];
}

/** Handle on the oidc-provider child process (see oidc-provider.mjs). */
export class OidcTestProvider {
  constructor(
    private readonly child: ChildProcess,
    readonly issuer: string,
  ) {}

  /** Registers the clients (their redirect URIs are known only once the app listens). */
  configure(clients: OidcTestClient[]): Promise<void> {
    return new Promise((resolve, reject) => {
      const onMessage = (m: any) => {
        if (m?.type === 'ready') {
          this.child.off('message', onMessage);
          resolve();
        }
      };
      this.child.on('message', onMessage);
      this.child.send(
        {
          type: 'configure',
          clients: clients.map((c) => ({ grant_types: ['authorization_code'], response_types: ['code'], ...c })),
        },
        (err) => err && reject(err),
      );
    });
  }

  /** The account that logs in at the next interaction. */
  setAccount(accountId: 'alice' | 'bob'): void {
    this.child.send({ type: 'account', accountId });
  }

  /** The next interaction is refused by the end-user (access_denied). */
  denyNext(): void {
    this.child.send({ type: 'deny', value: true });
  }

  close(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(() => this.child.kill('SIGKILL'), 3000);
      this.child.once('exit', () => {
        clearTimeout(timer);
        resolve();
      });
      this.child.kill('SIGTERM');
    });
  }
}

/** Starts oidc-provider in a child process (it is ESM-only and cannot be required inside Jest). */
export function startOidcProvider(): Promise<OidcTestProvider> {
  const child = fork(join(__dirname, 'oidc-provider.mjs'), [], {
    execArgv: ['--no-warnings'],
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
  });
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr += d).length > 20_000 && (stderr = stderr.slice(-10_000)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`oidc-provider did not start: ${stderr}`));
    }, 15_000);
    child.once('exit', (code) => reject(new Error(`oidc-provider exited (${code}): ${stderr}`)));
    child.on('message', (m: any) => {
      if (m?.type === 'listening') {
        clearTimeout(timer);
        resolve(new OidcTestProvider(child, `http://127.0.0.1:${m.port}`));
      }
    });
  });
}

/**
 * Follows a browser's redirects through the provider (keeping its cookies) until the next hop
 * leaves the provider; returns that address (normally the app's callback with code and state).
 */
export async function followProvider(startUrl: string, providerOrigin: string, maxHops = 10): Promise<URL> {
  const jar = new Map<string, string>();
  let url = new URL(startUrl);
  for (let i = 0; i < maxHops; i++) {
    if (url.origin !== providerOrigin) return url;
    const res = await fetch(url, {
      redirect: 'manual',
      headers: { cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; ') },
    });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const eq = pair.indexOf('=');
      const value = pair.slice(eq + 1);
      if (value === '' || /expires=Thu, 01 Jan 1970/i.test(c)) jar.delete(pair.slice(0, eq));
      else jar.set(pair.slice(0, eq), value);
    }
    const location = res.headers.get('location');
    if (!location)
      throw new Error(`provider stopped at ${url.href} with HTTP ${res.status}: ${(await res.text()).slice(0, 300)}`);
    url = new URL(location, url);
  }
  throw new Error('too many redirects');
}
