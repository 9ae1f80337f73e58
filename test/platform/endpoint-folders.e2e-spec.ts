// docs/architecture.md's "Endpoint → folder" table must send a reader from any route's URL to the folder of the
// controller that declares it. Routes are read from the controllers' decorators (@Controller and the method ones).
import * as fs from 'fs';
import * as path from 'path';
import { readDoc, root, section } from './docs';

interface Route {
  method: string;
  path: string;
  file: string;
}

interface Row {
  patterns: string[][];
  folders: string[];
}

const METHOD = /@(Get|Post|Put|Patch|Delete|All)\(\s*(?:'([^']*)')?/g;
const CONTROLLER = /@Controller\(\s*(?:'([^']*)')?/g;

function files(dir: string, out: string[] = []): string[] {
  for (const entry of fs.readdirSync(path.join(root, dir), { withFileTypes: true })) {
    const rel = `${dir}/${entry.name}`;
    if (entry.isDirectory()) files(rel, out);
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.spec.ts')) out.push(rel);
  }
  return out;
}

const segments = (p: string): string[] => p.split('/').filter((s) => s !== '');

/** Every route the controllers of apps/ and libs/ declare, in the order of their decorators. */
export function declaredRoutes(text: string, file: string): Route[] {
  const marks: Array<{ at: number; controller?: string; method?: string; path?: string }> = [];
  for (const m of text.matchAll(CONTROLLER)) marks.push({ at: m.index, controller: m[1] ?? '' });
  for (const m of text.matchAll(METHOD)) marks.push({ at: m.index, method: m[1].toUpperCase(), path: m[2] ?? '' });
  marks.sort((a, b) => a.at - b.at);
  const routes: Route[] = [];
  let prefix: string | undefined;
  for (const mark of marks) {
    if (mark.controller !== undefined) prefix = mark.controller;
    else if (prefix !== undefined) {
      routes.push({ method: mark.method!, path: '/' + [...segments(prefix), ...segments(mark.path!)].join('/'), file });
    }
  }
  return routes;
}

/** `{a, b/*}` is a choice; `{id}` is one path segment. */
function expand(pattern: string): string[] {
  const open = pattern.indexOf('{');
  if (open === -1) return [pattern];
  const close = pattern.indexOf('}', open);
  const inside = pattern.slice(open + 1, close);
  if (!inside.includes(',')) {
    return expand(pattern.slice(close + 1)).map((rest) => pattern.slice(0, close + 1) + rest);
  }
  return inside
    .split(',')
    .map((choice) => choice.trim())
    .flatMap((choice) => expand(pattern.slice(0, open) + choice + pattern.slice(close + 1)));
}

export function tableRows(table: string): Row[] {
  const rows: Row[] = [];
  for (const line of table.split('\n')) {
    const cells = line.split('|').map((c) => c.trim());
    if (cells.length < 5 || !cells[2].includes('`')) continue;
    const code = (cell: string) => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]);
    rows.push({
      patterns: code(cells[2])
        .filter((c) => c.startsWith('/'))
        .flatMap(expand)
        .map(segments),
      folders: code(cells[3]).filter((c) => c.endsWith('/')),
    });
  }
  return rows;
}

/** How many segments of the route the pattern matches, or -1 when it does not match. `*` matches the rest. */
function matchLength(pattern: string[], route: string[]): number {
  for (let i = 0; i < pattern.length; i++) {
    if (pattern[i] === '*') return i + 0.5;
    if (i >= route.length) return -1;
    const param = pattern[i].startsWith('{') || route[i].startsWith(':');
    if (!param && pattern[i] !== route[i]) return -1;
  }
  return pattern.length;
}

/** The folders of the row whose pattern matches the most of the route (most specific wins). */
export function foldersFor(rows: Row[], routePath: string): string[] | undefined {
  let best: { length: number; folders: string[] } | undefined;
  for (const row of rows) {
    for (const pattern of row.patterns) {
      const length = matchLength(pattern, segments(routePath));
      if (length >= 0 && (best === undefined || length > best.length)) best = { length, folders: row.folders };
    }
  }
  return best?.folders;
}

describe('docs/architecture.md: Endpoint → folder', () => {
  const rows = tableRows(section(readDoc('docs/architecture.md'), '## Endpoint → folder'));
  const routes = ['apps', 'libs'].flatMap((dir) =>
    files(dir).flatMap((file) => declaredRoutes(fs.readFileSync(path.join(root, file), 'utf8'), file)),
  );

  it('reads the routes of both apps and the table', () => {
    expect(routes.length).toBeGreaterThan(80);
    expect(routes).toContainEqual({
      method: 'POST',
      path: '/v1/chat/completions',
      file: 'apps/ai-gateway/src/chat/chat.controller.ts',
    });
    expect(rows.length).toBeGreaterThan(20);
  });

  it('names, for every route, the folder of the controller that declares it', () => {
    const wrong = routes
      .map((r) => ({ ...r, folders: foldersFor(rows, r.path) }))
      .filter((r) => r.folders === undefined || !r.folders.some((f) => r.file.startsWith(f)))
      .map((r) => `${r.method} ${r.path} (${r.file}) -> ${r.folders?.join(', ') ?? 'no row'}`);
    expect(wrong).toEqual([]);
  });

  it('fails for a route in a folder the table does not name, or in no row at all', () => {
    expect(foldersFor(rows, '/v1/embeddings')).toEqual(['apps/ai-gateway/src/embeddings/']);
    expect(foldersFor(rows, '/admin/keys/:id/calls')).toEqual(['apps/ai-gateway/src/usage/']);
    expect(foldersFor(rows, '/admin/keys/:id')).toEqual(['apps/ai-gateway/src/keys/']);
    expect(foldersFor(rows, '/no/such/namespace')).toBeUndefined();
  });
});
