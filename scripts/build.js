#!/usr/bin/env node
// Compiles apps/ and libs/ with tsc into dist/ when any source is newer than the last build, and links
// dist/node_modules/@app/<lib> to each compiled lib (how the compiled code finds its `@app/` imports).
const { execFileSync } = require('child_process');
const fs = require('fs');
const path = require('path');

const root = path.resolve(__dirname, '..');
const stamp = path.join(root, 'dist', '.build-stamp');

function newestSource(dir) {
  let newest = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestSource(full));
    else if (/\.(ts|json)$/.test(entry.name)) newest = Math.max(newest, fs.statSync(full).mtimeMs);
  }
  return newest;
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
  return built;
}

/**
 * Like build(), but tsc runs as a child handed to `track` (so that the caller can stop it) and the
 * promise settles when it exits: true when built, false when already up to date.
 */
function buildAsync(track, { force = false } = {}) {
  if (!force && !needsBuild()) {
    linkLibs();
    return Promise.resolve(false);
  }
  process.stderr.write('Building (tsc -p tsconfig.build.json)...\n');
  const { spawn } = require('child_process');
  const child = spawn(process.execPath, tscArgs(), { cwd: root, stdio: 'inherit' });
  track(child);
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      if (code === 0) {
        markBuilt();
        linkLibs();
        resolve(true);
      } else reject(new Error(signal ? `tsc was stopped by ${signal}` : `tsc exited with ${code}`));
    });
  });
}

module.exports = { build, buildAsync, linkLibs };
if (require.main === module) build({ force: process.argv.includes('--force') });
