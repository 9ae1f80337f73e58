import type { Type } from '@nestjs/common';
import { MemberFile } from './files/member-file.entity';
import { MemberIdentity } from './identities/member-identity.entity';
import { Member } from './members/member.entity';
import { MemberSession } from './sessions/member-session.entity';
import { RefreshToken } from './sessions/refresh-token.entity';
import { SiteSetting } from './site-config/site-setting.entity';
import { VerificationCode } from './verification/verification-code.entity';

// Every TypeORM entity of the membership app (append new ones).
export const MEMBERSHIP_ENTITIES: Type[] = [
  Member,
  MemberSession,
  RefreshToken,
  VerificationCode,
  MemberFile,
  SiteSetting,
  MemberIdentity,
];
