import { DynamicModule, Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { PlatformExpressAdapter } from './express-adapter';
import { EmbeddedDatabase, ensureEmbeddedPostgres } from '@app/database';
import { BaseConfig } from '../config/base.config';
import { loadConfig } from '../config/load-config';
import { SwaggerOptions } from '../swagger/setup-swagger';
import { configureHttpApp } from './configure-http-app';
import { ErrorResponder } from './body-reader';
import type { AuthenticateFirst } from './authenticate-first';
import type { Middleware } from './http-pipeline';

export interface AppDefinition<T extends BaseConfig> {
  name: string;
  configClass: new () => T;
  module(config: T, databaseUrl: string): DynamicModule;
  swagger: SwaggerOptions;
  prefix?(config: T): string;
  /** Writes an error in the app's body shape outside Nest's filters. */
  errorResponder: ErrorResponder;
  /** The app's own global behaviours (edge stages), run for every request after the platform's. */
  edge?(app: NestExpressApplication, config: T): Middleware[];
  /** Authenticate requests not to a `@Public()` route before reading their body (authenticate-first.ts). */
  authenticateFirst?: AuthenticateFirst;
  /** Last touches before listening (e.g. a WebSocket adapter). */
  customize?(app: NestExpressApplication, config: T): void | Promise<void>;
}

export interface CreatedApp<T extends BaseConfig> {
  app: NestExpressApplication;
  config: T;
  database: EmbeddedDatabase;
}

/** The database an app runs on: DATABASE_URL, or the embedded PostgreSQL under DATA_DIR. */
export async function resolveDatabase(config: BaseConfig): Promise<EmbeddedDatabase> {
  if (config.DATABASE_URL) return { url: config.DATABASE_URL, owned: false, stop: async () => undefined };
  const log = new Logger('EmbeddedPostgres');
  return ensureEmbeddedPostgres({
    dataDir: config.DATA_DIR,
    port: config.EMBEDDED_PG_PORT,
    production: config.isProduction,
    allowInProduction: config.EMBEDDED_DATABASE_IN_PRODUCTION,
    log: (m) => m && log.debug(m),
  });
}

/** Validates the environment, resolves the database and builds a configured (not yet listening) app. */
export async function createApp<T extends BaseConfig>(
  def: AppDefinition<T>,
  env: Record<string, string | undefined> = process.env,
): Promise<CreatedApp<T>> {
  const config = loadConfig(def.configClass, env);
  const database = await resolveDatabase(config);
  try {
    const app = await NestFactory.create<NestExpressApplication>(
      def.module(config, database.url),
      new PlatformExpressAdapter(),
      {
        bodyParser: false,
        bufferLogs: true,
        abortOnError: false,
      },
    );
    configureHttpApp(app, {
      config,
      prefix: def.prefix?.(config),
      swagger: def.swagger,
      errorResponder: def.errorResponder,
      edge: def.edge?.(app, config),
      authenticateFirst: def.authenticateFirst,
    });
    await def.customize?.(app, config);
    return { app, config, database };
  } catch (e) {
    await database.stop().catch(() => undefined);
    throw e;
  }
}
