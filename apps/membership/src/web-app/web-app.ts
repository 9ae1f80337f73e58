import * as fs from 'fs';
import * as path from 'path';
import { Logger } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import express, { NextFunction, Request, Response } from 'express';

/** The web app's areas served by membership (web/src/router.ts); the operator console joins later. */
const AREAS = ['account'] as const;

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
 * Serves the single-page web app built from web/ (dist/web) at `{prefix}/account/`: the hashed assets as
 * immutable files, and index.html for every other path below it (deep links are the app's own routes),
 * never cached so that a new build is picked up at once. The app is built with relative asset URLs
 * (web/vite.config.mts); they are made absolute here, with the context path, so deep links load them.
 *
 * Answers pass the platform's edge stages first, so the page gets the same security headers as the API
 * (libs/platform/src/http/security-headers.ts): its scripts and styles are files of this origin and it
 * calls only this origin, which that Content-Security-Policy allows as it is.
 */
export function serveWebApp(app: NestExpressApplication, prefix: string, dir = webAppDir()): void {
  const indexFile = path.join(dir, 'index.html');
  if (!fs.existsSync(indexFile)) {
    new Logger('WebApp').warn(`no web app at ${dir}: /account/ is not served (build it with npm run build)`);
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
      res.setHeader('Content-Type', 'text/html; charset=utf-8');
      res.setHeader('Cache-Control', 'no-cache');
      res.setHeader('Content-Length', index.length);
      res.status(200).end(req.method === 'HEAD' ? undefined : index);
    });
  }
}
