import { Module } from '@nestjs/common';
import { SecurityModule } from '../security/security.module';
import { SessionsModule } from '../sessions/sessions.module';
import { AdminBootstrapService } from './admin-bootstrap.service';
import { MembersRepository } from './members.repository';
import { MembersService } from './members.service';

@Module({
  imports: [SecurityModule, SessionsModule],
  providers: [MembersRepository, MembersService, AdminBootstrapService],
  exports: [MembersService, AdminBootstrapService],
})
export class MembersModule {}
