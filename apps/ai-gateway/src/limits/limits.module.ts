import { Module } from '@nestjs/common';
import { CallAdmission } from './call-admission';
import { ExpiredHoldsSweeper } from './expired-holds.sweeper';
import { LimitFields } from './limit-fields';
import { LimitsRepository } from './limits.repository';

/** Rate limits, concurrency limits and budgets of keys and projects (CallAdmission). */
@Module({
  providers: [LimitsRepository, CallAdmission, ExpiredHoldsSweeper, LimitFields],
  exports: [CallAdmission, LimitsRepository, LimitFields],
})
export class LimitsModule {}
