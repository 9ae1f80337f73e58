import { Controller, Get, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiProperty, ApiTags } from '@nestjs/swagger';
import { Throttle } from '@nestjs/throttler';
import type { Response } from 'express';
import { Public } from '@app/auth';
import { AccessTokenKeys } from '../auth/access-token-keys';

/** How long a verifier may cache the key set: a rotation publishes the new key at least this long before it signs (docs/membership/access-tokens.md). */
const JWKS_MAX_AGE_SECONDS = 300;

class JsonWebKeyView {
  @ApiProperty({ example: 'EC' }) kty: string;
  @ApiProperty({ example: 'P-256' }) crv: string;
  @ApiProperty({ example: 'f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU' }) x: string;
  @ApiProperty({ example: 'x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0' }) y: string;
  @ApiProperty({
    example: 'oQ3b1cVv2t3xJm8zq7uCk9hX0rV4nWm2Jd6u1sLq0pE',
    description: 'Matches the `kid` header of the tokens this key signed',
  })
  kid: string;
  @ApiProperty({ example: 'ES256' }) alg: string;
  @ApiProperty({ example: 'sig' }) use: string;
}

class JsonWebKeySetView {
  @ApiProperty({ type: [JsonWebKeyView] }) keys: JsonWebKeyView[];
}

/** The access-token verification keys (RFC 7517), for services that accept membership tokens (the AI gateway's MEMBERSHIP_JWKS_URL). */
@ApiTags('Tokens')
@Controller('.well-known')
export class JwksController {
  constructor(private readonly keys: AccessTokenKeys) {}

  @Public()
  @Throttle({ default: { limit: 120, ttl: 60_000 } })
  @Get('jwks.json')
  @ApiOperation({
    summary: 'JSON Web Key Set of access tokens (public, cacheable)',
    description:
      'Plain JSON (not the envelope): the public keys whose `kid` access tokens (ES256) name in their header; the first signs, the others ' +
      `are kept while tokens they signed live. Cache-Control: public, max-age=${JWKS_MAX_AGE_SECONDS}.`,
  })
  @ApiOkResponse({ type: JsonWebKeySetView })
  jwks(@Res() res: Response): void {
    res.setHeader('Cache-Control', `public, max-age=${JWKS_MAX_AGE_SECONDS}`);
    res.type('application/jwk-set+json').send(JSON.stringify(this.keys.jwks()));
  }
}
