import { Module } from '@nestjs/common';
import { SessionsModule } from '../sessions/sessions.module';
import { AdminMembersController } from './admin-members.controller';
import { AdminMembersRepository } from './admin-members.repository';
import { AdminMembersService } from './admin-members.service';

/** The operator console's Members page API (/api/v1/admin/members): viewers read, admins change. */
@Module({
  imports: [SessionsModule],
  controllers: [AdminMembersController],
  providers: [AdminMembersRepository, AdminMembersService],
})
export class AdminMembersModule {}
