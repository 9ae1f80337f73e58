import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import { ApiBody, ApiExtraModels, ApiOkResponse, ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import { Throttle } from '@nestjs/throttler';
import type {
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
} from '@simplewebauthn/server';
import { CurrentPrincipal, Principal, Public } from '@app/auth';
import { ApiEnvelope, ErrorEnvelope } from '@app/envelope';
import { TotpEnrolmentView } from '../factors/dtos/factor-views.dto';
import { ClientFacts } from '../sessions/client-facts';
import { Client } from '../sessions/client.decorator';
import { MemberLoginResponse } from './dtos/member-login.dto';
import {
  MfaChallengeResponse,
  MfaEnrolmentLoginResponse,
  MfaEnrolPasskeyRequest,
  MfaEnrolTotpConfirmRequest,
  MfaTokenRequest,
  MfaVerifyRequest,
  PasskeyLoginRequest,
  StepUpRequest,
  StepUpResponse,
} from './dtos/mfa.dto';
import { SecondFactorLoginService } from './second-factor-login.service';

const MINUTE = 60_000;
const err = (status: number, code: number, description: string) =>
  ApiResponse({ status, description: `code ${code}: ${description}`, type: ErrorEnvelope });
const MFA_TOKEN = 'mfa_5mXcQ0c2d4b3VJd0p8lZxq1m7cQ0c2d4b3VJd0p8lZx';
const requestOptions = (description: string) =>
  ApiOkResponse({
    description: `Envelope whose data is PublicKeyCredentialRequestOptionsJSON: ${description}`,
    schema: {
      example: {
        code: 200,
        message: 'success',
        data: {
          rpId: 'example.com',
          challenge: 'q3J0...',
          timeout: 300000,
          userVerification: 'preferred',
          allowCredentials: [{ id: 'AbC...', type: 'public-key', transports: ['internal'] }],
        },
      },
    },
  });
const creationOptions = ApiOkResponse({
  description: 'Envelope whose data is PublicKeyCredentialCreationOptionsJSON',
  schema: {
    example: {
      code: 200,
      message: 'success',
      data: {
        rp: { name: 'Example Site', id: 'example.com' },
        challenge: 'q3J0...',
        user: { id: 'bTox', name: 'admin', displayName: 'admin' },
      },
    },
  },
});

/**
 * Sign-in steps after the first factor: /api/v1/app/auth/mfa/* (the challenge a login answers with
 * when the member has a second factor, or must enrol one), /passkey/* (passwordless) and /step-up.
 */
@ApiTags('Member authentication')
@ApiExtraModels(MfaChallengeResponse)
@Controller('api/v1/app/auth')
@ApiResponse({ status: 429, description: 'code 429: rate limited (Retry-After header)', type: ErrorEnvelope })
export class SecondFactorController {
  constructor(private readonly signIn: SecondFactorLoginService) {}

  @Public()
  @Post('mfa/verify')
  @HttpCode(200)
  @Throttle({ default: { limit: 20, ttl: MINUTE } })
  @ApiOperation({
    summary:
      'Complete a sign-in challenge (mfaRequired) with an authenticator-app code, a recovery code or a passkey assertion',
    description:
      'Answers with the usual login result. The mfaToken is single use; after MFA_CHALLENGE_MAX_ATTEMPTS wrong answers it is void (10012).',
  })
  @ApiBody({
    type: MfaVerifyRequest,
    examples: {
      totp: { value: { mfaToken: MFA_TOKEN, method: 'totp', code: '123456' } },
      recoveryCode: { value: { mfaToken: MFA_TOKEN, method: 'recovery_code', code: 'k7m2-x9qa-4f' } },
      passkey: {
        value: {
          mfaToken: MFA_TOKEN,
          method: 'passkey',
          credential: {
            id: 'AbC...',
            rawId: 'AbC...',
            type: 'public-key',
            response: { clientDataJSON: 'eyJ...', authenticatorData: 'SZY...', signature: 'MEU...' },
            clientExtensionResults: {},
          },
        },
      },
    },
  })
  @ApiEnvelope(MemberLoginResponse)
  @err(401, 10011, 'code wrong or used, or passkey assertion refused')
  @err(401, 10012, 'mfaToken unknown, expired, used or out of attempts: sign in again')
  @err(423, 10008, 'too many wrong second-factor answers for this member (Retry-After)')
  verify(@Body() body: MfaVerifyRequest, @Client() client: ClientFacts): Promise<MemberLoginResponse> {
    return this.signIn.verify(body.mfaToken, body, client);
  }

  @Public()
  @Post('mfa/passkey-options')
  @HttpCode(200)
  @Throttle({ default: { limit: 20, ttl: MINUTE } })
  @ApiOperation({ summary: "Passkey options for a sign-in challenge (the member's passkeys in allowCredentials)" })
  @ApiBody({ type: MfaTokenRequest, examples: { challenge: { value: { mfaToken: MFA_TOKEN } } } })
  @requestOptions('for navigator.credentials.get, bound to this mfaToken')
  @err(401, 10012, 'mfaToken unknown, expired or used')
  challengePasskeyOptions(@Body() body: MfaTokenRequest): Promise<PublicKeyCredentialRequestOptionsJSON> {
    return this.signIn.challengePasskeyOptions(body.mfaToken);
  }

  @Public()
  @Post('mfa/enrol/totp')
  @HttpCode(200)
  @Throttle({ default: { limit: 10, ttl: MINUTE } })
  @ApiOperation({ summary: 'Enforced enrolment (enrolmentRequired): start an authenticator app' })
  @ApiBody({ type: MfaTokenRequest, examples: { challenge: { value: { mfaToken: MFA_TOKEN } } } })
  @ApiEnvelope(TotpEnrolmentView)
  @err(401, 10012, 'mfaToken unknown, expired, used, or not an enrolment challenge')
  enrolTotp(@Body() body: MfaTokenRequest): Promise<TotpEnrolmentView> {
    return this.signIn.enrolTotp(body.mfaToken);
  }

  @Public()
  @Post('mfa/enrol/totp/confirm')
  @HttpCode(200)
  @Throttle({ default: { limit: 10, ttl: MINUTE } })
  @ApiOperation({
    summary:
      'Enforced enrolment: confirm the authenticator app with its first code; answers with the login result and recovery codes',
  })
  @ApiBody({
    type: MfaEnrolTotpConfirmRequest,
    examples: { confirm: { value: { mfaToken: MFA_TOKEN, code: '123456' } } },
  })
  @ApiEnvelope(MfaEnrolmentLoginResponse)
  @err(401, 10011, 'wrong code')
  @err(401, 10012, 'mfaToken unknown, expired, used, or not an enrolment challenge')
  confirmEnrolTotp(
    @Body() body: MfaEnrolTotpConfirmRequest,
    @Client() client: ClientFacts,
  ): Promise<MfaEnrolmentLoginResponse> {
    return this.signIn.confirmEnrolTotp(body.mfaToken, body.code, client);
  }

  @Public()
  @Post('mfa/enrol/passkey/options')
  @HttpCode(200)
  @Throttle({ default: { limit: 10, ttl: MINUTE } })
  @ApiOperation({ summary: 'Enforced enrolment: options to create a passkey' })
  @ApiBody({ type: MfaTokenRequest, examples: { challenge: { value: { mfaToken: MFA_TOKEN } } } })
  @creationOptions
  @err(401, 10012, 'mfaToken unknown, expired, used, or not an enrolment challenge')
  enrolPasskeyOptions(@Body() body: MfaTokenRequest): Promise<PublicKeyCredentialCreationOptionsJSON> {
    return this.signIn.enrolPasskeyOptions(body.mfaToken);
  }

  @Public()
  @Post('mfa/enrol/passkey')
  @HttpCode(200)
  @Throttle({ default: { limit: 10, ttl: MINUTE } })
  @ApiOperation({
    summary: 'Enforced enrolment: register the passkey; answers with the login result and recovery codes',
  })
  @ApiBody({ type: MfaEnrolPasskeyRequest })
  @ApiEnvelope(MfaEnrolmentLoginResponse)
  @err(400, 10013, 'the registration did not verify')
  @err(401, 10012, 'mfaToken unknown, expired, used, or not an enrolment challenge')
  enrolPasskey(
    @Body() body: MfaEnrolPasskeyRequest,
    @Client() client: ClientFacts,
  ): Promise<MfaEnrolmentLoginResponse> {
    return this.signIn.enrolPasskey(body.mfaToken, body.credential, body.name, client);
  }

  @Public()
  @Post('passkey/options')
  @HttpCode(200)
  @Throttle({ default: { limit: 30, ttl: MINUTE } })
  @ApiOperation({
    summary: 'Options for signing in with a passkey, without a password',
    description:
      'No allowCredentials (discoverable credentials): works with conditional mediation (autofill). User verification required. Good for 5 minutes, once.',
  })
  @requestOptions('no allowCredentials, userVerification required')
  passwordlessOptions(): Promise<PublicKeyCredentialRequestOptionsJSON> {
    return this.signIn.passwordlessOptions();
  }

  @Public()
  @Post('passkey/login')
  @HttpCode(200)
  @Throttle({ default: { limit: 20, ttl: MINUTE } })
  @ApiOperation({ summary: 'Sign in with a passkey assertion (no password); amr hwk or swk plus mfa' })
  @ApiBody({ type: PasskeyLoginRequest })
  @ApiEnvelope(MemberLoginResponse)
  @err(
    401,
    10011,
    'assertion refused: unknown passkey, bad signature, no user verification, sign count not increasing, challenge unknown or used',
  )
  @err(423, 10008, 'account disabled')
  passwordless(@Body() body: PasskeyLoginRequest, @Client() client: ClientFacts): Promise<MemberLoginResponse> {
    return this.signIn.passwordless(body.credential, client);
  }

  @Post('step-up/passkey-options')
  @HttpCode(200)
  @Throttle({ default: { limit: 20, ttl: MINUTE } })
  @ApiOperation({ summary: "Passkey options for a step-up of the current session (the member's passkeys)" })
  @requestOptions('bound to the current session')
  stepUpPasskeyOptions(@CurrentPrincipal() principal: Principal): Promise<PublicKeyCredentialRequestOptionsJSON> {
    return this.signIn.stepUpPasskeyOptions(principal);
  }

  @Post('step-up')
  @HttpCode(200)
  @Throttle({ default: { limit: 20, ttl: MINUTE } })
  @ApiOperation({
    summary: "Show the member's strongest factor again (step-up) before a sensitive change",
    description:
      'Passkey if the member has one, else the authenticator app; a recovery code always. The session counts as stepped up for STEP_UP_MAX_AGE_MS; answers with a new access token carrying the new amr.',
  })
  @ApiBody({
    type: StepUpRequest,
    examples: {
      totp: { value: { method: 'totp', code: '123456' } },
      recoveryCode: { value: { method: 'recovery_code', code: 'k7m2-x9qa-4f' } },
    },
  })
  @ApiEnvelope(StepUpResponse)
  @err(401, 10011, 'code wrong or used, or passkey assertion refused')
  @err(403, 10010, "the factor shown is weaker than the member's strongest")
  @err(409, 409, 'the member has no second factor')
  @err(423, 10008, 'too many wrong second-factor answers (Retry-After)')
  stepUp(
    @CurrentPrincipal() principal: Principal,
    @Body() body: StepUpRequest,
    @Client() client: ClientFacts,
  ): Promise<StepUpResponse> {
    return this.signIn.stepUp(principal, body, client);
  }
}
