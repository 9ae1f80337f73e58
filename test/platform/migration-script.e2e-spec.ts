import { spawnSync } from 'child_process';
import * as path from 'path';

// scripts/migration.js picks the apps from its arguments: a name like an Object.prototype member
// (`constructor`, `toString`) found the table's prototype, passed as an app, and the script built
// dist/ and then failed to load dist/apps/constructor ("Cannot find module").
describe('scripts/migration.js arguments', () => {
  const script = path.resolve(__dirname, '../../scripts/migration.js');
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { appsOf } = require(script) as { appsOf: (command: string, args: string[]) => string[] };

  it('names the apps of a command (all of them by default)', () => {
    expect(appsOf('run', [])).toEqual(['membership', 'ai-gateway']);
    expect(appsOf('revert', ['ai-gateway'])).toEqual(['ai-gateway']);
    expect(appsOf('generate', ['membership', 'AddThing'])).toEqual(['membership']);
    expect(() => appsOf('drop', [])).toThrow('usage: migration.js');
  });

  it.each(['gateway', 'constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf'])(
    'refuses the app %p as unknown',
    (name) => {
      expect(() => appsOf('run', [name])).toThrow(`unknown app "${name}"; expected membership or ai-gateway`);
      expect(() => appsOf('generate', [name, 'AddThing'])).toThrow(`unknown app "${name}"`);
    },
  );

  it('refuses an unknown app from the command line before building anything', () => {
    const run = spawnSync(process.execPath, [script, 'run', 'constructor'], {
      encoding: 'utf8',
      env: { ...process.env, DATABASE_URL: '' },
    });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain('unknown app "constructor"; expected membership or ai-gateway');
  });
});
