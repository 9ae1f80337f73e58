import * as fs from 'fs';
import * as path from 'path';
import { Logger } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import express, { NextFunction, Request, Response } from 'express';
import { securityHeaders, withoutTrailingSlashes } from '@app/platform';

/** The web app's areas served by membership (web/src/router.ts). */
const AREAS = ['account', 'console'] as const;

/** The gateway's default port (apps/ai-gateway/src/config/gateway.config.ts AI_GATEWAY_PORT). */
const GATEWAY_DEFAULT_PORT = 8081;

/** Where the console finds the gateway: CONSOLE_GATEWAY_URL, else the page's own scheme and host name with port 8081. */
export function consoleGatewayUrl(configured: string | undefined, req: Request): string {
  if (configured) return withoutTrailingSlashes(configured);
  const host = new URL(`http://${req.headers.host ?? 'localhost'}`).hostname;
  return `${req.protocol}://${host.includes(':') ? `[${host}]` : host}:${GATEWAY_DEFAULT_PORT}`;
}

/**
 * The console's Content-Security-Policy: the platform's (libs/platform/src/http/security-headers.ts) with
 * the gateway's origin added to connect-src, since the console calls the gateway's /admin/** directly
 * (CORS there: CONSOLE_ORIGIN). A plain-http gateway drops upgrade-insecure-requests, which would send
 * the console's calls to https and break them.
 */
export function consolePolicy(gatewayUrl: string): string {
  const base =
    securityHeaders().find(([name]) => name.toLowerCase() === 'content-security-policy')?.[1] ?? "default-src 'self'";
  const origin = new URL(gatewayUrl).origin;
  const directives = base
    .split(';')
    .filter((d) => !(origin.startsWith('http:') && d.trim() === 'upgrade-insecure-requests'));
  return [...directives, `connect-src 'self' ${origin}`].join(';');
}

const escapeAttr = (v: string) => v.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');

/** Hashed file names (Vite's `assets/<name>-<hash>.<ext>`) never change content: cached for a year. */
const IMMUTABLE = 'public, max-age=31536000, immutable';

/** The repository (or image) root: the nearest folder above this file with a package.json (source, dist/ and the image alike). */
function projectRoot(from = __dirname): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, 'package.json'))) return dir;
    if (path.dirname(dir) === dir) return process.cwd();
  }
}

/** Where `npm run build` (scripts/build.js) writes the web app's files. */
export const webAppDir = (): string => path.join(projectRoot(), 'dist', 'web');

/**
 * Serves the single-page web app built from web/ (dist/web) at `{prefix}/account/` and `{prefix}/console/`: the hashed assets as
 * immutable files, and index.html for every other path below it (deep links are the app's own routes),
 * never cached so that a new build is picked up at once. The app is built with relative asset URLs
 * (web/vite.config.mts); they are made absolute here, with the context path, so deep links load them.
 *
 * Answers pass the platform's edge stages first, so the page gets the same security headers as the API
 * (libs/platform/src/http/security-headers.ts): its scripts and styles are files of this origin and it
 * calls only this origin, which that Content-Security-Policy allows as it is.
 */
export function serveWebApp(
  app: NestExpressApplication,
  prefix: string,
  opts: { gatewayUrl?: string } = {},
  dir = webAppDir(),
): void {
  const indexFile = path.join(dir, 'index.html');
  if (!fs.existsSync(indexFile)) {
    new Logger('WebApp').warn(
      `no web app at ${dir}: /account/ and /console/ are not served (build it with npm run build)`,
    );
    return;
  }
  const template = fs.readFileSync(indexFile, 'utf8');
  for (const area of AREAS) {
    const base = `${prefix}/${area}`;
    const index = Buffer.from(template.replace(/(src|href)="\.\/assets\//g, `$1="${base}/assets/`));
    const label = (req: Request) => ((req as Request & { routePattern?: string }).routePattern = `${base}/*`);
    app.use(
      `${base}/assets`,
      express.static(path.join(dir, 'assets'), {
        index: false,
        redirect: false,
        fallthrough: true,
        setHeaders: (res) => res.setHeader('Cache-Control', IMMUTABLE),
      }),
    );
    app.use(base, (req: Request, res: Response, next: NextFunction) => {
      if (req.method !== 'GET' && req.method !== 'HEAD') return next();
      // A missing asset is a 404 (the app's envelope), not the page.
      if (req.path.startsWith('/assets/')) return next();
      label(req);
      // `{prefix}/account` → `{prefix}/account/`: the app's routes are below the slash.
      if (req.originalUrl.split('?')[0] === base) return res.redirect(301, `${base}/`);
      let page = index;
      if (area === 'console') {
        // The gateway's URL for the console's calls (web/src/api/gateway.ts reads this meta element).
        const gatewayUrl = consoleGatewayUrl(opts.gatewayUrl, req);
        page = Buffer.from(
          index
            .toString('utf8')
            .replace('</head>', `<meta name="gateway-url" content="${escapeAttr(gatewayUrl)}" />\n  </head>`),
        );
        res.setHeader('Content-Security-Policy', consolePolicy(gatewayUrl));
      }
      res.setHeader('Content-Type', 'text/html; charset=utf-8');
      res.setHeader('Cache-Control', 'no-cache');
      res.setHeader('Content-Length', page.length);
      res.status(200).end(req.method === 'HEAD' ? undefined : page);
    });
  }
}
