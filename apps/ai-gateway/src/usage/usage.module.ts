import { Module } from '@nestjs/common';
import { KeysModule } from '../keys/keys.module';
import { ExpiredHoldsSweeper } from './expired-holds.sweeper';
import { LedgerWriter } from './ledger.writer';
import { MeteringService } from './metering.service';
import { UsageController } from './usage.controller';
import { UsageRepository } from './usage.repository';

/** Budgets, the usage ledger and its reports. MeteringService is what every paid endpoint uses. */
@Module({
  imports: [KeysModule],
  controllers: [UsageController],
  providers: [LedgerWriter, MeteringService, UsageRepository, ExpiredHoldsSweeper],
  exports: [MeteringService, LedgerWriter],
})
export class UsageModule {}
