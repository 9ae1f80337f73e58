import { Logger } from '@nestjs/common';
import { BaseConfig } from '../config/base.config';
import { ConfigError } from '../config/load-config';
import { CreatedApp } from './create-app';
import { enableGracefulShutdown } from './configure-http-app';
import { shutdownTracing } from '../tracing';

/** Process entry of an app: build, listen, drain on SIGTERM; a bad config exits 1 with the reasons. */
export async function runMain<T extends BaseConfig>(
  name: string,
  create: () => Promise<CreatedApp<T>>,
  port: (c: T) => number,
  prefix: (c: T) => string = () => '',
): Promise<void> {
  let created: CreatedApp<T>;
  try {
    created = await create();
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`${name}: ${e.message}\n`);
      process.exit(1);
    }
    process.stderr.write(`${name}: failed to start: ${(e as Error)?.stack ?? e}\n`);
    process.exit(1);
  }
  const { app, config, database } = created;
  enableGracefulShutdown(app, config.SHUTDOWN_GRACE_MS, async () => {
    await database.stop();
    await shutdownTracing(); // flush the last spans before exit
  });
  await app.listen(port(config), config.HOST);
  const host = config.HOST === '0.0.0.0' || config.HOST === '::' ? 'localhost' : config.HOST;
  const base = `http://${host}:${port(config)}${prefix(config).replace(/\/$/, '')}`;
  new Logger(name).log(
    `listening on ${base} (Swagger UI ${base}/swagger-ui/index.html, database ${database.owned || !config.DATABASE_URL ? 'embedded' : 'DATABASE_URL'})`,
  );
}
