import type { MigrationInterface } from 'typeorm';
import { SharedState1732240000000, SharedStateUnlogged1795500000000 } from '@app/database';
import { CreateApiKeysAndUsage1795400000000 } from './1795400000000-CreateApiKeysAndUsage';
import { CreateBudgetHolds1795600000000 } from './1795600000000-CreateBudgetHolds';
import { CreateStoredResponses1795700000000 } from './1795700000000-CreateStoredResponses';
import { UsageEntryIds1795800000000 } from './1795800000000-UsageEntryIds';
import { StoredResponsesQuota1795900000000 } from './1795900000000-StoredResponsesQuota';
import { StoredResponseObjects1796000000000 } from './1796000000000-StoredResponseObjects';
import { UsageHourly1796100000000 } from './1796100000000-UsageHourly';
import { ProjectsAndLimits1796200000000 } from './1796200000000-ProjectsAndLimits';
import { AuditLogAndWebhooks1796300000000 } from './1796300000000-AuditLogAndWebhooks';
import { BudgetWebhookEvents1796500000000 } from './1796500000000-BudgetWebhookEvents';
import { LimitsBatch1796600000000 } from './1796600000000-LimitsBatch';
import { LimitsBatchLocksOnce1796700000000 } from './1796700000000-LimitsBatchLocksOnce';
import { LimitCountersReadOnce1796800000000 } from './1796800000000-LimitCountersReadOnce';
import { WebhookDeliveriesPaused1796950000000 } from './1796950000000-WebhookDeliveriesPaused';
import { AuditLogFilterIndexes1797020000000 } from './1797020000000-AuditLogFilterIndexes';
import { GeneratedImages1797030000000 } from './1797030000000-GeneratedImages';
import { BudgetUsedUp1797050000000 } from './1797050000000-BudgetUsedUp';
import { AuditLogTimeIndex1797060000000 } from './1797060000000-AuditLogTimeIndex';
import { WebhookPauseTrigger1797070000000 } from './1797070000000-WebhookPauseTrigger';

// Every migration of the AI gateway, in order (append new ones).
export const GATEWAY_MIGRATIONS: Array<new () => MigrationInterface> = [
  SharedState1732240000000,
  CreateApiKeysAndUsage1795400000000,
  SharedStateUnlogged1795500000000,
  CreateBudgetHolds1795600000000,
  CreateStoredResponses1795700000000,
  UsageEntryIds1795800000000,
  StoredResponsesQuota1795900000000,
  StoredResponseObjects1796000000000,
  UsageHourly1796100000000,
  ProjectsAndLimits1796200000000,
  AuditLogAndWebhooks1796300000000,
  BudgetWebhookEvents1796500000000,
  LimitsBatch1796600000000,
  LimitsBatchLocksOnce1796700000000,
  LimitCountersReadOnce1796800000000,
  WebhookDeliveriesPaused1796950000000,
  AuditLogFilterIndexes1797020000000,
  GeneratedImages1797030000000,
  BudgetUsedUp1797050000000,
  AuditLogTimeIndex1797060000000,
  WebhookPauseTrigger1797070000000,
];
