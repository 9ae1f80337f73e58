#!/usr/bin/env node
// Container entry point: one image, the app chosen by the first argument or by $APP.
//   membership | ai-gateway   run that app (compiled, in this process, so SIGTERM reaches it)
//   migrate [app]             run pending migrations of one app or both, then exit
//   keys <args>               the AI gateway's API key CLI (npm run keys), e.g. keys create --name demo
//   admin:create <args>       the membership first-admin CLI (npm run admin:create)
//   healthcheck               exit 0 when the running app's liveness endpoint answers 200 (HEALTHCHECK)
'use strict';
const fs = require('fs');
const path = require('path');

const root = path.resolve(__dirname, '..', '..');
const APPS = {
  membership: {
    main: 'dist/apps/membership/src/main.js',
    port: () => process.env.MEMBERSHIP_PORT || '8080',
    prefix: () => process.env.CONTEXT_PATH || '',
  },
  'ai-gateway': {
    main: 'dist/apps/ai-gateway/src/main.js',
    port: () => process.env.AI_GATEWAY_PORT || '8081',
    prefix: () => '',
  },
};
/** The app of that name, or undefined: own entries only, so `constructor` or `toString` is an unknown name, not Object's member. */
const appOf = (name) => (typeof name === 'string' && Object.hasOwn(APPS, name) ? APPS[name] : undefined);
// Written at start so that HEALTHCHECK (a separate process) knows which app this container runs.
const marker = path.join(process.env.TMPDIR || '/tmp', '.container-app');

function usage(message) {
  process.stderr.write(
    `${message}\nusage: entrypoint.js membership | ai-gateway | migrate [membership|ai-gateway] | keys <args> | admin:create <args> | healthcheck\n`,
  );
  process.exit(64);
}

async function healthcheck() {
  let app = process.env.APP;
  try {
    app = fs.readFileSync(marker, 'utf8').trim() || app;
  } catch {
    /* not started yet: fall back to $APP */
  }
  const def = appOf(app);
  if (!def) usage(`healthcheck: unknown app ${JSON.stringify(app)}`);
  const prefix = def.prefix().replace(/\/+$/, '');
  const url = `http://127.0.0.1:${def.port()}${prefix}/actuator/health/liveness`;
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(4000) });
    process.exit(res.status === 200 ? 0 : 1);
  } catch {
    process.exit(1);
  }
}

function run(app) {
  const def = appOf(app);
  try {
    fs.writeFileSync(marker, app);
  } catch {
    /* read-only /tmp: HEALTHCHECK falls back to $APP */
  }
  require(path.join(root, def.main));
}

// One-shot tools run as a child process (they start when they are the main module); signals forwarded.
function tool(file, args) {
  const { spawn } = require('child_process');
  const child = spawn(process.execPath, [path.join(root, file), ...args], { cwd: root, stdio: 'inherit' });
  for (const signal of ['SIGTERM', 'SIGINT']) process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 128 + 15 : 1)));
}

function migrate(app) {
  if (app && !appOf(app)) usage(`migrate: unknown app ${JSON.stringify(app)}`);
  tool('scripts/migration.js', ['run', ...(app ? [app] : [])]);
}

const [command = process.env.APP, ...rest] = process.argv.slice(2);
if (command === 'healthcheck') void healthcheck();
else if (command === 'migrate') migrate(rest[0]);
else if (command === 'keys') tool('dist/apps/ai-gateway/src/keys/keys.cli.js', rest);
else if (command === 'admin:create') tool('dist/apps/membership/src/members/admin.cli.js', rest);
else if (appOf(command)) run(command);
else usage(`unknown command ${JSON.stringify(command)}`);
