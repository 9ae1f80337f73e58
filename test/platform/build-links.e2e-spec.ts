import { execFileSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Worker } from 'worker_threads';

/**
 * scripts/build.js links dist/node_modules/@app/<lib> to dist/libs/<lib>/src so that the compiled code's
 * `@app/...` imports resolve with plain `node` (no loader hook). Run on a dist/ of its own (a temporary
 * directory shaped like one), never on the real build other suites start apps from.
 */
const buildScript = path.resolve(__dirname, '../../scripts/build.js');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { linkLibs } = require(buildScript) as { linkLibs: (dist?: string) => void };

function fakeDist(): string {
  const dist = fs.mkdtempSync(path.join(os.tmpdir(), 'build-links-'));
  for (const lib of ['alpha', 'beta']) {
    fs.mkdirSync(path.join(dist, 'libs', lib, 'src', 'sub'), { recursive: true });
    fs.writeFileSync(
      path.join(dist, 'libs', lib, 'src', 'index.js'),
      `exports.name = '${lib}'; exports.file = __filename;`,
    );
    fs.writeFileSync(path.join(dist, 'libs', lib, 'src', 'sub', 'index.js'), `exports.sub = '${lib}/sub';`);
  }
  fs.mkdirSync(path.join(dist, 'apps', 'a', 'src'), { recursive: true });
  // What compiled app code does: require('@app/<lib>') and a subpath, from deep inside dist/apps.
  fs.writeFileSync(
    path.join(dist, 'apps', 'a', 'src', 'main.js'),
    `const a = require('@app/alpha'); const b = require('@app/beta/sub'); const again = require('${path.join(dist, 'libs', 'alpha', 'src').replace(/\\/g, '\\\\')}');
     process.stdout.write(JSON.stringify({ name: a.name, sub: b.sub, file: a.file, same: a === again }));`,
  );
  return dist;
}

const runApp = (dist: string) =>
  JSON.parse(execFileSync(process.execPath, [path.join(dist, 'apps', 'a', 'src', 'main.js')], { encoding: 'utf8' }));
const scopeEntries = (dist: string) => fs.readdirSync(path.join(dist, 'node_modules', '@app')).sort();

describe('build: @app links in dist/node_modules', () => {
  const dirs: string[] = [];
  afterAll(() => dirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));
  const fresh = () => {
    const d = fakeDist();
    dirs.push(d);
    return d;
  };

  it('links every lib (relative link), so plain node resolves @app/<lib> and its subpaths to one module instance', () => {
    const dist = fresh();
    expect(() => runApp(dist)).toThrow(/Cannot find module '@app\/alpha'/);
    linkLibs(dist);
    expect(scopeEntries(dist)).toEqual(['alpha', 'beta']);
    expect(fs.readlinkSync(path.join(dist, 'node_modules', '@app', 'alpha'))).toBe(
      path.join('..', '..', 'libs', 'alpha', 'src'),
    );
    const out = runApp(dist);
    expect(out).toEqual({
      name: 'alpha',
      sub: 'beta/sub',
      file: fs.realpathSync(path.join(dist, 'libs', 'alpha', 'src', 'index.js')),
      same: true,
    });
    // Copied elsewhere as it is (an image's COPY keeps links): still resolves.
    const copy = fresh();
    fs.rmSync(copy, { recursive: true });
    fs.cpSync(dist, copy, { recursive: true, verbatimSymlinks: true });
    expect(runApp(copy).name).toBe('alpha');
  });

  it('leaves correct links untouched (a read-only image is not written to) and replaces a wrong link or a directory in the way', () => {
    const dist = fresh();
    linkLibs(dist);
    const scope = path.join(dist, 'node_modules', '@app');
    const before = fs.lstatSync(path.join(scope, 'alpha'), { bigint: true });
    linkLibs(dist);
    expect(fs.lstatSync(path.join(scope, 'alpha'), { bigint: true }).ino).toBe(before.ino);

    fs.rmSync(path.join(scope, 'alpha'));
    fs.symlinkSync(path.join('..', '..', 'libs', 'beta', 'src'), path.join(scope, 'alpha'));
    fs.rmSync(path.join(scope, 'beta'));
    fs.mkdirSync(path.join(scope, 'beta'));
    fs.writeFileSync(path.join(scope, 'beta', 'index.js'), 'exports.name = "stale";');
    linkLibs(dist);
    expect(runApp(dist)).toMatchObject({ name: 'alpha', sub: 'beta/sub' });
    expect(scopeEntries(dist)).toEqual(['alpha', 'beta']);
  });

  it('several processes linking the same fresh dist at once all succeed, with no name left behind', async () => {
    const dist = fresh();
    const results = await Promise.all(
      Array.from(
        { length: 6 },
        () =>
          new Promise<string>((resolve) => {
            const w = new Worker(
              `try { require(${JSON.stringify(buildScript)}).linkLibs(${JSON.stringify(dist)}); require('worker_threads').parentPort.postMessage('ok'); } catch (e) { require('worker_threads').parentPort.postMessage(String(e)); }`,
              { eval: true },
            );
            w.once('message', (m: string) => resolve(m));
            w.once('error', (e) => resolve(String(e)));
          }),
      ),
    );
    expect(results).toEqual(Array(6).fill('ok'));
    expect(scopeEntries(dist)).toEqual(['alpha', 'beta']);
    expect(runApp(dist).name).toBe('alpha');
  });
});
