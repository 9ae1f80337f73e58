import { DynamicModule, Module, Type } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, APP_INTERCEPTOR, APP_PIPE } from '@nestjs/core';
import { DefaultDenyGuard } from '@app/auth';
import { DatabaseModule } from '@app/database';
import { EnvelopeExceptionFilter, EnvelopeInterceptor, envelopeValidationPipe } from '@app/envelope';
import { PlatformModule } from '@app/platform';
import { AuditLogModule } from '@app/audit';
import { WebhooksModule } from '@app/webhooks';
import { MembershipConfig } from './config/membership.config';
import { MEMBERSHIP_ENTITIES } from './entities';
import { MEMBERSHIP_MIGRATIONS } from './migrations';
import { membershipMigrationsTable } from './data-source';
import { AuthModule } from './auth/auth.module';
import { FilesModule } from './files/files.module';
import { SiteConfigModule } from './site-config/site-config.module';
import { OAuthModule } from './oauth/oauth.module';
import { WechatModule } from './wechat/wechat.module';
import { WellKnownModule } from './well-known/well-known.module';
import { AdminMembersModule } from './admin-members/admin-members.module';
import { MEMBERSHIP_WEBHOOKS } from './webhooks/membership-webhooks';
import { MembershipWebhooksModule } from './webhooks/webhooks.module';
import { MembershipAuditLogModule } from './audit-log/audit-log.module';

/** Feature modules of the membership app (append new ones). */
const FEATURES: Type[] = [
  AuthModule,
  FilesModule,
  SiteConfigModule,
  OAuthModule,
  WechatModule,
  WellKnownModule,
  AdminMembersModule,
  MembershipAuditLogModule,
  MembershipWebhooksModule,
];

@Module({})
export class AppModule {
  static forRoot(config: MembershipConfig, databaseUrl: string): DynamicModule {
    return {
      module: AppModule,
      imports: [
        PlatformModule.forRoot({ app: 'membership', configClass: MembershipConfig, config, databaseUrl }),
        DatabaseModule.forRoot({
          entities: MEMBERSHIP_ENTITIES,
          migrations: MEMBERSHIP_MIGRATIONS,
          migrationsTableName: membershipMigrationsTable,
          migrationsRun: config.migrationsRun,
          statementTimeoutMs: config.DATABASE_STATEMENT_TIMEOUT_MS,
        }),
        AuditLogModule.forRoot({ table: 'audit_log' }),
        WebhooksModule.forRoot(MEMBERSHIP_WEBHOOKS),
        ...FEATURES,
      ],
      providers: [
        { provide: APP_GUARD, useClass: DefaultDenyGuard },
        { provide: APP_FILTER, useClass: EnvelopeExceptionFilter },
        { provide: APP_PIPE, useFactory: envelopeValidationPipe },
        { provide: APP_INTERCEPTOR, useClass: EnvelopeInterceptor },
      ],
    };
  }
}
