import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { createGatewayApp } from '../../apps/ai-gateway/src/gateway.app';
import { createMembershipApp } from '../../apps/membership/src/membership.app';
import { Clock } from '@app/platform';
import { useClock } from './clock';
import { createTestDatabase } from './database';

export interface RunningApp {
  app: NestExpressApplication;
  /** Base URL including the context path, e.g. http://127.0.0.1:43123 */
  url: string;
  dbUrl: string;
  dataDir: string;
  close(): Promise<void>;
}

type Env = Record<string, string | undefined>;

interface StartOptions {
  dbUrl?: string;
  keepDatabase?: boolean;
  /** The time the app decides expiries by (e.g. a FakeClock the test advances); the real one by default. */
  clock?: Clock;
}

async function start(
  create: (env: Env) => Promise<{ app: NestExpressApplication }>,
  env: Env,
  opts: StartOptions & { prefix?: string },
): Promise<RunningApp> {
  const db = opts.dbUrl ? null : await createTestDatabase();
  const dbUrl = opts.dbUrl ?? db!.url;
  const dataDir = env.DATA_DIR ?? fs.mkdtempSync(path.join(os.tmpdir(), 'app-data-'));
  const { app } = await create({
    ...process.env,
    NODE_ENV: 'test',
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    JWT_SECRET: 'test-secret-test-secret-test-secret-0123456789',
    ADMIN_TOKEN: 'test-admin-token-0123456789',
    // Suites that sign admins in to do admin things (site settings, the mortise site's replay) predate
    // second factors; enforced enrolment (MFA_REQUIRED_ROLES, default admin) is exercised by the suites
    // that set it (test/membership/second-factors.e2e-spec.ts).
    MFA_REQUIRED_ROLES: 'none',
    ...env,
    DATABASE_URL: dbUrl,
  });
  if (opts.clock) useClock(app, opts.clock);
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address() as import('net').AddressInfo;
  let closed = false;
  return {
    app,
    url: `http://127.0.0.1:${port}${opts.prefix ?? ''}`,
    dbUrl,
    dataDir,
    close: async () => {
      if (closed) return;
      closed = true;
      await app.close();
      if (db && !opts.keepDatabase) await db.drop();
    },
  };
}

/** Boots the real membership app on a fresh database (or `dbUrl`) on a random loopback port. */
export function startMembership(env: Env = {}, opts: StartOptions = {}): Promise<RunningApp> {
  const prefix = (env.CONTEXT_PATH ?? '').replace(/\/+$/, '');
  return start(createMembershipApp, env, {
    ...opts,
    prefix: prefix && !prefix.startsWith('/') ? `/${prefix}` : prefix,
  });
}

/** Boots the real AI gateway on a fresh database (or `dbUrl`) on a random loopback port. */
export function startGateway(env: Env = {}, opts: StartOptions = {}): Promise<RunningApp> {
  // Refusals are answered at once in tests (a held one waits on the app's clock, which many suites hold
  // still); test/ai-gateway/limits.e2e-spec.ts sets the production default and tests the hold.
  return start(createGatewayApp, { AI_REFUSAL_HOLD_MS: '0', ...env }, opts);
}
