import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module';
import { JwksController } from './jwks.controller';

/** Public metadata other services read: /.well-known/jwks.json. */
@Module({ imports: [AuthModule], controllers: [JwksController] })
export class WellKnownModule {}
