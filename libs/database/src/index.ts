export * from './embedded-postgres';
export * from './database.module';
export * from './tokens';
export * from './shared-migrations';
export * from './returned-rows';
export * from './like-pattern';
export * from './uncut';
