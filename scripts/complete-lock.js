#!/usr/bin/env node
// Run after every `npm install`: adds lock entries for optional platform packages (other OS/CPU builds
// of native modules) that the package registry reachable from our machines does not serve. npm then
// leaves them out of package-lock.json, and `npm ci` refuses a lock that does not list every optional
// dependency. They are never installed on Linux x64, so a name and version are enough.
// test/platform/lockfile.e2e-spec.ts fails while an entry is missing.
const fs = require('fs');
const file = process.argv[2] || require('path').join(__dirname, '..', 'package-lock.json');
const lock = JSON.parse(fs.readFileSync(file, 'utf8'));
let added = 0;
for (const [key, entry] of Object.entries(lock.packages)) {
  for (const [name, version] of Object.entries(entry.optionalDependencies || {})) {
    const base = key ? `${key}/node_modules/${name}` : `node_modules/${name}`;
    const hoisted = `node_modules/${name}`;
    if (lock.packages[base] || lock.packages[hoisted]) continue;
    lock.packages[hoisted] = { version, optional: true };
    added++;
  }
}
fs.writeFileSync(file, JSON.stringify(lock, null, 2) + '\n');
console.log(`added ${added} entries`);
