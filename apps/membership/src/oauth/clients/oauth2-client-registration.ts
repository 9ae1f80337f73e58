import { readFileSync } from 'node:fs';
import { extname } from 'node:path';
import { load as loadYaml } from 'js-yaml';

export const OAUTH2_PROVIDERS = ['oidc', 'github', 'gitee', 'wechat-open', 'wechat-mp', 'oauth2'] as const;
export type OAuth2Provider = (typeof OAUTH2_PROVIDERS)[number];

/** One configured third-party client, after defaults and environment references are resolved. */
export interface OAuth2ClientRegistration {
  registrationId: string;
  provider: OAuth2Provider;
  clientId: string;
  clientSecret: string;
  scopes: string[];
  /** OIDC issuer, discovered through /.well-known/openid-configuration. */
  issuer?: string;
  authorizationUri?: string;
  tokenUri?: string;
  userInfoUri?: string;
  /** Attribute of the user-info answer that identifies the user (`id`, `sub`, ...). */
  userNameAttribute: string;
  /** The frontend page that receives `?state=` after the server-side callback. */
  redirectUri: string;
  /** Send a PKCE challenge (S256). Defaults: on for oidc and oauth2, off for github and gitee. */
  pkce: boolean;
  /** Official account: the server-URL token used to sign pushes. */
  token?: string;
  /** Official account: EncodingAESKey of the safe (encrypted) message mode. */
  encodingAesKey?: string;
  /** Display name for Swagger, identity lists and the login page's buttons. */
  clientName: string;
  /** Iconify class of the login button (`i-simple-icons-github`); defaults per provider. */
  icon: string;
  /** Login pages (`appType` of oauth2-providers, e.g. `site`) that list this client; absent = all. */
  appTypes?: string[];
}

const KNOWN_DEFAULTS: Partial<Record<OAuth2Provider, Partial<OAuth2ClientRegistration>>> = {
  github: {
    authorizationUri: 'https://github.com/login/oauth/authorize',
    tokenUri: 'https://github.com/login/oauth/access_token',
    userInfoUri: 'https://api.github.com/user',
    userNameAttribute: 'id',
    scopes: ['read:user', 'user:email'],
    pkce: false,
    clientName: 'GitHub',
    icon: 'i-simple-icons-github',
  },
  gitee: {
    authorizationUri: 'https://gitee.com/oauth/authorize',
    tokenUri: 'https://gitee.com/oauth/token',
    userInfoUri: 'https://gitee.com/api/v5/user',
    userNameAttribute: 'id',
    scopes: ['user_info'],
    pkce: false,
    clientName: 'Gitee',
    icon: 'i-simple-icons-gitee',
  },
  oidc: {
    userNameAttribute: 'sub',
    scopes: ['openid', 'profile', 'email'],
    pkce: true,
    clientName: 'OpenID Connect',
    icon: 'i-simple-icons-openid',
  },
  oauth2: { userNameAttribute: 'id', scopes: [], pkce: true, clientName: 'OAuth 2.0', icon: 'i-lucide-shield' },
  'wechat-open': {
    userNameAttribute: 'openid',
    scopes: ['snsapi_login'],
    pkce: false,
    clientName: 'WeChat',
    icon: 'i-simple-icons-wechat',
  },
  'wechat-mp': {
    userNameAttribute: 'openid',
    scopes: ['snsapi_userinfo'],
    pkce: false,
    clientName: 'WeChat Official Account',
    icon: 'i-simple-icons-wechat',
  },
};

/** Replaces `${NAME}` and `${NAME:-default}` with environment values; a missing variable is an error. */
export function resolveEnvReferences(value: string, env: Record<string, string | undefined>, where: string): string {
  return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g, (_m, name: string, fallback?: string) => {
    // Own entries only: `${constructor}` is an unset variable, not Object's member (process.env has a prototype).
    const v = Object.hasOwn(env, name) ? env[name] : undefined;
    if (v !== undefined && v !== '') return v;
    if (fallback !== undefined) return fallback;
    throw new Error(`${where}: environment variable ${name} is not set`);
  });
}

function isHttpUrl(s: string | undefined): boolean {
  if (!s) return false;
  try {
    const u = new URL(s);
    return (u.protocol === 'https:' || u.protocol === 'http:') && !u.username && !u.password;
  } catch {
    return false;
  }
}

/**
 * Parses a clients file (JSON or YAML): either a list of registrations, `{clients: [...]}`,
 * or a map `{registrationId: {...}}` (also under `clients:`). Throws one error listing every problem.
 */
