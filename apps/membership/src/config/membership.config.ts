import { IsBoolean, IsIn, IsInt, IsISO8601, IsOptional, IsString, Matches, Max, Min, MinLength } from 'class-validator';
import { BaseConfig } from '@app/platform';

/** Every variable the membership app reads, validated at boot. */
export class MembershipConfig extends BaseConfig {
  /** HTTP port. */
  @IsInt()
  @Min(1)
  @Max(65535)
  MEMBERSHIP_PORT: number = 8080;

  /** Path prefix of every route, e.g. /member; empty for none. */
  @IsString()
  @Matches(/^(\/[A-Za-z0-9._~-]+)*\/?$/, { message: 'must be empty or a path like /member' })
  CONTEXT_PATH: string = '';

  /** Language of envelope messages when the request's Accept-Language names none we have (en, zh-CN). */
  @IsIn(['en', 'zh-CN'])
  DEFAULT_LOCALE: 'en' | 'zh-CN' = 'en';

  /**
   * The AI gateway's base URL as the operator console (`{base_url}/console/`) reaches it from the browser,
   * e.g. https://ai.example.com. Written into the console's page and allowed by its Content-Security-Policy
   * (connect-src). Empty: the console's own host name with the gateway's default port 8081, same scheme.
   */
  @IsOptional()
  @Matches(/^https?:\/\/[^/?#\s]+(\/[^?#\s]*)?$/, { message: 'must be an http(s) URL like https://ai.example.com' })
  CONSOLE_GATEWAY_URL?: string;

  /** HMAC secret of access tokens (>= 32 chars). Required in production; generated under DATA_DIR in development. */
  @IsOptional()
  @IsString()
  @MinLength(32, { message: 'must be at least 32 characters' })
  JWT_SECRET?: string;

  /**
   * Access-token signing keys (sensitive): a JWK Set `{"keys": [...]}` of private EC P-256 keys (ES256).
   * The first signs; the others are still published at /.well-known/jwks.json and accepted (rotation:
   * docs/membership/access-tokens.md). Required in production (this or ACCESS_TOKEN_KEYS_FILE); in
   * development a key is derived from JWT_SECRET.
   */
  @IsOptional()
  @IsString()
  ACCESS_TOKEN_KEYS?: string;

  /** File holding ACCESS_TOKEN_KEYS (e.g. a mounted secret); read at boot. */
  @IsOptional()
  @IsString()
  ACCESS_TOKEN_KEYS_FILE?: string;

  /** `iss` of access tokens; services verifying them (the AI gateway's MEMBERSHIP_TOKEN_ISSUER) expect the same value. */
  @IsString()
  @Matches(/^\S{1,200}$/, { message: 'must be 1-200 characters without spaces' })
  ACCESS_TOKEN_ISSUER: string = 'membership';

  /** Extra `aud` of admin and viewer tokens: the AI gateway's admin API (its MEMBERSHIP_TOKEN_AUDIENCE). */
  @IsString()
  @Matches(/^\S{1,200}$/, { message: 'must be 1-200 characters without spaces' })
  OPERATOR_TOKEN_AUDIENCE: string = 'ai-gateway';

  /**
   * Until when (ISO 8601) access tokens signed with HS256 before the switch to ES256 are still accepted.
   * Default: those issued before this process started, for ACCESS_TOKEN_TTL after it started.
   */
  @IsOptional()
  @IsISO8601({ strict: true }, { message: 'must be an ISO 8601 date-time, e.g. 2027-01-01T00:00:00Z' })
  ACCESS_TOKEN_HS256_ACCEPT_UNTIL?: string;

  /** JSON or YAML file of third-party login clients (OAuth 2.0, OIDC, WeChat); values may use ${ENV_VAR}. */
  @IsOptional()
  @IsString()
  OAUTH2_CLIENTS_FILE?: string;

  /** Public {base_url} for provider callbacks (/login/oauth2/code/{id}); empty derives it from the request. */
  @IsOptional()
  @Matches(/^https?:\/\/[^\s/?#]+(\/[^\s?#]*)?$/, { message: 'must be an http(s) URL without query' })
  OAUTH2_CALLBACK_BASE_URL?: string;

  /** Comma-separated origins a `redirectUri` parameter may point to (the clients' own redirectUri origins are always allowed). */
  @IsOptional()
  @IsString()
  OAUTH2_REDIRECT_ALLOWLIST?: string;

  /** WeChat browser-authorization base (qrconnect, oauth2/authorize). */
  @IsString()
  WECHAT_OPEN_BASE: string = 'https://open.weixin.qq.com';

  /** WeChat server API base (sns/*, cgi-bin/*). */
  @IsString()
  WECHAT_API_BASE: string = 'https://api.weixin.qq.com';

  /** WeChat official-account platform base (showqrcode images). */
  @IsString()
  WECHAT_MP_BASE: string = 'https://mp.weixin.qq.com';

  /** Accepted clock difference of signed WeChat pushes, in seconds. */
  @IsInt()
  @Min(30)
  @Max(3600)
  WECHAT_PUSH_WINDOW_SECONDS: number = 300;

  /** Scan-login QR codes made per official account per hour (qrcode/create calls, all replicas); 2000 = 48% of WeChat's 100,000 a day. */
  @IsInt()
  @Min(1)
  @Max(100_000)
  WECHAT_QR_MAX_PER_HOUR: number = 2000;

  /** Percent of WECHAT_QR_MAX_PER_HOUR one client network (IPv4 /24, IPv6 /48) may make in an hour (at least one code). */
  @IsInt()
  @Min(1)
  @Max(100)
  WECHAT_QR_NETWORK_SHARE_PERCENT: number = 5;

  // ---- Member accounts ----

  /** Access JWT lifetime in ms; `expiresIn` of the login result equals it. */
  @IsInt()
  @Min(1000)
  ACCESS_TOKEN_TTL: number = 1_800_000;

  /** Refresh token lifetime in ms (each rotation starts a new one). */
  @IsInt()
  @Min(1000)
  REFRESH_TOKEN_TTL: number = 2_592_000_000;

  /** Live sessions one member keeps; a sign-in past it ends the least recently active one (a login flood cannot grow a member's sessions without bound). */
  @IsInt()
  @Min(1)
  @Max(10_000)
  MAX_SESSIONS_PER_MEMBER: number = 100;

  /** A second use of a rotated refresh token within this many ms gets the same successor (concurrent tabs); later it revokes the session. */
  @IsInt()
  @Min(0)
  @Max(120_000)
  REFRESH_REUSE_GRACE_MS: number = 10_000;

  /** How long (ms) a replica trusts a session it found live before asking the database again; a revocation on another replica takes effect within this (on the same replica at once). 0 = every request. */
  @IsInt()
  @Min(0)
  @Max(10_000)
  SESSION_CHECK_CACHE_MS: number = 2000;

  /** refresh-token-by-jwt is allowed only in the last this-many ms of the JWT's life. */
  @IsInt()
  @Min(1000)
  REFRESH_BY_JWT_WINDOW: number = 300_000;

  /** Wrong passwords for one account from one client IP before a temporary lock. */
  @IsInt()
  @Min(1)
  LOGIN_MAX_FAILURES: number = 5;

  /**
   * Wrong passwords for one account from any IP before a temporary account-wide lock; the lock does
   * not stop a client IP the member logged in from before (LOGIN_KNOWN_ORIGIN_TTL_MS) nor code login.
   */
  @IsInt()
  @Min(1)
  LOGIN_ACCOUNT_MAX_FAILURES: number = 100;

  /** How long (ms) a client IP stays "known" for an account after a successful login from it (30 days). */
  @IsInt()
  @Min(60_000)
  LOGIN_KNOWN_ORIGIN_TTL_MS: number = 2_592_000_000;

  /** Shortest accepted new password (register, change, reset); the website's own form asks for 6. */
  @IsInt()
  @Min(6)
  @Max(128)
  PASSWORD_MIN_LENGTH: number = 8;

  /** Wrong passwords from one client IP across accounts before that IP is locked out of login. */
  @IsInt()
  @Min(1)
  LOGIN_IP_MAX_FAILURES: number = 50;

  /** Length of a login lock and of the failure-counting window, in ms. */
  @IsInt()
  @Min(1000)
  LOGIN_LOCK_MS: number = 900_000;

  /** Verification code lifetime in ms. */
  @IsInt()
  @Min(1000)
  CODE_TTL_MS: number = 300_000;

  /** Wrong tries allowed per verification code. */
  @IsInt()
  @Min(1)
  @Max(20)
  CODE_MAX_ATTEMPTS: number = 5;

  /** Minimum ms between two codes to the same phone or email. */
  @IsInt()
  @Min(0)
  CODE_RESEND_INTERVAL_MS: number = 60_000;

  /** Codes per phone or email per 24 h. */
  @IsInt()
  @Min(1)
  CODE_DAILY_LIMIT_PER_TARGET: number = 10;

  /** Codes requested per client IP per 24 h. */
  @IsInt()
  @Min(1)
  CODE_DAILY_LIMIT_PER_IP: number = 50;

  /** After a code is guessed out, its target gets no new code and no checks for this many ms. */
  @IsInt()
  @Min(1000)
  CODE_LOCK_MS: number = 900_000;

  /** Accepted phone numbers (regular expression); mainland China mobiles by default. */
  @IsString()
  PHONE_PATTERN: string = '^1[3-9]\\d{9}$';

  /** The first login-by-phone of an unknown phone registers a member. */
  @IsBoolean()
  PHONE_LOGIN_AUTO_REGISTER: boolean = true;

  /** SMS vendor: `aliyun` (Dysms signed HTTP API) or `log` (development: code in the log; refused in production). */
  @IsIn(['log', 'aliyun'])
  SMS_PROVIDER: string = 'log';

  /** Aliyun AccessKey id for SMS. */
  @IsOptional()
  @IsString()
  ALIYUN_SMS_ACCESS_KEY_ID?: string;

  /** Aliyun AccessKey secret for SMS (sensitive). */
  @IsOptional()
  @IsString()
  ALIYUN_SMS_ACCESS_KEY_SECRET?: string;

  /** Approved SMS signature name. */
  @IsOptional()
  @IsString()
  ALIYUN_SMS_SIGN_NAME?: string;

  /** Approved template code; the template has one variable named `code`. */
  @IsOptional()
  @IsString()
  ALIYUN_SMS_TEMPLATE_CODE?: string;

  /** Dysms endpoint (change for a proxy or a test server). */
  @IsString()
  ALIYUN_SMS_ENDPOINT: string = 'https://dysmsapi.aliyuncs.com';

  /** SMTP server for email codes; unset means the development log sender (email codes are off in production). */
  @IsOptional()
  @IsString()
  SMTP_HOST?: string;

  /** SMTP port (465 implicit TLS, 587 STARTTLS). */
  @IsInt()
  @Min(1)
  @Max(65535)
  SMTP_PORT: number = 587;

  /** true for implicit TLS (port 465). */
  @IsBoolean()
  SMTP_SECURE: boolean = false;

  /** Refuse to send unless the connection is upgraded with STARTTLS. */
  @IsBoolean()
  SMTP_REQUIRE_TLS: boolean = false;

  /** SMTP user name. */
  @IsOptional()
  @IsString()
  SMTP_USER?: string;

  /** SMTP password (sensitive). */
  @IsOptional()
  @IsString()
  SMTP_PASSWORD?: string;

  /** From address of email codes. */
  @IsString()
  SMTP_FROM: string = 'no-reply@localhost';

  /** Largest upload in bytes (413 above). */
  @IsInt()
  @Min(1)
  UPLOAD_MAX_BYTES: number = 10_485_760;

  /** Most bytes one member keeps uploaded in all (anyone can register and upload): past it an upload is 413. */
  @IsInt()
  @Min(1)
  @Max(Number.MAX_SAFE_INTEGER)
  UPLOAD_MAX_BYTES_PER_MEMBER: number = 1_073_741_824;

  /** Least bytes a file counts for against UPLOAD_MAX_BYTES_PER_MEMBER (a tiny file still costs a row and an object). */
  @IsInt()
  @Min(1)
  @Max(16_777_216)
  UPLOAD_MIN_CHARGED_BYTES: number = 4096;

  /** Upload types allowed, by the MIME type detected from the bytes (415 otherwise). */
  @IsString()
  UPLOAD_ALLOWED_TYPES: string = 'image/jpeg,image/png,image/gif,image/webp,application/pdf';

  /** First admin: created (or given the admin role) at boot when both ADMIN_ACCOUNT and ADMIN_PASSWORD are set. */
  @IsOptional()
  @Matches(/^[a-zA-Z0-9_]{4,20}$/, { message: 'must be a username of 4-20 letters, digits or underscores' })
  ADMIN_ACCOUNT?: string;

  /** Password of the first admin (8..128 characters; sensitive). */
  @IsOptional()
  @IsString()
  @MinLength(8, { message: 'must be at least 8 characters' })
  ADMIN_PASSWORD?: string;

  // ---- Second factors (docs/membership/second-factors.md) ----

  /**
   * Secret of the AES-256-GCM encryption of authenticator-app (TOTP) secrets at rest (>= 32 random
   * characters, e.g. `openssl rand -base64 32`; sensitive; the key is its SHA-256). Required in production;
   * in development and tests a key is derived from JWT_SECRET (factors/factor-cipher.ts), good only while
   * nothing real is stored. Changing it makes enrolled authenticator apps unusable (members enrol again).
   */
  @IsOptional()
  @IsString()
  @MinLength(32, { message: 'must be at least 32 characters' })
  MFA_ENCRYPTION_SECRET?: string;

  /** Comma-separated roles whose members must enrol a second factor at sign-in before they get tokens; `none` for nobody. */
  @IsString()
  @Matches(/^[A-Za-z0-9_-]*(,[A-Za-z0-9_-]+)*$/, { message: 'must be a comma-separated list of role names' })
  MFA_REQUIRED_ROLES: string = 'admin';

  /** How long a second-factor sign-in challenge (mfaToken) lives, in ms. */
  @IsInt()
  @Min(10_000)
  @Max(3_600_000)
  MFA_CHALLENGE_TTL_MS: number = 300_000;

  /** Wrong second-factor answers one challenge takes before it is void. */
  @IsInt()
  @Min(1)
  @Max(100)
  MFA_CHALLENGE_MAX_ATTEMPTS: number = 5;

  /** Wrong second-factor answers per member (any challenge, any replica) within MFA_LOCK_MS before the member is locked out of second-factor checks for the rest of it. */
  @IsInt()
  @Min(1)
  @Max(1000)
  MFA_MEMBER_MAX_FAILURES: number = 10;

  /** Window of MFA_MEMBER_MAX_FAILURES, in ms. */
  @IsInt()
  @Min(1000)
  MFA_LOCK_MS: number = 900_000;

  /** A sensitive change (password, factors, recovery codes, unlinking) needs a sign-in or step-up with the strongest factor within this many ms. */
  @IsInt()
  @Min(10_000)
  STEP_UP_MAX_AGE_MS: number = 600_000;

  /** WebAuthn relying-party id: the site's host name (e.g. example.com for the mortise site at https://www.example.com). Default: the host of OAUTH2_CALLBACK_BASE_URL, else localhost. */
  @IsOptional()
  @Matches(/^[a-z0-9.-]+$/, { message: 'must be a host name without scheme or port' })
  WEBAUTHN_RP_ID?: string;

  /** Comma-separated origins passkey ceremonies may come from (e.g. https://www.example.com). Default: the origin of OAUTH2_CALLBACK_BASE_URL, else http://localhost:MEMBERSHIP_PORT. */
  @IsOptional()
  @Matches(/^https?:\/\/[^\s/,]+(,https?:\/\/[^\s/,]+)*$/, {
    message: 'must be comma-separated origins like https://www.example.com',
  })
  WEBAUTHN_ORIGINS?: string;

  validateExtra(): string[] {
    const problems = super.validateExtra();
    if (this.isProduction && !this.JWT_SECRET) problems.push('JWT_SECRET: required when NODE_ENV=production');
    if (this.isProduction && !this.ACCESS_TOKEN_KEYS && !this.ACCESS_TOKEN_KEYS_FILE) {
      problems.push(
        'ACCESS_TOKEN_KEYS: required when NODE_ENV=production (or ACCESS_TOKEN_KEYS_FILE): a JWK Set of private EC P-256 keys',
      );
    }
    if (this.ACCESS_TOKEN_KEYS && this.ACCESS_TOKEN_KEYS_FILE)
      problems.push('ACCESS_TOKEN_KEYS/ACCESS_TOKEN_KEYS_FILE: set one, not both');
    if (this.isProduction && !this.MFA_ENCRYPTION_SECRET)
      problems.push('MFA_ENCRYPTION_SECRET: required when NODE_ENV=production (32+ random characters)');
    // Without it the provider callback address would follow the request's Host header.
    if (this.isProduction && this.OAUTH2_CLIENTS_FILE && !this.OAUTH2_CALLBACK_BASE_URL) {
      problems.push('OAUTH2_CALLBACK_BASE_URL: required when NODE_ENV=production and OAUTH2_CLIENTS_FILE is set');
    }
    if (this.isProduction && this.SMS_PROVIDER === 'log')
      problems.push('SMS_PROVIDER: the log sender is refused when NODE_ENV=production (use aliyun)');
    if (this.SMS_PROVIDER === 'aliyun') {
      for (const k of [
        'ALIYUN_SMS_ACCESS_KEY_ID',
        'ALIYUN_SMS_ACCESS_KEY_SECRET',
        'ALIYUN_SMS_SIGN_NAME',
        'ALIYUN_SMS_TEMPLATE_CODE',
      ] as const) {
        if (!this[k]) problems.push(`${k}: required when SMS_PROVIDER=aliyun`);
      }
    }
    if (Boolean(this.ADMIN_ACCOUNT) !== Boolean(this.ADMIN_PASSWORD))
      problems.push('ADMIN_ACCOUNT/ADMIN_PASSWORD: set both or neither');
    try {
      new RegExp(this.PHONE_PATTERN);
    } catch {
      problems.push('PHONE_PATTERN: not a valid regular expression');
    }
    return problems;
  }
}
