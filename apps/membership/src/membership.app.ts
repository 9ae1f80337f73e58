import * as crypto from 'crypto';
import * as fs from 'fs';
import * as path from 'path';
import { Logger } from '@nestjs/common';
import { sendEnvelopeError, setDefaultLocale } from '@app/envelope';
import { AppDefinition, createApp, normalizePrefix } from '@app/platform';
import { AppModule } from './app.module';
import { MembershipConfig } from './config/membership.config';
import { serveWebApp } from './web-app/web-app';

/**
 * Development only: a random JWT secret persisted under DATA_DIR so tokens survive restarts. It is written whole
 * under a temporary name, then linked into place: a start stopped while writing it left an empty file, and every
 * later start then failed ("JWT_SECRET is not resolved"); of two starts at once, one secret wins and both use it.
 * An empty file left by such a start is replaced.
 */
export function developmentJwtSecret(dataDir: string): string {
  const file = path.resolve(dataDir, 'jwt-secret');
  const existing = readSecretFile(file);
  if (existing) return existing;
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.${crypto.randomBytes(6).toString('hex')}`;
  fs.writeFileSync(tmp, crypto.randomBytes(48).toString('base64url'), { mode: 0o600, flag: 'wx' });
  try {
    if (existing === '') fs.renameSync(tmp, file);
    else fs.linkSync(tmp, file);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
  } finally {
    fs.rmSync(tmp, { force: true });
  }
  const secret = readSecretFile(file);
  if (!secret) throw new Error(`could not write a JWT secret to ${file}`);
  return secret;
}

/** The trimmed content of `file`, or null when there is none. */
function readSecretFile(file: string): string | null {
  try {
    return fs.readFileSync(file, 'utf8').trim();
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e;
  }
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