export function parseOAuth2Clients(
  text: string,
  format: 'json' | 'yaml',
  env: Record<string, string | undefined>,
): OAuth2ClientRegistration[] {
  let doc: unknown;
  try {
    doc = format === 'json' ? (JSON.parse(text) as unknown) : loadYaml(text);
  } catch (e) {
    throw new Error(`OAUTH2_CLIENTS_FILE is not valid ${format.toUpperCase()}: ${(e as Error).message.split('\n')[0]}`);
  }
  if (doc && !Array.isArray(doc) && typeof doc === 'object' && 'clients' in doc) doc = doc.clients;
  const entries: unknown[] = Array.isArray(doc)
    ? doc
    : doc && typeof doc === 'object'
      ? Object.entries(doc).map(([id, v]) => ({ registrationId: id, ...(v as object) }))
      : [];
  const problems: string[] = [];
  const out: OAuth2ClientRegistration[] = [];
  const seen = new Set<string>();
  entries.forEach((raw, i) => {
    const rawId = raw && typeof raw === 'object' ? (raw as Record<string, unknown>).registrationId : undefined;
    const where = `clients[${i}]${rawId && (typeof rawId === 'string' || typeof rawId === 'number') ? ` (${rawId})` : ''}`;
    if (!raw || typeof raw !== 'object') return problems.push(`${where}: must be an object`);
    const entry = raw as Record<string, unknown>;
    const str = (k: string): string | undefined => {
      const v = entry[k];
      if (v === undefined || v === null || v === '') return undefined;
      if (typeof v !== 'string' && typeof v !== 'number') {
        problems.push(`${where}.${k}: must be a string`);
        return undefined;
      }
      try {
        return resolveEnvReferences(String(v), env, `${where}.${k}`);
      } catch (e) {
        problems.push((e as Error).message);
        return undefined;
      }
    };
    const registrationId = str('registrationId');
    const provider = str('provider') as OAuth2Provider | undefined;
    if (!registrationId || !/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/.test(registrationId))
      problems.push(`${where}.registrationId: letters, digits, _ . - (max 64)`);
    else if (seen.has(registrationId)) problems.push(`${where}.registrationId: duplicate`);
    else seen.add(registrationId);
    if (!provider || !OAUTH2_PROVIDERS.includes(provider)) {
      problems.push(`${where}.provider: one of ${OAUTH2_PROVIDERS.join(', ')}`);
      return;
    }
    const d = KNOWN_DEFAULTS[provider] ?? {};
    let scopes: string[] = d.scopes ?? [];
    const rawScopes = entry.scopes;
    if (Array.isArray(rawScopes)) scopes = rawScopes.map(String);
    else if (typeof rawScopes === 'string') scopes = rawScopes.split(/[\s,]+/).filter(Boolean);
    const reg: OAuth2ClientRegistration = {
      registrationId: registrationId ?? '',
      provider,
      clientId: str('clientId') ?? '',
      clientSecret: str('clientSecret') ?? '',
      scopes,
      issuer: str('issuer'),
      authorizationUri: str('authorizationUri') ?? d.authorizationUri,
      tokenUri: str('tokenUri') ?? d.tokenUri,
      userInfoUri: str('userInfoUri') ?? d.userInfoUri,
      userNameAttribute: str('userNameAttribute') ?? d.userNameAttribute ?? 'id',
      redirectUri: str('redirectUri') ?? '',
      pkce: typeof entry.pkce === 'boolean' ? entry.pkce : (d.pkce ?? false),
      token: str('token'),
      encodingAesKey: str('encodingAesKey'),
      clientName: str('clientName') ?? d.clientName ?? provider,
      icon: str('icon') ?? d.icon ?? 'i-lucide-shield',
      appTypes: appTypesOf(entry.appTypes, where, problems),
    };
    if (reg.clientName.length > 64) problems.push(`${where}.clientName: at most 64 characters`);
    if (!/^[a-z0-9][a-z0-9:-]{0,99}$/.test(reg.icon))
      problems.push(`${where}.icon: an Iconify class such as i-simple-icons-github`);
    if (!reg.clientId) problems.push(`${where}.clientId: required`);
    if (!reg.clientSecret) problems.push(`${where}.clientSecret: required`);
    if (!isHttpUrl(reg.redirectUri))
      problems.push(`${where}.redirectUri: an absolute http(s) URL of the frontend page`);
    if (provider === 'oidc' && !isHttpUrl(reg.issuer))
      problems.push(`${where}.issuer: required for oidc (an http(s) URL)`);
    if (provider === 'oauth2' || provider === 'github' || provider === 'gitee') {
      for (const k of ['authorizationUri', 'tokenUri', 'userInfoUri'] as const) {
        if (!isHttpUrl(reg[k])) problems.push(`${where}.${k}: required (an http(s) URL)`);
      }
    }
    if (provider === 'wechat-mp') {
      if (!reg.token || !/^[A-Za-z0-9]{3,32}$/.test(reg.token))
        problems.push(`${where}.token: 3..32 letters or digits (server-URL token)`);
      if (reg.encodingAesKey && !/^[A-Za-z0-9+/]{43}$/.test(reg.encodingAesKey))
        problems.push(`${where}.encodingAesKey: 43 base64 characters`);
    }
    out.push(reg);
  });
  if (problems.length) throw new Error(`OAUTH2_CLIENTS_FILE: ${problems.join('; ')}`);
  return out;
}

/** `appTypes`: a list or a comma/space-separated string of names (`site`, `admin`, ...); absent = every login page. */
function appTypesOf(value: unknown, where: string, problems: string[]): string[] | undefined {
  if (value === undefined || value === null) return undefined;
  const list = Array.isArray(value)
    ? value.map(String)
    : typeof value === 'string'
      ? value.split(/[\s,]+/).filter(Boolean)
      : null;
  if (!list || !list.length || list.some((t) => !APP_TYPE.test(t))) {
    problems.push(`${where}.appTypes: a non-empty list of names (letters, digits, _ -), e.g. [site]`);
    return undefined;
  }
  return list;
}

/** An `appType` name: what the login page sends as `?appType=`. */
export const APP_TYPE = /^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$/;

/** Reads the file named by OAUTH2_CLIENTS_FILE; no file means no third-party login. */
export function loadOAuth2ClientsFile(
  file: string | undefined,
  env: Record<string, string | undefined>,
): OAuth2ClientRegistration[] {
  if (!file) return [];
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new Error(`OAUTH2_CLIENTS_FILE ${file} cannot be read: ${(e as NodeJS.ErrnoException).code ?? 'error'}`);
  }
  const ext = extname(file).toLowerCase();
  const format =
    ext === '.json'
      ? 'json'
      : ext === '.yaml' || ext === '.yml'
        ? 'yaml'
        : text.trimStart().startsWith('{') || text.trimStart().startsWith('[')
          ? 'json'
          : 'yaml';
  return parseOAuth2Clients(text, format, env);
}
