import * as fs from 'fs';
import * as path from 'path';
import * as ts from 'typescript';

/**
 * One folder under src/ = one feature with its own Nest module, and dependencies between folders go
 * one way. Files directly in src/ (app.module, main, membership.app, entities...) compose the features
 * and are left out of the graph.
 */
const SRC = __dirname;

interface Edge {
  from: string;
  to: string;
  file: string;
  specifier: string;
}

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(full);
    return e.name.endsWith('.ts') ? [full] : [];
  });
}

/** The feature folder a file belongs to, or null for the composition root and anything outside src/. */
function folderOf(file: string): string | null {
  const rel = path.relative(SRC, file);
  if (rel.startsWith('..') || path.isAbsolute(rel)) return null;
  const parts = rel.split(path.sep);
  return parts.length > 1 ? parts[0] : null;
}

/** Relative specifiers of every import, export-from, import() and require() of a file. */
function relativeImports(file: string): string[] {
  const info = ts.preProcessFile(fs.readFileSync(file, 'utf8'), true, true);
  return info.importedFiles.map((f) => f.fileName).filter((s) => s.startsWith('.'));
}

export function folderEdges(files: string[]): Edge[] {
  const edges: Edge[] = [];
  for (const file of files) {
    const from = folderOf(file);
    if (!from) continue;
    for (const specifier of relativeImports(file)) {
      const to = folderOf(path.resolve(path.dirname(file), specifier));
      if (to && to !== from) edges.push({ from, to, file: path.relative(SRC, file), specifier });
    }
  }
  return edges;
}

/** One cycle per back edge of a depth-first walk: enough to name each problem, not every elementary cycle. */
export function folderCycles(edges: Edge[]): string[][] {
  const next = new Map<string, Set<string>>();
  for (const e of edges) next.set(e.from, (next.get(e.from) ?? new Set()).add(e.to));
  const cycles: string[][] = [];
  const done = new Set<string>();
  const visit = (node: string, trail: string[]): void => {
    const at = trail.indexOf(node);
    if (at >= 0) {
      cycles.push([...trail.slice(at), node]);
      return;
    }
    if (done.has(node)) return;
    for (const to of [...(next.get(node) ?? [])].sort()) visit(to, [...trail, node]);
    done.add(node);
  };
  for (const node of [...next.keys()].sort()) visit(node, []);
  return cycles;
}

describe('membership feature folders', () => {
  const files = sourceFiles(SRC);
  const edges = folderEdges(files);

  it('import each other one way only (no cycle between folders)', () => {
    const described = folderCycles(edges).map((cycle) => {
      const steps = cycle.slice(1).map((to, i) => {
        const e = edges.find((x) => x.from === cycle[i] && x.to === to)!;
        return `  ${e.from} -> ${e.to} (${e.file}: '${e.specifier}')`;
      });
      return `${cycle.join(' -> ')}\n${steps.join('\n')}`;
    });
    expect(described).toEqual([]);
  });

  it('each register their own controllers in their own <folder>.module.ts', () => {
    const misplaced: string[] = [];
    for (const file of files.filter((f) => f.endsWith('.controller.ts'))) {
      const folder = folderOf(file)!;
      const moduleFile = path.join(SRC, folder, `${folder}.module.ts`);
      const own = fs.existsSync(moduleFile)
        ? relativeImports(moduleFile).map((s) => path.resolve(path.dirname(moduleFile), s))
        : [];
      if (!own.includes(file.replace(/\.ts$/, '')))
        misplaced.push(`${path.relative(SRC, file)} is not registered by ${folder}/${folder}.module.ts`);
    }
    for (const e of edges.filter(
      (x) => x.file === `${x.from}/${x.from}.module.ts` && /\.controller$/.test(x.specifier),
    )) {
      misplaced.push(`${e.file} registers ${e.specifier} of ${e.to}/`);
    }
    expect(misplaced).toEqual([]);
  });

  it('finds a cycle when there is one (the check itself works)', () => {
    const edge = (from: string, to: string): Edge => ({ from, to, file: `${from}/x.ts`, specifier: `../${to}/y` });
    expect(folderCycles([edge('wechat', 'oauth'), edge('oauth', 'identities')])).toEqual([]);
    expect(folderCycles([edge('wechat', 'oauth'), edge('oauth', 'identities'), edge('identities', 'wechat')])).toEqual([
      ['identities', 'wechat', 'oauth', 'identities'],
    ]);
  });
});
