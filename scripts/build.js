#!/usr/bin/env node
// Compiles apps/ and libs/ with tsc into dist/ when any source is newer than the last build.
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

function build({ force = false } = {}) {
  if (!force && !needsBuild()) return false;
  process.stderr.write('Building (tsc -p tsconfig.build.json)...\n');
  execFileSync(process.execPath, tscArgs(), { cwd: root, stdio: 'inherit' });
  markBuilt();
  return true;
}

/**
 * Like build(), but tsc runs as a child handed to `track` (so that the caller can stop it) and the
 * promise settles when it exits: true when built, false when already up to date.
 */
function buildAsync(track, { force = false } = {}) {
  if (!force && !needsBuild()) return Promise.resolve(false);
  process.stderr.write('Building (tsc -p tsconfig.build.json)...\n');
  const { spawn } = require('child_process');
  const child = spawn(process.execPath, tscArgs(), { cwd: root, stdio: 'inherit' });
  track(child);
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      if (code === 0) {
        markBuilt();
        resolve(true);
      } else reject(new Error(signal ? `tsc was stopped by ${signal}` : `tsc exited with ${code}`));
    });
  });
}

module.exports = { build, buildAsync };
if (require.main === module) build({ force: process.argv.includes('--force') });
