import { ApiProperty } from '@nestjs/swagger';
import { PasskeyRow } from '../factors.repository';

export class TotpEnrolmentView {
  @ApiProperty({
    example: 'JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP',
    description: 'Base32 secret, for typing into the app by hand',
  })
  secret: string;
  @ApiProperty({
    example:
      'otpauth://totp/Example%20Site:alice_01?issuer=Example%20Site&secret=JBSWY3DPEHPK3PXP&algorithm=SHA1&digits=6&period=30',
  })
  otpauthUri: string;
  @ApiProperty({
    example: 'data:image/png;base64,iVBORw0KGgo...',
    description: 'The otpauth URI as a QR code (PNG data URL)',
  })
  qrDataUrl: string;
}

export class RecoveryCodesView {
  @ApiProperty({
    type: [String],
    nullable: true,
    example: ['k7m2-x9qa-4f', 'p3rt-8vbn-2c'],
    description: '10 single-use codes, shown only now; null when none were made',
  })
  recoveryCodes: string[] | null;
}

export class PasskeyView {
  @ApiProperty({ example: '6f1c2d4e-8a9b-4c3d-9e1f-2a3b4c5d6e7f' })
  id: string;
  @ApiProperty({ example: 'Laptop' })
  name: string;
  @ApiProperty({ example: '2026-11-28T10:00:00.000Z' })
  createdTime: Date;
  @ApiProperty({ example: null, nullable: true, type: Date })
  lastUsedTime: Date | null;
  @ApiProperty({ example: true, description: 'Synced to other devices (backup state flag)' })
  backedUp: boolean;
  @ApiProperty({ example: 'multiDevice', enum: ['singleDevice', 'multiDevice'] })
  deviceType: string;
  @ApiProperty({ example: ['internal', 'hybrid'], type: [String] })
  transports: string[];
}

export class PasskeyAddedView {
  @ApiProperty({ type: PasskeyView })
  passkey: PasskeyView;
  @ApiProperty({
    type: [String],
    nullable: true,
    example: null,
    description: 'Recovery codes when this is the first factor, else null',
  })
  recoveryCodes: string[] | null;
}

export class TotpStatusView {
  @ApiProperty({ example: true })
  enabled: boolean;
  @ApiProperty({ example: '2026-11-28T10:00:00.000Z', nullable: true, type: Date })
  createdTime: Date | null;
}

export class RecoveryCodesStatusView {
  @ApiProperty({ example: 8 })
  remaining: number;
  @ApiProperty({ example: '2026-11-28T10:00:00.000Z', nullable: true, type: Date })
  createdTime: Date | null;
}

export class StepUpStatusView {
  @ApiProperty({ example: 'passkey', enum: ['totp', 'passkey'], nullable: true, type: String })
  required: 'totp' | 'passkey' | null;
  @ApiProperty({ example: '2026-11-28T10:10:00.000Z', nullable: true, type: Date })
  satisfiedUntil: Date | null;
}

export class FactorsView {
  @ApiProperty({ type: TotpStatusView })
  totp: TotpStatusView;
  @ApiProperty({ type: [PasskeyView] })
  passkeys: PasskeyView[];
  @ApiProperty({ type: RecoveryCodesStatusView })
  recoveryCodes: RecoveryCodesStatusView;
  @ApiProperty({ type: StepUpStatusView })
  stepUp: StepUpStatusView;
  @ApiProperty({ example: false, description: 'The member holds a role of MFA_REQUIRED_ROLES' })
  mfaRequiredByRole: boolean;
}

export function passkeyView(p: PasskeyRow): PasskeyView {
  return {
    id: p.id,
    name: p.name,
    createdTime: p.createdTime,
    lastUsedTime: p.lastUsedTime,
    backedUp: p.backedUp,
    deviceType: p.deviceType,
    transports: p.transports,
  };
}
