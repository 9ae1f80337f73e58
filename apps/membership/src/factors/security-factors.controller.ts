import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post } from '@nestjs/common';
import { ApiBody, ApiOkResponse, ApiOperation, ApiParam, ApiResponse, ApiTags } from '@nestjs/swagger';
import { Throttle } from '@nestjs/throttler';
import type { PublicKeyCredentialCreationOptionsJSON } from '@simplewebauthn/server';
import { CurrentPrincipal, Principal } from '@app/auth';
import { ApiEnvelope, ErrorEnvelope } from '@app/envelope';
import { RegisterPasskeyRequest, RenamePasskeyRequest, TotpCodeRequest } from './dtos/factor.dto';
import {
  FactorsView,
  PasskeyAddedView,
  PasskeyView,
  RecoveryCodesView,
  TotpEnrolmentView,
} from './dtos/factor-views.dto';
import { FactorSettingsService } from './factor-settings.service';
import { ClientFacts } from '../sessions/client-facts';
import { Client } from '../sessions/client.decorator';
import { Requesters } from './requester';

const MINUTE = 60_000;
const err = (status: number, code: number, description: string) =>
  ApiResponse({ status, description: `code ${code}: ${description}`, type: ErrorEnvelope });
const STEP_UP = err(403, 10010, 'step-up needed: data {required, methods}; POST /api/v1/app/auth/step-up, then retry');
const CHANGE_NOTE = 'Ends every other session of the member and is announced to the member by mail.';

/**
 * A signed-in member's second factors: /api/v1/app/security/{factors,totp,recovery-codes,passkeys}, beside
 * security/'s client-sessions. The code lives in factors/ because sign-in (auth/) builds on the same
 * services and security/ sits below auth/ in the folder graph (feature-boundaries.spec.ts).
 */
@ApiTags('Member second factors')
@Controller('api/v1/app/security')
@ApiResponse({ status: 401, description: 'code 401: token missing, invalid, expired or revoked', type: ErrorEnvelope })
export class SecurityFactorsController {
  constructor(
    private readonly settings: FactorSettingsService,
    private readonly requesters: Requesters,
  ) {}

  @Get('factors')
  @ApiOperation({ summary: "The member's second factors, recovery codes left and step-up state" })
  @ApiEnvelope(FactorsView)
  async factors(@CurrentPrincipal() principal: Principal, @Client() client: ClientFacts): Promise<FactorsView> {
    const who = await this.requesters.of(principal, client);
    return this.settings.overview(who.member, who.sessionId);
  }

  @Post('totp')
  @HttpCode(200)
  @Throttle({ default: { limit: 10, ttl: MINUTE } })
  @ApiOperation({
    summary: 'Start enrolling an authenticator app (TOTP): a new pending secret, its otpauth:// URI and QR image',
    description: 'Confirm with POST totp/confirm. Replaces an earlier pending secret.',
  })
  @ApiEnvelope(TotpEnrolmentView)
  @err(409, 409, 'an authenticator app is already enabled')
  async beginTotp(@CurrentPrincipal() principal: Principal, @Client() client: ClientFacts): Promise<TotpEnrolmentView> {
    return this.settings.beginTotp((await this.requesters.of(principal, client)).member);
  }

  @Post('totp/confirm')
  @HttpCode(200)
  @Throttle({ default: { limit: 10, ttl: MINUTE } })
  @ApiOperation({
    summary: 'Enable the pending authenticator app with its first code',
    description: `Returns recovery codes when this is the member's first factor. ${CHANGE_NOTE}`,
  })
  @ApiBody({ type: TotpCodeRequest, examples: { code: { value: { code: '123456' } } } })
  @ApiEnvelope(RecoveryCodesView)
  @err(401, 10011, 'wrong code')
  @err(409, 409, 'nothing pending to confirm')
  async confirmTotp(
    @CurrentPrincipal() principal: Principal,
    @Client() client: ClientFacts,
    @Body() body: TotpCodeRequest,
  ): Promise<RecoveryCodesView> {
    return { recoveryCodes: await this.settings.confirmTotp(await this.requesters.of(principal, client), body.code) };
  }

  @Delete('totp')
  @ApiOperation({ summary: 'Disable the authenticator app (step-up)', description: CHANGE_NOTE })
  @ApiEnvelope(null)
  @STEP_UP
  @err(409, 409, 'no authenticator app enabled')
  async disableTotp(@CurrentPrincipal() principal: Principal, @Client() client: ClientFacts): Promise<null> {
    await this.settings.disableTotp(await this.requesters.of(principal, client));
    return null;
  }

