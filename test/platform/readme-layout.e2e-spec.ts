// The README's Layout section names every folder of apps/*/src and libs/ (one line each): a folder added,
// moved or removed without its line fails here.
import * as fs from 'fs';
import * as path from 'path';

const root = path.resolve(__dirname, '..', '..');
const dirs = (rel: string) => fs.readdirSync(path.join(root, rel), { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => `${rel}/${d.name}/`);

function treeFolders(): string[] {
  const apps = dirs('apps').flatMap((app) => dirs(`${app}src`));
  const libs = dirs('libs');
  const libFolders = libs.flatMap((lib) => (fs.existsSync(path.join(root, lib, 'src')) ? dirs(`${lib}src`) : []));
  return [...apps, ...libs, ...libFolders].map((f) => f.replace(/\/\//g, '/')).sort();
}

function readmeFolders(): string[] {
  const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8');
  const start = readme.indexOf('\n## Layout\n');
  expect(start).toBeGreaterThan(-1);
  const end = readme.indexOf('\n## ', start + 1);
  const section = readme.slice(start, end === -1 ? undefined : end);
  return [...section.matchAll(/^\| `([^`]+\/)` \| (.+) \|$/gm)].map((m) => {
    expect(m[2].trim().length).toBeGreaterThan(10);
    return m[1];
  }).sort();
}

describe('README layout section', () => {
  it('lists exactly the folders of apps/*/src, libs/ and libs/*/src, each with what it holds', () => {
    expect(readmeFolders()).toEqual(treeFolders());
  });
});
