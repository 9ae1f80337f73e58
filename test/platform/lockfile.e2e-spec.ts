import * as fs from 'fs';
import * as path from 'path';

// `npm ci` (CI, Docker) refuses a lock that leaves out any optional dependency; npm leaves out the
// platform builds our registry does not serve. `node scripts/complete-lock.js` adds them.
describe('package-lock.json', () => {
  it('lists every optional dependency, so npm ci accepts it', () => {
    const lock = JSON.parse(fs.readFileSync(path.resolve(__dirname, '../../package-lock.json'), 'utf8'));
    const missing: string[] = [];
    for (const [key, entry] of Object.entries<any>(lock.packages)) {
      for (const name of Object.keys(entry.optionalDependencies ?? {})) {
        if (!lock.packages[`${key ? `${key}/` : ''}node_modules/${name}`] && !lock.packages[`node_modules/${name}`])
          missing.push(`${key || '(root)'} -> ${name}`);
      }
    }
    expect(missing).toEqual([]);
  });
});
