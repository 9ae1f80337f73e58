#!/usr/bin/env node
// Compiles apps/ and libs/ with tsc into dist/ when any source is newer than the last build, and links
// dist/node_modules/@app/<lib> to each compiled lib (how the compiled code finds its `@app/` imports).
// Builds the web app (web/: the account page, later the operator console) with Vite into dist/web the
// same way: when a file of web/ is newer than the last build. Both work offline.
const { execFileSync } = require('child_process');
const fs = require('fs');
const path = require('path');

const root = path.resolve(__dirname, '..');
const stamp = path.join(root, 'dist', '.build-stamp');

function newestSource(dir, pattern = /\.(ts|json)$/) {
  let newest = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestSource(full, pattern));
    else if (pattern.test(entry.name)) newest = Math.max(newest, fs.statSync(full).mtimeMs);
  }
  return newest;
}

const webDir = path.join(root, 'web');
// Vite writes index.html last: its time is the last complete web build.
const webIndex = path.join(root, 'dist', 'web', 'index.html');

function webNeedsBuild() {
  // A production image ships dist/web without web/ (and without Vite): nothing to rebuild.
  if (!fs.existsSync(webDir)) return false;
  if (!fs.existsSync(webIndex)) return true;
  return newestSource(webDir, /./) > fs.statSync(webIndex).mtimeMs;
}

const viteArgs = () => [
  path.join(path.dirname(require.resolve('vite/package.json')), 'bin', 'vite.js'),
  'build',
  '--config',
  path.join(webDir, 'vite.config.mts'),
  '--logLevel',
  'warn',
];

/** Builds the web app into dist/web when needed (or forced); true when built. */
function buildWeb({ force = false } = {}) {
  if (!(force ? fs.existsSync(webDir) : webNeedsBuild())) return false;
  process.stderr.write('Building the web app (vite build web/)...\n');
  execFileSync(process.execPath, viteArgs(), {
    cwd: root,
    stdio: 'inherit',
    env: { ...process.env, VITE_CONFIG_NATIVE_IGNORE_WARNING: 'true' },
  });
  return true;
}

function needsBuild() {
  if (!fs.existsSync(stamp)) return true;
  // A production image ships dist/ without the TypeScript sources (and without tsc): nothing to rebuild.
  if (!fs.existsSync(path.join(root, 'apps'))) return false;
  const built = fs.statSync(stamp).mtimeMs;
  const sources = Math.max(
    newestSource(path.join(root, 'apps')),
    newestSource(path.join(root, 'libs')),
    fs.statSync(path.join(root, 'tsconfig.json')).mtimeMs,
    fs.statSync(path.join(root, 'tsconfig.build.json')).mtimeMs,
  );
  return sources > built;
}

const tscArgs = () => [require.resolve('typescript/bin/tsc'), '-p', 'tsconfig.build.json'];

function markBuilt() {
  fs.mkdirSync(path.dirname(stamp), { recursive: true });
  fs.writeFileSync(stamp, new Date().toISOString());
}

/**
 * `@app/<lib>` imports of the compiled code resolve by Node's own lookup: dist/node_modules/@app/<lib>
 * is a link to dist/libs/<lib>/src (relative, so dist/ can be copied into an image as it is). No loader
 * hook. Checked on every call and made only where missing, so a dist/ built before gets them and a
 * read-only one that has them is not written to. Several processes may call this at once (test
 * workers starting the built apps): a link is made under a name of its own and renamed into place, so
 * the name never goes missing and two callers never fail on each other's link.
 */
function linkLibs(dist = path.join(root, 'dist')) {
  const libs = path.join(dist, 'libs');
  if (!fs.existsSync(libs)) return;
  const scope = path.join(dist, 'node_modules', '@app');
  const linked = (link, dir) => {
    try {
      return fs.realpathSync(link) === fs.realpathSync(dir);
    } catch {
      return false;
    }
  };
  for (const lib of fs.readdirSync(libs)) {
    const dir = path.join(libs, lib, 'src');
    const link = path.join(scope, lib);
    if (!fs.existsSync(dir) || linked(link, dir)) continue;
    fs.mkdirSync(scope, { recursive: true });
    const temp = `${link}.${process.pid}.${Math.random().toString(36).slice(2)}`;
    // 'junction' only matters on Windows (a directory link without extra rights; Node makes it absolute there).
    fs.symlinkSync(path.join('..', '..', 'libs', lib, 'src'), temp, 'junction');
    try {
      fs.renameSync(temp, link);
    } catch (e) {
      // A directory in the way (rename cannot replace it), or a platform that will not rename over a link.
      if (linked(link, dir)) fs.rmSync(temp, { force: true });
      else {
        fs.rmSync(link, { recursive: true, force: true });
        fs.renameSync(temp, link);
      }
      if (!linked(link, dir)) throw e;
    }
  }
}

function build({ force = false } = {}) {
  const built = force || needsBuild();
  if (built) {
    process.stderr.write('Building (tsc -p tsconfig.build.json)...\n');
    execFileSync(process.execPath, tscArgs(), { cwd: root, stdio: 'inherit' });
    markBuilt();
  }
  linkLibs();
  return buildWeb({ force }) || built;
}

/**
 * Like build(), but tsc and Vite run as children handed to `track` (so that the caller can stop them) and
 * the promise settles when they have exited: true when built, false when already up to date.
 */
async function buildAsync(track, { force = false } = {}) {
  let built = false;
  if (force || needsBuild()) {
    process.stderr.write('Building (tsc -p tsconfig.build.json)...\n');
    await runTracked(track, tscArgs(), 'tsc');
    markBuilt();
    built = true;
  }
  linkLibs();
  if (force ? fs.existsSync(webDir) : webNeedsBuild()) {
    process.stderr.write('Building the web app (vite build web/)...\n');
    await runTracked(track, viteArgs(), 'vite build', { VITE_CONFIG_NATIVE_IGNORE_WARNING: 'true' });
    built = true;
  }
  return built;
}

/** Runs `node <args>` as a child handed to `track`; settles when it exits (rejects unless it exits 0). */
function runTracked(track, args, name, env = {}) {
  const { spawn } = require('child_process');
  const child = spawn(process.execPath, args, { cwd: root, stdio: 'inherit', env: { ...process.env, ...env } });
  track(child);
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      if (code === 0) resolve();
      else reject(new Error(signal ? `${name} was stopped by ${signal}` : `${name} exited with ${code}`));
    });
  });
}

module.exports = { build, buildAsync, buildWeb, linkLibs };
if (require.main === module) build({ force: process.argv.includes('--force') });