  @Post('recovery-codes')
  @HttpCode(200)
  @Throttle({ default: { limit: 10, ttl: MINUTE } })
  @ApiOperation({
    summary: 'Make 10 new recovery codes; the old ones stop working (step-up)',
    description: CHANGE_NOTE,
  })
  @ApiEnvelope(RecoveryCodesView)
  @STEP_UP
  @err(409, 409, 'the member has no second factor')
  async regenerateRecoveryCodes(
    @CurrentPrincipal() principal: Principal,
    @Client() client: ClientFacts,
  ): Promise<RecoveryCodesView> {
    return { recoveryCodes: await this.settings.regenerateRecoveryCodes(await this.requesters.of(principal, client)) };
  }

  @Get('passkeys')
  @ApiOperation({ summary: "The member's passkeys" })
  @ApiEnvelope(PasskeyView, { isArray: true })
  async passkeys(@CurrentPrincipal() principal: Principal, @Client() client: ClientFacts): Promise<PasskeyView[]> {
    return this.settings.listPasskeys((await this.requesters.of(principal, client)).member);
  }

  @Post('passkeys/options')
  @HttpCode(200)
  @Throttle({ default: { limit: 20, ttl: MINUTE } })
  @ApiOperation({
    summary:
      'Options for navigator.credentials.create (PublicKeyCredentialCreationOptionsJSON); the challenge is good for 5 minutes, once',
  })
  @ApiOkResponse({
    description: 'Envelope whose data is PublicKeyCredentialCreationOptionsJSON',
    schema: {
      example: {
        code: 200,
        message: 'success',
        data: {
          rp: { name: 'Example Site', id: 'example.com' },
          challenge: 'q3J0...',
          user: { id: 'bTox', name: 'alice_01', displayName: 'Alice' },
          pubKeyCredParams: [
            { alg: -8, type: 'public-key' },
            { alg: -7, type: 'public-key' },
          ],
          authenticatorSelection: { residentKey: 'required', userVerification: 'preferred' },
        },
      },
    },
  })
  async passkeyOptions(
    @CurrentPrincipal() principal: Principal,
    @Client() client: ClientFacts,
  ): Promise<PublicKeyCredentialCreationOptionsJSON> {
    return this.settings.passkeyOptions((await this.requesters.of(principal, client)).member);
  }

  @Post('passkeys')
  @HttpCode(200)
  @Throttle({ default: { limit: 20, ttl: MINUTE } })
  @ApiOperation({
    summary: "Register a passkey from the browser's registration response",
    description: `Returns recovery codes when this is the member's first factor. ${CHANGE_NOTE}`,
  })
  @ApiBody({
    type: RegisterPasskeyRequest,
    examples: {
      laptop: {
        value: {
          name: 'Laptop',
          credential: {
            id: 'AbC...',
            rawId: 'AbC...',
            type: 'public-key',
            response: { clientDataJSON: 'eyJ...', attestationObject: 'o2N...', transports: ['internal'] },
            clientExtensionResults: {},
          },
        },
      },
    },
  })
  @ApiEnvelope(PasskeyAddedView)
  @err(
    400,
    10013,
    'the registration did not verify (challenge, origin, RP ID), the passkey is already registered, or its key is not taken (an RSA key needs e = 65537 and 2048 to 4096 bits)',
  )
  async addPasskey(
    @CurrentPrincipal() principal: Principal,
    @Client() client: ClientFacts,
    @Body() body: RegisterPasskeyRequest,
  ): Promise<PasskeyAddedView> {
    return this.settings.addPasskey(await this.requesters.of(principal, client), body.credential, body.name);
  }

  @Patch('passkeys/:id')
  @ApiOperation({ summary: 'Rename a passkey' })
  @ApiParam({ name: 'id', example: '6f1c2d4e-8a9b-4c3d-9e1f-2a3b4c5d6e7f' })
  @ApiBody({ type: RenamePasskeyRequest, examples: { phone: { value: { name: 'Phone' } } } })
  @ApiEnvelope(PasskeyView)
  @err(404, 404, 'no such passkey of this member')
  async renamePasskey(
    @CurrentPrincipal() principal: Principal,
    @Client() client: ClientFacts,
    @Param('id') id: string,
    @Body() body: RenamePasskeyRequest,
  ): Promise<PasskeyView> {
    return this.settings.renamePasskey((await this.requesters.of(principal, client)).member, id, body.name);
  }

  @Delete('passkeys/:id')
  @ApiOperation({ summary: 'Delete a passkey (step-up)', description: CHANGE_NOTE })
  @ApiParam({ name: 'id', example: '6f1c2d4e-8a9b-4c3d-9e1f-2a3b4c5d6e7f' })
  @ApiEnvelope(null)
  @STEP_UP
  @err(404, 404, 'no such passkey of this member')
  async removePasskey(
    @CurrentPrincipal() principal: Principal,
    @Client() client: ClientFacts,
    @Param('id') id: string,
  ): Promise<null> {
    await this.settings.removePasskey(await this.requesters.of(principal, client), id);
    return null;
  }
}
