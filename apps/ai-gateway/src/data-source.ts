import { DataSource } from 'typeorm';
import { dataSourceOptions } from '@app/database';
import { GATEWAY_ENTITIES } from './entities';
import { GATEWAY_MIGRATIONS } from './migrations';

export const gatewayMigrationsTable = 'ai_gateway_migrations';

/** The AI gateway schema on a given database, for the migrations command and the TypeORM CLI. */
export function gatewayDataSource(url: string): DataSource {
  return new DataSource(
    dataSourceOptions(url, {
      entities: GATEWAY_ENTITIES,
      migrations: GATEWAY_MIGRATIONS,
      migrationsTableName: gatewayMigrationsTable,
      migrationsRun: false,
    }),
  );
}

export { GatewayConfig } from './config/gateway.config';
