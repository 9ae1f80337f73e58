import { IsInt, IsOptional, IsString, Matches, Max, Min, MinLength } from 'class-validator';
import { BaseConfig } from '@app/platform';

/** Every variable the AI gateway reads, validated at boot. */
export class GatewayConfig extends BaseConfig {
  /** HTTP and WebSocket port. */
  @IsInt()
  @Min(1)
  @Max(65535)
  AI_GATEWAY_PORT: number = 8081;

  /** Bearer token of the admin API (/admin/**); the admin API is closed when unset. */
  @IsOptional()
  @IsString()
  @MinLength(16, { message: 'must be at least 16 characters' })
  ADMIN_TOKEN?: string;

  /** Public address of generated media; default `{base_url}/cdn` served by the gateway. */
  @IsOptional()
  @Matches(/^https?:\/\/\S+$/, { message: 'must be an http(s) URL' })
  CDN_URL?: string;
}
