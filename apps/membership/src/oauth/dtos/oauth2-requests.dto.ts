import { ApiPropertyOptional, ApiProperty } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsInt, IsOptional, IsString, Matches, Max, MaxLength, Min } from 'class-validator';

export class RedirectQuery {
  @ApiPropertyOptional({
    description:
      "Frontend page to return to: a path on the configured frontend or an allowlisted absolute URL; defaults to the client's redirectUri",
    example: 'https://www.example.com/oauth/callback',
  })
  @IsOptional()
  @IsString()
  @MaxLength(2048)
  redirectUri?: string;
}

export class WechatRedirectQuery extends RedirectQuery {
  @ApiPropertyOptional({
    description: 'Registration id or appid when several WeChat clients are configured',
    example: 'wechat-mp',
  })
  @IsOptional()
  @IsString()
  @MaxLength(64)
  registrationId?: string;
}

export class StateQuery {
  @ApiProperty({
    description: 'The state received on the frontend page (or the polled QR state / sceneStr)',
    example: 'Yl3cF0rj2kqz8V1mQw7xPp4nD6sT9bLe',
  })
  @IsString()
  @MaxLength(128)
  state: string;
}

export class MpQrcodeQuery {
  @ApiPropertyOptional({ description: 'QR lifetime in seconds (60..300)', example: 300, default: 300 })
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(60)
  @Max(300)
  expireSeconds?: number;

  @ApiPropertyOptional({
    description: 'Official account appid when several are configured',
    example: 'wx9f8e7d6c5b4a3f2e',
  })
  @IsOptional()
  @IsString()
  @MaxLength(64)
  appId?: string;
}

export class SilentOpenIdQuery {
  @ApiProperty({
    description: 'The code WeChat appended to the page address',
    example: '061Xk0Ga1QmGxE0yvWFa1Ai1Fa3Xk0Gk',
  })
  @IsString()
  @Matches(/^[A-Za-z0-9_-]{1,128}$/, { message: 'code must be the code WeChat returned' })
  code: string;

  @ApiPropertyOptional({
    description: 'The state from the silent auth URL; when sent it must be valid and is used up',
    example: 'Yl3cF0rj2kqz8V1mQw7xPp4nD6sT9bLe',
  })
  @IsOptional()
  @IsString()
  @MaxLength(128)
  state?: string;

  @ApiPropertyOptional({ description: 'Registration id or appid of the official account', example: 'wechat-mp' })
  @IsOptional()
  @IsString()
  @MaxLength(64)
  registrationId?: string;
}
