/**
 * Where the browser may be sent after a third-party login: site-relative paths on the configured
 * frontend, or absolute http(s) URLs whose exact origin is allowlisted. Everything ambiguous is refused
 * (protocol-relative `//host`, backslashes, control characters, userinfo, look-alike hosts).
 */
export class RedirectAllowlist {
  private readonly origins: Set<string>;

  constructor(entries: string[]) {
    this.origins = new Set(entries.map((e) => RedirectAllowlist.originOf(e)).filter((o): o is string => !!o));
  }

  /** The origin of an absolute http(s) URL without userinfo, or null. */
  static originOf(value: string): string | null {
    try {
      const u = new URL(value.trim());
      if ((u.protocol !== 'https:' && u.protocol !== 'http:') || u.username || u.password) return null;
      return u.origin;
    } catch {
      return null;
    }
  }

  allows(origin: string): boolean {
    return this.origins.has(origin);
  }

  /**
   * The absolute address for `candidate`, or null when it is refused. A path starting with a single `/`
   * is resolved against `base` (the registration's frontend page, itself trusted by configuration).
   */
  resolve(candidate: string, base: string): string | null {
    if (typeof candidate !== 'string' || candidate.length === 0 || candidate.length > 2048) return null;
    // Browsers and URL parsers drop or reinterpret these (a backslash, controls, space, DEL, anything
    // outside printable ASCII); refuse rather than guess.
    if (candidate.includes('\\') || /[^\u0021-\u007e]/.test(candidate)) return null;
    if (candidate.startsWith('/')) {
      if (candidate.startsWith('//')) return null;
      const baseOrigin = RedirectAllowlist.originOf(base);
      if (!baseOrigin) return null;
      const resolved = new URL(candidate, baseOrigin);
      return resolved.origin === baseOrigin ? resolved.toString() : null;
    }
    if (!/^https?:\/\//i.test(candidate)) return null;
    let url: URL;
    try {
      url = new URL(candidate);
    } catch {
      return null;
    }
    if (url.username || url.password || url.hash) return null;
    if (!this.origins.has(url.origin)) return null;
    return url.toString();
  }
}
