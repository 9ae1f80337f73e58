import { DynamicModule, Module, Type } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, APP_PIPE } from '@nestjs/core';
import { DefaultDenyGuard } from '@app/auth';
import { DatabaseModule } from '@app/database';
import { OpenAiExceptionFilter, openAiValidationPipe } from './errors';
import { PlatformModule } from '@app/platform';
import { AuditLogModule } from '@app/audit';
import { WebhooksModule } from '@app/webhooks';
import { GatewayConfig } from './config/gateway.config';
import { GATEWAY_ENTITIES } from './entities';
import { GATEWAY_MIGRATIONS } from './migrations';
import { gatewayMigrationsTable } from './data-source';
import { KeysModule } from './keys/keys.module';
import { ProjectsModule } from './projects/projects.module';
import { UsageModule } from './usage/usage.module';
import { UpstreamsModule } from './upstreams/upstreams.module';
import { ChatModule } from './chat/chat.module';
import { EmbeddingsModule } from './embeddings/embeddings.module';
import { ModelsModule } from './models/models.module';
import { VisionModule } from './vision/vision.module';
import { SpeechModule } from './speech/speech.module';
import { ResponsesModule } from './responses/responses.module';
import { CompletionsModule } from './completions/completions.module';
import { GATEWAY_WEBHOOKS } from './webhooks/gateway-webhooks';
import { GatewayWebhooksModule } from './webhooks/webhooks.module';
import { GatewayAuditLogModule } from './audit-log/audit-log.module';

/** Feature modules of the AI gateway (append new ones). */
const FEATURES: Type[] = [
  KeysModule,
  ProjectsModule,
  UsageModule,
  UpstreamsModule,
  ChatModule,
  EmbeddingsModule,
  ModelsModule,
  VisionModule,
  SpeechModule,
  ResponsesModule,
  CompletionsModule,
  GatewayAuditLogModule,
  GatewayWebhooksModule,
];

@Module({})
export class AppModule {
  static forRoot(config: GatewayConfig, databaseUrl: string): DynamicModule {
    return {
      module: AppModule,
      imports: [
        PlatformModule.forRoot({ app: 'ai-gateway', configClass: GatewayConfig, config, databaseUrl }),
        DatabaseModule.forRoot({
          entities: GATEWAY_ENTITIES,
          migrations: GATEWAY_MIGRATIONS,
          migrationsTableName: gatewayMigrationsTable,
          migrationsRun: config.migrationsRun,
          statementTimeoutMs: config.DATABASE_STATEMENT_TIMEOUT_MS,
        }),
        AuditLogModule.forRoot({ table: 'ai_audit_log' }),
        WebhooksModule.forRoot(GATEWAY_WEBHOOKS),
        ...FEATURES,
      ],
      providers: [
        { provide: APP_GUARD, useClass: DefaultDenyGuard },
        { provide: APP_FILTER, useClass: OpenAiExceptionFilter },
        { provide: APP_PIPE, useFactory: openAiValidationPipe },
      ],
    };
  }
}
