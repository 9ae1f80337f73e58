import { Module } from '@nestjs/common';
import { CallAdmission } from './call-admission';
import { ExpiredHoldsSweeper } from './expired-holds.sweeper';
import { LimitFields } from './limit-fields';
import { RefusalHold } from './refusal-hold';
import { LimitsRepository } from './limits.repository';

/** Rate limits, concurrency limits and budgets of keys and projects (CallAdmission). */
@Module({
  providers: [LimitsRepository, CallAdmission, ExpiredHoldsSweeper, LimitFields, RefusalHold],
  exports: [CallAdmission, LimitsRepository, LimitFields, RefusalHold],
})
export class LimitsModule {}
