import { DataSource } from 'typeorm';
import { dataSourceOptions } from '@app/database';
import { MEMBERSHIP_ENTITIES } from './entities';
import { MEMBERSHIP_MIGRATIONS } from './migrations';

export const membershipMigrationsTable = 'membership_migrations';

/** The membership schema on a given database, for the migrations command and the TypeORM CLI. */
export function membershipDataSource(url: string): DataSource {
  return new DataSource(
    dataSourceOptions(url, {
      entities: MEMBERSHIP_ENTITIES,
      migrations: MEMBERSHIP_MIGRATIONS,
      migrationsTableName: membershipMigrationsTable,
      migrationsRun: false,
    }),
  );
}

export { MembershipConfig } from './config/membership.config';
