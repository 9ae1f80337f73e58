#!/usr/bin/env node
// npm run migration:run|revert [-- membership|ai-gateway]
// npm run migration:generate -- <membership|ai-gateway> <Name>   (writes apps/<app>/src/migrations/<ts>-<Name>.ts)
const fs = require('fs');
const path = require('path');
const { build } = require('./build');

const APPS = {
  membership: { source: 'membershipDataSource', config: 'MembershipConfig' },
  'ai-gateway': { source: 'gatewayDataSource', config: 'GatewayConfig' },
};
const root = path.resolve(__dirname, '..');
const [command, ...args] = process.argv.slice(2);

/** The apps a command acts on, checked before anything is built. */
function appsOf(command, args) {
  if (!['run', 'revert', 'generate', 'show'].includes(command))
    throw new Error('usage: migration.js run|revert|show [app] | generate <app> <Name>');
  const apps = command === 'generate' ? [args[0]] : args.length ? args : Object.keys(APPS);
  for (const app of apps) {
    // Own entries only: `constructor` or `toString` is an unknown app, not Object's member.
    if (!Object.hasOwn(APPS, app)) throw new Error(`unknown app "${app}"; expected ${Object.keys(APPS).join(' or ')}`);
  }
  return apps;
}

async function main() {
  const apps = appsOf(command, args);
  build();
  const { loadConfig, resolveDatabase } = require(path.join(root, 'dist/libs/platform/src'));
  const { runMigrationsUncut } = require(path.join(root, 'dist/libs/database/src'));
  for (const app of apps) {
    const mod = require(path.join(root, 'dist/apps', app, 'src/data-source.js'));
    const config = loadConfig(mod[APPS[app].config], process.env);
    const database = await resolveDatabase(config);
    const ds = mod[APPS[app].source](database.url);
    await ds.initialize();
    try {
      if (command === 'run') {
        // Each in its own transaction, never cut by a statement timeout (libs/database/src/uncut.ts).
        const done = await runMigrationsUncut(ds);
        console.log(`${app}: ${done.length ? done.map((m) => m.name).join(', ') : 'no pending migrations'}`);
      } else if (command === 'revert') {
        await ds.undoLastMigration({ transaction: 'each' });
        console.log(`${app}: reverted the last migration`);
      } else if (command === 'show') {
        console.log(`${app}: ${(await ds.showMigrations()) ? 'pending migrations' : 'up to date'}`);
      } else {
        writeGenerated(app, args[1], await ds.driver.createSchemaBuilder().log());
      }
    } finally {
      await ds.destroy();
      await database.stop();
    }
  }
}

function writeGenerated(app, name, sql) {
  if (!/^[A-Z][A-Za-z0-9]+$/.test(name || ''))
    throw new Error('migration name must be PascalCase, e.g. AddMemberLevel');
  if (!sql.upQueries.length) {
    console.log(`${app}: entities and schema agree; nothing to generate`);
    return;
  }
  const ts = Date.now();
  const q = (query) =>
    `    await queryRunner.query(${JSON.stringify(query.query)}${query.parameters ? `, ${JSON.stringify(query.parameters)}` : ''});`;
  const file = path.join(root, 'apps', app, 'src', 'migrations', `${ts}-${name}.ts`);
  fs.writeFileSync(
    file,
    `import { MigrationInterface, QueryRunner } from 'typeorm';\n\nexport class ${name}${ts} implements MigrationInterface {\n  name = '${name}${ts}';\n\n  async up(queryRunner: QueryRunner): Promise<void> {\n${sql.upQueries.map(q).join('\n')}\n  }\n\n  async down(queryRunner: QueryRunner): Promise<void> {\n${sql.downQueries.reverse().map(q).join('\n')}\n  }\n}\n`,
  );
  console.log(`${app}: wrote ${path.relative(root, file)}; add ${name}${ts} to apps/${app}/src/migrations/index.ts`);
}

module.exports = { appsOf };
if (require.main === module) {
  main().catch((e) => {
    console.error(e && e.message ? e.message : e);
    process.exit(1);
  });
}
