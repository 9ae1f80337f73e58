import * as crypto from 'crypto';
import * as fs from 'fs';
import * as path from 'path';
import { Logger } from '@nestjs/common';
import { sendEnvelopeError, setDefaultLocale } from '@app/envelope';
import { AppDefinition, createApp, normalizePrefix } from '@app/platform';
import { AppModule } from './app.module';
import { MembershipConfig } from './config/membership.config';
import { serveWebApp } from './web-app/web-app';

/** Development only: a random JWT secret persisted under DATA_DIR so tokens survive restarts. */
export function developmentJwtSecret(dataDir: string): string {
  const file = path.resolve(dataDir, 'jwt-secret');
  if (fs.existsSync(file)) return fs.readFileSync(file, 'utf8').trim();
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const secret = crypto.randomBytes(48).toString('base64url');
  fs.writeFileSync(file, secret, { mode: 0o600 });
  return secret;
}

export const membershipApp: AppDefinition<MembershipConfig> = {
  name: 'membership',
  configClass: MembershipConfig,
  module: (config, url) => {
    if (!config.JWT_SECRET) config.JWT_SECRET = developmentJwtSecret(config.DATA_DIR);
    // Envelope messages follow Accept-Language; this is the language without one (process-wide, set at boot).
    setDefaultLocale(config.DEFAULT_LOCALE);
    return AppModule.forRoot(config, url);
  },
  prefix: (config) => config.CONTEXT_PATH,
  // A stranger's body to a route that needs a token is not read: 401 first (unknown paths keep their 404).
  authenticateFirst: 'routes',
  errorResponder: (error, req, res) => sendEnvelopeError(error, req, res, new Logger('Errors')),
  // The account page and the operator console (web/, built into dist/web) at {base_url}/account/ and /console/.
  customize: (app, config) =>
    serveWebApp(app, normalizePrefix(config.CONTEXT_PATH), { gatewayUrl: config.CONSOLE_GATEWAY_URL }),
  swagger: {
    title: 'Membership API',
    description:
      'Member registration and login, tokens and sessions, profile, OAuth 2.0 and WeChat login, files and site settings. ' +
      'Every response is the envelope `{code, message, data}`; `code` 200 means success.',
    version: '1.0',
    bearerFormat: 'JWT',
  },
};

export const createMembershipApp = (env: Record<string, string | undefined> = process.env) =>
  createApp(membershipApp, env);
