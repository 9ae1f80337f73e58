import { IsInt, IsOptional, IsString, Matches, Max, Min, MinLength } from 'class-validator';
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

  /** HMAC secret of access tokens (>= 32 chars). Required in production; generated under DATA_DIR in development. */
  @IsOptional()
  @IsString()
  @MinLength(32, { message: 'must be at least 32 characters' })
  JWT_SECRET?: string;

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

  validateExtra(): string[] {
    const problems = super.validateExtra();
    if (this.isProduction && !this.JWT_SECRET) problems.push('JWT_SECRET: required when NODE_ENV=production');
    return problems;
  }
}
