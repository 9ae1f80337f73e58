import { Module } from '@nestjs/common';
import { CallAdmission } from './call-admission';
import { ExpiredHoldsSweeper } from './expired-holds.sweeper';
import { KeyReads } from './key-reads';
import { LimitFields } from './limit-fields';
import { RefusalHold } from './refusal-hold';
import { LimitsRepository } from './limits.repository';

/** Rate limits, concurrency limits and budgets of keys and projects (CallAdmission); unmetered reads per key (KeyReads). */
@Module({
  providers: [LimitsRepository, CallAdmission, ExpiredHoldsSweeper, LimitFields, RefusalHold, KeyReads],
  exports: [CallAdmission, LimitsRepository, LimitFields, RefusalHold, KeyReads],
})
export class LimitsModule {}
