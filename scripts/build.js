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

function build({ force = false } = {}) {
  if (!force && !needsBuild()) return false;
  process.stderr.write('Building (tsc -p tsconfig.build.json)...\n');
  execFileSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'inherit' });
  fs.mkdirSync(path.dirname(stamp), { recursive: true });
  fs.writeFileSync(stamp, new Date().toISOString());
  return true;
}

module.exports = { build };
if (require.main === module) build({ force: process.argv.includes('--force') });
