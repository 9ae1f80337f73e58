/**
 * A browser's cookie jar for one site (the app): what it stores from Set-Cookie and sends back, so
 * e2e tests carry the OAuth binding cookie the way a browser would (and a second Browser is "someone
 * else's browser").
 */
export class Browser {
  private readonly jar = new Map<string, string>();

  /** The Cookie header to send, or undefined when the jar is empty. */
  cookie(): string | undefined {
    return this.jar.size ? [...this.jar].map(([k, v]) => `${k}=${v}`).join('; ') : undefined;
  }

  headers(extra: Record<string, string> = {}): Record<string, string> {
    const c = this.cookie();
    return c ? { ...extra, cookie: c } : extra;
  }

  set(name: string, value: string): void {
    this.jar.set(name, value);
  }

  store(res: Response): void {
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const eq = pair.indexOf('=');
      const value = pair.slice(eq + 1);
      if (value === '' || /max-age=0/i.test(c)) this.jar.delete(pair.slice(0, eq));
      else this.jar.set(pair.slice(0, eq), value);
    }
  }

  /** A GET navigation without following redirects; stores cookies. */
  async navigate(url: string | URL): Promise<Response> {
    const res = await fetch(url, { redirect: 'manual', headers: this.headers() });
    this.store(res);
    return res;
  }
}
