// The Layout section of docs/architecture.md names every folder of apps/*/src, libs/ and libs/*/src (one
// line each): a folder added, moved or removed without its line fails here. README.md keeps a short map
// of the repository's top folders; each folder it names must exist.
import * as fs from 'fs';
import * as path from 'path';
import { readDoc, root, section } from './docs';

const dirs = (rel: string) =>
  fs
    .readdirSync(path.join(root, rel), { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => `${rel}/${d.name}/`);

function treeFolders(): string[] {
  const apps = dirs('apps').flatMap((app) => dirs(`${app}src`));
  const libs = dirs('libs');
  const libFolders = libs.flatMap((lib) => (fs.existsSync(path.join(root, lib, 'src')) ? dirs(`${lib}src`) : []));
  return [...apps, ...libs, ...libFolders].map((f) => f.replace(/\/\//g, '/')).sort();
}

/** The folders of a markdown table whose first column is a backticked folder (`path/`) and whose second says what it holds. */
function tableFolders(text: string): string[] {
  return [...text.matchAll(/^\| `([^`]+\/)` \| (.+) \|$/gm)]
    .map((m) => {
      expect({ folder: m[1], described: m[2].trim().length > 10 }).toEqual({ folder: m[1], described: true });
      return m[1];
    })
    .sort();
}

describe('layout documentation', () => {
  it('docs/architecture.md lists exactly the folders of apps/*/src, libs/ and libs/*/src, each with what it holds', () => {
    expect(tableFolders(section(readDoc('docs/architecture.md'), '## Layout'))).toEqual(treeFolders());
  });

  it('the check fails when a folder is missing from the table or the table names one that does not exist', () => {
    const layout = section(readDoc('docs/architecture.md'), '## Layout');
    const withoutChat = layout
      .split('\n')
      .filter((l) => !l.startsWith('| `apps/ai-gateway/src/chat/`'))
      .join('\n');
    expect(tableFolders(withoutChat)).not.toEqual(treeFolders());
    expect(
      tableFolders(`${layout}\n| \`apps/ai-gateway/src/nowhere/\` | a folder that is not in the tree |`),
    ).not.toEqual(treeFolders());
  });

  it("README.md's map names only folders that exist, the two apps and libs/ among them", () => {
    const map = tableFolders(section(readDoc('README.md'), '## Map of the repository'));
    expect(map).toEqual(expect.arrayContaining(['apps/membership/', 'apps/ai-gateway/', 'libs/', 'docs/']));
    for (const folder of map)
      expect({ folder, exists: fs.existsSync(path.join(root, folder)) }).toEqual({ folder, exists: true });
  });
});
