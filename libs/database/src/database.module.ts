import { DynamicModule, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSourceOptions } from 'typeorm';
import { DATABASE_URL } from './tokens';

export interface DatabaseModuleOptions {
  entities: DataSourceOptions['entities'];
  migrations: DataSourceOptions['migrations'];
  /** Each app keeps its own migrations history in the shared database. */
  migrationsTableName: string;
  /** Run pending migrations at boot (development and tests). */
  migrationsRun: boolean;
}

export function dataSourceOptions(url: string, options: DatabaseModuleOptions): DataSourceOptions {
  return {
    type: 'postgres',
    url,
    entities: options.entities,
    migrations: options.migrations,
    migrationsTableName: options.migrationsTableName,
    migrationsRun: options.migrationsRun,
    migrationsTransactionMode: 'each',
    synchronize: false,
    uuidExtension: 'pgcrypto',
    // keepAlive: TCP keep-alive probes from 10 s of silence, so a connection whose peer is gone without a reset
    // (a network partition, a load balancer lost) fails after the system's probes (Linux: 9 every 75 s; a
    // connection with unacknowledged data after its retransmissions, ~15 min), not never.
    extra: {
      max: 20,
      connectionTimeoutMillis: 5000,
      idleTimeoutMillis: 30000,
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
    },
    // TypeORM's own error log prints query parameters (password hashes, tokens): failures surface as exceptions instead.
    logging: false,
  };
}

/** TypeORM on PostgreSQL; the URL comes from the app (a real server or the embedded default). */
@Module({})
export class DatabaseModule {
  static forRoot(options: DatabaseModuleOptions): DynamicModule {
    return {
      module: DatabaseModule,
      imports: [
        TypeOrmModule.forRootAsync({
          inject: [DATABASE_URL],
          useFactory: (url: string) => ({ ...dataSourceOptions(url, options), retryAttempts: 3, retryDelay: 1000 }),
        }),
      ],
      exports: [TypeOrmModule],
    };
  }
}
