import type { Type } from '@nestjs/common';
import type { MigrationInterface } from 'typeorm';
import { SharedState1732240000000, SharedStateUnlogged1795500000000 } from '@app/database';
import { CreateMemberAccounts1795314856814 } from './1795314856814-CreateMemberAccounts';
import { CreateMemberIdentities1795400000000 } from './1795400000000-CreateMemberIdentities';
import { MemberContactProof1795600000000 } from './1795600000000-MemberContactProof';
import { SiteTitleTemplateSiteName1795700000000 } from './1795700000000-SiteTitleTemplateSiteName';
import { MemberFileQuota1795800000000 } from './1795800000000-MemberFileQuota';
import { MemberSecondFactors1795900000000 } from './1795900000000-MemberSecondFactors';
import { AuditLogAndWebhooks1796010000000 } from './1796010000000-AuditLogAndWebhooks';
import { MemberSearchIndexes1796400000000 } from './1796400000000-MemberSearchIndexes';
import { PasskeyTransportsKnown1796500000000 } from './1796500000000-PasskeyTransportsKnown';
import { WebhookDeliveriesPaused1796950000000 } from './1796950000000-WebhookDeliveriesPaused';
import { AuditLogFilterIndexes1797020000000 } from './1797020000000-AuditLogFilterIndexes';
import { AuditLogTimeIndex1797060000000 } from './1797060000000-AuditLogTimeIndex';
import { WebhookPauseTrigger1797070000000 } from './1797070000000-WebhookPauseTrigger';

// Every migration of the membership app, in order (append new ones).
export const MEMBERSHIP_MIGRATIONS: Type<MigrationInterface>[] = [
  SharedState1732240000000,
  CreateMemberAccounts1795314856814,
  CreateMemberIdentities1795400000000,
  SharedStateUnlogged1795500000000,
  MemberContactProof1795600000000,
  SiteTitleTemplateSiteName1795700000000,
  MemberFileQuota1795800000000,
  MemberSecondFactors1795900000000,
  AuditLogAndWebhooks1796010000000,
  MemberSearchIndexes1796400000000,
  PasskeyTransportsKnown1796500000000,
  WebhookDeliveriesPaused1796950000000,
  AuditLogFilterIndexes1797020000000,
  AuditLogTimeIndex1797060000000,
  WebhookPauseTrigger1797070000000,
];
