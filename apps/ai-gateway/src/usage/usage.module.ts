import { Module } from '@nestjs/common';
import { KeysModule } from '../keys/keys.module';
import { LimitsModule } from '../limits/limits.module';
import { UpstreamsModule } from '../upstreams/upstreams.module';
import { LedgerRepository } from './ledger.repository';
import { MeteringService } from './metering.service';
import { KeyCallsController } from './key-calls.controller';
import { UpstreamHealthController } from './upstream-health.controller';
import { UsageController } from './usage.controller';
import { UsageRepository } from './usage.repository';

/** Budgets, the usage ledger and its reports. MeteringService is what every paid endpoint uses. */
@Module({
  imports: [KeysModule, LimitsModule, UpstreamsModule],
  controllers: [UsageController, KeyCallsController, UpstreamHealthController],
  providers: [LedgerRepository, MeteringService, UsageRepository],
  exports: [MeteringService, LedgerRepository],
})
export class UsageModule {}
