import { DynamicModule, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource, DataSourceOptions } from 'typeorm';
import { DATABASE_URL } from './tokens';
import { runMigrationsUncut } from './uncut';

export interface DatabaseModuleOptions {
  entities: DataSourceOptions['entities'];
  migrations: DataSourceOptions['migrations'];
  /** Each app keeps its own migrations history in the shared database. */
  migrationsTableName: string;
  /** Run pending migrations at boot (development and tests), without the statement timeout (uncut.ts). */
  migrationsRun: boolean;
  /**
   * statement_timeout of every pooled connection (DATABASE_STATEMENT_TIMEOUT_MS), so a slow statement a caller
   * causes gives its connection back: PostgreSQL cancels it (57014 query_canceled, answered 503 by normalizeError
   * in libs/envelope). 0 or absent: none (the server's setting), as for the migrations command (scripts/migration.js).
   */
  statementTimeoutMs?: number;
}

export function dataSourceOptions(url: string, options: DatabaseModuleOptions): DataSourceOptions {
  return {
    type: 'postgres',
    url,
    entities: options.entities,
    migrations: options.migrations,
    migrationsTableName: options.migrationsTableName,
    // Never by TypeORM at initialize: that would run them on the pool's timeout (DatabaseModule runs them uncut).
    migrationsRun: false,
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
      // node-postgres sends it in each connection's startup packet (a session default RESET returns to).
      ...(options.statementTimeoutMs ? { statement_timeout: options.statementTimeoutMs } : {}),
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
          dataSourceFactory: async (dsOptions) => {
            const ds = await new DataSource(dsOptions!).initialize();
            try {
              if (options.migrationsRun) await runMigrationsUncut(ds);
            } catch (e) {
              await ds.destroy(); // the module's retry builds a new one
              throw e;
            }
            return ds;
          },
        }),
      ],
      exports: [TypeOrmModule],
    };
  }
}
